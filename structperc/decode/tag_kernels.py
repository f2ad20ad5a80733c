"""Compiled tagging: score every token from its attribute ids and Viterbi-decode, sentence by sentence.

One pass per sentence over a (T, L) buffer, so memory does not grow with the input, and no padding
work (the vectorized numpy decoder in `structperc.decode.viterbi` pads batches to their longest sentence).
The arithmetic is float32 in exactly the order of `structperc.model.weights.Weights.predict`'s numpy path
(template sums left to right from zero, conditioned-transition sums before the base matrix is added,
ties to the lowest label), so both give the same labels; the tests check it.

These functions run through numba's JIT when imported from here; `structperc.compiled.loader` prefers the
ahead-of-time build of the same source (``structperc._aot``), which needs no numba at run time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.compiled.intrinsics import viterbi_step4_f32, viterbi_step8_f32, viterbi_step16_f32

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "decode_corpus": "void(i4[:, ::1], i4[:, ::1], i8[::1], i8[::1], i2[::1], f4[::1], f4[:, ::1], "
                     "f4[:, :, ::1], f8[::1], i4[::1])",
}


@njit(cache=True, nogil=True)
def viterbi_step(delta, back, tr, t, L):
    """``delta[t]`` (before the state scores) and ``back[t]`` from ``delta[t − 1]`` and ``tr[0]``:
    max over the previous label p of ``delta[t − 1, p] + tr[0, p, y]``, ties to the lowest p (as
    numpy's argmax). Vectors of 16 and 8 labels, a last vector ending at L for the remainder
    (overlapping labels are recomputed to the same values); below 8 labels, 4, then scalar.
    """
    if L >= 8:
        y = 0
        while y + 16 <= L:
            viterbi_step16_f32(delta, back, tr, t, 0, y)
            y += 16
        if L - y > 8:  # 9..15 labels left: two vectors of 8, overlapping
            viterbi_step8_f32(delta, back, tr, t, 0, y)
        if y < L:
            viterbi_step8_f32(delta, back, tr, t, 0, L - 8)
        return
    if L >= 4:  # 4..7 labels: one or two vectors of 4
        viterbi_step4_f32(delta, back, tr, t, 0, 0)
        if L > 4:
            viterbi_step4_f32(delta, back, tr, t, 0, L - 4)
        return
    for yy in range(L):  # L < 4
        best = np.float32(-np.inf)
        arg = 0
        for p in range(L):  # strict > keeps the lowest p on ties
            v = delta[t - 1, p] + tr[0, p, yy]
            if v > best:
                best = v
                arg = p
        delta[t, yy] = best
        back[t, yy] = arg


@njit(cache=True, nogil=True)
def decode_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, out):
    """Best label of every token of every sentence into ``out``.

    The token scoring and the Viterbi step here look like the training epoch's
    (`structperc.train.epoch_kernels.sentence_scores`, `viterbi_into`) but are not shared with it on
    purpose: training sums in float64 (its updates must equal the numpy reference epoch exactly) and
    tagging in float32 with 16-label AVX steps (half the memory traffic: CoNLL-2000 test's Viterbi
    took 58 ms in float64 and takes 25 ms, README "How it works"); one routine would cost one side
    its exactness or its speed.

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
    dense = lab.shape[0] == (ptr.shape[0] - 1) * L  # every row holds every label: ptr[a] = a·L
    K = X.shape[1]
    KT = XT.shape[1]
    n = sent_ptr.shape[0] - 1
    max_len = 0
    for s in range(n):
        T = sent_ptr[s + 1] - sent_ptr[s]
        if T > max_len:
            max_len = T
    state = np.empty(L, dtype=np.float32)
    # (1, L + 1, L) views, the layout of the vectorized Viterbi step (one slice serves position t)
    cond = np.empty((1, L + 1, L), dtype=np.float32)
    base3 = base.reshape((1, L + 1, L))
    delta = np.empty((max(max_len, 1), L), dtype=np.float32)
    back = np.zeros((max(max_len, 1), L), dtype=np.int32)
    for s in range(n):
        a = sent_ptr[s]
        T = sent_ptr[s + 1] - a
        if T == 0:
            continue
        for t in range(T):
            row = a + t
            for y in range(L):
                state[y] = np.float32(0.0)
            for k in range(K):
                at = X[row, k]
                if at >= 0:
                    if dense:
                        lo = np.uint64(at) * np.uint64(L)
                        hi = lo + np.uint64(L)
                    else:
                        lo = np.uint64(ptr[at])
                        hi = np.uint64(ptr[at + 1])
                    if hi - lo == L:  # a full row: contiguous (unsigned: no negative-index checks)
                        for y in range(L):
                            state[y] += W[lo + np.uint64(y)]
                    else:
                        for j in range(lo, hi):
                            state[lab[j]] += W[j]
            tr = base3  # unconditioned: the shared matrix, no copy
            if KT > 0:
                for p in range(L + 1):
                    for y in range(L):
                        cond[0, p, y] = np.float32(0.0)
                for k in range(KT):
                    at = XT[row, k]
                    if at >= 0:
                        for p in range(L + 1):
                            for y in range(L):
                                cond[0, p, y] += Wc[at, p, y]
                for p in range(L + 1):
                    for y in range(L):
                        cond[0, p, y] += base[p, y]
                tr = cond
            if t == 0:
                for y in range(L):
                    delta[0, y] = state[y] + tr[0, L, y]
                continue
            viterbi_step(delta, back, tr, t, L)
            for y in range(L):
                delta[t, y] += state[y]
        best64 = np.float64(delta[T - 1, 0]) + end[0]
        arg = 0
        for y in range(1, L):
            v = np.float64(delta[T - 1, y]) + end[y]
            if v > best64:
                best64 = v
                arg = y
        out[a + T - 1] = arg
        for t in range(T - 1, 0, -1):
            arg = back[t, arg]
            out[a + t - 1] = arg
