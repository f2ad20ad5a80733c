"""The first job of a `structperc.features.index.FeatureIndex`: its atoms' vocabularies.

Each atom (``lower(word)``, ``suffix3(word)`` …) is computed once per *distinct* value of its column
and mapped to an id in that atom's vocabulary (``__BOS__`` = 0, ``__EOS__`` = 1); a template's mixed
radix is its parts' vocabulary sizes. Fitting over shards (`structperc.features.sharding`) is a reduce:
`column_values` on each shard, `grow_vocabularies` over them, in shard order.

Kept apart from the key tables (`structperc.features.attribute_keys`), the lookups
(`structperc.features.lookup_tables`) and the transform and serialisation
(`structperc.features.index`) so that each job reads on its own; the four form one class by
inheritance, in that order.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.templates import Atom, Template, value_function
from structperc.io.corpus import Corpus

_SPECIALS = ["__BOS__", "__EOS__"]
_MAX_KEY = 2 ** 62
RARE_MAX = 1


class AttributeVocabularies:
    """The templates, their atoms and the atoms' vocabularies; the sizes of the attribute groups.

    Parameters
    ----------
    templates : list of Template
    min_count : int
        Attributes seen fewer times in training are dropped (HanLP/CRFsuite-style pruning).
    """

    def __init__(self, templates: list[Template], min_count: int = 1):
        self.templates = list(templates)
        self.min_count = int(min_count)
        self.atoms: list[Atom] = []
        for t in self.templates:
            for p in t.parts:
                if p.other is None and p.atom not in self.atoms:
                    self.atoms.append(p.atom)
        self._atom_at = {a: i for i, a in enumerate(self.atoms)}
        self.vocabs: list[list[str]] = [list(_SPECIALS) for _ in self.atoms]
        self._lookup: list[dict[str, int] | None] = [None] * len(self.atoms)
        self._frequent_sets: dict[int, set[str]] = {}
        self.radix: list[list[int]] = []
        self.keys: list[np.ndarray] = []
        self.frequent: dict[int, list[str]] = {}  # atom index → frequent values, for rare()
        self.fitted = False

    # ------------------------------------------------------------------ sizes
    def _group(self, transition: bool) -> list[int]:
        return [i for i, t in enumerate(self.templates) if t.transition == transition]

    @property
    def transition_templates(self) -> list[Template]:
        return [self.templates[i] for i in self._group(True)]

    def offsets(self, transition: bool) -> np.ndarray:
        sizes = [len(self.keys[i]) for i in self._group(transition)]
        return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)]).astype(np.int64)

    @property
    def n_state_attributes(self) -> int:
        return int(self.offsets(False)[-1])

    @property
    def n_transition_attributes(self) -> int:
        return int(self.offsets(True)[-1])

    @property
    def columns(self) -> list[str]:
        """Columns the templates read."""
        return sorted({p.atom.column for t in self.templates for p in t.parts})

    def atom_position(self, atom: Atom) -> int:
        """The index of ``atom`` in `atoms` (its vocabulary's), by a dictionary: ``atoms.index`` compares the
        atoms one by one, 0.3 ms of a one-sentence `predict`."""
        return self._atom_at[atom]

    # ------------------------------------------------------------ vocabularies
    def _atom_codes(self, corpus: Corpus, i: int, grow: bool, tokens: slice = slice(None)) -> np.ndarray:
        atom = self.atoms[i]
        distinct, codes = corpus.factorize(atom.column)
        counts = np.bincount(codes, minlength=len(distinct)) if grow and atom.func == "rare" else None
        ids = self._atom_ids(i, distinct, counts, grow)
        return np.asarray(ids, dtype=np.int64)[codes[tokens]] if ids else np.zeros(0, np.int64)

    def _atom_ids(self, i: int, distinct: list[str], counts: np.ndarray | None, grow: bool) -> list[int]:
        """Vocabulary ids of atom ``i`` on a column's distinct values (in order of first occurrence:
        growing appends new values in that order); ``counts`` per value, for ``rare`` while growing."""
        atom = self.atoms[i]
        if atom.func == "rare":
            derived = self._rare(i, distinct, counts, grow)
        else:
            func = value_function(atom.func) if atom.func else None
            derived = [func(v) for v in distinct] if func else distinct
        vocab = self._vocab_lookup(i)
        if not grow:
            return [vocab.get(d, -1) for d in derived]
        words = self.vocabs[i]
        ids = []
        for d in derived:
            j = vocab.get(d)
            if j is None:
                j = vocab[d] = len(words)
                words.append(d)
            ids.append(j)
        return ids

    def _rare(self, i: int, distinct: list[str], counts: np.ndarray | None, grow: bool) -> list[str]:
        """``rare(col)``: "1" for values seen at most `RARE_MAX` times in training (and unseen ones).

        Training words that are rare stand in for the unknown words of test data, so the weights of
        this feature are learnt where they will be needed.
        """
        if grow:
            assert counts is not None
            self.frequent[i] = sorted(v for v, n in zip(distinct, counts.tolist()) if n > RARE_MAX)
            self._frequent_sets.pop(i, None)
        known = self._frequent_sets.get(i)
        if known is None:  # built once per model, not per call: a short `predict` paid a fifth for it
            known = self._frequent_sets[i] = set(self.frequent.get(i, ()))
        return ["0" if v in known else "1" for v in distinct]

    def _vocab_lookup(self, i: int) -> dict[str, int]:
        lookup = self._lookup[i]
        if lookup is None:
            lookup = self._lookup[i] = {w: j for j, w in enumerate(self.vocabs[i])}
        return lookup

    def value_columns(self) -> list[str]:
        """The columns whose values make the vocabularies (those the atoms read)."""
        return sorted({a.column for a in self.atoms})

    def column_values(self, corpus: Corpus, columns: Sequence[str] | None = None) \
            -> dict[str, tuple[list[str], np.ndarray]]:
        """Step 1 on one shard: each column's distinct values in order of first occurrence, and their
        counts. Every column the templates read must exist (a clear error names the missing one).
        ``columns``: these columns instead (those of them the shard has)."""
        if columns is not None:
            columns = [col for col in columns if col in corpus.columns]
        else:
            for col in self.columns:
                corpus.factorize(col)
        out = {}
        for col in self.value_columns() if columns is None else columns:
            distinct, codes = corpus.factorize(col)
            out[col] = (distinct, np.bincount(codes, minlength=len(distinct)))
        return out

    def grow_vocabularies(self, shards: Sequence[dict[str, tuple[list[str], np.ndarray]]]) -> None:
        """Reduce of step 1: the atoms' vocabularies and the templates' radixes from the shards'
        `column_values`, in shard order. Values are merged in order of first occurrence and their
        counts summed, so the shards of a corpus (consecutive sentences, in order) give the
        vocabularies of the whole corpus exactly."""
        if self.fitted:
            raise RuntimeError("FeatureIndex is already fitted")
        merged = {}
        for col in self.value_columns():
            parts = [shard[col] for shard in shards]
            if len(parts) == 1:
                merged[col] = parts[0]
                continue
            position: dict[str, int] = {}
            for distinct, _ in parts:
                position.update(dict.fromkeys(distinct, 0))  # insertion order: first occurrence
            values = list(position)
            position = {v: j for j, v in enumerate(values)}
            counts = np.zeros(len(values), dtype=np.int64)
            for distinct, c in parts:
                np.add.at(counts, np.fromiter(map(position.__getitem__, distinct), np.int64, len(distinct)), c)
            merged[col] = (values, counts)
        for i, atom in enumerate(self.atoms):
            values, counts = merged[atom.column]
            self._atom_ids(i, values, counts, grow=True)
        self.radix = [self._radix(t) for t in self.templates]

    def _radix(self, t: Template) -> list[int]:
        """A template's mixed radix: the vocabulary size of each part (3 for an equality part)."""
        radix = [3 if p.other is not None else len(self.vocabs[self.atom_position(p.atom)])
                 for p in t.parts] if not t.is_bias else []
        if float(np.prod(np.asarray(radix, dtype=np.float64))) >= _MAX_KEY:
            raise InputError(f"template {t.name!r} combines too many distinct values to index "
                             "(more than 2^62 combinations); split it into smaller templates")
        return radix
