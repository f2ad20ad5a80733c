"""Task presets (ner, pos, chunk, cws), optional ``?`` templates, the ``rare()`` feature, the jackknifed
NER gazetteer (extraction, longest match, folds, save/load), POS reports and ``eval --json``, and on
CoNLL-2002 Spanish (corpus test) constrained vs unconstrained decoding."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import CORPORA

from structperc import Tagger
from structperc.cli import main
from structperc.errors import InputError
from structperc.features.gazetteer import (
    CASE_COLUMN,
    DOC_COLUMN,
    GAZ_COLUMN,
    MAX_ENTITY_TOKENS,
    Gazetteer,
    case_column,
    case_counts,
    doc_roles,
    entities,
    jackknifed_gazetteer,
)
from structperc.features.index import FeatureIndex
from structperc.features.task import TASKS, get_task
from structperc.features.templates import NER, optional_columns_dropped, parse_templates, preset
from structperc.io.conll import CONLLU_COLUMNS
from structperc.io.corpus import Corpus
from structperc.labels import valid_sequence

# A tiny Spanish/Unicode NER corpus (word, pos, ner), IOB2.
NER_SENTS = [
    [("Juan", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"), ("Madrid", "NP", "B-LOC"),
     (".", "Fp", "O")],
    [("María", "NP", "B-PER"), ("trabaja", "VM", "O"), ("en", "SP", "O"), ("Zürich", "NP", "B-LOC"),
     (".", "Fp", "O")],
    [("Juan", "NP", "B-PER"), ("visita", "VM", "O"), ("Madrid", "NP", "B-LOC"), (".", "Fp", "O")],
    [("El", "DA", "O"), ("Banco", "NP", "B-ORG"), ("de", "SP", "I-ORG"), ("España", "NP", "I-ORG"),
     ("abrió", "VM", "O")],
    [("María", "NP", "B-PER"), ("ama", "VM", "O"), ("São", "NP", "B-LOC"), ("Paulo", "NP", "I-LOC")],
    [("北京", "NR", "B-LOC"), ("欢迎", "VV", "O"), ("你", "PN", "O")],
]


def ner_words(sents=NER_SENTS):
    return [[t[0] for t in s] for s in sents]


def ner_tags(sents=NER_SENTS):
    return [[t[2] for t in s] for s in sents]


def ner_pairs(sents=NER_SENTS):
    return [[(t[0], t[1]) for t in s] for s in sents]


# -------------------------------------------------------------------------------- presets
def test_task_presets_resolve():
    assert set(TASKS) == {"chunk", "ner", "pos", "cws"}
    ner = get_task("ner")
    assert (ner.columns, ner.tag_column, ner.template, ner.scheme, ner.metric) == \
        (("word", "pos", "ner"), "ner", "ner", "iob2", "span")
    assert ner.constrained and ner.gazetteer and ner.model_scheme == "iobes"
    pos = get_task("pos")
    assert pos.columns == tuple(CONLLU_COLUMNS) and pos.tag_column == "upos"
    assert (pos.metric, pos.scheme, pos.template, pos.constrained) == ("accuracy", "none", "pos", False)
    assert pos.model_scheme == "none"
    chunk = get_task("chunk")
    assert chunk.columns == ("word", "pos", "chunk") and chunk.model_scheme == "iobes"
    cws = get_task("cws")
    assert (cws.scheme, cws.metric, cws.tag_column) == ("bmes", "words", "tag")
    for name, task in TASKS.items():
        assert task.name == name and task.template in ("chunk", "ner", "pos", "cws")
        assert task.tag_column in task.columns
        preset(task.template)                    # every preset template exists


def test_task_overrides():
    t = get_task("ner", columns=("word", "ner"), epochs=3, constrained=False, scheme=None)
    assert t.columns == ("word", "ner") and t.epochs == 3 and not t.constrained
    assert t.scheme == "iob2"                    # None overrides nothing
    assert get_task("ner", encoding="iob2").model_scheme == "iob2"
    assert TASKS["ner"].epochs == 8              # the preset itself is untouched


def test_unknown_task():
    with pytest.raises(InputError, match="unknown task 'tagging'"):
        get_task("tagging")
    with pytest.raises(InputError, match="unknown task"):
        Tagger(task="srl").fit([["a"]], [["O"]])


# ---------------------------------------------------------------------- optional templates
def test_optional_columns_dropped_by_hand():
    lines = ["?lower(w[0])|pos[0]", "w[0]", "?pos[-1]", "?gaz[0]|shortshape(w[0])"]
    assert optional_columns_dropped(lines, {"word", "ner"}) == ["w[0]"]
    assert optional_columns_dropped(lines, {"word", "pos", "ner"}) == ["lower(w[0])|pos[0]", "w[0]",
                                                                       "pos[-1]"]
    assert optional_columns_dropped(lines, {"pos"}) == ["w[0]", "pos[-1]"]     # alias w = word missing
    assert optional_columns_dropped(lines, {"word", "pos", "gaz"}) == [line.lstrip("?") for line in lines]


def test_ner_preset_pos_templates_follow_the_data():
    plain = [line for line in NER if not line.startswith("?")]
    pos_lines = [line[1:] for line in NER if line.startswith("?") and "pos[" in line]
    assert pos_lines and plain
    without = optional_columns_dropped(preset("ner"), {"word", "ner"})
    assert without == plain
    assert not any("pos[" in line or line.startswith("?") for line in without)
    with_pos = optional_columns_dropped(preset("ner"), {"word", "pos", "ner"})
    assert [line for line in with_pos if "pos[" in line] == pos_lines
    assert not any("gaz[" in line for line in with_pos)
    parse_templates(with_pos)                    # all still parse once the '?' is gone


def test_ner_tagger_drops_or_keeps_pos_templates():
    no_pos = Tagger.train(ner_words(), ner_tags(), task="ner", columns=["word", "ner"], epochs=2)
    assert not any("pos[" in line for line in no_pos.template_lines_)
    assert "gaz[0]" in no_pos.template_lines_      # the gazetteer column is built for ner
    with_pos = Tagger.train(ner_pairs(), ner_tags(), task="ner", epochs=2)
    assert "pos[0]" in with_pos.template_lines_ and "pos[-1]|pos[0]" in with_pos.template_lines_
    assert "lower(w[0])|pos[0]" in with_pos.template_lines_
    assert not any(line.startswith("?") for line in with_pos.template_lines_ + no_pos.template_lines_)
    assert with_pos.features_.n_state_attributes > no_pos.features_.n_state_attributes


# ---------------------------------------------------------------------------------- rare()
def _rare_values(fi: FeatureIndex, feats) -> list[str]:
    """Decode the rare(w[0]) attribute ids of a one-template index back to "0"/"1"."""
    keys = fi.keys[0][feats.state[:, 0]]
    return [fi.vocabs[0][k] for k in keys.tolist()]


def test_rare_counts_training_occurrences():
    train = Corpus.from_sentences([["the", "cat", "sat"], ["the", "dog", "ran"], ["a", "cat", "Zürich"],
                                   ["北京", "The", "北京"]])
    fi = FeatureIndex(parse_templates(["rare(w[0])"]))
    feats = fi.fit_transform(train)
    # the ×2, cat ×2, 北京 ×2 are frequent; sat, dog, ran, a, Zürich, The (case matters) seen once
    assert _rare_values(fi, feats) == ["0", "0", "1", "0", "1", "1", "1", "0", "1", "0", "1", "0"]
    test = Corpus.from_sentences([["the", "mouse", "北京", "cat", "sat", "上海"]])
    assert _rare_values(fi, fi.transform(test)) == ["0", "1", "0", "0", "1", "1"]


def test_rare_survives_state_dict_round_trip():
    train = Corpus.from_sentences([["a", "a", "b"], ["c", "b", "d"]])
    templates = parse_templates(["rare(w[0])", "rare(w[0])|w[1]"])
    fi = FeatureIndex(templates)
    fi.fit_transform(train)
    meta, arrays = fi.state_dict()
    again = FeatureIndex.from_state(templates, json.loads(json.dumps(meta)), arrays)
    test = Corpus.from_sentences([["a", "c", "z", "b"]])
    assert again.transform(test).state.tolist() == fi.transform(test).state.tolist()
    assert _rare_values(fi, fi.transform(test)) == ["0", "1", "1", "0"]


# ------------------------------------------------------------------------------- gazetteer
def test_entities_extraction():
    assert entities(["Juan", "vive", "en", "São", "Paulo"], ["B-PER", "O", "O", "B-LOC", "I-LOC"],
                    "iob2") == [(("juan",), "PER"), (("são", "paulo"), "LOC")]
    # conlleval reading of ill-formed IOB2: I- after O or after another type starts an entity
    assert entities(["a", "b", "c", "d"], ["I-PER", "I-PER", "I-LOC", "O"], "iob2") == \
        [(("a", "b"), "PER"), (("c",), "LOC")]
    assert entities(["北京", "Banco", "Central"], ["S-LOC", "B-ORG", "E-ORG"], "iobes") == \
        [(("北京",), "LOC"), (("banco", "central"), "ORG")]
    assert entities(["X", "Y"], ["B-PER", "B-PER"], "iob2") == [(("x",), "PER"), (("y",), "PER")]
    assert entities(["x"], ["O"], "iob2") == []


def test_gazetteer_longest_match_lowercase():
    g = Gazetteer([(("new",), "LOC"), (("new", "york"), "LOC"), (("new", "york", "times"), "ORG"),
                   (("york",), "PER"), (("são", "paulo"), "LOC")])
    words = ["The", "New", "York", "Times", "in", "NEW", "York", "york", "SÃO", "Paulo", "Paulo"]
    assert g.column(words) == ["O", "B-ORG", "I-ORG", "I-ORG", "O", "B-LOC", "I-LOC", "B-PER",
                               "B-LOC", "I-LOC", "O"]
    assert g.column([]) == []
    assert Gazetteer([]).column(["a", "b"]) == ["O", "O"]


def test_gazetteer_most_frequent_type_and_length_limit():
    long = tuple(f"w{i}" for i in range(MAX_ENTITY_TOKENS + 1))
    g = Gazetteer([(("madrid",), "LOC"), (("madrid",), "ORG"), (("madrid",), "LOC"), (long, "ORG"),
                   (long[:MAX_ENTITY_TOKENS], "MISC")])
    assert g.types[("madrid",)] == "LOC"
    assert long not in g.types and g.max_len == MAX_ENTITY_TOKENS
    assert Gazetteer.from_json(json.loads(json.dumps(g.to_json()))).types == g.types


def _ner_corpus(sents):
    return Corpus.from_sentences([[t[0] for t in s] for s in sents], [[t[2] for t in s] for s in sents],
                                 extra={"pos": [[t[1] for t in s] for s in sents]}, tag_column="ner")


def test_jackknifed_gazetteer_hides_a_sentences_own_entities():
    corpus = _ner_corpus(NER_SENTS)
    out, full = jackknifed_gazetteer(corpus, "word", "ner", "iob2", 10, 0)  # 6 sentences → one per fold
    gaz = list(out.sentences(GAZ_COLUMN))
    # Zürich, Banco de España, São Paulo and 北京 occur in one sentence only: never marked there
    assert gaz[1][3] == "O" and gaz[3] == ["O"] * 5 and gaz[4][2:] == ["O", "O"] and gaz[5][0] == "O"
    # Juan, Madrid and María occur twice: each occurrence is marked from the other sentence
    assert gaz[0] == ["B-PER", "O", "O", "B-LOC", "O"]
    assert gaz[2] == ["B-PER", "O", "B-LOC", "O"]
    assert gaz[1][0] == "B-PER" and gaz[4][0] == "B-PER"
    # the returned gazetteer (used at test time) has every entity
    assert full.types == {("juan",): "PER", ("madrid",): "LOC", ("maría",): "PER", ("zürich",): "LOC",
                          ("banco", "de", "españa"): "ORG", ("são", "paulo"): "LOC", ("北京",): "LOC"}
    assert out.columns["word"] == corpus.columns["word"] and out.columns["ner"] == corpus.columns["ner"]
    # one fold: the sentence's own entities are marked
    single, _ = jackknifed_gazetteer(corpus, "word", "ner", "iob2", 1, 0)
    assert list(single.sentences(GAZ_COLUMN))[3] == ["O", "B-ORG", "I-ORG", "I-ORG", "O"]
    assert list(full.annotate(corpus).sentences(GAZ_COLUMN)) == list(single.sentences(GAZ_COLUMN))


def test_jackknifed_many_sentences_unique_entities_never_marked():
    sents = [[(f"Ciudad{i}", "NP", "B-LOC"), ("y", "CC", "O"), ("Madrid", "NP", "B-LOC")] for i in range(25)]
    out, full = jackknifed_gazetteer(_ner_corpus(sents), "word", "ner", "iob2", 10, 3)
    for g in out.sentences(GAZ_COLUMN):
        assert g[0] == "O"                       # Ciudad<i> is in its own sentence only
        assert g[2] == "B-LOC"                   # Madrid is in every fold
    assert len(full.types) == 26


def test_gazetteer_reads_entity_lists_of_older_models():
    g = Gazetteer.from_json([[["banco", "de", "españa"], "ORG"], [["madrid"], "LOC"]])
    assert g.types == {("banco", "de", "españa"): "ORG", ("madrid",): "LOC"} and g.max_len == 3
    assert g.case == {}
    corpus = Corpus.from_sentences([["El", "Banco", "de", "España"]])
    out = g.annotate(corpus)
    assert out.columns[GAZ_COLUMN] == ["O", "B-ORG", "I-ORG", "I-ORG"]
    assert out.columns[CASE_COLUMN] == ["U^", "U", "-", "U"]     # no counts: every word unseen


# ------------------------------------------------------------------ document roles (doc column)
def test_doc_roles_of_capitalised_words():
    sents = [["Ayer", "habló", "Víctor", "Castaño", "en", "Madrid", "."],
             ["Lo", "de", "Castaño", "fue", "grande", "y", "Madrid", "aplaudió"],
             ["La", "Real", "Sociedad", "de", "Madrid", "y", "la", "sociedad", "civil"],
             ["Sociedad", "!"]]
    roles = doc_roles(Corpus.from_sentences(sents), "word")
    by_sent = Corpus.from_sentences(sents).with_column(DOC_COLUMN, roles)
    doc = list(by_sent.sentences(DOC_COLUMN))
    assert doc[0] == ["0", "-", "0", "S", "-", "S", "-"]   # Castaño, Madrid: alone in sentence 1
    assert doc[1][2] == "L"                                # ... but last of "Víctor Castaño" earlier
    assert doc[1][6] == "S"                                # Madrid alone elsewhere
    # Sociedad: "sociedad" in lowercase nearby; the sentence-initial "Sociedad" of sentence 4 is no
    # evidence (every first word is capitalised) ...
    assert doc[2][1:3] == ["0", "l"]
    assert doc[2][4] == "S"
    assert doc[3][0] == "Ll"                               # ... but it is described by the others
    assert doc[2][0] == "l"                                # La: "la" in lowercase in its own sentence
    assert all(d == "-" for d, w in zip(roles, by_sent.columns["word"]) if not w[:1].isupper())


def test_doc_roles_window_is_counted_in_sentences():
    sents = [["Pedro", "Gómez", "llegó"]] + [["nada"]] * 3 + [["con", "Gómez"]]
    c = Corpus.from_sentences(sents)
    assert doc_roles(c, "word", window=4)[1] == "S" and doc_roles(c, "word", window=4)[-1] == "L"
    assert doc_roles(c, "word", window=3)[1] == "0" and doc_roles(c, "word", window=3)[-1] == "0"
    one = Corpus.from_sentences([["Gómez", "y", "Gómez"]])     # the other occurrence, same sentence
    assert doc_roles(one, "word") == ["S", "-", "0"]
    assert doc_roles(Corpus.from_sentences([[]]), "word") == []


# ---------------------------------------------------------------- training capitalisation (case)
def test_case_counts_and_column():
    train = Corpus.from_sentences([["El", "banco", "de", "El", "Salvador"], ["Banco", "Central", "y", "el",
                                                                             "banco", "."]])
    counts = case_counts(train, "word")
    # sentence-initial capitals are not counted; words with no letters are left out
    assert counts == {"el": (1, 1), "banco": (2, 0), "de": (1, 0), "salvador": (0, 1),
                      "central": (0, 1), "y": (1, 0)}
    test = Corpus.from_sentences([["Banco", "Salvador", "Nuevo", "El", "EL", "x"]])
    assert case_column(test, "word", counts) == ["L^", "C", "U", "M", "M", "-"]


def test_jackknifed_case_hides_a_sentences_own_spelling():
    sents = [[("Aquí", "RG", "O"), ("Quilmes", "NP", "B-ORG")]] + \
        [[("Aquí", "RG", "O"), ("el", "DA", "O"), ("Banco", "NP", "B-ORG")] for _ in range(19)] + \
        [[("un", "DI", "O"), ("banco", "NC", "O")]]
    out, full = jackknifed_gazetteer(_ner_corpus(sents), "word", "ner", "iob2", 10, 0)
    case = list(out.sentences(CASE_COLUMN))
    assert case[0] == ["U^", "U"]        # Quilmes: only in its own sentence, so unseen there
    assert full.case["quilmes"] == (0, 1) and full.case["banco"] == (1, 19)
    # Banco: capitalised in the other folds, and in lowercase there unless "un banco" shares its fold
    fold_of = np.random.default_rng(0).permutation(len(sents)) % 10
    assert [c[2] for c in case[1:20]] == ["C" if fold_of[i] == fold_of[20] else "M" for i in range(1, 20)]
    assert {c[2] for c in case[1:20]} == {"C", "M"}
    assert case[20] == ["-", "-"]
    test = full.annotate(_ner_corpus(sents[:1]))
    assert test.columns[CASE_COLUMN] == ["U^", "C"]       # at test time: the full counts
    again = Gazetteer.from_json(json.loads(json.dumps(full.to_json())))
    assert again.case == full.case and again.types == full.types
    # continued training adds the counts to those of the earlier gazetteer
    _, more = jackknifed_gazetteer(_ner_corpus(sents[:1]), "word", "ner", "iob2", 10, 0, base=full)
    assert more.case["quilmes"] == (0, 2) and more.case["banco"] == (1, 19)


@pytest.fixture(scope="module")
def ner_tagger():
    return Tagger.train(ner_pairs(), ner_tags(), task="ner", epochs=10, seed=0)


def test_ner_tagger_fits_training_data(ner_tagger):
    assert ner_tagger.predict(ner_pairs()) == ner_tags()
    assert ner_tagger.labels_ == sorted({"B-LOC", "B-ORG", "E-LOC", "E-ORG", "I-ORG", "O", "S-LOC",
                                         "S-PER"})                 # trained in IOBES
    gaz = ner_tagger.dictionary_
    assert gaz.types[("banco", "de", "españa")] == "ORG" and gaz.types[("北京",)] == "LOC"


def test_ner_gazetteer_saved_and_loaded(ner_tagger, tmp_path):
    ner_tagger.save(tmp_path / "ner")
    loaded = Tagger.load(tmp_path / "ner")
    assert loaded.dictionary_.to_json() == ner_tagger.dictionary_.to_json()
    new = [[("Hoy", "RG"), ("María", "NP"), ("visita", "VM"), ("São", "NP"), ("Paulo", "NP")],
           [("El", "DA"), ("banco", "NP"), ("de", "SP"), ("españa", "NP"), ("y", "CC"), ("北京", "NR")],
           [("Zürich", "NP")]]
    assert loaded.predict(new) == ner_tagger.predict(new)
    assert loaded.predict(ner_pairs()) == ner_tags()
    assert loaded.evaluate(ner_pairs(), ner_tags()) == ner_tagger.evaluate(ner_pairs(), ner_tags())


def test_ner_preset_reads_the_added_columns(ner_tagger):
    for line in ("gaz[0]", "case[0]", "doc[0]", "y[-1]|y[0]|case[0]", "doc[0]|shortshape(w[0])"):
        assert line in ner_tagger.template_lines_
    assert {"gaz", "case", "doc"} <= set(ner_tagger.features_.columns)
    corpus = ner_tagger._annotated(ner_tagger._corpus([[("Hoy", "RG"), ("Madrid", "NP")],
                                                            [("María", "NP")]], None, need_tags=False))
    # María only starts training sentences, where capitals say nothing: unseen
    assert corpus.columns[CASE_COLUMN] == ["U^", "C", "U^"]
    assert corpus.columns[DOC_COLUMN] == ["0", "0", "0"]


def test_ner_without_gaz_template_stores_no_gazetteer():
    t = Tagger.train(ner_pairs(), ner_tags(), task="ner", template=["w[0]", "lower(w[-1])", "bias"],
                     epochs=2)
    assert t.dictionary_ is None


def test_ner_predictions_use_the_gazetteer(ner_tagger):
    """The gaz column at prediction time is the full training gazetteer (longest match)."""
    corpus = ner_tagger._corpus([[("El", "DA"), ("Banco", "NP"), ("de", "SP"), ("España", "NP")]], None,
                                need_tags=False)
    with_gaz = ner_tagger._annotated(corpus)
    assert with_gaz.columns[GAZ_COLUMN] == ["O", "B-ORG", "I-ORG", "I-ORG"]


S_FIRST = [
    [("Juan", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"), ("Madrid", "NP", "B-LOC")],
    [("María", "NP", "B-PER"), ("trabaja", "VM", "O"), ("en", "SP", "O"), ("Zürich", "NP", "B-LOC")],
    [("Juan", "NP", "B-PER"), ("visita", "VM", "O"), ("Madrid", "NP", "B-LOC")],
]
S_SECOND = [
    [("Ana", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"), ("Lima", "NP", "B-LOC")],
    [("Pedro", "NP", "B-PER"), ("trabaja", "VM", "O"), ("en", "SP", "O"), ("Quito", "NP", "B-LOC")],
    [("Ana", "NP", "B-PER"), ("visita", "VM", "O"), ("Lima", "NP", "B-LOC")],
]
PROBE = [["y", "Lima", "y", "Madrid", "y", "Ana", "y", "Juan"]]


def test_refit_ner_tagger_uses_the_new_gazetteer(tmp_path):
    # a template reading only the gazetteer column makes predictions depend on it alone
    kw = dict(task="ner", columns=["word", "ner"], template=["gaz[0]", "bias"], epochs=5, seed=0)
    tagger = Tagger(**kw).fit(ner_words(S_FIRST), ner_tags(S_FIRST))
    tagger.predict(PROBE)                                  # first use of the (first) gazetteer
    tagger.fit(ner_words(S_SECOND), ner_tags(S_SECOND))
    fresh = Tagger(**kw).fit(ner_words(S_SECOND), ner_tags(S_SECOND))
    assert tagger.dictionary_.to_json() == fresh.dictionary_.to_json()
    tagger.save(tmp_path / "m")
    saved = Tagger.load(tmp_path / "m").predict(PROBE)
    assert saved == fresh.predict(PROBE)
    assert tagger.predict(PROBE) == saved                  # fails: the refitted tagger uses S_FIRST's


def test_partial_fit_ner_model_with_gazetteer():
    tagger = Tagger.train(ner_words(S_FIRST), ner_tags(S_FIRST), task="ner", columns=["word", "ner"],
                          epochs=3)
    tagger.partial_fit(ner_words(S_SECOND), ner_tags(S_SECOND), epochs=2)
    assert len(tagger.predict(PROBE)) == 1


# ------------------------------------------------------------------------------------- POS
POS_SENTS = [
    [("The", "DET"), ("cat", "NOUN"), ("sat", "VERB"), (".", "PUNCT")],
    [("A", "DET"), ("dog", "NOUN"), ("ran", "VERB"), ("home", "ADV"), (".", "PUNCT")],
    [("Zürich", "PROPN"), ("grew", "VERB"), ("．", "PUNCT")],
    [("北京", "PROPN"), ("欢迎", "VERB"), ("你", "PRON")],
    [("the", "DET"), ("naïve", "ADJ"), ("cat", "NOUN"), ("ran", "VERB"), ("😀", "SYM")],
]


def conllu_text(sents) -> str:
    out = []
    for k, s in enumerate(sents):
        out.append(f"# sent_id = {k + 1}")
        for i, (w, tag) in enumerate(s, 1):
            out.append(f"{i}\t{w}\t{w.lower()}\t{tag}\t_\t_\t0\tdep\t_\t_")
        out.append("")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def pos_tagger():
    return Tagger.train([[w for w, _ in s] for s in POS_SENTS], [[t for _, t in s] for s in POS_SENTS],
                        task="pos", columns=["word", "upos"], epochs=10, seed=0)


def test_pos_report_accuracy_and_confusions(pos_tagger):
    words = [[w for w, _ in s] for s in POS_SENTS]
    gold = [[t for _, t in s] for s in POS_SENTS]
    assert pos_tagger.predict(words) == gold
    perfect = pos_tagger.evaluate(words, gold)
    calibration = perfect.pop("calibration")  # no dev data in training: τ = 1, not fitted
    assert perfect == {"accuracy": 1.0, "confusions": [], "tokens": 20, "sentences": 5}
    assert calibration["temperature"] == 1.0 and not calibration["fitted"] and 0 <= calibration["ece"] < 0.01
    wrong = [list(s) for s in gold]
    wrong[0][1] = "VERB"          # gold says cat/VERB, the model says NOUN
    wrong[3][2] = "NOUN"          # 你/NOUN, the model says PRON
    wrong[4][1] = "VERB"          # naïve/VERB, the model says ADJ
    wrong[1][1] = "VERB"          # dog/VERB → NOUN
    report = pos_tagger.evaluate(words, wrong)
    assert report["accuracy"] == pytest.approx(16 / 20)
    assert report["confusions"] == [("VERB", "NOUN", 2), ("NOUN", "PRON", 1), ("VERB", "ADJ", 1)]
    assert pos_tagger.score(words, wrong) == pytest.approx(16 / 20)


def test_pos_model_eval_json_cli(tmp_path):
    train = tmp_path / "train.conllu"
    train.write_text(conllu_text(POS_SENTS), encoding="utf-8")
    wrong = [list(s) for s in POS_SENTS]
    wrong[2] = [("Zürich", "NOUN")] + wrong[2][1:]   # the model says PROPN
    gold = tmp_path / "gold.conllu"
    gold.write_text(conllu_text(wrong), encoding="utf-8")
    model = tmp_path / "pos"
    runner = CliRunner()
    r = runner.invoke(main, ["train", "--task", "pos", "--train", str(train), "--epochs", "10",
                             "--model", str(model), "-q"])
    assert r.exit_code == 0, (r.output, r.exception)
    r = runner.invoke(main, ["eval", "--model", str(model), "--json", str(gold)])
    assert r.exit_code == 0, (r.output, r.exception)
    report = json.loads(r.stdout)
    calibration = report.pop("calibration")
    assert report == {"accuracy": pytest.approx(19 / 20), "confusions": [["NOUN", "PROPN", 1]],
                      "tokens": 20, "sentences": 5}
    assert set(calibration) == {"temperature", "fitted", "ece", "nll"} and calibration["fitted"] is False
    text = runner.invoke(main, ["eval", "--model", str(model), str(gold)])
    assert "token accuracy 95.00 (20 tokens)" in text.stdout
    assert f"calibration ECE {calibration['ece']:.4f} (15 bins, temperature 1, not fitted)" in text.stdout
    assert "NOUN -> PROPN: 1" in text.stdout


# --------------------------------------------------------------------------- CoNLL-2002 (corpus)
def _model_scheme_paths(tagger: Tagger, path: str) -> list[list[str]]:
    """Predictions in the model's own encoding (IOBES), before conversion back to IOB2."""
    corpus = tagger._corpus(path, None, need_tags=False)
    flat = tagger.label_set_.decode(tagger.predict_ids(corpus))
    p = corpus.sent_ptr.tolist()
    return [flat[p[i]:p[i + 1]] for i in range(len(p) - 1)]


@pytest.mark.corpus
def test_conll2002_spanish_constrained_vs_unconstrained():
    train, test = CORPORA / "conll2002" / "esp.train", CORPORA / "conll2002" / "esp.testb"
    missing = [str(p) for p in (train, test) if not p.is_file()]
    if missing:
        pytest.skip(f"CoNLL-2002 corpus not found ({', '.join(missing)} missing)")
    f1, invalid = {}, {}
    for constrained in (True, False):
        tagger = Tagger.train(str(train), task="ner", epochs=5, constrained=constrained, seed=0)
        f1[constrained] = tagger.score(str(test))
        pred = tagger.predict(str(test))
        invalid[constrained] = sum(not valid_sequence(p, "iob2") for p in pred)
        raw = _model_scheme_paths(tagger, str(test))
        invalid_iobes = sum(not valid_sequence(p, "iobes") for p in raw)
        print(f"esp.testb F1 constrained={constrained}: {100 * f1[constrained]:.2f} "
              f"(invalid IOB2 outputs {invalid[constrained]}, invalid IOBES model paths {invalid_iobes})")
        if constrained:
            assert invalid_iobes == 0
    assert invalid[True] == 0
    assert f1[True] >= f1[False] - 0.003, f1
