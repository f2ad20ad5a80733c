"""Averaging the weights of members trained on the same features: a seed ensemble is one model.

Averaging linear scorers averages their scores, so the mean model is the (score-averaging) ensemble
of its members, the same size and speed as one of them (see `structperc.ensemble`).
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights


def average_weights(members: Iterable[Weights]) -> Weights:
    """The mean of weights that share attributes and labels (same shapes, same mask, the same order: a
    second-order model's ``order2`` tensor is averaged too), summed in float64 as the members come: a member
    can be dropped once it is added (seed averaging holds one sum, not every member)."""
    it = iter(members)
    first = next(it, None)
    if first is None:
        raise ValueError("no weights to average")
    pairs = first.sparse
    state: np.ndarray | None = None   # the sum over the first member's pairs, while all share them
    dense: np.ndarray | None = None   # (A, L), once a member's pairs differ
    trans, cond = first.trans.astype(np.float64), first.cond.astype(np.float64)
    order2 = None if first.order2 is None else first.order2.astype(np.float64)
    n = 1
    for w in it:
        if state is None and dense is None:  # made with the second member, not while it trains
            state = pairs.values.astype(np.float64)
        if w.sparse.shape != pairs.shape or w.cond.shape != first.cond.shape or w.trans.shape != first.trans.shape:
            raise ValueError("members have different attributes or labels; train them on the same "
                             "features")
        if w.order != first.order:
            raise ValueError("members of different orders: train them all first- or all second-order")
        if dense is None and w.sparse.same_pairs(pairs):
            state += w.sparse.values
        else:  # feature sets differ (members saved without their zero weights): sum densely from here on
            if dense is None:
                dense = np.zeros((pairs.n_attributes, pairs.n_labels), dtype=np.float64)
                dense[pairs.rows(), pairs.labels.astype(np.int64)] = state
            dense[w.sparse.rows(), w.sparse.labels.astype(np.int64)] += w.sparse.values
        trans += w.trans
        cond += w.cond
        if order2 is not None and w.order2 is not None:  # the orders agree (checked above)
            order2 += w.order2
        n += 1

    def mean(total: np.ndarray) -> np.ndarray:
        return (total / float(n)).astype(np.float32)
    if dense is not None:
        averaged = StateWeights.from_dense(mean(dense))
    else:
        averaged = pairs.with_values(mean(pairs.values.astype(np.float64) if state is None else state))
    return Weights(averaged, mean(trans), mean(cond), first.mask, first.end,
                   order2=None if order2 is None else mean(order2))
