"""Compiled training of the second-order averaged structured perceptron (issue 20's lever).

The model is today's first-order one (state weights, transitions ``Wt`` and observation-conditioned
transitions ``Wc``, the scheme's ``mask`` and ``end``) plus a second-order transition tensor ``W2`` of
shape (L + 1, L + 1, L) indexed (y_{t-2}, y_{t-1}, y_t), index L being ``<bos>``. Its best path is the
Viterbi over label pairs of `structperc.compiled.pair_viterbi` (Collins 2002; Brants 2000), which
tagging runs too (`structperc.decode.order2_kernels`), here on float64 lattices.

Scoring and the first-order part of the update are `structperc.train.epoch_kernels`'s own
(`sentence_scores`, `_add`), so that the first-order features train exactly as there.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.compiled.pair_viterbi import pair_viterbi, transition_lists
from structperc.decode.score_kernels import prefetch_ahead
from structperc.train.epoch_kernels import _add, sentence_scores

#: Exported signatures of the ahead-of-time build (`structperc.compiled.build`): the epoch is built into
#: ``structperc._aot`` beside the first-order one, whose digest covers the kernels it shares.
AOT_EXPORTS = {
    "train_epoch_order2": "UniTuple(i8, 3)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], i2[::1], "
                          "u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], f8[:, :, ::1], "
                          "f4[:, :, ::1], f8[:, :, ::1], f8[:, ::1], f8[::1], i8, i8)",
}


@njit(cache=True, nogil=True)
def viterbi2(state, trans, T2, end, path):
    """Best label path of one sentence under first- and second-order transitions.

    Parameters
    ----------
    state : float64 (T, L)
    trans : float64 (T, L + 1, L) or (1, L + 1, L)
        First-order transition scores (mask included), as for `structperc.train.epoch_kernels.viterbi`.
    T2 : float32 or float64 (L + 1, L + 1, L)
        ``T2[q, p, y]``: score of the labels (q, p, y) at positions (t − 2, t − 1, t); L is ``<bos>``.
    end : float64 (L,)
    path : int32 (T,)
        Filled with the best path.

    Returns
    -------
    float
        The path's score.
    """
    T, L = state.shape
    per_token = trans.shape[0] == T and T > 1
    allowed = np.full((L + 1, L), -np.inf)
    for t in range(trans.shape[0]):  # a transition finite at some position is visited
        for p in range(L + 1):
            for y in range(L):
                if trans[t, p, y] > -np.inf:
                    allowed[p, y] = 0.0
    pred_ptr, pred, succ_ptr, succ = transition_lists(allowed)
    return pair_viterbi(state, np.ascontiguousarray(trans), per_token, T2, end, path, 0, T,
                        np.full((T, L + 1, L), -np.inf), np.zeros((T, L + 1, L), dtype=np.int32), np.empty(L),
                        np.empty(L, dtype=np.int32), pred_ptr, pred, succ_ptr, succ)


@njit(cache=True, nogil=True)
def train_epoch_order2(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, W2, U2, mask, end, c,
                       max_len):
    """One pass of the second-order averaged structured perceptron over ``order``.

    The arguments are `structperc.train.epoch_kernels.train_epoch`'s plus ``W2`` (float32
    (L + 1, L + 1, L), the second-order transition weights) and ``U2`` (float64, their averaging
    sums). On a wrong path, w += φ(x, y) − φ(x, ŷ) as there, the second-order transitions included
    (+1 to the gold triple, −1 to the predicted one, where they differ), their sums ±c.

    Returns
    -------
    (int, int, int)
        Sentences with a mistake, tokens mislabelled, and the updated instance counter c.
    """
    L = Wt.shape[1]
    full = act.shape[0] == 0
    V = np.zeros(0, dtype=np.float32)  # no attribute values: `state_value` folds to 1.0
    state = np.empty((max_len, L))
    trans = np.empty((max_len, L + 1, L))
    path = np.empty(max_len, dtype=np.int32)
    gold = np.empty(max_len, dtype=np.int32)
    A = np.full((max_len, L + 1, L), -np.inf)  # filled once: `pair_viterbi` writes allowed pairs only
    back = np.zeros((max_len, L + 1, L), dtype=np.int32)
    M = np.empty(L)
    B = np.empty(L, dtype=np.int32)
    pred_ptr, pred, succ_ptr, succ = transition_lists(mask)
    per_token = XT.shape[1] > 0
    dense = lab.shape[0] == (ptr.shape[0] - 1) * L
    mistakes = 0
    token_errors = 0
    for i in range(order.shape[0]):
        prefetch_ahead(order, i, sent_ptr, X, ptr, lab, W, L, dense)
        s = order[i]
        a = sent_ptr[s]
        b = sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        sentence_scores(X, XT, a, b, ptr, lab, W, Wt, Wc, mask, state, trans, V)
        pair_viterbi(state, trans, per_token, W2, end, path, 0, T, A, back, M, B, pred_ptr, pred, succ_ptr, succ)
        wrong = False
        for t in range(T):
            gold[t] = y[a + t]
            if path[t] != gold[t]:
                wrong = True
        if wrong:
            mistakes += 1
            cf = float(c)
            for t in range(T):
                g = gold[t]
                p = path[t]
                g1 = L if t == 0 else gold[t - 1]
                p1 = L if t == 0 else path[t - 1]
                g2 = L if t < 2 else gold[t - 2]
                p2 = L if t < 2 else path[t - 2]
                if g != p:
                    token_errors += 1
                if g != p or g1 != p1:
                    _add(X, XT, a + t, g1, g, 1.0, cf, ptr, lab, act, full, W, U, Wt, Ut, Wc, Uc, g != p, V)
                    _add(X, XT, a + t, p1, p, -1.0, cf, ptr, lab, act, full, W, U, Wt, Ut, Wc, Uc, g != p, V)
                if g != p or g1 != p1 or g2 != p2:
                    W2[g2, g1, g] += 1.0
                    U2[g2, g1, g] += cf
                    W2[p2, p1, p] -= 1.0
                    U2[p2, p1, p] -= cf
        c += 1
    return mistakes, token_errors, c


def warm_up() -> None:
    """Compile (or load from numba's cache) the epoch on a one-token problem, with and without
    conditioned transitions, so that the first timed epoch measures training."""
    i32, i64 = np.int32, np.int64
    for KT in (0, 1):
        train_epoch_order2(np.zeros(1, i64), np.array([0, 1], i64), np.zeros((1, 1), i32), np.zeros((1, KT), i32),
                           np.zeros(1, i32), np.array([0, 1], i64), np.zeros(1, np.int16), np.zeros(0, np.uint8),
                           np.zeros(1, np.float32), np.zeros(1), np.zeros((2, 1), np.float32), np.zeros((2, 1)),
                           np.zeros((KT, 2, 1), np.float32), np.zeros((KT, 2, 1)), np.zeros((2, 2, 1), np.float32),
                           np.zeros((2, 2, 1)), np.zeros((2, 1)), np.zeros(1), 0, 1)
