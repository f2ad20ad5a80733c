"""Compiled k-best decoding: score every token from its attribute ids, then list Viterbi, sentence by
sentence, into the k best label paths of every sentence.

The lattice is exactly the tagging decoder's (`structperc.decode.tag_kernels.decode_corpus`): token
scores summed in float32 from the attribute rows in template order, observation-conditioned
transition tables summed from zero before the base matrix (scheme mask included, row L = ``<bos>``)
is added, each step ``max(delta + transition)`` then ``+ state``, and the ``end`` vector added in
float64. So the first path is ``decode_corpus``'s bit for bit, and every score equals the numpy
twin's (`structperc.decode.nbest.nbest_batch`), which builds the same float32 sums.

Algorithm, per sentence (the list Viterbi of Seshadri & Sundberg 1994, "List Viterbi decoding
algorithms with applications", IEEE Trans. Communications 42(2/3/4), with the exact pruning of
`structperc.decode.nbest._live_cells`):

1. a forward and a backward max-product pass (float32 AVX steps, as the decoder's; with per-token
   transition tables the backward step reads their rows with eight running maxima instead of a
   transposed copy) give every cell's max-marginal m_t(j), the best score of a path through label
   j at position t;
2. the k-th largest m_t(·) at any position is the score of k distinct paths, so the best such
   value θ bounds the k-th best path score from below; a cell with m_t(j) < θ − margin carries no
   path of the k best (the margin, the numpy twin's, covers the rounding of float32 sums formed in
   different orders: 4·(2T + 2)·ε₃₂ times a bound on the magnitude of any path's terms; with
   conditioned transitions that bound sums each attribute's largest finite table entry, cheaper
   than scanning every token's table); on CoNLL-2000 chunking about one label per token stays live
   for k = 5;
3. over the live cells only, each cell keeps its k best partial paths (score, predecessor label,
   predecessor rank), best first: the k best one-step extensions of the live predecessors' sorted
   lists, merged by insertion into a list of k, candidates visited by predecessor label then rank
   ascending and inserted after every kept entry of equal score. That is the tie rule of
   `structperc.decode.nbest` (among equal scores, the path whose labels read from the last token
   backwards are lexicographically smaller first): a candidate's successors share the cell's label,
   so ties fall to the lower predecessor label, then to its better-ranked prefix. A predecessor's
   list is sorted, so the first candidate of it that fails to enter a full list ends its scan.
4. the final k of the whole sentence are merged the same way from the last position's cells
   (label, then rank ascending) with ``end`` added in float64, and backtracked.

With k = 1 the list is the plain Viterbi pass (steps 1-3 skipped). Buffers are allocated once per
call, sized by the longest sentence: O(T·L·k), plus O(T·(L + 1)·L) transition tables when transitions
are conditioned on the observation.

These functions run through numba's JIT when imported from here; `structperc.compiled.loader`
prefers the ahead-of-time build of the same source (group ``_aot_nbest``), which needs no numba at
run time; its digest covers this module and the lattice routines it shares with the decoder
(`structperc.decode.score_kernels`: token scores, transition tables, the Viterbi step). The caller
(`structperc.decode.nbest.nbest`) validates every array before calling.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.decode.score_kernels import backtrack, best_last, is_dense, longest, state_scores, \
    transition_table, viterbi_step

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "nbest_corpus": "void(i4[:, ::1], i4[:, ::1], i8[::1], i8[::1], i2[::1], f4[::1], f4[:, ::1], "
                    "f4[:, :, ::1], f8[::1], b1[:, ::1], i8, i4[:, ::1], f8[:, ::1])",
}

#: float32's machine epsilon (2^-23): the unit of the pruning margin.
_EPS32 = 1.1920928955078125e-07


@njit(cache=True, nogil=True)
def _finite_abs_max(x):
    """Largest |x| over the finite entries of a 1-d array (0 if none)."""
    m = 0.0
    for i in range(x.shape[0]):
        v = abs(np.float64(x[i]))
        if v > m and v < np.inf:
            m = v
    return m


@njit(cache=True, nogil=True)
def _finite_abs_max_bits(bits):
    """Bit pattern of the largest |x| over the finite entries of a 2-d float32 array given as its
    int32 view (0 if none). Non-negative floats order as their bit patterns, and an integer max
    vectorizes where a float one with infinities to skip does not (the float loop was half the
    k-best time with per-token transition tables)."""
    m = np.int32(0)
    for i in range(bits.shape[0]):
        for j in range(bits.shape[1]):
            b = bits[i, j] & np.int32(0x7FFFFFFF)
            if b < np.int32(0x7F800000) and b > m:
                m = b
    return m


@njit(cache=True, nogil=True)
def _row_max_plus(tr, ti, G, out, t, L):
    """``out[t, p] = max over y of tr[ti, p, y] + G[0, y]`` for p < L: the backward step with the
    table read along its rows (no transposed copy per token). Eight independent running maxima
    per row, so the compares do not wait on each other; a max is exact, so the order of the
    candidates does not change the result."""
    ninf = np.float32(-np.inf)
    for p in range(L):
        a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = ninf
        y = 0
        while y + 8 <= L:
            v0 = tr[ti, p, y] + G[0, y]
            v1 = tr[ti, p, y + 1] + G[0, y + 1]
            v2 = tr[ti, p, y + 2] + G[0, y + 2]
            v3 = tr[ti, p, y + 3] + G[0, y + 3]
            v4 = tr[ti, p, y + 4] + G[0, y + 4]
            v5 = tr[ti, p, y + 5] + G[0, y + 5]
            v6 = tr[ti, p, y + 6] + G[0, y + 6]
            v7 = tr[ti, p, y + 7] + G[0, y + 7]
            a0 = v0 if v0 > a0 else a0
            a1 = v1 if v1 > a1 else a1
            a2 = v2 if v2 > a2 else a2
            a3 = v3 if v3 > a3 else a3
            a4 = v4 if v4 > a4 else a4
            a5 = v5 if v5 > a5 else a5
            a6 = v6 if v6 > a6 else a6
            a7 = v7 if v7 > a7 else a7
            y += 8
        while y < L:
            v0 = tr[ti, p, y] + G[0, y]
            a0 = v0 if v0 > a0 else a0
            y += 1
        a0 = a1 if a1 > a0 else a0
        a2 = a3 if a3 > a2 else a2
        a4 = a5 if a5 > a4 else a4
        a6 = a7 if a7 > a6 else a6
        a0 = a2 if a2 > a0 else a0
        a4 = a6 if a6 > a4 else a4
        out[t, p] = a4 if a4 > a0 else a0


@njit(cache=True, nogil=True)
def _insert(vals, codes, n, k, v, code):
    """Insert ``v`` (``code``) into the descending list ``vals[:n]`` after every entry ``>= v``,
    keeping at most k entries; returns the new length (unchanged when ``v`` does not enter)."""
    if n == k:
        if not v > vals[k - 1]:
            return n
        i = k - 1
    else:
        i = n
        n += 1
    while i > 0 and vals[i - 1] < v:
        vals[i] = vals[i - 1]
        codes[i] = codes[i - 1]
        i -= 1
    vals[i] = v
    codes[i] = code
    return n


@njit(cache=True, nogil=True)
def nbest_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, allowed, k, ids, scores):
    """The k best label paths of every sentence into ``ids`` and ``scores``.

    Parameters
    ----------
    X, XT, sent_ptr, ptr, lab, W, base, Wc, end
        As `structperc.decode.tag_kernels.decode_corpus`.
    allowed : bool (n_tokens, L) or (0, L)
        False forbids a label at a token (its state score becomes -inf); an empty array allows all.
    k : int64, at least 1
    ids : int32 (k, n_tokens)
        Out: ``ids[r]`` is every sentence's (r+1)-th best path; -1 where a sentence has fewer paths.
    scores : float64 (n_sentences, k)
        Out: the paths' scores, best first; -inf where there are fewer paths; an empty sentence has
        one path of score 0.
    """
    L = base.shape[1]
    dense = is_dense(ptr, lab, L)
    KT = XT.shape[1]
    masked = allowed.shape[0] > 0
    n = sent_ptr.shape[0] - 1
    max_len = max(longest(sent_ptr), 1)
    every = np.empty(0, dtype=np.int64)                     # `state_scores`'s label list, unread
    kk = max(k, 1)
    S = np.empty((max_len, L), dtype=np.float32)            # state scores
    F = np.empty((max_len, L), dtype=np.float32)            # forward max-product (Viterbi) scores
    back1 = np.zeros((max_len, L), dtype=np.int32)
    cond = np.empty((max_len if KT > 0 else 1, L + 1, L), dtype=np.float32)
    base3 = base.reshape((1, L + 1, L))
    ti_of_t = 1 if KT > 0 else 0                            # slice of the stack holding position t
    tabs = np.zeros(max_len)                                # max finite |transition| per position
    shared_tabs = 0.0
    for p in range(L + 1):
        shared_tabs = max(shared_tabs, _finite_abs_max(base[p]))
    end_abs = _finite_abs_max(end)
    Wc_bits = Wc.view(np.int32)                             # for `_finite_abs_max_bits`
    attr_abs = np.full(Wc.shape[0], -1.0)                   # max finite |Wc[a]|, once it is needed
    S_bits = S.view(np.int32)
    one_bits = np.zeros(1, dtype=np.int32)
    one_f = one_bits.view(np.float32)
    # backward pass over shared transitions: the transposed table (rows: next label, columns: this
    # label) makes it a forward AVX step
    trT = np.zeros((1, L + 1, L), dtype=np.float32)
    for p in range(L):
        for y in range(L):
            trT[0, y, p] = base[p, y]
    G = np.empty((2, L), dtype=np.float32)
    Gback = np.zeros((2, L), dtype=np.int32)
    Bw = np.empty((max_len, L), dtype=np.float32)
    # list Viterbi over the live cells
    live = np.empty((max_len, L), dtype=np.int32)           # live labels of each position, ascending
    n_live = np.zeros(max_len, dtype=np.int64)
    D = np.empty((max_len, L, kk), dtype=np.float32)        # k best partial scores per cell
    Bk = np.empty((max_len, L, kk), dtype=np.int32)         # their predecessor p·k + r
    cnt = np.zeros((max_len, L), dtype=np.int64)            # entries kept per cell (live cells only)
    vals = np.empty(kk, dtype=np.float32)
    codes = np.empty(kk, dtype=np.int64)
    fvals = np.empty(kk)
    top = np.empty(kk)
    for s in range(n):
        a = sent_ptr[s]
        T = sent_ptr[s + 1] - a
        for r in range(k):
            scores[s, r] = -np.inf
            for t in range(T):
                ids[r, a + t] = -1
        if T == 0:
            scores[s, 0] = 0.0
            continue
        # ---- scores and the forward Viterbi pass
        for t in range(T):
            ti = t * ti_of_t
            state_scores(X, a + t, ptr, lab, W, dense, S[t], every, L)
            if KT > 0:
                transition_table(XT, a + t, Wc, base, cond[ti])
            if masked:
                for y in range(L):
                    if not allowed[a + t, y]:
                        S[t, y] = -np.inf
            tr = cond if KT > 0 else base3
            if k > 1:
                if KT > 0:      # |finite cond| <= Σ max|Wc[attribute]| + max|base|, to rounding
                    m = shared_tabs
                    for q in range(KT):
                        at = XT[a + t, q]
                        if at >= 0:
                            if attr_abs[at] < 0.0:
                                one_bits[0] = _finite_abs_max_bits(Wc_bits[at])
                                attr_abs[at] = one_f[0]
                            m += attr_abs[at]
                    tabs[t] = m
                else:
                    tabs[t] = shared_tabs
            if t == 0:
                for y in range(L):
                    F[0, y] = S[0, y] + tr[ti, L, y]
                continue
            viterbi_step(F, back1, tr, t, ti, L)
            for y in range(L):
                F[t, y] += S[t, y]
        if k == 1:
            best, arg = best_last(F, T, end)
            if best > -np.inf:
                scores[s, 0] = best
                backtrack(back1, arg, T, ids[0], a)
            continue
        # ---- backward max-product pass: Bw[t, p] = max_y tr_{t+1}[p, y] + S[t+1, y] + Bw[t+1, y]
        for y in range(L):
            Bw[T - 1, y] = np.float32(end[y])
        for t in range(T - 2, -1, -1):
            for y in range(L):
                G[0, y] = S[t + 1, y] + Bw[t + 1, y]
            if KT > 0:
                _row_max_plus(cond, t + 1, G, Bw, t, L)
            else:
                viterbi_step(G, Gback, trT, 1, 0, L)
                for y in range(L):
                    Bw[t, y] = G[1, y]
        # ---- the bound θ on the k-th best score, the margin, and the live cells
        theta = -np.inf
        size = end_abs
        for t in range(T):
            one_bits[0] = _finite_abs_max_bits(S_bits[t:t + 1])
            size += one_f[0] + tabs[t]
            above = 0
            for y in range(L):                              # Bw becomes the max-marginals m
                Bw[t, y] = F[t, y] + Bw[t, y]
                above += Bw[t, y] > theta
            if above >= k:                                  # the k-th largest m_t(·) may raise θ
                nv = 0
                for y in range(L):
                    if Bw[t, y] > theta:
                        nv = _insert(fvals, codes, nv, k, np.float64(Bw[t, y]), y)
                theta = fvals[k - 1]
        cut = theta - 4.0 * (2 * T + 2) * _EPS32 * size
        for t in range(T):
            nl = 0
            for y in range(L):
                mm = np.float64(Bw[t, y])
                if mm > -np.inf and mm >= cut:
                    live[t, nl] = y
                    nl += 1
            n_live[t] = nl
        # ---- list Viterbi over the live cells
        tr = cond if KT > 0 else base3
        for i in range(n_live[0]):
            y = live[0, i]
            D[0, y, 0] = F[0, y]
            cnt[0, y] = 1
        for t in range(1, T):
            ti = t * ti_of_t
            for i in range(n_live[t]):
                y = live[t, i]
                nv = 0
                for j in range(n_live[t - 1]):
                    p = live[t - 1, j]
                    tp = tr[ti, p, y]
                    for r in range(cnt[t - 1, p]):
                        v = D[t - 1, p, r] + tp
                        if not v > -np.inf or (nv == k and not v > vals[k - 1]):
                            break                           # nor can the rest of p's sorted list
                        nv = _insert(vals, codes, nv, k, v, p * k + r)
                sy = S[t, y]
                for r in range(nv):
                    D[t, y, r] = vals[r] + sy
                    Bk[t, y, r] = codes[r]
                cnt[t, y] = nv
        # ---- the k best complete paths, then backtracking
        nv = 0
        for i in range(n_live[T - 1]):
            y = live[T - 1, i]
            for r in range(cnt[T - 1, y]):
                v = np.float64(D[T - 1, y, r]) + end[y]
                if not v > -np.inf or (nv == k and not v > top[k - 1]):
                    break
                nv = _insert(top, codes, nv, k, v, y * k + r)
        for q in range(nv):
            scores[s, q] = top[q]
            code = codes[q]
            y = code // k
            r = code % k
            ids[q, a + T - 1] = y
            for t in range(T - 1, 0, -1):
                code = Bk[t, y, r]
                y = code // k
                r = code % k
                ids[q, a + t - 1] = y
