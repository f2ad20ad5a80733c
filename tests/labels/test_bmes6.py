"""The 6-tag set (B, B2, B3, M, E, S) as the internal encoding of segmentation models: conversion,
transition constraints, training, and the BMES face it keeps outside the model."""
from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from testkit import CWS_TRAIN, DATA

from structperc import Tagger, predict
from structperc.cli import main
from structperc.decode.viterbi import viterbi_batch
from structperc.errors import InputError
from structperc.io.segmented import char_corpus
from structperc.labels import bmes, bmes6, transition_mask, valid_sequence
from structperc.labels.partial import corpus_allowed, label_projection, sentence_allowed
from structperc.model import schema
from structperc.segmenter import Segmenter

SIX = ["B", "B2", "B3", "E", "M", "S"]       # sorted, as a model's label set
WORDS = st.lists(st.text(alphabet="上海体育局召开会议我爱北京天安门", min_size=1, max_size=9), max_size=10)

TRAIN = CWS_TRAIN + ["联合国教科文组织 总干事 在 上海市 运动会 开幕式 讲话"]  # words of 1 to 8 characters


# ------------------------------------------------------------------------------ conversion
def test_words_to_tags_by_hand():
    assert bmes6.words_to_tags(["我", "北京", "体育局", "天安门前", "联合国教科文组织"]) == [
        "S", "B", "E", "B", "B2", "E", "B", "B2", "B3", "E", "B", "B2", "B3", "M", "M", "M", "M", "E"]


@settings(max_examples=200, deadline=None)
@given(WORDS)
def test_words_to_six_tags_to_words_is_the_identity(words):
    tags = bmes6.words_to_tags(words)
    assert len(tags) == sum(map(len, words))
    assert bmes.tags_to_words("".join(words), tags) == words      # B, S start a word; E, S end one
    assert valid_sequence(tags, "bmes6")
    # the same tags from BMES by the corpus-level conversion, and back to BMES on label ids
    four = bmes.words_to_tags(words)
    assert bmes6.from_bmes(four, np.arange(len(four)), np.array([0, len(four)])) == tags
    table = bmes6.to_bmes_table(SIX)
    assert [table[SIX.index(t)] for t in tags] == four


@settings(max_examples=100, deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=6))
def test_from_bmes_on_a_corpus_is_per_sentence(sentences):
    """Sentence starts reset a word (a corpus is many sentences end to end), codes in any order."""
    four = [t for words in sentences for t in bmes.words_to_tags(words)]
    ptr = np.cumsum([0] + [sum(map(len, words)) for words in sentences])
    distinct = ["S", "E", "M", "B"]
    codes = np.array([distinct.index(t) for t in four], dtype=np.int64)
    assert bmes6.from_bmes(distinct, codes, ptr) == [t for words in sentences for t in bmes6.words_to_tags(words)]


def test_from_bmes_reads_ill_formed_tags_as_tags_to_words():
    # a word starts after E or S and at a sentence start; other tags are kept
    tags = ["M", "M", "E", "M", "M", "?", "M"]
    assert bmes6.from_bmes(tags, np.arange(7), np.array([0, 7])) == ["M", "B2", "E", "M", "B2", "?", "M"]


# ------------------------------------------------------------------------------ constraints
def test_six_tag_mask_by_hand():
    mask, end = transition_mask(SIX, "bmes6")
    ok = {("B", "B2"), ("B", "E"), ("B2", "B3"), ("B2", "E"), ("B3", "M"), ("B3", "E"), ("M", "M"), ("M", "E")}
    ok |= {(p, c) for p in ("E", "S", None) for c in ("B", "S")}
    for i, p in enumerate(SIX + [None]):
        for j, c in enumerate(SIX):
            assert (mask[i, j] == 0) == ((p, c) in ok), (p, c)
            assert mask[i, j] in (0.0, -np.inf)
    assert end.tolist() == [-np.inf, -np.inf, -np.inf, 0.0, -np.inf, 0.0]   # a sentence ends in E or S
    assert not valid_sequence(["B", "B3", "E"], "bmes6") and not valid_sequence(["B", "B2"], "bmes6")
    assert not valid_sequence(["B", "M", "E"], "bmes6") and valid_sequence(["B", "B2", "B3", "M", "M", "E"], "bmes6")


SCORES = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9).flatmap(lambda n: arrays(np.float64, (1, n, 6), elements=SCORES)),
       arrays(np.float64, (7, 6), elements=SCORES))
def test_masked_decoding_spells_words(state, trans):
    mask, end = transition_mask(SIX, "bmes6")
    path = [SIX[i] for i in viterbi_batch(state, trans + mask, end, np.array([state.shape[1]]))[0]]
    assert valid_sequence(path, "bmes6"), path
    words = bmes.tags_to_words("x" * len(path), path)
    assert bmes6.words_to_tags(words) == path      # the one spelling of its words


# ------------------------------------------------------------------------ BMES outside the model
def test_projection_of_bmes_tags_onto_six():
    got = {tag: ids.tolist() for tag, ids in label_projection(SIX, "bmes6", "bmes").items()}
    assert got == {"B": [0], "E": [3], "M": [1, 2, 4], "S": [5]}


def test_partially_known_sentences_allow_what_their_tags_project_onto():
    rows = sentence_allowed(["B", None, "M", "E"], SIX, "bmes6", "bmes")
    assert rows.tolist() == [[True, False, False, False, False, False], [True] * 6,
                             [False, True, True, False, True, False], [False, False, False, True, False, False]]
    whole = sentence_allowed(["B", "M", "M", "M", "E"], SIX, "bmes6", "bmes")   # known: exact
    assert [SIX[i] for i in whole.argmax(1)] == ["B", "B2", "B3", "M", "E"] and whole.sum() == 5
    tags = ["B", "M", "M", "E", "B", "?", "M", "E"]
    allowed = corpus_allowed(tags, np.array([0, 4, 8]), SIX, "bmes6", "bmes", "?",
                             np.array([0, 1, 2, 3, 0, 0, 4, 3]))
    assert allowed[:4].sum() == 4 and allowed[5].all() and allowed[6].tolist() == rows[2].tolist()


@pytest.fixture(scope="module")
def six():
    # one fold: the lexicon columns seen in training are those seen when segmenting, so that a corpus
    # this small (no mistakes after epoch 3) is segmented back exactly
    return Segmenter.train(TRAIN, epochs=10, seed=0, encoding="bmes6", folds=1)


def test_a_six_tag_segmenter_segments_its_training_sentences(six):
    assert six.labels_ == SIX and six.task_.model_scheme == "bmes6" and six.task_.scheme == "bmes"
    for line in TRAIN:
        assert six.segment("".join(line.split())) == line.split()
    assert six.evaluate(TRAIN)["f1"] == 1.0


def test_six_tag_model_speaks_bmes_outside(six):
    model, corpus = six.model_, char_corpus(["上海体育局召开会议", "联合国教科文组织总干事"])
    tagged = predict.tag_corpus(model, corpus, confidence=True, distributions=True, k=2)
    assert set(tagged.tags) <= {"B", "M", "E", "S"} and "M" in tagged.tags
    assert bmes.tags_to_words("上海体育局召开会议", tagged.tags[:9]) == ["上海", "体育局", "召开", "会议"]
    assert tagged.marginal_tags == ["B", "E", "M", "S"]
    assert np.allclose(tagged.marginals.sum(1), 1.0)
    assert all(set(tags) <= {"B", "M", "E", "S"} for path in tagged.nbest for tags, _, _ in path)
    # a forced BMES tag stands for its 6-tag labels: an M forced on the 3rd character of 上海体 …
    forced = predict.tag_corpus(model, char_corpus(["上海体育局"]), known=[None, None, "M", None, None])
    assert forced.tags[2] == "M" and bmes.tags_to_words("上海体育局", forced.tags) != ["上海", "体育局"]


def test_save_load_keeps_the_encoding(six, tmp_path):
    six.save(tmp_path / "six")
    loaded = Segmenter.load(tmp_path / "six")
    texts = ["上海体育局召开会议", "", "北京天安门 ２０２４年", "联合国教科文组织总干事讲话"]
    assert loaded.encoding == "bmes6" and loaded.task_.model_scheme == "bmes6" and loaded.labels_ == SIX
    assert loaded.segment_texts(texts) == six.segment_texts(texts)
    assert schema.read(tmp_path / "six").task.model_scheme == "bmes6"
    with pytest.raises(InputError, match="Segmenter.load"):  # a segmenter is not loaded as a tagger
        Tagger.load(tmp_path / "six")


def test_four_tag_models_save_as_before(tmp_path):
    seg = Segmenter.train(TRAIN, epochs=3, seed=0)
    assert seg.encoding == "bmes" and seg.labels_ == ["B", "E", "M", "S"]
    seg.save(tmp_path / "four")
    model = schema.read(tmp_path / "four")
    assert model.task.model_scheme == "bmes" and "encoding" not in model.params   # params as before the option
    assert Segmenter.load(tmp_path / "four").encoding == "bmes"


def test_old_models_load_as_bmes():
    want = json.loads((DATA / "legacy-cws.expected.json").read_text(encoding="utf-8"))
    seg = Segmenter.load(DATA / "legacy-cws")
    assert seg.encoding == "bmes" and seg.task_.model_scheme == "bmes"
    assert set(seg.labels_) == {"B", "M", "E", "S"}
    assert seg.segment_texts(want["texts"]) == want["words"]


def test_partially_labelled_training_in_six_tags():
    X = [list("".join(s.split())) for s in TRAIN]
    y = [bmes.words_to_tags(s.split()) for s in TRAIN]
    y[-1] = [t if i % 3 else "?" for i, t in enumerate(y[-1])]
    tagger = Tagger(task="cws", columns=["char", "tag"], template=["c[0]", "c[-1]|c[0]", "c[0]|c[1]"],
                    encoding="bmes6", epochs=10).fit(X, y)
    assert tagger.labels_ == SIX
    predicted = tagger.predict([list(x) for x in X[:-1]])
    assert predicted == y[:-1]                           # BMES out, the training tags back


@pytest.mark.parametrize("kwargs", [dict(task="chunk", encoding="bmes6"), dict(task="pos", encoding="bmes6"),
                                    dict(task="cws", encoding="iobes")])
def test_encodings_that_do_not_fit_the_data_are_refused(kwargs):
    X = [list("上海体育局")]
    with pytest.raises(InputError, match="encoding|scheme"):
        Tagger(columns=["char", "tag"] if kwargs["task"] == "cws" else None, **kwargs).fit(
            X if kwargs["task"] == "cws" else [[("a", "b")]], [["B", "E", "B", "M", "E"]] if kwargs["task"] == "cws"
            else [["B-NP"]])
    if kwargs["task"] == "cws":
        with pytest.raises(InputError, match="encoding"):
            Segmenter(encoding=kwargs["encoding"]).fit(TRAIN)


def test_cli_trains_a_six_tag_segmenter(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("\n".join(TRAIN) + "\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["train", "--task", "cws", "--encoding", "bmes6", "--train", str(train),
                                  "--epochs", "10", "--model", str(tmp_path / "m"), "-q"])
    assert r.exit_code == 0, (r.output, r.exception)
    seg = Segmenter.load(tmp_path / "m")
    assert seg.encoding == "bmes6" and seg.segment("上海体育局召开会议") == ["上海", "体育局", "召开", "会议"]
    assert "--encoding" in CliRunner().invoke(main, ["train", "--help"]).output
