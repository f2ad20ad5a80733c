"""Shared test data and fixtures: tiny inline corpora (with Unicode and Chinese tokens), the shipped
samples, and small trained taggers built once per session. Imported as ``testkit`` (``conftest.py``
star-imports it): several folders have a conftest.py, and pytest imports each as the module
``conftest``, so ``from conftest import`` could find another folder's."""
from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_TRAIN = REPO / "corpora" / "conll2000-train-sample.txt.gz"
SAMPLE_TEST = REPO / "corpora" / "conll2000-test-sample.txt.gz"
#: The full corpora, beside the clone (CI has them): the one place the suite knows where they are.
CORPORA = REPO.parent / "shared" / "corpora"
DATA = Path(__file__).resolve().parent / "data"


def corpus_path(*parts: str) -> Path:
    """A file or folder of the full corpora; the test is skipped, saying which, where it is absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (the full corpora live in ../shared/corpora)")
    return path


@pytest.fixture
def corpora() -> Path:
    """The full corpora's folder (the test is skipped where it is absent)."""
    return corpus_path()

#: A tiny chunking corpus (word, POS, chunk) with accented Latin, Chinese and full-width tokens.
TOY = [
    [("The", "DT", "B-NP"), ("cat", "NN", "I-NP"), ("sat", "VBD", "B-VP")],
    [("A", "DT", "B-NP"), ("dog", "NN", "I-NP"), ("ran", "VBD", "B-VP"), ("home", "NN", "B-NP")],
    [("Zürich", "NNP", "B-NP"), ("grew", "VBD", "B-VP")],
    [("北京", "NNP", "B-NP"), ("欢迎", "VBP", "B-VP"), ("你", "PRP", "B-NP")],
    [("the", "DT", "B-NP"), ("naïve", "JJ", "I-NP"), ("cat", "NN", "I-NP"), ("ran", "VBD", "B-VP"),
     ("．", ".", "O")],
]


# (word, ner): a capitalised word is a person where it is elsewhere the last word of a name (a model
# reading the `doc` column learns it: its tags depend on sentences up to `DOC_WINDOW` away)
DOC_TRAIN = [s for name in ["Castaño", "Pérez", "Gómez", "Ruiz", "Díaz", "Soto"]
             for s in ([("Víctor", "B-PER"), (name, "I-PER"), ("habló", "O")],
                       [("Ayer", "O"), (name, "B-PER"), ("vino", "O")])] + \
            [s for w in ["Lunes", "Martes", "Hoy", "Nunca", "Luego", "Todo"]
             for s in ([("Ayer", "O"), (w, "O"), ("vino", "O")], [("ya", "O"), (w.lower(), "O"), ("vino", "O")])]
#: Segmented Chinese with full-width digits, Latin letters, an emoji and a supplementary-plane character.
CWS_TRAIN = ["上海 体育局 召开 会议", "我 爱 北京 天安门", "北京 体育局 召开 大会", "我们 爱 上海",
             "２０２４ 年 ， 我们 去 北京 。", "ABC 公司 😀 𠀋"]


def conll_text(sentences, sep: str = " ", newline: str = "\n") -> str:
    """CoNLL text of sentences given as lists of tuples (one blank line after each sentence)."""
    return "".join(newline.join(sep.join(tok) for tok in s) + newline + newline for s in sentences)


def toy_columns(sentences=TOY):
    """(words, pos, chunks) as lists of lists."""
    return ([[t[0] for t in s] for s in sentences], [[t[1] for t in s] for s in sentences],
            [[t[2] for t in s] for s in sentences])


@pytest.fixture
def write_file(tmp_path):
    """write_file(name, text_or_bytes, gz=False) -> str path under tmp_path."""
    def write(name: str, data, gz: bool = False) -> str:
        raw = data.encode("utf-8") if isinstance(data, str) else data
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if gz:
            with gzip.open(path, "wb") as fh:
                fh.write(raw)
        else:
            path.write_bytes(raw)
        return str(path)
    return write


@pytest.fixture
def toy_path(write_file):
    return write_file("toy.txt", conll_text(TOY))


@pytest.fixture(scope="session")
def toy_tagger():
    """A tagger trained on the toy corpus (word, pos, chunk); it fits the training data exactly."""
    from structperc import Tagger
    words, pos, chunks = toy_columns()
    X = [list(zip(w, p)) for w, p in zip(words, pos)]
    return Tagger.train(X, chunks, columns=["word", "pos", "chunk"],
                        template=["w[0]", "w[-1]", "w[1]", "pos[0]", "pos[-1]|pos[0]", "bias",
                                  "y[-1]|y[0]|pos[0]"],
                        epochs=5, seed=0)


@pytest.fixture(scope="session")
def sample_paths():
    if not SAMPLE_TRAIN.exists() or not SAMPLE_TEST.exists():  # pragma: no cover - shipped with the repo
        pytest.fail(f"shipped samples missing: {SAMPLE_TRAIN}, {SAMPLE_TEST}")
    return SAMPLE_TRAIN, SAMPLE_TEST


def _compiled_reader_available() -> bool:
    from structperc.io import scan

    return scan.available()


#: Marks tests of the compiled readers: skipped (with the reason) where the build is absent.
compiled_reader = pytest.mark.skipif(not _compiled_reader_available(), reason=(
    "structperc._aot_read (the ahead-of-time build of the reading kernels) is absent or stale"))
#: The reader paths the property tests compare: the compiled scanners, their numpy twin, line by line.
READER_MODES = ["compiled", "numpy", "lines"]


def reader_mode(mp: pytest.MonkeyPatch, mode: str) -> None:
    """Switch the readers to one of `READER_MODES` for the rest of the monkeypatch context."""
    from structperc.io import conll, scan

    if mode != "compiled":
        mp.setattr(scan, "_kernel", lambda name: None)
    if mode == "lines":
        mp.setattr(conll.ColumnParser, "_parse_fast", lambda self, *a: None)
        mp.setattr(conll, "conllu_fast", lambda *a: None)


# ------------------------------------------------------------------ a child process
def python_child(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``python -c CODE`` in a child (a fresh interpreter: imports, or a bound on time that a hang would break
    through without taking the suite with it); its output as text."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------------ the command line, in process
def run(*args, input=None):
    """``structperc ARGS`` in this process (click's runner), arguments as strings."""
    from click.testing import CliRunner

    from structperc.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def assert_clean_error(result, prefix: str, contains: str = ""):
    """Exit status 1, exactly one stderr line 'Error: <prefix>…', no traceback anywhere."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {prefix}"), lines[0]
    assert contains in lines[0]
    return lines[0]


def first_sentences(path, n, drop_last_column=False) -> str:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        blocks = fh.read().strip("\n").split("\n\n")[:n]
    if drop_last_column:
        blocks = ["\n".join(line.rsplit(" ", 1)[0] for line in b.split("\n")) for b in blocks]
    return "\n\n".join(blocks) + "\n\n"


def expanded(values: dict) -> dict:
    """A dictionary's columns as one value per token: coded columns (``(distinct, codes)``, what the
    resource dictionaries write) expanded, lists as they are."""
    return {name: [v[0][c] for c in v[1]] if isinstance(v, tuple) else list(v) for name, v in values.items()}
