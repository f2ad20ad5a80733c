"""Why a sentence got its tags: the best path taken apart into the weights that make its score
(`Tagger.explain`, `Segmenter.explain`).

The path is the one `structperc.predict.decoding.best_ids` decodes (the model's tag dictionary
applies, as in ``predict``), so its labels are ``predict``'s. Its score is the sum of

- per token, the state weights of its label for the attributes that fired (``features``: (name,
  weight) pairs, the non-zero ones, largest first; an attribute with a value, in a
  `structperc.sklearn` model, counts value × weight);
- per token, its ``transition``: the weight from the previous label (`BOS` at the first token) to its
  own, plus the transition weights conditioned on its observations (listed in ``conditioned``) and,
  in a second-order model, the weight of the label triple (``second_order``);
- the ``end`` term of the last label (0.0: the models learn no end weights; the scheme's forbidden
  endings are never on a decoded path).

Summed in that order — per token its features in the order listed, then its transition; tokens left
to right; then ``end`` — the parts give ``score`` exactly (float64 from float32 weights).

Each token's ``runner_up`` is the best tag other than its own (in the data's scheme, as ``label``),
``margin`` how much better the best path is than the best path through that tag there (max-marginals
of a forward and a backward max-product pass over the same lattice, allowed labels and scheme
included); both None when no other tag has a path. The margin is ≥ 0 up to rounding: the decoder adds
in float32, so at a tie (averaged weights make some) it may be a hair below 0 (−1e-7).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.features.instances import data_tags
from structperc.io.corpus import Corpus
from structperc.io.segmented import char_corpus
from structperc.labels.partial import label_projection
from structperc.model.inspection import BOS, attribute_names
from structperc.model.schema import Model
from structperc.predict.decoding import constraint_mask, decode, featurize

__all__ = ["BOS", "explain", "explain_text", "one_sentence", "sentence_mask"]


def one_sentence(sentence: Any) -> Any:
    """What `Tagger.explain` hands the corpus reader: a list of tokens (strings, or tuples of the
    model's columns) becomes a batch of one sentence; any other input ``predict`` reads (a `Corpus`, a
    dataset, a CoNLL path) is returned as is, to hold one sentence. A string that names no file is
    refused (``explain`` takes tokens, not text)."""
    if isinstance(sentence, str) and not os.path.exists(sentence):
        raise InputError("explain() takes one sentence: a list of tokens (or of tuples of the model's "
                         "columns), or an input predict() reads holding one sentence; not a string")
    if isinstance(sentence, (list, tuple)) and all(isinstance(t, (str, tuple)) for t in sentence):
        return [list(sentence)]
    return sentence


def explain_text(model: Model, text: str, *, forced: Mapping[int, str] | None = None,
                 allowed: Mapping[int, Iterable[str]] | None = None) -> dict:
    """`explain` for a segmentation model: the characters of ``text`` (one piece: whitespace is a word
    boundary `Segmenter.segment` decodes around, so a text with some is refused), BMES labels;
    ``forced``/``allowed``: as `constraint_mask` takes them, for this one piece."""
    if not isinstance(text, str):
        raise InputError(f"explain() takes a text (a string), not {type(text).__name__}")
    if any(c.isspace() for c in text):
        raise InputError("explain() takes one piece of text without whitespace (segmentation decodes "
                         "the pieces between whitespace apart)")
    corpus = char_corpus([text])
    return explain(model, corpus, sentence_mask(model, corpus, forced, allowed))


def sentence_mask(model: Model, corpus: Corpus, forced: Mapping[int, str] | None,
                  allowed: Mapping[int, Iterable[str]] | None) -> np.ndarray | None:
    """`constraint_mask` of the one sentence of ``corpus`` from its ``forced`` ({position: tag}) and ``allowed``
    ({position: tags}) tags; None when neither is given (`explain` then applies the tag dictionary)."""
    if forced is None and allowed is None:
        return None
    if len(corpus) != 1:
        raise InputError(f"explain() takes one sentence, not {len(corpus)}")
    return constraint_mask(model, corpus, forced=None if forced is None else [forced],
                           allowed=None if allowed is None else [allowed])


def explain(model: Model, corpus: Corpus, allowed: np.ndarray | None = None) -> dict:
    """The best path of the one sentence of ``corpus`` taken apart (see the module docstring).

    ``allowed`` (bool (n_tokens, L)) restricts the labels as in `decode`; by default the model's tag
    dictionary's, as ``predict`` does.

    Returns
    -------
    dict
        ``{"tokens": [...], "score": float, "end": float}``, each token
        ``{"token", "label", "model_label", "features": [(name, weight)], "from", "transition",
        "conditioned": [(name, weight)], "second_order", "runner_up", "margin"}``.
    """
    if model.voters:
        raise InputError("explain() takes one tagger's path apart: a voting model's tags are its members' vote "
                         "(trained with --vote), which no one set of weights scores")
    if len(corpus) != 1:
        raise InputError(f"explain() takes one sentence, not {len(corpus)}")
    L = len(model.labels)
    if allowed is None:
        allowed = constraint_mask(model, corpus)
    feats = featurize(model, corpus)
    T = int(feats.sent_ptr[-1])
    if T == 0:
        return {"tokens": [], "score": 0.0, "end": 0.0}
    ids = decode(model, feats, allowed).astype(np.int64)
    tags = data_tags(ids, feats.sent_ptr, model.labels, model.task)
    w = model.weights
    state = _state_scores(model, feats)
    trans = _transition_scores(model, feats)
    T2 = None if w.order2 is None else np.asarray(w.order2, dtype=np.float64)
    prev = np.concatenate([[L], ids[:-1]])
    before = np.concatenate([[L, L], ids[:-2]])[:T]
    tokens = corpus.columns[model.task.token_column] if model.task.token_column in corpus.columns \
        else [""] * T
    end = float(w.end[ids[-1]])
    score = 0.0
    out = []
    for t in range(T):
        y, p = int(ids[t]), int(prev[t])
        fired = _fired(model, feats, t, y)
        conditioned = _conditioned(model, feats, t, p, y)
        second = 0.0 if T2 is None else float(T2[before[t], p, y])
        transition = float(w.trans[p, y]) + sum(v for _, v in conditioned) + second
        part = 0.0
        for _, v in fired:
            part += v
        score += part + transition
        out.append({"token": str(tokens[t]), "label": tags[t], "model_label": model.labels[y],
                    "features": fired, "from": BOS if p == L else model.labels[p], "transition": transition,
                    "conditioned": conditioned, "second_order": second, "runner_up": None, "margin": None})
    score += end
    best = _max_marginals(state, trans, np.asarray(w.end, dtype=np.float64), T2, allowed)
    projection = label_projection(model.labels, model.task.model_scheme, model.task.scheme)
    for t, token in enumerate(out):
        rival, value = None, -np.inf
        for tag, labels in projection.items():
            if tag == token["label"]:
                continue
            v = float(best[t, labels].max())
            if v > value:
                rival, value = tag, v
        if rival is not None and np.isfinite(value):
            token["runner_up"], token["margin"] = rival, score - value
    return {"tokens": out, "score": score, "end": end}


def _row(model: Model, a: int) -> tuple[np.ndarray, np.ndarray]:
    """The labels and weights (float64) of state attribute ``a``."""
    sw = model.weights.sparse
    lo, hi = int(sw.ptr[a]), int(sw.ptr[a + 1])
    return sw.labels[lo:hi].astype(np.int64), sw.values[lo:hi].astype(np.float64)


def _value(feats: Features, t: int, k: int) -> float:
    return 1.0 if feats.values is None else float(feats.values[t, k])


def _fired(model: Model, feats: Features, t: int, y: int) -> list[tuple[str, float]]:
    """The attributes of token ``t`` with a non-zero weight for label ``y``, largest weight first."""
    found: list[tuple[int, float]] = []
    for k, a in enumerate(feats.state[t].tolist()):
        if a < 0:
            continue
        labels, values = _row(model, a)
        j = int(np.searchsorted(labels, y))
        if j < len(labels) and labels[j] == y and values[j] != 0:
            found.append((a, _value(feats, t, k) * float(values[j])))
    names = attribute_names(model.features, False, np.array([a for a, _ in found], dtype=np.int64))
    pairs = [(n, v) for n, (_, v) in zip(names, found)]
    return sorted(pairs, key=lambda nv: -nv[1])


def _conditioned(model: Model, feats: Features, t: int, p: int, y: int) -> list[tuple[str, float]]:
    """The transition-conditioned attributes of token ``t`` with a non-zero weight for (p, y)."""
    cond = model.weights.cond
    found = [(a, float(cond[a, p, y])) for a in feats.trans[t].tolist() if a >= 0 and cond[a, p, y] != 0]
    names = attribute_names(model.features, True, np.array([a for a, _ in found], dtype=np.int64))
    return [(n, v) for n, (_, v) in zip(names, found)]


def _state_scores(model: Model, feats: Features) -> np.ndarray:
    """(T, L) float64 state scores of the sentence's tokens."""
    T, L = int(feats.sent_ptr[-1]), len(model.labels)
    out = np.zeros((T, L))
    for t in range(T):
        for k, a in enumerate(feats.state[t].tolist()):
            if a >= 0:
                labels, values = _row(model, a)
                out[t, labels] += _value(feats, t, k) * values
    return out


def _transition_scores(model: Model, feats: Features) -> np.ndarray:
    """(T, L + 1, L) float64 transition scores per token: weights, the scheme's mask, conditioned ones."""
    w = model.weights
    base = np.asarray(w.trans, dtype=np.float64) + np.asarray(w.mask, dtype=np.float64)
    T = int(feats.sent_ptr[-1])
    out = np.repeat(base[None], T, axis=0)
    for t in range(T):
        for a in feats.trans[t].tolist():
            if a >= 0:
                out[t] += w.cond[a]
    return out


def _max_marginals(state: np.ndarray, trans: np.ndarray, end: np.ndarray, T2: np.ndarray | None,
                   allowed: np.ndarray | None) -> np.ndarray:
    """(T, L): the best score of a path with label y at t, for every (t, y) (-inf: none)."""
    T, L = state.shape
    state = state.copy()
    if allowed is not None:
        state[~np.asarray(allowed, dtype=bool)] = -np.inf
    with np.errstate(invalid="ignore"):
        if T2 is None:
            alpha = np.empty((T, L))
            beta = np.empty((T, L))
            alpha[0] = trans[0, L] + state[0]
            for t in range(1, T):
                alpha[t] = (alpha[t - 1][:, None] + trans[t, :L]).max(axis=0) + state[t]
            beta[T - 1] = end
            for t in range(T - 2, -1, -1):
                beta[t] = (trans[t + 1, :L] + (state[t + 1] + beta[t + 1])[None, :]).max(axis=1)
            return alpha + beta
        # pairs (y_{t-1}, y_t), y_{t-1} = L (<bos>) at t = 0 only
        A = np.full((T, L + 1, L), -np.inf)
        B = np.full((T, L + 1, L), -np.inf)
        A[0, L] = trans[0, L] + T2[L, L] + state[0]
        for t in range(1, T):
            # A[t, p, y] = max_q A[t-1, q, p] + T2[q, p, y] + trans[t, p, y] + state[t, y]
            A[t, :L] = (A[t - 1][:, :, None] + T2[:, :L, :]).max(axis=0) + trans[t, :L] + state[t][None, :]
        B[T - 1] = end[None, :]
        for t in range(T - 2, -1, -1):
            # B[t, p, y] = max_z T2[p, y, z] + trans[t+1, y, z] + state[t+1, z] + B[t+1, y, z]
            rest = trans[t + 1, :L] + state[t + 1][None, :] + B[t + 1, :L]      # (y, z)
            B[t] = (T2[:, :L, :] + rest[None, :, :]).max(axis=2)
        return np.nan_to_num((A + B).max(axis=1), nan=-np.inf)
