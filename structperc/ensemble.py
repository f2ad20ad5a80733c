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

from typing import Any, Iterator, Sequence, cast

import numpy as np

from structperc.errors import InputError
from structperc.features.clusters import ClusterMap
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.index import FeatureIndex
from structperc.features.instances import Instances, training_instances
from structperc.io.inputs import to_corpus
from structperc.model.weights import Weights
from structperc.tagger import Callback, Tagger
from structperc.train import run as fitting
from structperc.train.config import validate
from structperc.train.dictionaries import resource_tables
from structperc.train.ensemble import average_weights
from structperc.train.run import Progress

__all__ = ["average_weights", "member_weights", "train_seed_average"]


def _training_instances(tagger: Tagger, X: Any, y: Any) -> Instances:
    """Rebuild exactly the training instances that ``tagger.fit(X, y)`` used.

    ``fit`` keeps neither features nor label ids (they are large); the rebuild goes through the same
    pipeline with the fitted tagger's own settings (dictionary folds from its seed, its templates)
    and checks that the attribute tables come out identical.
    """
    task = tagger.task_
    corpus = to_corpus(X, y, task, need_tags=True, reads=tagger.reads(gold=True),
                       token_columns=set(tagger.features_.columns),
                       dataset_columns=tagger.dataset_columns_)
    # the dictionary columns, learnt and jackknifed as fit did them (same folds, same seed; the same clusters)
    clusters = next((p for p in dictionary_parts(tagger.dictionary_) if isinstance(p, ClusterMap)), None)
    learner = fitting.dictionary_learner(corpus, task, tagger.template_lines_, None, tagger.unknown_tag, clusters,
                                         resource_tables(tagger.dictionary_))
    corpus, _ = fitting.learnt_dictionary(corpus, learner, tagger.template_lines_, tagger.folds, tagger.seed)
    index, _, labels, data = training_instances(corpus, task, tagger.template_lines_, tagger.min_count,
                                                tagger.unknown_tag)
    fitted = cast(FeatureIndex, tagger.features_)  # a Tagger's own fit (an AttributeIndex is sklearn's)
    same = labels.labels == tagger.labels_ and len(index.keys) == len(fitted.keys) and all(
        np.array_equal(a, b) for a, b in zip(index.keys, fitted.keys))
    if not same:
        raise RuntimeError("rebuilt training features differ from the fitted tagger's")
    return data


def member_weights(tagger: Tagger, X: Any, y: Any = None, *, seeds: Sequence[int], epochs: Sequence[int],
                   callback: Callback | None = None, progress: Progress | None = None) \
        -> Iterator[tuple[int, int, Weights]]:
    """Train one member per seed on ``tagger``'s training features and yield ``(seed, epoch,
    averaged weights)`` after each of the given epochs (one run per seed, continued epoch to epoch:
    the weights after epoch e are those of an e-epoch run), with the tagger's update (``margin``, ``step``,
    ``C``) and partial labels, as its own fit trained; ``callback`` and ``progress`` report its epochs as
    `Tagger.fit`'s do. For choosing the number of epochs and of members on a development set."""
    tagger.weights_.check_first_order("members trained here")  # the members are trained first-order
    if tagger.stage1_ is not None:  # a second stage alone would read another first stage's column
        raise InputError("member_weights trains one-stage members: average a two-stage tagger with "
                         "train_seed_average")
    data = _training_instances(tagger, X, y)
    yield from fitting.seed_members(fitting.trained_fields(tagger.model_), data, seeds, epochs, callback, progress)


def train_seed_average(X: Any, y: Any = None, *, seeds: Sequence[int] = (0, 1, 2, 3),
                       fit_params: dict[str, Any] | None = None, **params) -> Tagger:
    """A `Tagger` whose weights are the mean of ``len(seeds)`` taggers trained with these seeds.

    ``params`` are `Tagger`'s (``task``, ``template``, ``epochs``, …; not ``seed`` or ``dev``: the
    number of epochs and of members are chosen beforehand on a development set, or ``dev_split`` lets the
    first seed pick the epochs on its held-out part, and every member trains that many); ``fit_params`` go
    to the first member's ``fit`` (``callback``, ``progress``, a dataset's ``tokens``/``tags``). The first
    seed fixes what a single tagger's seed fixes besides the order (the gazetteer folds) and is the seed
    recorded in the model; the provenance lists all of them (``structperc train --seeds``).
    """
    if "seed" in params or "dev" in params:  # the signature's: seeds= stands for seed, and no dev set
        raise TypeError("train_seed_average takes seeds=…, and no dev set")
    seeds = [int(s) for s in seeds]
    validate({**params, "seeds": seeds})
    tagger = Tagger(seed=seeds[0], **params).fit(X, y, seeds=seeds, **(fit_params or {}))
    tagger.provenance_["seeds"] = seeds
    return tagger
