"""`scripts/bench_crfsuite.py` fails with one line and a status, never a traceback, when it cannot run."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from testkit import script_module

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "bench_crfsuite.py"


@pytest.fixture()
def bench():
    with script_module(SCRIPT, "bench_crfsuite_under_test") as module:
        yield module


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("The DT B-NP\ncat NN I-NP\n\n", encoding="utf-8")
    return path


def test_without_python_crfsuite(bench, corpus, monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(bench.importlib.util, "find_spec",
                        lambda name, *a: None if name == "pycrfsuite" else real(name, *a))
    assert bench.main(["--train", str(corpus), "--test", str(corpus)]) == 2
    err = capsys.readouterr().err
    assert "python-crfsuite is not installed" in err and ".[bench]" in err and "Traceback" not in err


def test_a_failing_worker_is_one_message(bench, corpus, monkeypatch, capsys):
    monkeypatch.setattr(bench.importlib.util, "find_spec", lambda name, *a: object())

    def fail(*args, **kwargs):
        raise bench.BenchError("command failed with status 1: worker crf-train")

    monkeypatch.setattr(bench, "run_benchmark", fail)
    assert bench.main(["--train", str(corpus), "--test", str(corpus)]) == 1
    assert capsys.readouterr().err.strip() == "bench_crfsuite: command failed with status 1: worker crf-train"


def test_missing_corpus(bench, tmp_path, capsys):
    assert bench.main(["--train", str(tmp_path / "absent.txt"), "--test", str(tmp_path / "absent.txt")]) == 2
    assert "corpus not found" in capsys.readouterr().err
