"""The tagging lattice, written once for every tagging-side kernel: a token's float32 state scores from
its attribute ids, its observation-conditioned transition table, and the vectorized Viterbi step.

Why one module: the decoder (`structperc.decode.tag_kernels`), the constrained decoder
(`structperc.decode.constrained_kernels`), the k-best lists (`structperc.decode.nbest_kernels`) and
forward-backward (`structperc.decode.fb_kernels`) must all see the *same* lattice, bit for bit: the
first k-best path is the decoder's path, the constrained decoder with every label allowed is the
decoder, and the marginals are those of the scores the decoder maximizes. Four copies of these loops
could drift apart (a changed summation order changes float32 sums, hence ties and labels); one copy
cannot. Each of those kernels' ahead-of-time groups lists this module in its source digest
(`structperc.compiled.loader.GROUPS`), so an edit here makes every one of their builds stale (the
JIT then runs the current code) rather than leaving a build that disagrees with it.

The arithmetic is exactly that of `structperc.model.weights.Weights.predict`'s numpy path: template
columns summed left to right from zero (-1 ids add nothing), conditioned tables summed from zero before
the base matrix (scheme mask included, row L = ``<bos>``) is added, and each Viterbi step's ties to
the lowest previous label, as numpy's argmax.

The first-order Viterbi step (`viterbi_step`, Viterbi 1967) is also the training epoch's
(`structperc.train.epoch_kernels.viterbi_into`): one recursion, written once. Training sums in float64
(its updates must equal the numpy reference epoch exactly) and tagging in float32 (half the memory
traffic: CoNLL-2000 test's Viterbi took 58 ms in float64 and takes 25 ms, README "How it works"); the
step is specialised by numba per dtype of ``delta`` (`_step16`, `_step8`, `_step4`, `_minus_inf`
resolve to the float64 or float32 intrinsics at compile time), so each side keeps its own arithmetic.
Every label's maximum is one addition per previous label and a strict compare, whatever the vector
width, so the result does not depend on how labels are grouped into vectors.

Every function is ``inline="always"``: numba inlines it into its caller's IR, so the caller compiles to
the loop it had when the code was written out in place. A plain call between ``@njit`` functions is
not inlined, and passes each array with its reference counting: that made the compiled decoder
~20 % slower on CoNLL-2000 with CRFsuite's template (17.5 → 21.2 ms, ahead-of-time builds, min of 21
interleaved runs). Inlined, against the former copies (same machine, interleaved, min of 21-41):
decode 0.96-1.05x, constrained decode 0.76-1.03x, k-best 0.70-0.98x (the copies called their
scoring and step functions), forward-backward 1.03-1.09x (the code it runs per token is the same;
identical builds differ by ±3 % there).

Numba's on-disk JIT cache (``cache=True``) keys a function on its own source file only: after editing
this module, the cached JIT code of its callers (``structperc/decode/__pycache__/*_kernels.*.nbi``,
``.nbc``) still holds the old code until those files are deleted or the callers' sources touched. The
ahead-of-time builds are not affected (their digests cover this module). Callers validate every array
at the Python boundary; nothing here checks bounds.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from structperc.compiled.intrinsics import (
    prefetch,
    viterbi_step4,
    viterbi_step4_f32,
    viterbi_step8,
    viterbi_step8_f32,
    viterbi_step16,
    viterbi_step16_f32,
)


@njit(cache=True, nogil=True, inline="always")
def is_dense(ptr, lab, L):
    """Whether the state weights hold every label of every attribute (``ptr[a] = a·L``): rows are
    then read by offset, without the row offsets."""
    return lab.shape[0] == (ptr.shape[0] - 1) * L


@njit(cache=True, nogil=True, inline="always")
def longest(sent_ptr):
    """Length of the longest sentence (0 when there is none): the kernels size their buffers by it."""
    m = 0
    for s in range(sent_ptr.shape[0] - 1):
        T = sent_ptr[s + 1] - sent_ptr[s]
        if T > m:
            m = T
    return m


@njit(cache=True, nogil=True, inline="always")
def state_scores(X, row, ptr, lab, W, dense, state, labels, m):
    """float32 state scores of token ``row`` into ``state`` (L,): the weight rows of its attribute ids
    ``X[row]`` summed in template order from zero, -1 ids skipped.

    ``ptr, lab, W``: a feature set's state weights (`structperc.model.state_weights.StateWeights`);
    attribute ``a``'s pairs are ``ptr[a]:ptr[a + 1]``, or ``a·L:(a + 1)·L`` when ``dense``. A full row
    (every label) is added contiguously, which vectorizes; a sparse one through its label ids.

    ``labels[:m]``: the labels wanted, ascending; with ``m == L`` (``labels`` unread) every label.
    With fewer, full rows add only to those labels (the constrained decoder scores allowed labels
    only) and sparse rows still add to every label they hold: each wanted label gets exactly the sum
    it gets with ``m == L``, the others hold no meaningful value.
    """
    L = state.shape[0]
    for y in range(L):
        state[y] = np.float32(0.0)
    for k in range(X.shape[1]):
        at = X[row, k]
        if at >= 0:
            if dense:
                lo = np.uint64(at) * np.uint64(L)
                hi = lo + np.uint64(L)
            else:
                lo = np.uint64(ptr[at])
                hi = np.uint64(ptr[at + 1])
            if hi - lo == L:  # a full row: contiguous (unsigned: no negative-index checks)
                if m == L:
                    for y in range(L):
                        state[y] += W[lo + np.uint64(y)]
                else:
                    for j in range(m):
                        y = labels[j]
                        state[y] += W[lo + np.uint64(y)]
            else:
                for j in range(lo, hi):
                    state[lab[j]] += W[j]


# The software pipeline of prefetches (see `structperc.compiled.intrinsics`): while sentence i is scored, the
# row offsets of sentence i + 2's attributes and the weights of sentence i + 1's are on their way. Training
# (`structperc.train.epoch_kernels`, `order2_kernels`) runs it over its shuffled order, the decoder
# (`structperc.decode.tag_kernels`) over the sentences in turn. Prefetches never change a result. Plain calls,
# not inlined: one per sentence.


@njit(cache=True, nogil=True)
def prefetch_offsets(X, a, b, ptr):
    """First stage of the prefetch pipeline: the row offsets of the attributes of tokens ``a:b``."""
    for i in range(a, b):
        for k in range(X.shape[1]):
            at = X[i, k]
            if at >= 0:
                prefetch(ptr, at)


@njit(cache=True, nogil=True)
def prefetch_weights(X, a, b, ptr, lab, W, L):
    """Second stage: the weights (and, for short rows, the labels) of the attributes of tokens
    ``a:b``, whose offsets the first stage fetched a sentence earlier."""
    dense = lab.shape[0] == (ptr.shape[0] - 1) * L
    for i in range(a, b):
        for k in range(X.shape[1]):
            at = X[i, k]
            if at >= 0:
                if dense:
                    lo = at * L
                    hi = lo + L
                else:
                    lo = ptr[at]
                    hi = ptr[at + 1]
                if hi > lo:
                    prefetch(W, lo)
                    prefetch(W, hi - 1)
                    if hi - lo != L:
                        prefetch(lab, lo)


@njit(cache=True, nogil=True)
def prefetch_ahead(order, i, sent_ptr, X, ptr, lab, W, L, dense):
    """The prefetches at step ``i`` of a pass over the sentences ``order``: the row offsets of sentence i + 2
    and the weights of sentence i + 1 are on their way while sentence i is decoded (at i = 0, first the
    offsets of sentences 0 and 1). Rows of the ``dense`` feature set have computed offsets: nothing to
    fetch for them."""
    n = order.shape[0]
    if not dense:
        if i == 0:
            for j in range(min(n, 2)):
                prefetch_offsets(X, sent_ptr[order[j]], sent_ptr[order[j] + 1], ptr)
        if i + 2 < n:
            prefetch_offsets(X, sent_ptr[order[i + 2]], sent_ptr[order[i + 2] + 1], ptr)
    if i + 1 < n:
        prefetch_weights(X, sent_ptr[order[i + 1]], sent_ptr[order[i + 1] + 1], ptr, lab, W, L)


@njit(cache=True, nogil=True, inline="always")
def transition_table(XT, row, Wc, base, tr):
    """float32 transitions into token ``row`` into ``tr`` (L + 1, L): the conditioned tables
    ``Wc[a]`` of its attribute ids ``XT[row]`` summed in template order from zero (-1 ids skipped),
    then the base matrix ``base`` (L + 1, L) added (row L: from ``<bos>``)."""
    P = tr.shape[0]
    L = tr.shape[1]
    for p in range(P):
        for y in range(L):
            tr[p, y] = np.float32(0.0)
    for k in range(XT.shape[1]):
        at = XT[row, k]
        if at >= 0:
            for p in range(P):
                for y in range(L):
                    tr[p, y] += Wc[at, p, y]
    for p in range(P):
        for y in range(L):
            tr[p, y] += base[p, y]


def _step16(delta, back, tr, t, ti, y):
    """Vectorized step of labels y..y+15 (`structperc.compiled.intrinsics`); compiled code only."""
    raise NotImplementedError


def _step8(delta, back, tr, t, ti, y):
    """Vectorized step of labels y..y+7; compiled code only."""
    raise NotImplementedError


def _step4(delta, back, tr, t, ti, y):
    """Vectorized step of labels y..y+3; compiled code only."""
    raise NotImplementedError


def _minus_inf(delta):
    """-inf in ``delta``'s float type (the scalar step's starting maximum); compiled code only."""
    raise NotImplementedError


def _by_dtype(stub, f64, f32):
    """Resolve ``stub`` at compile time to ``f64`` or ``f32`` by the dtype of its first argument:
    training's float64 lattice and tagging's float32 one each get their own intrinsics."""

    @overload(stub, inline="always")
    def _impl(delta, back, tr, t, ti, y):
        if isinstance(delta, types.Array) and delta.dtype == types.float64:
            return lambda delta, back, tr, t, ti, y: f64(delta, back, tr, t, ti, y)
        if isinstance(delta, types.Array) and delta.dtype == types.float32:
            return lambda delta, back, tr, t, ti, y: f32(delta, back, tr, t, ti, y)
        return None


_by_dtype(_step16, viterbi_step16, viterbi_step16_f32)
_by_dtype(_step8, viterbi_step8, viterbi_step8_f32)
_by_dtype(_step4, viterbi_step4, viterbi_step4_f32)


@overload(_minus_inf, inline="always")
def _minus_inf_impl(delta):
    if isinstance(delta, types.Array) and delta.dtype == types.float64:
        return lambda delta: np.float64(-np.inf)
    if isinstance(delta, types.Array) and delta.dtype == types.float32:
        return lambda delta: np.float32(-np.inf)
    return None


@njit(cache=True, nogil=True, inline="always")
def viterbi_step(delta, back, tr, t, ti, L):
    """``delta[t]`` (before the state scores) and ``back[t]`` from ``delta[t − 1]`` and the table
    ``tr[ti]`` (a stack of (L + 1, L) tables, or one): max over the previous label p of
    ``delta[t − 1, p] + tr[ti, p, y]``, ties to the lowest p (as numpy's argmax): the recursion of
    Viterbi (1967), for tagging and for training (Collins 2002) alike.

    ``delta`` and ``tr`` are float32 (tagging) or float64 (training); numba compiles one version per
    dtype, each with its own vector intrinsics and arithmetic. Vectors of 16 and 8 labels
    (`structperc.compiled.intrinsics`), then the smallest vector (8 or 4) ending at L for the
    remainder (overlapping labels are recomputed to the same values); below 8 labels, vectors of 4,
    then scalar.
    """
    if L >= 8:
        y = 0
        while y + 16 <= L:
            _step16(delta, back, tr, t, ti, y)
            y += 16
        if L - y > 8:  # 9..15 labels left: a vector of 8, then the rest as below
            _step8(delta, back, tr, t, ti, y)
            y += 8
        if L - y > 4:  # 5..8 left: a vector of 8 ending at L
            _step8(delta, back, tr, t, ti, L - 8)
        elif y < L:  # 1..4 left: a vector of 4 ending at L
            _step4(delta, back, tr, t, ti, L - 4)
        return
    if L >= 4:  # 4..7 labels: one or two vectors of 4
        _step4(delta, back, tr, t, ti, 0)
        if L > 4:
            _step4(delta, back, tr, t, ti, L - 4)
        return
    for yy in range(L):  # L < 4
        best = _minus_inf(delta)
        arg = 0
        for p in range(L):  # strict > keeps the lowest p on ties
            v = delta[t - 1, p] + tr[ti, p, yy]
            if v > best:
                best = v
                arg = p
        delta[t, yy] = best
        back[t, yy] = arg


@njit(cache=True, nogil=True, inline="always")
def best_last(delta, T, end):
    """(score, label) of the best end of a sentence of T tokens: max over y of
    ``float64(delta[T − 1, y]) + end[y]``, ties to the lowest y (label 0 when every score is -inf)."""
    best = np.float64(delta[T - 1, 0]) + end[0]
    arg = 0
    for y in range(1, end.shape[0]):
        v = np.float64(delta[T - 1, y]) + end[y]
        if v > best:
            best = v
            arg = y
    return best, arg


@njit(cache=True, nogil=True, inline="always")
def backtrack(back, last, T, out, a):
    """The best path ending in label ``last`` at position T − 1, from the back pointers
    ``back[t, y]`` (the best previous label), into ``out[a:a + T]``."""
    arg = last
    out[a + T - 1] = arg
    for t in range(T - 1, 0, -1):
        arg = back[t, arg]
        out[a + t - 1] = arg
