"""Averaging the weights of members trained on the same features: a seed ensemble is one model.

Averaging linear scorers averages their scores, so the mean model is the (score-averaging) ensemble
of its members, the same size and speed as one of them (see `structperc.ensemble`).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights


def average_weights(members: Sequence[Weights]) -> Weights:
    """The mean of weights that share attributes and labels (same shapes, same mask)."""
    if not members:
        raise ValueError("no weights to average")
    first = members[0]
    for w in members[1:]:
        if w.sparse.shape != first.sparse.shape or w.cond.shape != first.cond.shape \
                or w.trans.shape != first.trans.shape:
            raise ValueError("members have different attributes or labels; train them on the same "
                             "features")
    n = float(len(members))

    def mean(arrays: list[np.ndarray]) -> np.ndarray:
        out = np.zeros(arrays[0].shape, dtype=np.float64)
        for a in arrays:
            out += a
        return (out / n).astype(np.float32)
    if all(w.sparse.same_pairs(first.sparse) for w in members[1:]):
        state = first.sparse.with_values(mean([w.sparse.values for w in members]))
    else:  # feature sets differ (members saved without their zero weights): average densely
        state = StateWeights.from_dense(mean([w.sparse.to_dense() for w in members]))
    return Weights(state, mean([w.trans for w in members]), mean([w.cond for w in members]),
                   first.mask, first.end)
