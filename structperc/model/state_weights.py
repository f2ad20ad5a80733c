"""State weights φ_l(x_t, y_t) stored for a *feature set* of (attribute, label) pairs, row-compressed.

Why not a dense (attributes × labels) matrix: CRFsuite's feature set — the pairs seen together in
the training data — is ~6 % of the dense matrix on CoNLL-2000 (452,777 of 338,548 × 22 pairs). A
dense matrix plus float64 averaging sums costs 12 bytes per cell, 90 MB there, which dominated the
trainer's peak memory. Row-compressed storage costs 14 bytes per *pair* (float32 weight, float64
sum, int16 label) plus 8 bytes per attribute.

Two feature sets:

* ``"all"``: every attribute with every label (``ptr[a] = a · L``, all labels in order). Scores and
  updates are then exactly those of a dense matrix, in the same floating-point order.
* ``"observed"``: CRFsuite's default (``feature.possible_states=0``): the pairs (attribute of a token,
  its gold label) that occur in the training data. An update on a pair outside the set is dropped,
  so a perceptron cannot learn *negative* evidence for labels an attribute never had.

Layout: the pairs of attribute ``a`` are ``ptr[a]:ptr[a + 1]``, their labels ``labels[...]``
(ascending), their weights ``values[...]``. Attribute id -1 (unknown) has no pairs.

Padded rows: an attribute with many labels in the set (a sixth of them or more: the bias, POS tags,
frequent words) is stored as a full row of every label, the slots outside the set held at zero and
marked inactive for the trainer. Full rows are scored with contiguous vector adds instead of a
scatter: on CoNLL-2000 (``crfsuite`` template) 14,368 padded rows cover 69 % of the attribute
occurrences, cost 235,000 extra slots (3.5 MB while training) and bring an epoch from 0.21 s back to
the dense matrix's 0.16 s. Inactive slots stay zero, so scores are exactly those of the unpadded set.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

FEATURE_SETS = ("all", "observed")


class FeatureSet(NamedTuple):
    """The pairs that get a state weight: row pointers, labels, and which slots are active
    (uint8 per slot; empty when every slot is: the ``"all"`` feature set)."""

    ptr: np.ndarray
    labels: np.ndarray
    active: np.ndarray


def pads_row(counts: np.ndarray, n_labels: int) -> np.ndarray:
    """Which attributes, with ``counts`` labels in the set, are stored as full rows."""
    return (counts * 6 >= n_labels) & (counts >= 2)


@dataclass
class StateWeights:
    """Weights of the pairs of a feature set (see the module docstring for the layout)."""

    ptr: np.ndarray      # int64 (A + 1,)
    labels: np.ndarray   # int16 (nnz,)
    values: np.ndarray   # float32 (nnz,)
    n_labels: int

    def __post_init__(self) -> None:
        self.ptr = np.ascontiguousarray(self.ptr, dtype=np.int64)
        self.labels = np.ascontiguousarray(self.labels, dtype=np.int16)
        self.values = np.ascontiguousarray(self.values, dtype=np.float32)
        self.n_labels = int(self.n_labels)

    @property
    def n_attributes(self) -> int:
        return len(self.ptr) - 1

    @property
    def shape(self) -> tuple[int, int]:
        """(attributes, labels): the shape of the dense matrix these weights stand for."""
        return self.n_attributes, self.n_labels

    @property
    def nnz(self) -> int:
        return len(self.values)

    @classmethod
    def from_dense(cls, dense: np.ndarray) -> "StateWeights":
        """All pairs of a dense (A, L) matrix, zeros included (the ``"all"`` feature set)."""
        A, L = dense.shape
        ptr, labels, _ = all_pairs(A, L)
        return cls(ptr, labels, np.asarray(dense, dtype=np.float32).ravel(), L)

    def to_dense(self, zero_rows: int = 0) -> np.ndarray:
        """The dense (A + zero_rows, L) float32 matrix (pairs outside the set are 0)."""
        out = np.zeros((self.n_attributes + zero_rows, self.n_labels), dtype=np.float32)
        out[self.rows(), self.labels.astype(np.int64)] = self.values
        return out

    def rows(self) -> np.ndarray:
        """The attribute of every pair, int64 (nnz,)."""
        return np.repeat(np.arange(self.n_attributes, dtype=np.int64), np.diff(self.ptr))

    def with_values(self, values: np.ndarray) -> "StateWeights":
        """Same pairs, other weights (the pair arrays are shared, not copied)."""
        return StateWeights(self.ptr, self.labels, values, self.n_labels)

    def same_pairs(self, other: "StateWeights") -> bool:
        return self.n_labels == other.n_labels and np.array_equal(self.ptr, other.ptr) \
            and np.array_equal(self.labels, other.labels)

    def nonzero(self) -> "StateWeights":
        """The pairs whose weight is not 0 (what a saved model needs to score)."""
        keep = self.values != 0
        if keep.all():
            return self
        return StateWeights(_ptr_from_counts(row_counts(keep, self.ptr)), self.labels[keep], self.values[keep],
                            self.n_labels)

    def padded(self) -> "StateWeights":
        """The same weights with the rows `pads_row` picks stored full (zeros in the new slots)."""
        counts = np.diff(self.ptr)
        L = self.n_labels
        pad = pads_row(counts, L) & (counts < L)
        if not pad.any():
            return self
        new_ptr = _ptr_from_counts(np.where(pad, L, counts))
        compiled = _aot("pad_rows")
        if compiled is not None:  # one pass instead of a dozen (`structperc.model.weight_kernels`)
            labels = np.empty(int(new_ptr[-1]), dtype=np.int16)
            values = np.zeros(int(new_ptr[-1]), dtype=np.float32)
            compiled(self.ptr, self.labels, self.values, np.ascontiguousarray(pad), L, new_ptr,
                     labels, values)
            return StateWeights(new_ptr, labels, values, L)
        rows = self.rows()
        on_pad = pad[rows]
        labels = np.empty(int(new_ptr[-1]), dtype=np.int16)
        values = np.zeros(int(new_ptr[-1]), dtype=np.float32)
        # short rows keep their slots in order; padded rows put label l at offset l
        offset = np.where(on_pad, self.labels.astype(np.int64),
                          np.arange(self.nnz, dtype=np.int64) - self.ptr[rows])
        dest = new_ptr[rows] + offset
        labels[dest] = self.labels
        values[dest] = self.values
        padded_rows = np.nonzero(pad)[0]
        starts = new_ptr[padded_rows]
        labels[(starts[:, None] + np.arange(L)).ravel()] = np.tile(np.arange(L, dtype=np.int16),
                                                                   len(padded_rows))
        return StateWeights(new_ptr, labels, values, L)

    def frozen(self) -> "StateWeights":
        """These weights with their rows and labels made read-only (where they hold their own memory): a model's
        tables, which the decoders' contracts then check once, not at every call
        (`structperc.compiled.boundary.frozen`). Nothing writes a loaded model's rows or labels."""
        from structperc.compiled.boundary import freeze

        freeze(self.ptr, self.labels)
        return self

    def rows_ascending(self) -> bool:
        """Whether the labels of every attribute strictly ascend (what a saved model must hold)."""
        compiled = _aot("rows_ascending")
        if compiled is not None:
            return bool(compiled(self.ptr, self.labels))
        from structperc.compiled.boundary import rising

        keys = self.rows() * self.n_labels + self.labels
        return rising(keys, strict=True)

    def select(self, rows: np.ndarray) -> "StateWeights":
        """The attributes where the boolean mask ``rows`` is True, renumbered in order."""
        counts = np.diff(self.ptr)
        keep = np.repeat(rows, counts)
        return StateWeights(_ptr_from_counts(counts[rows]), self.labels[keep], self.values[keep],
                            self.n_labels)

    def row_norms(self) -> np.ndarray:
        """L2 norm (float64) of each attribute's weights."""
        sq = self.values.astype(np.float64) ** 2
        return np.sqrt(np.bincount(self.rows(), weights=sq, minlength=self.n_attributes))

    def positions(self, rows: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Index of each pair (rows[i], labels[i]) in ``values``, or -1 where it is not in the set."""
        keys = self.rows() * self.n_labels + self.labels
        want = np.asarray(rows, np.int64) * self.n_labels + np.asarray(labels, np.int64)
        if not len(keys):
            return np.full(len(want), -1, dtype=np.int64)
        pos = np.minimum(np.searchsorted(keys, want), len(keys) - 1)
        return np.where(keys[pos] == want, pos, -1)


def _aot(name: str):
    """A kernel of `structperc.model.weight_kernels` from the ahead-of-time build, or None."""
    from structperc.compiled import loader as kernels

    return kernels.aot(name)


def row_counts(flags: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """How many of each row's pairs ``flags`` (bool, one per pair) marks, int64 (n_rows,).

    Rows hold at most one pair per label, so with fewer than 256 labels the sums are taken in bytes
    (``reduceat`` over a uint8 view): 0.01 s on a CoNLL-2000 model's 33 M pairs, where the pairs' row
    ids (``rows()``, 8 bytes a pair) cost 0.1–0.3 s and a reduce that casts to int64 0.4 s."""
    ptr = np.asarray(ptr, dtype=np.int64)
    n_rows = len(ptr) - 1
    if n_rows <= 0:
        return np.zeros(0, dtype=np.int64)
    lengths = np.diff(ptr)
    if int(lengths.max()) >= 256:
        return np.bincount(np.repeat(np.arange(n_rows, dtype=np.int64), lengths)[flags], minlength=n_rows)
    # a False past the end, so that every start is a valid index of reduceat; an empty row's sum is
    # reduceat's one element, zeroed after
    counts = np.add.reduceat(np.append(flags, False).view(np.uint8), ptr[:-1], dtype=np.uint8).astype(np.int64)
    counts[lengths == 0] = 0
    return counts


def _ptr_from_counts(counts: np.ndarray) -> np.ndarray:
    ptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    return ptr


def all_pairs(n_attributes: int, n_labels: int) -> FeatureSet:
    """The ``"all"`` feature set."""
    ptr = np.arange(n_attributes + 1, dtype=np.int64) * n_labels
    return FeatureSet(ptr, np.tile(np.arange(n_labels, dtype=np.int16), n_attributes),
                      np.zeros(0, np.uint8))


def observed_pairs(X: np.ndarray, y: np.ndarray, n_attributes: int, n_labels: int,
                   extra: tuple[np.ndarray, np.ndarray] | None = None) -> FeatureSet:
    """The pairs (X[t, k], y[t]) with X[t, k] ≥ 0, plus the pairs (rows, labels) of ``extra`` (kept
    weights of an earlier model), with the rows `pads_row` picks padded.

    A bitmap of all (attribute, label) cells, one byte each, marked one template column at a time
    (fancy-index assignment, no sort): 0.03 s and ~10 MB transient on CoNLL-2000, where sorting the
    pair keys took 0.5 s and three times the memory. Attribute -1 (unknown) gives a negative flat
    index, which wraps onto an extra last row that is dropped.
    """
    L = n_labels
    seen = np.zeros((n_attributes + 1, L), dtype=bool)
    flat_seen = seen.ravel()
    y64 = np.asarray(y, dtype=np.int64)
    for k in range(X.shape[1]):
        for a in range(0, len(y64), _BLOCK):  # flat cell indices, a block of tokens at a time
            flat_seen[X[a:a + _BLOCK, k].astype(np.int64) * L + y64[a:a + _BLOCK]] = True
    del y64, flat_seen
    if extra is not None:
        seen[np.asarray(extra[0], np.intp), np.asarray(extra[1], np.intp)] = True
    seen = seen[:-1]
    counts = seen.sum(axis=1, dtype=np.int32)  # count_nonzero(axis=) would copy the bitmap
    pad = pads_row(counts, L)
    labels, active = [], []
    block = None
    for a in range(0, n_attributes, _BLOCK):  # blocks of rows keep the int64 indices small
        block = seen[a:a + _BLOCK]
        slots = np.flatnonzero(block | pad[a:a + _BLOCK, None])
        labels.append((slots % L).astype(np.int16))
        active.append(block.ravel()[slots].view(np.uint8))
    del seen, block
    counts[pad] = L
    return FeatureSet(_ptr_from_counts(counts), _concat(labels, np.int16), _concat(active, np.uint8))


_BLOCK = 1 << 16


def _concat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype)


def feature_set(kind: str, X: np.ndarray, y: np.ndarray, n_attributes: int, n_labels: int,
                extra: tuple[np.ndarray, np.ndarray] | None = None,
                allowed: np.ndarray | None = None) -> FeatureSet:
    """Feature set ``kind`` (one of `FEATURE_SETS`) over the training features.

    With partial labels (``allowed``, bool (n_tokens, L), see `structperc.features.instances.Instances`) the
    ``"observed"`` set takes the pairs of the tokens whose label is known: (attribute, its label)
    where one label is allowed, (attribute, each allowed label) where a few are (an IOB2 ``B-NP``
    next to an unknown tag may be IOBES B-NP or S-NP). A token whose tag is unknown allows every
    label and adds no pair: pairing its attributes with every label would make their rows dense,
    and the labels the trainer fills in for it are guesses, not observations.
    """
    if kind == "all":
        return all_pairs(n_attributes, n_labels)
    if kind == "observed":
        if allowed is not None:
            X, y, extra = _known_pairs(X, y, allowed, extra)
        return observed_pairs(X, y, n_attributes, n_labels, extra)
    raise ValueError(f"unknown feature set {kind!r} (choose from {', '.join(FEATURE_SETS)})")


def _known_pairs(X: np.ndarray, y: np.ndarray, allowed: np.ndarray,
                 extra: tuple[np.ndarray, np.ndarray] | None) \
        -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
    """`feature_set`'s observed pairs of partially labelled data: the tokens with one allowed label
    (as ``X``, ``y``) and the (attribute, label) pairs of those with a few (appended to ``extra``)."""
    count = np.count_nonzero(allowed, axis=1)
    single = count == 1
    few = np.flatnonzero((count > 1) & (count < allowed.shape[1]))
    y_single = np.argmax(allowed[single], axis=1) if single.any() else np.zeros(0, np.int64)
    rows, labels = [] if extra is None else [np.asarray(extra[0], np.int64)], \
        [] if extra is None else [np.asarray(extra[1], np.int64)]
    tok, lab = np.nonzero(allowed[few])
    for k in range(X.shape[1]):
        at = X[few[tok], k].astype(np.int64)
        keep = at >= 0
        rows.append(at[keep])
        labels.append(lab[keep].astype(np.int64))
    pairs = (np.concatenate(rows), np.concatenate(labels)) if rows else None
    return X[single], y_single.astype(y.dtype, copy=False), pairs
