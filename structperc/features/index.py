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

`FeatureIndex` does four jobs, each in a module of its own and joined by inheritance: the atoms'
vocabularies (steps 1-2, `structperc.features.vocabulary`), the templates' keys and key tables (step 3,
`structperc.features.attribute_keys`), the lookups of keys into ids (step 4,
`structperc.features.lookup_tables`), and, here, fitting, transforming, growing and saving.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from structperc.compiled.boundary import rising
from structperc.compiled.threads import tagging_shards, token_range
from structperc.errors import InputError
from structperc.features.keys import digits, recode
from structperc.features.lookup_tables import DENSE_KEYS, LookupTables
from structperc.features.templates import Template
from structperc.features.vocabulary import RARE_MAX
from structperc.io.corpus import Corpus

__all__ = ["DENSE_KEYS", "RARE_MAX", "FeatureIndex", "Features", "checked_values", "compact_features"]


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


def compact_features(feats: Features) -> tuple[Features, np.ndarray]:
    """``feats`` with its state attribute ids renumbered densely, and the sorted original ids: the rows of the
    weights that scoring this data reads (a dev set's, scored at every epoch: the trainers' ``dev_rows``).

    The ids are marked in a table of every attribute up to the largest and numbered by a running count, what
    ``np.unique(ids, return_inverse=True)`` gives without its sort: the dev set's ids were the training run's
    peak memory (a held-out tenth of SXU with ``--lang zh``: 2.7 M ids, whose sort kept about 90 MB of int64
    copies alive beside the training features)."""
    known = feats.state >= 0
    ids = feats.state[known]
    used = np.zeros(int(ids.max()) + 1 if ids.size else 0, dtype=bool)
    used[ids] = True
    rank = np.cumsum(used, dtype=np.int32) - 1  # an id's rank among the ids used
    state = np.full(feats.state.shape, -1, dtype=np.int32)
    state[known] = rank[ids]
    return Features(state, feats.trans, feats.sent_ptr, feats.values), np.flatnonzero(used).astype(np.int64)


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


class FeatureIndex(LookupTables):
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

    def transform(self, corpus: Corpus, tokens: slice = slice(None)) -> Features:
        """Attribute ids of new data; unseen attributes get -1. ``tokens``: only these tokens' (whole
        sentences; the result's ``sent_ptr`` is then the corpus's). A whole corpus large enough is cut into runs
        of sentences made on threads (`structperc.compiled.threads.tagging_shards`: one unless a caller asks
        for more): the same ids."""
        if not self.fitted:
            raise RuntimeError("FeatureIndex is not fitted")
        key_of = self._key_maker(corpus, grow=False, tokens=tokens)
        bounds = tagging_shards(corpus.sent_ptr) if tokens == slice(None) else None
        runs = None if bounds is None else \
            [token_range(corpus.sent_ptr, bounds, k) for k in range(len(bounds) - 1)]
        state, trans = self._ids(lambda ti, rows=None: key_of(ti, rows)[0], len(range(corpus.n_tokens)[tokens]),
                                 runs)
        return Features(state, trans, corpus.sent_ptr)

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
            self.keys[ti] = np.union1d(table, self._table(all_keys[ti], ti))
        self.radix = radix
        remaps = []
        self.drop_lookup_tables()
        for transition, _offsets in zip((False, True), old_offsets):
            new_offsets = self.offsets(transition)
            parts = [np.searchsorted(self.keys[ti], old_tables[ti]) + new_offsets[col]
                     for col, ti in enumerate(self._group(transition))]
            remaps.append(np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, np.int64))
        state, trans = self._ids(all_keys.__getitem__, corpus.n_tokens)
        return Features(state, trans, corpus.sent_ptr), remaps[0], remaps[1]

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
                  else self.vocabs[self.atom_position(part.atom)][code]
                  for part, code in zip(t.parts, codes)]
        return f"{t.name}={'|'.join(values)}"

    # ---------------------------------------------------------- serialization
    def state_dict(self) -> tuple[dict, dict[str, np.ndarray]]:
        meta = {"templates": [t.name for t in self.templates], "min_count": self.min_count,
                "atoms": [[a.column, a.func] for a in self.atoms], "vocabs": self.vocabs,
                "radix": self.radix, "frequent": {str(k): v for k, v in self.frequent.items()}}
        arrays = dict(zip(self.array_names(len(self.keys)), self.keys))
        return meta, arrays

    @staticmethod
    def array_names(n_templates: int) -> list[str]:
        """The arrays `state_dict` writes and `from_state` reads: each template's attribute keys."""
        return [f"keys_{i}" for i in range(n_templates)]

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
        try:  # str.join refuses anything but strings, at C speed (a model's vocabularies hold ~10^5 values)
            for v in fi.vocabs:
                "".join(v)
        except TypeError:
            raise ValueError("vocabulary entries must be strings") from None
        for t, radix in zip(templates, fi.radix):  # keys are only meaningful with the right radixes
            expected = [3 if p.other is not None else len(fi.vocabs[fi.atom_position(p.atom)])
                        for p in t.parts]
            if radix != expected:
                raise ValueError(f"radixes of template {t.name!r} do not match its vocabularies")
        fi.frequent = {int(k): list(v) for k, v in meta.get("frequent", {}).items()}
        fi.keys = [np.asarray(arrays[name], dtype=np.int64) for name in cls.array_names(len(templates))]
        for t, radix, keys in zip(templates, fi.radix, fi.keys):
            size = float(np.prod(np.asarray(radix, dtype=np.float64))) if radix else 1.0
            if keys.ndim != 1 or (len(keys) and (keys[0] < 0 or keys[-1] >= size
                                                 or not rising(keys, strict=True))):
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
