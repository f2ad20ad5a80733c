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

import functools
from typing import Any, Protocol

import numpy as np

from structperc.features.forking import forked_map
from structperc.io.corpus import Corpus, coded, compact


class ColumnDictionary(Protocol):
    """A learnt dictionary that writes token columns."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns it writes (templates that read none of them need no dictionary)."""

    def values(self, corpus: Corpus) -> dict[str, Any]:
        """The columns that depend on the dictionary's entries, one value per token of ``corpus``: a list, or
        ``(distinct, codes)`` as `Corpus.factorize` gives them."""

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        """``corpus`` with every column of the dictionary: ``values`` (jackknifed: lists, or
        ``(distinct, codes)``) or its own."""

    def to_json(self) -> Any:
        """What the model file keeps of it."""


class DictionaryLearner(Protocol):
    """Learns a `ColumnDictionary` from some sentences of one training corpus. A learner may set
    ``block``: how many consecutive sentences go to one jackknife fold (`fold_assignment`; default 1),
    and ``jackknife_values(corpus, fold_of, folds)``: every fold's columns at once, as `jackknifed`
    would compute them fold by fold (or None to let it), where one pass over shared statistics is
    cheaper than a dictionary per fold (`structperc.features.lexicon.LexiconLearner`)."""

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns its dictionaries write."""

    def learn(self, sentences: np.ndarray) -> ColumnDictionary:
        """The dictionary of the given sentences (indices into the training corpus, ascending)."""


class FixedLearner:
    """The `DictionaryLearner` of a dictionary made from unlabelled text (word clusters, frequency bands):
    it never reads the training tags, so every fold gets the same dictionary (nothing to jackknife)."""

    def __init__(self, dictionary: ColumnDictionary):
        self.dictionary = dictionary

    @property
    def columns(self) -> tuple[str, ...]:
        return self.dictionary.columns

    def learn(self, sentences: np.ndarray) -> ColumnDictionary:
        return self.dictionary


def word_columns(corpus: Corpus, word: str, lookups: dict[str, Any]) -> dict[str, tuple[list[str], np.ndarray]]:
    """Columns whose value depends on the word alone, as ``(distinct, codes)`` (`Corpus.with_column`): each
    ``lookups[name]`` maps a word to its value and runs once per distinct word of column ``word``; no
    string per token is made (a resource's columns of a large corpus, `structperc.features.resources`)."""
    distinct, codes = corpus.factorize(word)
    out = {}
    for name, lookup in lookups.items():
        ids: dict[str, int] = {}
        of_word = np.fromiter((ids.setdefault(lookup(w), len(ids)) for w in distinct), dtype=np.int64,
                              count=len(distinct))
        # the words come in order of first occurrence, so their values are numbered in that order too
        out[name] = (list(ids), of_word[codes])
    return out


def with_columns(corpus: Corpus, values: dict[str, Any], names: tuple[str, ...]) -> Corpus:
    """``corpus`` with the columns ``names`` of ``values`` (lists, or ``(distinct, codes)``): what a
    dictionary's `annotate` writes."""
    for name in names:
        corpus = corpus.with_column(name, values[name])
    return corpus


def fold_assignment(n_sentences: int, folds: int, seed: int, block: int = 1) -> tuple[int, np.ndarray]:
    """The number of folds used (at most one per block) and each sentence's fold; ``seed`` fixes
    the assignment, so the same data and seed give the same columns. ``block`` > 1 puts runs of that
    many consecutive sentences into one fold (the blocks spread over the folds at random): sentences
    of one article share their entities, and with sentence-wise folds a training sentence finds its
    own entities through its neighbours in the other folds, which test sentences (new articles) do
    not (esp.train: 74 % of entity tokens covered against 60 % on esp.testa; 200-sentence blocks 64 %).
    A corpus of fewer than ``block × folds`` sentences keeps sentence-wise folds (``block=1``: the
    assignment as before blocks existed)."""
    block = int(block) if n_sentences >= int(block) * int(folds) else 1
    n_blocks = -(-n_sentences // block)
    k = max(1, min(int(folds), n_blocks))
    fold_of_block = np.random.default_rng(seed).permutation(n_blocks) % k
    return k, fold_of_block[np.arange(n_sentences) // block] if block > 1 else fold_of_block


def _fold_values(fold: int, learner: Any, corpus: Corpus, fold_of: np.ndarray) \
        -> dict[str, tuple[list[str], np.ndarray]]:
    """One fold's values: the dictionary of the other folds' sentences on the fold's sentences, each
    column as ``(distinct, codes)`` (what travels back from a forked worker: a few values and an
    integer array, not a string per token)."""
    rows = np.flatnonzero(fold_of == fold)
    values = learner.learn(np.flatnonzero(fold_of != fold)).values(corpus.select(rows))
    out = {}
    for name, column in values.items():
        out[name] = column if isinstance(column, tuple) else coded(column)  # coded already, or now
    return out


def jackknifed(corpus: Corpus, learner: DictionaryLearner, folds: int,
               seed: int, workers: int = 1) -> tuple[Corpus, ColumnDictionary]:
    """``corpus`` with jackknifed dictionary columns, and the dictionary learnt from all of it.

    Each sentence of fold ``k`` gets the values of the dictionary learnt from every sentence outside
    fold ``k``; with one fold (``folds=1`` or a one-sentence corpus) every sentence gets the full
    dictionary's. A learner with a ``block`` attribute has its folds made of that many consecutive
    sentences (`fold_assignment`). ``workers`` > 1 computes the folds in that many forked processes
    (parameter mixing's ``--workers``): the same values, as each fold's depend on the data alone,
    unless the learner computes all folds at once (``jackknife_values``). The columns are kept as
    codes (`Corpus.with_column`).
    """
    n = len(corpus)
    k, fold_of = fold_assignment(n, folds, seed, getattr(learner, "block", 1))
    full = learner.learn(np.arange(n, dtype=np.int64))
    varying, fixed_parts = _split_fixed(learner)
    if k == 1 or varying is None:
        return full.annotate(corpus), full
    # a fixed dictionary (clusters, a language resource) gives every fold the same values: they are
    # computed once, on the whole corpus, and only the dictionaries learnt from the tags go fold by fold
    fixed: dict[str, Any] = {}
    for fixed_learner in fixed_parts:
        fixed.update(fixed_learner.dictionary.values(corpus))
    at_once = getattr(varying, "jackknife_values", None)
    values = at_once(corpus, fold_of, k) if at_once is not None else None
    if values is not None:  # every fold in one pass: the values the folds below would compute
        return full.annotate(corpus, {**values, **fixed}), full
    lengths = np.diff(corpus.sent_ptr)
    merged: dict[str, tuple[dict[str, int], np.ndarray]] = {}
    # forked workers inherit the learner and corpus; only each fold's codes come back
    parts = forked_map(lambda fold: _fold_values(fold, varying, corpus, fold_of), range(k), workers)
    for fold, part in enumerate(parts):
        rows = np.flatnonzero(fold_of == fold)
        # the tokens of the fold's sentences, in the order `select` lays them out
        lens = lengths[rows]
        starts = np.cumsum(lens) - lens
        tokens = np.repeat(corpus.sent_ptr[rows] - starts, lens) + np.arange(int(lens.sum()))
        for name, (distinct, codes) in part.items():
            ids, out = merged.setdefault(name, ({}, np.empty(corpus.n_tokens, dtype=np.int64)))
            remap = np.fromiter((ids.setdefault(v, len(ids)) for v in distinct), dtype=np.int64, count=len(distinct))
            out[tokens] = remap[codes]
    values = {name: compact(list(ids), codes) for name, (ids, codes) in merged.items()}
    return full.annotate(corpus, {**values, **fixed}), full


def _split_fixed(learner: DictionaryLearner) -> tuple[DictionaryLearner | None, list[FixedLearner]]:
    """``learner`` as the part that reads the training tags, which jackknifing is for (None: there is none),
    and its `FixedLearner` s."""
    if isinstance(learner, FixedLearner):
        return None, [learner]
    if isinstance(learner, Learners):
        fixed = [lr for lr in learner.learners if isinstance(lr, FixedLearner)]
        if fixed:
            return combined([lr for lr in learner.learners if not isinstance(lr, FixedLearner)]), fixed
    return learner, []


class Dictionaries:
    """Several learnt dictionaries as one `ColumnDictionary` (a POS model's ambiguity classes and word
    clusters; an NER model's gazetteer and clusters): each writes its own columns.

    Parts that match word lists over the characters (a segmenter's lexicon and a language's dictionary: each
    has ``word_source``) are matched together, in one walk over the text
    (`structperc.features.lexicon_match.LexiconMatcher.of_sources`): the same columns as each part's own. Their
    shared table is built at the first call, which pays for a model's dictionaries (every call walks once), not
    for a copy made for one call (a soft user dictionary, `structperc.segmenter.Segmenter.segment`): such a
    copy is made with ``together=False`` and its parts match apart, each with its own table (a part it
    shares with the model keeps its table from call to call)."""

    def __init__(self, parts: list[ColumnDictionary], together: bool = True):
        self.parts = list(parts)
        self.together = together

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for p in self.parts for c in p.columns)

    def values(self, corpus: Corpus) -> dict[str, Any]:
        out: dict[str, Any] = dict(self._matched_together(corpus) or {})
        for p in self.parts:
            if not set(p.columns) <= out.keys():
                out.update(p.values(corpus))
        return out

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        given = values is not None
        found = values if values is not None else self._matched_together(corpus) or {}
        for p in self.parts:
            mine = {k: v for k, v in found.items() if k in p.columns}
            corpus = p.annotate(corpus, mine if given or set(p.columns) <= mine.keys() else None)
        return corpus

    def _matched_together(self, corpus: Corpus) -> dict[str, Any] | None:
        """The columns of the parts with a ``word_source``, from one walk over ``corpus``'s characters; None when
        fewer than two parts have one, or when some token is longer than a character (each part then writes
        its own)."""
        together = self._together
        if together is None:
            return None
        matcher, names, max_value = together
        return matcher.columns(corpus, max_value=max_value, names=names)

    @functools.cached_property
    def _together(self) -> tuple[Any, list[str], int] | None:
        """The table of every part's words that has a ``word_source`` (a bit of the mask each), their column
        names in order, and the longest length the columns write; None for fewer than two such parts, or
        when the parts match apart (``together=False``)."""
        if not self.together:
            return None
        sources = []
        for p in self.parts:
            word_source = getattr(p, "word_source", None)
            source = word_source() if callable(word_source) else None
            if source is not None:
                sources.append((p, source))
        if len(sources) < 2:
            return None
        from structperc.features.lexicon import MAX_VALUE
        from structperc.features.lexicon_match import LexiconMatcher

        matcher = LexiconMatcher.of_sources([source for _, source in sources])
        return matcher, [c for p, _ in sources for c in p.columns], MAX_VALUE

    def to_json(self) -> Any:
        return [p.to_json() for p in self.parts]


class Learners:
    """Several `DictionaryLearner` s as one: learns a `Dictionaries` of their dictionaries, in folds of
    the largest ``block`` among them."""

    def __init__(self, learners: list[DictionaryLearner]):
        self.learners = list(learners)
        self.block = max(getattr(lr, "block", 1) for lr in self.learners)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(c for lr in self.learners for c in lr.columns)

    def learn(self, sentences: np.ndarray) -> Dictionaries:
        return Dictionaries([lr.learn(sentences) for lr in self.learners])


def combined(learners: list[DictionaryLearner]) -> DictionaryLearner | None:
    """None, the one learner, or `Learners` of several."""
    return None if not learners else learners[0] if len(learners) == 1 else Learners(learners)


def parts(dictionary: ColumnDictionary | None) -> list[ColumnDictionary]:
    """The dictionaries a model's dictionary is made of (`Dictionaries`, or one, or none)."""
    if dictionary is None:
        return []
    return list(dictionary.parts) if isinstance(dictionary, Dictionaries) else [dictionary]

