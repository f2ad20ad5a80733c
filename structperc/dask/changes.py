"""What travels between the driver and the workers of a Dask training run, and the driver's mixing of
it (`structperc.dask.training` runs the epochs): the bases epochs start from (`MixedWeights`,
`ZeroWeights`), the deltas of each mixing (`MixedDelta`), what a shard's epoch sends back
(`ShardChanges`), the bytes of each epoch (`EpochTraffic`), and `mix_changes`, iterative parameter
mixing (McDonald, Hall and Mann 2010; `structperc.train.mixing.mix`) element by element over the
changed elements only.

Kept apart from the epochs' tasks (`structperc.dask.shard_tasks`, the workers' side) and from the
runner (`structperc.dask.training.DaskShards`, which schedules them): this module is the bookkeeping
both sides agree on, bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from structperc.train.mixing import ShardResult, mix
from structperc.train.perceptron import PerceptronState

#: The row-compressed arrays a shard sends back rows of, by the rows' kind: state attributes (rows of the
#: state pairs' offsets) and transition attributes (slices of (L + 1) x L of Wc, Uc).
STATE_ROWS, TRANS_ROWS = ("W", "U"), ("Wc", "Uc")
#: Mixed whole (small).
WHOLE = ("Wt", "Ut")
#: Weights mixed at a time by the driver (bounds its temporaries whatever the number of shards).
BLOCK_ELEMENTS = 1 << 20  # a multiple of 8: the blocks start at whole bytes of the packed masks
#: How a shard's task finds what its epoch changed (see `epoch_task`); the first is the default.
CHANGES = ("elements", "rows")

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
