"""Best label path of every sentence of a featurized corpus: the tagging-time decoder.

Two twins give identical labels (tested against each other and against brute force): the
ahead-of-time compiled kernel (`structperc.decode.tag_kernels`, float32 AVX Viterbi steps, one pass
over the corpus) and, where no build exists, the vectorized numpy Viterbi of
`structperc.decode.viterbi` over length-sorted batches. Tagging never JIT-compiles: numba's import
and cache load (~0.5 s, ~65 MiB) would cost more than the numpy path on all but very large inputs.
"""
from __future__ import annotations

import numpy as np

from structperc.decode.viterbi import viterbi_batch
from structperc.features.index import Features
from structperc.model.weights import Weights

#: Tokens decoded per vectorized batch: bounds the (tokens, L + 1, L) transition buffer.
BATCH_TOKENS = 8192
#: Bytes of per-token transition scores (float64) a batch of the marginals and n-best drivers may
#: hold when transitions are conditioned (`batch_budget`).
BATCH_TRANSITION_BYTES = 32 << 20


def predict(weights: Weights, feats: Features) -> np.ndarray:
    """Best label id per token.

    Parameters
    ----------
    weights : Weights
    feats : Features
        Attribute ids of ``n_tokens`` tokens in ``len(feats.sent_ptr) - 1`` sentences.

    Returns
    -------
    array of int32, shape (n_tokens,)

    Without the compiled build, sentences are sorted by length and decoded in vectorized batches
    padded to the batch's longest sentence (`length_batches`, `batch_scores`; the decoder carries a
    finished sentence's scores through the padding).
    """
    ptr = feats.sent_ptr
    out = np.empty(int(ptr[-1]), dtype=np.int32)
    if _predict_compiled(weights, feats, out):
        return out
    for sents in length_batches(np.diff(ptr)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        paths = viterbi_batch(state, trans, weights.end, lens)
        out[tok[real]] = paths[real]
    return out


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
