"""Decoding with second-order transitions: the best path of a model trained by
`structperc.train.order2.train_perceptron_order2` (first-order `Weights` plus a tensor ``T2`` over
label triples (y_{t-2}, y_{t-1}, y_t), index L being ``<bos>``), by a Viterbi over label pairs.

A model trained with ``order=2`` carries ``T2`` as `Weights.order2`, and
`structperc.decode.decoder.predict` hands it here: the tagging faces (Tagger, CLI, streaming,
serving, spaCy) decode it without knowing.

The lattice is the first-order decoder's, in its float32 arithmetic (state and transition scores
from `Weights.state_scores` / `Weights.transition_scores`, as `structperc.decode.decoder.predict`'s
numpy path builds them); the kernel (`structperc.decode.order2_kernels.viterbi2_corpus`) adds the
second-order scores and walks only the transitions the scheme allows. With ``T2 ≡ 0`` it gives
`predict`'s labels exactly, ties included (tested). A mask of allowed labels per token (forced tags,
allowed-tag sets, the tag dictionary) sets the state scores of forbidden labels to -inf. The kernel is
the ahead-of-time build (``structperc._aot_order2``) when there is one, else numba's JIT.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from structperc.compiled.threads import map_threads, tagging_shards
from structperc.decode.values import sentence_runs
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights

#: Tokens scored per call of the kernel: bounds the per-token transition tables (float32
#: (tokens, L + 1, L)) of conditioned transitions.
BATCH_TOKENS = 4096


def _kernel() -> Callable[..., Any]:
    """The corpus kernel: its ahead-of-time build, else numba's JIT (imported only then)."""
    from structperc.compiled import loader

    kernel = loader.aot("viterbi2_corpus")
    if kernel is None:
        from structperc.decode import order2_kernels

        kernel = order2_kernels.viterbi2_corpus
    return kernel


def predict_order2(weights: Weights, T2: np.ndarray, feats: Features,
                   allowed: np.ndarray | None = None) -> np.ndarray:
    """Best label id per token (int32) of the second-order model (``weights``, ``T2``): what
    `structperc.decode.decoder.predict` is to a first-order model. ``allowed`` (bool (n_tokens, L),
    checked by the caller) restricts each token's labels; a sentence it leaves no path through gets
    -1 on every token (`structperc.decode.decoder.no_path`). No attribute values other than 1 (order-2
    training refuses them)."""
    L = weights.n_labels
    T2 = np.ascontiguousarray(T2, dtype=np.float32)
    if T2.shape != (L + 1, L + 1, L):
        raise InputError(f"second-order transitions of shape {T2.shape}, expected {(L + 1, L + 1, L)}")
    if feats.values is not None and not (np.asarray(feats.values) == 1).all():
        raise InputError("second-order models do not support attribute values other than 1")
    ptr = np.asarray(feats.sent_ptr, dtype=np.int64)
    out = np.empty(int(ptr[-1]), dtype=np.int32)
    base = weights.base_transitions()
    scheme = np.ascontiguousarray(weights.mask, dtype=np.float64)
    end = np.ascontiguousarray(weights.end, dtype=np.float64)
    kernel = _kernel()
    batches = list(sentence_runs(ptr, BATCH_TOKENS))  # read at call time (tests patch it)

    def decode(b: int) -> None:  # one batch of sentences: its own scores, its rows of ``out``
        first, stop = batches[b]
        lo, hi = int(ptr[first]), int(ptr[stop])
        state = weights.state_scores(feats.state[lo:hi])
        if allowed is not None:
            state[~allowed[lo:hi]] = np.float32(-np.inf)
        trans = weights.transition_scores(feats.trans[lo:hi]) if feats.trans.shape[1] else base[None]
        kernel(np.ascontiguousarray(state), np.ascontiguousarray(trans, dtype=np.float32), T2, end,
               ptr[first:stop + 1] - lo, scheme, out[lo:hi])

    # the batches on the threads a caller asks for (`structperc.compiled.threads`), when the corpus is large enough
    shards = tagging_shards(ptr)
    map_threads(decode, len(batches), 1 if shards is None else len(shards) - 1)
    return out
