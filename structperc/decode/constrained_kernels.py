"""Compiled tagging under a mask of allowed labels per token: Viterbi that skips what the mask forbids.

Why a kernel of its own: a mask is worth a speed-up only if the decoder *exploits* it. Per token the
allowed labels are listed; only those are scored (a label's state score is the same float32 sum, in
the same order, as in `structperc.decode.tag_kernels.decode_corpus`: the same routine,
`structperc.decode.score_kernels.state_scores`), and the Viterbi step runs over
the (allowed previous) × (allowed current) pairs. A token with a single allowed label (a forced tag,
a word the tag dictionary knows as unambiguous) is not scored at all: its score is common to every
allowed path, so it cannot change which one is best; the numpy twin
(`structperc.decode.decoder.predict`) gives it the score 0 likewise, so both twins do exactly the
same float32 arithmetic and give the same labels. Ties go to the lowest previous label and the final
argmax to the lowest label, as in the unconstrained decoder; with every label allowed (and L ≥ 2)
the arithmetic is exactly that decoder's, so are the labels.

Constraints on a chain are the classic "pruned lattice" of POS tagging with a tag dictionary
(Ratnaparkhi 1996, "A Maximum Entropy Model for Part-of-Speech Tagging", EMNLP: the search only
considers the tags a known word was seen with); the Viterbi recursion itself is Viterbi (1967).

A sentence without an allowed path (a token with no allowed label, or masks and the scheme's
transition constraints that no path satisfies) gets the label -1 on every token: the caller decides
(`structperc.decode.decoder.predict` documents it).

These functions run through numba's JIT when imported from here; `structperc.compiled.loader` prefers
the ahead-of-time build of the same source (``structperc._aot_constrained``, whose digest covers this
module and `structperc.decode.score_kernels`).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.decode.score_kernels import (
    backtrack,
    is_dense,
    longest,
    prefetch_ahead,
    state_scores,
    transition_table,
    viterbi_step,
)

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "decode_corpus_allowed": "void(i4[:, ::1], i4[:, ::1], i8[::1], i8[::1], i2[::1], f4[::1], "
                             "f4[:, ::1], f4[:, :, ::1], f8[::1], u1[:, ::1], i4[::1])",
}

#: A Viterbi step runs vectorized over all L × L pairs (the AVX step of the unconstrained decoder,
#: forbidden previous labels held at -inf) when the allowed pairs are at least this many times L;
#: below, a scalar loop over the allowed pairs only is cheaper.
VECTOR_PAIRS_PER_LABEL = 4


@njit(cache=True, nogil=True)
def decode_corpus_allowed(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, allowed, out):
    """Best allowed label of every token of every sentence into ``out`` (-1: no allowed path).

    Parameters
    ----------
    X, XT, sent_ptr, ptr, lab, W, base, Wc, end
        As for `structperc.decode.tag_kernels.decode_corpus`.
    allowed : uint8 (n_tokens, L)
        Nonzero where the label is allowed at the token.
    out : int32 (n_tokens,)
    """
    L = base.shape[1]
    dense = is_dense(ptr, lab, L)
    KT = XT.shape[1]
    n = sent_ptr.shape[0] - 1
    neg = np.float32(-np.inf)
    size = max(longest(sent_ptr), 1)
    state = np.zeros(L, dtype=np.float32)
    cond = np.zeros((1, L + 1, L), dtype=np.float32)
    base3 = base.reshape((1, L + 1, L))
    delta = np.empty((size, L), dtype=np.float32)
    back = np.zeros((size, L), dtype=np.int32)
    labs = np.empty((size, L), dtype=np.int64)   # allowed labels of each position, ascending
    m = np.empty(size, dtype=np.int64)           # how many
    vector_pairs = VECTOR_PAIRS_PER_LABEL * L
    order = np.arange(n)  # the sentences in turn, for the prefetches
    for s in range(n):
        prefetch_ahead(order, s, sent_ptr, X, ptr, lab, W, L, dense)
        a = sent_ptr[s]
        T = sent_ptr[s + 1] - a
        if T == 0:
            continue
        dead = False
        for t in range(T):
            c = 0
            for y in range(L):  # branch-free: masks are irregular
                labs[t, c] = y
                c += allowed[a + t, y] != 0
            m[t] = c
            if c == 0:
                dead = True
        if dead:
            for t in range(T):
                out[a + t] = -1
            continue
        for t in range(T):
            row = a + t
            mt = m[t]
            full = mt == L
            # state scores of the allowed labels; none for a single label (common to all paths)
            if mt > 1:
                state_scores(X, row, ptr, lab, W, dense, state, labs[t], mt)
            mp = m[t - 1] if t > 0 else 1
            vector = t > 0 and mp * mt >= vector_pairs
            tr = base3
            if KT > 0:
                if vector and mp == L and full:  # every pair: as the unconstrained decoder
                    transition_table(XT, row, Wc, base, cond[0])
                else:  # the allowed pairs only, each summed in the same order
                    vector = False
                    for i in range(mp):
                        p = labs[t - 1, i] if t > 0 else L
                        for j in range(mt):
                            y = labs[t, j]
                            v = np.float32(0.0)
                            for k in range(KT):
                                at = XT[row, k]
                                if at >= 0:
                                    v += Wc[at, p, y]
                            cond[0, p, y] = v + base[p, y]
                tr = cond
            if t == 0:
                for y in range(L):
                    delta[0, y] = neg
                for j in range(mt):
                    y = labs[0, j]
                    if mt > 1:
                        delta[0, y] = state[y] + tr[0, L, y]
                    else:
                        delta[0, y] = tr[0, L, y]
                continue
            if vector:  # forbidden previous labels are -inf: they never win a strict >
                viterbi_step(delta, back, tr, t, 0, L)
                if full:
                    for y in range(L):
                        delta[t, y] += state[y]
                else:
                    for y in range(L):
                        if allowed[row, y] == 0:
                            delta[t, y] = neg
                    if mt > 1:
                        for j in range(mt):
                            y = labs[t, j]
                            delta[t, y] += state[y]
                continue
            for y in range(L):
                delta[t, y] = neg
            for j in range(mt):
                y = labs[t, j]
                best = neg
                arg = labs[t - 1, 0]
                for i in range(mp):  # previous labels ascending, strict >: the lowest on ties
                    p = labs[t - 1, i]
                    v = delta[t - 1, p] + tr[0, p, y]
                    if v > best:
                        best = v
                        arg = p
                if mt > 1:
                    delta[t, y] = best + state[y]
                else:
                    delta[t, y] = best
                back[t, y] = arg
        best64 = -np.inf
        arg = -1
        for j in range(m[T - 1]):
            y = labs[T - 1, j]
            v = np.float64(delta[T - 1, y]) + end[y]
            if v > best64:
                best64 = v
                arg = y
        if arg < 0:  # every allowed path scores -inf: none exists
            for t in range(T):
                out[a + t] = -1
            continue
        backtrack(back, arg, T, out, a)
