"""python-crfsuite items → attribute ids and values: the input of `structperc.sklearn`.

sklearn-crfsuite and python-crfsuite users describe a token by an *item*, a dict (or a list of strings)
of attributes. The rules are python-crfsuite's ``ItemSequence`` (``to_item`` in
``pycrfsuite/_pycrfsuite.pyx``), followed exactly:

* ``{"k": "v"}`` (str or UTF-8 bytes value) is the attribute ``k:v`` with value 1.0;
* ``{"k": 2.5}`` is the attribute ``k`` with value 2.5; bools are numbers (True 1.0, False 0.0);
* ``{"k": {...}}``, ``{"k": [...]}`` or ``{"k": set(...)}`` flattens the inner item and prefixes
  each of its attributes with ``k:``;
* an item that is not a dict (a list, a tuple, a set …) is a collection of attribute names, each
  with value 1.0;
* keys and strings may be ``bytes``: they are UTF-8 (python-crfsuite passes bytes through and
  decodes names as UTF-8 when it reports them).

`item_attributes` is the rule book, written for clarity; `AttributeIndex` does the same on whole
corpora, written for speed (feature dicts → ids is Python at the edge, the one per-attribute cost of
the estimator): the common item, a flat dict whose keys are strings and values strings, bools or
numbers, is read in one loop that builds one name string per attribute, and the names become ids
through a dict whose misses alone run Python (``dict.__missing__``), so each distinct attribute string
is interned once, on first sight. Anything else falls back to `item_attributes`.

Two deliberate departures, both invisible to scores: an attribute occurrence whose value is 0 is
left out (it adds nothing to a score or an update: state score = value × weight), and non-finite
values (NaN, ±inf) are refused with an `InputError` (CRFsuite would silently train on them).

A token's attribute ids fill one row of the dense ``(n_tokens, K)`` matrix of `Features` (K: the most
attributes of any token; shorter rows padded with -1, which the scorers skip), the values the same
cells of ``Features.values`` (None when every value is 1: the templates' fast path; padding and
unknown attributes hold 1, and are skipped by their id -1).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features

#: Sequences flattened per block: bounds the list of attribute strings held at once.
_BLOCK_SEQUENCES = 2048
#: (key, value) pairs the index keeps cached between calls (then it starts afresh): bounds the memory
#: of a long-running tagger that sees ever new words.
CACHE_MAX = 1 << 21


class _Slow(Exception):
    """An item the fast loop does not read (nested values, bytes, numpy scalars, …)."""


class _Interning(dict):
    """name → id. A missing name gets the next id while ``grow`` is set, else -1 (unknown) and is not
    stored; only misses run Python."""

    grow = False

    def __missing__(self, name: str) -> int:
        if not self.grow:
            return -1
        i = self[name] = len(self)
        return i


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"attribute name {key!r} is not UTF-8") from None
    raise InputError(f"attribute names must be str or bytes, not {type(key).__name__} ({key!r})")


def _number(value: Any, name: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"attribute {name!r}: value {value!r} of type {type(value).__name__} is "
                         "neither a string, a number, a bool, a dict nor a list") from None
    if not math.isfinite(v):
        raise InputError(f"attribute {name!r} has the non-finite value {v!r}")
    return v


def item_attributes(item: Any) -> list[tuple[str, float]]:
    """(name, value) of every attribute of one item by python-crfsuite's rules (see the module
    docstring), in its order; zero values included (as ``pycrfsuite.ItemSequence`` keeps them).

    Examples
    --------
    >>> item_attributes({"w": "Casa", "len": 4, "up": False, "ctx": {"prev": ["a", "b"]}})
    [('w:Casa', 1.0), ('len', 4.0), ('up', 0.0), ('ctx:prev:a', 1.0), ('ctx:prev:b', 1.0)]
    >>> item_attributes(["bias", b"w:caf\\xc3\\xa9"])
    [('bias', 1.0), ('w:café', 1.0)]
    """
    out: list[tuple[str, float]] = []
    if isinstance(item, dict):
        for key, value in item.items():
            k = _key(key)
            if isinstance(value, (dict, list, set)):
                out.extend((f"{k}:{name}", v) for name, v in item_attributes(value))
            elif isinstance(value, str):
                out.append((f"{k}:{value}", 1.0))
            elif isinstance(value, bytes):
                out.append((f"{k}:{_key(value)}", 1.0))
            else:
                out.append((k, _number(value, k)))
        return out
    try:
        names = iter(item)
    except TypeError:
        raise InputError(f"an item must be a dict or a list of strings, not {type(item).__name__}") \
            from None
    return [(_key(name), 1.0) for name in names]


def _sequences(X: Any, what: str) -> Iterable[Any]:
    if isinstance(X, (str, bytes, dict)) or not hasattr(X, "__iter__"):
        raise InputError(f"{what} must be a list of sequences (lists of items), not "
                         f"{type(X).__name__}")
    return X


def _items(seq: Any, what: str) -> Sequence[Any]:
    """The items of one sequence (a ``pycrfsuite.ItemSequence`` gives its prepared items)."""
    if isinstance(seq, (list, tuple)):
        return seq
    # pycrfsuite.ItemSequence: its prepared items, [{name: value}], read by the same rules (a name an
    # item had twice is in that dict once: python-crfsuite gives no other view of them)
    items = getattr(seq, "items", None)
    if callable(items) and not isinstance(seq, dict):
        return items()
    if isinstance(seq, (str, bytes, dict)) or not hasattr(seq, "__iter__"):
        raise InputError(f"each sequence of {what} must be a list of items (dicts or lists of "
                         f"strings), not {type(seq).__name__}")
    return list(seq)


def encode(X: Any, lookup: Callable[[str], int], cache: dict[Any, dict[str, int]] | None = None,
           what: str = "X") -> Iterator[tuple[list[int], list[int], list[int], list[tuple[int, float]]]]:
    """Blocks of (attribute ids, attributes per token, tokens per sequence, (position in the
    block's ids, value) of every value other than 1) of sequences ``X``, zero values left out.

    ``lookup`` maps a name to its id (interning it while fitting, -1 for unknown names after). The
    common case, ``{"k": "v"}``, is looked up in the two-level cache ``cache`` (``k → v → id``,
    filled here): no name string is built but for the first occurrence of each (k, v).
    """
    ids: list[int] = []
    counts: list[int] = []
    lengths: list[int] = []
    special: list[tuple[int, float]] = []
    if cache is None:
        cache = {}
    append = ids.append
    for seq in _sequences(X, what):
        items = _items(seq, what)
        for item in items:
            start, n_special = len(ids), len(special)
            try:
                if item.__class__ is not dict:
                    raise _Slow
                for k, v in item.items():
                    c = v.__class__
                    if c is str:
                        by_value = cache.get(k)
                        if by_value is None:
                            by_value = cache[k] = {}
                        i = by_value.get(v)
                        if i is None:  # a bytes key raises TypeError here: the slow path
                            i = by_value[v] = lookup(k + ":" + v)
                        append(i)
                    elif c is bool or c is int or c is float:
                        if k.__class__ is not str:
                            raise _Slow
                        if v == 1:
                            append(lookup(k))
                        elif v:  # 0 adds nothing; NaN is truthy and refused by the slow path
                            if not math.isfinite(v):
                                raise _Slow
                            special.append((len(ids), float(v)))
                            append(lookup(k))
                    else:
                        raise _Slow
            except (_Slow, TypeError):
                del ids[start:], special[n_special:]
                for name, v in item_attributes(item):
                    if v == 1.0:
                        append(lookup(name))
                    elif v:
                        special.append((len(ids), v))
                        append(lookup(name))
            counts.append(len(ids) - start)
        lengths.append(len(items))
        if len(lengths) >= _BLOCK_SEQUENCES:
            yield ids, counts, lengths, special
            ids, counts, lengths, special = [], [], [], []
            append = ids.append
    yield ids, counts, lengths, special


class AttributeIndex:
    """Attribute names ↔ ids: fitted on training items, frozen afterwards (unknown names dropped).

    The `structperc.sklearn` counterpart of `structperc.features.index.FeatureIndex`: the user's
    feature functions did the extraction, so the index only interns names. It offers what the
    schema, ``structperc info`` and the trainer read of a feature index: attribute counts (no
    observation-conditioned transitions: ``n_transition_attributes`` is 0), names, pruning, state.

    Examples
    --------
    >>> ai = AttributeIndex()
    >>> f = ai.fit_transform([[{"w": "a", "n": 2}, ["bias"]]])
    >>> f.state.tolist(), f.values.tolist(), ai.names
    ([[0, 1], [2, -1]], [[1.0, 2.0], [1.0, 1.0]], ['w:a', 'n', 'bias'])
    >>> ai.transform([[{"w": "b", "n": True}]]).state.tolist()
    [[-1, 1]]
    """

    #: What `structperc.model.schema` writes as ``features.kind`` for this index.
    KIND = "attributes"
    #: Feature-index surface read by ``structperc info`` (no templates, no atoms).
    templates: list = []
    atoms: list = []
    vocabs: list = []
    columns: list = []

    def __init__(self, names: Sequence[str] = ()):
        self.names: list[str] = list(names)
        self._ids = _Interning((n, i) for i, n in enumerate(self.names))
        if len(self._ids) != len(self.names):
            raise ValueError("attribute names must be distinct")
        #: ``{"k": "v"}`` → id, kept across calls: tagging one sentence at a time (``predict_single``)
        #: would otherwise rebuild every ``k:v`` string per call (training fills it for tagging)
        self._cache: dict[Any, dict[str, int]] = {}
        self.fitted = bool(self.names)

    @property
    def n_state_attributes(self) -> int:
        return len(self.names)

    n_transition_attributes = 0

    def fit_transform(self, X: Any) -> Features:
        """Intern the attributes of training sequences ``X``; their ids and values."""
        if self.fitted:
            raise RuntimeError("AttributeIndex is already fitted")
        feats = self._features(X, grow=True)
        self.fitted = True
        return feats

    def transform(self, X: Any) -> Features:
        """Ids and values of new sequences; attributes not seen in training get -1."""
        if not self.fitted:
            raise RuntimeError("AttributeIndex is not fitted")
        return self._features(X, grow=False)

    def _features(self, X: Any, grow: bool) -> Features:
        ids_parts, counts_parts, lengths_parts = [], [], []
        special_pos: list[int] = []
        special_val: list[float] = []
        ids = self._ids
        ids.grow = grow
        offset = 0
        if sum(map(len, self._cache.values())) > CACHE_MAX:
            self._cache = {}
        try:
            for block, counts, lengths, special in encode(X, ids.__getitem__, self._cache):
                ids_parts.append(np.array(block, dtype=np.int64))
                counts_parts.append(np.array(counts, dtype=np.int64))
                lengths_parts.append(np.array(lengths, dtype=np.int64))
                special_pos += [offset + p for p, _ in special]
                special_val += [v for _, v in special]
                offset += len(block)
        except BaseException:
            if grow:  # bad input half-way: the index stays as it was
                self._ids = _Interning((n, i) for i, n in enumerate(self.names))
                self._cache = {}
            raise
        finally:
            ids.grow = False
        if grow:
            self.names = list(ids)  # insertion order is id order
        flat = np.concatenate(ids_parts)
        per_token = np.concatenate(counts_parts)
        sent_ptr = np.zeros(sum(map(len, lengths_parts)) + 1, dtype=np.int64)
        np.cumsum(np.concatenate(lengths_parts), out=sent_ptr[1:])
        n, K = len(per_token), int(per_token.max()) if len(per_token) else 0
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(per_token, out=starts[1:])
        row = np.repeat(np.arange(n, dtype=np.int64), per_token)
        col = np.arange(len(flat), dtype=np.int64) - starts[row]
        state = np.full((n, K), -1, dtype=np.int32)
        state[row, col] = flat
        values = None
        if special_pos:
            values = np.ones((n, K), dtype=np.float32)
            pos = np.asarray(special_pos, dtype=np.int64)
            values[row[pos], col[pos]] = np.asarray(special_val, dtype=np.float32)
            if (values[state >= 0] == 1).all():  # the values that differ are on unknown attributes
                values = None
        return Features(state, np.zeros((n, 0), dtype=np.int32), sent_ptr, values)

    def attribute_name(self, attribute: int, transition: bool = False) -> str:
        if transition:
            raise IndexError("an attribute index has no transition attributes")
        return self.names[attribute]

    def prune(self, keep_state: np.ndarray, keep_trans: np.ndarray | None = None) -> None:
        """Keep the attributes where the boolean mask ``keep_state`` is True, renumbered in order."""
        keep = np.asarray(keep_state, dtype=bool)
        if keep.shape != (len(self.names),):
            raise ValueError("the mask does not cover the attributes")
        self.names = [n for n, k in zip(self.names, keep.tolist()) if k]
        self._ids = _Interning((n, i) for i, n in enumerate(self.names))
        self._cache = {}  # its ids are the old ones

    def drop_lookup_tables(self) -> None:
        """Forget the ``k → v → id`` cache (rebuilt on use)."""
        self._cache = {}

    def state_dict(self) -> tuple[dict, dict[str, np.ndarray]]:
        return {"kind": self.KIND, "names": self.names}, {}

    @classmethod
    def from_state(cls, meta: dict, arrays: dict[str, np.ndarray]) -> "AttributeIndex":
        names = meta["names"]
        if meta.get("kind") != cls.KIND or not isinstance(names, list) \
                or not all(isinstance(n, str) for n in names):
            raise ValueError("attribute names must be a list of strings")
        index = cls(names)
        index.fitted = True
        return index
