"""Checkpoints hold what an exact resume needs and nothing more (issue 28, items 12 and 5).

* a checkpoint stores the weights and sums that are not zero (a few per cent of the pairs), in the
  narrowest dtype that gives back the same bits, and resumes to the same model, byte for byte: with
  and without a dev set (the best epoch's average), for both feature sets;
* every bit comes back: -0.0, integers past float32 and int32, fractions, the best epoch's average
  (from the trainer's spill file, or from the weights the epoch it became the best);
* a run keeps one checkpoint, the latest (no temporary file of a killed write stays), and `structperc
  train` removes it once the model is saved, unless --keep-checkpoint;
* resuming a checkpoint with more epochs than --epochs asks for is a one-line error; with exactly as
  many, the run trains no epoch and writes the model (the same bytes as the run that made it).
"""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import REPO

from structperc import Tagger
from structperc.cli import main
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.archive import save_archive
from structperc.model.state_weights import feature_set
from structperc.train.checkpoint import CHECKPOINT, load_checkpoint, save_checkpoint
from structperc.train.perceptron import PerceptronState, train_perceptron

SAMPLE = REPO / "corpora" / "conll2000-train-sample.txt.gz"
DEV = REPO / "corpora" / "conll2000-test-sample.txt.gz"
COMMON = dict(columns=["word", "pos", "chunk"], template="crfsuite", seed=3)


def _meta(directory: Path) -> dict:
    with zipfile.ZipFile(directory / CHECKPOINT) as zf:
        return json.loads(zf.read("metadata.json"))


def _model_bytes(directory: Path) -> bytes:
    return (directory / "model.zip").read_bytes()


@pytest.mark.parametrize("kind,dev", [("all", None), ("all", DEV), ("observed", DEV)],
                         ids=["all", "all-dev", "observed-dev"])
def test_checkpoint_keeps_only_the_touched_weights_and_resumes_exactly(tmp_path, monkeypatch, kind, dev):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    kw = dict(COMMON, feature_set=kind, dev=None if dev is None else str(dev))
    straight = Tagger.train(str(SAMPLE), epochs=4, **kw)
    straight.save(tmp_path / "straight")
    ckpt = tmp_path / "ckpt"
    Tagger.train(str(SAMPLE), epochs=2, checkpoint_dir=ckpt, **kw)
    n_pairs = straight.weights_.sparse.nnz
    # the dense layout: float32 weight, float64 sum and int16 label per pair, an int64 offset per attribute
    dense = 14 * n_pairs + 8 * straight.features_.n_state_attributes
    size = (ckpt / CHECKPOINT).stat().st_size
    print(f"{kind}{' + dev' if dev else ''}: checkpoint {size:,} bytes, {n_pairs:,} pairs "
          f"(dense: {dense:,} bytes)")
    # "all": training touches a few per cent of the pairs; "observed" pairs are touched more often, and its
    # feature set (a label per pair) is stored too
    assert size < dense / (40 if kind == "all" else 3)
    shapes = _meta(ckpt)["arrays"]
    full = [name for name, spec in shapes.items()
            if spec["dtype"].startswith("float") and np.prod(spec["shape"]) == n_pairs]
    assert not full, f"arrays stored for every pair: {full}"
    Tagger.train(str(SAMPLE), epochs=4, resume=ckpt, **kw).save(tmp_path / "resumed")
    assert _model_bytes(tmp_path / "resumed") == _model_bytes(tmp_path / "straight")


def _data(seed=0, n_sent=80, L=5, K=4, KT=1, A=60, AT=6):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, n_sent)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    X[:, 0] = rng.integers(0, A, n)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    y = ((X[:, 0] + np.maximum(X[:, 1], 0)) % L).astype(np.int32)
    return Features(X, XT, ptr), y, np.zeros((L + 1, L)), np.zeros(L), A, AT, L


def _same(w1, w2):
    assert w1.sparse.values.tobytes() == w2.sparse.values.tobytes()
    assert w1.trans.tobytes() == w2.trans.tobytes()
    assert w1.cond.tobytes() == w2.cond.tobytes()


@pytest.mark.parametrize("kind", ["all", "observed"])
def test_the_best_epoch_survives_a_resume_from_every_epoch(tmp_path, kind):
    """Dev scores 0.5 0.9 0.7 0.8 0.6: epoch 2 is the best, and the checkpoints of epochs 3-5 carry its
    average, which `Checkpointer` remembers from epoch 2 while `save_checkpoint` alone reads it back
    from the spill file: both give the same bytes, and every epoch's checkpoint resumes exactly."""
    from structperc.train.checkpoint import Checkpointer

    feats, y, mask, end, A, AT, L = _data()
    pairs = feature_set(kind, feats.state, y, A, L)
    scores = [0.5, 0.9, 0.7, 0.8, 0.6]

    def run(state, epochs, on_epoch_end=None):
        it = iter(scores[state.epoch:])
        return train_perceptron(feats, y, state, mask=mask, end=end, epochs=epochs, seed=3,
                                dev_score=lambda weights: next(it), on_epoch_end=on_epoch_end)

    straight, best = run(PerceptronState.zeros(A, AT, L, pairs), 5)
    assert best == 2
    for k in range(1, 5):
        cached, plain = Checkpointer(tmp_path / f"cached{k}", {"k": k}), tmp_path / f"plain{k}"

        def both(st, cached=cached, plain=plain, k=k):
            cached(st)
            save_checkpoint(plain, st, {"k": k})
        run(PerceptronState.zeros(A, AT, L, pairs), k, both)
        assert (tmp_path / f"cached{k}" / CHECKPOINT).read_bytes() == (plain / CHECKPOINT).read_bytes()
        state = load_checkpoint(plain, {"k": k}, mask, end, epochs=5)
        assert state.epoch == k and (state.best_epoch, state.best_score) == ((1, 0.5) if k == 1 else (2, 0.9))
        resumed, best = run(state, 5, Checkpointer(tmp_path / f"again{k}", {"k": k}))
        assert best == 2
        _same(straight, resumed)


#: Weights and sums at six touched pairs, and the dtypes they are stored in: integers narrowed as far as
#: they go, -0.0 and fractions kept as floats, float64 only where float32 would round.
VALUES = {
    "integers": ([1.0, -3.0, 2.0, 40.0, -23.0, 7.0], [2.0, -7.0, 70000.0, -680505.0, 1.0, 0.0], "int16", "int32"),
    "minus-zero": ([1.0, -3.0, -0.0, 4.0, 5.0, 6.0], [2.0, -7.0, -0.0, 1.0, 1.0, 1.0], "float32", "float32"),
    "past-int32": ([1.0] * 6, [2.0 ** 40, -7.0, 3.0, 1.0, 1.0, 1.0], "int16", "float32"),
    "past-float32": ([1.0] * 6, [2.0 ** 40 + 1, -7.0, 3.0, 1.0, 1.0, 1.0], "int16", "float64"),
    "fractions": ([0.5, -3.0, 3e38, 1e-45, -0.0, 1.0], [0.1, 1e300, 5e-324, -0.0, 1.5, 2.0], "float32", "float64"),
}


@pytest.mark.parametrize("case", list(VALUES))
def test_every_bit_comes_back_and_only_the_touched_pairs_are_stored(tmp_path, case):
    L, A, AT = 7, 3000, 2
    # one label per attribute, two for the first 100: rows padded to all 7 labels, 5 slots inactive
    X = np.concatenate([np.arange(A), np.arange(100)]).astype(np.int32)[:, None]
    y = np.concatenate([np.arange(A) % L, (np.arange(100) + 3) % L]).astype(np.int32)
    pairs = feature_set("observed", X, y, A, L)
    assert (pairs.active == 0).sum() == 500
    state = PerceptronState.zeros(A, AT, L, pairs)
    n = len(state.W)
    w, u, w_dtype, u_dtype = VALUES[case]
    at = np.array([0, 5, 17, n // 2, n - 2, n - 1])
    state.W[at], state.U[at] = w, u
    state.U[9] = -0.0 if "minus" in case else 0.0  # -0.0 with a zero weight: a bit that must come back
    state.Wt[1, 2], state.Ut[3, 4] = 2.0, -0.25
    state.Wc[1, 0, 3], state.Uc[0, 2, 1] = -1.0, 123456789.0
    state.c, state.epoch, state.rng_state = 12345, 3, {"bit_generator": "PCG64", "state": {"state": 7, "inc": 9}}
    save_checkpoint(tmp_path, state, {"run": 1})
    back = load_checkpoint(tmp_path, {"run": 1}, np.zeros((L + 1, L)), np.zeros(L))
    for name in ("W", "U", "Wt", "Ut", "Wc", "Uc", "ptr", "labels", "active"):
        mine, theirs = getattr(state, name), getattr(back, name)
        assert mine.dtype == theirs.dtype and mine.tobytes() == theirs.tobytes(), name
    assert (back.c, back.epoch, back.rng_state) == (state.c, state.epoch, state.rng_state)
    stored = _meta(tmp_path)["arrays"]
    assert (stored["W"]["dtype"], stored["U"]["dtype"]) == (w_dtype, u_dtype)
    assert stored["W"]["shape"] == [len(at) + ("minus" in case)]
    dense = 14 * n + 8 * A
    assert (tmp_path / CHECKPOINT).stat().st_size < dense / 4


def test_a_checkpoint_of_the_dense_layout_still_resumes(tmp_path):
    """Checkpoints written before the sparse layout (every array in full) resume to the same weights."""
    feats, y, mask, end, A, AT, L = _data(seed=4)
    pairs = feature_set("all", feats.state, y, A, L)
    straight, _ = train_perceptron(feats, y, PerceptronState.zeros(A, AT, L, pairs), mask=mask, end=end,
                                   epochs=4, seed=3)

    def dense(st):
        arrays = {name: getattr(st, name) for name in ("W", "U", "Wt", "Ut", "Wc", "Uc")}
        arrays.update(ptr=st.ptr, labels=st.labels, active=st.active)
        save_archive(tmp_path / CHECKPOINT, {"kind": "checkpoint", "c": st.c, "epoch": st.epoch,
                                             "rng_state": st.rng_state, "best_score": None, "best_epoch": 0,
                                             "fingerprint": {}}, arrays)
    train_perceptron(feats, y, PerceptronState.zeros(A, AT, L, pairs), mask=mask, end=end, epochs=2, seed=3,
                     on_epoch_end=dense)
    state = load_checkpoint(tmp_path, {}, mask, end, epochs=4)
    resumed, _ = train_perceptron(feats, y, state, mask=mask, end=end, epochs=4, seed=3)
    _same(straight, resumed)


def test_a_run_keeps_only_its_latest_checkpoint(tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    stale = ckpt / f".{CHECKPOINT}.k1ll3d.tmp"  # what a write killed half-way leaves
    stale.write_bytes(b"\0" * 1000)
    epochs_seen = []
    Tagger.train(str(SAMPLE), epochs=3, checkpoint_dir=ckpt, callback=lambda r: epochs_seen.append(
        (r.epoch, _meta(ckpt)["epoch"])), **COMMON)
    assert epochs_seen == [(1, 1), (2, 2), (3, 3)]  # written after every epoch, replacing the last
    assert sorted(p.name for p in ckpt.iterdir()) == [CHECKPOINT]  # the library keeps it: no model saved


def _train_cli(*args: object):
    return CliRunner().invoke(main, ["train", "--train", str(SAMPLE), "--columns", "word,pos,chunk",
                                     "--template", "crfsuite", "--seed", "3", *[str(a) for a in args]])


def test_structperc_train_removes_the_checkpoint_once_the_model_is_saved(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    made = tmp_path / "made" / "ckpt"  # made by the run: removed with its checkpoint
    r = _train_cli("--epochs", 2, "--model", tmp_path / "m1", "--checkpoint-dir", made, "-q")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "m1" / "model.zip").exists() and not made.exists() and not made.parent.exists()

    mine = tmp_path / "mine"  # the user's folder stays, without the checkpoint
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    r = _train_cli("--epochs", 2, "--model", tmp_path / "m2", "--checkpoint-dir", mine, "-q")
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]

    kept = tmp_path / "kept"
    r = _train_cli("--epochs", 2, "--model", tmp_path / "m3", "--checkpoint-dir", kept, "--keep-checkpoint", "-q")
    assert r.exit_code == 0, r.output
    assert _meta(kept)["epoch"] == 2
    assert _model_bytes(tmp_path / "m1") == _model_bytes(tmp_path / "m2") == _model_bytes(tmp_path / "m3")

    r = _train_cli("--epochs", 2, "--model", tmp_path / "m4", "--keep-checkpoint")
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.strip().splitlines() == [
        "Error: --keep-checkpoint keeps the checkpoint of --checkpoint-dir: give --checkpoint-dir"]


def test_resuming_more_epochs_than_asked_is_an_error_and_as_many_just_saves(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    ckpt = tmp_path / "ckpt"
    r = _train_cli("--epochs", 3, "--model", tmp_path / "done", "--checkpoint-dir", ckpt, "--keep-checkpoint")
    assert r.exit_code == 0, r.output

    r = _train_cli("--epochs", 2, "--model", tmp_path / "fewer", "--resume", ckpt)
    assert r.exit_code == 1, r.output
    assert isinstance(r.exception, SystemExit) and "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert lines == [f"Error: {ckpt / CHECKPOINT}: the checkpoint already has 3 epochs and --epochs asks for 2: "
                     "give --epochs 3 or more to resume it"]
    assert not (tmp_path / "fewer").exists()  # the failed run leaves no folder behind
    with pytest.raises(InputError, match="already has 3 epochs and --epochs asks for 1"):
        Tagger.train(str(SAMPLE), epochs=1, resume=ckpt, **COMMON)

    # exactly as many: no epoch to train, the model of the finished run is written at once
    r = _train_cli("--epochs", 3, "--model", tmp_path / "same", "--resume", ckpt)
    assert r.exit_code == 0, r.output
    assert not [line for line in r.stderr.splitlines() if line.startswith("epoch")], r.stderr
    assert _model_bytes(tmp_path / "same") == _model_bytes(tmp_path / "done")
    assert (ckpt / CHECKPOINT).exists()  # resumed from, not written by this run: left alone
    assert os.listdir(ckpt) == [CHECKPOINT]
