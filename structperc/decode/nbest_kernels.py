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
3. over the live cells only, each cell's list of partial paths (score, predecessor label,
   predecessor rank), best first, is the merge of its live predecessors' sorted lists, each
   extended by one step; ties go to the lower predecessor label, then to its better-ranked prefix.
   That is the tie rule of `structperc.decode.nbest` (among equal scores, the path whose labels
   read from the last token backwards are lexicographically smaller first): a candidate's
   successors share the cell's label. The merge is lazy (Huang & Chiang 2005, "Better k-best
   parsing", IWPT, Algorithm 3): a forward sweep gives every cell its first entry and a heap holding
   the head of each predecessor's list (at most k heads: a head beaten by k others gives none of
   the cell's k entries); an entry after that is made only when a path of the final list asks for
   it, by popping the heap after pushing the candidate that follows the last entry taken, which
   may ask the predecessor cell for its next entry in turn (a chain down the positions).
4. the final k of the whole sentence are merged the same way from the last position's cells
   (label, then rank ascending) with ``end`` added in float64, and backtracked.

So a sentence of T tokens costs O(T·L²) for the first entries and O(k·T·log L) for the lists, where
merging the full lists of k at every cell (as this module did before, by insertion) cost up to
O(T·L·k²): on a 28-token sentence of CoNLL-2000 chunking (40 labels) k = 5,000 took 29 s and k =
20,000 over ten minutes, now 0.02 s and 0.08 s. With k = 1 the list is the plain Viterbi pass (steps
1-3 skipped). Buffers are allocated once per call, sized by the longest sentence: the entries, a
pool per position (at most L first entries and one more per path of the final k: O(T·(L + k))),
the heaps O(T·L·min(L, k)), plus O(T·(L + 1)·L) transition tables when transitions are conditioned
on the observation.

These functions run through numba's JIT when imported from here; `structperc.compiled.loader`
prefers the ahead-of-time build of the same source (group ``_aot_nbest``), which needs no numba at
run time; its digest covers this module and the lattice routines it shares with the decoder
(`structperc.decode.score_kernels`: token scores, transition tables, the Viterbi step). The caller
(`structperc.decode.nbest.nbest`) validates every array before calling.
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


# ---- a binary heap of candidates (value, predecessor label p, rank r), stored in three arrays. Its top
# is the first candidate in the module's order: the largest value, among equal values the lowest label
# p (a heap never holds two candidates of one p, so no further tie is possible).
@njit(cache=True, nogil=True)
def _sift_down(hv, hp, hr, n, i):
    """Move the candidate at position i of the heap ``[:n]`` down to its place."""
    v = hv[i]
    p = hp[i]
    r = hr[i]
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and (hv[c + 1] > hv[c] or (hv[c + 1] == hv[c] and hp[c + 1] < hp[c])):
            c += 1
        if hv[c] > v or (hv[c] == v and hp[c] < p):
            hv[i] = hv[c]
            hp[i] = hp[c]
            hr[i] = hr[c]
            i = c
        else:
            break
    hv[i] = v
    hp[i] = p
    hr[i] = r


@njit(cache=True, nogil=True)
def _heapify(hv, hp, hr, n):
    for i in range(n // 2 - 1, -1, -1):
        _sift_down(hv, hp, hr, n, i)


@njit(cache=True, nogil=True)
def _push(hv, hp, hr, n, v, p, r):
    """Add a candidate to the heap ``[:n]``; returns the new size."""
    i = n
    while i > 0:
        up = (i - 1) // 2
        if v > hv[up] or (v == hv[up] and p < hp[up]):
            hv[i] = hv[up]
            hp[i] = hp[up]
            hr[i] = hr[up]
            i = up
        else:
            break
    hv[i] = v
    hp[i] = p
    hr[i] = r
    return n + 1


@njit(cache=True, nogil=True)
def _pop(hv, hp, hr, n):
    """Remove the top of the heap ``[:n]``; returns the new size."""
    n -= 1
    if n > 0:
        hv[0] = hv[n]
        hp[0] = hp[n]
        hr[0] = hr[n]
        _sift_down(hv, hp, hr, n, 0)
    return n


@njit(cache=True, nogil=True)
def _next_entry(t, y, ev, eb, el, en, n_pool, last, cnt, done, Hv, Hp, He, Hn, tr, ti_of_t, S, chain, work):
    """Append the next entry to the list of cell (t, y), t >= 1, which holds at least one entry and
    is not ``done`` (Huang & Chiang 2005, "Better k-best parsing", Algorithm 3).

    The candidate after the list's last entry (an extension of entry b of a predecessor cell
    (t - 1, p)) is the extension of the entry after b in that cell's list: it joins the cell's heap,
    then the heap's top becomes the new entry. The entry after b may itself be missing: the
    recursion of LazyKthBest, a chain of cells one position apart, is walked down first
    (``chain``), then each cell's entry is made from the deepest up. A cell whose heap runs empty is
    ``done``. ``work[0]`` counts the heap operations.

    Entries of position t are ``ev[t, e]`` (score), ``eb[t, e]`` (predecessor entry at t - 1),
    ``el[t, e]`` (label) and ``en[t, e]`` (the next entry of the same cell, -1 until made), e <
    ``n_pool[t]``; ``last[t, y]`` is the cell's last entry, ``cnt[t, y]`` their number.
    """
    depth = 0
    tt = t
    yy = y
    while True:                                 # down: which cells need their next entry first
        chain[depth] = yy
        depth += 1
        b = eb[tt, last[tt, yy]]
        p = el[tt - 1, b]
        if en[tt - 1, b] >= 0 or done[tt - 1, p]:
            break
        tt -= 1
        yy = p
    for i in range(depth - 1, -1, -1):         # up: each cell's next entry, the deepest first
        tt = t - i
        yy = chain[i]
        hv = Hv[tt, yy]
        hp = Hp[tt, yy]
        he = He[tt, yy]
        n = Hn[tt, yy]
        e = last[tt, yy]
        b = en[tt - 1, eb[tt, e]]
        if b >= 0:
            p = el[tt - 1, b]
            v = ev[tt - 1, b] + tr[tt * ti_of_t, p, yy]
            if v > -np.inf:
                n = _push(hv, hp, he, n, v, p, b)
                work[0] += 1
        if n == 0:
            done[tt, yy] = True
            Hn[tt, yy] = 0
            continue
        f = n_pool[tt]
        n_pool[tt] = f + 1
        ev[tt, f] = hv[0] + S[tt, yy]
        eb[tt, f] = he[0]
        el[tt, f] = yy
        en[tt, f] = -1
        en[tt, e] = f
        last[tt, yy] = f
        cnt[tt, yy] += 1
        Hn[tt, yy] = _pop(hv, hp, he, n)
        work[0] += 1


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
    nbest_counted(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, allowed, k, ids, scores,
                  np.zeros(1, dtype=np.int64))


@njit(cache=True, nogil=True)
def nbest_counted(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, allowed, k, ids, scores, work):
    """`nbest_corpus`, adding to ``work[0]`` (int64) the number of list-Viterbi candidate operations:
    candidates scored when a cell's heap is first filled, heap pushes and pops. Each costs O(1) or
    O(log L); the tests read the count to check that a sentence's k-best cost grows linearly in k."""
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
    # each cell's list, best first, found lazily, its entries in a pool per position: a position holds
    # at most L first entries and one more for each path of the final k (each asks at most one cell of
    # every position for its next entry)
    P = L + kk
    ev = np.empty((max_len, P), dtype=np.float32)          # partial score of each entry
    eb = np.empty((max_len, P), dtype=np.int32)            # its predecessor entry at the position before
    el = np.empty((max_len, P), dtype=np.int32)            # its label (its cell)
    en = np.empty((max_len, P), dtype=np.int32)            # the next entry of its cell (-1: not yet)
    n_pool = np.zeros(max_len, dtype=np.int64)
    first = np.empty((max_len, L), dtype=np.int32)         # each cell's first and last entry (-1: none)
    last = np.empty((max_len, L), dtype=np.int32)
    cnt = np.zeros((max_len, L), dtype=np.int64)            # entries found per cell (live cells only)
    done = np.zeros((max_len, L), dtype=np.bool_)           # the cell's list is complete
    C = min(L, kk)                                          # heap capacity: candidates a cell can use
    Hv = np.empty((max_len, L, C), dtype=np.float32)        # each cell's heap of next candidates:
    Hp = np.empty((max_len, L, C), dtype=np.int32)          # predecessor label,
    He = np.empty((max_len, L, C), dtype=np.int32)          # predecessor entry
    Hn = np.zeros((max_len, L), dtype=np.int64)
    hv0 = np.empty(L, dtype=np.float32)                     # a cell's first candidates, all of them
    hp0 = np.empty(L, dtype=np.int32)
    he0 = np.empty(L, dtype=np.int32)
    fv = np.empty(L)                                        # the heap of complete paths
    fp = np.empty(L, dtype=np.int32)
    fe = np.empty(L, dtype=np.int32)
    chain = np.empty(max_len, dtype=np.int32)
    codes = np.empty(kk, dtype=np.int64)
    fvals = np.empty(kk)
    order = np.arange(n)  # the sentences in turn, for the prefetches
    for s in range(n):
        prefetch_ahead(order, s, sent_ptr, X, ptr, lab, W, L, dense)
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
        # ---- list Viterbi over the live cells: every cell's first entry (its Viterbi score), and the
        # heap of candidates its later entries come from (the head of each live predecessor's list)
        tr = cond if KT > 0 else base3
        for i in range(n_live[0]):
            y = live[0, i]
            ev[0, i] = F[0, y]
            eb[0, i] = -1
            el[0, i] = y
            en[0, i] = -1
            first[0, y] = i
            last[0, y] = i
            cnt[0, y] = 1
            done[0, y] = True                               # a path's first label has one prefix
        n_pool[0] = n_live[0]
        for t in range(1, T):
            ti = t * ti_of_t
            f = 0
            for i in range(n_live[t]):
                y = live[t, i]
                m = 0
                for j in range(n_live[t - 1]):
                    p = live[t - 1, j]
                    b = first[t - 1, p]
                    if b >= 0:
                        v = ev[t - 1, b] + tr[ti, p, y]
                        if v > -np.inf:
                            hv0[m] = v
                            hp0[m] = p
                            he0[m] = b
                            m += 1
                work[0] += m
                hv = Hv[t, y]
                hp = Hp[t, y]
                he = He[t, y]
                if m > C:       # only the C (= k) first heads can give any of the cell's k entries
                    _heapify(hv0, hp0, he0, m)
                    for c in range(C):                      # in order: a sorted array is a heap
                        hv[c] = hv0[0]
                        hp[c] = hp0[0]
                        he[c] = he0[0]
                        m = _pop(hv0, hp0, he0, m)
                    m = C
                else:
                    for c in range(m):
                        hv[c] = hv0[c]
                        hp[c] = hp0[c]
                        he[c] = he0[c]
                    _heapify(hv, hp, he, m)
                if m == 0:
                    first[t, y] = -1
                    cnt[t, y] = 0
                    done[t, y] = True
                    Hn[t, y] = 0
                    continue
                ev[t, f] = hv[0] + S[t, y]
                eb[t, f] = he[0]
                el[t, f] = y
                en[t, f] = -1
                first[t, y] = f
                last[t, y] = f
                cnt[t, y] = 1
                done[t, y] = False
                Hn[t, y] = _pop(hv, hp, he, m)
                f += 1
            n_pool[t] = f
        # ---- the k best complete paths, merged from the last position's lists (``end`` added in
        # float64): each path taken asks its cell for the entry after its own, lazily
        nf = 0
        for i in range(n_live[T - 1]):
            y = live[T - 1, i]
            b = first[T - 1, y]
            if b >= 0:
                v = np.float64(ev[T - 1, b]) + end[y]
                if v > -np.inf:
                    fv[nf] = v
                    fp[nf] = y
                    fe[nf] = b
                    nf += 1
        _heapify(fv, fp, fe, nf)
        nv = 0
        while nf > 0 and nv < k:
            y = fp[0]
            e = fe[0]
            scores[s, nv] = fv[0]
            codes[nv] = e
            nv += 1
            if nv == k:
                break
            if en[T - 1, e] < 0 and not done[T - 1, y] and cnt[T - 1, y] < k:
                _next_entry(T - 1, y, ev, eb, el, en, n_pool, last, cnt, done, Hv, Hp, He, Hn, tr, ti_of_t, S,
                            chain, work)
            b = en[T - 1, e]
            if b >= 0:
                v = np.float64(ev[T - 1, b]) + end[y]
                if v > -np.inf:                             # the path after it in its cell's list
                    fv[0] = v
                    fe[0] = b
                    _sift_down(fv, fp, fe, nf, 0)
                    work[0] += 1
                    continue
            nf = _pop(fv, fp, fe, nf)
            work[0] += 1
        for q in range(nv):
            e = codes[q]
            for t in range(T - 1, -1, -1):
                ids[q, a + t] = el[t, e]
                e = eb[t, e]
