"""Dictionary columns learnt from the training data, jackknifed: the one mechanism behind the NER
gazetteer (`structperc.features.gazetteer`) and the segmentation lexicon
(`structperc.features.lexicon`).

A dictionary (entity strings, words) learnt from the training sentences writes token columns (``gaz``,
``lexb`` …) that templates read like any other. Matched against a dictionary that holds their own
entries, training sentences would always find the gold answer there, the model would trust the
columns blindly and fail on the unknown words of test data. So training sentences are split into
folds, and the sentences of each fold get their values from a dictionary learnt from the *other*
folds (jackknifing, as in stacked learners); the dictionary saved with the model, and used at tagging
time, is learnt from all of them.
"""
from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from structperc.io.corpus import Corpus


class ColumnDictionary(Protocol):
    """A learnt dictionary that writes token columns."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns it writes (templates that read none of them need no dictionary)."""

    def values(self, corpus: Corpus) -> dict[str, list[str]]:
        """The columns that depend on the dictionary's entries, one value per token of ``corpus``."""

    def annotate(self, corpus: Corpus, values: dict[str, list[str]] | None = None) -> Corpus:
        """``corpus`` with every column of the dictionary: ``values`` (jackknifed) or its own."""

    def to_json(self) -> Any:
        """What the model file keeps of it."""


class DictionaryLearner(Protocol):
    """Learns a `ColumnDictionary` from some sentences of one training corpus."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns its dictionaries write."""

    def learn(self, sentences: np.ndarray) -> ColumnDictionary:
        """The dictionary of the given sentences (indices into the training corpus, ascending)."""


def fold_assignment(n_sentences: int, folds: int, seed: int) -> tuple[int, np.ndarray]:
    """The number of folds used (at most one per sentence) and each sentence's fold; ``seed`` fixes
    the assignment, so the same data and seed give the same columns."""
    k = max(1, min(int(folds), n_sentences))
    return k, np.random.default_rng(seed).permutation(n_sentences) % k


def jackknifed(corpus: Corpus, learner: DictionaryLearner, folds: int,
               seed: int) -> tuple[Corpus, ColumnDictionary]:
    """``corpus`` with jackknifed dictionary columns, and the dictionary learnt from all of it.

    Each sentence of fold ``k`` gets the values of the dictionary learnt from every sentence outside
    fold ``k``; with one fold (``folds=1`` or a one-sentence corpus) every sentence gets the full
    dictionary's.
    """
    n = len(corpus)
    k, fold_of = fold_assignment(n, folds, seed)
    full = learner.learn(np.arange(n, dtype=np.int64))
    if k == 1:
        return full.annotate(corpus), full
    lengths = np.diff(corpus.sent_ptr)
    merged: dict[str, np.ndarray] = {}
    for fold in range(k):
        rows = np.flatnonzero(fold_of == fold)
        part = learner.learn(np.flatnonzero(fold_of != fold)).values(corpus.select(rows))
        # the tokens of the fold's sentences, in the order `select` lays them out
        lens = lengths[rows]
        starts = np.cumsum(lens) - lens
        tokens = np.repeat(corpus.sent_ptr[rows] - starts, lens) + np.arange(int(lens.sum()))
        for name, vals in part.items():
            out = merged.setdefault(name, np.empty(corpus.n_tokens, dtype=object))
            out[tokens] = vals
    return full.annotate(corpus, {name: v.tolist() for name, v in merged.items()}), full
