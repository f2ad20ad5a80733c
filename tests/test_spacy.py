"""The spaCy component and tokenizer (`structperc.spacy_component`), on blank pipelines only: models
trained here (NER, POS, chunking from the shipped CoNLL-2000 sample, word segmentation) run through
``nlp.pipe`` in batches and must give what `Tagger.predict` / `Segmenter.segment` give; the factory
and the tokenizer are found through the entry points; bad models and inputs fail with one clear line."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install \"structperc[spacy]\")")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from spacy.tokens import Doc  # noqa: E402
from spacy.util import get_words_and_spaces  # noqa: E402
from testkit import CWS_TRAIN, DOC_TRAIN, REPO  # noqa: E402

from structperc import Tagger  # noqa: E402
from structperc.errors import InputError, ModelFormatError  # noqa: E402
from structperc.segmenter import Segmenter  # noqa: E402
from structperc.spacy_component import CONFIDENCE, StructpercComponent, StructpercTokenizer, words_and_spaces  # noqa: E402

CHUNK_SAMPLE = REPO / "corpora" / "conll2000-train-sample.txt.gz"

# (word, pos, ner), IOB2
NER_SENTS = [
    [("Juan", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"), ("Madrid", "NP", "B-LOC"), (".", "Fp", "O")],
    [("María", "NP", "B-PER"), ("trabaja", "VM", "O"), ("en", "SP", "O"), ("Zürich", "NP", "B-LOC"),
     (".", "Fp", "O")],
    [("Juan", "NP", "B-PER"), ("visita", "VM", "O"), ("Madrid", "NP", "B-LOC"), (".", "Fp", "O")],
    [("El", "DA", "O"), ("Banco", "NP", "B-ORG"), ("de", "SP", "I-ORG"), ("España", "NP", "I-ORG"),
     ("abrió", "VM", "O")],
    [("María", "NP", "B-PER"), ("ama", "VM", "O"), ("São", "NP", "B-LOC"), ("Paulo", "NP", "I-LOC")],
    [("Pedro", "NP", "B-PER"), ("Castaño", "NP", "I-PER"), ("vive", "VM", "O"), ("en", "SP", "O"),
     ("Lima", "NP", "B-LOC")],
]
# (word, upos)
POS_SENTS = [
    [("The", "DET"), ("cat", "NOUN"), ("sat", "VERB"), (".", "PUNCT")],
    [("A", "DET"), ("dog", "NOUN"), ("ran", "VERB"), ("home", "ADV"), (".", "PUNCT")],
    [("Zürich", "PROPN"), ("grew", "VERB"), ("．", "PUNCT")],
    [("the", "DET"), ("naïve", "ADJ"), ("cat", "NOUN"), ("ran", "VERB"), ("😀", "SYM")],
]
# new sentences: words seen in training, in other orders and company
NER_TEST = [["María", "vive", "en", "Madrid", "."], ["Juan", "ama", "São", "Paulo"],
            ["El", "Banco", "de", "España", "visita", "Lima"], ["Pedro", "Castaño", "trabaja", "."],
            ["Castaño", "vive", "en", "Zürich"]]


def words(sents):
    return [[t[0] for t in s] for s in sents]


def column(sents, k):
    return [[t[k] for t in s] for s in sents]


def chunk_sentences(limit: int) -> list[list[tuple[str, str, str]]]:
    sents: list[list[tuple[str, str, str]]] = []
    cur: list[tuple[str, str, str]] = []
    with gzip.open(CHUNK_SAMPLE, "rt", encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                if cur:
                    sents.append(cur)
                    cur = []
                    if len(sents) == limit:
                        break
                continue
            w, p, c = line.split()
            cur.append((w, p, c))
    return sents


def iob2_of(doc, spans) -> list[str]:
    """IOB2 tags of ``spans`` over ``doc`` (for comparing with `Tagger.predict`)."""
    tags = ["O"] * len(doc)
    for s in spans:
        tags[s.start] = f"B-{s.label_}"
        for i in range(s.start + 1, s.end):
            tags[i] = f"I-{s.label_}"
    return tags


# ------------------------------------------------------------------------------------ models
@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("spacy-models")
    paths = {}
    ner = Tagger(task="ner", columns=["word", "ner"], epochs=5, seed=0).fit(words(NER_SENTS), column(NER_SENTS, 2))
    paths["ner"] = ner.save(root / "ner").parent
    ner_pos = Tagger(task="ner", epochs=5, seed=0).fit([[(w, p) for w, p, _ in s] for s in NER_SENTS],
                                                       column(NER_SENTS, 2))
    paths["ner_pos"] = ner_pos.save(root / "ner-pos").parent
    upos = Tagger(task="pos", columns=["word", "upos"], epochs=10, seed=0).fit(words(POS_SENTS),
                                                                               column(POS_SENTS, 1))
    paths["upos"] = upos.save(root / "upos").parent
    # a `upos` column whose tags are not Universal POS tags, and an `xpos` model: token.tag_
    nonud = Tagger(task="pos", columns=["word", "upos"], epochs=5).fit(words(NER_SENTS), column(NER_SENTS, 1))
    paths["pos_nonud"] = nonud.save(root / "pos-nonud").parent
    xpos = Tagger(task="pos", columns=["word", "xpos"], tag_column="xpos", epochs=5).fit(
        words(NER_SENTS), column(NER_SENTS, 1))
    paths["xpos"] = xpos.save(root / "xpos").parent
    chunk_file = root / "chunk-train.txt"
    chunk_file.write_text("\n\n".join("\n".join(" ".join(t) for t in s) for s in chunk_sentences(300)) + "\n",
                          encoding="utf-8")
    chunk = Tagger(task="chunk", epochs=3, seed=0).fit(str(chunk_file))
    paths["chunk"] = chunk.save(root / "chunk").parent
    # a model reading a column with no token attribute by default
    foo = Tagger(task="ner", columns=["word", "foo", "ner"], template=["w[0]", "foo[0]", "w[-1]"], epochs=3).fit(
        [[(w, p) for w, p, _ in s] for s in NER_SENTS], column(NER_SENTS, 2))
    paths["foo"] = foo.save(root / "foo").parent
    # a model that reads only the `doc` column (and the gazetteer): it tags a capitalised word by the
    # roles the same word plays in nearby sentences
    doc_only = Tagger(task="ner", columns=["word", "ner"], template=["?gaz[0]", "doc[0]", "bias"], epochs=5,
                      seed=0).fit(words(DOC_TRAIN), column(DOC_TRAIN, 1))
    paths["ner_doc"] = doc_only.save(root / "ner-doc").parent
    cws = Segmenter.train(CWS_TRAIN, epochs=10, seed=0)
    paths["cws"] = cws.save(root / "cws").parent
    return paths


@pytest.fixture(scope="module")
def chunk_test() -> list[list[tuple[str, str, str]]]:
    return chunk_sentences(340)[300:]


def pipeline(model: Path, lang: str = "xx", **config):
    nlp = spacy.blank(lang)
    nlp.add_pipe("structperc", config={"model": str(model), **config})
    return nlp


# ---------------------------------------------------------------------------------- registration
def test_factory_and_tokenizer_found_through_entry_points(models):
    """In a fresh interpreter that never imports structperc: spaCy finds both by name."""
    code = f"""
import json, sys, spacy
nlp = spacy.blank("xx")
nlp.add_pipe("structperc", config={{"model": {str(models["ner"])!r}}})
doc = nlp("Juan vive en Madrid .")
zh = spacy.blank("zh", config={{"nlp": {{"tokenizer": {{"@tokenizers": "structperc.Tokenizer.v1",
                                                        "model": {str(models["cws"])!r}}}}}}})
print(json.dumps([[e.text for e in doc.ents], [t.text for t in zh("上海体育局召开会议")],
                  type(zh.tokenizer).__name__]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    ents, tokens, kind = json.loads(out.stdout)
    assert ents == ["Juan", "Madrid"]
    assert tokens == ["上海", "体育局", "召开", "会议"] and kind == "StructpercTokenizer"


# ------------------------------------------------------------------------------------------ NER
def test_ner_pipe_sets_doc_ents_as_tagger_predict(models):
    nlp = pipeline(models["ner"])
    tagger = Tagger.load(models["ner"])
    docs = [Doc(nlp.vocab, words=s) for s in NER_TEST]
    out = list(nlp.pipe(docs, batch_size=3))
    expected = [tagger.predict([s])[0] for s in NER_TEST]
    assert any(t != "O" for tags in expected for t in tags)
    for doc, tags in zip(out, expected):
        assert iob2_of(doc, doc.ents) == tags
        # spaCy's own token view agrees
        assert [t.ent_iob_ + ("-" + t.ent_type_ if t.ent_type_ else "") for t in doc] == tags
    assert [(e.text, e.label_) for e in out[0].ents] == [("María", "PER"), ("Madrid", "LOC")]


def test_ner_docs_of_a_batch_do_not_see_each_other(models):
    """The `doc` column reads nearby sentences: a doc is tagged alike alone and in any batch."""
    nlp = pipeline(models["ner"])
    texts = [" ".join(s) for s in NER_TEST] * 3
    alone = [[(e.start, e.end, e.label_) for e in nlp(t).ents] for t in texts]
    for size in (1, 2, 7, 100):
        batched = [[(e.start, e.end, e.label_) for e in d.ents] for d in nlp.pipe(texts, batch_size=size)]
        assert batched == alone


def test_doc_column_never_reaches_across_docs(models):
    """Tagged together, the second sentence sees "Víctor Zapata" and calls Zapata a person; as two
    spaCy docs, in one batch or in two, neither sees the other."""
    tagger = Tagger.load(models["ner_doc"])
    a, b = ["Víctor", "Zapata", "habló"], ["Ayer", "Zapata", "vino"]
    alone = tagger.predict([a]) + tagger.predict([b])
    assert tagger.predict([a, b]) != alone      # the leak this test guards against exists
    nlp = pipeline(models["ner_doc"])
    for size in (1, 2):
        out = list(nlp.pipe([Doc(nlp.vocab, words=a), Doc(nlp.vocab, words=b)], batch_size=size))
        assert [iob2_of(d, d.ents) for d in out] == alone
    # within one doc (two sentences), the sentences do see each other, as in one predict call
    doc = Doc(nlp.vocab, words=a + b, sent_starts=[True, False, False, True, False, False])
    assert iob2_of(doc, nlp(doc).ents) == sum(tagger.predict([a, b]), [])


def test_ner_model_reading_pos_takes_it_from_tag_(models):
    nlp = pipeline(models["ner_pos"])
    tagger = Tagger.load(models["ner_pos"])
    pos = {w: p for s in NER_SENTS for w, p, _ in s}
    docs = [Doc(nlp.vocab, words=s, tags=[pos.get(w, "NP") for w in s]) for s in NER_TEST]
    expected = [tagger.predict([[(w, pos.get(w, "NP")) for w in s]])[0] for s in NER_TEST]
    for doc, tags in zip(nlp.pipe(docs, batch_size=2), expected):
        assert iob2_of(doc, doc.ents) == tags
    with pytest.raises(InputError, match=r"column 'pos' from token.tag_.*empty on token 0 \('Juan'\)"):
        nlp("Juan vive en Madrid")


def test_sentences_are_tagged_one_by_one_and_whitespace_tokens_skipped(models):
    nlp = pipeline(models["ner"])
    tagger = Tagger.load(models["ner"])
    a, b = NER_TEST[0], NER_TEST[2]
    doc = Doc(nlp.vocab, words=a + b, sent_starts=[True] + [False] * (len(a) - 1) + [True] + [False] * (len(b) - 1))
    expected = tagger.predict([a, b])          # one doc: its sentences see each other, as in one predict
    assert iob2_of(doc, nlp(doc).ents) == expected[0] + expected[1]
    spaced = Doc(nlp.vocab, words=["Juan", "\n", "vive", "en", "  ", "Madrid"],
                 spaces=[False, False, True, False, False, False])
    tags = tagger.predict([["Juan", "vive", "en", "Madrid"]])[0]
    got = iob2_of(spaced, nlp(spaced).ents)
    assert [got[i] for i in (0, 2, 3, 5)] == tags and got[1] == got[4] == "O"


def test_overwrite_false_keeps_earlier_entities(models):
    nlp = pipeline(models["ner"], overwrite=False)
    doc = Doc(nlp.vocab, words=["Juan", "vive", "en", "Madrid", "."])
    doc.set_ents([spacy.tokens.Span(doc, 0, 2, label="MISC")])
    assert [(e.text, e.label_) for e in nlp(doc).ents] == [("Juan vive", "MISC"), ("Madrid", "LOC")]
    nlp2 = pipeline(models["ner"])
    doc = Doc(nlp2.vocab, words=["Juan", "vive", "en", "Madrid", "."])
    doc.set_ents([spacy.tokens.Span(doc, 1, 3, label="MISC")])
    assert [(e.text, e.label_) for e in nlp2(doc).ents] == [("Juan", "PER"), ("Madrid", "LOC")]


def test_marginals_store_the_confidence_of_each_tag(models):
    nlp = pipeline(models["ner"], marginals=True)
    plain = pipeline(models["ner"])
    tagger = Tagger.load(models["ner"])
    docs = list(nlp.pipe([" ".join(s) for s in NER_TEST], batch_size=2))
    for doc, s in zip(docs, NER_TEST):
        assert [(e.start, e.end, e.label_) for e in doc.ents] == \
            [(e.start, e.end, e.label_) for e in plain(" ".join(s)).ents]
        tags = tagger.predict([s])[0]
        marg = tagger.predict_marginals([s])[0]
        conf = [t._.get(CONFIDENCE) for t in doc]
        assert conf == pytest.approx([m[t] for m, t in zip(marg, tags)], abs=1e-9)
        assert all(0.0 < c <= 1.0 + 1e-12 for c in conf)


# ------------------------------------------------------------------------------------- POS
def test_upos_model_sets_pos_(models):
    nlp = pipeline(models["upos"], lang="en")
    tagger = Tagger.load(models["upos"])
    sents = [["The", "dog", "sat", "."], ["the", "naïve", "cat", "grew", "home", "."], ["A", "cat", "ran"]]
    out = list(nlp.pipe([Doc(nlp.vocab, words=s) for s in sents], batch_size=2))
    assert [[t.pos_ for t in d] for d in out] == tagger.predict(sents)
    assert all(t.tag_ == "" for d in out for t in d)
    assert nlp.get_pipe("structperc").annotation == "pos"


def test_other_pos_models_set_tag_(models):
    for name in ("pos_nonud", "xpos"):
        nlp = pipeline(models[name])
        tagger = Tagger.load(models[name])
        out = list(nlp.pipe([Doc(nlp.vocab, words=s) for s in NER_TEST], batch_size=4))
        assert [[t.tag_ for t in d] for d in out] == tagger.predict(NER_TEST), name
        assert all(t.pos_ == "" for d in out for t in d)
    with pytest.raises(InputError, match="annotate='pos' needs Universal POS tags"):
        pipeline(models["pos_nonud"], annotate="pos")


# ------------------------------------------------------------------------------------ chunks
def test_chunk_model_sets_doc_spans_from_tag_(models, chunk_test):
    nlp = pipeline(models["chunk"], lang="en")
    tagger = Tagger.load(models["chunk"])
    assert tagger.reads() == {"word", "pos"}
    docs = [Doc(nlp.vocab, words=[w for w, _, _ in s], tags=[p for _, p, _ in s]) for s in chunk_test]
    out = list(nlp.pipe(docs, batch_size=16))
    expected = tagger.predict([[(w, p) for w, p, _ in s] for s in chunk_test])
    assert sum(len(d.spans["chunks"]) for d in out) > 100
    assert [iob2_of(d, d.spans["chunks"]) for d in out] == expected
    assert not any(d.ents for d in out)
    # the span key is configurable; the pipeline's own tags stay as they were
    other = pipeline(models["chunk"], lang="en", span_key="np")
    doc = other(Doc(other.vocab, words=[w for w, _, _ in chunk_test[0]], tags=[p for _, p, _ in chunk_test[0]]))
    assert "chunks" not in doc.spans and iob2_of(doc, doc.spans["np"]) == expected[0]
    assert [t.tag_ for t in doc] == [p for _, p, _ in chunk_test[0]]


def test_chunks_as_entities_on_request(models, chunk_test):
    nlp = pipeline(models["chunk"], annotate="ents")
    s = chunk_test[1]
    doc = nlp(Doc(nlp.vocab, words=[w for w, _, _ in s], tags=[p for _, p, _ in s]))
    assert iob2_of(doc, doc.ents) == Tagger.load(models["chunk"]).predict([[(w, p) for w, p, _ in s]])[0]


# ------------------------------------------------------------------------------------ errors
def test_clear_errors(models, tmp_path):
    nlp = spacy.blank("xx")
    with pytest.raises(InputError, match="no structperc model at this path") as info:
        nlp.add_pipe("structperc", config={"model": str(tmp_path / "missing")})
    assert str(tmp_path / "missing") in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(InputError, match="needs a model"):
        nlp.add_pipe("structperc")
    with pytest.raises(ModelFormatError, match="no model here"):
        nlp.add_pipe("structperc", config={"model": str(tmp_path)})
    with pytest.raises(InputError, match="word segmentation model is a tokenizer"):
        nlp.add_pipe("structperc", config={"model": str(models["cws"])})
    with pytest.raises(InputError, match="annotate must be one of"):
        nlp.add_pipe("structperc", config={"model": str(models["ner"]), "annotate": "deps"})
    with pytest.raises(InputError, match="needs a span model"):
        nlp.add_pipe("structperc", config={"model": str(models["upos"]), "annotate": "ents"})
    with pytest.raises(InputError, match=r"reads column 'foo'.*\"columns\""):
        nlp.add_pipe("structperc", config={"model": str(models["foo"])})
    with pytest.raises(InputError, match="spaCy tokens do not have"):
        nlp.add_pipe("structperc", config={"model": str(models["foo"]), "columns": {"foo": "nonsense_"}})
    with pytest.raises(InputError, match="cannot segment text"):
        StructpercTokenizer(nlp.vocab, str(models["ner"]))
    with pytest.raises(InputError, match="no structperc model"):
        spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                        "model": str(tmp_path / "nope")}}})
    assert nlp.pipe_names == []


def test_columns_mapped_to_another_attribute(models):
    nlp = pipeline(models["foo"], columns={"foo": "lemma_"})
    tagger = Tagger.load(models["foo"])
    s = NER_SENTS[0]
    doc = nlp(Doc(nlp.vocab, words=[w for w, _, _ in s], lemmas=[p for _, p, _ in s]))
    assert iob2_of(doc, doc.ents) == tagger.predict([[(w, p) for w, p, _ in s]])[0]


# ----------------------------------------------------------------------------- serialization
def test_pipeline_to_disk_and_bytes_carry_the_model(models, tmp_path):
    nlp = pipeline(models["ner"])
    text = " ".join(NER_TEST[2])
    ents = [(e.start, e.end, e.label_) for e in nlp(text).ents]
    nlp.to_disk(tmp_path / "pipe")
    assert (tmp_path / "pipe" / "structperc" / "model" / "model.zip").is_file()
    loaded = spacy.load(tmp_path / "pipe")
    assert isinstance(loaded.get_pipe("structperc"), StructpercComponent)
    assert [(e.start, e.end, e.label_) for e in loaded(text).ents] == ents
    # from_bytes replaces the model: a chunk pipeline becomes an NER one
    other = pipeline(models["upos"])
    other.get_pipe("structperc").from_bytes(nlp.get_pipe("structperc").to_bytes())
    assert [(e.start, e.end, e.label_) for e in other(text).ents] == ents


def test_a_misspelt_column_is_refused(models):
    """``columns={"POS": ...}`` (for ``pos``) was accepted and the first document failed on ``pos``, mapped."""
    with pytest.raises(InputError, match="config \"columns\" maps 'POS', which the model does not read "
                                         "\\(it reads 'pos'\\)"):
        pipeline(models["ner_pos"], columns={"POS": "norm_"})
    with pytest.raises(InputError, match="maps 'nonsense', which the model does not read \\(it reads the words"):
        pipeline(models["ner"], columns={"nonsense": "tag_"})


def test_a_component_added_after_a_load_reads_its_model(models, tmp_path):
    """A saved pipeline's meta lists its structperc components; a component added under such a name to a loaded
    pipeline (its own excluded at the load, or removed before the save) took itself for the saved copy and never
    read its model."""
    nlp = pipeline(models["ner"])
    nlp.to_disk(tmp_path / "pipe")
    text = " ".join(NER_TEST[2])
    excluded = spacy.load(tmp_path / "pipe", exclude=["structperc"])
    excluded.add_pipe("structperc", config={"model": str(models["upos"])})
    assert [t.pos_ for t in excluded(text)] == Tagger.load(models["upos"]).predict([text.split()])[0]
    nlp.remove_pipe("structperc")
    nlp.to_disk(tmp_path / "removed")
    again = spacy.load(tmp_path / "removed")
    again.add_pipe("structperc", config={"model": str(models["upos"])})
    assert [t.pos_ for t in again(text)] == Tagger.load(models["upos"]).predict([text.split()])[0]


def test_a_bytes_round_trip_needs_no_model_folder(models, tmp_path):
    """``from_config`` then ``from_bytes``: the component read its config's model path, gone by then, though the
    bytes carry the model."""
    import shutil

    shutil.copytree(models["ner"], tmp_path / "ner")
    nlp = pipeline(tmp_path / "ner")
    text = " ".join(NER_TEST[2])
    ents = [(e.start, e.end, e.label_) for e in nlp(text).ents]
    config, data = nlp.config, nlp.to_bytes()
    shutil.rmtree(tmp_path / "ner")
    restored = spacy.blank("xx").from_config(config).from_bytes(data)
    assert [(e.start, e.end, e.label_) for e in restored(text).ents] == ents
    with pytest.raises(InputError, match="no structperc model at this path"):  # a live pipeline still reads it
        pipeline(tmp_path / "ner")


# ------------------------------------------------------------------------------------ tokenizer
@pytest.fixture(scope="module")
def zh(models):
    return spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                           "model": str(models["cws"])}}})


def test_tokenizer_from_config_and_by_assignment_agree_with_segment(models, zh):
    seg = Segmenter.load(models["cws"])
    by_hand = spacy.blank("zh")
    by_hand.tokenizer = StructpercTokenizer(by_hand.vocab, str(models["cws"]))
    texts = ["上海体育局召开会议", "我们爱北京天安门", "２０２４年，我们去北京。", "ABC公司😀𠀋", ""]
    for text in texts:
        for nlp in (zh, by_hand):
            doc = nlp(text)
            assert [t.text for t in doc] == seg.segment(text) and doc.text == text
    assert [t.text for t in zh("上海体育局召开会议")] == ["上海", "体育局", "召开", "会议"]
    piped = list(zh.tokenizer.pipe(texts, batch_size=2))
    assert [[t.text for t in d] for d in piped] == seg.segment_texts(texts)


def test_tokenizer_keeps_whitespace_exactly(zh):
    text = " 上海  体育局\n召开 会议\u3000我们 "
    doc = zh(text)
    assert doc.text == text
    assert [t.text for t in doc if not t.is_space] == ["上海", "体育局", "召开", "会议", "我们"]
    assert [(t.text, t.whitespace_) for t in doc][:4] == [(" ", ""), ("上海", " "), (" ", ""), ("体育局", "")]


_CHARS = st.sampled_from(list("上海体育局召开会议我们爱北京天安门年公司ABC12")
                         + [" ", "  ", "\n", "\t", "\u3000", "😀"])


@settings(max_examples=80, deadline=None)
@given(st.lists(_CHARS, max_size=25).map("".join))
def test_tokenizer_text_round_trip_property(zh, text):
    doc = zh(text)
    assert doc.text == text
    assert [t.text for t in doc if not t.text.isspace()] == zh.tokenizer.segmenter.segment(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet=" \n\t\u3000", max_size=3), st.text(alphabet="ab上😀", min_size=1,
                                                                                  max_size=3)), max_size=8),
       st.text(alphabet=" \n\t", max_size=3))
def test_words_and_spaces_matches_spacy(pairs, tail):
    text = "".join(gap + w for gap, w in pairs) + tail
    ws = [w for _, w in pairs]
    assert words_and_spaces(ws, text) == get_words_and_spaces(ws, text)
    tokens, spaces = words_and_spaces(ws, text)
    assert "".join(t + (" " if s else "") for t, s in zip(tokens, spaces)) == text


def test_words_and_spaces_refuses_words_not_in_text():
    with pytest.raises(InputError, match="does not continue the text"):
        words_and_spaces(["上海", "北京"], "上海 体育")
    with pytest.raises(InputError, match="do not cover the text"):
        words_and_spaces(["上海"], "上海 体育")


# ------------------------------------------------------------------------------ shipped models
def shipped_model(name: str) -> str:
    """``name``, or skip the test when that shipped model is not in this checkout (they are built
    by ``scripts/build_models.py NAME`` into ``structperc/shipped/``)."""
    from structperc.model import shipped

    if name not in shipped.names():
        pytest.skip(f"shipped model {name!r} is not built here (python scripts/build_models.py {name})")
    return name


def test_component_takes_a_shipped_name():
    import structperc

    name = shipped_model("en-upos")
    nlp = spacy.blank("en")
    nlp.add_pipe("structperc", config={"model": name})
    component = nlp.get_pipe("structperc")
    tagger = structperc.load(name)
    assert component.annotation == "pos" and component.labels == tuple(tagger.labels_)
    sents = [["The", "cat", "sat", "on", "the", "mat", "."], ["She", "did", "n't", "go", "to", "Paris", "!"]]
    out = list(nlp.pipe([Doc(nlp.vocab, words=s) for s in sents], batch_size=2))
    assert [[t.pos_ for t in d] for d in out] == tagger.predict(sents)
    assert [t.pos_ for t in nlp("The cat sat on the mat .")] == tagger.predict([sents[0]])[0]


def test_a_path_that_exists_wins_over_a_shipped_name(models, tmp_path, monkeypatch):
    """A user's own ``en-upos/`` folder in the working directory is theirs, shipped or not."""
    import shutil

    shutil.copytree(models["upos"], tmp_path / "en-upos")
    monkeypatch.chdir(tmp_path)
    nlp = spacy.blank("en")
    nlp.add_pipe("structperc", config={"model": "en-upos"})
    assert nlp.get_pipe("structperc").labels == tuple(Tagger.load(models["upos"]).labels_)


def test_unknown_model_name_is_one_line_listing_the_shipped_names():
    from structperc.model import shipped

    nlp = spacy.blank("en")
    with pytest.raises(InputError, match=r"no structperc model 'en-nope' \(for the 'structperc' component\): "
                                         r"not a path here and not a shipped model's name \(shipped: ") as info:
        nlp.add_pipe("structperc", config={"model": "en-nope"})
    message = str(info.value)
    assert "\n" not in message and all(name in message for name in shipped.names())
    with pytest.raises(InputError, match=r"no structperc model 'zh-nope' \(for the structperc tokenizer\)"):
        spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                        "model": "zh-nope"}}})
    assert nlp.pipe_names == []


@pytest.fixture(scope="module")
def zh_seg():
    name = shipped_model("zh-seg")
    return spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                           "model": name}}})


def test_shipped_zh_seg_as_the_tokenizer_of_blank_zh(zh_seg, tmp_path):
    import structperc

    segmenter = structperc.load("zh-seg")
    by_hand = spacy.blank("zh")
    by_hand.tokenizer = StructpercTokenizer(by_hand.vocab, "zh-seg")
    texts = ["我爱北京天安门", "上海体育局召开会议", "２０２４年，我们去北京。 他说：好！", ""]
    for text in texts:
        for nlp in (zh_seg, by_hand):
            doc = nlp(text)
            assert [t.text for t in doc if not t.is_space] == segmenter.segment(text) and doc.text == text
    # a saved pipeline carries the model: spacy.load rebuilds the tokenizer from the saved copy
    zh_seg.to_disk(tmp_path / "pipe")
    loaded = spacy.load(tmp_path / "pipe")
    assert isinstance(loaded.tokenizer, StructpercTokenizer)
    assert [[t.text for t in loaded(text)] for text in texts] == [[t.text for t in zh_seg(text)] for text in texts]
