"""Iterative parameter mixing on a Dask `LocalCluster` (`structperc.dask.training`; 2 single-threaded
worker processes, one cluster for the module), on a slice of the shipped CoNLL-2000 training sample:

* `DaskShards` gives `SerialShards`' weights, sums and counter bit for bit, under both mixings and both
  ways of finding an epoch's changes, while the shards send back fewer bytes than their dense weights and
  the workers receive only the mixing's deltas — and so it does whenever the cluster makes a new base;
* one shard on the cluster is the plain trainer (`train_perceptron`) bit for bit;
* a worker process killed (SIGKILL) while it runs a shard's epoch: Dask reruns the epoch elsewhere and the
  weights are those of a run without the loss;
* an unreachable scheduler is a one-line `InputError`.
"""
from __future__ import annotations

import gzip
import os
import signal
import socket
import time

import numpy as np
import pytest
from testkit import SAMPLE_TRAIN

from structperc.errors import InputError
from structperc.features.instances import training_instances
from structperc.features.task import get_task, masks
from structperc.features.templates import resolve_template
from structperc.io.conll import read_corpus
from structperc.model.state_weights import feature_set
from structperc.train.mixing import MIXED, SerialShards, make_shards, train_mixed
from structperc.train.perceptron import EpochReport, PerceptronState, epoch_inputs, train_perceptron

pytest.importorskip("distributed", reason="the dask extra is not installed")
from structperc.dask import training as dask_training  # noqa: E402
from structperc.dask.client import connect  # noqa: E402
from structperc.dask.training import DaskShards, epoch_task, scratch_bytes, train_on_dask  # noqa: E402

SENTENCES = 400
#: The crfsuite template plus a conditioned transition: the epochs change rows of Wc and Uc too.
TEMPLATE = resolve_template("crfsuite") + ["y[-1]|y[0]|pos[0]"]
TIMEOUT = 60.0  # seconds an epoch may take before the test fails rather than hangs


@pytest.fixture(scope="module")
def client():
    with connect("local:2") as c:
        yield c


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    """Features of the sample's first sentences, as `structperc.train.run.train_model` builds them, and a
    maker of fresh trainer states over them."""
    text = gzip.decompress(SAMPLE_TRAIN.read_bytes()).decode("utf-8")
    path = tmp_path_factory.mktemp("dask-train") / "train.txt"
    path.write_text("\n\n".join(text.strip().split("\n\n")[:SENTENCES]) + "\n\n", encoding="utf-8")
    task = get_task("chunk")
    corpus = read_corpus(str(path), ["word", "pos", "chunk"])
    index, _, label_set, data = training_instances(corpus, task, TEMPLATE, 1, "?")
    labels = label_set.labels
    mask, end = masks(labels, task)
    pairs = feature_set("all", data.feats.state, data.y, index.n_state_attributes, len(labels),
                        allowed=data.allowed)

    def state() -> PerceptronState:
        return PerceptronState.zeros(index.n_state_attributes, index.n_transition_attributes, len(labels), pairs)
    assert index.n_transition_attributes > 0 and len(corpus) == SENTENCES
    return data, mask, end, state


def shards_of(problem, n: int, seed: int = 3):
    data, mask, end, state = problem
    st = state()
    inputs = epoch_inputs(data.feats, data.y, st, mask, end, data.allowed, data.feats.values)
    return st, make_shards(inputs, n, seed)


def run(runner, st: PerceptronState, epochs: int, mixing: str) -> list[int]:
    """The epochs of `train_mixed` with ``runner``; the mistakes of each."""
    mistakes = []
    with runner:
        for epoch in range(1, epochs + 1):
            results = runner.epoch(epoch, mixing)
            st.c = max(r.c for r in results)
            mistakes.append(sum(r.mistakes for r in results))
    return mistakes


def assert_same_state(a: PerceptronState, b: PerceptronState) -> None:
    for name in MIXED:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    assert a.c == b.c


@pytest.mark.parametrize("mixing, changes", [("uniform", "elements"), ("mistakes", "elements"), ("uniform", "rows")])
def test_dask_shards_equal_serial_shards(client, problem, mixing, changes):
    s1, shards1 = shards_of(problem, 3)
    m1 = run(SerialShards(shards1, s1), s1, 3, mixing)
    s2, shards2 = shards_of(problem, 3)
    runner = DaskShards(shards2, s2, client, timeout=TIMEOUT, changes=changes)
    m2 = run(runner, s2, 3, mixing)
    assert_same_state(s1, s2)
    assert m1 == m2 and m1[-1] < m1[0]  # it learnt: the comparison is not of zeros
    assert np.count_nonzero(s2.Wc) > 0  # the conditioned transitions were trained (and mixed) too
    assert [t.epoch for t in runner.traffic] == [1, 2, 3]
    assert set(client.run(scratch_bytes).values()) == {0}  # the workers' epoch buffers went with the run
    dense = sum(getattr(s2, name).nbytes for name in MIXED)
    sent = [t.sent_per_worker for t in runner.traffic]
    assert sent[0] == 0 and 0 < sent[2] < sent[1] < dense / 4  # zeros made on the workers, then deltas
    assert sent[1:] == [t.delta for t in runner.traffic[:-1]]
    for t in runner.traffic:
        assert t.dense_reply == dense
        assert len(t.received) == 3 and all(0 < r < t.dense_reply for r in t.received)
        assert all(0 < n < t.weights for n in t.changed)


@pytest.mark.parametrize("rebase", [0.0, dask_training.REBASE])
def test_workers_without_a_kept_start_give_the_same_bits(client, problem, rebase):
    """Past ``keep_start_bytes`` a task starts from the base and every delta (no second dense copy),
    with a new base every epoch or after a few deltas: the serial shards' weights, bit for bit."""
    s1, shards1 = shards_of(problem, 2)
    run(SerialShards(shards1, s1), s1, 4, "uniform")
    s2, shards2 = shards_of(problem, 2)
    lean = DaskShards(shards2, s2, client, timeout=TIMEOUT, rebase=rebase, keep_start_bytes=0)
    assert not lean.keep_start
    run(lean, s2, 4, "uniform")
    assert_same_state(s1, s2)


def test_rebasing_changes_nothing(client, problem):
    """Dense weights every epoch (``rebase=0``), or a new base after the second epoch's delta: the same bits."""
    s1, shards1 = shards_of(problem, 2)
    run(SerialShards(shards1, s1), s1, 4, "uniform")
    s2, shards2 = shards_of(problem, 2)
    dense_every_epoch = DaskShards(shards2, s2, client, timeout=TIMEOUT, rebase=0)
    run(dense_every_epoch, s2, 4, "uniform")
    assert_same_state(s1, s2)
    dense = dense_every_epoch.traffic[0].dense_reply
    assert [t.sent_per_worker for t in dense_every_epoch.traffic] == [0] + [dense] * 3  # a new base each time
    s3, shards3 = shards_of(problem, 2)
    probe = DaskShards(shards3, s3, client, timeout=TIMEOUT)
    run(probe, s3, 2, "uniform")
    first_delta = probe.traffic[1].sent_per_worker  # room for the first delta, not for the second on top
    s4, shards4 = shards_of(problem, 2)
    rebasing = DaskShards(shards4, s4, client, timeout=TIMEOUT, rebase=(first_delta + 1) / dense)
    run(rebasing, s4, 4, "uniform")
    assert_same_state(s1, s4)
    sent = [t.sent_per_worker for t in rebasing.traffic]
    assert sent[0] == 0 and sent[1] == first_delta and sent[2] == dense and 0 < sent[3] < dense


def test_elements_send_fewer_values_than_rows(client, problem):
    """The same epochs, found both ways: the changed elements are a subset of the changed rows' pairs."""
    got = {}
    for changes in ("elements", "rows"):
        st, shards = shards_of(problem, 2)
        runner = DaskShards(shards, st, client, timeout=TIMEOUT, changes=changes)
        run(runner, st, 2, "uniform")
        got[changes] = (st.W.tobytes(), st.U.tobytes(), [t.changed for t in runner.traffic])
    assert got["elements"][:2] == got["rows"][:2]
    for few, many in zip(got["elements"][2], got["rows"][2]):
        assert all(a < b for a, b in zip(few, many))


def test_one_shard_is_the_plain_trainer(client, problem):
    data, mask, end, state = problem
    reports: dict[str, list[EpochReport]] = {"plain": [], "dask": []}
    s1, s2 = state(), state()
    w1, best1 = train_perceptron(data.feats, data.y, s1, mask=mask, end=end, epochs=2, seed=5,
                                 callback=reports["plain"].append)
    w2, best2 = train_on_dask(data.feats, data.y, s2, mask=mask, end=end, epochs=2, seed=5, shards=1, dask=client,
                              callback=reports["dask"].append, timeout=TIMEOUT)
    assert_same_state(s1, s2)
    assert best1 == best2 == 2
    assert w1.sparse.values.tobytes() == w2.sparse.values.tobytes()
    assert w1.trans.tobytes() == w2.trans.tobytes() and w1.cond.tobytes() == w2.cond.tobytes()
    assert [(r.mistakes, r.token_errors) for r in reports["plain"]] == \
        [(r.mistakes, r.token_errors) for r in reports["dask"]]


def test_resumed_run_equals_a_straight_run(client, problem):
    """Two epochs, then two more from that state (as ``--resume`` does): the straight mixed run's bits."""
    data, mask, end, state = problem
    common = dict(mask=mask, end=end, seed=4, shards=2)
    s1 = state()
    w1, _ = train_mixed(data.feats, data.y, s1, epochs=4, processes=False, **common)
    s2 = state()
    train_on_dask(data.feats, data.y, s2, epochs=2, dask=client, timeout=TIMEOUT, **common)
    w2, _ = train_on_dask(data.feats, data.y, s2, epochs=4, dask=client, timeout=TIMEOUT, **common)
    assert_same_state(s1, s2)
    assert s1.epoch == s2.epoch == 4
    assert w1.sparse.values.tobytes() == w2.sparse.values.tobytes()


def dying_epoch(marker: str, shard_index: int, epoch: int):
    """`epoch_task`, except that the first run of shard ``shard_index``'s epoch ``epoch`` writes its
    worker's pid to ``marker`` and kills that worker (SIGKILL: no Python code of it runs after)."""
    def task(shard, pairs, weights, c, e, *rest):
        if shard.index == shard_index and e == epoch:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:  # the rerun, on the surviving (or the restarted) worker
                pass
            else:
                os.write(fd, str(os.getpid()).encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)
        return epoch_task(shard, pairs, weights, c, e, *rest)
    return task


def test_worker_killed_mid_epoch_changes_nothing(client, problem, tmp_path):
    marker = tmp_path / "killed.pid"

    class DyingShards(DaskShards):
        epoch_task = staticmethod(dying_epoch(str(marker), 1, 3))  # two deltas on the base by then

    s1, shards1 = shards_of(problem, 2)
    m1 = run(SerialShards(shards1, s1), s1, 4, "uniform")
    s2, shards2 = shards_of(problem, 2)
    before = set(client.run(os.getpid).values())
    m2 = run(DyingShards(shards2, s2, client, timeout=TIMEOUT), s2, 4, "uniform")
    killed = int(marker.read_text())
    assert killed in before  # a worker of the cluster died during epoch 3 ...
    client.wait_for_workers(2, timeout=TIMEOUT)  # (its nanny starts another: the module's cluster is whole)
    assert killed not in set(client.run(os.getpid).values())
    assert_same_state(s1, s2)  # ... and the run is the one without the loss
    assert m1 == m2


def test_inputs_lost_with_their_only_worker_are_rebuilt(client, problem):
    """After epoch 1, the one worker holding shard 1's arrays is killed: epoch 2 rebuilds them from what
    the scheduler kept (the shard's task runs again), and the run is the one without the loss."""
    s1, shards1 = shards_of(problem, 2)
    run(SerialShards(shards1, s1), s1, 3, "uniform")
    s2, shards2 = shards_of(problem, 2)
    runner = DaskShards(shards2, s2, client, timeout=TIMEOUT)
    with runner:
        s2.c = max(r.c for r in runner.epoch(1, "uniform"))
        shard = runner._shard_futures[1]
        client.amm.run_once()  # down to one replica of everything (the run pauses the memory manager)
        deadline = time.monotonic() + TIMEOUT
        while len(client.who_has([shard])[shard.key]) != 1:
            assert time.monotonic() < deadline, "the extra replicas were never dropped"
            time.sleep(0.05)
        [holder] = client.who_has([shard])[shard.key]
        os.kill(client.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)
        for epoch in (2, 3):
            s2.c = max(r.c for r in runner.epoch(epoch, "uniform"))
        story = client.story(shard.key)
    computed = [e for e in story if e[0] == "scheduler" and tuple(e[2:4]) == ("processing", "memory")]
    assert len(computed) == 2  # built once, and once more after the loss
    assert_same_state(s1, s2)
    client.wait_for_workers(2, timeout=TIMEOUT)


def test_unreachable_scheduler_is_one_line(problem):
    data, mask, end, state = problem
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(InputError) as err:
        train_on_dask(data.feats, data.y, state(), mask=mask, end=end, epochs=1, shards=2,
                      dask=f"tcp://127.0.0.1:{port}")
    message = str(err.value)
    assert "cannot reach a Dask scheduler" in message and "\n" not in message


def test_fit_with_dask_gives_the_model_of_local_workers(client, tmp_path, monkeypatch):
    """``Tagger.fit(workers=2, dask=...)`` (what ``structperc train --workers 2 --dask ADDRESS`` calls) saves
    the same model bytes as ``workers=2`` on this machine's processes; ``dask`` without ``workers`` > 1
    is refused in one line."""
    from testkit import SAMPLE_TRAIN

    from structperc import Tagger

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")  # the training date in the model

    def model_bytes(**scale) -> bytes:
        tagger = Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=2).fit(str(SAMPLE_TRAIN), **scale)
        path = tagger.save(tmp_path / f"m{len(list(tmp_path.iterdir()))}")
        return path.read_bytes()

    assert model_bytes(workers=2, dask=client) == model_bytes(workers=2)
    with pytest.raises(InputError, match="--workers N"):
        Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=1).fit(str(SAMPLE_TRAIN), dask=client)


def test_a_worker_keeps_its_last_start_and_applies_only_the_new_deltas(monkeypatch):
    """`_start_of`: the base with the deltas applied, whether the thread's kept start is extended (the
    next epoch, same base) or rebuilt (another base, an older epoch's rerun, unnamed objects)."""
    from structperc.dask import training as dt

    rng = np.random.default_rng(0)
    shapes = {"W": ((12,), np.float32), "U": ((12,), np.float64), "Wt": ((3, 2), np.float32),
              "Ut": ((3, 2), np.float64), "Wc": ((2, 3, 2), np.float32), "Uc": ((2, 3, 2), np.float64)}
    base = dt.MixedWeights({n: rng.normal(size=s).astype(d) for n, (s, d) in shapes.items()}, "run-base-0")

    def delta(token: str) -> dt.MixedDelta:
        masks, values = {}, {}
        for names in (dt.STATE_ROWS, dt.TRANS_ROWS):
            where = rng.random(int(np.prod(shapes[names[0]][0]))) < 0.4
            masks[names[0]] = np.packbits(where)
            for n in names:
                values[n] = rng.normal(size=int(where.sum())).astype(shapes[n][1])
        for n in dt.WHOLE:
            values[n] = rng.normal(size=shapes[n][0]).astype(shapes[n][1])
        return dt.MixedDelta(masks, values, token)

    d1, d2, d3 = delta("run-delta-1"), delta("run-delta-2"), delta("run-delta-3")

    def same(a: dict, b: dt.MixedWeights) -> bool:
        return all(a[n].tobytes() == b.arrays[n].tobytes() for n in shapes)

    dt.release_scratch()
    try:
        assert same(dt._start_of(base, (d1,)), dt.rebased(base, (d1,)))
        applied = []
        monkeypatch.setattr(dt.MixedDelta, "apply", lambda self, arrays, f=dt.MixedDelta.apply:
                            applied.append(self.token) or f(self, arrays))
        extended = dt._start_of(base, (d1, d2, d3))
        assert applied == ["run-delta-2", "run-delta-3"]  # the kept start had d1 already
        monkeypatch.undo()
        assert same(extended, dt.rebased(base, (d1, d2, d3)))
        assert same(dt._start_of(base, (d1,)), dt.rebased(base, (d1,)))  # an older epoch: rebuilt
        other = dt.MixedWeights({n: a * 2 for n, a in base.arrays.items()}, "run-base-5")
        assert same(dt._start_of(other, (d3,)), dt.rebased(other, (d3,)))  # another base: rebuilt
        unnamed = dt.MixedDelta(d2.masks, d2.values)
        assert same(dt._start_of(other, (d3, unnamed)), dt.rebased(other, (d3, d2)))
        assert dt.scratch_bytes() > 0
    finally:
        dt.release_scratch()
    assert dt.scratch_bytes() == 0
