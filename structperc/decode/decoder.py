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
    padded to the batch's longest sentence (the decoder carries a finished sentence's scores through
    the padding). Batching by near-equal length keeps the number of Python-level Viterbi steps (the
    overhead) small and the padding waste low.
    """
    ptr = feats.sent_ptr
    out = np.empty(int(ptr[-1]), dtype=np.int32)
    if _predict_compiled(weights, feats, out):
        return out
    lengths = np.diff(ptr)
    L = weights.n_labels
    for sents in _length_batches(lengths):
        lens = lengths[sents]
        T = int(lens.max())
        real = np.arange(T)[None, :] < lens[:, None]                # (B, T)
        tok = np.where(real, ptr[sents][:, None] + np.arange(T), 0)  # padding reads token 0
        flat = tok.ravel()
        state = weights.state_scores(feats.state[flat]).reshape(len(sents), T, L)
        trans = weights.transition_scores(feats.trans[flat])
        if trans.ndim == 3:
            trans = trans.reshape(len(sents), T, L + 1, L)
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


def _length_batches(lengths: np.ndarray) -> list[np.ndarray]:
    """Sentence indices grouped by similar length (sorted), each group at most `BATCH_TOKENS` padded."""
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
            if T > lo * 1.25 + 2 or (stop - start + 1) * T > BATCH_TOKENS:
                break
            stop += 1
        batches.append(order[start:stop])
        start = stop
    return batches
