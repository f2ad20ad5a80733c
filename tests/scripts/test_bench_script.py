"""`scripts/bench/bench_crfsuite.py`, run as a user runs it (a process, from the repository root): it
reports its ratios on a tiny corpus, and when it cannot run it says why in one line of its own and an exit
status, never a traceback."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from testkit import REPO, TOY, conll_text

SCRIPT = REPO / "scripts" / "bench" / "bench_crfsuite.py"


def run(*args: str, python: tuple[str, ...] = (sys.executable,), timeout: float = 300) \
        -> subprocess.CompletedProcess:
    return subprocess.run([*python, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


@pytest.fixture()
def corpus(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(conll_text(TOY * 8), encoding="utf-8")
    return path


def test_help_runs_from_the_repository_root():
    done = run("--help")
    assert done.returncode == 0, done.stderr
    assert "--task" in done.stdout and "--feature-set" in done.stdout


def test_missing_corpus(tmp_path):
    absent = str(tmp_path / "absent.txt")
    done = run("--train", absent, "--test", absent)
    assert done.returncode == 2
    assert done.stderr.startswith("bench_crfsuite: corpus not found: ") and absent in done.stderr
    assert "Traceback" not in done.stderr


def test_without_python_crfsuite(corpus):
    # `python -S`: no site-packages, so no python-crfsuite; the check comes before anything else is imported
    done = run("--train", str(corpus), "--test", str(corpus), python=(sys.executable, "-S"))
    assert done.returncode == 2
    err = done.stderr
    assert "python-crfsuite is not installed" in err and ".[bench]" in err and "Traceback" not in err


def test_a_failing_step_is_one_message(tmp_path):
    pytest.importorskip("pycrfsuite", reason="the benchmark needs the bench extra: pip install -e '.[bench]'")
    ragged = tmp_path / "ragged.txt"  # `structperc train` refuses it: its first step fails
    ragged.write_text("The DT B-NP\ncat NN\n\n", encoding="utf-8")
    done = run("--train", str(ragged), "--test", str(ragged), "--repeat", "1", "--epochs", "1")
    assert done.returncode == 1
    first, *rest = done.stderr.splitlines()
    assert first.startswith("bench_crfsuite: command failed with status 1: ") and " train " in first
    assert any(line.startswith("Error: ") for line in rest)  # the failed command's own one line
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.slow
def test_a_tiny_run_prints_every_ratio(corpus, tmp_path):
    pytest.importorskip("pycrfsuite", reason="the benchmark needs the bench extra: pip install -e '.[bench]'")
    out = tmp_path / "bench.json"
    done = run("--train", str(corpus), "--test", str(corpus), "--repeat", "1", "--epochs", "2",
               "--tag-repeat", "2", "--json", str(out), timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    payload = json.loads(out.read_text(encoding="utf-8"))
    rows = {row["label"]: row for row in payload["rows"]}
    for label in ("train throughput, token·epochs/s", "end-to-end train wall, s", "tag throughput, test ×1, tok/s",
                  "peak RSS train, MB (CRFsuite streaming)", "model size, MB"):
        row = rows[label]
        assert row["crf"] > 0 and row["sp"] > 0 and row["ratio"] == pytest.approx(row["sp"] / row["crf"])
        assert row["verdict"] in ("PASS", "FAIL")
        assert label in done.stdout
    assert 0 < payload["sp_f1"] <= 1 and 0 < payload["crf_f1"] <= 1
    assert payload["sp_eval_f1"] == pytest.approx(payload["sp_f1"], abs=1e-6)  # `structperc eval` agrees


def test_a_stale_build_is_refused_before_anything_is_timed(corpus):
    """A group whose ahead-of-time build is stale would make every timed process compile its kernels first: the
    benchmark names the group and the command that rebuilds it, in one line (no traceback), once its inputs and
    python-crfsuite are there."""
    import os

    pytest.importorskip("pycrfsuite", reason="the benchmark needs the bench extra: pip install -e '.[bench]'")
    code = (f"import runpy, sys\nfrom structperc.compiled import loader\nloader._BUILT['_aot_fb'] = None\n"
            f"sys.argv = ['bench_crfsuite.py', '--train', {str(corpus)!r}, '--test', {str(corpus)!r}]\n"
            f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n")
    env = {k: v for k, v in os.environ.items() if k != "STRUCTPERC_KERNELS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=env)
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "_aot_fb" in done.stderr and "python -m structperc.compiled.build _aot_fb" in done.stderr


def test_no_group_is_stale_when_the_jit_is_asked_for():
    import os

    code = "from structperc.compiled import loader\nloader._BUILT['_aot_fb'] = None\nprint(loader.stale_groups())\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "STRUCTPERC_KERNELS": "jit"})
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr
