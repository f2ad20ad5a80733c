"""Checkpoints: a run killed with SIGKILL during epoch 3 of 5 resumes to a byte-identical model.

The processes are real (`structperc train` in a subprocess) because the point is surviving a kill that
no Python code sees coming.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from testkit import CORPORA, REPO

from structperc import Tagger

SAMPLE = REPO / "corpora" / "conll2000-train-sample.txt.gz"


def _cmd(model: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "structperc.cli", "train", "--train", str(SAMPLE),
            "--columns", "word,pos,chunk", "--epochs", "5", "--seed", "3", "--model", str(model), "-q",
            *extra]


def _env() -> dict:
    return dict(os.environ, SOURCE_DATE_EPOCH="1700000000")


def _checkpoint_epoch(directory: Path) -> int:
    try:
        with zipfile.ZipFile(directory / "checkpoint.zip") as zf:
            return json.loads(zf.read("metadata.json"))["epoch"]
    except (OSError, KeyError, zipfile.BadZipFile):
        return 0


@pytest.mark.slow
def test_kill_during_epoch_3_then_resume_is_byte_identical(tmp_path):
    straight = tmp_path / "straight"
    subprocess.run(_cmd(straight), check=True, env=_env())

    resumed, ckpt = tmp_path / "resumed", tmp_path / "ckpt"
    proc = subprocess.Popen(_cmd(resumed, "--checkpoint-dir", str(ckpt)), env=_env())
    deadline = time.monotonic() + 300
    while _checkpoint_epoch(ckpt) < 2:
        assert proc.poll() is None, "training ended before its second checkpoint"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    time.sleep(random.Random(0).uniform(0.0, 0.05))   # somewhere inside epoch 3
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert 2 <= _checkpoint_epoch(ckpt) < 5
    assert not (resumed / "model.zip").exists()  # the killed run never saved a model

    subprocess.run(_cmd(resumed, "--checkpoint-dir", str(ckpt), "--resume", str(ckpt)), check=True,
                   env=_env())
    assert (resumed / "model.zip").read_bytes() == (straight / "model.zip").read_bytes()


def test_same_seed_same_bytes_other_seed_differs(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    paths = []
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        Tagger.train(str(SAMPLE), columns=["word", "pos", "chunk"], template="crfsuite", epochs=2,
                     seed=seed).save(tmp_path / name)
        paths.append((tmp_path / name / "model.zip").read_bytes())
    assert paths[0] == paths[1]
    assert paths[0] != paths[2]


def test_resume_refuses_a_checkpoint_of_another_run(tmp_path):
    from structperc.errors import InputError

    ckpt = tmp_path / "ckpt"
    Tagger.train(str(SAMPLE), columns=["word", "pos", "chunk"], template="crfsuite", epochs=1,
                 checkpoint_dir=ckpt)
    with pytest.raises(InputError, match="different training run"):
        Tagger.train(str(SAMPLE), columns=["word", "pos", "chunk"], template="crfsuite", epochs=2,
                     seed=7, resume=ckpt)


@pytest.mark.corpus
def test_continued_training_on_the_second_half_of_conll2000():
    from structperc.io import read_conll

    folder = CORPORA / "conll2000"
    if not (folder / "train.txt").is_file():
        pytest.skip(f"CoNLL-2000 corpus not found in {folder}")
    train = read_conll(folder / "train.txt", ["word", "pos", "chunk"])
    half = len(train) // 2
    first, second = train.select(range(half)), train.select(range(half, len(train)))
    common = dict(columns=["word", "pos", "chunk"], template="crfsuite", seed=0)
    full = Tagger.train(train, epochs=10, **common)
    # the second half has a chunk type the first lacks (UCP): continued training adds it when asked
    continued = Tagger.train(first, epochs=5, **common).partial_fit(second, epochs=5, add_labels=True)
    f_full, f_cont = full.score(str(folder / "test.txt")), continued.score(str(folder / "test.txt"))
    print(f"CoNLL-2000 F1: all of train {f_full:.4f}, half then the other half {f_cont:.4f}")
    assert f_cont >= f_full - 0.005


def test_continued_training_adds_and_predicts_new_labels():
    first = [["the", "cat"], ["a", "dog"]] * 5
    tags1 = [["B-NP", "I-NP"]] * 10
    second = [["ran", "away"], ["sat", "down"]] * 5
    tags2 = [["B-VP", "B-ADVP"], ["B-VP", "B-PRT"]] * 5
    tagger = Tagger.train(first, tags1, columns=["word", "chunk"], template=["w[0]", "w[-1]"], epochs=3)
    assert "B-VP" not in tagger.labels_
    tagger.partial_fit(second, tags2, epochs=5, add_labels=True)
    assert tagger.tag(["ran", "away"]) == ["B-VP", "B-ADVP"]
    assert tagger.tag(["sat", "down"]) == ["B-VP", "B-PRT"]
    # labels_ are in the model's IOBES encoding: one-word chunks are S-
    assert set(tagger.labels_) == {"B-NP", "E-NP", "S-VP", "S-ADVP", "S-PRT"}


@pytest.mark.parametrize("feature_set", ["all", "observed"])
def test_continued_training_moves_old_weights_with_their_attributes(feature_set):
    """Growing the alphabet renumbers attributes and labels; the old weights must follow them."""
    from structperc.train.perceptron import PerceptronState

    first = [["b", "d"], ["d", "b"]] * 3
    tagger = Tagger.train(first, [["X", "Y"], ["Y", "X"]] * 3, columns=["word", "tag"],
                          template=["w[0]"], epochs=2, feature_set=feature_set)
    before = {tagger.features_.attribute_name(a): dict(zip(tagger.labels_, tagger.weights_.state[a]))
              for a in range(tagger.features_.n_state_attributes)}
    captured = {}
    from structperc.train.perceptron import Perceptron

    real = Perceptron.train

    def spy(self, data, state: PerceptronState, options):
        captured["W"] = state.pairs.to_dense()
        return real(self, data, state, options)
    Perceptron.train = spy  # type: ignore[method-assign]
    try:  # new words sort before and between the old ones, a new label sorts first
        tagger.partial_fit([["a", "c"]], [["A", "X"]], epochs=1, add_labels=True)
    finally:
        Perceptron.train = real  # type: ignore[method-assign]
    for a in range(tagger.features_.n_state_attributes):
        name = tagger.features_.attribute_name(a)
        for j, label in enumerate(tagger.labels_):
            expected = before.get(name, {}).get(label, 0.0)
            assert captured["W"][a, j] == pytest.approx(expected), (name, label)
