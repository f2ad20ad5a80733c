"""Probabilities beyond the best path, in the data's tag scheme: token marginals, path probabilities
and k-best lists, at the model's calibrated temperature (`structperc.predict.calibration`).

Marginals are exact sums over the decoder's lattice by forward-backward (Rabiner 1989, "A tutorial on
hidden Markov models"; `structperc.decode.marginals`), summed from model labels into data tags (a data
tag's probability is the mass of the model labels reading as it, `projection_matrix`). K-best lists
come from the list Viterbi decoder with lazy merges (Huang & Chiang 2005, "Better k-best parsing";
`structperc.decode.nbest`).
"""
from __future__ import annotations

import numpy as np

from structperc.decode.marginals import marginals, path_log_probs
from structperc.decode.nbest import MAX_K, check_k, nbest
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.features.instances import data_tags
from structperc.io.corpus import Corpus
from structperc.model.schema import Model
from structperc.predict.calibration import confidence_temperature
from structperc.predict.decoding import confidence_of, featurize, projection_matrix


def data_marginals(model: Model, feats: Features, mask: np.ndarray | None,
                   temperature: float | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Token marginals over the data's tags: (tags, probabilities (n_tokens, D), log Z per sentence)."""
    tau = confidence_temperature(model) if temperature is None else temperature
    probs, log_z = marginals(model.weights, feats, tau, allowed=mask)
    tags, M = projection_matrix(model)
    return tags, probs @ M, log_z


def distribution_dicts(tags: list[str], probs: np.ndarray, sent_ptr: np.ndarray) -> list[list[dict[str, float]]]:
    """Per sentence, per token, {data tag: probability} of data-tag marginals ``probs`` (columns
    ``tags``): the shape every face hands a user."""
    rows = [dict(zip(tags, row)) for row in probs.tolist()]
    ptr = sent_ptr.tolist()
    return [rows[ptr[i]:ptr[i + 1]] for i in range(len(ptr) - 1)]


def marginal_dicts(model: Model, corpus: Corpus, mask: np.ndarray | None = None) \
        -> list[list[dict[str, float]]]:
    """Per sentence, per token, {data tag: probability} (sklearn-crfsuite's ``predict_marginals``
    shape)."""
    tags, probs, _ = data_marginals(model, featurize(model, corpus), mask)
    return distribution_dicts(tags, probs, corpus.sent_ptr)


def token_confidence(model: Model, feats: Features, ids: np.ndarray, sent_ptr: np.ndarray,
                     mask: np.ndarray | None = None, temperature: float | None = None) \
        -> tuple[list[str], np.ndarray]:
    """The data tags of label ids ``ids`` and each one's marginal probability."""
    tau = confidence_temperature(model) if temperature is None else temperature
    return confidence_of(model, marginals(model.weights, feats, tau, allowed=mask)[0], ids, sent_ptr)


def path_probabilities(model: Model, feats: Features, ids: np.ndarray,
                       mask: np.ndarray | None = None) -> np.ndarray:
    """p(labels ``ids`` of each sentence) at the model's temperature (under ``mask``'s lattice)."""
    return np.exp(path_log_probs(model.weights, feats, ids, confidence_temperature(model), allowed=mask))


def k_best(model: Model, feats: Features, k: int, mask: np.ndarray | None = None) \
        -> list[list[tuple[list[str], float, float]]]:
    """Per sentence, up to ``k`` distinct (data tags, score, probability) best first (fewer when the lattice
    has fewer paths). Ties keep Viterbi's order (`structperc.decode.nbest`). A voting model is refused: its
    first member's paths would not hold the vote it tags with.

    A span model trained unconstrained in another encoding than its data's (``constrained=False``: IOBES
    labels for IOB2 data) has label paths that read as the same data tags (an E-X and an I-X before O both
    end a span). Such a sequence is listed once, at its best path's score and rank, with the probabilities of
    its paths the search met summed; the search is widened (4× the paths, up to `MAX_K`) until ``k`` distinct
    sequences are found or the lattice has no more paths."""
    if model.voters:
        raise InputError("a voting model (trained with --vote) gives its members' vote, not k best paths: the first "
                         "member's would not hold it")
    k = check_k(k)
    task = model.task
    if task.constrained or task.model_scheme == task.scheme:  # one label path per data-tag sequence
        return _listed(model, feats, k, mask)
    want = k
    while True:
        lists = _listed(model, feats, want, mask)
        merged = [_distinct(paths, k) for paths in lists]
        if want >= MAX_K or all(len(m) == k or len(paths) < want for m, paths in zip(merged, lists)):
            return merged
        want = min(MAX_K, 4 * want)


def _distinct(paths: list[tuple[list[str], float, float]], k: int) -> list[tuple[list[str], float, float]]:
    """The first ``k`` distinct tag sequences of ``paths`` (best first), each at its first path's score, with the
    probabilities of all its paths summed."""
    seen: dict[tuple[str, ...], list] = {}
    for tags, score, p in paths:
        entry = seen.get(key := tuple(tags))
        if entry is None:
            seen[key] = [tags, score, p]
        else:
            entry[2] += p
    return [(tags, score, min(p, 1.0)) for tags, score, p in list(seen.values())[:k]]


def _listed(model: Model, feats: Features, k: int, mask: np.ndarray | None) \
        -> list[list[tuple[list[str], float, float]]]:
    """Per sentence, the ``k`` best label paths as (data tags, score, probability), best first."""
    result = nbest(model.weights, feats, k, allowed=mask)
    tau = confidence_temperature(model)
    # p(path r) = p(best) · exp((s_r - s_best) / τ): the best path's probability exactly (float64),
    # the others by score differences, so no probability exceeds the best one's or 1 (the k-best
    # scores are float32 sums: exp(s_r / τ - log Z) drifted above 1 by 1e-4 on long sentences)
    best_log_p = path_log_probs(model.weights, feats, result.ids[0], tau, allowed=mask) \
        if len(result.ids) else np.zeros(0)
    ptr = feats.sent_ptr
    n_paths = (result.scores > -np.inf).sum(axis=1)  # the listed paths come first, -inf after
    # every listed path as a sentence of its own, converted to data tags in one call (a call per path
    # was 90 % of `structperc tag --nbest 20000` on a 28-token sentence)
    flat = [result.ids[:n_paths[s], ptr[s]:ptr[s + 1]].ravel() for s in range(len(ptr) - 1)]
    path_ptr = np.zeros(int(n_paths.sum()) + 1, dtype=np.int64)
    np.cumsum(np.repeat(np.diff(ptr), n_paths), out=path_ptr[1:])
    tags = data_tags(np.concatenate(flat) if flat else np.zeros(0, dtype=np.int32), path_ptr,
                     model.labels, model.task)
    scores = result.scores.tolist()
    with np.errstate(invalid="ignore"):  # -inf - -inf past a sentence's paths: never read
        probs = np.exp(best_log_p[:, None] + np.minimum((result.scores - result.scores[:, :1]) / tau, 0.0))
    bounds = path_ptr.tolist()
    out: list[list[tuple[list[str], float, float]]] = []
    i = 0
    for s, (n, p) in enumerate(zip(n_paths.tolist(), probs.tolist())):
        out.append([(tags[bounds[i + r]:bounds[i + r + 1]], scores[s][r], p[r]) for r in range(n)])
        i += n
    return out
