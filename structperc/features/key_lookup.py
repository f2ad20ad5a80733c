"""Positions of keys in a sorted key table: a compiled hash table where the ahead-of-time build is there
(`structperc.features.lookup_kernels`), `numpy.searchsorted` otherwise (tagging never imports numba).
Both give the same ids."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from structperc.compiled import loader
from structperc.compiled.boundary import freeze

#: Slots per key at least (linear probing stays short below 0.7 full).
_LOAD = 0.7


def _kernel(name: str) -> Callable[..., Any] | None:
    """The ahead-of-time kernel or None (looked up on every call, so tests can switch it off)."""
    return loader.aot(name)


class KeyLookup:
    """Finds keys in ``table`` (sorted, distinct, non-negative int64): ``ids(query, offset)`` is
    ``offset`` + the position of each query key, -1 where it is absent."""

    def __init__(self, table: np.ndarray):
        self.table = np.ascontiguousarray(table, dtype=np.int64)
        self.slots: np.ndarray | None = None
        build = _kernel("build_key_slots")
        if build is not None and len(self.table):
            bits = max(1, int(np.ceil(np.log2(len(self.table) / _LOAD))))
            self.shift = 64 - bits
            self.slots = np.full(1 << bits, -1, dtype=np.int32)
            build(self.table, self.slots, self.shift)
            freeze(self.slots)  # checked once by the lookups' contract, not at every lookup

    @property
    def nbytes(self) -> int:
        return 0 if self.slots is None else self.slots.nbytes

    def ids(self, query: np.ndarray, offset: int) -> np.ndarray:
        lookup = _kernel("lookup_keys") if self.slots is not None else None
        if lookup is not None:
            out = np.empty(len(query), dtype=np.int32)
            lookup(self.table, self.slots, self.shift, np.ascontiguousarray(query, dtype=np.int64), int(offset), out)
            return out
        return searched_ids(self.table, query, offset)


def searched_ids(table: np.ndarray, query: np.ndarray, offset: int) -> np.ndarray:
    """`KeyLookup.ids` by binary search."""
    idx = np.searchsorted(table, query)
    idx_clip = np.minimum(idx, max(len(table) - 1, 0))
    found = (idx < len(table)) & (query >= 0)
    if len(table):
        found &= table[idx_clip] == query
    return np.where(found, idx + offset, -1)
