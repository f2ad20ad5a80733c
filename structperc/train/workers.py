"""Worker processes of iterative parameter mixing on one machine (`structperc.train.mixing`).

One process per shard. A worker receives its shard's integer arrays once, when it starts (inherited
under "fork", pickled once under "spawn"), and keeps them for the whole run. The weights and
averaging sums live in shared memory: one block per shard (a file per array on ``/dev/shm``, mapped by
every process and unlinked as soon as all have mapped it, so nothing is left behind whatever way the
run ends), so per epoch the pipes carry only a few numbers:

1. ``epoch``: every worker runs its shard's epoch in place on its own block, which holds the mixed
   weights, and answers with its mistakes and counter;
2. ``mix``: every worker mixes one slice (1/N of the elements) of every array across all N blocks
   and writes the result into all N blocks (where they differ: most weights no shard changed), so
   the next epoch starts from the mixed weights without a copy, and the mixing itself runs on every
   core. Mixing is memory-bound: per epoch it reads every weight and sum of every block once.

The parent reads block 0 (the mixed state) for dev scoring and checkpoints. A worker that dies (its
process killed, e.g. by the kernel's out-of-memory killer) or fails raises `WorkerError` in the
parent at once: the parent waits on each worker's pipe *and* its process sentinel, never on a pipe
alone. The epoch kernels are single-threaded, and mixing is elementwise numpy (no thread pool), so a
worker uses one core.
"""
from __future__ import annotations

import mmap
import multiprocessing as mp
import os
import shutil
import tempfile
import traceback
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from structperc.errors import InputError, StructpercError
from structperc.train.mixing import MIXED, Shard, ShardResult, mixing_numerators, shard_epoch
from structperc.train.mixing_arithmetic import mix, mix_rows
from structperc.train.state import PerceptronState

if TYPE_CHECKING:
    from multiprocessing.context import ForkContext, ForkServerContext, SpawnContext

START_METHODS = ("fork", "spawn", "forkserver")
Spec = dict[str, tuple[tuple[int, ...], str]]  # array name -> (shape, dtype)


class WorkerError(StructpercError, RuntimeError):
    """A training worker process died or failed; the run is stopped and its shared memory freed."""


def _spec(arrays: dict[str, np.ndarray]) -> Spec:
    return {name: (tuple(a.shape), a.dtype.str) for name, a in arrays.items()}


def _open(directory: Path, block: str, spec: Spec) -> dict[str, np.ndarray]:
    """The arrays of ``block``: plain writable arrays over shared mappings, one file each, so that
    an array's memory goes back to the system once nothing references it (the files are unlinked as
    soon as every process has mapped them)."""
    out = {}
    for name, (shape, dtype) in spec.items():
        dt = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:  # nothing to share (and mmap refuses an empty file)
            out[name] = np.zeros(shape, dt)
            continue
        with open(directory / f"{block}.{name}", "r+b") as fh:
            buffer = mmap.mmap(fh.fileno(), n * dt.itemsize)
        out[name] = np.frombuffer(buffer, dtype=dt, count=n).reshape(shape)
    return out


def _create(directory: Path, block: str, arrays: dict[str, np.ndarray]) -> None:
    for name, a in arrays.items():
        with open(directory / f"{block}.{name}", "wb") as fh:
            fh.truncate(a.nbytes)
    views = _open(directory, block, _spec(arrays))
    for name, a in arrays.items():
        if a.any():  # a new file reads as zeros: a fresh state's blocks cost nothing until trained
            views[name][...] = a


def _shared_dir() -> str | None:
    """``/dev/shm`` (memory, not disk) where there is one, else the default temporary folder."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _serve(index: int, shard: Shard, directory: str, spec: Spec, pair_spec: Spec, n_shards: int,
           conn: Connection) -> None:
    """A worker's life: map the blocks, then run epochs and mix slices until told to stop."""
    try:
        blocks = [_open(Path(directory), f"shard{i}", spec) for i in range(n_shards)]
        p = _open(Path(directory), "pairs", pair_spec)
        pairs = (p["ptr"], p["labels"], p["active"])
        conn.send(("ready", os.getpid()))
        while True:
            message = conn.recv()
            if message[0] == "epoch":
                _, epoch, c, track = message
                conn.send(("done", shard_epoch(shard, blocks[index], pairs, c, epoch, track)))
            elif message[0] == "mix_rows":
                _, k, rows, trans_rows = message
                mix_rows(blocks, k, pairs[0], rows, trans_rows, index, n_shards)
                conn.send(("done", None))
            elif message[0] == "mix":
                _, k = message
                for name in MIXED:
                    n = blocks[0][name].size
                    lo, hi = n * index // n_shards, n * (index + 1) // n_shards
                    arrays = [b[name] for b in blocks]
                    mix(arrays, k, arrays, lo, hi)
                conn.send(("done", None))
            else:
                break
    except (KeyboardInterrupt, EOFError):
        pass
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except OSError:
            pass


class ProcessShards:
    """N worker processes, one per shard, over blocks of shared memory (see the module docstring).

    Entering starts them with ``state``'s weights in every block and points ``state``'s arrays at
    block 0 (which stays with ``state`` after the run: no copy back); leaving stops the workers and
    frees the other blocks, on every path.
    """

    def __init__(self, shards: list[Shard], state: PerceptronState, start_method: str | None = None,
                 sparse: bool = False):
        method = start_method or ("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        if method not in START_METHODS or method not in mp.get_all_start_methods():
            raise InputError(f"start method {method!r} is not available here "
                             f"(one of {', '.join(m for m in START_METHODS if m in mp.get_all_start_methods())})")
        self.shards, self.state, self.method = shards, state, method
        self.sparse = sparse
        self._procs: list[Any] = []
        self._conns: list[Connection] = []
        self._dir: Path | None = None

    def __enter__(self) -> "ProcessShards":
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _start(self) -> None:
        st, n = self.state, len(self.shards)
        arrays = {name: getattr(st, name) for name in MIXED}
        pair_arrays = {"ptr": st.ptr, "labels": st.labels, "active": st.active}
        self._dir = Path(tempfile.mkdtemp(prefix="structperc-ipm-", dir=_shared_dir()))
        for i in range(n):
            _create(self._dir, f"shard{i}", arrays)
        _create(self._dir, "pairs", pair_arrays)
        # `START_METHODS` only: typeshed's `BaseContext` (get_context's type for a str) has no Process
        ctx = cast("ForkContext | ForkServerContext | SpawnContext", mp.get_context(self.method))
        for i, shard in enumerate(self.shards):
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_serve, name=f"structperc-ipm-{i}", daemon=True,
                               args=(i, shard, str(self._dir), _spec(arrays), _spec(pair_arrays), n, theirs))
            proc.start()
            theirs.close()
            self._procs.append(proc)
            self._conns.append(ours)
        self._gather("start-up")
        mixed = _open(self._dir, "shard0", _spec(arrays))  # the parent's view of the mixed state
        for name in MIXED:
            setattr(st, name, mixed[name])
        shutil.rmtree(self._dir, ignore_errors=True)  # every process has mapped the blocks
        self._dir = None

    def epoch(self, epoch: int, mixing: str) -> list[ShardResult]:
        """Every shard's epoch ``epoch`` from the mixed state, then the mixing (block 0 holds it)."""
        track = self.sparse and len(self.shards) > 1
        for conn in self._conns:
            conn.send(("epoch", epoch, self.state.c, track))
        results: list[ShardResult] = self._gather(f"epoch {epoch}")
        if len(self.shards) > 1:
            k = mixing_numerators([r.mistakes for r in results], mixing)
            if track:
                rows = np.unique(np.concatenate([r.rows for r in results]))
                trans_rows = np.unique(np.concatenate([r.trans_rows for r in results]))
                for r in results:
                    r.rows = r.trans_rows = None
                message: tuple = ("mix_rows", k, rows, trans_rows)
            else:
                message = ("mix", k)
            for conn in self._conns:
                conn.send(message)
            self._gather(f"the mixing after epoch {epoch}")
        return results

    def _gather(self, during: str) -> list:
        """Every worker's answer; `WorkerError` as soon as one fails or its process ends."""
        replies: list = [None] * len(self._procs)
        pending = set(range(len(self._procs)))
        while pending:
            conns = {self._conns[i]: i for i in pending}
            sentinels = {self._procs[i].sentinel: i for i in pending}
            ready = wait(list(conns) + list(sentinels))
            for obj in ready:
                if obj in conns:
                    i = conns[obj]
                    try:
                        status, value = obj.recv()
                    except (EOFError, OSError):
                        raise self._died(i, during) from None
                    if status == "error":
                        raise WorkerError(f"training worker {i} failed during {during}:\n{value}")
                    replies[i] = value
                    pending.discard(i)
            for obj in ready:
                i = sentinels.get(obj, -1)
                if i in pending and not self._conns[i].poll():
                    raise self._died(i, during)
        return replies

    def _died(self, i: int, during: str) -> WorkerError:
        proc = self._procs[i]
        proc.join(1)
        code = proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        if code == -9:
            how += "; out of memory? fewer workers, or --feature-set observed, need less"
        return WorkerError(f"training worker {i} (pid {proc.pid}) stopped during {during} ({how}): "
                           "training stopped")

    def _stop(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass
        for proc in self._procs:
            proc.join(5)
            if proc.is_alive():
                proc.terminate()
                proc.join(2)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self._conns:
            conn.close()
        self._procs, self._conns = [], []
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
