"""Compiled key → attribute lookups for large key spaces (built ahead of time into
``structperc._aot_read``; `structperc.features.key_lookup` checks the inputs and calls them).

A template's attributes are the sorted int64 keys of its table (`structperc.features.index`); a
token's attribute is the position of its key there. `numpy.searchsorted` finds it in ~20 probes,
most of them cache misses once the table is past the caches (a character bigram table holds over
a million keys): it was a third of the time of segmenting a large file. An open-addressing hash
table of the positions (int32 slots, linear probing, at most 0.7 full) finds it in one or two
probes: Fibonacci hashing (Knuth, TAOCP vol. 3, §6.4) of the key picks the first slot.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: 2**64 / φ, the multiplier of Fibonacci hashing.
_GOLDEN = 11400714819323198485


@njit(cache=True, nogil=True)
def _slot(key, shift):
    return np.int64((np.uint64(key) * np.uint64(_GOLDEN)) >> np.uint64(shift))


@njit(cache=True, nogil=True)
def build_key_slots(keys, slots, shift):
    """Enter the position of every key of ``keys`` (distinct) into ``slots`` (int32, all -1, of size
    2**(64 - shift), more than ``len(keys)``)."""
    mask = len(slots) - 1
    for i in range(len(keys)):
        s = _slot(keys[i], shift)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = i


@njit(cache=True, nogil=True)
def lookup_keys(keys, slots, shift, query, offset, out):
    """``out[j]``: ``offset`` + the position of ``query[j]`` in ``keys``, or -1 where it is absent
    (negative queries, the keys of missing values, are absent)."""
    mask = len(slots) - 1
    for j in range(len(query)):
        q = query[j]
        found = -1
        if q >= 0:
            s = _slot(q, shift)
            while True:
                i = slots[s]
                if i < 0:
                    break
                if keys[i] == q:
                    found = i + offset
                    break
                s = (s + 1) & mask
        out[j] = found


AOT_EXPORTS: dict[str, str] = {
    "build_key_slots": "void(i8[::1], i4[::1], i8)",
    "lookup_keys": "void(i8[::1], i4[::1], i8, i8[::1], i8, i4[::1])",
}
