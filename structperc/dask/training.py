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
import threading
import time
import uuid
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from structperc.dask.client import CONNECT_TIMEOUT, distributed_module, using
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights
from structperc.train.mixing import MIXED, Shard, ShardResult, mix, mixing_numerators, shard_epoch
from structperc.train.perceptron import PerceptronState
from structperc.train.workers import WorkerError

#: The row-compressed arrays a shard sends back rows of, by the rows' kind: state attributes (rows of the
#: state pairs' offsets) and transition attributes (slices of (L + 1) x L of Wc, Uc).
STATE_ROWS, TRANS_ROWS = ("W", "U"), ("Wc", "Uc")
#: Mixed whole (small).
WHOLE = ("Wt", "Ut")
#: Weights mixed at a time by the driver (bounds its temporaries whatever the number of shards).
BLOCK_ELEMENTS = 1 << 20  # a multiple of 8: the blocks start at whole bytes of the packed masks
#: How a shard's task finds what its epoch changed (see `epoch_task`); the first is the default.
CHANGES = ("elements", "rows")
#: The cluster makes a new base when the deltas since the last add up to more than this share of its size.
REBASE = 0.5
#: A worker thread keeps its last epoch's start (`_start_of`) only while the dense weights take at most
#: this many bytes (`DaskShards`' ``keep_start_bytes``): past it, a second dense copy per thread costs more
#: memory than its time is worth, and the task compares with the base and the values the deltas wrote
#: instead (`_lean_start`).
KEEP_START_BYTES = 1 << 30
#: Each worker thread's buffers for the weights an epoch trains, by thread id (see `_working_copy`).
_SCRATCH: dict[int, dict[str, np.ndarray]] = {}
#: Each worker thread's last epoch start (see `_start_of`), by thread id.
_STARTS: dict[int, "_Start"] = {}


@dataclass(frozen=True)
class MixedWeights:
    """Mixed weights and sums (W, U, Wt, Ut, Wc, Uc): a base the epochs start from, as one object."""

    arrays: dict[str, np.ndarray]
    token: str = ""  # names it among the run's bases ("": never matched, see `_start_of`)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())


@dataclass(frozen=True)
class ZeroWeights:
    """All-zero weights and sums of these shapes and dtypes (a fresh run's start): a few bytes to send,
    which every task expands itself."""

    spec: dict[str, tuple[tuple[int, ...], str]]
    token: str = ""

    @property
    def nbytes(self) -> int:
        return 0


def _base_flat(base: MixedWeights | ZeroWeights, name: str) -> np.ndarray | None:
    """The flat array ``name`` of ``base``, or None for zeros."""
    return None if isinstance(base, ZeroWeights) else base.arrays[name].reshape(-1)


def rebased(base: MixedWeights | ZeroWeights, deltas: tuple[MixedDelta, ...], token: str = "") -> MixedWeights:
    """A new base (named ``token``): ``base`` with ``deltas`` applied (a task: the old base and the
    deltas are its lineage, so the scheduler keeps small deltas, never dense weights, to recompute it)."""
    if isinstance(base, ZeroWeights):
        arrays = {name: np.zeros(shape, dtype) for name, (shape, dtype) in base.spec.items()}
    else:
        arrays = {name: a.copy() for name, a in base.arrays.items()}
    for delta in deltas:
        delta.apply(arrays)
    return MixedWeights(arrays, token)


@dataclass(frozen=True)
class MixedDelta:
    """What one epoch's mixing changed: per group (W with U, Wc with Uc) a packed bit mask of the elements
    (keyed by the group's first name) and their mixed values, in order; ``Wt`` and ``Ut`` whole."""

    masks: dict[str, np.ndarray]
    values: dict[str, np.ndarray]
    token: str = ""  # names it among the run's deltas ("": never matched, see `_start_of`)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.masks.values()) + sum(a.nbytes for a in self.values.values())

    def apply(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Write the delta into ``arrays`` (in place); returns the elements it wrote, per group."""
        written = {}
        for names in (STATE_ROWS, TRANS_ROWS):
            where = np.unpackbits(self.masks[names[0]], count=arrays[names[0]].size).view(bool)
            for name in names:
                arrays[name].reshape(-1)[where] = self.values[name]
            written[names[0]] = where
        for name in WHOLE:
            np.copyto(arrays[name], self.values[name])
        return written


@dataclass
class ShardChanges:
    """A shard's epoch as it travels back: its report, and for each group of row-compressed arrays (W
    with U, Wc with Uc) a bit mask of the elements it changed (``np.packbits`` over the flat arrays,
    keyed by the group's first name) and those elements' values, in order (``W``, ``U``, ``Wc``,
    ``Uc``); ``Wt`` and ``Ut`` whole."""

    result: ShardResult
    masks: dict[str, np.ndarray]
    values: dict[str, np.ndarray]

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.masks.values()) + sum(a.nbytes for a in self.values.values())

    def changed(self, name: str) -> int:
        """Elements of group ``name`` (``"W"`` or ``"Wc"``) sent back."""
        return len(self.values[name])


@dataclass
class EpochTraffic:
    """Bytes of one epoch: ``sent_per_worker`` (what a worker receives to start it: a new base — the
    dense weights, from the worker that made it, or nothing for the zeros of a fresh run — or else the
    last epoch's delta), ``received`` (what each shard's task returned), ``dense_reply`` (the dense
    weights: what a shard would return, or a worker receive, if whole weights travelled) and ``delta``
    (the mixing's delta: all the driver sends after the epoch); the epoch's wall time, in all
    (``seconds``) and by phase (``phases``: tasks — the shards' epochs with their transfers and waits
    —, gather, mix); and how many of the ``weights`` state weights each shard sent back
    (``changed``)."""

    epoch: int
    workers: int
    sent_per_worker: int
    received: list[int] = field(default_factory=list)
    dense_reply: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    changed: list[int] = field(default_factory=list)  # state weights each shard sent back
    weights: int = 0  # of state weights in all
    delta: int = 0  # bytes of the mixing's delta: all that leaves the driver after the epoch


def hold(value: Any) -> Any:
    """A task whose result is its argument: data that lives on a worker and that the scheduler can
    recompute (from the argument it keeps) when the worker holding it is lost."""
    return value


def _counts(name: str, shape: tuple[int, ...], ptr: np.ndarray) -> np.ndarray:
    """Elements per row of the flat ``name``: the state pairs' row lengths for W and U, (L + 1) x L for
    Wc and Uc."""
    if name in STATE_ROWS:
        return np.diff(ptr)
    return np.full(shape[0], int(np.prod(shape[1:], dtype=np.int64)), dtype=np.int64)


def _row_mask(n_rows: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n_rows, dtype=bool)
    mask[rows] = True
    return mask


def _bits_differ(a: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    """Where the flat ``a`` and ``b`` (None: all +0.0) differ bit for bit (so -0.0 is not 0.0, and NaN
    is itself)."""
    view = {4: np.uint32, 8: np.uint64}[a.dtype.itemsize]
    return a.reshape(-1).view(view) != (0 if b is None else b.reshape(-1).view(view))


def _buffers(store: dict[int, Any], spec: dict[str, tuple[tuple[int, ...], np.dtype]]) -> dict[str, np.ndarray]:
    """This worker thread's arrays of ``spec`` in ``store``, kept from one epoch to the next: writing
    into memory already mapped costs a tenth of a fresh copy (hundreds of MB of page faults per epoch)."""
    thread = threading.get_ident()
    held = store.get(thread)
    arrays = held.arrays if isinstance(held, _Start) else held
    if arrays is None or arrays.keys() != spec.keys() or \
            any((arrays[n].shape, arrays[n].dtype) != spec[n] for n in spec):
        store.pop(thread, None)  # the old buffers go before the new ones come
        arrays = {name: np.empty(shape, dtype) for name, (shape, dtype) in spec.items()}
    return arrays


def _spec_of(base: MixedWeights | ZeroWeights) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    if isinstance(base, ZeroWeights):
        return {name: (tuple(shape), np.dtype(dtype)) for name, (shape, dtype) in base.spec.items()}
    return {name: (a.shape, a.dtype) for name, a in base.arrays.items()}


@dataclass
class _Start:
    """The weights an epoch started from on this worker thread: the base named ``base`` with the deltas
    named ``applied`` applied, in order."""

    base: str
    applied: tuple[str, ...]
    arrays: dict[str, np.ndarray]


def _start_of(base: MixedWeights | ZeroWeights, deltas: tuple[MixedDelta, ...]) -> dict[str, np.ndarray]:
    """``base`` with ``deltas`` applied, in this worker thread's buffers. The thread keeps the last
    epoch's start: when this one is the same base with more deltas (the run's next epoch on the same
    worker), only the new deltas are applied — one delta per epoch instead of every delta since the
    base and a copy of it. Anything else (another base, a rerun elsewhere, unnamed objects) starts from
    a copy of the base. Both give the same arrays."""
    thread = threading.get_ident()
    names = tuple(d.token for d in deltas)
    held = _STARTS.get(thread)
    spec = _spec_of(base)
    fresh = not (held is not None and base.token and held.base == base.token and all(names)
                 and names[:len(held.applied)] == held.applied
                 and all((held.arrays[n].shape, held.arrays[n].dtype) == spec[n] for n in spec))
    if fresh:
        arrays = _buffers(_STARTS, spec)
        for name, a in arrays.items():
            if isinstance(base, ZeroWeights):
                a.fill(0)
            else:
                np.copyto(a, base.arrays[name])
        todo = deltas
    else:
        assert held is not None
        arrays, todo = held.arrays, deltas[len(held.applied):]
    _STARTS.pop(thread, None)  # not a valid start while the deltas are half applied
    for delta in todo:
        delta.apply(arrays)
    _STARTS[thread] = _Start(base.token, names, arrays)
    return arrays


def _working_copy(start: dict[str, np.ndarray] | MixedWeights | ZeroWeights) -> dict[str, np.ndarray]:
    """``start`` (arrays, or a base) copied into this worker thread's epoch buffers (which the epoch
    trains in place)."""
    spec = _spec_of(start) if not isinstance(start, dict) else {n: (a.shape, a.dtype) for n, a in start.items()}
    held = _SCRATCH[threading.get_ident()] = _buffers(_SCRATCH, spec)
    source = start.arrays if isinstance(start, MixedWeights) else start
    for name, a in held.items():
        if isinstance(source, ZeroWeights):
            a.fill(0)
        else:
            np.copyto(a, source[name])
    return held


Moved = Callable[[tuple[str, ...]], np.ndarray]


def _kept_start(weights: MixedWeights | ZeroWeights, deltas: tuple[MixedDelta, ...]) \
        -> tuple[dict[str, np.ndarray], Moved]:
    """The epoch's buffers from the thread's kept start (`_start_of`), and how to find what the epoch
    changed in a group: the bits that differ from that start."""
    start = _start_of(weights, deltas)
    arrays = _working_copy(start)

    def moved(names: tuple[str, ...]) -> np.ndarray:
        out = np.zeros(arrays[names[0]].size, dtype=bool)
        for name in names:
            out |= _bits_differ(arrays[name], start[name])
        return out
    return arrays, moved


def _lean_start(weights: MixedWeights | ZeroWeights, deltas: tuple[MixedDelta, ...]) \
        -> tuple[dict[str, np.ndarray], Moved]:
    """The epoch's buffers from the base with every delta applied (no second dense copy), and how to
    find what the epoch changed: the bits that differ from the base, and where a delta wrote, from the
    value it wrote (kept for those elements only)."""
    arrays = _working_copy(weights)
    written: dict[str, np.ndarray] = {}
    for delta in deltas:
        for group, where in delta.apply(arrays).items():
            written[group] = where | written[group] if group in written else where
    start = {name: arrays[name].reshape(-1)[written[names[0]]]
             for names in (STATE_ROWS, TRANS_ROWS) if names[0] in written for name in names}

    def moved(names: tuple[str, ...]) -> np.ndarray:
        out = np.zeros(arrays[names[0]].size, dtype=bool)
        for name in names:
            out |= _bits_differ(arrays[name], _base_flat(weights, name))
        if names[0] in written:
            where = written[names[0]]
            again = np.zeros(int(np.count_nonzero(where)), dtype=bool)
            for name in names:
                again |= _bits_differ(arrays[name].reshape(-1)[where], start[name])
            out[where] = again
        return out
    return arrays, moved


def scratch_bytes() -> int:
    """The bytes of this worker's epoch buffers and kept starts (0 once training has ended):
    ``client.run(scratch_bytes)``."""
    return sum(a.nbytes for held in list(_SCRATCH.values()) for a in held.values()) + \
        sum(a.nbytes for start in list(_STARTS.values()) for a in start.arrays.values())


def release_scratch() -> None:
    """Drop this worker's epoch buffers, every thread's (run on every worker when training ends:
    ``client.run``; a task still running keeps its own until it returns)."""
    _SCRATCH.clear()
    _STARTS.clear()


def epoch_task(shard: Shard, pairs: tuple[np.ndarray, np.ndarray, np.ndarray], weights: MixedWeights | ZeroWeights,
               c: int, epoch: int, changes: str = "elements", deltas: tuple[MixedDelta, ...] = (),
               keep_start: bool = True) -> ShardChanges:
    """One shard's epoch on a worker, from a copy of the base ``weights`` with ``deltas`` applied
    (the task is pure: a rerun elsewhere sees the same inputs), returning what it changed
    (`ShardChanges`: new arrays, none of them a view of the worker's buffers).

    ``changes`` says how the changed elements are found: ``"elements"`` compares the trained weights
    and sums with those it started from (after the plain compiled epoch; an update touches the pairs of
    the gold and the predicted labels only, so this sends the fewest values), ``"rows"`` takes every
    pair of the attributes ``shard_epoch(track=True)`` names (`~structperc.train.mixing.mix_rows`'
    unit; its sentence-at-a-time epoch is slower). Both give the same mixed weights, bit for bit: an
    element left out holds, in this shard, the value it started from. ``keep_start``: start from the
    thread's kept start (`_kept_start`) or from the base (`_lean_start`, no second dense copy); the
    same bits either way."""
    if changes not in CHANGES:
        raise ValueError(f"changes must be one of {', '.join(CHANGES)} (got {changes!r})")
    arrays, changed = (_kept_start if keep_start else _lean_start)(weights, deltas)
    track = changes == "rows"
    result = shard_epoch(shard, arrays, pairs, c, epoch, track=track)
    masks: dict[str, np.ndarray] = {}
    values: dict[str, np.ndarray] = {}
    for names, rows in ((STATE_ROWS, result.rows), (TRANS_ROWS, result.trans_rows)):
        if track:
            assert rows is not None  # shard_epoch(track=True) names the rows
            counts = _counts(names[0], arrays[names[0]].shape, pairs[0])
            moved = np.repeat(_row_mask(len(counts), rows), counts)
        else:
            moved = changed(names)
        masks[names[0]] = np.packbits(moved)
        for name in names:
            values[name] = arrays[name].reshape(-1)[moved]
    for name in WHOLE:
        values[name] = arrays[name].copy()
    result.rows = result.trans_rows = None
    return ShardChanges(result, masks, values)


def mix_changes(changes: list[ShardChanges], k: list[int], state: PerceptronState) -> MixedDelta:
    """Mix the shards' changed elements into ``state``'s arrays (which hold the weights the epoch started
    from), `~structperc.train.mixing.mix` element by element: an element a shard did not send holds, in
    that shard, the value it started from — the state's — so the result is the dense mixing's, bit for
    bit. `BLOCK_ELEMENTS` weights at a time, so the temporaries stay small whatever the number of shards.
    Returns the `MixedDelta` of the mixing: the elements whose bits it changed, with their new values."""
    masks: dict[str, np.ndarray] = {}
    values: dict[str, list[np.ndarray]] = {name: [] for name in STATE_ROWS + TRANS_ROWS}
    for names in (STATE_ROWS, TRANS_ROWS):
        n = getattr(state, names[0]).size
        taken = [0] * len(changes)  # values of each shard consumed so far (they come in element order)
        packed = []
        for a in range(0, n, BLOCK_ELEMENTS):
            b = min(a + BLOCK_ELEMENTS, n)
            sent = [np.unpackbits(ch.masks[names[0]][a // 8:(b + 7) // 8], count=b - a).view(bool)
                    for ch in changes]
            union = np.logical_or.reduce(sent)
            if not union.any():
                packed.append(np.packbits(union))
                continue
            where = [s[union] for s in sent]  # each shard's among the block's changed elements
            n_sent = [int(np.count_nonzero(s)) for s in where]
            before, after = {}, {}
            for name in names:
                block = getattr(state, name).reshape(-1)[a:b]
                before[name] = block[union]
                parts = []
                for ch, w, m, t in zip(changes, where, n_sent, taken):
                    part = before[name].copy()
                    part[w] = ch.values[name][t:t + m]
                    parts.append(part)
                mix(parts, k, parts[:1])
                block[union] = after[name] = parts[0]
            # the delta: what the mixing moved (shards' changes can cancel out, or be a whole row's)
            moved = np.logical_or.reduce([_bits_differ(after[name], before[name]) for name in names])
            union[union] = moved
            packed.append(np.packbits(union))
            for name in names:
                values[name].append(after[name][moved])
            taken = [t + m for t, m in zip(taken, n_sent)]
        masks[names[0]] = np.concatenate(packed) if packed else np.zeros(0, np.uint8)
    for name in WHOLE:
        mix([ch.values[name] for ch in changes], k, [getattr(state, name)])
    return MixedDelta(masks, {**{name: np.concatenate(v) if v else np.zeros(0, getattr(state, name).dtype)
                                 for name, v in values.items()},
                              **{name: getattr(state, name).copy() for name in WHOLE}})


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
        try:
            self.client.wait_for_workers(1, timeout=max(CONNECT_TIMEOUT, self.timeout or 0))
        except (TimeoutError, OSError):
            raise InputError(f"the Dask cluster at {self.client.scheduler.address} has no worker to train on "
                             f"(waited {max(CONNECT_TIMEOUT, self.timeout or 0):g} s)") from None
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
