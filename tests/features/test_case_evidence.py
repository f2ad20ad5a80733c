"""Capitalisation evidence (`structperc.features.resources.case_evidence`): the classes by hand, the stored
table against the classes computed on the whole probability table, and the model round trip."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.features.resources.case_evidence import CASE_COLUMN, CaseEvidence, case_class
from structperc.features.templates import CASE_LINES, LANGUAGE_LINES, language_lines
from structperc.io.corpus import Corpus

LP = {"Gulf": -12.9, "gulf": -13.5, "Housing": -13.8, "housing": -11.1, "iPod": -12.2, "ipod": -13.1,
      "Ipod": -14.9, "CPA": -13.9, "cpa": -16.8, "Zara": -15.0, "madeup": -17.0, "3d": -15.0}


@pytest.mark.parametrize("word, expected", [
    ("Gulf", "cT1"),        # -12.9 - -13.5 = 0.6: capitalised a little more often
    ("gulf", "lT1"),        # a lowercase word reads its capitalised form's difference, marked l
    ("Housing", "cL2"),     # -13.8 - -11.1 = -2.7
    ("housing", "lL2"),
    ("iPod", "cT1"),        # any capital compares the word as written with its lowercase form
    ("ipod", "lL2"),        # "Ipod" -14.9 against "ipod" -13.1: the first letter capitalised only
    ("CPA", "cT2"),         # -13.9 - -16.8 = 2.9
    ("Zara", "ccaponly"),   # no "zara"
    ("zara", "lcaponly"),
    ("madeup", "llowonly"),  # no "Madeup"
    ("Madeup", "clowonly"),
    ("Nowhere", "cunk"), ("nowhere", "lunk"),
    ("42", "na"), ("...", "na"), ("3d", "na"),  # no case in the first character
    ("3D", "clowonly"),     # a capital elsewhere: compared with "3d"
])
def test_case_class_hand_cases(word, expected):
    assert case_class(word, LP) == expected


@pytest.mark.parametrize("diff, cls", [(-3.01, "L3"), (-3.0, "L2"), (-1.51, "L2"), (-1.5, "L1"), (-0.51, "L1"),
                                       (-0.5, "eq"), (0.49, "eq"), (0.5, "T1"), (1.49, "T1"), (1.5, "T2"),
                                       (2.99, "T2"), (3.0, "T3"), (9.0, "T3")])
def test_class_bounds(diff, cls):
    assert case_class("Word", {"Word": -10.0 + diff, "word": -10.0}) == "c" + cls


def test_the_table_gives_every_word_its_class():
    table = CaseEvidence.from_log_probs(LP, min_log_prob=-math.inf)
    for word in [*LP, "Nowhere", "nowhere", "NOWHERE", "ZARA", "zara", "Madeup", "MADEUP", "3D", "42", "x"]:
        assert table.value(word) == case_class(word, LP), word
    assert "nowhere" not in table.classes and "Madeup" not in table.classes  # their class follows from the rest


def test_the_floor_leaves_rare_words_out():
    table = CaseEvidence.from_log_probs(LP, min_log_prob=-14.0)
    kept = {w: p for w, p in LP.items() if p >= -14.0}
    assert "cpa" not in table.classes and table.value("CPA") == case_class("CPA", kept) == "ccaponly"


WORDS = st.text(alphabet="aAbB1", min_size=1, max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(WORDS, st.floats(-20.0, 0.0), max_size=12), st.lists(WORDS, max_size=12),
       st.floats(-21.0, 0.0))
def test_stored_classes_agree_with_the_whole_table(log_probs, words, floor):
    """Whatever the table and the floor: the stored classes and the fallback give `case_class` on the words of
    the table at or above the floor, for every word (in the table or not)."""
    table = CaseEvidence.from_log_probs(log_probs, min_log_prob=floor)
    kept = {w: p for w, p in log_probs.items() if p >= floor}
    for word in [*log_probs, *words, *(w.upper() for w in words), *(w.lower() for w in words)]:
        assert table.value(word) == case_class(word, kept)


def test_round_trip_through_json_and_arrays():
    table = CaseEvidence.from_log_probs(LP, min_log_prob=-math.inf, resource={"name": "en-probabilities"})
    back = CaseEvidence.from_json(table.to_json(), arrays=table.arrays())
    assert back.classes == table.classes and back.resource == {"name": "en-probabilities"}
    corpus = Corpus.from_sentences([["The", "Gulf", "of", "ipod", "42"]])
    assert list(back.annotate(corpus).sentences(CASE_COLUMN)) == [["cunk", "cT1", "lunk", "lL2", "na"]]


def test_damaged_tables_are_refused():
    table = CaseEvidence.from_log_probs(LP, min_log_prob=-math.inf)
    with pytest.raises(ValueError, match="capitalisation"):
        CaseEvidence.from_json({"kind": "zipf-bands"}, arrays=table.arrays())
    arrays = table.arrays()
    with pytest.raises(ValueError):
        CaseEvidence.from_json(table.to_json(), arrays={**arrays, "counts": arrays["counts"][:-1]})
    with pytest.raises(ValueError):
        CaseEvidence.from_json(table.to_json(), arrays={**arrays, "words": np.zeros(3, np.uint8)})


def test_the_pos_preset_reads_the_capitalisation_with_lang():
    lines = language_lines(None, "pos", ["clusters", "probabilities", "lemmas"])
    assert all(line in lines for line in CASE_LINES)
    assert LANGUAGE_LINES["pos"]["probabilities"] == CASE_LINES
    assert not any("cap[" in line for line in language_lines(None, "ner", ["clusters", "probabilities"]))
    assert not any("cap[" in line for line in language_lines(None, "pos", ["clusters", "lemmas"]))
