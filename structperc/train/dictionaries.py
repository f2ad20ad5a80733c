"""The dictionaries a training run learns from its corpus before featurizing it: NER's gazetteer,
ambiguity classes, word clusters (`dictionary_learner`, `learnt_dictionary`, jackknifed where the
templates read them so that the training data's columns are as noisy as at tagging time), and the
tag dictionary applied when decoding (`learnt_tag_dictionary`).

Split from `structperc.train.run`, which re-exports them (the estimators call them from there): the
run orchestrates training, these only prepare its inputs.
"""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.ambiguity import AmbiguityClasses, AmbiguityLearner
from structperc.features.clusters import DEFAULT_COLUMNS as CLUSTER_COLUMNS
from structperc.features.clusters import ClusterLearner, ClusterMap, read_paths
from structperc.features.dictionary import ColumnDictionary, DictionaryLearner, FixedLearner, combined, jackknifed
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.gazetteer import GAZ_COLUMN, Gazetteer, GazetteerLearner
from structperc.features.instances import model_tags, template_columns
from structperc.features.resources.bands import WordBands
from structperc.features.resources.case_evidence import CaseEvidence
from structperc.features.resources.lemmas import LemmaClasses
from structperc.features.tagdict import TagDictionary
from structperc.features.task import Task
from structperc.io.corpus import Corpus
from structperc.labels import LabelSet


def dictionary_learner(corpus: Corpus, task: Task, template_lines: list[str], base: ColumnDictionary | None,
                       unknown_tag: str | None = "?", clusters: str | os.PathLike | ClusterMap | None = None,
                       resources: Sequence[ColumnDictionary] = ()) -> DictionaryLearner | None:
    """The learner of a tagger's dictionaries, each when its templates read its columns (or, when
    training continues, when the model ``base`` has one): NER's gazetteer, the ambiguity classes
    (``amb``, ``lamb``), word clusters from the ``clusters`` file or map (``clu*``), and the other
    tables of a language resource, ``resources`` (frequency bands, ``frq``; capitalisation, ``cap``); several
    at once are one `Learners`."""
    reads = template_columns(template_lines)
    old = dictionary_parts(base)
    learners: list[DictionaryLearner] = []
    gazetteer = next((p for p in old if isinstance(p, Gazetteer)), None)
    if gazetteer is not None or (base is None and task.gazetteer and GAZ_COLUMN in reads):
        learners.append(GazetteerLearner(corpus, task.token_column, task.tag_column, task.scheme, gazetteer,
                                         columns=reads))
    classes = next((p for p in old if isinstance(p, AmbiguityClasses)), None)
    if classes is not None or (base is None and set(AmbiguityClasses.columns) & reads):
        learners.append(AmbiguityLearner(corpus, task.token_column, task.tag_column, unknown_tag, classes))
    cluster_map = next((p for p in old if isinstance(p, ClusterMap)), None)
    if clusters is not None and base is None and not set(CLUSTER_COLUMNS) & reads:
        raise InputError(f"the templates read no word cluster column ({', '.join(CLUSTER_COLUMNS)}): the clusters "
                         "(--clusters) would only be stored; give template lines that read them (clu4[0], clu6[-1], …)")
    if cluster_map is None and clusters is not None:
        cluster_map = clusters if isinstance(clusters, ClusterMap) else read_paths(clusters, word=task.token_column)
    elif clusters is None and base is None and set(CLUSTER_COLUMNS) & reads:
        raise InputError(f"the templates read word clusters ({', '.join(sorted(set(CLUSTER_COLUMNS) & reads))}): "
                         "give a clusters file (--clusters FILE; 'structperc clusters' makes one)")
    if cluster_map is not None:
        learners.append(ClusterLearner(cluster_map))
    kept: list[ColumnDictionary] = resource_tables(base) or list(resources)
    learners.extend(FixedLearner(p) for p in kept)
    return combined(learners)


def resource_tables(dictionary: ColumnDictionary | None) -> list[ColumnDictionary]:
    """The language-resource tables besides the clusters (frequency bands, lexicon classes) that a fitted
    model's ``dictionary`` holds: fixed tables, given as they are to a run that rebuilds or continues it."""
    return [p for p in dictionary_parts(dictionary) if isinstance(p, (WordBands, CaseEvidence, LemmaClasses))]


def learnt_dictionary(corpus: Corpus, learner: DictionaryLearner | None, template_lines: list[str],
                      folds: int, seed: int, scale: dict | None = None) -> tuple[Corpus, ColumnDictionary | None]:
    """The dictionary ``learner`` learns from ``corpus``, and ``corpus`` with its columns jackknifed
    in when the templates read them (see `structperc.features.dictionary`); the folds in ``scale``'s
    ``workers`` processes (the same columns)."""
    if learner is None:
        return corpus, None
    if set(learner.columns) & template_columns(template_lines):
        return jackknifed(corpus, learner, folds, seed, int((scale or {}).get("workers") or 1))
    return corpus, learner.learn(np.arange(len(corpus)))


def learnt_tag_dictionary(corpus: Corpus, task: Task, params: dict) -> TagDictionary | None:
    """With ``params["tag_dictionary"]``, the tags seen with each frequent word of ``corpus`` (model
    scheme; unknown tags of partially labelled data are left out), applied when decoding."""
    if not params.get("tag_dictionary"):
        return None
    tags = model_tags(corpus, task)
    labels = sorted(set(tags) - {params.get("unknown_tag", "?")})
    ids = LabelSet(labels).encode(tags, unknown=-1)
    return TagDictionary.learn(corpus.columns[task.token_column], ids, labels)
