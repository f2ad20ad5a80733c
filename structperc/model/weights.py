"""Trained weights of a linear-chain model and how they score featurized tokens.

Decoding (Viterbi over these scores) is one floor up, in `structperc.decode`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from structperc.errors import InputError
from structperc.model.state_weights import StateWeights


@dataclass
class Weights:
    """Weights of a linear-chain model.

    Attributes
    ----------
    sparse : StateWeights
        φ_l(x_t, y_t) weights of the model's feature set of (attribute, label) pairs. A dense array
        (n_state_attributes + 1, L) whose last row is zeros is accepted too and taken as the
        ``"all"`` feature set; `state` gives that dense view back (built on demand).
    trans : array of float32, shape (L + 1, L)
        φ_k(y_{t-1}, y_t) weights; row L is the ``<bos>`` start state ((L+1)·L features).
    cond : array of float32, shape (n_transition_attributes + 1, L + 1, L)
        Transition weights conditioned on an observation (``y[-1]|y[0]|pos[0]`` templates); the
        last slice is all zeros, as for ``state``.
    mask : array of float64, shape (L + 1, L)
        0 or -inf: transitions the label scheme forbids.
    end : array of float64, shape (L,)
        0 or -inf: labels a sentence may not end in.
    order2 : array of float32, shape (L + 1, L + 1, L), or None
        Second-order transition weights φ(y_{t-2}, y_{t-1}, y_t) of a model trained with ``order=2``
        (index L: ``<bos>``); None for a first-order model. The decoder dispatches on it
        (`structperc.decode.order2`).
    """

    sparse: StateWeights
    trans: np.ndarray
    cond: np.ndarray
    mask: np.ndarray
    end: np.ndarray
    order2: np.ndarray | None = None
    _dense: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.sparse, StateWeights):
            self.sparse = StateWeights.from_dense(np.asarray(self.sparse, dtype=np.float32)[:-1])

    @property
    def n_labels(self) -> int:
        return self.trans.shape[1]

    @property
    def order(self) -> int:
        """1, or 2 with second-order transitions (`order2`)."""
        return 1 if self.order2 is None else 2

    def check_first_order(self, what: str) -> None:
        """`InputError` for a second-order model: ``what`` (marginals, k-best lists, the temperature) is
        computed on the first-order lattice, which would silently ignore `order2`."""
        if self.order2 is not None:
            raise InputError(f"{what} are not available for second-order models (order=2): they decode the best "
                             "path only")

    @property
    def state(self) -> np.ndarray:
        """The state weights as a dense (n_state_attributes + 1, L) float32 matrix, last row zeros.

        Built on demand and read-only: the model's weights are `sparse`; the dense view serves the
        vectorized numpy decoder and inspection.
        """
        if self._dense is None:
            dense = self.sparse.to_dense(zero_rows=1)
            dense.flags.writeable = False
            self._dense = dense
        return self._dense

    def state_scores(self, ids: np.ndarray) -> np.ndarray:
        """Scores (n, L) of tokens whose attribute ids are ``ids`` (n, K); -1 ids are skipped.

        float32 throughout: decoding compares sums of a few dozen weights, and half the memory
        traffic is most of the speed of the vectorized decoder.
        """
        out = np.zeros((ids.shape[0], self.n_labels), dtype=np.float32)
        _gather_sum(self.state, ids, out)
        return out

    def base_transitions(self) -> np.ndarray:
        """Unconditioned transition scores with the scheme's mask applied, (L + 1, L) float32."""
        return (self.trans + self.mask).astype(np.float32)

    def transition_scores(self, ids: np.ndarray) -> np.ndarray:
        """Per-token transition scores (n, L + 1, L), or the shared (L + 1, L) matrix if unconditioned."""
        base = self.base_transitions()
        if ids.shape[1] == 0:
            return base
        L = self.n_labels
        out = np.zeros((ids.shape[0], (L + 1) * L), dtype=np.float32)
        _gather_sum(self.cond.reshape(len(self.cond), -1), ids, out)
        return out.reshape(-1, L + 1, L) + base


def _gather_sum(table: np.ndarray, ids: np.ndarray, out: np.ndarray) -> None:
    """out[i] += Σ_k table[ids[i, k]], one vectorized gather per template column.

    ``table`` ends with an all-zero row, so the id -1 (unknown attribute) indexes it and adds nothing:
    no masking in the loop.
    """
    for k in range(ids.shape[1]):
        out += table[ids[:, k]]


def with_zero_row(table: np.ndarray) -> np.ndarray:
    """``table`` with an extra all-zero row appended (see `_gather_sum`)."""
    out = np.zeros((table.shape[0] + 1,) + table.shape[1:], dtype=np.float32)
    out[:-1] = table
    return out
