"""Defects a new user hit while training (issue 28, items 2-5): columns that name only the tag column,
continued training on tags the model does not know (refused without add_labels), CoNLL columns given to
the segmenter's training, duplicate column names, --dev with --dev-split, tokens that are not strings.

CLI cases run the real command in a subprocess: exit status 1, one line on stderr, no traceback."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from test_train_defects import assert_one_line_error, cli
from testkit import CWS_TRAIN, SAMPLE_TRAIN, TOY, conll_text, toy_columns

from structperc import Tagger
from structperc.errors import InputError
from structperc.segmenter import Segmenter


def sample(tmp_path: Path, n: int = 20) -> Path:
    """The first ``n`` sentences of the shipped CoNLL-2000 sample (three columns: word pos chunk)."""
    with gzip.open(SAMPLE_TRAIN, "rt", encoding="utf-8") as fh:
        blocks = fh.read().strip("\n").split("\n\n")[:n]
    path = tmp_path / f"sample{n}.txt"
    path.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ 2: --columns naming the tag column alone
def test_columns_naming_only_the_tag_column_of_a_three_column_file_is_one_line(tmp_path):
    path = sample(tmp_path)
    proc = cli("train", "--train", path, "--columns", "word", "--model", tmp_path / "m")
    line = assert_one_line_error(proc, str(path), "3 columns", "names 1")
    assert "IndexError" not in proc.stderr, line
    assert not (tmp_path / "m").exists()
    with pytest.raises(InputError, match="has 3 columns") as info:
        Tagger.train(str(path), columns=["word"])
    assert info.value.path == str(path)


def test_columns_without_an_input_column_are_refused_for_token_lists_too():
    words, _, chunks = toy_columns()
    with pytest.raises(InputError, match="only the tag column 'chunk'"):
        Tagger.train(words, chunks, columns=["chunk"], epochs=1)
    with pytest.raises(InputError, match="only the tag column 'chunk'"):
        Tagger.train(words, chunks, columns=["_", "chunk"], epochs=1)


def test_columns_of_skips_only_is_an_error_not_an_index_error():
    words, _, chunks = toy_columns()
    with pytest.raises(InputError, match="tag column"):
        Tagger.train(words, chunks, columns=["_"], epochs=1)


# ------------------------------------------------------------------ 3: continued training on unknown tags
NER = [[("Juan", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"), ("Madrid", "NP", "B-LOC")],
       [("Ana", "NP", "B-PER"), ("López", "NP", "I-PER"), ("llegó", "VM", "O")]] * 3
#: NER data with a type the model above never saw (ORG) beside ones it did.
NER_WITH_ORG = [[("Pedro", "NP", "B-PER"), ("trabaja", "VM", "O"), ("en", "SP", "O"), ("Telefónica", "NP", "B-ORG"),
                 ("Móviles", "NP", "I-ORG")], [("Luis", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"),
                                               ("Lima", "NP", "B-LOC")]] * 2


@pytest.fixture(scope="module")
def ner_model(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ner")
    Tagger.train([[t[:2] for t in s] for s in NER], [[t[2] for t in s] for s in NER], task="ner",
                 columns=["word", "pos", "ner"], epochs=2).save(root / "ner")
    return root / "ner"


def test_init_model_on_another_task_s_tags_is_refused(ner_model, tmp_path):
    proc = cli("train", "--train", sample(tmp_path), "--init-model", ner_model, "--model", tmp_path / "m")
    assert_one_line_error(proc, "none of this 'ner' model's", "NP", "PER")
    assert not (tmp_path / "m").exists()


def test_init_model_on_tags_the_model_does_not_know_is_refused_naming_them(ner_model, tmp_path):
    data = tmp_path / "org.txt"
    data.write_text(conll_text(NER_WITH_ORG), encoding="utf-8")
    proc = cli("train", "--train", data, "--init-model", ner_model, "--model", tmp_path / "m")
    assert_one_line_error(proc, str(data), "include 2 that this 'ner' model does not know (B-ORG, I-ORG)",
                          "the model's tags are B-/I- of LOC, PER, and O", "--add-labels")
    assert not (tmp_path / "m").exists()
    tagger = Tagger.load(ner_model)
    with pytest.raises(InputError, match="B-ORG, I-ORG"):
        tagger.partial_fit(str(data), epochs=1)
    assert tagger.labels_ == Tagger.load(ner_model).labels_


def test_add_labels_grows_the_tag_set(ner_model, tmp_path):
    data = tmp_path / "org.txt"
    data.write_text(conll_text(NER_WITH_ORG), encoding="utf-8")
    proc = cli("train", "--train", data, "--init-model", ner_model, "--add-labels", "--epochs", "1",
               "--model", tmp_path / "m", "-q")
    assert proc.returncode == 0, proc.stderr
    grown = Tagger.load(tmp_path / "m").labels_
    assert {"B-ORG", "E-ORG"} <= set(grown) and set(Tagger.load(ner_model).labels_) < set(grown)
    tagger = Tagger.load(ner_model).partial_fit(str(data), epochs=1, add_labels=True)
    assert tagger.labels_ == grown


def test_init_model_on_known_tags_needs_no_flag(ner_model, tmp_path):
    data = tmp_path / "known.txt"
    data.write_text(conll_text(NER), encoding="utf-8")
    proc = cli("train", "--train", data, "--init-model", ner_model, "--epochs", "1", "--model", tmp_path / "m",
               "-q")
    assert proc.returncode == 0, proc.stderr
    assert Tagger.load(tmp_path / "m").labels_ == Tagger.load(ner_model).labels_


@pytest.mark.parametrize("task, tag", [("chunk", "tag"), ("pos", "upos")])
def test_tags_without_a_span_type_are_compared_as_they_are(task, tag):
    """Tags like X, Y (no B-/I- type) in a span task, and any tag of a POS model, are known exactly."""
    tagger = Tagger.train([["b", "d"], ["d", "b"]] * 3, [["X", "Y"], ["Y", "X"]] * 3, task=task,
                          columns=["word", tag], template=["w[0]"], epochs=1)
    tagger.partial_fit([["a", "c"]], [["Y", "X"]], epochs=1)
    with pytest.raises(InputError, match=r"include 1 that .* does not know \(A\); the model's tags are X, Y"):
        tagger.partial_fit([["a", "c"]], [["A", "X"]], epochs=1)
    assert "A" in tagger.partial_fit([["a", "c"]], [["A", "X"]], epochs=1, add_labels=True).labels_


def test_continued_training_with_dev_fits_the_new_weights_temperature(tmp_path):
    """``--init-model`` with ``--dev`` fitted no temperature (and the model lost its old one), where a new
    model's run with ``--dev`` fits it: the README's promise for --dev."""
    data = tmp_path / "toy.txt"
    data.write_text(conll_text(TOY), encoding="utf-8")
    tagger = Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=2, seed=0).fit(str(data), dev=str(data))
    assert tagger.calibration_ is not None
    tagger.partial_fit(str(data), epochs=1, dev=str(data))
    assert tagger.calibration_ is not None and tagger.calibration_["temperature"] > 0
    assert tagger.partial_fit(str(data), epochs=1).calibration_ is None  # no held-out data: uncalibrated


def test_continued_training_refuses_tags_outside_the_span_scheme(tmp_path):
    """With ``add_labels``, a tag 'UNK' among IOB2 tags (meant as --unknown-tag, which a continued model keeps as
    its own) became a label the model then predicted; a new model's training refuses it, naming its line."""
    data = tmp_path / "toy.txt"
    data.write_text(conll_text(TOY), encoding="utf-8")
    tagger = Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=1, seed=0).fit(str(data))
    bad = [list(s) for s in TOY]
    bad[0][1] = (bad[0][1][0], bad[0][1][1], "UNK")
    more = tmp_path / "more.txt"
    more.write_text(conll_text(bad), encoding="utf-8")
    with pytest.raises(InputError, match=f"^{more}:2: tag 'UNK' is not an iob2 tag"):
        tagger.partial_fit(str(more), epochs=1, add_labels=True)
    assert "UNK" not in tagger.labels_


def test_add_labels_without_init_model_is_refused(tmp_path):
    proc = cli("train", "--train", sample(tmp_path), "--columns", "word,pos,chunk", "--add-labels",
               "--model", tmp_path / "m")
    assert_one_line_error(proc, "--add-labels", "--init-model")
    assert not (tmp_path / "m").exists()


# ------------------------------------------------------------------ 4: CoNLL columns given to cws training
def test_cws_training_on_a_conll_column_file_is_refused_like_eval(tmp_path):
    path = sample(tmp_path, 60)
    proc = cli("train", "--task", "cws", "--train", path, "--model", tmp_path / "m")
    assert_one_line_error(proc, str(path), "looks like a CoNLL column file")
    assert not (tmp_path / "m").exists()
    with pytest.raises(InputError, match="looks like a CoNLL column file"):
        Segmenter.train(str(path), epochs=1)
    segmented = tmp_path / "seg.txt"
    segmented.write_text("\n".join(CWS_TRAIN) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="looks like a CoNLL column file"):  # the dev file too
        Segmenter.train(str(segmented), dev=str(path), epochs=1)


# ------------------------------------------------------------------ 5: options and tokens accepted silently
def test_duplicate_column_names_are_refused(tmp_path):
    proc = cli("train", "--train", sample(tmp_path), "--columns", "word,word,chunk", "--model", tmp_path / "m")
    assert_one_line_error(proc, "'word'", "twice")
    assert not (tmp_path / "m").exists()
    with pytest.raises(InputError, match="'word' twice"):
        Tagger.train(str(sample(tmp_path)), columns=["word", "word", "chunk"])


def test_dev_with_dev_split_is_refused(tmp_path):
    path = sample(tmp_path)
    proc = cli("train", "--train", path, "--columns", "word,pos,chunk", "--dev", path, "--dev-split", "0.1",
               "--model", tmp_path / "m")
    assert_one_line_error(proc, "--dev", "--dev-split")
    assert not (tmp_path / "m").exists()
    with pytest.raises(InputError, match="not both"):
        Tagger.train(str(path), columns=["word", "pos", "chunk"], dev=str(path), dev_split=0.1)
    segmented = tmp_path / "seg.txt"
    segmented.write_text("\n".join(CWS_TRAIN) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="not both"):
        Segmenter.train(str(segmented), dev=str(segmented), dev_split=0.5, epochs=1)


@pytest.fixture(scope="module")
def one_column() -> Tagger:
    words, _, chunks = toy_columns()
    return Tagger.train(words, chunks, columns=["word", "chunk"], template=["w[0]", "w[-1]"], epochs=2)


@pytest.fixture(scope="module")
def two_columns() -> Tagger:
    return Tagger.train([[t[:2] for t in s] for s in TOY], toy_columns()[2], columns=["word", "pos", "chunk"],
                        template=["w[0]", "pos[0]"], epochs=2)


@pytest.mark.parametrize("sentence", [[None, "cat"], [1, 2], ["the", b"cat"]])
def test_tokens_that_are_not_strings_are_refused(one_column, sentence):
    with pytest.raises(InputError, match="not a string"):
        one_column.tag(sentence)
    with pytest.raises(InputError, match="not a string"):
        one_column.predict([["the", "cat"], sentence])
    with pytest.raises(InputError, match="not a string"):
        one_column.score([sentence], [["O"] * len(sentence)])


@pytest.mark.parametrize("sentence", [[("the", None), ("cat", "NN")], [(1, 2)]])
def test_token_tuples_holding_other_than_strings_are_refused(two_columns, sentence):
    with pytest.raises(InputError, match="not a string"):
        two_columns.tag(sentence)
    with pytest.raises(InputError):
        two_columns.tag([None, "cat"])


def test_training_tokens_that_are_not_strings_are_refused():
    with pytest.raises(InputError, match="sentence 1, token 0"):
        Tagger.train([["the", "cat"], [None, "sat"]], [["B-NP", "I-NP"], ["B-NP", "B-VP"]],
                     columns=["word", "chunk"], epochs=1)


def test_string_tokens_and_unknown_gold_tags_in_tuples_still_work(one_column, two_columns):
    assert one_column.tag(["the", "cat"]) == one_column.predict([["the", "cat"]])[0]
    assert len(two_columns.tag([("the", "DT"), ("cat", "NN")])) == 2
    # a None gold tag in a token tuple is an unknown tag (partial labels), not a bad token
    words = [[(w, p, c if i else None) for i, (w, p, c) in enumerate(s)] for s in TOY]
    Tagger.train(words, columns=["word", "pos", "chunk"], template=["w[0]", "pos[0]"], epochs=1)
