"""The state of an averaged perceptron in training (`PerceptronState`): current weights, the sums
that give their average, the instance counter and the RNG, so that a run continues exactly where it
stopped (checkpoints, continued training) and every trainer of `structperc.train.trainer` starts
from, and leaves, the same kind of state.

Averaging follows Collins (2002) with the usual constant-time trick: rather than adding the weights
to a running total after every instance, each update Δ at instance c adds c·Δ to ``U``, and the
average of the weights after every instance so far is W − U / c.

References
----------
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments
with perceptron algorithms. EMNLP 2002.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from io import BufferedRandom
from typing import Any, Mapping

import numpy as np

from structperc.model.state_weights import FeatureSet, StateWeights, all_pairs, feature_set, row_counts
from structperc.model.weights import Weights


@dataclass
class PerceptronState:
    """Everything training needs to continue exactly where it was (weights, sums, counter, RNG)."""

    W: np.ndarray          # (nnz,) float32: current weights of the state pairs (integers, exact,
    #                        unless attribute values other than 1 are trained)
    U: np.ndarray          # (nnz,) float64: running sum of c·Δ for averaging
    Wt: np.ndarray         # (L + 1, L) float32
    Ut: np.ndarray         # (L + 1, L) float64
    Wc: np.ndarray         # (AT, L + 1, L) float32
    Uc: np.ndarray         # (AT, L + 1, L) float64
    c: int = 0             # instances processed so far
    epoch: int = 0         # epochs completed
    rng_state: Mapping[str, Any] = field(default_factory=dict)
    best_score: float | None = None   # best dev score so far, its epoch and averaged weights
    best_epoch: int = 0
    best: Weights | None = None
    # None only as the constructor's default: `__post_init__` refuses a missing ptr or labels and
    # makes a missing active empty, so a constructed state always holds the three arrays.
    ptr: np.ndarray = None  # type: ignore[assignment]  # the state feature set (see
    labels: np.ndarray = None  # type: ignore[assignment]  # `structperc.model.state_weights`),
    active: np.ndarray = None  # type: ignore[assignment]  # required: `zeros` and checkpoints give it
    spill: BufferedRandom | None = field(default=None, repr=False, compare=False)  # see `remember_best`
    spilled: tuple | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.ptr is None or self.labels is None:
            raise ValueError("a perceptron state needs its feature set (ptr and labels)")
        self.ptr = np.ascontiguousarray(self.ptr, dtype=np.int64)
        self.labels = np.ascontiguousarray(self.labels, dtype=np.int16)
        self.active = np.ascontiguousarray(self.active if self.active is not None else [],
                                           dtype=np.uint8)
        if not (len(self.W) == len(self.U) == len(self.labels) == self.ptr[-1]) \
                or len(self.active) not in (0, len(self.W)):
            raise ValueError("state weights do not match the feature set")

    @classmethod
    def zeros(cls, n_attributes: int, n_transition_attributes: int, n_labels: int,
              pairs: FeatureSet | None = None) -> "PerceptronState":
        """A fresh state over the feature set ``pairs`` (default: all pairs)."""
        L = n_labels
        ptr, labels, active = pairs if pairs is not None else all_pairs(n_attributes, L)
        if len(ptr) != n_attributes + 1:
            raise ValueError("the feature set does not cover the attributes")
        nnz = int(ptr[-1])
        return cls(np.zeros(nnz, np.float32), np.zeros(nnz),
                   np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L)),
                   np.zeros((n_transition_attributes, L + 1, L), np.float32),
                   np.zeros((n_transition_attributes, L + 1, L)), ptr=ptr, labels=labels,
                   active=active)

    @classmethod
    def fresh(cls, index: Any, n_labels: int, kind: str = "all", X: np.ndarray | None = None,
              y: np.ndarray | None = None, *, allowed: np.ndarray | None = None,
              extra: tuple[np.ndarray, np.ndarray] | None = None) -> "PerceptronState":
        """The state a training run starts from: zeros over the state and transition attributes of
        ``index`` (a feature index) and ``n_labels`` labels, on the feature set ``kind`` of the
        training data (`structperc.model.state_weights.feature_set`: state attribute ids ``X``, gold
        label ids ``y``, the partial labels ``allowed``, an earlier model's pairs ``extra``); with no
        data (the workers hold it), every pair."""
        A = index.n_state_attributes
        pairs = None if X is None or y is None else feature_set(kind, X, y, A, n_labels, extra=extra, allowed=allowed)
        if pairs is None and kind != "all":
            raise ValueError(f"the {kind!r} feature set is made from the training data: give X and y")
        return cls.zeros(A, index.n_transition_attributes, n_labels, pairs)

    @property
    def pairs(self) -> StateWeights:
        """The current (not averaged) state weights."""
        return StateWeights(self.ptr, self.labels, self.W, self.Wt.shape[1])

    def averaged(self, mask: np.ndarray, end: np.ndarray, in_place: bool = False,
                 rows: np.ndarray | None = None) -> Weights:
        """Collins' average of the weights after every instance so far: W − U / c.

        ``in_place`` writes the state weights' average over ``W`` (no copy: the largest array of
        training); the state cannot continue training after that. ``rows`` (sorted state attribute
        ids) averages only those attributes, renumbered ``0 .. len(rows) - 1``, and keeps only their
        pairs whose average is not 0: what scoring a dev set needs (a pair left out adds nothing to a
        state score, as its 0 would: every score is the same float32 sum), a small fraction of
        the memory of the whole average (CoNLL-2000 with its test set as the dev set: 4 % of the
        dev rows' 6.3 M pairs are not 0).
        """
        inv = 1.0 / self.c if self.c else 0.0
        L = self.Wt.shape[1]
        if rows is not None:
            state = self._averaged_rows(rows, inv)
        else:
            values = _average(self.W, self.U, inv, out=self.W if in_place else None)
            if in_place:
                self.U = None  # type: ignore[assignment]  # a consumed state fails loudly if reused
            state = StateWeights(self.ptr, self.labels, values, L)
        cond = np.zeros((self.Wc.shape[0] + 1,) + self.Wc.shape[1:], dtype=np.float32)
        _average(self.Wc, self.Uc, inv, out=cond[:-1])  # the last slice stays zeros
        return Weights(state, (self.Wt - self.Ut * inv).astype(np.float32), cond, mask, end)

    def _averaged_rows(self, rows: np.ndarray, inv: float, pairs: int = 1 << 16) -> StateWeights:
        """`averaged`'s state weights of ``rows`` only, their nonzero pairs, about ``pairs`` pairs
        at a time (the index and float64 temporaries of all rows at once would cost more than the
        result)."""
        counts = np.diff(self.ptr)[rows]
        block = max(1, pairs // max(1, self.Wt.shape[1]))
        kept = np.zeros(len(rows), dtype=np.int64)
        labels: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for a in range(0, len(rows), block):
            b = min(a + block, len(rows))
            local = np.zeros(b - a + 1, dtype=np.int64)
            np.cumsum(counts[a:b], out=local[1:])
            pos = np.repeat(self.ptr[rows[a:b]] - local[:-1], counts[a:b]) + np.arange(local[-1], dtype=np.int64)
            average = (self.W[pos] - self.U[pos] * inv).astype(np.float32)
            nonzero = average != 0
            kept[a:b] = row_counts(nonzero, local)
            labels.append(self.labels[pos[nonzero]])
            values.append(average[nonzero])
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(kept, out=ptr[1:])
        return StateWeights(ptr, _joined(labels, np.int16), _joined(values, np.float32), self.Wt.shape[1])

    def remember_best(self, score: float, mask: np.ndarray, end: np.ndarray) -> None:
        """Keep the current average as the best epoch's, its state weights spilled to an anonymous
        temporary file: a second copy of the largest array in memory would nearly double training's
        peak (CoNLL-2000, default template: 561 MiB -> 1.02 GiB with a dev set)."""
        inv = 1.0 / self.c if self.c else 0.0
        small = self.averaged(mask, end, rows=np.zeros(0, dtype=np.int64))
        if self.spill is None:
            self.spill = tempfile.TemporaryFile(prefix="structperc-best-")
        self.spill.seek(0)
        block = 1 << 18
        for a in range(0, len(self.W), block):
            self.spill.write(_average(self.W[a:a + block], self.U[a:a + block], inv).tobytes())
        self.spill.flush()
        self.best, self.spilled = None, (small.trans, small.cond, mask, end)
        self.best_score, self.best_epoch = score, self.epoch

    def best_weights(self, into: np.ndarray | None = None) -> Weights | None:
        """The best epoch's averaged weights (read back from the spill file into ``into``, e.g. the
        consumed ``W``, when there is one)."""
        if self.spill is None or self.spilled is None:
            return self.best
        self.spill.seek(0)
        values = into if into is not None else np.empty(len(self.labels), dtype=np.float32)
        # numpy's stubs declare the buffer protocol (``__buffer__``) for Python >= 3.12 only
        if self.spill.readinto(memoryview(values).cast("B")) != values.nbytes:  # type: ignore[arg-type]
            raise OSError("the spilled best weights could not be read back")
        trans, cond, mask, end = self.spilled
        return Weights(StateWeights(self.ptr, self.labels, values, self.Wt.shape[1]), trans, cond, mask, end)


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)


def _average(W: np.ndarray, U: np.ndarray, inv: float, block: int = 1 << 18,
             out: np.ndarray | None = None) -> np.ndarray:
    """``W − U·inv`` as float32 (into ``out``, which may be ``W``), about ``block`` elements at a
    time (whole rows of the first axis).

    Blocking keeps the float64 temporaries small: a whole-array expression would briefly need
    three more copies of the largest array in the process (or of the conditioned transitions).
    """
    if out is None:
        out = np.empty(W.shape, dtype=np.float32)
    n = W.shape[0]
    rows = max(1, block // max(1, int(np.prod(W.shape[1:], dtype=np.int64))))
    for a in range(0, n, rows):
        b = min(a + rows, n)
        out[a:b] = W[a:b] - U[a:b] * inv
    return out
