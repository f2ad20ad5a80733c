"""The language resource tables beside the clusters: frequency bands (``frq``,
`structperc.features.resources.bands`) and the parts of speech a lemmatizer's tables allow (``lpos``,
`structperc.features.resources.lemmas`), the class tables that store them
(`structperc.features.resources.storage.pack_classes`), how ``--lang`` builds them
(`structperc.features.resources.language`), and a tagger that reads them, saved and loaded.

The word tables (`pack_words`), the cluster map and the CLI refusals are tested in
test_language_columns.py; the registry in test_resources.py.
"""
from __future__ import annotations

import copy
import gzip
import importlib.util
import json
import math
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import SAMPLE_TRAIN, expanded, first_sentences

from structperc.compiled import loader
from structperc.errors import InputError
from structperc.features.clusters import ClusterMap
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.resources import storage
from structperc.features.resources.bands import MIN_BAND, UNKNOWN, WordBands, zipf_band
from structperc.features.resources.lemmas import NONE, LemmaClasses
from structperc.features.resources.storage import (
    PASSES_BEFORE_TABLE,
    StoredClasses,
    WordQuery,
    index_words,
    pack_classes,
    pack_words,
    probe_words,
    read_together,
    spellings,
    unpack_classes,
    unpack_words,
)
from structperc.io.corpus import Corpus

needs_lookups = pytest.mark.skipif(importlib.util.find_spec("spacy_lookups_data") is None,
                                   reason='spacy-lookups-data is not installed (pip install "structperc[resources]")')
PROVENANCE = {"name": "xx-probabilities", "package": "made-up", "version": "0.1", "file": "p.json.gz",
              "licence": "MIT", "words": 4}
no_newline = st.text().filter(lambda w: "\n" not in w)


def json_round_trip(data: dict) -> dict:
    return json.loads(json.dumps(data))


def log_prob(zipf: float) -> float:
    """The natural-log probability of a word of Zipf frequency ``zipf``."""
    return (zipf - 9) * math.log(10)


# -- zipf_band ------------------------------------------------------------------------------------

@pytest.mark.parametrize("lp, band", [
    (math.log(1e-3), 6),
    (math.log(1e-9), 0),
    (-3.53, 7),              # "the" in spaCy's English table
    (math.log(1e-7), 2),
    (math.log(1e-8), 1),
    (0.0, 9),                # a word that is the whole text
    (log_prob(3.4), 3), (log_prob(3.6), 4),
    (math.log(1e-12), -3),   # below a billion: negative, not clipped
])
def test_zipf_band_hand_cases(lp, band):
    assert zipf_band(lp) == band
    assert isinstance(zipf_band(lp), int)


@given(st.floats(-1e6, 1e3), st.floats(-1e6, 1e3))
@settings(max_examples=300, deadline=None)
def test_zipf_band_is_monotone(a, b):
    lo, hi = sorted((a, b))
    assert zipf_band(lo) <= zipf_band(hi)
    assert abs(zipf_band(a) - (a / math.log(10) + 9)) <= 0.5 + 1e-9


# -- WordBands ------------------------------------------------------------------------------------

LOG_PROBS = {
    "the": math.log(1e-2),      # 7
    "The": math.log(1e-4),      # 5: a capitalised entry of its own
    "cat": math.log(1e-5),      # 4
    "rare": math.log(1e-7),     # 2: the lowest band kept
    "rarer": math.log(1e-8),    # 1: dropped
    "hapax": math.log(1e-10),   # -1: dropped
    "line\nbreak": math.log(1e-2),  # a newline cannot be stored: dropped
    "Zürich": math.log(1e-6),   # 3
    "北京": math.log(1e-5),      # 4
}
BANDS = {"the": "7", "The": "5", "cat": "4", "rare": "2", "Zürich": "3", "北京": "4"}


def word_bands(**kw) -> WordBands:
    return WordBands.from_log_probs(LOG_PROBS, resource=PROVENANCE, **kw)


def test_from_log_probs_keeps_the_bands_from_min_band_up():
    assert MIN_BAND == 2
    bands = word_bands()
    assert bands.bands == BANDS
    assert all(isinstance(b, str) for b in bands.bands.values())
    assert bands.resource == PROVENANCE and bands.word == "word" and bands.columns == ("frq",)
    assert WordBands.from_log_probs({}).bands == {}


@pytest.mark.parametrize("word, band", [
    ("the", "7"), ("The", "5"),          # as written first: "The" has its own entry
    ("THE", "7"), ("tHe", "7"),          # then lowercased
    ("CAT", "4"), ("Cat", "4"),
    ("zürich", UNKNOWN),                 # lowercasing the entry is not a lookup
    ("ZÜRICH", UNKNOWN), ("Zürich", "3"),
    ("rarer", UNKNOWN), ("hapax", UNKNOWN), ("line\nbreak", UNKNOWN), ("line", UNKNOWN),
    ("北京", "4"), ("", UNKNOWN), ("dog", UNKNOWN),
])
def test_band_looks_up_as_written_then_lowercased(word, band):
    assert word_bands().band(word) == band


def test_band_values_on_a_corpus():
    corpus = Corpus.from_sentences([["The", "Cat", "sat"], ["THE", "北京", "rarer", "the"], []])
    assert expanded(word_bands().values(corpus)) == {"frq": ["5", "4", UNKNOWN, "7", "4", UNKNOWN, "7"]}
    assert expanded(word_bands().values(Corpus.from_sentences([]))) == {"frq": []}
    # another word column
    other = Corpus.from_sentences([["x", "y"]], extra={"tok": [["cat", "dog"]]})
    assert expanded(word_bands(word="tok").values(other)) == {"frq": ["4", UNKNOWN]}


def test_word_bands_round_trip_through_json_and_arrays():
    bands = word_bands(word="tok")
    data, arrays = json_round_trip(bands.to_json()), bands.arrays()
    assert data["kind"] == "zipf-bands" and data["resource"] == PROVENANCE
    assert data["bands"] == ["2", "3", "4", "5", "7"]
    assert "cat" not in json.dumps(data, ensure_ascii=False)  # the words are in the arrays only
    assert set(arrays) == {"words", "counts"}
    back = WordBands.from_json(data, word="tok", arrays={k: a.copy() for k, a in arrays.items()})
    assert back.bands == bands.bands and back.resource == bands.resource and back.word == "tok"
    corpus = Corpus.from_sentences([["a", "b", "c"]], extra={"tok": [["THE", "北京", "nope"]]})
    assert expanded(back.values(corpus)) == expanded(bands.values(corpus)) == {"frq": ["7", "4", UNKNOWN]}


@given(st.dictionaries(no_newline, st.floats(-40, 0), max_size=30))
@settings(max_examples=100, deadline=None)
def test_word_bands_round_trip_any_words(log_probs):
    bands = WordBands.from_log_probs(log_probs, resource=PROVENANCE)
    assert set(bands.bands) == {w for w, p in log_probs.items() if zipf_band(p) >= MIN_BAND}
    back = WordBands.from_json(json_round_trip(bands.to_json()), arrays=bands.arrays())
    assert back.bands == bands.bands and back.resource == PROVENANCE


def test_word_bands_without_a_resource_round_trip():
    bands = WordBands({"a": "3"})
    back = WordBands.from_json(json_round_trip(bands.to_json()), arrays=bands.arrays())
    assert back.bands == {"a": "3"} and back.resource is None


def damaged_arrays(arrays: dict[str, np.ndarray]) -> list:
    words, counts = arrays["words"], arrays["counts"]
    flipped = words.copy()
    flipped[len(flipped) // 2] ^= 0xFF
    return [
        None, {}, {"words": words}, {"counts": counts},
        {"words": words[:-3], "counts": counts},                       # truncated
        {"words": flipped, "counts": counts},                          # a flipped byte
        {"words": words.astype(np.int16), "counts": counts},           # not uint8
        {"words": words, "counts": counts[:-1]},                       # a class without its count
        {"words": words, "counts": np.append(counts, 0).astype(np.int32)},  # a count too many
        {"words": words, "counts": counts + np.eye(1, len(counts), dtype=np.int32)[0]},  # a word too many
        {"words": words, "counts": counts.reshape(1, -1)},
        {"words": words, "counts": -counts},
        {"words": pack_words(unpack_words(words)[:-1]), "counts": counts},  # a word lost
    ]


def test_word_bands_refuse_damaged_arrays():
    bands = word_bands()
    for bad in damaged_arrays(bands.arrays()):
        with pytest.raises(ValueError):
            WordBands.from_json(bands.to_json(), arrays=bad)


@pytest.mark.parametrize("data", [None, [], {}, {"kind": "brown"}, {"kind": "lemma-classes", "bands": []}])
def test_word_bands_refuse_other_json(data):
    with pytest.raises(ValueError, match="frequency bands"):
        WordBands.from_json(data, arrays=word_bands().arrays())


# -- LemmaClasses ---------------------------------------------------------------------------------

INDEX = {"noun": ["mouse", "run", "box"], "verb": ["run", "walk", "try"], "adj": ["happy"]}
EXC = {"noun": {"mice": ["mouse"]}}
RULES = {"noun": [["s", ""], ["xes", "x"]], "verb": [["s", ""], ["ed", ""], ["ies", "y"]], "adj": [["ier", "y"]],
         "punct": [["x", "y"]]}
LEMMA_CASES = {
    "runs": "noun|verb", "boxes": "noun", "mice": "noun", "tries": "verb", "happier": "adj", "Walked": "verb",
    "run": "noun|verb", "RUN": "noun|verb", "Mice": "noun", "box": "noun", "happy": "adj", "walk": "verb",
    "s": NONE,          # not longer than the suffix
    "ed": NONE, "ies": NONE, "xes": NONE,
    "unknown": NONE, "": NONE, "mouses": "noun", "boxs": "noun", "walks": "verb", "happiest": NONE,
    "tryed": "verb",    # rules do not know spelling
    "x": NONE, "y": NONE,  # the punct rule is gone
}


def lemma_classes(**kw) -> LemmaClasses:
    return LemmaClasses.from_tables(INDEX, EXC, RULES, resource=PROVENANCE, **kw)


@pytest.mark.parametrize("word, classes", LEMMA_CASES.items())
def test_lemma_classes_hand_cases(word, classes):
    assert lemma_classes().classes(word) == classes


def test_lemma_classes_tables():
    lc = lemma_classes()
    assert lc.columns == ("lpos",) and lc.resource == PROVENANCE
    assert lc.lemmas == {"mouse": "noun", "run": "noun|verb", "box": "noun", "walk": "verb", "try": "verb",
                         "happy": "adj"}
    assert lc.forms == {"mice": "noun"}
    assert set(lc.rules) == {"noun", "verb", "adj"}  # punct is no class of the index: its rule is dropped
    assert "punct" not in lc.to_json()["rules"]


def test_lemma_rule_needs_a_word_longer_than_its_suffix():
    # "s" → "x" would make "s" the lemma "x": the word is not longer than the suffix
    lc = LemmaClasses.from_tables({"noun": ["x", "ax"]}, {}, {"noun": [["s", "x"]]})
    assert lc.classes("s") == NONE
    assert lc.classes("as") == "noun" and lc.classes("aS") == "noun"


def test_identity_rules_are_skipped_without_changing_a_class():
    """A rule that leaves a word as it is ("" → "", English adverbs') leads to the word itself, whose classes the
    lemma table gives: it is left out of the rules walked, and every word keeps its classes. A rule of an empty
    suffix that adds letters still applies."""
    index = {"adv": ["fast", "well"], "adj": ["fast"], "verb": ["make", "run"]}
    rules = {"adv": [["", ""]], "verb": [["s", ""], ["", "e"]]}
    with_identity = LemmaClasses.from_tables(index, {}, rules)
    without = LemmaClasses.from_tables(index, {}, {"adv": [], "verb": rules["verb"]})
    assert dict(with_identity._by_length)[0] == {"": [("verb", "e")]}  # the adverbs' identity is out, "" → "e" in
    for word in ("fast", "well", "runs", "mak", "fasts", "walk", "", "FAST"):
        assert with_identity.classes(word) == without.classes(word)
    assert with_identity.classes("fast") == "adj|adv" and with_identity.classes("mak") == "verb"
    assert with_identity.classes("well") == "adv" and with_identity.classes("walk") == NONE


def test_lemma_classes_values_on_a_corpus():
    corpus = Corpus.from_sentences([["The", "mice", "Walked"], ["runs", "RUNS"]])
    assert expanded(lemma_classes().values(corpus)) == {"lpos": [NONE, "noun", "verb", "noun|verb", "noun|verb"]}
    other = Corpus.from_sentences([["a", "b"]], extra={"tok": [["tries", "a"]]})
    assert expanded(lemma_classes(word="tok").values(other)) == {"lpos": ["verb", NONE]}


def test_lemma_classes_values_agree_with_classes_word_by_word():
    """`values` answers most words without walking the rules (no rule suffix ends them, no irregular form: their
    lemma's classes, joined once per class string); every word gets what `classes` gives it, also where the
    stored class strings are not sorted or repeat a class (a model file is data)."""
    words = [*LEMMA_CASES, "Runs", "TRIES", "mouse", "mices", "boxes", "xes", "axes", "walkeds", "happiers", "ran"]
    corpus = Corpus.from_sentences([[w for w in words if w]])
    for lc in (lemma_classes(), LemmaClasses({"run": "verb|noun", "box": "noun|noun", "walk": "", "ran": "verb"},
                                             {"mice": "noun|noun"}, RULES)):
        got = expanded(lc.values(corpus))["lpos"]
        assert got == [lc.classes(w) for w in words if w]
    odd = LemmaClasses({"run": "verb|noun", "box": "noun|noun", "walk": ""}, {}, RULES)
    assert expanded(odd.values(Corpus.from_sentences([["run", "box", "walk", "runs"]])))["lpos"] == \
        ["noun|verb", "noun", NONE, "noun|verb"]


def test_lemma_classes_remember_the_words_of_earlier_calls(monkeypatch):
    from structperc.features.resources import lemmas as lemma_module

    lc = lemma_classes()
    first = Corpus.from_sentences([["The", "mice", "Walked"], ["runs"]])
    want = {"lpos": [NONE, "noun", "verb", "noun|verb"]}
    assert expanded(lc.values(first)) == want
    assert lc._memo == {"the": NONE, "mice": "noun", "walked": "verb", "runs": "noun|verb"}
    looked: list[list[str]] = []
    real = lc._lemmas.class_ids
    monkeypatch.setattr(lc._lemmas, "class_ids", lambda query: looked.append(sorted(query.words)) or real(query))
    assert expanded(lc.values(first)) == want and looked == []  # every word remembered: no lookup
    mixed = Corpus.from_sentences([["RUNS", "boxes", "the"]])
    assert expanded(lc.values(mixed)) == {"lpos": ["noun|verb", "noun", NONE]}
    assert looked == [["box", "boxe", "boxes"]]  # the new word and its rules' lemmas only, each once
    # at the cap the memo stops growing; the answers stay right
    monkeypatch.setattr(lemma_module, "MEMO_WORDS", len(lc._memo))
    assert expanded(lc.values(Corpus.from_sentences([["tries", "happier"]]))) == {"lpos": ["verb", "adj"]}
    assert "tries" not in lc._memo and len(lc._memo) == lemma_module.MEMO_WORDS


def test_lemma_classes_round_trip_through_json_and_arrays():
    lc = lemma_classes(word="tok")
    data, arrays = json_round_trip(lc.to_json()), lc.arrays()
    assert data["kind"] == "lemma-classes" and data["resource"] == PROVENANCE
    assert set(arrays) == {"lemmas_words", "lemmas_counts", "forms_words", "forms_counts"}
    assert "mouse" not in json.dumps(data) and "mice" not in json.dumps(data)  # the words are arrays
    back = LemmaClasses.from_json(data, word="tok", arrays={k: a.copy() for k, a in arrays.items()})
    assert back.word == "tok" and back.resource == PROVENANCE
    assert (back.lemmas, back.forms, back.rules) == (lc.lemmas, lc.forms, lc.rules)
    words = list(LEMMA_CASES) + ["Runs", "TRIES", "mouse", "mices"]
    assert [back.classes(w) for w in words] == [lc.classes(w) for w in words]


def test_lemma_classes_without_irregular_forms_round_trip():
    lc = LemmaClasses.from_tables({"noun": ["cat"]}, {}, {"noun": [["s", ""]]})
    back = LemmaClasses.from_json(json_round_trip(lc.to_json()), arrays=lc.arrays())
    assert back.forms == {} and back.resource is None and back.classes("cats") == "noun"


def test_lemma_classes_refuse_damaged_arrays():
    lc = lemma_classes()
    arrays = lc.arrays()
    for part in ("lemmas", "forms"):
        own = {"words": arrays[f"{part}_words"], "counts": arrays[f"{part}_counts"]}
        for bad in damaged_arrays(own)[2:]:
            kept = {k: a for k, a in arrays.items() if not k.startswith(part + "_")}
            with pytest.raises(ValueError):
                LemmaClasses.from_json(lc.to_json(), arrays={**kept, **{f"{part}_{k}": a for k, a in bad.items()}})
    for bad in (None, {}):
        with pytest.raises(ValueError):
            LemmaClasses.from_json(lc.to_json(), arrays=bad)
    with pytest.raises(ValueError, match="lemma classes"):
        LemmaClasses.from_json({"kind": "zipf-bands"}, arrays=arrays)


def oracle(index: dict, exc: dict, rules: dict, word: str) -> str:
    """The classes of ``word`` as the tables define them, read literally."""
    w = word.lower()
    found = set()
    for pos in set(index) | set(exc):
        lemmas = set(index.get(pos, []))
        if w in lemmas or w in exc.get(pos, {}):
            found.add(pos)
        elif pos in index and any(len(w) > len(s) and w.endswith(s) and w[:len(w) - len(s)] + r in lemmas
                                  for s, r in rules.get(pos, [])):
            found.add(pos)
    return "|".join(sorted(found)) or NONE


CLASSES = st.sampled_from(["noun", "verb", "adj", "punct"])
LEMMA = st.text("abs", min_size=1, max_size=4)
AFFIX = st.text("abs", max_size=2)


@given(st.dictionaries(CLASSES, st.lists(LEMMA, max_size=5), max_size=3),
       st.dictionaries(CLASSES, st.dictionaries(LEMMA, st.just(["a"]), max_size=3), max_size=3),
       st.dictionaries(CLASSES, st.lists(st.tuples(AFFIX, AFFIX).map(list), max_size=3), max_size=4),
       st.lists(st.text("abAsS", min_size=1, max_size=6), max_size=10))
@settings(max_examples=150, deadline=None)
def test_lemma_classes_agree_with_the_tables(index, exc, rules, words):
    lc = LemmaClasses.from_tables(index, exc, rules)
    back = LemmaClasses.from_json(json_round_trip(lc.to_json()), arrays=lc.arrays())
    known = [w for table in (*index.values(), *exc.values()) for w in table]
    everything = words + known + [w + "s" for w in known]
    for w in everything:
        assert lc.classes(w) == back.classes(w) == oracle(index, exc, rules, w), w
    if everything:  # a corpus's column: its words and the lemmas the rules lead to, looked up in the stored tables
        loaded = LemmaClasses.from_json(json_round_trip(lc.to_json()), arrays=lc.arrays())
        column = expanded(loaded.values(Corpus.from_sentences([everything])))["lpos"]
        assert column == [oracle(index, exc, rules, w) for w in everything]


# -- pack_classes / unpack_classes ----------------------------------------------------------------

@given(st.dictionaries(no_newline, st.text(max_size=8), max_size=40))
@settings(max_examples=200, deadline=None)
def test_pack_classes_round_trips(table):
    classes, arrays = pack_classes(table)
    assert classes == sorted(set(table.values()))
    assert arrays["counts"].dtype == np.int32 and arrays["counts"].tolist() == [
        sum(1 for c in table.values() if c == k) for k in classes]
    # the words grouped by class, sorted within it
    assert unpack_words(arrays["words"]) == [w for w, _ in sorted(table.items(), key=lambda kv: (kv[1], kv[0]))]
    assert unpack_classes(json.loads(json.dumps(classes)), arrays) == table


def test_pack_classes_of_nothing():
    classes, arrays = pack_classes({})
    assert classes == [] and arrays["counts"].tolist() == []
    assert unpack_classes(classes, arrays) == {}
    assert unpack_classes(*pack_classes({"": "x"})) == {"": "x"}  # a single empty word


def test_pack_classes_refuses_a_newline():
    with pytest.raises(ValueError, match="newline"):
        pack_classes({"a\nb": "1"})


def test_unpack_classes_refuses_mismatches():
    table = {"a": "x", "b": "y", "c": "y", "d": "z"}
    classes, arrays = pack_classes(table)
    for bad in damaged_arrays(arrays):
        with pytest.raises(ValueError):
            unpack_classes(classes, bad)
    for other in (classes[:-1], classes + ["zz"], []):
        with pytest.raises(ValueError, match="do not match"):
            unpack_classes(other, arrays)
    # well-formed counts of another split put the words on other classes
    assert unpack_classes(classes, {**arrays, "counts": np.array([2, 1, 1], np.int32)}) == \
        {"a": "x", "b": "x", "c": "y", "d": "z"}


# -- StoredClasses: a stored table looked up without its dictionary ------------------------------

def lookups_of(table: dict[str, str], others: list[str], data) -> tuple:
    """A table's stored form, queries of some of its words and ``others``, and what a lookup of them finds."""
    classes, arrays = pack_classes(table)
    queries = data.draw(st.lists(st.sampled_from(sorted(table) or [""]), max_size=20)) + others
    return classes, arrays, queries, {w: table[w] for w in queries if w in table}


@given(st.dictionaries(no_newline, st.sampled_from(["0", "01", "1101"]), max_size=40),
       st.lists(no_newline, max_size=20), st.data())
@settings(max_examples=200, deadline=None)
def test_stored_lookups_agree_with_the_table(table, others, data):
    classes, arrays, queries, expected = lookups_of(table, others, data)
    for stored in (StoredClasses(classes, arrays), StoredClasses.of(table)):
        assert len(stored) == len(table)
        for _ in range(PASSES_BEFORE_TABLE + 2):  # probes of the index: no dictionary, however many lookups
            assert stored.lookup(queries) == expected
            assert stored._table is None
        assert stored.table() == table


@given(st.dictionaries(no_newline, st.sampled_from(["0", "01", "1101"]), max_size=40),
       st.lists(no_newline, max_size=20), st.data())
@settings(max_examples=100, deadline=None)
def test_stored_lookups_without_the_build_build_the_dictionary_after_a_few_passes(table, others, data):
    classes, arrays, queries, expected = lookups_of(table, others, data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(storage, "index_words", lambda data, n_words: None)
        mp.setattr(storage.loader, "aot", lambda name: None)
        for stored in (StoredClasses(classes, arrays), StoredClasses.of(table)):
            for _ in range(PASSES_BEFORE_TABLE):  # the first lookups: each one pass over the split words
                assert stored.lookup(queries) == expected
                assert stored._table is None
            assert stored.lookup(queries) == expected   # the next builds the dictionary
            assert stored._table == table
            assert stored.lookup(queries) == expected


@given(st.dictionaries(no_newline, st.sampled_from(["0", "01", "1101"]), max_size=40),
       st.lists(no_newline, max_size=20), st.data(), st.booleans())
@settings(max_examples=150, deadline=None)
def test_class_ids_number_the_classes_lookup_finds(table, others, data, compiled):
    """`class_ids` is `lookup` as numbers (the index of the class in `class_names`, -1 absent): in the compiled
    passes, once the dictionary is built, and without the ahead-of-time build."""
    classes, arrays = pack_classes(table)
    queries = list(dict.fromkeys(data.draw(st.lists(st.sampled_from(sorted(table) or [""]), max_size=20)) + others))
    query = WordQuery(queries)
    with pytest.MonkeyPatch.context() as mp:
        if not compiled:
            mp.setattr(storage.loader, "aot", lambda name: None)
        for stored in (StoredClasses(classes, arrays), StoredClasses.of(table)):
            assert stored.class_names == sorted(set(table.values()))
            for _ in range(PASSES_BEFORE_TABLE + 2):
                ids = stored.class_ids(query)
                assert ids.dtype == np.int64 and len(ids) == len(queries)
                assert [stored.class_names[i] if i >= 0 else None for i in ids.tolist()] == \
                    [table.get(w) for w in queries]
            assert stored.table() == table


def test_spellings_hold_the_distinct_words_then_their_new_lowercase_forms():
    c = Corpus.from_sentences([["The", "the", "THE", "Cat", "x", "汉"], ["Cat"]])
    found = spellings(c, "word")
    assert found.query.words == ["The", "the", "THE", "Cat", "x", "汉", "cat"] and found.n_words == 6
    assert found.lower.tolist() == [1, 1, 1, 6, 4, 5]
    assert spellings(c, "word") is found  # made once per corpus
    ids = np.array([-1, 3, 7, -1, -1, 2, 9])  # per query word; "Cat" absent as written, found lowercased
    assert found.as_written_else_lower(ids).tolist() == [3, 3, 7, 9, -1, 2]
    query = found.query
    assert query.ptr.tolist() == np.cumsum([0, *(len(w.encode()) for w in query.words)]).tolist()
    assert bytes(query.data).decode() == "".join(query.words)


needs_index = pytest.mark.skipif(loader.aot("index_words") is None, reason="the ahead-of-time build is absent")


def located(data: bytes, words: list[str]) -> list[int]:
    """The line of each of ``words`` in the stored ``data``, by its index and probes."""
    index = index_words(data, data.count(b"\n"))
    assert index is not None
    return probe_words(index, words).tolist()


@needs_index
def test_probes_find_the_lines_of_words_by_hand():
    """Each wanted word's line in the stored text (from 0), -1 when absent: a prefix, an extension, the empty
    word and a multi-byte word are words like any other; a word listed twice is refused by the index."""
    data = "a\nab\n\n汉\nabc\n".encode()
    assert located(data, ["ab", "", "汉", "b", "a", "abcd", "汉字"]) == [1, 2, 3, -1, 0, -1, -1]
    assert located(b"", ["a", ""]) == [-1, -1] and located(data, []) == []
    with pytest.raises(ValueError, match="twice"):
        index_words(b"a\nb\na\n", 3)
    index = index_words(data, 5)
    assert index.starts.tolist() == [0, 2, 5, 6, 10, 14] and not index.starts.flags.writeable
    assert len(index.slots) > 5 and sorted(index.slots[index.slots >= 0].tolist()) == [0, 1, 2, 3, 4]


@needs_index
@given(st.lists(no_newline, unique=True, max_size=40), st.lists(no_newline, max_size=20), st.data())
@settings(max_examples=200, deadline=None)
def test_probes_agree_with_a_search_of_the_list(stored, others, data):
    wanted = list(dict.fromkeys(data.draw(st.lists(st.sampled_from(stored or [""]), max_size=20)) + others))
    text = "".join(w + "\n" for w in stored).encode("utf-8", "surrogatepass")
    assert located(text, wanted) == [stored.index(w) if w in stored else -1 for w in wanted]


@needs_index
def test_probes_with_many_and_long_words():
    """Long words wrap the rotating hash (64 bits, 5 a byte), so words that differ 64 bytes apart, or only in the
    order of their bytes, may share a hash: every match is compared byte for byte."""
    rng = np.random.default_rng(0)
    alphabet = list("abcdefghij汉字é")
    stored = list(dict.fromkeys("".join(rng.choice(alphabet, size=int(n))) for n in rng.integers(1, 30, 6000)))
    twin = "x" * 70 + "b" + "x" * 63 + "a"  # the stored word's bytes 64 apart swapped: the same hash
    stored += ["x" * 70 + "a" + "x" * 63 + "b", "ab" * 40]
    wanted = list(dict.fromkeys([*stored[::7], twin, stored[-2], "ba" * 40, *(w + "z" for w in stored[::5])]))
    text = "".join(w + "\n" for w in stored).encode()
    where = {w: i for i, w in enumerate(stored)}
    assert len(wanted) > 1000
    assert located(text, wanted) == [where.get(w, -1) for w in wanted]


def test_stored_lookups_without_the_compiled_pass_split_the_words(monkeypatch):
    """Without the ahead-of-time build the pass splits the stored words into strings: the same answers."""
    table = {"b": "x", "a": "y", "汉字": "x", "": "z"}
    queries = ["a", "汉字", "", "zz", "B"]
    compiled = StoredClasses(*pack_classes(table)).lookup(queries)
    twice = {"words": pack_words(["a", "a", "b"]), "counts": np.array([1, 2], np.int32)}
    with pytest.raises(ValueError, match="twice"):  # the index refuses it
        StoredClasses(["x", "y"], twice).lookup(["b"])
    monkeypatch.setattr(storage.loader, "aot", lambda name: None)
    assert StoredClasses(*pack_classes(table)).lookup(queries) == compiled == {"a": "y", "汉字": "x", "": "z"}
    with pytest.raises(ValueError, match="twice"):
        StoredClasses(["x", "y"], twice).lookup(["a"])


def test_stored_tables_are_written_as_read():
    table = {"b": "x", "a": "y", "c": "x"}
    classes, arrays = pack_classes(table)
    stored = StoredClasses(classes, arrays)
    again_classes, again = stored.packed()
    assert again_classes == classes and again["words"] is arrays["words"] and again["counts"] is arrays["counts"]
    assert stored._table is None  # writing a loaded model does not unpack its tables
    made = StoredClasses.of(table)
    assert made._table is None  # a table made in memory is packed at once, its dictionary let go
    made_classes, made_arrays = made.packed()
    assert made_classes == classes and np.array_equal(made_arrays["words"], arrays["words"])


def test_stored_tables_refuse_damage_when_read_and_a_word_listed_twice_when_met():
    classes, arrays = pack_classes({"a": "x", "b": "y", "c": "y", "d": "z"})
    for bad in damaged_arrays(arrays):
        with pytest.raises(ValueError):
            StoredClasses(classes, bad)
    twice = {"words": pack_words(["a", "a", "b"]), "counts": np.array([1, 2], np.int32)}
    with pytest.raises(ValueError, match="twice"):
        StoredClasses(["x", "y"], twice).lookup(["a"])
    with pytest.raises(ValueError, match="twice"):
        StoredClasses(["x", "y"], twice).table()
    if loader.aot("index_words") is not None:
        with pytest.raises(ValueError, match="twice"):  # the index refuses the table at its first lookup
            StoredClasses(["x", "y"], twice).lookup(["b"])
        with read_together():  # read with a model: its index, made in the thread, refuses it there too
            read = StoredClasses(["x", "y"], twice)
        with pytest.raises(ValueError, match="twice"):
            read.class_ids(WordQuery(["b"]))
    with pytest.MonkeyPatch.context() as mp:  # without the build, a pass that never meets it answers
        mp.setattr(storage.loader, "aot", lambda name: None)
        assert StoredClasses(["x", "y"], twice).lookup(["b"]) == {"b": "y"}


def test_tables_read_together_are_checked_on_leaving_and_answer_as_alone():
    """Inside `read_together` a table inflates beside the caller: damage raises when the block ends (not where the
    table was made), and the tables answer lookups as tables read alone do."""
    table = {"a": "x", "b": "y", "c": "y", "d": "z"}
    classes, arrays = pack_classes(table)
    for bad in damaged_arrays(arrays)[4:]:  # whole arrays with damage only their inflated words show
        with pytest.raises(ValueError):
            with read_together():
                made = StoredClasses(classes, bad)
                assert made._inflating is not None  # not yet checked here
    with read_together():
        together = [StoredClasses(classes, arrays) for _ in range(3)]
    assert all(t._inflating is None and t._data is not None for t in together)
    assert [t.lookup(["b", "d", "q"]) for t in together] == [StoredClasses(classes, arrays).lookup(["b", "d", "q"])] * 3
    assert together[0].table() == table and len(together[1]) == 4
    with read_together():  # a copy (as compressing a model makes) waits for the index in the making
        pending = StoredClasses(classes, arrays)
    assert copy.deepcopy(pending).lookup(["b", "d", "q"]) == {"b": "y", "d": "z"}
    with pytest.raises(KeyError):  # an error of the block itself is the one raised, the thread joined
        with read_together():
            StoredClasses(classes, damaged_arrays(arrays)[5])
            raise KeyError("mine")
    assert storage._READING.get() is None


def test_tables_read_together_without_a_thread_inflate_in_place():
    """A pool that takes no more work (the interpreter shutting down) leaves a table to inflate where it is made."""
    from concurrent.futures import ThreadPoolExecutor

    classes, arrays = pack_classes({"a": "x", "b": "y"})
    closed = ThreadPoolExecutor(max_workers=1)
    closed.shutdown()
    token = storage._READING.set(([], closed))
    try:
        made = StoredClasses(classes, arrays)
        assert made._inflating is None and made._data is not None and storage._READING.get()[0] == []
        with pytest.raises(ValueError):
            StoredClasses(classes, damaged_arrays(arrays)[5])
    finally:
        storage._READING.reset(token)
    assert made.lookup(["b", "c"]) == {"b": "y"}


# -- read_lemma_tables ----------------------------------------------------------------------------

def write_tables(folder: Path, index=INDEX, exc=EXC, rules=RULES, skip: str = "") -> Path:
    for name, table in (("index", index), ("exc", exc), ("rules", rules)):
        if name != skip:
            with gzip.open(folder / f"xx_lemma_{name}.json.gz", "wt", encoding="utf-8") as f:
                json.dump(table, f)
    return folder / "xx_lemma_index.json.gz"


def test_read_lemma_tables_reads_the_three_files(tmp_path):
    from structperc.features.resources.formats import read_lemma_tables

    assert read_lemma_tables(write_tables(tmp_path)) == {"index": INDEX, "exc": EXC, "rules": RULES}


@pytest.mark.parametrize("skip, change", [
    ("exc", {}), ("rules", {}),
    ("", {"index": {"noun": "mouse"}}),
    ("", {"exc": {"noun": 3}}),
    ("", {"rules": {"noun": None}}),
    ("", {"index": ["mouse"]}),
])
def test_read_lemma_tables_refuses_what_is_not_the_tables(tmp_path, skip, change):
    from structperc.features.resources.formats import read_lemma_tables

    path = write_tables(tmp_path, **{"index": INDEX, "exc": EXC, "rules": RULES, **change}, skip=skip)
    with pytest.raises(InputError) as e:
        read_lemma_tables(path)
    assert "\n" not in str(e.value)


# -- the language's tables ------------------------------------------------------------------------

def test_registry_has_the_lemma_resources():
    from structperc.features.resources.registry import RESOURCES

    en, nl = RESOURCES["en-lemmas"], RESOURCES["nl-lemmas"]
    assert (en.language, en.kind, nl.language, nl.kind) == ("en", "lemmas", "nl", "lemmas")
    assert "WordNet" in en.licence and nl.licence == "MIT"
    assert en.file == "data/en_lemma_index.json.gz" and en.package == nl.package == "spacy-lookups-data"


def test_tagger_kinds():
    from structperc.features.resources.language import tagger_kinds

    assert tagger_kinds("en") == tagger_kinds(" EN ") == ["clusters", "probabilities", "lemmas"]
    assert tagger_kinds("nl") == ["lemmas"]
    assert tagger_kinds("el") == ["probabilities"]
    assert tagger_kinds("zh") == [] and tagger_kinds("xx") == []


@needs_lookups
def test_english_lemma_classes():
    from structperc.features.resources.language import language_dictionaries

    clusters, others = language_dictionaries("en", {"lpos", "w"})
    assert clusters is None and len(others) == 1 and isinstance(others[0], LemmaClasses)
    lc = others[0]
    assert {"noun", "verb"} <= set(lc.classes("runs").split("|"))
    assert lc.classes("mice") == "noun" and lc.classes("Mice") == "noun"
    assert lc.classes("qzxjkvw") == NONE
    assert lc.resource["name"] == "en-lemmas" and "WordNet" in lc.resource["licence"]
    assert lc.resource["package"] == "spacy-lookups-data" and lc.resource["words"] > 50_000
    assert set(lc.rules) <= {"adj", "adv", "noun", "verb"}  # punct has no index: dropped
    assert lc.word == "word"


@needs_lookups
@pytest.mark.parametrize("lang, reads, names", [
    ("en", {"w"}, "clu4, clu6, clu10, clu20, clu, frq, cap, lpos"),
    ("en", set(), "frq, cap, lpos"),
    ("nl", {"frq", "clu"}, "(lpos)"),
    ("el", {"lpos"}, "(frq, cap)"),
])
def test_language_dictionaries_refuse_templates_reading_none_of_the_columns(lang, reads, names):
    from structperc.features.resources.language import language_dictionaries

    with pytest.raises(InputError, match=r"lang \(--lang\)") as e:
        language_dictionaries(lang, reads)
    assert "\n" not in str(e.value) and names in str(e.value) and repr(lang) in str(e.value)


# -- a tagger reading frq and lpos ----------------------------------------------------------------

LINES = ["w[0]", "frq[0]", "lpos[0]", "lpos[-1]|lpos[0]", "frq[1]|lpos[1]", "bias"]
#: The first sentence's words are not in the training sentences; the resources know all but the last.
UNSEEN = [["Tuesday", "mice", "happier", "Qzxjkvw"], ["The", "walked", "boxes", "."]]


@pytest.fixture(scope="module")
def pos_model(tmp_path_factory):
    """(tagger, model directory, training sentences, predictions before saving)."""
    from structperc import Tagger

    blocks = first_sentences(SAMPLE_TRAIN, 12).strip("\n").split("\n\n")
    X = [[line.split(" ")[0] for line in b.split("\n")] for b in blocks]
    y = [[line.split(" ")[1] for line in b.split("\n")] for b in blocks]
    assert not set(UNSEEN[0]) & {w for s in X for w in s}
    tagger = Tagger(task="pos", columns=["word", "pos"], template=list(LINES), lang="en", epochs=2,
                    seed=0).fit(X, y)
    before = tagger.predict(UNSEEN + X[:3])
    model_dir = tmp_path_factory.mktemp("lang-pos") / "model"
    tagger.save(model_dir)
    return tagger, model_dir, X, before


def tables_of(tagger) -> tuple[WordBands, LemmaClasses]:
    found = dictionary_parts(tagger.dictionary_)
    assert not [p for p in found if isinstance(p, ClusterMap)]  # the lines read no clu column
    bands = [p for p in found if isinstance(p, WordBands)]
    lemmas = [p for p in found if isinstance(p, LemmaClasses)]
    assert len(bands) == len(lemmas) == 1, found
    return bands[0], lemmas[0]


@needs_lookups
def test_tagger_with_bands_and_lemmas_saves_and_loads(pos_model):
    from structperc import Tagger
    from structperc.commands import load

    tagger, model_dir, X, before = pos_model
    assert tagger.template_lines_ == LINES  # lines given as a list are used as given
    bands, lemmas = tables_of(tagger)
    assert len(bands.bands) > 100_000 and bands.band("the") == "7" and bands.band("Qzxjkvw") == UNKNOWN
    for loaded in (Tagger.load(model_dir), load(model_dir)):
        assert loaded.lang == "en" and loaded.template_lines_ == LINES
        assert loaded.predict(UNSEEN + X[:3]) == before
        b, lc = tables_of(loaded)
        assert b.bands == bands.bands and b.resource == bands.resource
        assert (lc.lemmas, lc.forms, lc.rules, lc.resource) == (lemmas.lemmas, lemmas.forms, lemmas.rules,
                                                                lemmas.resource)
        corpus = Corpus.from_sentences(UNSEEN)
        assert expanded(lc.values(corpus)) == expanded(lemmas.values(corpus))
        assert expanded(lc.values(corpus))["lpos"][:4] == ["noun", "noun", "adj", NONE]
        assert expanded(b.values(corpus)) == expanded(bands.values(corpus))
        assert expanded(b.values(corpus))["frq"][3] == UNKNOWN and UNKNOWN not in expanded(b.values(corpus))["frq"][:3]


@needs_lookups
def test_tagger_model_file_holds_the_tables_as_arrays(pos_model):
    _, model_dir, _, _ = pos_model
    with zipfile.ZipFile(model_dir / "model.zip") as z:
        names = set(z.namelist())
        meta = json.loads(z.read("metadata.json"))
    assert {"extra.bands.words.npy", "extra.bands.counts.npy", "extra.lemmas.lemmas_words.npy",
            "extra.lemmas.lemmas_counts.npy", "extra.lemmas.forms_words.npy",
            "extra.lemmas.forms_counts.npy"} <= names
    assert not [n for n in names if n.startswith("extra.clusters.")]
    assert set(meta["extra"]) >= {"bands", "lemmas"} and "clusters" not in meta["extra"]
    assert meta["params"]["lang"] == "en"
    resources = meta["provenance"]["resources"]
    assert sorted(r["name"] for r in resources) == ["en-lemmas", "en-probabilities"]
    assert "WordNet" in next(r["licence"] for r in resources if r["name"] == "en-lemmas")
    assert "mouse" not in json.dumps(meta["extra"])  # the words are arrays, not JSON


# -- a dictionary's words in lexicon columns of their own (the segmenter's --lang) ----------------------

def test_dictionary_words_write_their_own_lexicon_columns_and_round_trip():
    from structperc.features.lexicon import LexiconMatcher
    from structperc.features.resources.wordlist import DICTIONARY_COLUMNS, DictionaryWords
    from structperc.io.segmented import char_corpus

    d = DictionaryWords(["上海", "上海市", "体育局"], resource={"name": "zh-words"})
    corpus = char_corpus(["上海市体育局召开"])
    got = expanded(d.values(corpus))
    want = LexiconMatcher(["上海", "上海市", "体育局"]).columns(corpus, max_value=5)
    # the lexicon's three lengths, under the dictionary's own names: longest word starting, ending, covering
    assert list(got) == list(DICTIONARY_COLUMNS)
    assert [got[n] for n in DICTIONARY_COLUMNS] == [[v[0][c] for c in v[1]] for v in want.values()]
    assert got["dicb"] == ["3", "0", "0", "3", "0", "0", "0", "0"]
    back = DictionaryWords.from_json(d.to_json(), d.arrays())
    assert back.words == d.words and back.resource == d.resource
    assert expanded(back.values(corpus)) == got
    with pytest.raises(ValueError):
        DictionaryWords.from_json(d.to_json(), {})
    with pytest.raises(ValueError):
        DictionaryWords.from_json({**d.to_json(), "words": 4}, d.arrays())
    with pytest.raises(ValueError, match="newline"):
        DictionaryWords(["上海\n市"])


def test_a_segmenters_lexicon_and_dictionary_are_matched_in_one_walk(monkeypatch):
    """A segmenter with ``--lang zh`` reads its training lexicon (``lex*``) and jieba's words (``dic*``): the model's
    dictionaries match both in one table (`Dictionaries`, `LexiconMatcher.of_sources`), built once, with the
    columns each part writes alone; tokens of several characters, or a lexicon with the extra columns, leave
    each part to itself."""
    from structperc.features.dictionary import Dictionaries
    from structperc.features.lexicon import SegmentationDictionary
    from structperc.features.lexicon_match import LexiconMatcher
    from structperc.features.resources.wordlist import DictionaryWords
    from structperc.io.segmented import char_corpus

    lexicon = SegmentationDictionary(["上海", "市长", "江大桥"], ["上海", "市长"])
    words = DictionaryWords(["上海市", "长江", "长江大桥", "𠀋𠀋"])
    corpus = char_corpus(["上海市长江大桥", "𠀋𠀋上海", "市"])
    alone = {**expanded(lexicon.values(corpus)), **expanded(words.values(corpus))}
    built = []
    original = LexiconMatcher.of_sources

    def counted(sources):
        built.append(len(sources))
        return original(sources)

    monkeypatch.setattr(LexiconMatcher, "of_sources", counted)
    both = Dictionaries([lexicon, words])
    assert expanded(both.values(corpus)) == alone
    annotated = both.annotate(corpus)
    assert {name: list(annotated.columns[name]) for name in alone} == alone
    assert built == [2]  # one table, built once for both calls
    assert alone["lexb"][:7] == ["2", "0", "2", "0", "3", "0", "0"]  # 上海, 市长, 江大桥
    assert alone["dicb"][:7] == ["3", "0", "0", "4", "0", "0", "0"]  # 上海市, 长江大桥 (longer than 长江)
    multi = Corpus.from_sentences([["上海", "市"]], extra={"char": [["上海", "市"]]})
    assert expanded(both.values(multi)) == {**expanded(lexicon.values(multi)), **expanded(words.values(multi))}
    extended = SegmentationDictionary(["上海", "市长"], extended=True)
    assert Dictionaries([extended, words])._together is None
    assert expanded(Dictionaries([extended, words]).values(corpus)) == \
        {**expanded(extended.values(corpus)), **expanded(words.values(corpus))}


def test_dictionary_words_read_from_their_stored_text_match_the_word_list():
    """A loaded dictionary matches from the stored text's code points (`LexiconMatcher.of_lines`): the same
    columns as the word list's lexicon, its arrays given back as stored, its words split only when asked."""
    from structperc.features.lexicon import LexiconMatcher
    from structperc.features.resources.wordlist import DictionaryWords
    from structperc.io.segmented import char_corpus

    words = ["上海", "上海市", "体育局", "局", "𠀋𠀋", "市体", "上海市体育局召开"]
    d = DictionaryWords(words)
    stored = d.arrays()
    back = DictionaryWords.from_json(d.to_json(), stored)
    assert back.arrays()["words"] is stored["words"]  # saved again as read
    assert "words" not in back.__dict__  # not split by the load
    corpus = char_corpus(["上海市体育局召开", "𠀋𠀋上海", "局"])
    assert expanded(back.values(corpus)) == expanded(d.values(corpus))
    want = LexiconMatcher(words).lengths(np.asarray([ord(c) for c in "上海市体育局召开"]), np.asarray([0, 8]))
    got = LexiconMatcher.of_lines("".join(w + "\n" for w in words)).lengths(
        np.asarray([ord(c) for c in "上海市体育局召开"]), np.asarray([0, 8]))
    assert np.array_equal(got, want) and got[0, 0] == 8
    assert back.words == words and back.n_words == 7
    empty = LexiconMatcher.of_lines("")
    assert empty.n_entries == 0 and not empty.lengths(np.asarray([1, 2]), np.asarray([0, 2])).any()
    with pytest.raises(ValueError, match="newline"):
        LexiconMatcher.of_lines("上海")
    # tokens of more than one character take the word list's path, with the same columns
    multi = Corpus.from_sentences([["上海", "市"]], extra={"char": [["上海", "市"]]})
    assert expanded(back.values(multi)) == expanded(d.values(multi))
