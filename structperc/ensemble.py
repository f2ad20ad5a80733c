"""Seed averaging: several averaged perceptrons trained on the same features, one set of weights.

Each member sees the training sentences in a different order (its ``seed``); everything else — the
corpus, the jackknifed gazetteer folds, the feature tables, the labels — is shared, so the members'
weight matrices line up attribute for attribute and their mean is an ordinary model: the same size,
the same decoding speed, saved and loaded like any other. Averaging linear scorers averages their
scores, so the mean model is the (score-averaging) ensemble of its members.

Measured on CoNLL-2002 Spanish (``ner`` preset, 8 epochs, esp.testa entity F1): eight members that
differ only in their seed score 77.42–78.40 (mean 77.90); the average of the first 2, 4 and 8 of them
scores 78.05, 77.91 and 78.01. Averaging removes the seed lottery rather than adding accuracy, so the
``ner`` task does not use it by default; it costs one training per member.

Usage::

    from structperc.ensemble import train_seed_average
    tagger = train_seed_average("esp.train", task="ner", epochs=9, seeds=(0, 1, 2, 3))
    tagger.save("ner/")     # one model; `Tagger.load` needs nothing from this module
"""
from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from structperc.features import FeatureIndex, Features
from structperc.model import Weights
from structperc.state_weights import StateWeights, feature_set
from structperc.tagger import Tagger
from structperc.templates import optional_columns_dropped, parse_templates
from structperc.trainer import PerceptronState, train_perceptron


def average_weights(members: Sequence[Weights]) -> Weights:
    """The mean of weights that share attributes and labels (same shapes, same mask)."""
    if not members:
        raise ValueError("no weights to average")
    first = members[0]
    for w in members[1:]:
        if w.sparse.shape != first.sparse.shape or w.cond.shape != first.cond.shape \
                or w.trans.shape != first.trans.shape:
            raise ValueError("members have different attributes or labels; train them on the same "
                             "features")
    n = float(len(members))

    def mean(arrays: list[np.ndarray]) -> np.ndarray:
        out = np.zeros(arrays[0].shape, dtype=np.float64)
        for a in arrays:
            out += a
        return (out / n).astype(np.float32)
    if all(w.sparse.same_pairs(first.sparse) for w in members[1:]):
        state = first.sparse.with_values(mean([w.sparse.values for w in members]))
    else:  # feature sets differ (members saved without their zero weights): average densely
        state = StateWeights.from_dense(mean([w.sparse.to_dense() for w in members]))
    return Weights(state, mean([w.trans for w in members]), mean([w.cond for w in members]),
                   first.mask, first.end)


def _training_features(tagger: Tagger, X: Any, y: Any) -> tuple[Features, np.ndarray]:
    """Rebuild exactly the training features and label ids that ``tagger.fit(X, y)`` used.

    ``fit`` keeps neither (they are large); the rebuild repeats its steps with the fitted tagger's
    own settings (gazetteer folds from its seed, its templates) and checks that the attribute tables
    come out identical.
    """
    from structperc.gazetteer import jackknifed

    task = tagger.task_
    corpus = tagger._corpus(X, y, need_tags=True, task=task)
    if "gazetteer" in getattr(tagger, "extra_", {}):
        corpus, _ = jackknifed(corpus, task.inputs[0], task.tag_column, task.scheme, 10, tagger.seed)
    lines = optional_columns_dropped(tagger.template_lines_, set(corpus.columns))
    index = FeatureIndex(parse_templates(lines), tagger.min_count)
    feats = index.fit_transform(corpus)
    same = len(index.keys) == len(tagger.features_.keys) and all(
        np.array_equal(a, b) for a, b in zip(index.keys, tagger.features_.keys))
    if not same:
        raise RuntimeError("rebuilt training features differ from the fitted tagger's")
    tags = tagger._to_model_scheme(corpus.columns[task.tag_column], corpus.sent_ptr, task)
    return feats, tagger.label_set_.encode(tags)


def member_weights(tagger: Tagger, X: Any, y: Any = None, *, seeds: Sequence[int],
                   epochs: Sequence[int]) -> Iterator[tuple[int, int, Weights]]:
    """Train one member per seed on ``tagger``'s training features and yield ``(seed, epoch,
    averaged weights)`` after each of the given epochs (one run per seed, continued epoch to epoch:
    the weights after epoch e are those of an e-epoch run). For choosing the number of epochs and
    of members on a development set."""
    feats, labels = _training_features(tagger, X, y)
    mask, end = tagger._masks()
    n_labels = len(tagger.labels_)
    pairs = feature_set(getattr(tagger, "feature_set", "all"), feats.state, labels,
                        tagger.features_.n_state_attributes, n_labels)
    for seed in seeds:
        state = PerceptronState.zeros(tagger.features_.n_state_attributes,
                                      tagger.features_.n_transition_attributes, n_labels, pairs)
        for e in sorted(epochs):
            weights, _ = train_perceptron(feats, labels, state, mask=mask, end=end, epochs=e, seed=seed)
            yield seed, e, weights


def train_seed_average(X: Any, y: Any = None, *, seeds: Sequence[int] = (0, 1, 2, 3),
                       **params) -> Tagger:
    """A `Tagger` whose weights are the mean of ``len(seeds)`` taggers trained with these seeds.

    ``params`` are `Tagger`'s (``task``, ``template``, ``epochs``, …; not ``seed`` or ``dev``: the
    number of epochs and of members are chosen beforehand on a development set). The first seed
    fixes what a single tagger's seed fixes besides the order (the gazetteer folds) and is the seed
    recorded in the model; the provenance lists all of them.
    """
    seeds = [int(s) for s in seeds]
    if not seeds:
        raise ValueError("give at least one seed")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    if "seed" in params or "dev" in params:
        raise TypeError("train_seed_average takes seeds=…, and no dev set")
    tagger = Tagger(seed=seeds[0], **params).fit(X, y)
    if len(seeds) > 1:
        epochs = tagger.provenance_["epochs"]
        members = [tagger.weights_] + [w for _, _, w in member_weights(tagger, X, y, seeds=seeds[1:],
                                                                       epochs=[epochs])]
        tagger.weights_ = average_weights(members)
    tagger.provenance_["seeds"] = seeds
    return tagger
