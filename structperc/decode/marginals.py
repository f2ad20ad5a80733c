"""Probabilities on the tagging lattice of a featurized corpus: token marginals, partition functions,
path and span probabilities (the drivers; the forward-backward algorithm itself, Rabiner 1989, is
`structperc.decode.forward_backward`, span probabilities `structperc.decode.spans`).

The corpus drivers (`marginals`, `path_log_probs`) run the ahead-of-time compiled twin of this
forward-backward when it is built (`structperc.decode.fb_kernels`: scaled probability-space passes,
one sentence at a time, with an exact log-space fallback; ~2-2.5x the compiled Viterbi decode on
CoNLL-2000 against ~4.5x for the numpy path, ~1.7x against ~12x with the default chunk template's
two conditioned transition templates) and the numpy twin otherwise. All drivers take an
optional per-token ``allowed`` mask (bool, (n_tokens, L)): False sets a label's state score to -inf,
on top of the scheme's transition mask (forced tags, allowed-tag sets, a tag dictionary). Features
with attribute values (``feats.values``) are folded into the equivalent problem of one attribute per
token first (`structperc.decode.values`), a run of sentences at a time.

The lattice functions (`forward_backward_batch`, `log_partition_batch`, `path_scores`,
`path_log_prob`, `span_log_probs`, ...) are importable from here too.
"""
from __future__ import annotations

import numpy as np

from structperc.compiled.boundary import rising
from structperc.decode.decoder import (
    batch_budget,
    batch_scores,
    check_allowed,
    check_features,
    in_runs,
    length_batches,
)
from structperc.decode.forward_backward import (
    TINY,
    ForwardBackward,
    forward_backward_batch,
    log_partition_batch,
    path_log_prob,
    path_scores,
)
from structperc.decode.forward_backward import mask_state as _mask_state
from structperc.decode.spans import SPAN_SCHEMES, span_label_ids, span_log_probs, span_probs
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights

__all__ = ["SPAN_SCHEMES", "TINY", "ForwardBackward", "forward_backward_batch", "log_partition_batch",
           "marginals", "path_log_prob", "path_log_probs", "path_scores", "span_label_ids", "span_log_probs",
           "span_probs"]


def _check_temperature(temperature: float) -> float:
    t = float(temperature)
    if not (np.isfinite(t) and t > 0):
        raise InputError(f"temperature must be a positive number, not {temperature!r}")
    return t


def _check_ids(ids: np.ndarray, n_tokens: int, L: int) -> np.ndarray:
    a = np.asarray(ids)
    if a.shape != (n_tokens,) or (n_tokens and a.dtype.kind not in "iu"):
        raise InputError(f"ids must be {n_tokens} integer label ids, not {a.dtype} {a.shape}")
    if n_tokens and (int(a.min()) < 0 or int(a.max()) >= L):
        raise InputError(f"label ids must lie in [0, {L})")
    return a



def _kernel_args(weights: Weights, feats: Features) -> tuple[np.ndarray, ...]:
    """The arrays `structperc.decode.fb_kernels.fb_corpus` reads, checked so that it cannot read
    out of bounds (InputError otherwise: what the numpy path would trip over too): the features'
    (`check_features`), then the weights' (`_weight_args`)."""
    return (*check_features(weights, feats), *_weight_args(weights))


def _weight_args(weights: Weights) -> tuple[np.ndarray, ...]:
    """The weight arrays of `_kernel_args`, checked: once per call, whatever the runs of sentences.

    Dense state weights (every attribute with every label) are read by offset ``a · L`` and need no
    check of their row offsets and label ids: that O(model) scan would cost ~4 ms per call on a
    CoNLL-2000 model.
    """
    c = np.ascontiguousarray
    L = weights.n_labels
    sw = weights.sparse
    A = len(sw.ptr) - 1
    cond = c(weights.cond, dtype=np.float32)
    base = weights.base_transitions()
    end = c(weights.end, dtype=np.float64)
    if base.shape != (L + 1, L) or end.shape != (L,) or cond.ndim != 3 or cond.shape[1:] != (L + 1, L) \
            or sw.n_labels != L or len(sw.labels) != len(sw.values):
        raise InputError("weights of inconsistent shapes")
    if len(sw.labels) != A * L:  # sparse rows: the kernel follows ptr and the label ids
        if A < 0 or sw.ptr[0] != 0 or sw.ptr[-1] != len(sw.values) or not rising(sw.ptr) \
                or (len(sw.labels) and (int(sw.labels.min()) < 0 or int(sw.labels.max()) >= L)):
            raise InputError("state weights with malformed row offsets or label ids")
    return sw.ptr, sw.labels, sw.values, base, cond, end


def _run_compiled(weights: Weights, feats: Features, temperature: float, allowed: np.ndarray | None,
                  ids: np.ndarray | None, want_marginals: bool) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(marginals or None, log Z, path log-probabilities or None) by the compiled kernel; None without it."""
    from structperc.compiled import loader

    kernel = loader.aot("fb_corpus")
    if kernel is None:
        return None
    L = weights.n_labels
    n_tok, n_sent = int(feats.sent_ptr[-1]), len(feats.sent_ptr) - 1
    out = np.empty((n_tok if want_marginals else 0, L))
    log_z = np.empty(n_sent)
    path_lp = np.zeros(n_sent if ids is not None else 0)  # an empty sentence: log 1 (the kernel skips it)
    path = None if ids is None else np.ascontiguousarray(ids, dtype=np.int32)
    none = np.zeros((0, L), dtype=np.bool_), np.zeros(0, dtype=np.int32), np.empty((0, L)), np.zeros(0)
    weight_args = _weight_args(weights)

    def run(f: Features, tokens: slice, sents: slice) -> bool:  # a run of sentences (`in_runs`): its rows
        kernel(*check_features(weights, f), *weight_args, 1.0 / temperature,
               none[0] if allowed is None else allowed[tokens], none[1] if path is None else path[tokens],
               out[tokens] if want_marginals else none[2], log_z[sents], path_lp[sents] if ids is not None else none[3])
        return True

    in_runs(feats, run)
    return out, log_z, path_lp


def marginals(weights: Weights, feats: Features, temperature: float = 1.0,
              allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Token marginals and log partition function of every sentence of a featurized corpus.

    Parameters
    ----------
    weights : Weights
    feats : Features
        ``n_tokens`` tokens in ``n_sentences = len(feats.sent_ptr) - 1`` sentences.
    temperature : float
        p(y) ∝ exp(score(y) / temperature).
    allowed : array of bool, shape (n_tokens, L), optional
        False forbids a label at a token (its state score becomes -inf), on top of the scheme's
        mask: forced tags, allowed-tag sets, a tag dictionary.

    Returns
    -------
    marginals : array of float64, shape (n_tokens, L)
        p(y_t = l) in corpus order; each row sums to 1 (all zero in a sentence without an allowed
        path).
    log_z : array of float64, shape (n_sentences,)
        log Z per sentence (0 for an empty sentence, -inf without an allowed path).

    The ahead-of-time kernel (`structperc.decode.fb_kernels.fb_corpus`, scaled forward-backward
    with an exact log-space fallback) runs when built; otherwise the vectorized numpy twin over
    length batches (`structperc.decode.decoder.length_batches`). Both agree to ~1e-12.
    """
    weights.check_first_order("token marginals and confidences")
    tau = _check_temperature(temperature)
    L = weights.n_labels
    allowed = None if allowed is None else check_allowed(allowed, int(feats.sent_ptr[-1]), L)
    if feats.values is not None:  # attribute values: folded a run of sentences at a time
        from structperc.decode.values import folded_runs

        out = np.zeros((int(feats.sent_ptr[-1]), L))
        log_z = np.zeros(len(feats.sent_ptr) - 1)
        for run in folded_runs(weights, feats):
            out[run.tokens], log_z[run.sents] = marginals(
                run.weights, run.feats, tau, None if allowed is None else allowed[run.tokens])
        return out, log_z
    done = _run_compiled(weights, feats, tau, allowed, None, True)
    if done is not None:
        return done[0], done[1]
    return _marginals_numpy(weights, feats, tau, allowed)


def _marginals_numpy(weights: Weights, feats: Features, temperature: float = 1.0,
                     allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`marginals` by the numpy forward-backward over length batches (the twin of the kernel)."""
    ptr = feats.sent_ptr
    L = weights.n_labels
    allowed = None if allowed is None else check_allowed(allowed, int(ptr[-1]), L)
    out = np.zeros((int(ptr[-1]), L))
    log_z = np.zeros(len(ptr) - 1)
    for sents in length_batches(np.diff(ptr), batch_budget(weights, feats)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        state = _mask_state(state, allowed, tok, real)
        fb = forward_backward_batch(state, trans, weights.end, lens, temperature)
        out[tok[real]] = fb.marginals[real]
        log_z[sents] = fb.log_z
    return out, log_z


def path_log_probs(weights: Weights, feats: Features, ids: np.ndarray, temperature: float = 1.0,
                   allowed: np.ndarray | None = None) -> np.ndarray:
    """log p(labels of the sentence) of every sentence, given a label id per token (e.g. `predict`'s).

    Parameters
    ----------
    ids : array of int, shape (n_tokens,)
    allowed : array of bool, shape (n_tokens, L), optional
        As for `marginals`: the distribution is over the allowed paths only.

    Returns
    -------
    array of float64, shape (n_sentences,)
        0 for an empty sentence; -inf for a labelling the model (or ``allowed``) forbids.
    """
    weights.check_first_order("path probabilities")
    tau = _check_temperature(temperature)
    L = weights.n_labels
    n_tok = int(feats.sent_ptr[-1])
    ids = _check_ids(ids, n_tok, L)
    allowed = None if allowed is None else check_allowed(allowed, n_tok, L)
    if feats.values is not None:  # attribute values: folded a run of sentences at a time
        from structperc.decode.values import folded_runs

        out = np.zeros(len(feats.sent_ptr) - 1)
        for run in folded_runs(weights, feats):
            out[run.sents] = path_log_probs(run.weights, run.feats, ids[run.tokens], tau,
                                            None if allowed is None else allowed[run.tokens])
        return out
    done = _run_compiled(weights, feats, tau, allowed, ids, False)
    if done is not None:
        return done[2]
    return _path_log_probs_numpy(weights, feats, ids, tau, allowed)


def _path_log_probs_numpy(weights: Weights, feats: Features, ids: np.ndarray, temperature: float = 1.0,
                          allowed: np.ndarray | None = None) -> np.ndarray:
    """`path_log_probs` by the numpy forward pass over length batches."""
    ptr = feats.sent_ptr
    L = weights.n_labels
    ids = _check_ids(ids, int(ptr[-1]), L)
    allowed = None if allowed is None else check_allowed(allowed, int(ptr[-1]), L)
    out = np.zeros(len(ptr) - 1)
    for sents in length_batches(np.diff(ptr), batch_budget(weights, feats)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        state = _mask_state(state, allowed, tok, real)
        paths = np.where(real, ids[tok], 0)
        out[sents] = path_log_prob(state, trans, weights.end, paths, lens, temperature)
    return out
