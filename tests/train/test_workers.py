"""Training on worker processes (`structperc.train.workers`, ``workers=`` / ``--workers``).

* "fork" and "spawn" workers give the weights of the in-process shards, bit for bit;
* a worker killed mid-run, or one that fails, stops the run with `WorkerError` at once (no hang), and
  no worker process or shared-memory file is left behind — nor after a normal run;
* through the estimator and the CLI: one worker is today's trainer (the same bytes as without the
  argument), N workers the same bytes for the same seed, recorded in the provenance; a checkpoint of a
  mixed run resumes to the straight run's bytes with the same N and is refused with another N.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import REPO

from structperc import Tagger
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.train import workers as worker_processes
from structperc.train.mixing import Shard, make_shards, train_mixed
from structperc.train.perceptron import PerceptronState, epoch_inputs
from structperc.train.workers import WorkerError

SAMPLE = REPO / "corpora" / "conll2000-train-sample.txt.gz"
COMMON = dict(columns=["word", "pos", "chunk"], template="crfsuite")


def _problem(seed: int = 0, n_sent: int = 40, L: int = 3, A: int = 25):
    rng = np.random.default_rng(seed)
    ptr = np.zeros(n_sent + 1, np.int64)
    np.cumsum(rng.integers(1, 8, n_sent), out=ptr[1:])
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, 2)).astype(np.int32)
    y = (np.maximum(X[:, 0], 0) % L).astype(np.int32)
    feats = Features(X, rng.integers(-1, 2, (n, 1)).astype(np.int32), ptr, None)
    return feats, y, (lambda: PerceptronState.zeros(A, 2, L)), np.zeros((L + 1, L)), np.zeros(L)


def _leftovers(folder: Path) -> set[str]:
    return {p.name for p in folder.glob("structperc-ipm-*")}


class DyingShard(Shard):
    """A shard whose worker process kills itself (SIGKILL: no Python code sees it) in epoch 2."""

    def order(self, epoch: int) -> np.ndarray:
        if epoch == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().order(epoch)


class FailingShard(Shard):
    def order(self, epoch: int) -> np.ndarray:
        raise ValueError("boom in the shard's order")


def _shards(kind: type, feats, y, state, mask, end, n: int = 3) -> list[Shard]:
    inputs = epoch_inputs(feats, y, state, mask, end)
    plain = make_shards(inputs, n)
    return [kind(s.index, s.start, s.stop, s.n_total, s.inputs) if s.index == 1 else s for s in plain]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_worker_processes_equal_in_process_shards(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method!r} start method on this platform")
    feats, y, state, mask, end = _problem()
    got = []
    for processes in (False, True):
        s = state()
        w, _ = train_mixed(feats, y, s, mask=mask, end=end, epochs=3, seed=2, shards=3, processes=processes,
                           start_method=method)
        got.append((s.W.tobytes(), s.U.tobytes(), s.Wc.tobytes(), s.Uc.tobytes(), w.sparse.values.tobytes(), s.c))
    assert got[0] == got[1]


def test_a_killed_worker_stops_the_run_at_once(tmp_path, monkeypatch):
    # the workers' shared folder is this test's own: another test process (pytest -n 2) may be training with
    # workers in /dev/shm at the same moment, and its folder is not this run's leftover
    monkeypatch.setattr(worker_processes, "_shared_dir", lambda: str(tmp_path))
    feats, y, state, mask, end = _problem(1)
    others = set(multiprocessing.active_children())  # e.g. joblib's reusable pool from earlier tests
    s = state()
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 1 .*during epoch 2.*signal 9"):
        train_mixed(feats, y, s, mask=mask, end=end, epochs=4, start_method="fork",
                    shards=_shards(DyingShard, feats, y, s, mask, end))
    assert time.monotonic() - started < 60
    assert set(multiprocessing.active_children()) <= others  # none of the training workers is left
    assert _leftovers(tmp_path) == set()


def test_a_failing_worker_reports_its_error():
    feats, y, state, mask, end = _problem(2)
    others = set(multiprocessing.active_children())
    s = state()
    with pytest.raises(WorkerError, match="boom in the shard's order"):
        train_mixed(feats, y, s, mask=mask, end=end, epochs=2, start_method="fork",
                    shards=_shards(FailingShard, feats, y, s, mask, end))
    assert set(multiprocessing.active_children()) <= others


def test_nothing_is_left_behind_after_a_run(tmp_path, monkeypatch):
    monkeypatch.setattr(worker_processes, "_shared_dir", lambda: str(tmp_path))  # this run's own folder
    feats, y, state, mask, end = _problem(3)
    others = set(multiprocessing.active_children())  # e.g. joblib's reusable pool from earlier tests
    train_mixed(feats, y, state(), mask=mask, end=end, epochs=2, shards=2)
    assert set(multiprocessing.active_children()) <= others  # none of the training workers is left
    assert _leftovers(tmp_path) == set()


def test_an_unknown_start_method_is_refused():
    feats, y, state, mask, end = _problem(3)
    with pytest.raises(InputError, match="start method"):
        train_mixed(feats, y, state(), mask=mask, end=end, epochs=1, shards=2, start_method="teleport")


def _bytes(path: Path) -> bytes:
    return (path / "model.zip").read_bytes()


def test_estimator_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    for name, kw in (("none", {}), ("one", {"workers": 1}), ("two", {"workers": 2}), ("two_again", {"workers": 2}),
                     ("mistakes", {"workers": 2, "mixing": "mistakes"})):
        tagger = Tagger.train(str(SAMPLE), epochs=2, **COMMON, **kw)
        tagger.save(tmp_path / name)
        if kw.get("workers", 1) > 1:
            assert tagger.provenance_["workers"] == 2
            assert tagger.provenance_["mixing"] == kw.get("mixing", "uniform")
            assert len(tagger.history_) == 2 and tagger.history_[0].n_sentences == 2000
        else:
            assert "workers" not in tagger.provenance_
    assert _bytes(tmp_path / "none") == _bytes(tmp_path / "one")
    assert _bytes(tmp_path / "two") == _bytes(tmp_path / "two_again")
    assert len({_bytes(tmp_path / n) for n in ("one", "two", "mistakes")}) == 3
    with pytest.raises(InputError, match="workers"):
        Tagger.train(str(SAMPLE), epochs=1, workers=0, **COMMON)
    with pytest.raises(InputError, match="mixing"):
        Tagger.train(str(SAMPLE), epochs=1, workers=2, mixing="median", **COMMON)


def test_mixed_checkpoint_resumes_with_the_same_workers_only(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    Tagger.train(str(SAMPLE), epochs=4, seed=3, workers=2, **COMMON).save(tmp_path / "straight")
    ckpt = tmp_path / "ckpt"
    Tagger.train(str(SAMPLE), epochs=2, seed=3, workers=2, checkpoint_dir=ckpt, **COMMON)
    for workers in (1, 3):
        with pytest.raises(InputError, match="different training run.*workers"):
            Tagger.train(str(SAMPLE), epochs=4, seed=3, workers=workers, resume=ckpt, **COMMON)
    Tagger.train(str(SAMPLE), epochs=4, seed=3, workers=2, resume=ckpt, **COMMON).save(tmp_path / "resumed")
    assert _bytes(tmp_path / "resumed") == _bytes(tmp_path / "straight")


def test_cli_workers(tmp_path, monkeypatch):
    from structperc.cli import main

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    help_text = CliRunner().invoke(main, ["train", "--help"]).output
    assert "--workers" in help_text and "--mixing" in help_text
    runs = []
    for name in ("a", "b"):
        result = CliRunner().invoke(main, ["train", "--train", str(SAMPLE), "--columns", "word,pos,chunk",
                                           "--template", "crfsuite", "--epochs", "2", "--workers", "2",
                                           "--dev-split", "0.1", "--model", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
        assert "epoch 2/2  mistakes" in result.output
        runs.append(_bytes(tmp_path / name))
    assert runs[0] == runs[1]
    bad = CliRunner().invoke(main, ["train", "--train", str(SAMPLE), "--columns", "word,pos,chunk",
                                    "--workers", "0", "--model", str(tmp_path / "c")])
    assert bad.exit_code == 2 and "--workers" in bad.output


def test_segmenter_workers(tmp_path, monkeypatch):
    from structperc.segmenter import Segmenter

    sents = ["上海 体育局 召开 会议", "体育局 召开 会议", "上海 召开 会议 了"] * 5
    one = Segmenter(epochs=3).fit(sents, workers=2)
    two = Segmenter(epochs=3).fit(sents, workers=2)
    assert one.provenance_["workers"] == 2
    assert np.array_equal(one.weights_.sparse.values, two.weights_.sparse.values)
    assert one.segment("上海体育局召开会议") == ["上海", "体育局", "召开", "会议"]
