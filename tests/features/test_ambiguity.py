"""Ambiguity classes (`structperc.features.ambiguity`): the tags each frequent word was seen with, as
token columns, learnt by hand-checkable rules and jackknifed by the one dictionary mechanism."""
from __future__ import annotations

import numpy as np

from structperc.features.ambiguity import AmbiguityClasses, AmbiguityLearner
from structperc.features.dictionary import jackknifed
from structperc.io.corpus import Corpus

WORDS = [["as", "the", "dog", "ran"], ["As", "the", "cat", "sat"], ["as", "a", "dog", "?x"]]
TAGS = [["ADP", "DET", "NOUN", "VERB"], ["SCONJ", "DET", "NOUN", "VERB"], ["SCONJ", "DET", "?", "X"]]


def corpus() -> Corpus:
    return Corpus.from_sentences(WORDS, TAGS, tag_column="upos")


def test_classes_by_hand():
    learnt = AmbiguityLearner(corpus(), "word", "upos").learn(np.arange(3))
    # seen twice or more: "as" (ADP, SCONJ), "the" (DET); "dog" twice but once with an unknown tag
    assert learnt.table == {"as": "ADP_SCONJ", "the": "DET"}
    # lowercased: "as" three times (ADP, SCONJ, SCONJ)
    assert learnt.lower == {"as": "ADP_SCONJ", "the": "DET"}
    values = learnt.values(Corpus.from_sentences([["As", "the", "zebra", "the"]]))
    # each column as its distinct values (in order of first occurrence) and one code per token
    amb, lamb = values["amb"], values["lamb"]
    assert amb[0] == ["?", "DET"] and amb[1].tolist() == [0, 1, 0, 1]
    assert lamb[0] == ["ADP_SCONJ", "DET", "?"] and lamb[1].tolist() == [0, 1, 2, 1]


def test_jackknifed_sentences_get_the_classes_of_the_other_folds():
    from structperc.features.dictionary import fold_assignment

    words = [["w"], ["w"], ["w"], ["v"], ["v"], ["v"], ["w"], ["v"]]
    tags = [["A"], ["A"], ["B"], ["B"], ["B"], ["C"], ["A"], ["B"]]
    c = Corpus.from_sentences(words, tags, tag_column="upos")
    out, full = jackknifed(c, AmbiguityLearner(c, "word", "upos"), folds=2, seed=3)
    assert full.table == {"w": "A_B", "v": "B_C"}
    _, fold = fold_assignment(8, 2, 3)
    for i in range(8):  # by hand: the tags of the same word in the other fold, if seen twice there
        others = [tags[j][0] for j in range(8) if fold[j] != fold[i] and words[j] == words[i]]
        expected = "_".join(sorted(set(others))) if len(others) >= 2 else "?"
        assert out.columns["amb"][i] == expected, (i, fold.tolist())


def test_json_round_trip_and_continued_training_union():
    learnt = AmbiguityLearner(corpus(), "word", "upos").learn(np.arange(3))
    again = AmbiguityClasses.from_json(learnt.to_json(), word="word")
    assert again.table == learnt.table and again.lower == learnt.lower
    base = AmbiguityClasses({"the": "PRON"}, {"the": "PRON"})
    grown = AmbiguityLearner(corpus(), "word", "upos", base=base).learn(np.arange(3))
    assert grown.table["the"] == "DET_PRON" and grown.table["as"] == "ADP_SCONJ"


def test_folds_computed_in_worker_processes_give_the_same_columns():
    """``jackknifed(..., workers=2)`` (training with ``--workers 2``) forks the folds out: the same values."""
    import random

    rng = random.Random(0)
    words = [[rng.choice("abcdefgh") for _ in range(rng.randint(1, 6))] for _ in range(120)]
    tags = [[rng.choice(["X", "Y", "Z"]) for _ in s] for s in words]
    c = Corpus.from_sentences(words, tags, tag_column="upos")
    one, full_one = jackknifed(c, AmbiguityLearner(c, "word", "upos"), folds=5, seed=1)
    two, full_two = jackknifed(c, AmbiguityLearner(c, "word", "upos"), folds=5, seed=1, workers=2)
    assert one.columns["amb"] == two.columns["amb"] and one.columns["lamb"] == two.columns["lamb"]
    assert full_one.table == full_two.table
    assert set(one.columns["amb"]) - {"?"}  # the columns hold classes: the comparison is not of blanks


def test_fixed_dictionaries_beside_learnt_ones_are_looked_up_once_with_the_same_columns():
    """A fixed dictionary (clusters, a language resource) gives every fold the same values: `jackknifed`
    computes its columns once, on the whole corpus, while the learnt classes still go fold by fold."""
    from structperc.features.clusters import ClusterMap
    from structperc.features.dictionary import FixedLearner, Learners

    words = [["w"], ["w"], ["w"], ["v"], ["v"], ["v"], ["w"], ["v"]]
    tags = [["A"], ["A"], ["B"], ["B"], ["B"], ["C"], ["A"], ["B"]]
    c = Corpus.from_sentences(words, tags, tag_column="upos")
    calls = []

    class Counted(ClusterMap):
        def values(self, corpus):
            calls.append(len(corpus))
            return super().values(corpus)

    clusters = Counted({"w": "0110", "v": "1"})
    out, full = jackknifed(c, Learners([AmbiguityLearner(c, "word", "upos"), FixedLearner(clusters)]), folds=2,
                           seed=3)
    alone, _ = jackknifed(c, AmbiguityLearner(c, "word", "upos"), folds=2, seed=3)
    assert calls == [8]  # once, on all eight sentences: not once per fold
    assert out.columns["amb"] == alone.columns["amb"]
    assert list(out.columns["clu"]) == [clusters.path(s[0]) for s in words]
    assert [p.__class__ for p in full.parts] == [AmbiguityClasses, Counted]
    calls.clear()
    only, _ = jackknifed(c, FixedLearner(clusters), folds=2, seed=3)  # nothing learnt: no folds at all
    assert calls == [8] and list(only.columns["clu4"]) == list(out.columns["clu4"])
