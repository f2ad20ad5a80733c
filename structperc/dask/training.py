"""Iterative parameter mixing (`structperc.train.mixing`) on a Dask cluster: each shard's epoch is a Dask
task, the driver mixes, and a worker lost mid-epoch costs a rerun, not the run.

What lives where, and why. Everything a task reads is the result of another task, never a bare
``scatter``: scattered data has no lineage and dies with its worker, while a task's result is recomputed
wherever the scheduler sends it next. Nothing is pinned: the shards' inputs start one per worker as a
preference only, and each epoch runs where the scheduler finds its data.

* **A shard's integer arrays** (and the state feature set) go to the cluster once and stay there for the
  whole run, as the result of a task (`hold`) whose argument the scheduler keeps.
* **The weights an epoch starts from** are a *base* and the *deltas* since: a fresh run's base is
  `ZeroWeights` (a few bytes; each task expands it), and after each epoch only what the mixing changed
  leaves the driver — a `MixedDelta`, the changed elements' bit mask and mixed values, again the result
  of a `hold` task. A task applies the deltas to its copy of the base; a worker thread keeps the
  start of its last epoch, so its next epoch applies only the one new delta (`_start_of`; it costs
  one more copy of the dense weights per thread; on SXU with 2 shards the tasks' time per epoch
  beyond training fell from about 0.21 s to 0.12 s). Once the deltas add up to more than
  `REBASE` of the dense size, the cluster makes a new base of them (`rebased`, a task of the old base and
  the deltas: its lineage is small deltas, not dense weights), which each worker fetches once from a
  peer. The driver never sends dense weights (a resumed run's start is the one exception).
* **What comes back** is only what changed: for W/U and for Wc/Uc, a bit mask of the elements the epoch
  changed and their values (Wt and Ut whole: they are (L + 1) x L). By default the task finds them by
  comparing, bit for bit, what it trained with what it started from — an update moves the pairs of the
  gold and the predicted label only, a small part of an attribute's row; or, as
  `~structperc.train.mixing.mix_rows` does, it takes the whole rows of the attributes
  ``shard_epoch(track=True)`` names. Every other element still holds the value it started from, so the
  driver mixes the union of the changed elements (the arithmetic of `~structperc.train.mixing.mix`,
  element by element), filling in what a shard did not send from its own copy of the mixed state, and
  gets the dense mixing's weights bit for bit.
* **Purity.** A task trains a copy (`shard_epoch` trains in place), in a buffer its worker thread keeps
  from one epoch to the next (`release_scratch` frees them at the end), so a rerun on the same inputs
  gives the same bits: a shard's epoch is a function of seed, epoch and shard.

So `DaskShards` gives the weights of `~structperc.train.mixing.SerialShards` and
`~structperc.train.workers.ProcessShards`, bit for bit, for the same shards and mixing, and so does a run
in which a worker process is killed mid-epoch (Dask reruns that shard's epoch, rebuilding whatever it
needs that was lost with the worker: the shard's arrays, a delta, the base). `DaskShards.traffic`
records the bytes of every epoch (`EpochTraffic`).

Where the driver read the input, the shards' arrays travel from it once, through the scheduler, which keeps
them as the task's argument. Where the workers read their own parts (`structperc.dask.parts`),
the shards are their tasks' results and never leave the workers.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from structperc.dask.changes import (
    BLOCK_ELEMENTS,
    CHANGES,
    STATE_ROWS,
    TRANS_ROWS,
    WHOLE,
    EpochTraffic,
    MixedDelta,
    MixedWeights,
    ShardChanges,
    ZeroWeights,
    mix_changes,
    rebased,
)
from structperc.dask.client import CONNECT_TIMEOUT, distributed_module, require_workers, using
from structperc.dask.shard_tasks import _start_of as _start_of  # the tests reach the kept start
from structperc.dask.shard_tasks import epoch_task, release_scratch, scratch_bytes
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights
from structperc.train.mixing import MIXED, Shard, ShardResult, mixing_numerators
from structperc.train.perceptron import PerceptronState
from structperc.train.workers import WorkerError

#: The cluster makes a new base when the deltas since the last add up to more than this share of its size.
REBASE = 0.5
#: A worker thread keeps its last epoch's start (`_start_of`) only while the dense weights take at most
#: this many bytes (`DaskShards`' ``keep_start_bytes``): past it, a second dense copy per thread costs more
#: memory than its time is worth, and the task compares with the base and the values the deltas wrote
#: instead (`_lean_start`).
KEEP_START_BYTES = 1 << 30

#: The names other modules import from here (the changes and the tasks live in `structperc.dask.changes`
#: and `structperc.dask.shard_tasks`).
__all__ = ["BLOCK_ELEMENTS", "CHANGES", "KEEP_START_BYTES", "REBASE", "STATE_ROWS", "TRANS_ROWS", "WHOLE",
           "DaskShards", "EpochTraffic", "MixedDelta", "MixedWeights", "ShardChanges", "ZeroWeights",
           "dask_runner", "epoch_task", "hold", "mix_changes", "rebased", "release_scratch", "scratch_bytes",
           "train_on_dask"]


def hold(value: Any) -> Any:
    """A task whose result is its argument: data that lives on a worker and that the scheduler can
    recompute (from the argument it keeps) when the worker holding it is lost."""
    return value


class DaskShards:
    """The shards' epochs as tasks on the Dask cluster of ``client`` (see the module docstring): the
    interface of `~structperc.train.mixing.SerialShards` — a context manager whose ``epoch(epoch,
    mixing)`` runs every shard's epoch from ``state``'s weights and leaves the mixed weights in
    ``state``'s arrays (the caller sets the counter from the results) — and the same bits.

    ``changes`` is how each task finds what its epoch changed (`epoch_task`: ``"elements"``, the
    default, or ``"rows"``). ``timeout`` (seconds, default none) bounds an epoch's wait for its tasks.
    ``keep_start_bytes``: the dense size up to which a worker thread keeps its last start
    (`KEEP_START_BYTES`; beyond it, `_lean_start`). ``rebase``: the share of the dense weights the deltas
    since the base may add up to before the cluster makes a new base of them (`REBASE`; 0: every epoch).
    ``direct`` (default on) takes the shards' changes from the workers without the scheduler in between;
    turn it off where the driver cannot reach the workers. ``traffic`` holds one `EpochTraffic` per epoch run.

    While it runs, the cluster's active memory manager is paused (and resumed after, if it was running):
    it drops the replicas of the base and the shards' inputs that no task is waiting for at that moment,
    so between two epochs it would take away what every worker's next epoch needs, to send it back."""

    #: The task of one shard's epoch (a test replaces it to kill the worker that runs it).
    epoch_task: Callable[..., ShardChanges] = staticmethod(epoch_task)

    def __init__(self, shards: list[Shard], state: PerceptronState, client: Any, timeout: float | None = None,
                 direct: bool = True, changes: str = CHANGES[0], rebase: float = REBASE,
                 keep_start_bytes: int = KEEP_START_BYTES):
        if changes not in CHANGES:
            raise InputError(f"unknown way to find an epoch's changes {changes!r} (one of {', '.join(CHANGES)})")
        self.shards, self.state, self.client, self.timeout, self.direct = shards, state, client, timeout, direct
        self.changes, self.rebase = changes, rebase
        self.keep_start = sum(getattr(state, name).nbytes for name in MIXED) <= keep_start_bytes
        self.traffic: list[EpochTraffic] = []
        self._base: Any = None  # the weights the deltas apply to (a future)
        self._base_is_new = True  # every worker must fetch it for the next epoch
        self._base_bytes = 0  # what fetching it costs
        self._deltas: list[Any] = []
        self._delta_bytes = 0  # of the deltas since the base
        self._last_delta_bytes = 0  # what a worker fetches when the base is not new
        self._shard_futures: list[Any] = []
        self._pairs: Any = None
        self._amm_was_running = False
        self._run = uuid.uuid4().hex[:12]

    def __enter__(self) -> "DaskShards":
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _submit(self, func: Callable, *args: Any, name: str, **kw: Any) -> Any:
        with warnings.catch_warnings():  # large, yes: the scheduler keeps them to rebuild what is lost
            warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
            return self.client.submit(func, *args, key=f"structperc-{name}-{self._run}", pure=False, **kw)

    def _start(self) -> None:
        require_workers(self.client, "train on", max(CONNECT_TIMEOUT, self.timeout or 0))
        try:
            self._amm_was_running = bool(self.client.amm.running())
            if self._amm_was_running:
                self.client.amm.stop()
        except Exception:  # a scheduler without the extension: nothing to pause
            self._amm_was_running = False
        st = self.state
        arrays = {name: getattr(st, name) for name in MIXED}
        if not any(a.any() for a in arrays.values()):  # a fresh run: nothing dense to send
            base: MixedWeights | ZeroWeights = ZeroWeights({n: (a.shape, a.dtype.str) for n, a in arrays.items()},
                                                           f"{self._run}-base-0")
        else:  # a resumed state: the scheduler keeps it, as the root of the bases' lineage
            base = MixedWeights({n: a.copy() for n, a in arrays.items()}, f"{self._run}-base-0")
        self._base, self._base_bytes = self._submit(hold, base, name="base-0"), base.nbytes
        self._pairs = self._submit(hold, (st.ptr, st.labels, st.active), name="pairs")
        # one shard per worker to begin with (a preference, not a pin: any worker may rebuild it)
        workers = sorted(self.client.nthreads())
        # a shard the workers made themselves (`structperc.dask.parts`) is a future already
        self._shard_futures = [shard if isinstance(shard, distributed_module().Future) else
                               self._submit(hold, shard, name=f"shard-{shard.index}",
                                            workers=[workers[i % len(workers)]], allow_other_workers=True)
                               for i, shard in enumerate(self.shards)]

    def _stop(self) -> None:
        futures = [f for f in [self._pairs, self._base, *self._shard_futures, *self._deltas] if f is not None]
        self._base, self._deltas, self._pairs, self._shard_futures = None, [], None, []
        try:
            for f in futures:
                f.release()
            if self.traffic:
                self.client.run(release_scratch)
            if self._amm_was_running:
                self.client.amm.start()
        except Exception:  # the client may be closing already: its futures go with it
            pass

    def epoch(self, epoch: int, mixing: str) -> list[ShardResult]:
        """Every shard's epoch ``epoch`` (from 1) from the mixed state, mixed into ``state``'s arrays."""
        distributed = distributed_module()
        started = time.perf_counter()
        st = self.state
        dense = sum(getattr(st, name).nbytes for name in MIXED)
        sent_bytes = self._base_bytes if self._base_is_new else self._last_delta_bytes
        futures = [self._submit(self.epoch_task, shard, self._pairs, self._base, st.c, epoch, self.changes,
                                tuple(self._deltas), self.keep_start, name=f"epoch-{epoch}-{i}")
                   for i, shard in enumerate(self._shard_futures)]
        try:
            distributed.wait(futures, timeout=self.timeout)
            phases = {"tasks": time.perf_counter() - started}
            changes: list[ShardChanges] = self.client.gather(futures, direct=self.direct)
        except distributed.client.FutureCancelledError as exc:
            raise WorkerError(f"a shard's epoch {epoch} was cancelled (the cluster shut down?): {exc}") from None
        except distributed.KilledWorker as exc:
            raise WorkerError(f"the Dask workers running a shard's epoch {epoch} kept dying: {exc}") from None
        except TimeoutError:
            raise WorkerError(f"epoch {epoch} did not finish on the Dask cluster within {self.timeout:g} s") \
                from None
        finally:
            for f in futures:
                f.release()
        phases["gather"] = time.perf_counter() - started - phases["tasks"]
        results = [ch.result for ch in changes]
        k = mixing_numerators([r.mistakes for r in results], mixing)
        mixing_started = time.perf_counter()
        delta = mix_changes(changes, k, st)
        phases["mix"] = time.perf_counter() - mixing_started
        self._next_start(delta, dense, epoch)
        n_workers = len(self.client.nthreads()) or 1
        self.traffic.append(EpochTraffic(epoch, n_workers, sent_bytes, [ch.nbytes for ch in changes], dense,
                                         time.perf_counter() - started, phases,
                                         [ch.changed("W") for ch in changes], st.W.size, delta.nbytes))
        return results

    def _next_start(self, delta: MixedDelta, dense: int, epoch: int) -> None:
        """Send ``delta`` (the one thing that leaves the driver between epochs) and decide how the next
        epoch starts: from the base and the deltas since, or — past `REBASE` of the dense size in deltas
        — from a new base the cluster makes of them (`rebased`)."""
        delta = dataclasses.replace(delta, token=f"{self._run}-delta-{epoch}")  # see `_start_of`
        self._deltas.append(self._submit(hold, delta, name=f"delta-{epoch}"))
        self._delta_bytes += delta.nbytes
        self._last_delta_bytes = delta.nbytes
        self._base_is_new = self._delta_bytes > self.rebase * dense
        if self._base_is_new:
            old, deltas = self._base, self._deltas
            self._base, self._base_bytes = self._submit(rebased, old, tuple(deltas), f"{self._run}-base-{epoch}",
                                                        name=f"base-{epoch}"), dense
            for f in [old, *deltas]:  # kept by the scheduler while the new base may need recomputing
                f.release()
            self._deltas, self._delta_bytes = [], 0


def dask_runner(dask: Any, timeout: float | None = None, direct: bool = True, changes: str = CHANGES[0],
                rebase: float = REBASE) -> Callable[[list[Shard], PerceptronState], Any]:
    """The ``runner`` of `structperc.train.mixing.train_mixed` on the cluster ``dask`` (a scheduler
    address, ``local:N``, or a `distributed.Client`, used as it is and left open): a maker of a context
    manager that connects (an unreachable scheduler is an `InputError`) and yields `DaskShards`."""
    @contextlib.contextmanager
    def run(shards: list[Shard], state: PerceptronState) -> Iterator[DaskShards]:
        with using(dask) as client, DaskShards(shards, state, client, timeout, direct, changes, rebase) as shards_run:
            yield shards_run

    return run


def train_on_dask(feats: Features, y: np.ndarray, state: PerceptronState, *, dask: Any,
                  timeout: float | None = None, changes: str = CHANGES[0],
                  traffic: list[EpochTraffic] | None = None, **train_mixed_args: Any) -> tuple[Weights, int]:
    """`~structperc.train.mixing.train_mixed` with the shards' epochs on a Dask cluster (`DaskShards`):
    the same arguments (``shards``, ``mixing``, ``epochs`` …; not the local runner's ``processes``,
    ``start_method``, ``sparse``) and the same weights, bit for bit. ``traffic``, if given, receives the
    `EpochTraffic` of every epoch."""
    from structperc.train.mixing import train_mixed

    made: list[DaskShards] = []
    runner = dask_runner(dask, timeout, changes=changes)

    @contextlib.contextmanager
    def recording(shards: list[Shard], st: PerceptronState) -> Iterator[DaskShards]:
        with runner(shards, st) as shards_run:
            made.append(shards_run)
            yield shards_run

    try:
        return train_mixed(feats, y, state, runner=recording, **train_mixed_args)
    finally:
        if traffic is not None:
            for shards_run in made:
                traffic.extend(shards_run.traffic)
