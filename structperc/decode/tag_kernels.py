"""Compiled tagging: score every token from its attribute ids and Viterbi-decode, sentence by sentence.

One pass per sentence over a (T, L) buffer, so memory does not grow with the input, and no padding
work (the vectorized numpy decoder in `structperc.decode.viterbi` pads batches to their longest sentence).
The arithmetic is float32 in exactly the order of `structperc.model.weights.Weights.predict`'s numpy path
(template sums left to right from zero, conditioned-transition sums before the base matrix is added,
ties to the lowest label), so both give the same labels; the tests check it.

These functions run through numba's JIT when imported from here; `structperc.compiled.loader` prefers the
ahead-of-time build of the same source (``structperc._aot``, whose digest covers this module and the
lattice routines of `structperc.decode.score_kernels`), which needs no numba at run time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.decode.score_kernels import (
    backtrack,
    best_last,
    is_dense,
    longest,
    prefetch_ahead,
    state_scores,
    transition_table,
    viterbi_step,
)

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "decode_corpus": "void(i4[:, ::1], i4[:, ::1], i8[::1], i8[::1], i2[::1], f4[::1], f4[:, ::1], "
                     "f4[:, :, ::1], f8[::1], i4[::1])",
}


@njit(cache=True, nogil=True)
def decode_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, out):
    """Best label of every token of every sentence into ``out``.

    The token scoring and the Viterbi step are `structperc.decode.score_kernels`'s, shared with the
    other tagging-side kernels (k-best, forward-backward, constrained decoding) so that all see this
    lattice bit for bit; that module also says why the training epoch's look-alike float64 loops
    (`structperc.train.epoch_kernels.sentence_scores`, `viterbi_into`) are not shared. The rows of the
    next sentences are prefetched while one is decoded, as in training (`prefetch_ahead`): EWT test ×5
    with the ``pos`` preset decoded in 0.123 s instead of 0.146 (0.167 against 0.201 with ``--lang en``),
    the same labels.

    Parameters
    ----------
    X : int32 (n_tokens, K)
        State attribute ids per token; -1 (unknown) adds nothing.
    XT : int32 (n_tokens, KT)
        Observation-conditioned transition attribute ids (KT may be 0).
    sent_ptr : int64 (n_sentences + 1,)
    ptr, lab, W : int64 (A + 1,), int16 (nnz,), float32 (nnz,)
        State weights of a feature set: attribute ``a``'s pairs are ``ptr[a]:ptr[a + 1]``
        (`structperc.model.state_weights.StateWeights`).
    base : float32 (L + 1, L)
        Transition weights plus the scheme's mask (-inf where forbidden); row L is ``<bos>``.
    Wc : float32 (AT + 1, L + 1, L)
        Conditioned transition weights.
    end : float64 (L,)
        Score of ending in each label.
    out : int32 (n_tokens,)
    """
    L = base.shape[1]
    dense = is_dense(ptr, lab, L)
    KT = XT.shape[1]
    n = sent_ptr.shape[0] - 1
    size = max(longest(sent_ptr), 1)
    state = np.empty(L, dtype=np.float32)
    every = np.empty(0, dtype=np.int64)  # `state_scores`'s label list, unread: every label
    # (1, L + 1, L) views, the layout of the vectorized Viterbi step (one slice serves position t)
    cond = np.empty((1, L + 1, L), dtype=np.float32)
    base3 = base.reshape((1, L + 1, L))
    delta = np.empty((size, L), dtype=np.float32)
    back = np.zeros((size, L), dtype=np.int32)
    order = np.arange(n)  # the sentences in turn, for the prefetches
    for s in range(n):
        prefetch_ahead(order, s, sent_ptr, X, ptr, lab, W, L, dense)
        a = sent_ptr[s]
        T = sent_ptr[s + 1] - a
        if T == 0:
            continue
        for t in range(T):
            row = a + t
            state_scores(X, row, ptr, lab, W, dense, state, every, L)
            tr = base3  # unconditioned: the shared matrix, no copy
            if KT > 0:
                transition_table(XT, row, Wc, base, cond[0])
                tr = cond
            if t == 0:
                for y in range(L):
                    delta[0, y] = state[y] + tr[0, L, y]
                continue
            viterbi_step(delta, back, tr, t, 0, L)
            for y in range(L):
                delta[t, y] += state[y]
        _, arg = best_last(delta, T, end)
        backtrack(back, arg, T, out, a)
