"""Frictions a new user met with `structperc tag` and the command itself: a broken pipe reported as an
error, a blank line added at the end, plain text refused by a CoNLL-U model, a slow `--help`, and a
README example that picked epochs on the test set."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from testkit import REPO, SAMPLE_TEST, SAMPLE_TRAIN, python_child

CONLLU = """# text = The cat sat .
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_
2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# text = A dog ran home .
1\tA\ta\tDET\tDT\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\t_
3\tran\trun\tVERB\tVBD\t_\t0\troot\t_\t_
4\thome\thome\tADV\tRB\t_\t3\tadvmod\t_\t_
5\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

"""


def token_of(line: str) -> str:
    """The token of an output line (the tag is appended after a space or a tab); "" for a blank line."""
    return line.rsplit(None, 1)[0] if line.strip() else ""


def structperc(*args: object, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "structperc.cli", *map(str, args)], capture_output=True,
                          timeout=300, **kw)


@pytest.fixture(scope="module")
def pos_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("pos")
    (folder / "train.conllu").write_text(CONLLU * 3, encoding="utf-8")
    proc = structperc("train", "--train", folder / "train.conllu", "--task", "pos", "--epochs", "3",
                      "--model", folder / "model")
    assert proc.returncode == 0, proc.stderr
    return folder / "model"


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("chunk")
    proc = structperc("train", "--train", SAMPLE_TRAIN, "--columns", "word,pos,chunk", "--epochs", "1",
                      "--model", folder / "model")
    assert proc.returncode == 0, proc.stderr
    return folder / "model"


# ------------------------------------------------------------------ the output has the input's lines
@pytest.mark.parametrize("text", [b"The\ncat\n", b"The\ncat", b"The\ncat\n\n", b"The\ncat\n\n\n", b"The\n\ncat\n"])
def test_output_has_exactly_the_input_lines(pos_model, text):
    proc = structperc("tag", "--model", pos_model, "--input-format", "tokens", input=text)
    assert proc.returncode == 0, proc.stderr
    lines_in = text.decode().splitlines()
    lines_out = proc.stdout.decode().splitlines()
    assert len(lines_out) == len(lines_in)
    assert [token_of(line) for line in lines_out] == lines_in


def test_files_stay_apart_in_one_output(pos_model, tmp_path):
    """Two files whose last sentence no blank line closes: a blank line between them keeps the
    second file's first sentence from continuing the first's, and nothing after the last."""
    a = tmp_path / "a.txt"
    a.write_text("The\ncat\n")
    proc = structperc("tag", "--model", pos_model, "--input-format", "tokens", a, a)
    assert proc.returncode == 0, proc.stderr
    assert [token_of(line) for line in proc.stdout.decode().splitlines()] == ["The", "cat", "", "The", "cat"]


# ------------------------------------------------------------------ a broken pipe is not an error
def test_broken_pipe_exits_quietly(chunk_model, tmp_path):
    big = tmp_path / "big.txt"
    import gzip

    big.write_bytes(gzip.decompress(SAMPLE_TEST.read_bytes()) * 4)
    for stdin in (None, big):
        cmd = [sys.executable, "-m", "structperc.cli", "tag", "--model", str(chunk_model)]
        if stdin is None:
            cmd.append(str(big))
        with open(big, "rb") if stdin else open(os.devnull, "rb") as source:
            tagger = subprocess.Popen(cmd, stdin=source, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            first = tagger.stdout.readline()
            tagger.stdout.close()  # the reader goes away, as `| head -1` does
            err = tagger.stderr.read().decode()
            status = tagger.wait(timeout=300)
        assert first
        assert status in (0, 141), (status, err)
        assert "Error" not in err and "Traceback" not in err and "Broken pipe" not in err, err


# ------------------------------------------------------------------ auto tells plain text and tokens
def test_plain_text_into_a_conllu_model(pos_model):
    proc = structperc("tag", "--model", pos_model, input=b"The cat sat .\nA dog ran home .\n")
    assert proc.returncode == 0, proc.stderr
    tokens = [token_of(line) for line in proc.stdout.decode().splitlines() if line]
    assert tokens == "The cat sat . A dog ran home .".split()


def test_one_token_per_line_into_a_conllu_model(pos_model):
    proc = structperc("tag", "--model", pos_model, input=b"The\ncat\nsat\n\nA\ndog\n")
    assert proc.returncode == 0, proc.stderr
    assert [token_of(line) for line in proc.stdout.decode().splitlines()] == ["The", "cat", "sat", "", "A", "dog"]


def test_undecidable_input_names_the_formats(pos_model):
    proc = structperc("tag", "--model", pos_model, input=b"a b\tc\n")
    assert proc.returncode == 1
    err = proc.stderr.decode()
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "--input-format text" in err and "--input-format tokens" in err


# ------------------------------------------------------------------ start-up
def test_help_imports_no_command():
    """`structperc --help` lists every command without importing any command's dependencies."""
    code = ("import sys\nfrom click.testing import CliRunner\nfrom structperc.cli import main\n"
            "r = CliRunner().invoke(main, ['--help'])\nassert r.exit_code == 0, r.output\n"
            "heavy = [m for m in ('numba', 'scipy', 'numpy', 'structperc.binary', 'fastapi') if m in sys.modules]\n"
            "print(heavy)\n")
    proc = python_child(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_help_is_quick():
    best = min(_timed([sys.executable, "-m", "structperc.cli", "--help"]) for _ in range(3))
    # the bar is 0.25 s on an idle machine; a loaded CI core gets twice that
    assert best < 0.5, best


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True, timeout=60)
    return time.perf_counter() - start


def test_lazy_help_matches_the_commands():
    from structperc.cli import _Group, main

    # a fresh process: in this one another test may have loaded the commands already
    listed = subprocess.run([sys.executable, "-m", "structperc.cli", "--help"], capture_output=True, text=True,
                            timeout=60).stdout
    for name, short in _Group.lazy_help.items():
        command = main.get_command(None, name)  # loads it
        assert command.get_short_help_str(len(short)) == short, name
        assert short in listed


# ------------------------------------------------------------------ the README
def test_readme_never_picks_anything_on_a_test_set():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = "\n".join(re.findall(r"```(?:python|sh)\n(.*?)```", readme, flags=re.S))
    picked = re.findall(r"""(?:dev=["']|--dev\s+)[^"'\s]*test\.txt""", blocks)
    assert picked == []
