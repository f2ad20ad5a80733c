"""Key → attribute lookups (`structperc.features.key_lookup`): the compiled hash table gives the ids of
the binary search, for any table and queries (absent keys, negative keys, keys past either end)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.features import key_lookup, lookup_kernels
from structperc.features.key_lookup import KeyLookup, searched_ids

keys_st = st.lists(st.integers(0, 2**62), max_size=200, unique=True)


def test_binary_search_by_hand():
    table = np.array([3, 7, 40], dtype=np.int64)
    assert searched_ids(table, np.array([7, 3, 5, -1, 40, 41]), 10).tolist() == [11, 10, -1, -1, 12, -1]
    assert searched_ids(table[:0], np.array([0, 5]), 0).tolist() == [-1, -1]


@settings(max_examples=200, deadline=None)
@given(keys_st, st.lists(st.integers(-3, 2**62), max_size=100), st.integers(0, 1000), st.booleans())
def test_the_hash_table_finds_what_the_binary_search_finds(keys, extra, offset, dense_keys):
    if dense_keys:  # small consecutive keys: what mixed-radix codes of few values look like
        keys = list(range(len(keys)))
    table = np.array(sorted(keys), dtype=np.int64)
    query = np.array(keys[::2] + extra, dtype=np.int64)
    want = searched_ids(table, query, offset)
    lookup = KeyLookup(table)
    assert lookup.ids(query, offset).tolist() == want.tolist()
    # the JIT twin of the compiled kernels, on the same slots
    if len(table):
        bits = max(1, int(np.ceil(np.log2(len(table) / 0.7))))
        slots = np.full(1 << bits, -1, dtype=np.int32)
        lookup_kernels.build_key_slots(table, slots, 64 - bits)
        out = np.empty(len(query), dtype=np.int32)
        lookup_kernels.lookup_keys(table, slots, 64 - bits, query, offset, out)
        assert out.tolist() == want.tolist()


def test_without_the_compiled_build_the_lookup_searches(monkeypatch):
    monkeypatch.setattr(key_lookup, "_kernel", lambda name: None)
    lookup = KeyLookup(np.array([1, 5, 9], dtype=np.int64))
    assert lookup.slots is None and lookup.nbytes == 0
    assert lookup.ids(np.array([9, 2, 1]), 3).tolist() == [5, -1, 3]


@pytest.mark.skipif(key_lookup._kernel("lookup_keys") is None, reason="the ahead-of-time build is absent")
def test_the_slots_stay_at_most_seventy_percent_full():
    table = np.arange(0, 70_000, 7, dtype=np.int64)
    lookup = KeyLookup(table)
    assert lookup.slots is not None and len(table) / len(lookup.slots) <= 0.7
    assert int((lookup.slots >= 0).sum()) == len(table)
