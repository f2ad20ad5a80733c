"""The gazetteer's newer columns on small cases worked out by hand: the word-level gazetteer (``gazw``,
``gazt``), the match length (``gazn``), earlier/later mentions (``docp``) and capitalised-run relations
(``docs``); jackknifing of the training-derived ones, models saved without them, and the document gap.
"""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import expanded

from structperc.features.gazetteer import (
    BASE_COLUMNS,
    CASE_COLUMN,
    DOC_COLUMN,
    DOC_WINDOW,
    DOCP_COLUMN,
    DOCS_COLUMN,
    EXTRA_COLUMNS,
    GAZ_COLUMN,
    GAZA_COLUMN,
    GAZN_COLUMN,
    GAZT_COLUMN,
    GAZW_COLUMN,
    Gazetteer,
    doc_mentions,
    doc_roles,
    doc_runs,
    document_gap,
    jackknifed_gazetteer,
)
from structperc.io.corpus import Corpus


def _by_sentence(corpus: Corpus, name: str, values: list[str]) -> list[list[str]]:
    return list(corpus.with_column(name, values).sentences(name))


# ------------------------------------------------------------------------ gazw, gazt, gazn
def test_word_roles_and_types_from_entity_strings():
    g = Gazetteer([(("víctor", "castaño"), "PER"), (("banco", "de", "españa"), "ORG"), (("españa",), "LOC"),
                   (("castaño",), "PER")])
    roles, kinds = g.word_roles()
    assert roles == {"víctor": "B-PER", "castaño": "E-PER|S-PER", "banco": "B-ORG", "de": "I-ORG",
                     "españa": "E-ORG|S-LOC"}
    assert kinds == {"víctor": "PER", "castaño": "PER", "banco": "ORG", "de": "ORG", "españa": "LOC|ORG"}


def test_values_word_level_and_match_length():
    g = Gazetteer([(("víctor", "castaño"), "PER"), (("banco", "de", "españa"), "ORG"), (("españa",), "LOC")],
                  extra=EXTRA_COLUMNS)
    c = Corpus.from_sentences([["Víctor", "Pérez", "y", "el", "Banco", "de", "España"], ["ESPAÑA", "."]])
    for name, (distinct, codes) in g.values(c).items():  # as `Corpus.factorize` codes a column
        assert len(set(distinct)) == len(distinct), name  # one code per value
        assert list(dict.fromkeys(codes.tolist())) == list(range(len(distinct))), name  # by first occurrence
    v = expanded(g.values(c))
    assert v[GAZ_COLUMN] == ["O", "O", "O", "O", "B-ORG", "I-ORG", "I-ORG", "B-LOC", "O"]
    assert v[GAZN_COLUMN] == ["0", "0", "0", "0", "3", "3", "3", "1", "0"]
    assert v[GAZA_COLUMN] == v[GAZ_COLUMN]                     # no string with two types
    # "Víctor" alone is no whole entity string (gaz O) but starts one (gazw B-PER)
    assert v[GAZW_COLUMN] == ["B-PER", "O", "O", "O", "B-ORG", "I-ORG", "E-ORG|S-LOC", "E-ORG|S-LOC", "O"]
    assert v[GAZT_COLUMN] == ["PER", "O", "O", "O", "ORG", "ORG", "LOC|ORG", "LOC|ORG", "O"]
    assert g.matches([]) == ([], [], [])


def test_gaza_keeps_every_type_of_the_matched_string():
    g = Gazetteer([(("madrid",), "LOC"), (("madrid",), "ORG"), (("madrid",), "LOC"), (("real", "madrid"), "ORG"),
                   (("la", "paz"), "LOC"), (("la", "paz"), "PER")], extra=[GAZA_COLUMN])
    assert g.types[("madrid",)] == "LOC" and g.ambiguous == {("madrid",): "LOC|ORG", ("la", "paz"): "LOC|PER"}
    words = ["Madrid", "y", "el", "Real", "Madrid", "en", "La", "Paz"]
    assert g.matches(words)[0] == ["B-LOC", "O", "O", "B-ORG", "I-ORG", "O", "B-LOC", "I-LOC"]
    assert g.matches(words)[2] == ["B-LOC|ORG", "O", "O", "B-ORG", "I-ORG", "O", "B-LOC|PER", "I-LOC|PER"]
    again = Gazetteer.from_json(json.loads(json.dumps(g.to_json())))
    assert again.ambiguous == g.ambiguous and again.types == g.types
    assert Gazetteer.from_json([[["madrid"], "LOC"]]).matches(["Madrid"])[2] == ["B-LOC"]   # older models


def test_old_models_write_only_the_old_columns_and_json_keeps_the_extra_ones():
    # an entity list as models saved before ``case``: the old columns as before, and nothing else
    g = Gazetteer.from_json([[["banco", "de", "españa"], "ORG"], [["madrid"], "LOC"]])
    corpus = Corpus.from_sentences([["El", "Banco", "de", "España", "en", "Madrid"]])
    out = g.annotate(corpus)
    assert out.columns[GAZ_COLUMN] == ["O", "B-ORG", "I-ORG", "I-ORG", "O", "B-LOC"]
    assert out.columns[CASE_COLUMN] == ["U^", "U", "-", "U", "-", "U"]
    assert g.columns == BASE_COLUMNS and set(out.columns) == {"word", *BASE_COLUMNS}
    assert set(g.to_json()) == {"entities", "case"}            # saved as before the extra columns
    # a gazetteer asked for some extra columns writes those, and its model file remembers them
    g2 = Gazetteer([(("banco", "de", "españa"), "ORG"), (("madrid",), "LOC")], extra=[GAZW_COLUMN, GAZN_COLUMN])
    assert g2.columns == BASE_COLUMNS + (GAZW_COLUMN, GAZN_COLUMN)
    again = Gazetteer.from_json(json.loads(json.dumps(g2.to_json())))
    assert again.columns == g2.columns
    out2 = again.annotate(corpus)
    assert out2.columns[GAZW_COLUMN] == ["O", "B-ORG", "I-ORG", "E-ORG", "O", "S-LOC"]
    assert out2.columns[GAZN_COLUMN] == ["0", "3", "3", "3", "0", "1"]
    assert out2.columns[GAZ_COLUMN] == out.columns[GAZ_COLUMN] and GAZT_COLUMN not in out2.columns


def test_word_level_columns_are_jackknifed():
    # one sentence per fold: "Castaño" is only in sentence 0's entities, so sentence 0 never sees it
    sents = [["Víctor", "Castaño", "habló"], ["Con", "Víctor", "Pi"], ["Nada", "más"]]
    tags = [["B-PER", "I-PER", "O"], ["O", "B-PER", "I-PER"], ["O", "O"]]
    corpus = Corpus.from_sentences(sents, tags, tag_column="ner")
    out, full = jackknifed_gazetteer(corpus, "word", "ner", "iob2", 10, 0, columns=["word", GAZW_COLUMN, GAZN_COLUMN])
    assert full.columns == BASE_COLUMNS + (GAZW_COLUMN, GAZN_COLUMN) and GAZT_COLUMN not in out.columns
    gazw = list(out.sentences(GAZW_COLUMN))
    assert gazw[0] == ["B-PER", "O", "O"]               # Víctor from sentence 1's "Víctor Pi"
    assert gazw[1] == ["O", "B-PER", "O"]               # Víctor from sentence 0; Pi is its own
    assert list(out.sentences(GAZN_COLUMN))[0] == ["0", "0", "0"]
    assert full.annotate(corpus).columns[GAZW_COLUMN][:3] == ["B-PER", "E-PER", "O"]


# ------------------------------------------------------------------------------------ docp
def test_doc_mentions_before_and_after():
    sents = [["Habló", "Castaño"], ["Y", "Castaño", "y", "Pi"], ["Con", "Castaño"], ["Castaño", "ya"]]
    docp = _by_sentence(Corpus.from_sentences(sents), DOCP_COLUMN,
                        doc_mentions(Corpus.from_sentences(sents), "word"))
    assert docp[0] == ["0", "N"]
    assert docp[1] == ["0", "PN", "-", "0"]
    # the sentence-initial "Castaño" of sentence 3 is looked up but is no evidence for sentence 2
    assert docp[2] == ["0", "P"]
    assert docp[3] == ["P", "-"]


def test_doc_mentions_window_and_same_sentence():
    sents = [["con", "Gómez"]] + [["nada"]] * 3 + [["y", "Gómez"]]
    c = Corpus.from_sentences(sents)
    assert doc_mentions(c, "word", window=4)[1] == "N" and doc_mentions(c, "word", window=4)[-1] == "P"
    assert doc_mentions(c, "word", window=3)[1] == "0" and doc_mentions(c, "word", window=3)[-1] == "0"
    # the same sentence is neither before nor after (``doc`` sees those occurrences)
    assert doc_mentions(Corpus.from_sentences([["y", "Gómez", "y", "Gómez"]]), "word") == ["-", "0", "-", "0"]
    assert doc_mentions(Corpus.from_sentences([[]]), "word") == []


# ------------------------------------------------------------------------------------ docs
def test_doc_runs_same_shorter_and_longer_runs():
    sents = [["Ayer", "habló", "Víctor", "Castaño", "Ruiz", "."],
             ["Lo", "de", "Castaño", "Ruiz", "y", "de", "Castaño"],
             ["con", "Real", "Madrid", "y", "Real", "Madrid"]]
    docs = _by_sentence(Corpus.from_sentences(sents), DOCS_COLUMN, doc_runs(Corpus.from_sentences(sents), "word"))
    # Ayer: its run is itself (next word lowercase); "Víctor Castaño Ruiz" holds the shorter runs
    # "Castaño Ruiz" and "Castaño"
    assert docs[0] == ["0", "-", "L", "L", "L", "-"]
    # "Castaño Ruiz" is inside the longer run and holds "Castaño"; "Castaño" is inside both
    assert docs[1] == ["0", "-", "SL", "SL", "-", "-", "S"]
    # the same run twice in one sentence: X (the run's other occurrence), nothing shorter or longer
    assert docs[2] == ["-", "X", "X", "-", "X", "X"]


def test_doc_runs_sentence_initial_word_and_window():
    # "El" starts the sentence: looked up with its run ("El Prat" contains the run "Prat"), but the
    # run of "Prat" leaves it out, and it is no evidence for "Prat" elsewhere
    sents = [["El", "Prat", "ganó"], ["en", "Prat"]]
    c = Corpus.from_sentences(sents)
    assert doc_runs(c, "word") == ["L", "X", "-", "-", "X"]
    far = Corpus.from_sentences([["en", "Prat"]] + [["nada"]] * 2 + [["de", "Prat"]])
    assert doc_runs(far, "word", window=3) == ["-", "X", "-", "-", "-", "X"]
    assert doc_runs(far, "word", window=2) == ["-", "0", "-", "-", "-", "0"]
    assert doc_runs(Corpus.from_sentences([[]]), "word") == []


def test_doc_runs_cut_long_runs():
    words = ["de"] + [f"W{i}" for i in range(10)]          # a run of 10 capitalised words: pieces 8 + 2
    out = doc_runs(Corpus.from_sentences([words]), "word")
    assert out == ["-"] + ["0"] * 10


# ------------------------------------------------------------------------------ document gap
def test_document_gap_covers_every_document_column():
    assert document_gap(["word", GAZ_COLUMN, CASE_COLUMN, GAZW_COLUMN]) == 0
    for column in (DOC_COLUMN, DOCP_COLUMN, DOCS_COLUMN):
        assert document_gap(["word", column]) == DOC_WINDOW


def test_documents_kept_apart_by_the_gap_get_their_own_values():
    a = [["Pedro", "Gómez", "llegó"], ["con", "Gómez"]]
    b = [["y", "Gómez"], ["de", "Gómez", "Ruiz"]]
    alone = [f(Corpus.from_sentences(d), "word") for d in (a, b) for f in (doc_roles, doc_mentions, doc_runs)]
    joined = Corpus.from_sentences(a + [[]] * DOC_WINDOW + b)
    n = sum(map(len, a))
    together = [f(joined, "word") for f in (doc_roles, doc_mentions, doc_runs)]
    assert [v[:n] for v in together] == alone[:3]
    assert [v[n:] for v in together] == alone[3:]


def _longest_matches_by_every_length(g: Gazetteer, words: list[str]) -> tuple[list[str], list[str], list[str]]:
    """The matching the gazetteer did before its trie: at each start every length from the longest entity's
    down, the first known string wins."""
    low = [w.lower() for w in words]
    out, length, every = ["O"] * len(words), ["0"] * len(words), ["O"] * len(words)
    longest = max((len(t) for t in g.types), default=0)
    i = 0
    while i < len(words):
        for n in range(min(longest, len(words) - i), 0, -1):
            kind = g.types.get(tuple(low[i:i + n]))
            if kind is not None:
                kinds = g.ambiguous.get(tuple(low[i:i + n]), kind)
                out[i:i + n] = ["B-" + kind] + ["I-" + kind] * (n - 1)
                length[i:i + n] = [str(n)] * n
                every[i:i + n] = ["B-" + kinds] + ["I-" + kinds] * (n - 1)
                i += n
                break
        else:
            i += 1
    return out, length, every


def test_trie_matches_by_hand():
    g = Gazetteer([(("banco", "de", "españa"), "ORG"), (("de",), "MISC"), (("banco",), "ORG"),
                   (("la", "paz"), "LOC"), (("la", "paz"), "PER"), (("la", "paz"), "LOC")])
    tags, lengths, every = g.matches(["El", "Banco", "de", "Francia", "y", "el", "Banco", "de", "España", "en",
                                      "La", "Paz", "de"])
    assert tags == ["O", "B-ORG", "B-MISC", "O", "O", "O", "B-ORG", "I-ORG", "I-ORG", "O", "B-LOC", "I-LOC",
                    "B-MISC"]
    assert lengths == ["0", "1", "1", "0", "0", "0", "3", "3", "3", "0", "2", "2", "1"]
    assert every[10:12] == ["B-LOC|PER", "I-LOC|PER"]
    assert g.matches([]) == ([], [], [])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("abcdA"), min_size=1, max_size=4).map(tuple),
                          st.sampled_from(["PER", "LOC", "ORG"])), max_size=12),
       st.lists(st.sampled_from("abcdAe"), max_size=14))
def test_trie_matches_as_every_length_did(items, words):
    g = Gazetteer([(tuple(w.lower() for w in toks), kind) for toks, kind in items])
    assert g.matches(words) == _longest_matches_by_every_length(g, words)
    again = Gazetteer.from_json(json.loads(json.dumps(g.to_json())))  # a new `types`: the trie follows it
    assert again.matches(words) == _longest_matches_by_every_length(again, words)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from("abcA"), min_size=1, max_size=3).map(tuple),
                          st.sampled_from(["PER", "LOC"])), max_size=10),
       st.lists(st.lists(st.sampled_from("abcAd"), min_size=1, max_size=6), min_size=1, max_size=5))
def test_corpus_values_match_sentence_by_sentence(items, sentences):
    """The corpus-wide pass walks only the tokens an entity string starts with, and never across a sentence's
    end: the same columns as `Gazetteer.matches` sentence by sentence."""
    g = Gazetteer([(tuple(w.lower() for w in toks), kind) for toks, kind in items], extra=[GAZN_COLUMN, GAZA_COLUMN])
    values = expanded(g.values(Corpus.from_sentences(sentences)))
    by_sentence = [g.matches(s) for s in sentences]
    for name, k in ((GAZ_COLUMN, 0), (GAZN_COLUMN, 1), (GAZA_COLUMN, 2)):
        assert values[name] == [v for m in by_sentence for v in m[k]]


def test_the_compiled_walk_is_the_python_one(monkeypatch):
    """`Gazetteer.values` walks the tokens by the compiled kernel where it is built; without it, in Python: the same
    columns, the trie's arrays following a replaced `types`."""
    from structperc.compiled import loader

    if loader.aot("gazetteer_matches") is None:
        import pytest

        pytest.skip("the ahead-of-time build is absent: both sides would walk in Python")
    g = Gazetteer([(("banco", "de", "españa"), "ORG"), (("de",), "MISC"), (("la", "paz"), "LOC"),
                   (("la", "paz"), "PER")], extra=[GAZN_COLUMN, GAZA_COLUMN])
    c = Corpus.from_sentences([["El", "Banco", "de", "España", "en", "La", "Paz"], ["de", "la"], ["paz"]])
    compiled = expanded(g.values(c))
    g.types = dict(g.types)  # a new table: the arrays are built again
    assert expanded(g.values(c)) == compiled
    real = loader.aot
    monkeypatch.setattr(loader, "aot", lambda name: None if name == "gazetteer_matches" else real(name))
    assert expanded(g.values(c)) == compiled
    assert compiled[GAZ_COLUMN] == ["O", "B-ORG", "I-ORG", "I-ORG", "O", "B-LOC", "I-LOC", "B-MISC", "O", "O"]
    assert compiled[GAZA_COLUMN][5:7] == ["B-LOC|PER", "I-LOC|PER"]


def test_word_roles_are_derived_once_and_again_for_new_entries():
    g = Gazetteer([(("víctor", "castaño"), "PER")])
    first = g.word_roles()
    assert first[0] == {"víctor": "B-PER", "castaño": "E-PER"} and g.word_roles() is first
    g.types = {("castaño",): "LOC"}
    assert g.word_roles() == ({"castaño": "S-LOC"}, {"castaño": "LOC"})
