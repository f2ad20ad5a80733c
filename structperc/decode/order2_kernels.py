"""Compiled decoding with second-order transitions: the pair Viterbi of a sentence and of a corpus,
the kernels of `structperc.decode.order2` (which says what the model is and drives them).

In the float32 arithmetic of the first-order tagging decoder, so that with ``T2 ≡ 0`` the labels
are `structperc.decode.decoder.predict`'s exactly, ties included (tested); why is told in
`structperc.train.order2_kernels`, whose float64 training twin this is (the floors keep train and
decode apart). `structperc.compiled.loader` prefers the ahead-of-time build of this module
(``structperc._aot_order2``): tagging with a second-order model needs no numba at run time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "viterbi2_corpus": "void(f4[:, ::1], f4[:, :, ::1], f4[:, :, ::1], f8[::1], i8[::1], f8[:, ::1], i4[::1])",
}


@njit(cache=True, nogil=True)
def transition_lists(allowed):
    """Predecessor and successor lists of every label over the finite entries of ``allowed``
    ((L + 1, L), -inf: forbidden), as `structperc.train.order2_kernels.transition_lists`."""
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
def _sentence(state, trans, per_token, T2, end, out, a, T, A, back, M, B, pred_ptr, pred, succ_ptr, succ):
    """Best path of the sentence at rows ``a:a + T`` of ``state`` (and of ``trans`` when
    ``per_token``) into ``out[a:a + T]``: the pair Viterbi of
    `structperc.train.order2_kernels.viterbi2_into`, in the arrays' dtype (``A`` filled with -inf and
    ``back`` with 0 once: only the allowed pairs are written). Returns the path's score (-inf: the
    sentence has no path of finite score, e.g. under a mask of allowed labels)."""
    L = state.shape[1]
    ninf = np.float32(-np.inf)
    t0 = a if per_token else 0
    for y in range(L):
        A[0, L, y] = trans[t0, L, y] + T2[L, L, y]
    for t in range(1, T):
        ti = a + t if per_token else 0
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
            if t == 1:
                v = A[0, L, p]
                if v > ninf:
                    for j in range(lo, hi):
                        y = succ[j]
                        s = v + T2[L, p, y]
                        if s > M[y]:
                            M[y] = s
                            B[y] = L
            else:
                for k in range(pred_ptr[p], pred_ptr[p + 1]):
                    q = pred[k]
                    v = A[t - 1, q, p]
                    if v > ninf:
                        if wide:  # the labels that do not follow p are computed too, never read
                            for y in range(L):
                                s = v + T2[q, p, y]
                                m = M[y]
                                M[y] = s if s > m else m
                                B[y] = q if s > m else B[y]
                        else:
                            for j in range(lo, hi):
                                y = succ[j]
                                s = v + T2[q, p, y]
                                if s > M[y]:
                                    M[y] = s
                                    B[y] = q
            sp = state[a + t - 1, p]
            for j in range(lo, hi):
                y = succ[j]
                A[t, p, y] = (M[y] + sp) + trans[ti, p, y]
                back[t, p, y] = B[y]
    p_lo = L if T == 1 else 0
    p_hi = L + 1 if T == 1 else L
    best = -np.inf
    best_y = 0
    best_p = p_lo
    for y in range(L):
        m = ninf
        arg = p_lo
        for p in range(p_lo, p_hi):
            if A[T - 1, p, y] > m:
                m = A[T - 1, p, y]
                arg = p
        total = np.float64(m + state[a + T - 1, y]) + end[y]
        if total > best:
            best = total
            best_y = y
            best_p = arg
    out[a + T - 1] = best_y
    if T > 1:
        out[a + T - 2] = best_p
    for t in range(T - 1, 1, -1):
        out[a + t - 2] = back[t, out[a + t - 1], out[a + t]]
    return best


@njit(cache=True, nogil=True)
def viterbi2_corpus(state, trans, T2, end, sent_ptr, allowed, out):
    """Best label of every token of sentences ``sent_ptr`` (offsets into the rows of ``state``) into
    ``out`` (int32, the rows of ``state``).

    Parameters
    ----------
    state : float32 (n, L)
    trans : float32 (n, L + 1, L) per token, or (1, L + 1, L) shared
    T2 : float32 (L + 1, L + 1, L)
    end : float64 (L,)
    sent_ptr : int64
    allowed : (L + 1, L)
        -inf where the scheme forbids a transition (no path is searched through it).
    out : int32 (n,)
        A sentence with no path of finite score (a state score of -inf marks a label a mask forbids)
        gets -1 on every token, as `structperc.decode.decoder.predict` does.
    """
    L = state.shape[1]
    per_token = trans.shape[0] == state.shape[0] and state.shape[0] > 1
    if trans.shape[0] == 1:
        per_token = False
    size = 1
    for s in range(sent_ptr.shape[0] - 1):
        size = max(size, sent_ptr[s + 1] - sent_ptr[s])
    A = np.full((size, L + 1, L), -np.inf, dtype=np.float32)
    back = np.zeros((size, L + 1, L), dtype=np.int32)
    M = np.empty(L, dtype=np.float32)
    B = np.empty(L, dtype=np.int32)
    pred_ptr, pred, succ_ptr, succ = transition_lists(allowed)
    for s in range(sent_ptr.shape[0] - 1):
        a = sent_ptr[s]
        T = sent_ptr[s + 1] - a
        if T > 0:
            best = _sentence(state, trans, per_token, T2, end, out, a, T, A, back, M, B, pred_ptr, pred, succ_ptr,
                             succ)
            if best == -np.inf:
                out[a:a + T] = -1
