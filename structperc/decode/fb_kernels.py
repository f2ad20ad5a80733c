"""Compiled forward-backward: token marginals, log Z and path log-probabilities of every sentence of a
featurized corpus, one pass per sentence over buffers sized by the longest sentence (memory does not
grow with the input).

The lattice is exactly the one the tagging decoder maximizes (`structperc.decode.tag_kernels`):
token scores summed in float32 from the attribute rows in template order, observation-conditioned
transition tables summed before the base matrix (scheme mask included, row L = ``<bos>``) is added,
and the ``end`` vector; the numpy twin (`structperc.decode.marginals`, via
`structperc.model.weights.Weights.state_scores`) builds bit-identical float32 scores. Everything after
that is float64.

Algorithm: the scaled forward-backward of Rabiner (1989, "A tutorial on hidden Markov models",
section V.A) in probability space. Per position the score vector is shifted by its maximum and
exponentiated (L exps per token); the transition exponentials are shifted per column and taken once
per corpus when transitions are unconditioned, and once per distinct combination of a token's
conditioned attribute ids otherwise (see "Conditioned transitions" below); each step is a
vector-times-matrix product whose result is normalized to sum 1, the logs of the normalizers adding
up to log Z. The backward pass carries its *own* normalizers, so it computes log Z a second time.

Underflow guard: a scaled pass loses exactly the mass of the products that underflow (a path whose
prefix, or suffix, is ~1e-308 times less likely than the rest at some position, which later
dominates: perceptron scores divided by a small temperature do that). Two checks send a sentence to
an exact log-space recomputation (log-sum-exp per entry, as the numpy twin's fallback):

* an exponential both passes share (a token's shifted state scores, a transition or end entry) below
  e^-700, i.e. possibly underflowed: both passes would lose the same mass;
* otherwise the losses are in products the two passes form differently (forward: prefix times
  transition; backward: transition times suffix), so they lower the forward and backward estimates
  of Z by different amounts: the sentence falls back when the two log Z disagree by more than
  1e-11 · (T + 10), when a normalizer vanishes, or when a token's Σ_j α̂(j) β̂(j) falls below 1e-280
  (its products may have underflowed).

A sentence with no allowed path thus gets log Z = -inf and all-zero marginals, never NaN. The
log-space pass costs ~3x the scaled one and more where many sums need the exact log-sum-exp: at
τ ≤ 0.1 on CoNLL-2000 the transition exponentials themselves underflow, every sentence takes it,
and the kernel runs about as fast as the numpy twin (0.35-0.5 s); at τ ≥ 0.3 no sentence does. Random
lattices with scores in the thousands, long sentences and trained models (tests/decode/
test_fb_kernels.py) agree with enumeration and the numpy twin to 1e-9 (real data: ~1e-12).

Conditioned transitions: the float32 table of a token is a function of its tuple of conditioned
attribute ids alone (the KT ids summed in template order, then the base matrix), so tables and
exponentials are built once per distinct tuple met in the call (a hash table numbers them; the
default chunk template's ``y[-1]|y[0]|pos[0]`` and ``y[-1]|y[0]|pos[-1]|pos[0]``: 873 tuples on
CoNLL-2000 test, as the second determines the first), bit-identical to building them per token. A
memory budget (`_CACHE_BYTES`, 256 MiB: ~8,000 tuples at L = 40) bounds the cache; tokens whose tuple
did not fit get today's per-position table (L² exps per token). The alternative of caching one
exponentiated table per attribute and multiplying them per token (exp(a + b) = exp(a)·exp(b)) was
not taken: the lattice is the decoder's float32 sum, and fl32(a + b) differs from a + b by up to an
ulp, so the product needs a per-entry correction exp(fl32(a + b) − a − b) to keep 1e-12 agreement
with the twin, and at ~10 operations per entry and token it would cost about what the whole scaled
pass costs; tuples repeat on the default templates and cost nothing per token.

Cost on CoNLL-2000 test (47,377 tokens, 40 IOBES labels; min of 7 runs, AOT builds): shared
transitions (crfsuite template), about 2.1 to 2.4 times the compiled Viterbi decode (the same
token scoring, L exps per token and two L × L products instead of one max-product); the numpy twin
takes ~4.5 times. The default chunk template (two conditioned templates): 0.105 s against a 0.061 s
decode, 1.7x (per-token tables: 0.61 s, ~10x). A vectorized polynomial exp and products skipping
the scheme's zero transitions were tried: within the noise (<= 3 %) or slower, so left out.

These functions run through numba's JIT when imported from here; `structperc.compiled.loader` prefers
the ahead-of-time build of this module (group ``_aot_fb``, whose digest covers this module and the
lattice routines of `structperc.decode.score_kernels`), which needs no numba at run time. The
drivers (`structperc.decode.marginals`) never JIT: without a current build they use the numpy twin.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.decode.score_kernels import is_dense, longest, prefetch_ahead, state_scores, transition_table

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "fb_corpus": "void(i4[:, ::1], i4[:, ::1], i8[::1], i8[::1], i2[::1], f4[::1], f4[:, ::1], "
                 "f4[:, :, ::1], f8[::1], f8, b1[:, ::1], i4[::1], f8[:, ::1], f8[::1], f8[::1])",
}

#: Per-token tolerance on |log Z (forward) − log Z (backward)| of the scaled pass; above it (mass lost
#: to underflow) the sentence is recomputed in log space.
LOGZ_TOLERANCE = 1e-11
#: Smallest Σ_j α̂_t(j) β̂_t(j) the scaled pass trusts (products below ~1e-308 are lost).
_ROW_FLOOR = 1e-280
#: A shifted exponent below this (a probability ratio under e^-700 ≈ 1e-304) may underflow: such an
#: entry is shared by both passes (their log Z would agree on the loss), so its sentence goes to log space.
_UNDERFLOW = -700.0
#: Below this, a sum of the log-space fallback is recomputed by an exact log-sum-exp.
_TINY = 1e-200
#: Bytes the cached transition tables of the distinct attribute combinations may take (see
#: `_combination_slots`).
_CACHE_BYTES = 256 << 20


@njit(cache=True, nogil=True)
def _lse(v, n):
    """log Σ exp(v[:n]); -inf when every entry is -inf. Terms below e^-746 next to the largest
    (whose exp is exactly 0) are skipped without an exp: at a small temperature most are."""
    m = -np.inf
    for i in range(n):
        if v[i] > m:
            m = v[i]
    if m == -np.inf:
        return -np.inf
    s = 0.0
    for i in range(n):
        d = v[i] - m
        if d > -746.0:
            s += np.exp(d)
    return m + np.log(s)


@njit(cache=True, nogil=True)
def _log_space(T, L, X64, TR, kidx, E3, ET3, CM, inv_tau, ends, la, lb, tmp, w):
    """Exact forward-backward of one sentence in log space (the fallback of the scaled pass).

    Each step is the numpy twin's (`structperc.decode.marginals`): the previous log α (or the next
    log β plus scores) shifted by its maximum and exponentiated, one vector-times-matrix product
    with the shifted transition exponentials E3[k], and the log taken per entry; an entry whose sum
    is below `_TINY` (terms may have underflowed) is recomputed by an exact log-sum-exp. Terms
    dropped by underflow are below 1e-308 next to a sum above 1e-200, so every entry is exact to
    rounding, for any score range, at ~3x the scaled pass's cost (L logs per token and pass).

    X64 (T, L): scaled state scores (-inf where forbidden); TR[kidx[t]]: the float32 transitions into
    position t, (L + 1, L) (scaled by ``inv_tau`` here), with E3, ET3, CM as `_shifted_exp` makes
    them; ``ends`` (L,): scaled end scores. Fills log α into ``la``, log β into ``lb``; returns log Z.
    """
    for j in range(L):
        la[0, j] = X64[0, j] + np.float64(TR[kidx[0], L, j]) * inv_tau
    for t in range(1, T):
        k = kidx[t]
        E = E3[k]
        am = -np.inf
        for i in range(L):
            if la[t - 1, i] > am:
                am = la[t - 1, i]
        if am == -np.inf:
            for j in range(L):
                la[t, j] = -np.inf
            continue
        for j in range(L):
            tmp[j] = 0.0
        for i in range(L):
            ai = np.exp(la[t - 1, i] - am)
            if ai != 0.0:
                for j in range(L):
                    tmp[j] += ai * E[i, j]
        for j in range(L):
            if X64[t, j] == -np.inf:
                la[t, j] = -np.inf
            elif tmp[j] >= _TINY:
                la[t, j] = np.log(tmp[j]) + am + CM[k, j] + X64[t, j]
            else:
                for i in range(L):
                    w[i] = la[t - 1, i] + np.float64(TR[k, i, j]) * inv_tau
                la[t, j] = X64[t, j] + _lse(w, L)
    for j in range(L):
        tmp[j] = la[T - 1, j] + ends[j]
    log_z = _lse(tmp, L)
    for j in range(L):
        lb[T - 1, j] = ends[j]
    for t in range(T - 2, -1, -1):
        k = kidx[t + 1]
        ET = ET3[k]
        gm = -np.inf
        for j in range(L):
            g = X64[t + 1, j] + lb[t + 1, j]
            if g > -np.inf:
                g += CM[k, j]
            w[j] = g
            if g > gm:
                gm = g
        if gm == -np.inf:
            for i in range(L):
                lb[t, i] = -np.inf
            continue
        for i in range(L):
            tmp[i] = 0.0
        for j in range(L):
            wj = np.exp(w[j] - gm)
            if wj != 0.0:
                for i in range(L):
                    tmp[i] += ET[j, i] * wj
        for i in range(L):
            if tmp[i] >= _TINY:
                lb[t, i] = np.log(tmp[i]) + gm
            else:
                tot = -np.inf
                m = -np.inf
                for j in range(L):   # exact log-sum-exp over j, without a second buffer
                    v = np.float64(TR[k, i, j]) * inv_tau + X64[t + 1, j] + lb[t + 1, j]
                    if v > m:
                        m = v
                if m > -np.inf:
                    tot = 0.0
                    for j in range(L):
                        d = np.float64(TR[k, i, j]) * inv_tau + X64[t + 1, j] + lb[t + 1, j] - m
                        if d > -746.0:
                            tot += np.exp(d)
                    tot = m + np.log(tot)
                lb[t, i] = tot
    return log_z


@njit(cache=True, nogil=True)
def _shifted_exp(TRk, inv_tau, L, E, ET, cm):
    """E[i, j] = exp(TRk[i, j]/τ − cm[j]) over the L real predecessors, cm[j] the column maximum
    (0 for a column of -inf: its entries are 0); ET its transpose (row access for the backward).
    Returns whether an allowed entry lies below e^`_UNDERFLOW` (may have underflowed)."""
    lossy = False
    for j in range(L):
        m = -np.inf
        for i in range(L):
            v = np.float64(TRk[i, j]) * inv_tau
            if v > m:
                m = v
        cm[j] = m if m > -np.inf else 0.0
    for i in range(L):
        for j in range(L):
            x = np.float64(TRk[i, j]) * inv_tau - cm[j]
            if x < _UNDERFLOW and x > -np.inf:
                lossy = True
            e = np.exp(x)
            E[i, j] = e
            ET[j, i] = e
    return lossy


@njit(cache=True, nogil=True)
def _combination_slots(L, KT, n_tokens, cache_bytes):
    """How many distinct attribute combinations get a cached transition table: at most one per
    token, and at most `_CACHE_BYTES` of tables (float32 scores, two float64 exponential layouts,
    column shifts, flags and hash entries: ~33 KB per combination at L = 40, so ~8,000 of them
    in `_CACHE_BYTES`). `fb_corpus_budget` numbers the corpus's combinations first and allocates
    tables for those it met only (CoNLL-2000 test with the default chunk template: 873
    combinations, 28 MB); the hash table takes 2·cap entries (~0.3 MB at L = 40)."""
    return max(0, min(n_tokens, cache_bytes // _slot_bytes(L, KT)))


@njit(cache=True, nogil=True)
def _slot_bytes(L, KT):
    """Bytes of one cached combination (see `_combination_slots`)."""
    return (L + 1) * L * 4 + 2 * L * L * 8 + L * 8 + 2 + 2 * (KT * 4 + 8)


@njit(cache=True, nogil=True)
def _slot(XT, row, hkey, hval, used, cap):
    """(slot of token ``row``'s tuple of conditioned attribute ids, slots in use): open addressing
    (linear probing) in ``hkey``/``hval`` (a power of two of at least 2·cap entries); a new tuple
    takes slot ``used`` while ``used < cap``, else the slot is -1 (no room)."""
    KT = XT.shape[1]
    H = hval.shape[0]
    h = np.uint64(0)
    for k in range(KT):
        h = h * np.uint64(0x9E3779B97F4A7C15) + np.uint64(XT[row, k] + 1)
    h ^= h >> np.uint64(29)
    i = np.int64(h & np.uint64(H - 1))
    while hval[i] >= 0:
        same = True
        for k in range(KT):
            if hkey[i, k] != XT[row, k]:
                same = False
                break
        if same:
            return hval[i], used
        i = (i + 1) & (H - 1)
    if used >= cap:
        return -1, used
    for k in range(KT):
        hkey[i, k] = XT[row, k]
    hval[i] = used
    return used, used + 1


@njit(cache=True, nogil=True)
def fb_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, inv_tau, allowed, ids, out, log_z, path_lp):
    """Forward-backward over every sentence of a featurized corpus, p(y) ∝ exp(score(y) · inv_tau).

    Parameters
    ----------
    X, XT, sent_ptr, ptr, lab, W, base, Wc, end
        As for `structperc.decode.tag_kernels.decode_corpus` (token attribute ids, sentence offsets,
        sparse state weights, base transitions with mask and ``<bos>`` row, conditioned transitions,
        end scores).
    inv_tau : float64
        1 / temperature (> 0).
    allowed : bool (n_tokens, L) or (0, L)
        False forbids a label at a token; zero rows: no per-token mask.
    ids : int32 (n_tokens,) or (0,)
        A label path per sentence whose log-probability goes to ``path_lp``; zero length: none.
    out : float64 (n_tokens, L) or (0, L)
        Token marginals (zero rows: not written).
    log_z : float64 (n_sentences,)
        log Z (0 for an empty sentence, -inf when no path is allowed).
    path_lp : float64 (n_sentences,) or (0,)
        log p(ids of the sentence) (0 for an empty sentence, -inf for a forbidden path).
    """
    fb_corpus_budget(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, inv_tau, allowed, ids, out, log_z, path_lp,
                     _CACHE_BYTES)


@njit(cache=True, nogil=True)
def fb_corpus_budget(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, inv_tau, allowed, ids, out, log_z, path_lp,
                     cache_bytes):
    """`fb_corpus` with the bytes the cached transition tables may take as an argument (the tests
    shrink it to exercise the per-position path next to cached tables)."""
    L = base.shape[1]
    dense = is_dense(ptr, lab, L)
    KT = XT.shape[1]
    shared = KT == 0
    masked = allowed.shape[0] > 0
    want_marg = out.shape[0] > 0
    want_path = ids.shape[0] > 0
    n = sent_ptr.shape[0] - 1
    max_len = max(longest(sent_ptr), 1)
    state = np.empty(L, dtype=np.float32)
    every = np.empty(0, dtype=np.int64)  # `state_scores`'s label list, unread: every label
    X64 = np.empty((max_len, L))
    V = np.empty((max_len, L))
    A = np.empty((max_len, L))
    Bt = np.empty((max_len, L))
    tmp = np.empty(L)
    wbuf = np.empty(L)
    # Transitions into position t: table kidx[t] of TR (float32) with its shifted exponentials E3,
    # ET3 (transposed), column shifts CM. Shared: one table. Conditioned (KT >= 1): the table of a
    # token depends only on its tuple of KT attribute ids (its "combination"), so the first `cap`
    # distinct combinations met get a slot each (0..cap-1), built once on first use; a token whose
    # combination found no slot (the cache is full) gets a per-position slot (cap + t), rebuilt per
    # token as before. See `_combination_slots` for the budget.
    kidx = np.zeros(max_len, dtype=np.int64)
    lossy_corpus = False
    cap = 0 if shared else _combination_slots(L, KT, XT.shape[0], cache_bytes)
    H = 1
    while H < 2 * cap:
        H *= 2
    hkey = np.empty((H if cap > 0 else 0, KT), dtype=np.int32)
    hval = np.full(H if cap > 0 else 0, -1, dtype=np.int64)
    used = 0
    if cap > 0:  # number the combinations first, to allocate the tables they need and no more
        for row in range(XT.shape[0]):
            _, used = _slot(XT, row, hkey, hval, used, cap)
    cap = used
    S = 1 if shared else cap + max_len
    if shared:
        TR = base.reshape((1, L + 1, L))
    else:
        TR = np.empty((S, L + 1, L), dtype=np.float32)
    E3 = np.empty((S, L, L))
    ET3 = np.empty((S, L, L))
    CM = np.empty((S, L))
    LOSSY = np.zeros(S, dtype=np.bool_)
    HAVE = np.zeros(S, dtype=np.bool_)
    if shared:
        lossy_corpus = _shifted_exp(base, inv_tau, L, E3[0], ET3[0], CM[0])
    ends = np.empty(L)
    endv = np.empty(L)
    emax = -np.inf
    for j in range(L):
        ends[j] = end[j] * inv_tau
        if ends[j] > emax:
            emax = ends[j]
    for j in range(L):
        x = ends[j] - emax if emax > -np.inf else -np.inf
        endv[j] = np.exp(x)
        if x < _UNDERFLOW and x > -np.inf:
            lossy_corpus = True
    order = np.arange(n)  # the sentences in turn, for the prefetches
    for s in range(n):
        prefetch_ahead(order, s, sent_ptr, X, ptr, lab, W, L, dense)
        a = sent_ptr[s]
        T = sent_ptr[s + 1] - a
        if T == 0:
            log_z[s] = 0.0
            if want_path:
                path_lp[s] = 0.0
            continue
        # --- scores of the sentence (kept for the fallback and the path score)
        lossy = lossy_corpus
        for t in range(T):
            row = a + t
            state_scores(X, row, ptr, lab, W, dense, state, every, L)
            for y in range(L):
                v = np.float64(state[y]) * inv_tau
                if masked and not allowed[row, y]:
                    v = -np.inf
                X64[t, y] = v
            if shared:
                continue
            k = -1
            if cap > 0:
                k, _ = _slot(XT, row, hkey, hval, cap, cap)
            if k >= 0:
                if not HAVE[k]:
                    transition_table(XT, row, Wc, base, TR[k])
                    LOSSY[k] = _shifted_exp(TR[k], inv_tau, L, E3[k], ET3[k], CM[k])
                    HAVE[k] = True
                kidx[t] = k
                if t > 0 and LOSSY[k]:
                    lossy = True
            else:
                k = cap + t
                kidx[t] = k
                transition_table(XT, row, Wc, base, TR[k])
                if t > 0 and _shifted_exp(TR[k], inv_tau, L, E3[k], ET3[k], CM[k]):
                    lossy = True
        # --- scaled forward: α̂_t = α_t / (e^{Σ m} Π c), Σ_j α̂_t(j) = 1
        ok = emax > -np.inf and not lossy
        msum = 0.0
        rest_f = 0.0
        for t in range(T):
            if not ok:
                break
            k = kidx[t]
            m = -np.inf
            if t == 0:
                for y in range(L):
                    u = X64[0, y] + np.float64(TR[k, L, y]) * inv_tau
                    V[0, y] = u
                    if u > m:
                        m = u
            else:
                for y in range(L):
                    u = X64[t, y] + CM[k, y]
                    V[t, y] = u
                    if u > m:
                        m = u
            if m == -np.inf:
                ok = False
                break
            msum += m
            for y in range(L):
                x = V[t, y] - m
                V[t, y] = np.exp(x)
                if x < _UNDERFLOW and x > -np.inf:
                    ok = False
            if not ok:
                break
            if t == 0:
                for y in range(L):
                    A[0, y] = V[0, y]
            else:
                E = E3[k]
                for y in range(L):
                    A[t, y] = 0.0
                for i in range(L):
                    ai = A[t - 1, i]
                    if ai != 0.0:
                        for y in range(L):
                            A[t, y] += ai * E[i, y]
                for y in range(L):
                    A[t, y] *= V[t, y]
            c = 0.0
            for y in range(L):
                c += A[t, y]
            if not c > 0.0:
                ok = False
                break
            rest_f += np.log(c)
            r = 1.0 / c
            for y in range(L):
                A[t, y] *= r
        if ok:
            c = 0.0
            for y in range(L):
                c += A[T - 1, y] * endv[y]
            if c > 0.0:
                rest_f += np.log(c)
            else:
                ok = False
        # --- scaled backward with its own normalizers d_t: a second estimate of log Z
        if ok:
            d = 0.0
            for y in range(L):
                Bt[T - 1, y] = endv[y]
                d += endv[y]
            rest_b = np.log(d)
            r = 1.0 / d
            for y in range(L):
                Bt[T - 1, y] *= r
            for t in range(T - 2, -1, -1):
                k = kidx[t + 1]
                ET = ET3[k]
                for i in range(L):
                    Bt[t, i] = 0.0
                for j in range(L):
                    wj = V[t + 1, j] * Bt[t + 1, j]
                    if wj != 0.0:
                        for i in range(L):
                            Bt[t, i] += ET[j, i] * wj
                d = 0.0
                for i in range(L):
                    d += Bt[t, i]
                if not d > 0.0:
                    ok = False
                    break
                rest_b += np.log(d)
                r = 1.0 / d
                for i in range(L):
                    Bt[t, i] *= r
            if ok:
                d = 0.0
                for y in range(L):
                    d += V[0, y] * Bt[0, y]
                if d > 0.0:
                    rest_b += np.log(d)
                    ok = abs(rest_f - rest_b) <= LOGZ_TOLERANCE * (T + 10)
                else:
                    ok = False
        if ok and want_marg:
            for t in range(T):
                tot = 0.0
                for y in range(L):
                    p = A[t, y] * Bt[t, y]
                    tmp[y] = p
                    tot += p
                if not tot >= _ROW_FLOOR:
                    ok = False
                    break
                r = 1.0 / tot
                for y in range(L):
                    out[a + t, y] = tmp[y] * r
        if ok:
            lz = msum + emax + rest_f
        else:
            lz = _log_space(T, L, X64, TR, kidx, E3, ET3, CM, inv_tau, ends, A, Bt, tmp, wbuf)
            if want_marg:
                for t in range(T):
                    for y in range(L):
                        out[a + t, y] = np.exp(A[t, y] + Bt[t, y] - lz) if lz > -np.inf else 0.0
        log_z[s] = lz
        if want_path:
            prev = L
            sc = 0.0
            for t in range(T):
                y = ids[a + t]
                k = kidx[t]
                sc += X64[t, y] + np.float64(TR[k, prev, y]) * inv_tau
                prev = y
            sc += ends[prev]
            path_lp[s] = sc - lz if sc > -np.inf else -np.inf
