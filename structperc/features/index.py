"""Feature extraction: templates applied to a corpus give integer attribute ids, once.

The work is column-at-a-time over the whole corpus with numpy, never per token in Python:

1. each column is factorized once (distinct strings → codes);
2. each atom (``lower(word)``, ``suffix3(word)`` …) is computed once per *distinct* column value and
   mapped to an id in that atom's vocabulary (``__BOS__`` = 0, ``__EOS__`` = 1);
3. a template shifts its atoms' codes by their offsets and combines them into one int64 key
   (mixed radix), so a conjunction is arithmetic, not string concatenation;
4. keys become attribute ids through a sorted key table per template (``np.unique`` while fitting,
   ``np.searchsorted`` after): unseen keys get -1 and are skipped by the scorer.

The result per token is one id per template: a dense (n_tokens, n_templates) int32 matrix.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.key_lookup import KeyLookup
from structperc.features.keys import digits, recode, shift
from structperc.features.templates import Atom, Part, Template, value_function
from structperc.io.corpus import Corpus

_SPECIALS = ["__BOS__", "__EOS__"]
_MAX_KEY = 2 ** 62
RARE_MAX = 1
#: Tokens per block when keys become ids (bounds the int64 temporaries of the lookup).
_ID_BLOCK = 1 << 16

#: Key spaces up to this size are looked up through a dense array (4 bytes per possible key).
DENSE_KEYS = 1 << 21


@dataclass
class Features:
    """Attribute ids of a corpus.

    Attributes
    ----------
    state : array of int32, shape (n_tokens, n_state_templates)
        Row t holds the state attribute ids of token t (-1: unknown or pruned).
    trans : array of int32, shape (n_tokens, n_transition_templates)
        Ids into the observation-conditioned transition table (-1: none).
    sent_ptr : array of int64, shape (n_sentences + 1,)
    values : array of float32, shape (n_tokens, n_state_templates), or None
        The value of each state attribute (python-crfsuite's ``{"k": 2.5}``): a state score is the
        value times the weight, an update adds the value. None: every value is 1 (templates).
    """

    state: np.ndarray
    trans: np.ndarray
    sent_ptr: np.ndarray
    values: np.ndarray | None = None


def checked_values(values: np.ndarray | None, ids: np.ndarray) -> np.ndarray:
    """Attribute values as the compiled kernels read them: C-contiguous float32 of the attribute ids'
    shape, finite (one NaN or infinity would spread through every weight it touches), else
    `InputError` (None too: it has the wrong shape). The one check of training and decoding."""
    v = np.asarray(values)
    if v.shape != ids.shape:
        raise InputError(f"attribute values of shape {v.shape} do not match the attribute ids "
                         f"{ids.shape} (one value per state attribute id)")
    if v.dtype.kind not in "fiub":
        raise InputError(f"attribute values must be numbers, not {v.dtype}")
    with np.errstate(over="ignore"):  # beyond float32: infinity, refused below
        v = np.ascontiguousarray(v, dtype=np.float32)
    if not np.isfinite(v).all():
        raise InputError("attribute values must be finite numbers (a NaN or an infinity, or a value "
                         "beyond float32's range)")
    return v


class FeatureIndex:
    """Maps templates over a corpus to attribute ids; grows while fitting, frozen afterwards.

    Parameters
    ----------
    templates : list of Template
    min_count : int
        Attributes seen fewer times in training are dropped (HanLP/CRFsuite-style pruning).

    Examples
    --------
    >>> from structperc.features.templates import parse_templates
    >>> c = Corpus.from_sentences([["a", "b", "a"]])
    >>> fi = FeatureIndex(parse_templates(["w[0]", "w[-1]|w[0]"]))
    >>> fi.fit_transform(c).state.tolist()
    [[0, 2], [1, 3], [0, 4]]
    """

    def __init__(self, templates: list[Template], min_count: int = 1):
        self.templates = list(templates)
        self.min_count = int(min_count)
        self.atoms: list[Atom] = []
        for t in self.templates:
            for p in t.parts:
                if p.other is None and p.atom not in self.atoms:
                    self.atoms.append(p.atom)
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

    # ------------------------------------------------------------- extraction
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

    def _part_codes(self, part: Part, atom_codes: dict[Atom, np.ndarray], raw: Callable[[str], np.ndarray],
                    pos: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, int]:
        """Codes of one part per token (-1 unknown) and their radix."""
        n = len(pos)
        if part.other is not None:
            codes = raw(part.atom.column)
            a = shift(codes, pos, length, part.offset, n)
            b = shift(codes, pos, length, part.other, n)
            outside = (a < 0) | (b < 0)
            return np.where(outside, 2, (a == b).astype(np.int64)), 3
        codes = atom_codes[part.atom]
        shifted = shift(codes, pos, length, part.offset, n, fill_unknown=True)
        return shifted, len(self.vocabs[self.atoms.index(part.atom)])

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
        ``tokens``: only those tokens' keys (whole sentences: a shard of the corpus, `key_tables`)."""
        for col in self.columns:
            corpus.factorize(col)  # raises a clear error for a missing column
        pos, length = (a[tokens] for a in corpus.positions())
        atom_codes = {a: self._atom_codes(corpus, i, grow, tokens) for i, a in enumerate(self.atoms)}

        def raw(column: str) -> np.ndarray:
            return corpus.factorize(column)[1][tokens]

        def key_of(ti: int) -> tuple[np.ndarray, list[int]]:
            t = self.templates[ti]
            if t.is_bias:
                return np.zeros(len(pos), dtype=np.int64), []
            parts = [self._part_codes(p, atom_codes, raw, pos, length) for p in t.parts]
            radix = self._radix(t) if grow else self.radix[ti]
            key = parts[0][0].copy()
            unknown = key < 0
            for (codes, _), r in zip(parts[1:], radix[1:]):
                key = key * r + codes
                unknown |= codes < 0
            key[unknown] = -1
            return key, radix

        return key_of

    def _table(self, key: np.ndarray) -> np.ndarray:
        """Sorted distinct keys seen at least ``min_count`` times."""
        uniq, counts = np.unique(key, return_counts=True)
        return uniq[counts >= self.min_count] if self.min_count > 1 else uniq

    def fit_transform(self, corpus: Corpus) -> Features:
        """Grow the vocabularies and attribute tables on training data, then freeze them.

        The three steps of a sharded fit (`structperc.features.sharding`) on one shard: the columns'
        distinct values, then each template's distinct keys, then the ids.
        """
        if self.fitted:
            raise RuntimeError("FeatureIndex is already fitted")
        self.grow_vocabularies([self.column_values(corpus)])
        self.merge_key_tables([self.key_tables(corpus)])
        feats = self.transform(corpus)
        self.drop_lookup_tables()  # training needs no lookups; tagging rebuilds them on first use
        return feats

    # ------------------------------------------- fitting as a reduce over shards
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
        radix = [3 if p.other is not None else len(self.vocabs[self.atoms.index(p.atom)])
                 for p in t.parts] if not t.is_bias else []
        if float(np.prod(np.asarray(radix, dtype=np.float64))) >= _MAX_KEY:
            raise InputError(f"template {t.name!r} combines too many distinct values to index "
                             "(more than 2^62 combinations); split it into smaller templates")
        return radix

    def key_tables(self, corpus: Corpus, tokens: slice = slice(None)) -> list[tuple[np.ndarray, np.ndarray]]:
        """Step 2 on one shard (after `grow_vocabularies`): each template's distinct keys, sorted,
        and their counts. ``tokens``: the shard is these tokens of ``corpus`` (whole sentences)."""
        key_of = self._key_maker(corpus, grow=False, tokens=tokens)
        return [np.unique(key_of(ti)[0], return_counts=True) for ti in range(len(self.templates))]

    def merge_key_tables(self, shards: Sequence[list[tuple[np.ndarray, np.ndarray]]]) -> None:
        """Reduce of step 2: each template's table is the union of the shards' keys seen at least
        ``min_count`` times in all; the index is then fitted (step 3 is `transform` on each shard)."""
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
            self.keys.append(table[count >= self.min_count] if self.min_count > 1 else table)
        self.drop_lookup_tables()
        self.fitted = True

    def transform(self, corpus: Corpus, tokens: slice = slice(None)) -> Features:
        """Attribute ids of new data; unseen attributes get -1. ``tokens``: only these tokens' (whole
        sentences; the result's ``sent_ptr`` is then the corpus's)."""
        if not self.fitted:
            raise RuntimeError("FeatureIndex is not fitted")
        key_of = self._key_maker(corpus, grow=False, tokens=tokens)
        return self._ids(lambda ti: key_of(ti)[0], len(range(corpus.n_tokens)[tokens]), corpus.sent_ptr)

    def extend(self, corpus: Corpus) -> tuple[Features, np.ndarray, np.ndarray]:
        """Grow a fitted index with new data (continued training).

        Vocabularies grow, so every template's radixes grow too: old keys are decoded with the old
        radixes and re-encoded with the new ones (mixed-radix order is preserved, so the tables stay
        sorted), then merged with the new data's keys.

        Returns
        -------
        (Features, array, array)
            The new data's features and, for the old state and transition attribute ids, their ids
            in the grown index.
        """
        if not self.fitted:
            raise RuntimeError("FeatureIndex is not fitted")
        old_offsets = (self.offsets(False), self.offsets(True))
        old_tables = []
        all_keys, radix = self._keys(corpus, grow=True)
        for ti, _t in enumerate(self.templates):
            table = recode(self.keys[ti], self.radix[ti], radix[ti])
            old_tables.append(table)
            self.keys[ti] = np.union1d(table, self._table(all_keys[ti]))
        self.radix = radix
        remaps = []
        self.drop_lookup_tables()
        for transition, _offsets in zip((False, True), old_offsets):
            new_offsets = self.offsets(transition)
            parts = [np.searchsorted(self.keys[ti], old_tables[ti]) + new_offsets[col]
                     for col, ti in enumerate(self._group(transition))]
            remaps.append(np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64))
        return self._ids(all_keys.__getitem__, corpus.n_tokens, corpus.sent_ptr), remaps[0], remaps[1]

    def _ids(self, key_of, n: int, sent_ptr: np.ndarray) -> Features:
        """Attribute ids of ``n`` tokens from the keys of each template (``key_of(template index)``)."""
        mats = []
        for transition in (False, True):
            group = self._group(transition)
            offsets = self.offsets(transition)
            mat = np.empty((n, len(group)), dtype=np.int32)
            for col, ti in enumerate(group):
                key = key_of(ti)
                for a in range(0, len(key), _ID_BLOCK):  # blocks: the temporaries stay small
                    mat[a:a + _ID_BLOCK, col] = self._ids_of(ti, key[a:a + _ID_BLOCK], offsets[col])
                del key
            mats.append(mat)
        return Features(mats[0], mats[1], sent_ptr)

    def _ids_of(self, ti: int, key: np.ndarray, offset: int) -> np.ndarray:
        """Attribute ids (``offset`` + index in template ``ti``'s table) of ``key``; -1 if absent."""
        lut = self._dense_table(ti)
        if lut is not None:  # small key space: one gather instead of a binary search
            ids = lut[key]   # key -1 reads the table's last entry, which is -1
            return np.where(ids >= 0, ids + offset, -1)
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
        for ti in range(len(self.templates)):
            if self._dense_table(ti) is None:
                self._key_lookup(ti)

    def drop_lookup_tables(self) -> None:
        """Forget the dense key tables of `_dense_table` and the hash tables of `_key_lookup` (stale
        after the tables change; a few MB)."""
        self.__dict__.pop("_dense", None)
        self.__dict__.pop("_hashed", None)

    def _key_lookup(self, ti: int) -> KeyLookup:
        """The lookup of template ``ti``'s keys too many for `_dense_table` (a hash table, built on first
        use after the tables are final, never saved)."""
        cache = self.__dict__.setdefault("_hashed", {})
        if ti not in cache:
            cache[ti] = KeyLookup(self.keys[ti])
        return cache[ti]

    def _dense_table(self, ti: int) -> np.ndarray | None:
        """For a template whose keys range over at most `DENSE_KEYS` values: key → attribute index
        (or -1) as a dense int32 array with one extra -1 at the end; None for larger key spaces.

        Unigram templates and POS n-grams qualify; word bigrams keep the sorted-table search. Built
        on first use after the tables are final, never saved.
        """
        cache = self.__dict__.setdefault("_dense", {})
        if ti in cache:
            return cache[ti]
        size = int(np.prod(np.asarray(self.radix[ti], dtype=np.float64))) if self.radix[ti] else 1
        lut = None
        if size <= DENSE_KEYS:
            table = self.keys[ti]
            lut = np.full(size + 1, -1, dtype=np.int32)
            lut[table] = np.arange(len(table), dtype=np.int32)
        cache[ti] = lut
        return lut

    # ------------------------------------------------------------- inspection
    def attribute_name(self, attribute: int, transition: bool = False) -> str:
        """Readable name of an attribute id, e.g. ``"w[-1]|w[0]=the|cat"``."""
        group = self._group(transition)
        offsets = self.offsets(transition)
        col = int(np.searchsorted(offsets, attribute, side="right") - 1)
        ti = group[col]
        t = self.templates[ti]
        key = int(self.keys[ti][attribute - offsets[col]])
        if t.is_bias:
            return "bias"
        codes = [int(c[0]) for c in digits(np.array([key], dtype=np.int64), self.radix[ti])]
        values = [["no", "yes", "none"][code] if part.other is not None
                  else self.vocabs[self.atoms.index(part.atom)][code]
                  for part, code in zip(t.parts, codes)]
        return f"{t.name}={'|'.join(values)}"

    # ---------------------------------------------------------- serialization
    def state_dict(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {"templates": [t.name for t in self.templates], "min_count": self.min_count,
                "atoms": [[a.column, a.func] for a in self.atoms], "vocabs": self.vocabs,
                "radix": self.radix, "frequent": {str(k): v for k, v in self.frequent.items()}}
        arrays = {f"keys_{i}": k for i, k in enumerate(self.keys)}
        return meta, arrays

    @classmethod
    def from_state(cls, templates: list[Template], meta: dict, arrays: dict[str, np.ndarray]) \
            -> "FeatureIndex":
        fi = cls(templates, meta["min_count"])
        if [[a.column, a.func] for a in fi.atoms] != meta["atoms"]:
            raise ValueError("atoms do not match the templates")
        fi.vocabs = [list(v) for v in meta["vocabs"]]
        if len(fi.vocabs) != len(fi.atoms) or len(meta["radix"]) != len(templates):
            raise ValueError("vocabularies or radixes do not match the templates")
        fi._lookup = [None] * len(fi.atoms)
        fi.radix = [list(map(int, r)) for r in meta["radix"]]
        if not all(isinstance(w, str) for v in fi.vocabs for w in v):
            raise ValueError("vocabulary entries must be strings")
        for t, radix in zip(templates, fi.radix):  # keys are only meaningful with the right radixes
            expected = [3 if p.other is not None else len(fi.vocabs[fi.atoms.index(p.atom)])
                        for p in t.parts]
            if radix != expected:
                raise ValueError(f"radixes of template {t.name!r} do not match its vocabularies")
        fi.frequent = {int(k): list(v) for k, v in meta.get("frequent", {}).items()}
        fi.keys = [np.asarray(arrays[f"keys_{i}"], dtype=np.int64) for i in range(len(templates))]
        for t, radix, keys in zip(templates, fi.radix, fi.keys):
            size = float(np.prod(np.asarray(radix, dtype=np.float64))) if radix else 1.0
            if keys.ndim != 1 or (len(keys) and (keys[0] < 0 or keys[-1] >= size
                                                 or (np.diff(keys) <= 0).any())):
                raise ValueError(f"attribute keys of template {t.name!r} are not sorted keys of "
                                 "its value space")
        fi.fitted = True
        return fi

    def prune(self, keep_state: np.ndarray, keep_trans: np.ndarray) -> None:
        """Keep only the given attributes (boolean masks over ids), renumbering densely."""
        for transition, keep in ((False, keep_state), (True, keep_trans)):
            offsets = self.offsets(transition)
            for col, ti in enumerate(self._group(transition)):
                self.keys[ti] = self.keys[ti][keep[offsets[col]:offsets[col + 1]]]
        self.drop_lookup_tables()
