"""What a new user's commands meet at the edges: a template that reads the gold tags, tags outside the span
scheme, a plot path that cannot be written (checked before training, the old model untouched), CoNLL columns
given to a model that reads words, CoNLL-U content under another name, a first line longer than the format
sniffer's window, `compress` on a deflated model, `clusters -o` onto its own input. Each case was a silent wrong
result, a traceback or a lost file; each test fails on the code before its fix."""
from __future__ import annotations

import hashlib
import zipfile

import pytest
from testkit import TOY, assert_clean_error, conll_text, run

from structperc.model.archive import ARCHIVE_NAME

CHUNKS = TOY * 4


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def chunk_file(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(conll_text(CHUNKS), encoding="utf-8")
    return path


@pytest.fixture
def chunker(tmp_path, chunk_file):
    model = tmp_path / "chunker"
    r = run("train", "--train", chunk_file, "--columns", "word,pos,chunk", "--epochs", 2, "-q", "--model", model)
    assert r.exit_code == 0, r.output
    return model


def test_a_template_that_reads_the_tag_column_is_refused(tmp_path, chunk_file):
    # the chunk column named pos: the preset's POS lines would read the gold chunks (F1 99.9 on gold files)
    r = run("train", "--train", chunk_file, "--columns", "word,chunk,pos", "--epochs", 1, "--model", tmp_path / "m")
    assert_clean_error(r, f"{chunk_file}: ", "the template reads the tag column 'pos'")
    lines = tmp_path / "lines.txt"
    lines.write_text("w[0]\nchunk[-1]\n", encoding="utf-8")
    r = run("train", "--train", chunk_file, "--columns", "word,pos,chunk", "--template", lines, "--model",
            tmp_path / "m")
    assert_clean_error(r, f"{chunk_file}: ", "the template reads the tag column 'chunk'")
    assert not (tmp_path / "m").exists()


def test_a_missing_column_is_named_beside_the_columns_the_data_has(tmp_path, chunk_file):
    lines = tmp_path / "lines.txt"
    lines.write_text("w[0]\nx[0]\n", encoding="utf-8")
    r = run("train", "--train", chunk_file, "--columns", "word,pos,chunk", "--template", lines, "--model",
            tmp_path / "m")
    assert_clean_error(r, f"{chunk_file}: ", "reads column(s) x that the data lacks (its columns: word, pos)")


def test_tags_outside_the_span_scheme_are_refused_with_their_line(tmp_path):
    bad = [list(s) for s in CHUNKS]
    bad[1][2] = ("ran", "VBD", "garbage")
    path = tmp_path / "bad.txt"
    path.write_text(conll_text(bad), encoding="utf-8")
    r = run("train", "--train", path, "--columns", "word,pos,chunk", "--epochs", 1, "--model", tmp_path / "m")
    line = len(CHUNKS[0]) + 1 + 3  # the first sentence, its blank line, the third token of the second
    assert_clean_error(r, f"{path}:{line}: ", "tag 'garbage' is not an iob2 tag")


@pytest.mark.parametrize("strict", [[], ["--strict"]])
@pytest.mark.parametrize("tag, message", [("?", "tag '?' is the unknown tag (partial labels): a score needs every "
                                                "gold tag"), ("FOO", "tag 'FOO' is not an iob2 tag")])
def test_gold_tags_outside_the_span_scheme_are_refused_by_eval(tmp_path, chunker, tag, message, strict):
    """eval scored '?' as a span type '_' (and 'FOO' as 'OO'); with --strict, seqeval's KeyError: a traceback."""
    bad = [list(s) for s in CHUNKS]
    bad[1][2] = ("ran", "VBD", tag)
    path = tmp_path / "gold.txt"
    path.write_text(conll_text(bad), encoding="utf-8")
    line = len(CHUNKS[0]) + 1 + 3
    assert_clean_error(run("eval", "--model", chunker, path, *strict), f"{path}:{line}: ", message)


@pytest.mark.parametrize("plot, message", [("curve.txt", "'.txt' is none of them"), ("curve", "no suffix"),
                                           (".", "not a folder")])
def test_a_plot_that_cannot_be_written_fails_before_training_and_keeps_the_model(tmp_path, chunk_file, chunker,
                                                                                 plot, message):
    pytest.importorskip("matplotlib")
    before = digest(chunker / ARCHIVE_NAME)
    target = tmp_path / plot
    r = run("train", "--train", chunk_file, "--columns", "word,pos,chunk", "--epochs", 1, "--plot", target,
            "--model", chunker)
    assert_clean_error(r, "", message)
    r = run("calibrate", "--model", chunker, "--plot", target, chunk_file)
    assert_clean_error(r, "", message)
    assert digest(chunker / ARCHIVE_NAME) == before


def test_conll_columns_given_to_a_model_of_words_are_refused_not_tagged_as_text(tmp_path):
    words = tmp_path / "words.txt"
    words.write_text(conll_text([[(w, t) for w, _, t in s] for s in CHUNKS]), encoding="utf-8")
    model = tmp_path / "words"
    r = run("train", "--train", words, "--columns", "word,chunk", "--epochs", 1, "-q", "--model", model)
    assert r.exit_code == 0, r.output
    three = tmp_path / "three.txt"
    three.write_text(conll_text(CHUNKS), encoding="utf-8")
    assert_clean_error(run("tag", "--model", model, three), f"{three}:1: ", "found 3")
    # plain text, one sentence a line, is still text: lines of as many words and no blank line between them
    r = run("tag", "--model", model, input="The cat sat\nA dog ran\nthe cat ran\n")
    assert r.exit_code == 0 and r.stdout.count("\n\n") == 3, r.output


def test_a_first_line_longer_than_the_sniffed_window_still_decides_the_format(tmp_path, chunker):
    path = tmp_path / "long.txt"
    path.write_text("a" * 70_000 + " NN B-NP\n\n" + conll_text(CHUNKS), encoding="utf-8")
    r = run("tag", "--model", chunker, path)
    assert r.exit_code == 0, r.output
    assert r.stdout.split("\n")[0].startswith("a" * 70_000 + " NN B-NP ")


def test_conllu_content_under_another_name_is_read_as_conllu(tmp_path):
    rows = [["1", "The", "the", "DET", "DT", "_", "2", "det", "_", "_"],
            ["2", "cat", "cat", "NOUN", "NN", "_", "3", "nsubj", "_", "_"],
            ["3", "sat", "sit", "VERB", "VBD", "_", "0", "root", "_", "_"]]
    text = "# sent_id = 1\n# text = The cat sat\n" + "\n".join("\t".join(r) for r in rows) + "\n\n"
    path = tmp_path / "ud.txt"
    path.write_text(text * 4, encoding="utf-8")
    model = tmp_path / "pos"
    r = run("train", "--task", "pos", "--train", path, "--epochs", 1, "-q", "--model", model)
    assert r.exit_code == 0, r.output
    r = run("eval", "--model", model, path)
    assert r.exit_code == 0 and "accuracy" in r.stdout, r.output


def test_compress_keeps_a_deflated_model_deflated(tmp_path, chunker):
    from structperc import Tagger
    from structperc.model import schema

    deflated = tmp_path / "deflated"
    schema.write(deflated, Tagger.load(chunker).model_, deflate=True)
    out = tmp_path / "small"
    r = run("compress", "--model", deflated, "--keep", "0.8", "--out", out, "-q")
    assert r.exit_code == 0, r.output
    with zipfile.ZipFile(out / ARCHIVE_NAME) as zf:
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in zf.infolist())
    assert (out / ARCHIVE_NAME).stat().st_size < (deflated / ARCHIVE_NAME).stat().st_size
    stored = tmp_path / "stored"  # a model written as training writes it stays fast to read
    assert run("compress", "--model", chunker, "--keep", "0.8", "--out", stored, "-q").exit_code == 0
    with zipfile.ZipFile(stored / ARCHIVE_NAME) as zf:
        assert all(i.compress_type == zipfile.ZIP_STORED for i in zf.infolist())


def test_clusters_refuse_to_write_over_their_raw_text_and_check_the_output_first(tmp_path):
    raw = tmp_path / "raw.txt"
    raw.write_text("the cat sat\nthe dog ran\n" * 20, encoding="utf-8")
    before = raw.read_bytes()
    r = run("clusters", raw, "-o", raw, "--clusters", 2, "-q")
    assert_clean_error(r, f"{raw}: ", "-o names the raw text itself")
    assert raw.read_bytes() == before
    r = run("clusters", raw, "-o", tmp_path / "missing" / "out.txt", "--clusters", 2)
    assert_clean_error(r, f"{tmp_path / 'missing' / 'out.txt'}: ", "cannot write")
    assert "cluster" not in r.stderr.split("Error:")[0]  # no clustering ran before the error


def test_a_column_named_otherwise_than_the_preset_reads_is_warned_of(tmp_path, chunk_file):
    # `POS` for the preset's `pos`: its POS lines are optional (words-only chunking), so they were left out silently
    r = run("train", "--train", chunk_file, "--columns", "word,POS,chunk", "--epochs", 1, "-q", "--model",
            tmp_path / "m")
    assert r.exit_code == 0, r.output
    assert "Warning: column(s) POS are read by no template line, and the lines reading pos were left out" in r.stderr
    r = run("train", "--train", chunk_file, "--columns", "word,pos,chunk", "--epochs", 1, "-q", "--model",
            tmp_path / "n")
    assert r.exit_code == 0 and "Warning" not in r.stderr, r.output


def test_forced_column_errors_name_the_file_and_line(tmp_path, chunker):
    known = [[(w, p, "?") for w, p, _ in s] for s in TOY]
    known[1][2] = ("ran", "VBD", "B-XYZ")
    path = tmp_path / "forced.txt"
    path.write_text(conll_text(known), encoding="utf-8")
    line = len(TOY[0]) + 1 + 3
    assert_clean_error(run("tag", "--model", chunker, path, "--forced-column", "chunk"), f"{path}:{line}: ",
                       "the known tags: tag 'B-XYZ' is not one of this model's tags")
    known[1][2] = ("ran", "VBD", "?")
    known[2][0] = ("Zürich", "NNP", "I-NP")  # nothing starts inside a chunk: no tag sequence is left
    path.write_text(conll_text(known), encoding="utf-8")
    line = len(TOY[0]) + 1 + len(TOY[1]) + 1 + 1
    assert_clean_error(run("tag", "--model", chunker, path, "--forced-column", "chunk"), f"{path}:{line}: ",
                       "sentence 2: its forced or allowed tags")


@pytest.mark.parametrize("array", ["state_values", "trans"])
def test_a_model_whose_weights_are_not_finite_is_refused_as_damaged(tmp_path, chunker, array):
    import numpy as np

    from structperc.model.archive import load_archive, save_archive

    meta, arrays = load_archive(chunker)
    arrays = {k: np.array(v) for k, v in arrays.items()}
    arrays[array].flat[0] = np.nan  # every token of the file was tagged B-NP, exit status 0
    bad = tmp_path / "bad"
    save_archive(bad, meta, arrays, int(meta["format_version"]))
    tokens = tmp_path / "in.txt"
    tokens.write_text("The DT\ncat NN\n\n", encoding="utf-8")
    assert_clean_error(run("tag", "--model", bad, tokens), f"{bad}: damaged structperc model",
                       f"{array} holds weights that are not finite numbers")
