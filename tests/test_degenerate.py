"""Degenerate corpora never take the process down (issue 15, item 1).

A compiled kernel reading an id out of range is a segmentation fault, not an exception, so the
package validates at the boundary. Here hypothesis drives the public API and the command line with
corpora of 0 or 1 sentence, one-token and empty sentences, a single label, dev labels unseen in
training, templates that yield nothing, ``min_count`` that removes every attribute, held-out splits
that leave nothing: thousands of cases, in a child process so that a crash fails the test instead of
killing pytest. Every case must succeed or raise a documented error (`StructpercError`; on the
command line: exit status 1 or 2 and one ``Error:`` line, never a traceback).
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent('''
    import os, sys, tempfile, warnings
    from pathlib import Path

    from click.testing import CliRunner
    from hypothesis import HealthCheck, given, settings, strategies as st

    from structperc import Tagger
    from structperc.cli import main
    from structperc.errors import StructpercError

    warnings.simplefilter("ignore")
    N_API, N_CLI = int(sys.argv[1]), int(sys.argv[2])
    WORDS = st.sampled_from(["a", "b", "The", "Zürich", "北京", "1", "-DOC-", "x"])
    POS = st.sampled_from(["DT", "NN", "VB"])
    TAGS = st.sampled_from(["O", "B-NP", "I-NP", "B-VP", "NP", "E-X", "O"])
    SENTENCES = st.lists(st.lists(st.tuples(WORDS, POS, TAGS), max_size=3), max_size=3)
    TEMPLATES = st.sampled_from([["w[0]"], ["bias"], ["pos[0]", "w[-1]|w[0]"], ["y[-1]|y[0]|pos[0]"],
                                 ["?gaz[0]", "w[0]"], ["nosuch[0]"], ["w[0]", "suffix2(w[0])", "rare(w[0])"]])
    PARAMS = st.fixed_dictionaries({
        "template": TEMPLATES, "min_count": st.sampled_from([1, 2, 1000000]),
        "dev_split": st.sampled_from([0.0, 0.5, 0.9999]), "epochs": st.integers(1, 2),
        "feature_set": st.sampled_from(["all", "observed"]), "task": st.sampled_from(["chunk", "pos", "ner"]),
        "seed": st.integers(0, 3)})
    def fast(n):
        return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                        suppress_health_check=list(HealthCheck))
    seen = {"ok": 0, "refused": 0}


    def split(sents):
        return [[t[:2] for t in s] for s in sents], [[t[2] for t in s] for s in sents]


    @fast(N_API)
    @given(SENTENCES, st.none() | SENTENCES, PARAMS)
    def api(train, dev, params):
        X, y = split(train)
        try:
            if dev is not None:
                dX, dy = split(dev)
                t = Tagger.train(X, y, dev=dX, dev_y=dy, columns=["word", "pos", "tag"], **params)
            else:
                t = Tagger.train(X, y, columns=["word", "pos", "tag"], **params)
            t.predict(X + [[("unseen", "XX")]])
            seen["ok"] += 1
        except StructpercError:
            seen["refused"] += 1


    def conll(sents):
        return "".join("".join(" ".join(tok) + "\\n" for tok in s) + "\\n" for s in sents)


    @fast(N_CLI)
    @given(SENTENCES, PARAMS)
    def command_line(train, params):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "train.txt"
            path.write_text(conll(train), encoding="utf-8")
            (Path(d) / "t.txt").write_text("\\n".join(params["template"]) + "\\n", encoding="utf-8")
            args = ["train", "-q", "--train", str(path), "--columns", "word,pos,tag", "--model",
                    str(Path(d) / "m"), "--template", str(Path(d) / "t.txt"), "--task", params["task"]]
            for key in ("min_count", "dev_split", "epochs", "feature_set", "seed"):
                args += ["--" + key.replace("_", "-"), str(params[key])]
            result = CliRunner().invoke(main, args)
            assert isinstance(result.exception, (SystemExit, type(None))), repr(result.exception)
            assert "Traceback" not in result.output
            assert result.exit_code in (0, 1, 2), result.output
            if result.exit_code == 1:
                assert result.stderr.startswith("Error: ") and len(result.stderr.splitlines()) == 1
            else:
                tagged = CliRunner().invoke(main, ["tag", "--model", str(Path(d) / "m"), str(path)])
                assert result.exit_code == 2 or tagged.exit_code in (0, 1), tagged.output


    api()
    command_line()
    print(seen["ok"], seen["refused"])
''')


@pytest.mark.slow
def test_degenerate_corpora_never_crash_the_process():
    proc = subprocess.run([sys.executable, "-c", CHILD, "2000", "400"], capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}"
    assert proc.returncode == 0, proc.stderr[-3000:]
    ok, refused = map(int, proc.stdout.split()[-2:])
    assert ok + refused == 2000 and ok > 100 and refused > 100, (ok, refused)
