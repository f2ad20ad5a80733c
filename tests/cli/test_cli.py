"""The `structperc` command: train/tag/eval on the shipped samples, and one-line errors (exit 1, no
traceback) for every kind of bad input."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import pytest
from testkit import TOY, assert_clean_error, conll_text, first_sentences, run

from structperc import Tagger
from structperc.model.archive import ARCHIVE_NAME


@pytest.fixture(scope="module")
def sample_model(tmp_path_factory, sample_paths):
    train, _ = sample_paths
    d = tmp_path_factory.mktemp("cli") / "chunker"
    r = run("train", "--train", train, "--columns", "word,pos,chunk", "--epochs", 2,
            "--template", "crfsuite", "--model", d)
    assert r.exit_code == 0, r.output
    assert "epoch 1/2" in r.stderr and "epoch 2/2" in r.stderr
    assert f"saved {d / ARCHIVE_NAME}" in r.stderr
    return d


@pytest.fixture
def toy_model(tmp_path, toy_path):
    d = tmp_path / "toy-model"
    r = run("train", "--train", toy_path, "--template", "crfsuite", "--epochs", 2, "--model", d, "-q")
    assert r.exit_code == 0, r.output
    assert r.stderr == ""                              # -q: nothing at all
    return d


# ------------------------------------------------------------------------------- happy paths
def test_tag_stdin_appends_one_column(sample_model, sample_paths):
    _, test = sample_paths
    text = first_sentences(test, 40, drop_last_column=True)
    r = run("tag", "--model", sample_model, input=text)
    assert r.exit_code == 0, r.output
    with gzip.open(sample_paths[0], "rt", encoding="utf-8") as fh:   # the tags of the training data
        labels = {line.split()[-1] for line in fh if line.strip()}
    out_lines, in_lines = r.stdout.split("\n"), text.split("\n")
    assert len(out_lines) == len(in_lines)
    tags = []
    for out, inp in zip(out_lines, in_lines):
        if not inp:
            assert out == ""
            continue
        assert out.startswith(inp + " ")
        tag = out[len(inp) + 1:]
        assert tag in labels
        tags.append(tag)
    # the same tags as the library
    sents = [[tuple(line.split()) for line in b.split("\n")] for b in text.strip("\n").split("\n\n")]
    assert tags == [t for s in Tagger.load(sample_model).predict(sents) for t in s]


def test_tag_files_keeps_gold_column(sample_model, sample_paths, tmp_path, write_file):
    _, test = sample_paths
    a = write_file("a.txt", first_sentences(test, 5))
    b = write_file("b.txt.gz", first_sentences(test, 3), gz=True)
    out = tmp_path / "out.txt"
    r = run("tag", "--model", sample_model, "-o", out, a, b)
    assert r.exit_code == 0, r.output
    lines = out.read_text(encoding="utf-8").split("\n")
    inputs = (first_sentences(test, 5) + first_sentences(test, 3)).split("\n")
    assert len([x for x in lines if x]) == len([x for x in inputs if x])
    assert all(len(x.split()) == 4 for x in lines if x)     # word pos gold predicted
    # predicted column mostly agrees with gold
    rows = [x.split() for x in lines if x]
    assert sum(r[2] == r[3] for r in rows) / len(rows) > 0.8


def test_eval_json(sample_model, sample_paths):
    _, test = sample_paths
    r = run("eval", "--model", sample_model, "--json", test)
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["micro"]["f1"] > 0.7
    assert 0.8 < report["accuracy"] <= 1.0
    assert report["sentences"] == 500 and report["tokens"] > 10000
    assert {"NP", "VP", "PP"} <= set(report["types"])
    assert {"micro", "macro", "types", "accuracy"} <= set(report)


def test_eval_text(sample_model, sample_paths):
    _, test = sample_paths
    r = run("eval", "--model", sample_model, test)
    assert r.exit_code == 0, r.output
    assert "micro" in r.stdout and "token accuracy" in r.stdout and "NP" in r.stdout


def test_train_with_dev_reports_best_epoch(tmp_path, toy_path):
    r = run("train", "--train", toy_path, "--dev", toy_path, "--template", "crfsuite", "--epochs", 3,
            "--model", tmp_path / "m")
    assert r.exit_code == 0, r.output
    assert "best epoch" in r.stderr and "dev " in r.stderr
    assert Tagger.load(tmp_path / "m").best_epoch_ <= 3


def test_version_and_help():
    r = run("--version")
    assert r.exit_code == 0 and "0.1.0" in r.output
    r = run("train", "--help")
    assert r.exit_code == 0 and "--columns" in r.output


# --------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("command", ["train", "tag", "eval"])
def test_malformed_line(command, write_file, toy_model, tmp_path):
    p = write_file("bad.txt", "a DT B-NP\nb NN I-NP\n\nc NN B-NP\nd\n")     # line 5: one column
    args = {"train": ["train", "--train", p, "--model", tmp_path / "new", "--template", "crfsuite"],
            "tag": ["tag", "--model", toy_model, p],
            "eval": ["eval", "--model", toy_model, p]}[command]
    assert_clean_error(run(*args), f"{p}:5: ", "found 1")


def test_malformed_line_on_stdin(toy_model):
    assert_clean_error(run("tag", "--model", toy_model, input="a DT\nb\n"), "<stdin>:2: ")


@pytest.mark.parametrize("command", ["train", "tag", "eval"])
def test_undecodable_bytes(command, write_file, toy_model, tmp_path):
    p = write_file("bad.txt", b"a DT B-NP\n\n\xff\xfe NN B-NP\n")
    args = {"train": ["train", "--train", p, "--model", tmp_path / "new"],
            "tag": ["tag", "--model", toy_model, p],
            "eval": ["eval", "--model", toy_model, p]}[command]
    assert_clean_error(run(*args), f"{p}:3: ", "UTF-8")


@pytest.mark.parametrize("command", ["train", "eval"])
def test_empty_file(command, write_file, toy_model, tmp_path):
    p = write_file("empty.txt", "")
    args = {"train": ["train", "--train", p, "--model", tmp_path / "new"],
            "eval": ["eval", "--model", toy_model, p]}[command]
    assert_clean_error(run(*args), f"{p}: ", "no sentences")


def test_missing_input_file(toy_model, tmp_path):
    p = tmp_path / "missing.txt"
    assert_clean_error(run("tag", "--model", toy_model, p), f"{p}: ")
    assert_clean_error(run("train", "--train", p, "--model", tmp_path / "m"), f"{p}: ")


def test_unknown_column_in_template(toy_path, write_file, tmp_path):
    tpl = write_file("tpl.txt", "w[0]\nlemma[0]\n")
    r = run("train", "--train", toy_path, "--template", tpl, "--model", tmp_path / "m")
    assert_clean_error(r, f"{toy_path}: ", "lemma")


def test_template_reads_column_not_in_columns(write_file, tmp_path):
    p = write_file("two.txt", "a B-NP\nb I-NP\n")
    r = run("train", "--train", p, "--columns", "word,chunk", "--template", "crfsuite",
            "--model", tmp_path / "m")
    assert_clean_error(r, f"{p}: ", "pos")


def test_tag_column_not_in_columns(toy_path, tmp_path):
    r = run("train", "--train", toy_path, "--columns", "word,pos,chunk", "--tag-column", "label",
            "--model", tmp_path / "m")
    assert_clean_error(r, "", "'label'")


def test_unknown_template_function(toy_path, tmp_path):
    r = run("train", "--train", toy_path, "--template", "nonexistent-preset", "--model", tmp_path / "m")
    assert_clean_error(r, "", "nonexistent-preset")


@pytest.mark.parametrize("command", ["tag", "eval"])
@pytest.mark.parametrize("damage", [b"", b"lCRFfoo", b"PK\x03\x04garbage"])
def test_damaged_model(command, damage, toy_model, toy_path):
    (toy_model / ARCHIVE_NAME).write_bytes(damage)
    args = ["tag", "--model", toy_model, toy_path] if command == "tag" else \
        ["eval", "--model", toy_model, toy_path]
    assert_clean_error(run(*args), str(toy_model / ARCHIVE_NAME))


def test_missing_model(tmp_path, toy_path):
    assert_clean_error(run("tag", "--model", tmp_path / "none", toy_path), str(tmp_path / "none"),
                       "no model")


def test_model_path_is_a_file(tmp_path, toy_path):
    f = tmp_path / "notes.txt"
    f.write_text("keep me")
    assert_clean_error(run("train", "--train", toy_path, "--model", f), str(f))
    assert f.read_text() == "keep me"


@pytest.mark.parametrize("bad", ["malformed", "template", "empty"])
def test_failed_training_leaves_existing_model_untouched(bad, toy_model, write_file, toy_path):
    before = (toy_model / ARCHIVE_NAME).read_bytes()
    if bad == "malformed":
        args = ["--train", write_file("bad.txt", "a DT B-NP\nb\n")]
    elif bad == "template":
        args = ["--train", toy_path, "--template", write_file("t.txt", "lemma[0]\n")]
    else:
        args = ["--train", write_file("e.txt", "\n\n")]
    r = run("train", *args, "--model", toy_model)
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert (toy_model / ARCHIVE_NAME).read_bytes() == before
    assert sorted(p.name for p in toy_model.iterdir()) == [ARCHIVE_NAME]


# ----------------------------------------------------------------------------- known bugs
def test_undecodable_template_file(toy_path, write_file, tmp_path):
    tpl = write_file("tpl.txt", b"w[0]\n\xff\xfe[0]\n")
    r = run("train", "--train", toy_path, "--template", tpl, "--model", tmp_path / "m")
    assert_clean_error(r, f"{tpl}:2: ")


def test_template_file_error_names_file_and_line(toy_path, write_file, tmp_path):
    tpl = write_file("tpl.txt", "w[0]\nfoo(w[0])\n")
    r = run("train", "--train", toy_path, "--template", tpl, "--model", tmp_path / "m")
    assert_clean_error(r, f"{tpl}:2: ", "unknown function 'foo'")


def test_corrupt_gzip_training_file(write_file, tmp_path):
    data = bytearray(gzip.compress(conll_text(TOY * 200).encode()))
    for i in range(20, 40):
        data[i] ^= 0xFF
    p = write_file("bad.txt.gz", bytes(data))
    assert_clean_error(run("train", "--train", p, "--model", tmp_path / "m"), f"{p}")


# ------------------------------------------------------------------------- real process
def _command():
    exe = shutil.which("structperc")
    return [exe] if exe else [sys.executable, "-m", "structperc.cli"]


def test_subprocess_error_is_one_line_without_traceback(toy_model, write_file):
    p = write_file("bad.txt", b"a DT B-NP\n\xff NN I-NP\n")
    proc = subprocess.run(_command() + ["tag", "--model", str(toy_model), p], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith(f"Error: {p}:2: ")
    assert proc.stdout == ""


def test_subprocess_tag_stdin(toy_model):
    text = conll_text([[(w, p) for w, p, _ in s] for s in TOY])
    proc = subprocess.run(_command() + ["tag", "--model", str(toy_model)], input=text,
                          capture_output=True, text=True, encoding="utf-8", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    out = [line.split() for line in proc.stdout.splitlines() if line]
    assert [row[:2] for row in out] == [[w, p] for s in TOY for w, p, _ in s]
    assert [row[2] for row in out] == [c for s in TOY for _, _, c in s]   # fits its training data


def test_plot_writes_a_learning_curve(tmp_path, sample_paths):
    pytest.importorskip("matplotlib")
    train, test = sample_paths
    r = run("train", "--train", train, "--dev", test, "--columns", "word,pos,chunk", "--template",
            "crfsuite", "--epochs", "2", "--model", tmp_path / "m", "--plot", tmp_path / "curve.png", "-q")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_is_a_clean_error(tmp_path, sample_paths, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    train, _ = sample_paths
    r = run("train", "--train", train, "--columns", "word,pos,chunk", "--template", "crfsuite",
            "--epochs", "1", "--model", tmp_path / "m", "--plot", tmp_path / "c.png", "-q")
    assert r.exit_code == 1
    assert r.output.strip().splitlines()[-1] == "Error: --plot needs matplotlib: pip install 'structperc[plot]'"
    assert not (tmp_path / "m").exists()  # checked before training
