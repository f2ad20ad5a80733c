"""Compiled decoding with second-order transitions: the pair Viterbi (`structperc.compiled.pair_viterbi`)
of every sentence of a corpus, the kernel of `structperc.decode.order2` (which says what the model is
and drives it).

In the float32 arithmetic of the first-order tagging decoder, so that with ``T2 ≡ 0`` the labels are
`structperc.decode.decoder.predict`'s exactly, ties included (tested). `structperc.compiled.loader`
prefers the ahead-of-time build of this module (``structperc._aot_order2``): tagging with a
second-order model needs no numba at run time.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.compiled.pair_viterbi import pair_viterbi, transition_lists

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "viterbi2_corpus": "void(f4[:, ::1], f4[:, :, ::1], f4[:, :, ::1], f8[::1], i8[::1], f8[:, ::1], i4[::1])",
}


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
            best = pair_viterbi(state, trans, per_token, T2, end, out, a, T, A, back, M, B, pred_ptr, pred,
                                succ_ptr, succ)
            if best == -np.inf:
                out[a:a + T] = -1
