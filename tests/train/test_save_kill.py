"""Saving is atomic: `kill -9` in the middle of a save (or of `structperc train` over an existing
model) never leaves a damaged or half-written file under the model's name.

`structperc.model.archive.save_archive` writes a temporary file in the same directory, fsyncs it and renames
it over the old archive. A process killed before the rename leaves the old model in place (plus, at
worst, a stray hidden ``.model.zip.*.tmp`` file: SIGKILL gives no chance to clean up); one killed after
it leaves the new model.
"""
from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from testkit import SAMPLE_TEST, SAMPLE_TRAIN

from structperc import Tagger
from structperc.io.conll import read_conll
from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights

pytestmark = pytest.mark.slow

COLUMNS = ["word", "pos", "chunk"]
TMP_NAME = re.compile(r"^\.model\.zip\..+\.tmp$")

SAVER = """
import sys
from structperc import Tagger
tagger = Tagger.load(sys.argv[1])
print("ready", flush=True)
while True:
    tagger.save(sys.argv[2])
    print("saved", flush=True)
"""


@pytest.fixture(scope="module")
def probe():
    return read_conll(str(SAMPLE_TEST), COLUMNS)


@pytest.fixture(scope="module")
def big_model(tmp_path_factory, probe):
    """A model with 120,826 attributes and every one of its 35 weights per attribute nonzero
    (about 4.2 million stored weights, a 26 MB archive) so a save takes long enough to be hit."""
    tagger = Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template="crfsuite", epochs=1)
    rng = np.random.default_rng(0)
    dense = tagger.weights_.state[:-1] + rng.normal(0, 0.05, size=tagger.weights_.state[:-1].shape)
    tagger.weights_ = Weights(StateWeights.from_dense(dense), tagger.weights_.trans,
                              tagger.weights_.cond, tagger.weights_.mask, tagger.weights_.end)
    src = tmp_path_factory.mktemp("big") / "src"
    path = tagger.save(src)
    assert path.stat().st_size > 20e6
    return src, tagger.predict_corpus(probe)


def _check_model_dir(d: Path, probe, expected: list[list[str]]) -> list[str]:
    """The archive under the final name is complete and loads to one of the expected models;
    returns the stray temporary files."""
    archive = d / "model.zip"
    assert archive.is_file()
    with zipfile.ZipFile(archive) as zf:
        assert zf.testzip() is None  # every member's CRC checks out
    loaded = Tagger.load(d)
    assert loaded.predict_corpus(probe) in expected
    others = sorted(p.name for p in d.iterdir() if p.name != "model.zip")
    assert all(TMP_NAME.match(n) for n in others), others
    return others


def _wait_for_tmp(d: Path, timeout: float) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(TMP_NAME.match(p.name) for p in d.iterdir()):
            return True
        time.sleep(0.0005)
    return False


def _kill(proc: subprocess.Popen) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


def test_kill_during_repeated_saves(big_model, probe, tmp_path):
    src, expected = big_model
    dst = tmp_path / "dst"
    Tagger.load(src).save(dst)
    rng = random.Random(1234)
    kills, caught_mid_write = 6, 0
    for k in range(kills):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(src), str(dst)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
            t0 = time.monotonic()
            assert proc.stdout.readline().strip() == "saved"
            save_time = time.monotonic() - t0
            if k % 2 == 0:
                # aim at the write itself: once the temporary file exists, a random part of a save
                assert _wait_for_tmp(dst, 10 * save_time + 5)
                time.sleep(rng.uniform(0, 0.5 * save_time))
            else:
                time.sleep(rng.uniform(0, 2 * save_time))  # anywhere in the loop
        finally:
            _kill(proc)
        stray = _check_model_dir(dst, probe, [expected])
        caught_mid_write += bool(stray)
        for name in stray:  # what a later save would have to tolerate; clear for the next round
            (dst / name).unlink()
    print(f"\n{kills} kills during repeated saves ({save_time:.2f} s each): {caught_mid_write} "
          "caught a temporary file mid-write; the final archive was intact every time")
    assert caught_mid_write >= 1, "no kill landed while a temporary file was being written"


def _train_cmd(model: Path, epochs: int) -> list[str]:
    return [sys.executable, "-m", "structperc.cli", "train", "--train", str(SAMPLE_TRAIN),
            "--columns", ",".join(COLUMNS), "--template", "crfsuite", "--epochs", str(epochs),
            "--model", str(model), "-q"]


def test_kill_interrupted_train_over_existing_model(probe, tmp_path):
    old = Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template="crfsuite", epochs=1)
    new = Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template="crfsuite", epochs=2)
    old_pred, new_pred = old.predict_corpus(probe), new.predict_corpus(probe)
    assert old_pred != new_pred
    model = tmp_path / "model"
    # an uninterrupted run, to time it (and to check it writes the model trained in-process)
    old.save(model)
    t0 = time.monotonic()
    subprocess.run(_train_cmd(model, 2), check=True, capture_output=True, timeout=600)
    duration = time.monotonic() - t0
    _check_model_dir(model, probe, [new_pred])
    rng = random.Random(99)
    outcomes = []
    for k in range(5):
        old.save(model)
        proc = subprocess.Popen(_train_cmd(model, 2), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            if k < 2:  # during the save
                if not _wait_for_tmp(model, 10 * duration + 30):
                    pytest.fail("train never started writing the model")
                time.sleep(rng.uniform(0, 0.01))
            else:  # anywhere in the run (mostly training)
                time.sleep(rng.uniform(0.2, 1.0) * duration)
        finally:
            if proc.poll() is None:
                _kill(proc)
        _check_model_dir(model, probe, [old_pred, new_pred])
        loaded = Tagger.load(model).predict_corpus(probe)
        outcomes.append("new" if loaded == new_pred else "old")
        for p in model.iterdir():
            if p.name != "model.zip":
                p.unlink()
    print(f"\ntrain runs ({duration:.1f} s uninterrupted) killed: the model was {outcomes}")
    # the killed runs left the previous model in place (or, if the rename won the race, the new one)
    assert "old" in outcomes
