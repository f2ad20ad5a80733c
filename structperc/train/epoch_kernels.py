"""Compiled inner loops of training: scoring, Viterbi and the perceptron update on integer arrays.

Everything here takes numpy arrays of fixed dtypes (int32 ids, int64 offsets, float32 weights, float64
averaging sums) so numba compiles each function once and caches it on disk. State weights are those
of a feature set of (attribute, label) pairs, row-compressed (see `structperc.model.state_weights`): the
pairs of attribute ``a`` are ``ptr[a]:ptr[a + 1]`` with labels ``lab`` and weights ``W``; ``act`` marks
which slots of padded rows belong to the set (empty: all of them, the ``"all"`` feature set).

Attribute values (python-crfsuite's ``{"k": 2.5}``): ``V`` (float32, one value per state id of ``X``)
makes a token's state score Σ_k V[i, k]·W[X[i, k], y] and an update add ±V[i, k] (averaging sums
±c·V[i, k]). Without values, every kernel receives a 1-d placeholder instead, and `state_value` is
resolved *by that type* at compile time to the constant 1.0: the multiplications fold away
(x·1.0 = x exactly, so LLVM removes them), and the all-ones epoch is the code it was before values
existed, with the same results bit for bit.

The structured margin perceptron and passive-aggressive steps (`train_epoch_margin`) are a variant
of the same kind: ``H`` is a hyperparameter vector there and None in the default epochs, and
`margin_on` answers by that type at compile time, so the default epochs carry none of the variant's
code (checked on the machine code of `train_epoch`: the same instructions as before the variant
existed, but for one store of the None placeholder and the order of two status compares).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import overload

from structperc.decode.score_kernels import prefetch_ahead, viterbi_step

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`): C-contiguous
#: arrays of exactly these dtypes, which `structperc.train.perceptron` guarantees.
AOT_EXPORTS = {
    "train_epoch": "UniTuple(i8, 3)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], "
                   "i2[::1], u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], f8[:, :, ::1], "
                   "f8[:, ::1], f8[::1], i8, i8)",
    "train_epoch_partial": "UniTuple(i8, 4)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], "
                           "i2[::1], u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], "
                           "f8[:, :, ::1], f8[:, ::1], f8[::1], i8, i8, u1[:, ::1], u1[::1])",
    "train_epoch_valued": "UniTuple(i8, 4)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], "
                          "i2[::1], u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], "
                          "f8[:, :, ::1], f8[:, ::1], f8[::1], i8, i8, u1[:, ::1], u1[::1], f4[:, ::1])",
    "train_epoch_margin": "UniTuple(i8, 4)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], "
                          "i2[::1], u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], "
                          "f8[:, :, ::1], f8[:, ::1], f8[::1], i8, i8, u1[:, ::1], u1[::1], f8[::1])",
    "train_epoch_margin_valued": "UniTuple(i8, 4)(i8[::1], i8[::1], i4[:, ::1], i4[:, ::1], i4[::1], i8[::1], "
                                 "i2[::1], u1[::1], f4[::1], f8[::1], f4[:, ::1], f8[:, ::1], f4[:, :, ::1], "
                                 "f8[:, :, ::1], f8[:, ::1], f8[::1], i8, i8, u1[:, ::1], u1[::1], f4[:, ::1], "
                                 "f8[::1])",
    # iterative parameter mixing (`structperc.train.mixing.mix`): a block of one array at a time
    "mix_accumulate_f4": "void(f8[::1], u1[::1], f8, f4[::1], f4[::1], u4[::1], u4[::1])",
    "mix_accumulate_f8": "void(f8[::1], u1[::1], f8, f8[::1], f8[::1], u8[::1], u8[::1])",
    "mix_finish_f4": "void(f8[::1], f8, f4[::1], f8[::1])",
    "mix_finish_f8": "void(f8[::1], f8, f8[::1], f8[::1])",
    "mix_write_f4": "void(f4[::1], f8[::1], u1[::1], i8)",
    "mix_write_f8": "void(f8[::1], f8[::1], u1[::1], i8)",
}

#: Layout of the margin epoch's hyperparameter vector ``H`` (float64): the margin ρ, the step rule
#: (`STEP_PERCEPTRON` or `STEP_PA`) and PA-I's aggressiveness C.
H_MARGIN, H_STEP, H_C = 0, 1, 2
STEP_PERCEPTRON, STEP_PA = 0.0, 1.0


def state_value(V, i, k):
    """The value of state attribute ``k`` of token ``i``: ``V[i, k]`` (float64) for a 2-d ``V``; for
    the 1-d placeholder of data without values, the constant 1.0. In compiled code the choice is
    made by ``V``'s type (see `_state_value`), not at run time."""
    return 1.0 if V.ndim == 1 else float(V[i, k])


@overload(state_value, inline="always")
def _state_value(V, i, k):
    """`state_value` for numba, specialized on the type of ``V``: a 1-d array (no values) gives the
    literal 1.0, which constant-folds through the scores and updates it multiplies."""
    if isinstance(V, types.Array) and V.ndim == 1:
        return lambda V, i, k: 1.0
    if isinstance(V, types.Array) and V.ndim == 2:
        return lambda V, i, k: np.float64(V[i, k])
    return None


def margin_on(H):
    """Whether the epoch is the margin/passive-aggressive variant: ``H`` a hyperparameter vector (see
    `H_MARGIN`) rather than None. Compiled, the answer is a constant of ``H``'s type (see
    `_margin_on`): the default epochs (``H`` None) carry none of the variant's code, whose branches
    LLVM removes."""
    return H is not None


@overload(margin_on, inline="always")
def _margin_on(H):
    if isinstance(H, types.NoneType):
        return lambda H: False
    if isinstance(H, types.Array):
        return lambda H: True
    return None


def hyper(H, k):
    """Hyperparameter ``k`` of ``H`` (0.0 for None: never read there, but it must type)."""
    return 0.0 if H is None else float(H[k])


@overload(hyper, inline="always")
def _hyper(H, k):
    if isinstance(H, types.NoneType):
        return lambda H, k: 0.0
    if isinstance(H, types.Array):
        return lambda H, k: np.float64(H[k])
    return None


@njit(cache=True, nogil=True)
def viterbi(state, trans, end, path):
    """Best label path of one sentence.

    Parameters
    ----------
    state : array of float64, shape (T, L)
        ``state[t, y]``: score of label y at position t.
    trans : array of float64, shape (T, L + 1, L) or (1, L + 1, L)
        ``trans[t, p, y]``: score of moving from label p to y into position t; row L is ``<bos>``
        (only ``trans[0, L]`` is read at t = 0, only rows < L after). With one slice it is shared
        by every position.
    end : array of float64, shape (L,)
        Score of ending in each label (0, or -inf where a scheme forbids it).
    path : array of int32, shape (T,)
        Filled with the best path; ties go to the lowest label id.

    Returns
    -------
    float
        The path's score.
    """
    T, L = state.shape
    return viterbi_into(state, np.ascontiguousarray(trans), trans.shape[0] == T, end, path, T,
                        np.empty((T, L)), np.empty((T, L), dtype=np.int32))


@njit(cache=True, nogil=True)
def viterbi_into(state, trans, per_token, end, path, T, delta, back):
    """`viterbi` of the first ``T`` rows of ``state`` (and of ``trans`` when ``per_token``, else
    ``trans[0]`` serves every position), with work arrays the caller owns (``delta`` float64 and
    ``back`` int32, C-contiguous, ``L`` columns, at least ``T`` rows): training reuses them for
    every sentence.

    The step from position t − 1 to t is tagging's (`structperc.decode.score_kernels.viterbi_step`,
    Viterbi 1967), compiled here for float64: one recursion for training and decoding. Its vectors
    of 16, 8 and 4 labels compute, per label, the sums and the tie-breaking (lowest previous label)
    of the scalar loop, so the result does not depend on L or on how labels are grouped.
    """
    L = state.shape[1]
    for y in range(L):
        delta[0, y] = state[0, y] + trans[0, L, y]
    for t in range(1, T):
        viterbi_step(delta, back, trans, t, t if per_token else 0, L)
        for y in range(L):
            delta[t, y] += state[t, y]
    best = -np.inf
    arg = 0
    for y in range(L):
        s = delta[T - 1, y] + end[y]
        if s > best:
            best = s
            arg = y
    path[T - 1] = arg
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return best


@njit(cache=True, nogil=True)
def constrained_viterbi(state, trans, end, allowed, path):
    """`viterbi` over the paths that agree with ``allowed`` (uint8 (T, L): the labels each position
    may take): ŷ_c of the latent perceptron. Returns -inf (and an arbitrary ``path``) when no
    allowed path gets through the transitions."""
    T, L = state.shape
    return constrained_viterbi_into(state, np.ascontiguousarray(trans), trans.shape[0] == T, end,
                                    allowed, 0, path, T, np.empty((T, L)),
                                    np.empty((T, L), dtype=np.int32), np.empty((T, L)))


@njit(cache=True, nogil=True)
def constrained_viterbi_into(state, trans, per_token, end, allowed, a, path, T, delta, back, cstate):
    """`viterbi_into` with the labels token t may not take (``allowed[a + t]`` zero) scored -inf:
    the same lattice, transitions and scheme mask included, restricted to the agreeing paths.
    ``cstate`` is a work array like ``delta``."""
    L = state.shape[1]
    for t in range(T):
        for y in range(L):
            cstate[t, y] = state[t, y] if allowed[a + t, y] else -np.inf
    return viterbi_into(cstate, trans, per_token, end, path, T, delta, back)


@njit(cache=True, nogil=True)
def sentence_scores(X, XT, a, b, ptr, lab, W, Wt, Wc, mask, state, trans, V):
    """Fill ``state[:T]`` and ``trans[:T]`` for tokens ``a:b`` (T = b - a) from current weights,
    state weights times their attribute's value (``V``, or 1 for the 1-d placeholder).

    Without observation-conditioned templates only ``trans[0]`` is filled: it serves every position.
    """
    L = Wt.shape[1]
    dense = lab.shape[0] == (ptr.shape[0] - 1) * L  # every row holds every label: ptr[a] = a·L
    for t in range(b - a):
        for y in range(L):
            state[t, y] = 0.0
        for k in range(X.shape[1]):
            at = X[a + t, k]
            if at >= 0:
                v = state_value(V, a + t, k)
                if dense:
                    lo = np.uint64(at) * np.uint64(L)
                    hi = lo + np.uint64(L)
                else:
                    lo = np.uint64(ptr[at])
                    hi = np.uint64(ptr[at + 1])
                if hi - lo == np.uint64(L):  # a full row: contiguous (unsigned: no index checks)
                    for y in range(L):
                        state[t, y] += v * W[lo + np.uint64(y)]
                else:
                    for j in range(lo, hi):
                        state[t, lab[j]] += v * W[j]
        if t > 0 and XT.shape[1] == 0:
            continue  # unconditioned: trans[0] serves every position
        for p in range(L + 1):
            for y in range(L):
                trans[t, p, y] = Wt[p, y] + mask[p, y]
        for k in range(XT.shape[1]):
            at = XT[a + t, k]
            if at >= 0:
                for p in range(L + 1):
                    for y in range(L):
                        trans[t, p, y] += Wc[at, p, y]


@njit(cache=True, nogil=True)
def find_pair(ptr, lab, act, full, at, g, L):
    """Index of the pair (attribute ``at``, label ``g``), or -1 when the feature set lacks it.

    A row holding every label is either a row of the ``"all"`` feature set (``full``) or a padded
    row, whose slots outside the set are marked inactive in ``act`` (see
    `structperc.model.state_weights.observed_pairs`).
    """
    if full:  # the "all" set: row ``at`` starts at at·L (no read of ``ptr``: a cache miss less)
        return at * L + g
    lo = ptr[at]
    hi = ptr[at + 1]
    if hi - lo == L:
        j = lo + g
        return j if act[j] else -1
    for j in range(lo, hi):  # labels ascend; short rows hold a few labels
        if lab[j] >= g:
            return j if lab[j] == g else -1
    return -1


@njit(cache=True, nogil=True)
def _add(X, XT, row, g_prev, g, delta, c, ptr, lab, act, full, W, U, Wt, Ut, Wc, Uc, state_too, V):
    """Add ``delta`` times the features of (row, g_prev → g) to the weights, ``c·delta`` to the sums
    (a state feature counts its attribute's value); a state pair outside the feature set is skipped
    (as CRFsuite does)."""
    L = Wt.shape[1]
    if state_too:
        for k in range(X.shape[1]):
            at = X[row, k]
            if at >= 0:
                j = find_pair(ptr, lab, act, full, at, g, L)
                if j >= 0:
                    dv = delta * state_value(V, row, k)
                    W[j] += dv
                    U[j] += c * dv
    Wt[g_prev, g] += delta
    Ut[g_prev, g] += c * delta
    for k in range(XT.shape[1]):
        at = XT[row, k]
        if at >= 0:
            Wc[at, g_prev, g] += delta
            Uc[at, g_prev, g] += c * delta


@njit(cache=True, nogil=True)
def add_cost(state, gold, T, rho):
    """Cost-augmented scores: ``rho`` added to every label but the gold one at each of the first
    ``T`` positions, so that Viterbi finds argmax s(y') + ρ·Hamming(y, y') (Taskar et al. 2003's
    loss-augmented inference; the Hamming loss decomposes over positions)."""
    L = state.shape[1]
    for t in range(T):
        g = gold[t]
        for y in range(L):
            if y != g:
                state[t, y] += rho


@njit(cache=True, nogil=True)
def path_difference(state, trans, per_token, end, gold, path, T):
    """``s(path) − s(gold)`` on the lattice ``state``/``trans``/``end`` (summed over the positions
    where the paths differ, t ascending: the rest cancels) and their Hamming distance."""
    L = state.shape[1]
    d = 0.0
    h = 0
    for t in range(T):
        g = gold[t]
        p = path[t]
        g_prev = L if t == 0 else gold[t - 1]
        p_prev = L if t == 0 else path[t - 1]
        ti = t if per_token else 0
        if g != p:
            h += 1
            d += state[t, p] - state[t, g]
        if g != p or g_prev != p_prev:
            d += trans[ti, p_prev, p] - trans[ti, g_prev, g]
    d += end[path[T - 1]] - end[gold[T - 1]]
    return d, h


@njit(cache=True, nogil=True)
def delta_norm2(X, XT, a, gold, path, T, ptr, lab, act, full, L, V):
    """‖φ(x, gold) − φ(x, path)‖², exactly: the signed occurrences of every feature the update
    touches (state pairs of the feature set with their values, transitions, conditioned transitions)
    are summed per feature (a stable sort by feature, so the order of each sum is the order of
    occurrence), then squared and added. Occurrences of one feature at several positions add up or
    cancel, as in CRFsuite's ``delta_finalize``."""
    KX = X.shape[1]
    KT = XT.shape[1]
    nnz = lab.shape[0]
    base_t = nnz
    base_c = nnz + (L + 1) * L
    keys = np.empty(2 * T * (KX + 1 + KT), dtype=np.int64)
    vals = np.empty(2 * T * (KX + 1 + KT))
    n = 0
    for t in range(T):
        g = gold[t]
        p = path[t]
        g_prev = L if t == 0 else gold[t - 1]
        p_prev = L if t == 0 else path[t - 1]
        row = a + t
        if g != p:
            for k in range(KX):
                at = X[row, k]
                if at >= 0:
                    v = state_value(V, row, k)
                    j = find_pair(ptr, lab, act, full, at, g, L)
                    if j >= 0:
                        keys[n] = j
                        vals[n] = v
                        n += 1
                    j = find_pair(ptr, lab, act, full, at, p, L)
                    if j >= 0:
                        keys[n] = j
                        vals[n] = -v
                        n += 1
        if g != p or g_prev != p_prev:
            keys[n] = base_t + g_prev * L + g
            vals[n] = 1.0
            keys[n + 1] = base_t + p_prev * L + p
            vals[n + 1] = -1.0
            n += 2
            for k in range(KT):
                at = XT[row, k]
                if at >= 0:
                    keys[n] = base_c + (np.int64(at) * (L + 1) + g_prev) * L + g
                    vals[n] = 1.0
                    keys[n + 1] = base_c + (np.int64(at) * (L + 1) + p_prev) * L + p
                    vals[n + 1] = -1.0
                    n += 2
    order = np.argsort(keys[:n], kind="mergesort")
    total = 0.0
    i = 0
    while i < n:
        key = keys[order[i]]
        acc = 0.0
        while i < n and keys[order[i]] == key:
            acc += vals[order[i]]
            i += 1
        total += acc * acc
    return total


@njit(cache=True, nogil=True)
def pa_step(state, trans, per_token, end, gold, path, T, rho, C, X, XT, a, ptr, lab, act, full, V):
    """PA-I's step (Crammer et al. 2006): τ = min(C, ℓ / ‖Δφ‖²), on the lattice Viterbi saw.

    The loss ℓ = s(ŷ) − s(y) + cost(y, ŷ): with a margin ρ > 0 the cost is ρ·Hamming, and ŷ is the
    cost-augmented best path, so ℓ is the structured hinge loss (margin rescaling) and the step is
    the max-loss update (1-best MIRA); with ρ = 0 the cost is √Hamming and ŷ the plain best path:
    CRFsuite's ``pa`` (``type=1``, ``error_sensitive=1``) exactly. A loss that is not finite (a gold
    path through a forbidden transition) takes the step C."""
    L = state.shape[1]
    d, h = path_difference(state, trans, per_token, end, gold, path, T)
    loss = d if rho != 0.0 else d + np.sqrt(np.float64(h))
    if not loss < np.inf:  # +inf, or NaN
        return C
    if loss <= 0.0:
        return 0.0
    norm2 = delta_norm2(X, XT, a, gold, path, T, ptr, lab, act, full, L, V)
    if norm2 <= 0.0:
        return C
    tau = loss / norm2
    return C if tau > C else tau


@njit(cache=True, nogil=True)
def train_epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, max_len):
    """One pass of the averaged structured perceptron (Collins 2002) over ``order``.

    On a wrong Viterbi path, w += φ(x, y) − φ(x, ŷ): only positions where the gold and predicted
    labels (or label pairs) differ contribute, the rest cancels. Averaging uses the running-sum
    trick: ``U`` accumulates ``c·Δ`` where ``c`` counts the instances seen before this one, so the
    average of the weights after every instance is ``W − U / c_final``.

    Returns
    -------
    (int, int, int)
        Sentences with a mistake, tokens mislabelled, and the updated instance counter c.
    """
    m, e, c, _ = _epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c,
                        max_len, np.zeros((0, 1), dtype=np.uint8), np.zeros(0, dtype=np.uint8),
                        np.zeros(0, dtype=np.float32), None)
    return m, e, c


@njit(cache=True, nogil=True)
def train_epoch_partial(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c,
                        max_len, allowed, partial):
    """`train_epoch` on data with unknown tags: the latent structured perceptron.

    A sentence with ``partial[s]`` set has no single gold path: its "gold" is ŷ_c, the best path
    under the current weights (the same lattice, scheme mask included) among those that agree with
    ``allowed`` (uint8 (n_tokens, L): the labels each token may take; every label for an unknown
    tag), and the update is φ(x, ŷ_c) − φ(x, ŷ) when the unconstrained best path ŷ differs, with
    averaging as for full labels. A sentence no allowed path gets through (tags the scheme cannot
    join) counts as an instance with no update. Other sentences train as in `train_epoch`, exactly.

    Returns
    -------
    (int, int, int, int)
        As `train_epoch`, plus the number of sentences skipped for want of an allowed path.

    References
    ----------
    X. Sun, T. Matsuzaki, D. Okanohara and J. Tsujii. Latent variable perceptron algorithm for
    structured classification. IJCAI 2009.
    E. R. Fernandes and U. Brefeld. Learning from partially annotated sequences. ECML PKDD 2011.
    """
    return _epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, max_len,
                  allowed, partial, np.zeros(0, dtype=np.float32), None)


@njit(cache=True, nogil=True)
def train_epoch_valued(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c,
                       max_len, allowed, partial, V):
    """`train_epoch_partial` with attribute values ``V`` (float32, the shape of ``X``): a token's
    state score is Σ_k V[i, k]·W[X[i, k], y], and an update adds ±V[i, k] to the pair (X[i, k], y)
    (its averaging sum ±c·V[i, k]): the perceptron on the real-valued feature vector φ(x, y) whose
    (attribute, label) components are the values (python-crfsuite's ``{"k": 2.5}``, CRFsuite's
    ``crfsuite_attribute.value``). An empty ``partial`` trains every sentence on its gold labels;
    with all values 1.0 the weights are exactly `train_epoch`'s (x·1.0 = x).

    Returns
    -------
    (int, int, int, int)
        As `train_epoch_partial`.
    """
    return _epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, max_len,
                  allowed, partial, V, None)


@njit(cache=True, nogil=True)
def train_epoch_margin(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c,
                       max_len, allowed, partial, H):
    """`train_epoch_partial` as the structured margin perceptron and/or with passive-aggressive steps.

    ``H`` (float64: ``H[H_MARGIN]`` = ρ, ``H[H_STEP]`` = `STEP_PERCEPTRON` or `STEP_PA`,
    ``H[H_C]`` = C). Training decodes the cost-augmented best path ŷ = argmax s(y') + ρ·Hamming(y, y')
    (ρ added to every non-gold label's score at every position) and updates whenever ŷ ≠ y, i.e.
    whenever the gold path does not beat every other path y' by ρ·Hamming(y, y') (strictly: ties go
    to the lowest label ids, as in `viterbi`). The update is τ·(φ(x, y) − φ(x, ŷ)), its averaging sums
    c·τ·Δ, with τ = 1 (the perceptron) or PA-I's τ = min(C, ℓ / ‖Δφ‖²) (see `pa_step` for ℓ). With
    ρ = 0 and τ = 1 it is `train_epoch_partial`, bit for bit. For a partially labelled sentence the
    cost is measured against ŷ_c (the best path agreeing with its known tags, found on the scores
    before the cost is added). An empty ``partial`` trains every sentence on its gold labels.

    Returns
    -------
    (int, int, int, int)
        As `train_epoch_partial`: a mistake is an update, ŷ ≠ y for the cost-augmented ŷ (with PA
        steps, and a positive loss: a PA step of 0 is passive), its token errors the Hamming
        distance.

    References
    ----------
    B. Taskar, C. Guestrin and D. Koller. Max-margin Markov networks. NIPS 2003.
    M. Collins and B. Roark. Incremental parsing with the perceptron algorithm. ACL 2004.
    R. McDonald, K. Crammer and F. Pereira. Online large-margin training of dependency parsers. ACL 2005.
    K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer. Online passive-aggressive
    algorithms. JMLR 7:551-585, 2006.
    """
    return _epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, max_len,
                  allowed, partial, np.zeros(0, dtype=np.float32), H)


@njit(cache=True, nogil=True)
def train_epoch_margin_valued(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c,
                              max_len, allowed, partial, V, H):
    """`train_epoch_margin` with attribute values ``V`` (as `train_epoch_valued`; ‖Δφ‖² counts each
    state occurrence with its value)."""
    return _epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, max_len,
                  allowed, partial, V, H)


@njit(cache=True, nogil=True)
def _epoch(order, sent_ptr, X, XT, y, ptr, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, max_len,
           allowed, partial, V, H):
    """The epoch of `train_epoch`, `train_epoch_partial` (empty ``partial``: every tag known),
    `train_epoch_valued` (``V`` 2-d; the 1-d placeholder compiles to the all-ones epoch, see
    `state_value`) and the margin variants (``H`` an array; None compiles to the epoch without the
    variant's code, see `margin_on`)."""
    L = Wt.shape[1]
    full = act.shape[0] == 0  # no activity marks: the "all" feature set
    state = np.empty((max_len, L))
    trans = np.empty((max_len, L + 1, L))
    path = np.empty(max_len, dtype=np.int32)
    gold = np.empty(max_len, dtype=np.int32)
    delta = np.empty((max_len, L))
    back = np.empty((max_len, L), dtype=np.int32)
    any_partial = partial.shape[0] > 0
    cstate = np.empty((max_len if any_partial else 0, L))
    per_token = XT.shape[1] > 0
    mistakes = 0
    token_errors = 0
    skipped = 0
    dense = lab.shape[0] == (ptr.shape[0] - 1) * L  # row offsets are computed, not read
    for i in range(order.shape[0]):
        prefetch_ahead(order, i, sent_ptr, X, ptr, lab, W, L, dense)
        s = order[i]
        a = sent_ptr[s]
        b = sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        sentence_scores(X, XT, a, b, ptr, lab, W, Wt, Wc, mask, state, trans, V)
        if margin_on(H):  # the gold path first: the cost is measured against it
            if any_partial and partial[s]:
                if constrained_viterbi_into(state, trans, per_token, end, allowed, a, gold, T, delta, back,
                                            cstate) == -np.inf:
                    skipped += 1
                    c += 1
                    continue
            else:
                for t in range(T):
                    gold[t] = y[a + t]
            if hyper(H, H_MARGIN) != 0.0:
                add_cost(state, gold, T, hyper(H, H_MARGIN))
            viterbi_into(state, trans, per_token, end, path, T, delta, back)
        else:
            viterbi_into(state, trans, per_token, end, path, T, delta, back)
            if any_partial and partial[s]:
                if constrained_viterbi_into(state, trans, per_token, end, allowed, a, gold, T, delta, back,
                                            cstate) == -np.inf:
                    skipped += 1
                    c += 1
                    continue
            else:
                for t in range(T):
                    gold[t] = y[a + t]
        wrong = False
        for t in range(T):
            if path[t] != gold[t]:
                wrong = True
                break
        step = 1.0
        if wrong and margin_on(H) and hyper(H, H_STEP) == STEP_PA:
            step = pa_step(state, trans, per_token, end, gold, path, T, hyper(H, H_MARGIN), hyper(H, H_C),
                           X, XT, a, ptr, lab, act, full, V)
            wrong = step > 0.0  # no loss (a tie with the margin met exactly): passive, not a mistake
        if wrong:
            mistakes += 1
            cf = float(c)
            for t in range(T):
                g = gold[t]
                p = path[t]
                g_prev = L if t == 0 else gold[t - 1]
                p_prev = L if t == 0 else path[t - 1]
                if g != p:
                    token_errors += 1
                if g != p or g_prev != p_prev:
                    _add(X, XT, a + t, g_prev, g, step, cf, ptr, lab, act, full, W, U, Wt, Ut, Wc, Uc,
                         g != p, V)
                    _add(X, XT, a + t, p_prev, p, -step, cf, ptr, lab, act, full, W, U, Wt, Ut, Wc, Uc,
                         g != p, V)
        c += 1
    return mistakes, token_errors, c, skipped


def warm_up() -> None:
    """Compile (or load from the on-disk cache) every kernel on a one-token problem, so the first
    timed epoch measures training, not numba start-up."""
    i32, i64 = np.int32, np.int64
    X = np.zeros((1, 1), i32)
    XT = np.zeros((1, 1), i32)
    train_epoch(np.zeros(1, i64), np.array([0, 1], i64), X, XT, np.zeros(1, i32),
                np.array([0, 1], i64), np.zeros(1, np.int16), np.zeros(0, np.uint8),
                np.zeros(1, np.float32), np.zeros(1), np.zeros((2, 1), np.float32),
                np.zeros((2, 1)), np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1)),
                np.zeros((2, 1)), np.zeros(1), 0, 1)
    train_epoch_partial(np.zeros(1, i64), np.array([0, 1], i64), X, XT, np.zeros(1, i32),
                        np.array([0, 1], i64), np.zeros(1, np.int16), np.zeros(0, np.uint8),
                        np.zeros(1, np.float32), np.zeros(1), np.zeros((2, 1), np.float32),
                        np.zeros((2, 1)), np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1)),
                        np.zeros((2, 1)), np.zeros(1), 0, 1, np.ones((1, 1), np.uint8),
                        np.ones(1, np.uint8))
    train_epoch_valued(np.zeros(1, i64), np.array([0, 1], i64), X, XT, np.zeros(1, i32),
                       np.array([0, 1], i64), np.zeros(1, np.int16), np.zeros(0, np.uint8),
                       np.zeros(1, np.float32), np.zeros(1), np.zeros((2, 1), np.float32),
                       np.zeros((2, 1)), np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1)),
                       np.zeros((2, 1)), np.zeros(1), 0, 1, np.zeros((0, 1), np.uint8),
                       np.zeros(0, np.uint8), np.ones((1, 1), np.float32))
    hp = np.array([1.0, STEP_PA, 1.0])
    train_epoch_margin(np.zeros(1, i64), np.array([0, 1], i64), X, XT, np.zeros(1, i32),
                       np.array([0, 1], i64), np.zeros(1, np.int16), np.zeros(0, np.uint8),
                       np.zeros(1, np.float32), np.zeros(1), np.zeros((2, 1), np.float32),
                       np.zeros((2, 1)), np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1)),
                       np.zeros((2, 1)), np.zeros(1), 0, 1, np.zeros((0, 1), np.uint8),
                       np.zeros(0, np.uint8), hp)
    train_epoch_margin_valued(np.zeros(1, i64), np.array([0, 1], i64), X, XT, np.zeros(1, i32),
                              np.array([0, 1], i64), np.zeros(1, np.int16), np.zeros(0, np.uint8),
                              np.zeros(1, np.float32), np.zeros(1), np.zeros((2, 1), np.float32),
                              np.zeros((2, 1)), np.zeros((1, 2, 1), np.float32), np.zeros((1, 2, 1)),
                              np.zeros((2, 1)), np.zeros(1), 0, 1, np.zeros((0, 1), np.uint8),
                              np.zeros(0, np.uint8), np.ones((1, 1), np.float32), hp)


# ------------------------------------------------------------------ iterative parameter mixing
# `structperc.train.mixing.mix` in one pass per step instead of a numpy pass per operation: the same
# float64 arithmetic in the same order (x − x₀, times k_i, added to acc; x₀ + acc / K where acc ≠ 0),
# so the same bits (tested against the numpy steps).

@njit(cache=True, nogil=True)
def _mix_accumulate(acc, same, ki, x, x0, xb, x0b):
    """``acc += ki·(x − x0)`` in float64 (skipped for ki = 0), and ``same`` cleared where the bits of
    ``x`` and ``x0`` differ."""
    for i in range(acc.shape[0]):
        if xb[i] != x0b[i]:
            same[i] = 0
        if ki != 0.0:
            acc[i] = acc[i] + (np.float64(x[i]) - np.float64(x0[i])) * ki


@njit(cache=True, nogil=True)
def _mix_finish(acc, K, x0, ref):
    """``ref = x0 + acc / K`` where ``acc`` ≠ 0, else ``x0`` exactly (float64)."""
    for i in range(acc.shape[0]):
        r = np.float64(x0[i])
        if acc[i] != 0.0:
            r = r + acc[i] / K
        ref[i] = r


@njit(cache=True, nogil=True)
def _mix_write(out, ref, same, everywhere):
    """``out = ref`` (cast to ``out``'s type) everywhere, or only where ``same`` is 0."""
    for i in range(out.shape[0]):
        if everywhere or same[i] == 0:
            out[i] = ref[i]


#: The names the ahead-of-time build exports them under, one per dtype (an export has one signature);
#: the JIT serves both dtypes with the one function.
mix_accumulate_f4 = mix_accumulate_f8 = _mix_accumulate
mix_finish_f4 = mix_finish_f8 = _mix_finish
mix_write_f4 = mix_write_f8 = _mix_write
