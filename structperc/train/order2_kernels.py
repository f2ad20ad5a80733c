"""Compiled training of the second-order averaged structured perceptron (issue 20's lever).

The model is today's first-order one (state weights, transitions ``Wt`` and observation-conditioned
transitions ``Wc``, the scheme's ``mask`` and ``end``) plus a second-order transition tensor ``W2`` of
shape (L + 1, L + 1, L) indexed (y_{t-2}, y_{t-1}, y_t), index L being ``<bos>``: position 0 scores
``W2[L, L, y0]``, position 1 ``W2[L, y0, y1]``. Its best path is a Viterbi over label pairs (Collins
2002; the trigram tagger of Brants 2000): O(T·L³) in general, far less under a label scheme, whose
forbidden transitions are never visited (`transition_lists`).

Scoring and the first-order part of the update are `structperc.train.epoch_kernels`'s own
(`sentence_scores`, `_add`), so that the first-order features train exactly as there.

The pair Viterbi (`viterbi2_into`) is written so that with ``W2 ≡ 0`` it returns first-order
`~structperc.train.epoch_kernels.viterbi`'s path and score bit for bit, ties included: the pair
lattice holds each pair's score *before* its label's state score (the first-order candidates
δ[t−1, p] + trans[p, y]), a predecessor is chosen on those (lowest id on ties), and the last pair is
chosen label first, then predecessor, as the first-order backtrack does. The tagging-side twin (float32,
as tagging decodes) is `structperc.decode.order2` (the floors keep train and decode apart).

References
----------
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments with
perceptron algorithms. EMNLP 2002.
T. Brants. TnT: a statistical part-of-speech tagger. ANLP 2000.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.train.epoch_kernels import _add, prefetch_offsets, prefetch_weights, sentence_scores

#: Exported signatures of the ahead-of-time build (`structperc.compiled.build`): the epoch is built into
#: ``structperc._aot`` beside the first-order one, whose digest covers the kernels it shares.
AOT_EXPORTS = {
    "train_epoch_order2": "UniTuple(i8, 3)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], i2[::1], "
                          "u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], f8[:, :, ::1], "
                          "f4[:, :, ::1], f8[:, :, ::1], f8[:, ::1], f8[::1], i8, i8)",
}


@njit(cache=True, nogil=True)
def transition_lists(allowed):
    """The label pairs a path may cross, as lists: for every label p, its predecessors q among the
    labels (``pred[pred_ptr[p]:pred_ptr[p + 1]]``, ascending) and its successors y
    (``succ[succ_ptr[p]:succ_ptr[p + 1]]``, ascending). ``allowed`` (L + 1, L) is a transition matrix
    (the scheme's mask, or scores): an entry of -inf is a forbidden transition."""
    L = allowed.shape[1]
    pred_ptr = np.zeros(L + 1, dtype=np.int64)
    succ_ptr = np.zeros(L + 1, dtype=np.int64)
    pred = np.empty(L * L, dtype=np.int32)
    succ = np.empty(L * L, dtype=np.int32)
    n_pred = 0
    n_succ = 0
    for p in range(L):
        for q in range(L):
            if allowed[q, p] > -np.inf:
                pred[n_pred] = q
                n_pred += 1
        pred_ptr[p + 1] = n_pred
        for y in range(L):
            if allowed[p, y] > -np.inf:
                succ[n_succ] = y
                n_succ += 1
        succ_ptr[p + 1] = n_succ
    return pred_ptr, pred, succ_ptr, succ


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
    return viterbi2_into(state, np.ascontiguousarray(trans), per_token, T2, end, path, T,
                         np.full((T, L + 1, L), -np.inf), np.zeros((T, L + 1, L), dtype=np.int32), np.empty(L),
                         np.empty(L, dtype=np.int32), pred_ptr, pred, succ_ptr, succ)


@njit(cache=True, nogil=True)
def viterbi2_into(state, trans, per_token, T2, end, path, T, A, back, M, B, pred_ptr, pred, succ_ptr, succ):
    """`viterbi2` of the first ``T`` rows, with work arrays the caller owns: ``A`` (T, L + 1, L) of
    the state's dtype, filled with -inf, ``back`` int32 of that shape, filled with 0, ``M`` (L,) and
    ``B`` int32 (L,), and the `transition_lists` of the transitions a path may cross (every transition
    outside them scores -inf at every position).

    Only the pairs of the lists are written (and row L at t = 0), the others keep their -inf and 0:
    a scheme's forbidden pairs cost nothing, and the arrays serve every sentence of the same lists
    without being filled again.

    ``A[t, p, y]`` is the best score of a path whose labels at t − 1, t are (p, y) (p = L: ``<bos>``,
    t = 0 only), every score up to position t included but the state score of y at t;
    ``back[t, p, y]`` the label at t − 2 of that path.
    """
    L = state.shape[1]
    ninf = -np.inf
    for y in range(L):
        A[0, L, y] = trans[0, L, y] + T2[L, L, y]
    for t in range(1, T):
        ti = t if per_token else 0
        for p in range(L):
            lo = succ_ptr[p]
            hi = succ_ptr[p + 1]
            wide = 4 * (hi - lo) > L  # many successors: branch-free over every label (vectorized)
            if wide:
                for y in range(L):
                    M[y] = ninf
                    B[y] = 0
            else:
                for j in range(lo, hi):
                    M[succ[j]] = ninf
                    B[succ[j]] = 0
            if t == 1:  # the one predecessor is <bos>
                a = A[0, L, p]
                if a > ninf:
                    for j in range(lo, hi):
                        y = succ[j]
                        s = a + T2[L, p, y]
                        if s > M[y]:
                            M[y] = s
                            B[y] = L
            else:
                for k in range(pred_ptr[p], pred_ptr[p + 1]):  # ascending q: strict > keeps the lowest
                    q = pred[k]
                    a = A[t - 1, q, p]
                    if a > ninf:
                        if wide:  # the labels that do not follow p are computed too, never read
                            for y in range(L):
                                s = a + T2[q, p, y]
                                m = M[y]
                                M[y] = s if s > m else m
                                B[y] = q if s > m else B[y]
                        else:
                            for j in range(lo, hi):
                                y = succ[j]
                                s = a + T2[q, p, y]
                                if s > M[y]:
                                    M[y] = s
                                    B[y] = q
            sp = state[t - 1, p]
            for j in range(lo, hi):
                y = succ[j]
                A[t, p, y] = (M[y] + sp) + trans[ti, p, y]
                back[t, p, y] = B[y]
    p_lo = L if T == 1 else 0
    p_hi = L + 1 if T == 1 else L
    best = ninf
    best_y = 0
    best_p = p_lo
    for y in range(L):
        m = ninf
        arg = p_lo
        for p in range(p_lo, p_hi):
            if A[T - 1, p, y] > m:
                m = A[T - 1, p, y]
                arg = p
        v = (m + state[T - 1, y]) + end[y]
        if v > best:
            best = v
            best_y = y
            best_p = arg
    path[T - 1] = best_y
    if T > 1:
        path[T - 2] = best_p
    for t in range(T - 1, 1, -1):
        path[t - 2] = back[t, path[t - 1], path[t]]
    return best


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
    A = np.full((max_len, L + 1, L), -np.inf)  # filled once: `viterbi2_into` writes allowed pairs only
    back = np.zeros((max_len, L + 1, L), dtype=np.int32)
    M = np.empty(L)
    B = np.empty(L, dtype=np.int32)
    pred_ptr, pred, succ_ptr, succ = transition_lists(mask)
    per_token = XT.shape[1] > 0
    dense = lab.shape[0] == (ptr.shape[0] - 1) * L
    mistakes = 0
    token_errors = 0
    n = order.shape[0]
    for i in range(min(n, 2)):
        if not dense:
            prefetch_offsets(X, sent_ptr[order[i]], sent_ptr[order[i] + 1], ptr)
    for i in range(n):
        if i + 2 < n and not dense:
            prefetch_offsets(X, sent_ptr[order[i + 2]], sent_ptr[order[i + 2] + 1], ptr)
        if i + 1 < n:
            prefetch_weights(X, sent_ptr[order[i + 1]], sent_ptr[order[i + 1] + 1], ptr, lab, W, L)
        s = order[i]
        a = sent_ptr[s]
        b = sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        sentence_scores(X, XT, a, b, ptr, lab, W, Wt, Wc, mask, state, trans, V)
        viterbi2_into(state, trans, per_token, W2, end, path, T, A, back, M, B, pred_ptr, pred, succ_ptr, succ)
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
