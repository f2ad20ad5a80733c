"""The third job of a `structperc.features.index.FeatureIndex`: keys to attribute ids.

A key becomes an id through its template's table: small key spaces (unigrams, POS n-grams) through a
dense array, one gather (`DENSE_KEYS`); larger ones through a hash table of the sorted keys
(`structperc.features.key_lookup`). Both are derived from the tables, built on first use and never
saved; `build_lookup_tables` builds them before workers fork, so they are shared. A model being read has them
built in the thread that reads its word tables (`build_lookup_tables_beside`), while its caller goes on (reading
its input): the first lookup waits for them.
"""
from __future__ import annotations

from concurrent.futures import Future
from typing import Callable

import numpy as np

from structperc.compiled.threads import map_threads
from structperc.features.attribute_keys import AttributeKeys
from structperc.features.key_lookup import KeyLookup

#: Tokens per block when keys become ids (bounds the int64 temporaries of the lookup).
_ID_BLOCK = 1 << 16

#: Tokens per block when the template-major ids become token-major (a block stays in the L2 cache).
_TRANSPOSE_BLOCK = 4096
#: Templates whose ids are gathered before they are written token-major: a cache line holds 16 ids, so each
#: line of the matrix is written once, whole (4 at a time wrote each line 4 times: +0.07 s on EWT test ×5
#: with 78 templates); each costs 4 bytes per token while it waits.
_COLUMN_GROUP = 16

#: Key spaces up to this size are looked up through a dense array (4 bytes per possible key)...
DENSE_KEYS = 1 << 21
#: ... when the table's keys fill enough of it: at most this many possible keys per key in the table (beyond a
#: first `DENSE_SLACK`). A word conjoined with its neighbour's cluster prefix has 1.25 million possible keys and
#: 10,000 seen on EWT: its dense array was 5 MB written and faulted in at every start for what a hash table of a
#: few kB answers (3 of them: 5 ms of tagging EWT test ×5; the same ids).
DENSE_SPREAD = 16
DENSE_SLACK = 1 << 16


class LookupTables(AttributeKeys):
    """Attribute ids of keys, through per-template lookup tables derived from the key tables."""

    def _ids(self, key_of, n: int, runs: list[slice] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """State and transition attribute ids of ``n`` tokens from the keys of each template
        (``key_of(template index)``). ``runs``: slices of whole sentences covering the tokens, each made on a
        thread of its own (`structperc.compiled.threads`) from ``key_of(template index, run)``, written into
        its rows of the same two matrices: the same ids."""
        mats = [np.empty((n, len(self._group(transition))), dtype=np.int32) for transition in (False, True)]
        if not runs:
            self._write_ids(key_of, mats)
        else:
            self.build_lookup_tables()  # once, before the threads share them
            map_threads(lambda k: self._write_ids(lambda ti: key_of(ti, runs[k]), [m[runs[k]] for m in mats]),
                        len(runs), len(runs))
        return mats[0], mats[1]

    def _write_ids(self, key_of, mats: list[np.ndarray]) -> None:
        """Fill the state and transition matrices ``mats`` (token-major) from each template's keys."""
        for transition, mat in zip((False, True), mats):
            group = self._group(transition)
            offsets = self.offsets(transition)
            n = len(mat)
            # a few templates at a time, each contiguous, then written token-major in cache-sized blocks:
            # writing one column of the token-major matrix touches a cache line per token and template
            for g in range(0, len(group), _COLUMN_GROUP):
                cols = range(g, min(g + _COLUMN_GROUP, len(group)))
                rows = np.empty((len(cols), n), dtype=np.int32)
                for r, col in enumerate(cols):
                    ti = group[col]
                    key = key_of(ti)
                    for a in range(0, len(key), _ID_BLOCK):  # blocks: the temporaries stay small
                        rows[r, a:a + _ID_BLOCK] = self._ids_of(ti, key[a:a + _ID_BLOCK], offsets[col])
                    del key
                for a in range(0, n, _TRANSPOSE_BLOCK):
                    mat[a:a + _TRANSPOSE_BLOCK, cols.start:cols.stop] = rows[:, a:a + _TRANSPOSE_BLOCK].T
                del rows

    def _ids_of(self, ti: int, key: np.ndarray, offset: int) -> np.ndarray:
        """Attribute ids (``offset``, the start of template ``ti``'s ids, + index in its table) of ``key``; -1 if
        absent."""
        lut = self._dense_table(ti)
        if lut is not None:  # small key space: one gather instead of a binary search
            return lut[key]  # key -1 reads the table's last entry, which is -1
        return self._key_lookup(ti).ids(key, offset)

    def replace_tables(self, vocabs: list[list[str]], radix: list[list[int]],
                       keys: list[np.ndarray]) -> None:
        """Install re-encoded vocabularies, radixes and key tables (vocabulary pruning)."""
        self.vocabs, self.radix, self.keys = vocabs, radix, keys
        self._lookup = [None] * len(self.atoms)
        self._frequent_sets = {}
        self.drop_lookup_tables()

    def build_lookup_tables(self) -> None:
        """Build every key table `_dense_table` and `_key_lookup` will use now (before forking workers
        or starting threads that all look keys up: built once, shared, instead of once per worker)."""
        self._await_lookup_tables()
        self._build_every_table()

    def _build_every_table(self) -> None:
        for ti in range(len(self.templates)):
            if self._make_dense_table(ti) is None:
                self._make_key_lookup(ti)

    def build_lookup_tables_beside(self, submit: Callable[[Callable[[], None]], Future | None]) -> None:
        """Have `build_lookup_tables` run by ``submit`` (a thread pool's, or None when it has none): the first
        lookup waits for it, and raises what it raised (the dense tables' ``numpy`` work and the hash tables'
        kernel let go of the interpreter, so a caller that reads its input meanwhile gets the tables for nothing:
        9-13 ms of ``structperc tag`` with an English POS model)."""
        building = submit(self._build_every_table)
        if building is not None:
            self.__dict__["_building"] = building

    def __getstate__(self) -> dict:
        """A copy (``copy.deepcopy``, pickle) waits for the tables in the making and copies them as built."""
        self._await_lookup_tables()
        return self.__dict__.copy()

    def _await_lookup_tables(self) -> None:
        """Wait for the tables `build_lookup_tables_beside` has built (once: later calls find nothing to wait
        for)."""
        building = self.__dict__.pop("_building", None)
        if building is not None:
            building.result()

    def drop_lookup_tables(self) -> None:
        """Forget the dense key tables of `_dense_table` and the hash tables of `_key_lookup` (stale
        after the tables change; a few MB)."""
        self._await_lookup_tables()
        self.__dict__.pop("_dense", None)
        self.__dict__.pop("_hashed", None)

    def _key_lookup(self, ti: int) -> KeyLookup:
        """The lookup of template ``ti``'s keys too many for `_dense_table` (a hash table, built on first
        use after the tables are final, never saved)."""
        self._await_lookup_tables()
        return self._make_key_lookup(ti)

    def _make_key_lookup(self, ti: int) -> KeyLookup:
        cache = self.__dict__.setdefault("_hashed", {})
        if ti not in cache:
            cache[ti] = KeyLookup(self.keys[ti])
        return cache[ti]

    def _dense_table(self, ti: int) -> np.ndarray | None:
        """For a template whose keys range over at most `DENSE_KEYS` values, not too sparsely filled
        (`DENSE_SPREAD`): key → attribute id (its group's offset + its index in the template's table, or -1) as a
        dense int32 array with one extra -1 at the end; None for larger or sparser key spaces.

        Unigram templates and POS n-grams qualify; word bigrams keep the sorted-table search. Built
        on first use after the tables are final, never saved.
        """
        self._await_lookup_tables()
        return self._make_dense_table(ti)

    def _make_dense_table(self, ti: int) -> np.ndarray | None:
        cache = self.__dict__.setdefault("_dense", {})
        if ti in cache:
            return cache[ti]
        size = int(np.prod(np.asarray(self.radix[ti], dtype=np.float64))) if self.radix[ti] else 1
        lut = None
        if size <= DENSE_KEYS and size <= DENSE_SPREAD * len(self.keys[ti]) + DENSE_SLACK:
            table = self.keys[ti]
            lut = np.full(size + 1, -1, dtype=np.int32)
            t = self.templates[ti]
            start = int(self.offsets(t.transition)[self._group(t.transition).index(ti)])
            lut[table] = np.arange(start, start + len(table), dtype=np.int32)
        cache[ti] = lut
        return lut
