"""Best label path of every sentence of a featurized corpus: the tagging-time decoder.

Two twins give identical labels (tested against each other and against brute force), with or
without a mask of allowed labels per token (forced tags, allowed-tag sets, a tag dictionary): the
ahead-of-time compiled kernel (`structperc.decode.tag_kernels`, float32 AVX Viterbi steps, one pass
over the corpus; `structperc.decode.constrained_kernels` under a mask) and, where no build exists,
the vectorized numpy Viterbi of `structperc.decode.viterbi` over length-sorted batches. The compiled
kernels (these, the marginals' and the k-best lists') decode a large corpus in runs of sentences on several
threads when a caller asks for them (`in_runs`, `structperc.compiled.threads`). Tagging
never JIT-compiles: numba's import and cache load (~0.5 s, ~65 MiB) would cost more than the numpy
path on all but very large inputs.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from structperc.compiled.boundary import rising
from structperc.compiled.threads import map_threads, tagging_shards, token_range
from structperc.decode.viterbi import viterbi_batch
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights

#: Tokens decoded per vectorized batch: bounds the (tokens, L + 1, L) transition buffer.
BATCH_TOKENS = 8192
#: Bytes of per-token transition scores (float64) a batch of the marginals and n-best drivers may
#: hold when transitions are conditioned (`batch_budget`).
BATCH_TRANSITION_BYTES = 32 << 20


def predict(weights: Weights, feats: Features, allowed: np.ndarray | None = None) -> np.ndarray:
    """Best label id per token; with ``allowed``, the best path among those the mask allows.

    Parameters
    ----------
    weights : Weights
    feats : Features
        Attribute ids of ``n_tokens`` tokens in ``len(feats.sent_ptr) - 1`` sentences.
    allowed : array of bool, shape (n_tokens, L), optional
        False where a label is forbidden at a token (forced tags, allowed-tag sets, a tag
        dictionary: `structperc.features.tagdict`); combined with the scheme's transition mask.
        None (the default) constrains nothing and runs the unconstrained decoder unchanged.

    Returns
    -------
    array of int32, shape (n_tokens,)
        With ``allowed``: every label is allowed at its token, or, for a sentence that has no
        allowed path of finite score (a token with no allowed label, or a mask the scheme's
        transitions cannot follow), -1 on every token of that sentence; the caller decides what
        that means (raise, or decode that sentence with fewer constraints): `no_path` lists them.

    Without the compiled build, sentences are sorted by length and decoded in vectorized batches
    padded to the batch's longest sentence (`length_batches`, `batch_scores`; the decoder carries a
    finished sentence's scores through the padding). A mask there sets the state scores of
    forbidden labels to -inf. The compiled twin (`structperc.decode.constrained_kernels`) exploits
    the mask: it scores only allowed labels and steps only over allowed pairs. Both give a token
    with a single allowed label the state score 0 (it is common to every allowed path), so they do
    the same float32 arithmetic and give the same labels; with an all-True mask (and L ≥ 2) that
    arithmetic is the unconstrained decoder's, and so are the labels.

    A second-order model (``weights.order2``) is decoded by the pair Viterbi of
    `structperc.decode.order2` (the same mask semantics, -1 included).

    With attribute values (``feats.values``) the corpus is folded into the equivalent problem of
    one attribute per token (`structperc.decode.values`) and decoded as above, a run of sentences
    at a time; with every value 1.0 the labels are those of ``feats`` without values.
    """
    ptr = feats.sent_ptr
    n_tokens = int(ptr[-1])
    out = np.empty(n_tokens, dtype=np.int32)
    if allowed is not None:
        allowed = check_allowed(allowed, n_tokens, weights.n_labels)
    if weights.order2 is not None:
        from structperc.decode.order2 import predict_order2

        return predict_order2(weights, weights.order2, feats, allowed)
    if feats.values is not None:
        from structperc.decode.values import folded_runs

        for run in folded_runs(weights, feats):
            out[run.tokens] = predict(run.weights, run.feats,
                                      None if allowed is None else allowed[run.tokens])
        return out
    if allowed is not None:
        mask = allowed
        if not in_runs(feats, lambda f, rows, _: _predict_allowed_compiled(weights, f, mask[rows], out[rows])):
            _predict_allowed_numpy(weights, feats, allowed, out)
        return out
    if in_runs(feats, lambda f, rows, _: _predict_compiled(weights, f, out[rows])):
        return out
    for sents in length_batches(np.diff(ptr)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        paths = viterbi_batch(state, trans, weights.end, lens)
        out[tok[real]] = paths[real]
    return out


def in_runs(feats: Features, work: Callable[[Features, slice, slice], bool]) -> bool:
    """``work(features, tokens, sentences)`` on the whole corpus, or on runs of its sentences on threads of their
    own when the corpus is large enough and more than one is asked for (`structperc.compiled.threads`): each
    run's features are views of the corpus's rows (``tokens``, ``sentences``: the run's slices of the corpus's),
    and a sentence's path, marginals or k best depend on its own tokens alone, so the results are the same.
    False when ``work`` says so for a run (the compiled kernel is absent: every run says so before it writes)."""
    ptr = np.asarray(feats.sent_ptr, dtype=np.int64)
    bounds = tagging_shards(ptr)
    if bounds is None:
        return work(feats, slice(0, int(ptr[-1])), slice(0, len(ptr) - 1))
    runs = []
    for k in range(len(bounds) - 1):
        rows, sents = token_range(ptr, bounds, k), slice(int(bounds[k]), int(bounds[k + 1]))
        runs.append((Features(feats.state[rows], feats.trans[rows], ptr[sents.start:sents.stop + 1] - rows.start),
                     rows, sents))
    return all(map_threads(lambda k: work(*runs[k]), len(runs), len(runs)))


def no_path(labels: np.ndarray, sent_ptr: np.ndarray) -> np.ndarray:
    """Indices (int64, ascending) of the sentences `predict` found no allowed path for: their labels
    are -1, which must not reach a label lookup (``labels[-1]`` would silently be the last label)."""
    ptr = np.asarray(sent_ptr, dtype=np.int64)
    nonempty = np.flatnonzero(np.diff(ptr) > 0)
    return nonempty[np.asarray(labels)[ptr[nonempty]] < 0]


def check_features(weights: Weights, feats: Features) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The attribute ids and sentence offsets a compiled kernel indexes without bounds checks, as
    C-contiguous int32/int32/int64 arrays, or `InputError` (the one feature check of the k-best and
    forward-backward drivers)."""
    c = np.ascontiguousarray
    X = c(feats.state, dtype=np.int32)
    XT = c(feats.trans, dtype=np.int32)
    ptr = c(feats.sent_ptr, dtype=np.int64)
    n = X.shape[0] if X.ndim == 2 else -1
    if X.ndim != 2 or XT.ndim != 2 or XT.shape[0] != n or ptr.ndim != 1 or len(ptr) < 1 \
            or ptr[0] != 0 or ptr[-1] != n or not rising(ptr):
        raise InputError("features must hold (n_tokens, K) state ids, (n_tokens, KT) transition ids and "
                         "sentence offsets (sent_ptr) rising from 0 to n_tokens")
    A, AT = len(weights.sparse.ptr) - 1, weights.cond.shape[0]
    if n and X.shape[1] and (int(X.min()) < -1 or int(X.max()) >= A):
        raise InputError(f"state attribute ids out of range: they must lie in [-1, {A})")
    if n and XT.shape[1] and (int(XT.min()) < -1 or int(XT.max()) >= AT):
        raise InputError(f"transition attribute ids out of range: they must lie in [-1, {AT})")
    return X, XT, ptr


def check_allowed(allowed: np.ndarray, n_tokens: int, n_labels: int) -> np.ndarray:
    """``allowed`` as a C-contiguous bool (n_tokens, L) array, or `InputError` (the compiled kernel
    indexes it without bounds checks: its shape and dtype are checked here, at the boundary)."""
    if not isinstance(allowed, np.ndarray) or allowed.dtype != np.bool_ \
            or allowed.shape != (n_tokens, n_labels):
        got = (f"{allowed.dtype} array of shape {allowed.shape}" if isinstance(allowed, np.ndarray)
               else type(allowed).__name__)
        raise InputError(f"allowed must be a bool array of shape ({n_tokens}, {n_labels}) "
                         f"(tokens, labels); got {got}")
    return np.ascontiguousarray(allowed)


def _predict_allowed_numpy(weights: Weights, feats: Features, allowed: np.ndarray, out: np.ndarray) -> None:
    """The numpy twin of `structperc.decode.constrained_kernels.decode_corpus_allowed`."""
    single = allowed.sum(axis=1) == 1
    for sents in length_batches(np.diff(feats.sent_ptr)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        ok = allowed[tok] | ~real[:, :, None]  # the padding is carried, never scored: left alone
        state = np.where(ok, state, np.float32(-np.inf))
        one = single[tok] & real
        state[one] = np.where(allowed[tok[one]], np.float32(0.0), np.float32(-np.inf))
        paths = viterbi_batch(state, trans, weights.end, lens)
        # a sentence whose best allowed path scores -inf has none
        paths[~np.isfinite(_path_scores(state, trans, weights.end, lens, paths))] = -1
        out[tok[real]] = paths[real]


def _path_scores(state: np.ndarray, trans: np.ndarray, end: np.ndarray, lens: np.ndarray,
                 paths: np.ndarray) -> np.ndarray:
    """Score (float64) of each sentence's decoded path: -inf exactly when it crosses a forbidden
    label or transition (summed in float64: only its finiteness is used)."""
    B, T = paths.shape
    rows = np.arange(B)
    real = np.arange(T)[None, :] < lens[:, None]
    picked = state[rows[:, None], np.arange(T)[None, :], paths]
    total = np.where(real, picked, 0).astype(np.float64).sum(axis=1)
    L = state.shape[2]
    prev = np.concatenate([np.full((B, 1), L, dtype=np.int64), paths[:, :-1].astype(np.int64)], axis=1)
    if trans.ndim == 2:
        tr = trans[prev, paths]
    else:
        tr = trans[rows[:, None], np.arange(T)[None, :], prev, paths]
    total += np.where(real, tr, 0).astype(np.float64).sum(axis=1)
    total += end[paths[rows, lens - 1]]
    return total


def _predict_compiled(weights: Weights, feats: Features, out: np.ndarray) -> bool:
    """Decode with the ahead-of-time kernel (same labels as the numpy path); False without it."""
    from structperc.compiled import loader

    kernel = loader.aot("decode_corpus")
    if kernel is None or loader.mode() != "aot":
        return False
    c = np.ascontiguousarray
    sw = weights.sparse
    kernel(c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32),
           c(feats.sent_ptr, dtype=np.int64), sw.ptr, sw.labels, sw.values, weights.base_transitions(),
           c(weights.cond, dtype=np.float32), c(weights.end, dtype=np.float64), out)
    return True


def _predict_allowed_compiled(weights: Weights, feats: Features, allowed: np.ndarray,
                              out: np.ndarray) -> bool:
    """Decode under ``allowed`` with the ahead-of-time kernel (same labels as the numpy twin);
    False without its build."""
    from structperc.compiled import loader

    kernel = loader.aot("decode_corpus_allowed")
    if kernel is None:
        return False
    c = np.ascontiguousarray
    sw = weights.sparse
    kernel(c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32),
           c(feats.sent_ptr, dtype=np.int64), sw.ptr, sw.labels, sw.values, weights.base_transitions(),
           c(weights.cond, dtype=np.float32), c(weights.end, dtype=np.float64), allowed.view(np.uint8), out)
    return True


def length_batches(lengths: np.ndarray, max_tokens: int | None = None) -> list[np.ndarray]:
    """Sentence indices grouped by similar length (sorted), each group at most ``max_tokens`` padded.

    Empty sentences are left out. Batching by near-equal length keeps the number of Python-level
    steps (the overhead) small and the padding waste low.
    """
    max_tokens = BATCH_TOKENS if max_tokens is None else max_tokens  # read at call time (tests patch it)
    order = np.argsort(lengths, kind="stable")
    order = order[lengths[order] > 0]
    batches = []
    start = 0
    n = len(order)
    while start < n:
        lo = int(lengths[order[start]])
        stop = start + 1
        while stop < n:
            T = int(lengths[order[stop]])
            if T > lo * 1.25 + 2 or (stop - start + 1) * T > max_tokens:
                break
            stop += 1
        batches.append(order[start:stop])
        start = stop
    return batches


def batch_budget(weights: Weights, feats: Features) -> int:
    """Tokens per batch: `BATCH_TOKENS`, fewer when per-token transition tables are held."""
    if feats.trans.shape[1] == 0:
        return BATCH_TOKENS
    L = weights.n_labels
    return max(64, min(BATCH_TOKENS, BATCH_TRANSITION_BYTES // (8 * (L + 1) * L)))


def batch_scores(weights: Weights, feats: Features, sents: np.ndarray) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Padded lattice of sentences ``sents``, as `structperc.decode.decoder.predict` builds it.

    Returns
    -------
    state : array of float32, shape (B, T, L)
    trans : array of float32, shape (B, T, L + 1, L) or (L + 1, L)
    lengths : array of int64, shape (B,)
    tok : array of int64, shape (B, T)
        Token index of each position (0 in the padding).
    real : array of bool, shape (B, T)
    """
    ptr = feats.sent_ptr
    lens = np.diff(ptr)[sents]
    T = int(lens.max())
    L = weights.n_labels
    real = np.arange(T)[None, :] < lens[:, None]
    tok = np.where(real, ptr[sents][:, None] + np.arange(T), 0)
    flat = tok.ravel()
    state = weights.state_scores(feats.state[flat]).reshape(len(sents), T, L)
    trans = weights.transition_scores(feats.trans[flat])
    if trans.ndim == 3:
        trans = trans.reshape(len(sents), T, L + 1, L)
    return state, trans, lens, tok, real
