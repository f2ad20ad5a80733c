"""The workers' side of a Dask training run (`structperc.dask.training`): one shard's epoch as a pure task
(`epoch_task`), from the weights its worker thread keeps from one epoch to the next (`_start_of`), in
buffers the thread reuses (`release_scratch` frees them when training ends); it returns only what the
epoch changed (`structperc.dask.changes.ShardChanges`).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from structperc.dask.changes import (
    CHANGES,
    STATE_ROWS,
    TRANS_ROWS,
    WHOLE,
    MixedDelta,
    MixedWeights,
    ShardChanges,
    ZeroWeights,
    _base_flat,
    _bits_differ,
    _counts,
    _row_mask,
)
from structperc.train.mixing import Shard, shard_epoch

#: Each worker thread's buffers for the weights an epoch trains, by thread id (see `_working_copy`).
_SCRATCH: dict[int, dict[str, np.ndarray]] = {}
#: Each worker thread's last epoch start (see `_start_of`), by thread id.
_STARTS: dict[int, "_Start"] = {}


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
