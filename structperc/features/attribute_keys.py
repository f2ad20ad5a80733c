"""The second job of a `structperc.features.index.FeatureIndex`: templates' keys and key tables.

A template shifts its atoms' codes by their offsets and combines them into one int64 key (mixed
radix), so a conjunction is arithmetic, not string concatenation; the distinct keys seen while fitting
(at least ``min_count`` times) make the template's sorted table, whose positions are attribute ids.
Over shards: `key_tables` on each, `merge_key_tables` over them.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from structperc.features.keys import Shifts
from structperc.features.templates import Atom, Part
from structperc.features.vocabulary import AttributeVocabularies
from structperc.io.corpus import Corpus


class AttributeKeys(AttributeVocabularies):
    """Keys of templates over a corpus, and the sorted key tables of the fitted attributes."""

    def _part_codes(self, part: Part, atom_codes: dict[Atom, np.ndarray], raw: Callable[[str], np.ndarray],
                    shift: Shifts) -> tuple[np.ndarray, int]:
        """Codes of one part per token (-1 unknown) and their radix."""
        if part.other is not None:
            codes = raw(part.atom.column)
            a = shift(codes, part.offset)
            b = shift(codes, part.other)
            outside = (a < 0) | (b < 0)
            return np.where(outside, 2, (a == b).astype(np.int64)), 3
        codes = atom_codes[part.atom]
        shifted = shift(codes, part.offset, fill_unknown=True)
        return shifted, len(self.vocabs[self.atom_position(part.atom)])

    def _keys(self, corpus: Corpus, grow: bool) -> tuple[list[np.ndarray], list[list[int]]]:
        """One int64 key per token and template (-1 where a part is unknown), and the radixes used:
        the current vocabulary sizes when growing, the frozen ones otherwise."""
        key_of = self._key_maker(corpus, grow)
        out, radixes = [], []
        for ti in range(len(self.templates)):
            key, radix = key_of(ti)
            out.append(key)
            radixes.append(radix)
        return out, radixes

    def _key_maker(self, corpus: Corpus, grow: bool, tokens: slice = slice(None)):
        """A function of a template index giving that template's keys and radixes (see `_keys`);
        computing one template at a time lets `transform` hold one key array, not all of them.
        ``tokens``: only those tokens' keys (whole sentences: a shard of the corpus, `key_tables`). The
        function's ``rows`` (a slice of those tokens, whole sentences) gives that run's keys alone, from the
        atoms' codes made once here: threads that each make the ids of one run share that work
        (`structperc.features.lookup_tables.LookupTables._ids`)."""
        for col in self.columns:
            corpus.factorize(col)  # raises a clear error for a missing column
        pos, length = (a[tokens] for a in corpus.positions())
        shift = Shifts(pos, length)
        atom_codes = {a: self._atom_codes(corpus, i, grow, tokens) for i, a in enumerate(self.atoms)}

        def raw(column: str) -> np.ndarray:
            return corpus.factorize(column)[1][tokens]

        runs: dict[tuple[int, int], tuple[int, Shifts, dict[Atom, np.ndarray], Callable[[str], np.ndarray]]] = {}

        def run(rows: slice | None) -> tuple[int, Shifts, dict[Atom, np.ndarray], Callable[[str], np.ndarray]]:
            if rows is None:
                return len(pos), shift, atom_codes, raw
            hit = runs.get((rows.start, rows.stop))
            if hit is None:  # views of the codes, and the run's own sentence bounds for the shifts
                hit = runs[(rows.start, rows.stop)] = (
                    len(pos[rows]), Shifts(pos[rows], length[rows]), {a: c[rows] for a, c in atom_codes.items()},
                    lambda column: raw(column)[rows])
            return hit

        def key_of(ti: int, rows: slice | None = None) -> tuple[np.ndarray, list[int]]:
            t = self.templates[ti]
            n, shifts, codes_of, raw_of = run(rows)
            if t.is_bias:
                return np.zeros(n, dtype=np.int64), []
            parts = [self._part_codes(p, codes_of, raw_of, shifts) for p in t.parts]
            radix = self._radix(t) if grow else self.radix[ti]
            if len(parts) == 1:  # one part's codes are its keys (-1 unknown already): a read-only view, no copy
                key = parts[0][0].view()
                key.flags.writeable = False
                return key, radix
            key = parts[0][0].copy()
            unknown = key < 0
            for (codes, _), r in zip(parts[1:], radix[1:]):
                key = key * r + codes
                unknown |= codes < 0
            key[unknown] = -1
            return key, radix

        return key_of

    def _least(self, ti: int) -> int:
        """How often an attribute of template ``ti`` must be seen to be kept: the run's ``min_count`` or the
        template's own ``@N``, the larger."""
        return max(self.min_count, self.templates[ti].min_count)

    def _table(self, key: np.ndarray, ti: int) -> np.ndarray:
        """Sorted distinct keys of template ``ti`` seen at least `_least` times."""
        uniq, counts = np.unique(key, return_counts=True)
        least = self._least(ti)
        return uniq[counts >= least] if least > 1 else uniq

    def key_tables(self, corpus: Corpus, tokens: slice = slice(None)) -> list[tuple[np.ndarray, np.ndarray]]:
        """Step 2 on one shard (after `grow_vocabularies`): each template's distinct keys, sorted,
        and their counts. ``tokens``: the shard is these tokens of ``corpus`` (whole sentences)."""
        key_of = self._key_maker(corpus, grow=False, tokens=tokens)
        return [np.unique(key_of(ti)[0], return_counts=True) for ti in range(len(self.templates))]

    def merge_key_tables(self, shards: Sequence[list[tuple[np.ndarray, np.ndarray]]]) -> None:
        """Reduce of step 2: each template's table is the union of the shards' keys seen at least
        `_least` times in all; the index is then fitted (step 3 is `transform` on each shard)."""
        self.keys = []
        for ti in range(len(self.templates)):
            keys = [shard[ti][0] for shard in shards]
            counts = [shard[ti][1] for shard in shards]
            if len(shards) == 1:
                table, count = keys[0], counts[0]
            else:
                every = np.concatenate(keys)
                order = np.argsort(every, kind="stable")  # a merge of sorted runs
                every = every[order]
                starts = np.flatnonzero(np.r_[True, every[1:] != every[:-1]]) if len(every) else \
                    np.zeros(0, np.int64)
                table = every[starts]
                count = np.add.reduceat(np.concatenate(counts)[order], starts) if len(every) else \
                    np.zeros(0, np.int64)
            least = self._least(ti)
            self.keys.append(table[count >= least] if least > 1 else table)
        self.drop_lookup_tables()
        self.fitted = True

    def drop_lookup_tables(self) -> None:
        """Forget what was derived from the key tables once they change: nothing at this level;
        `structperc.features.lookup_tables.LookupTables` drops its lookups."""
