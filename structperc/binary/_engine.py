"""The one training loop shared by every binary perceptron in this package.

Why one engine: the primal, dual, margin and lifted perceptrons differ only in
(a) how the score of training point ``i`` is computed -- from an explicit
weight vector ``w`` (primal) or from a Gram matrix and the mistake counts
``alpha`` (dual) -- and (b) what counts as a mistake -- ``y_i w . x_i <= 0``
(Rosenblatt) or a normalised margin below a threshold (margin perceptron).
The epoch loop, the visiting order, the stopping rule and the bookkeeping
(``n_updates``, ``mistakes_per_epoch``, ``update_indices``) are the same, so
they live here once.  Sharing the visiting order is what lets the tests
check that the primal and dual forms make *the same* mistakes in *the same*
order for one ``random_state``.

Visiting order: with ``shuffle=True`` epoch ``t`` visits the ``t``-th
permutation drawn with ``numpy.random.default_rng(random_state).permutation``;
with ``shuffle=False`` every epoch visits ``0, 1, ..., n-1``.  Training stops
after the first epoch without a mistake (then every point satisfies the
mistake rule's condition) or after ``max_epochs`` epochs, with a
``ConvergenceWarning``.

The hot loops are compiled with numba (a dependency of structperc); the
pure-Python fallback is only there so the package still imports without it.
"""
from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from numpy.typing import NDArray

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is a declared dependency

    def njit(*args, **kwargs):  # type: ignore[no-redef]
        if args and callable(args[0]):
            return args[0]
        return lambda func: func


logger = logging.getLogger(__name__)

PERCEPTRON_RULE = 0
MARGIN_RULE = 1

# Update indices are flushed from the compiled loop to Python in blocks this big.
_UPDATE_BLOCK = 1 << 20
# Epochs handed to one compiled call when the order is fixed (no permutations to draw).
_FIXED_ORDER_EPOCHS = 1 << 18
# Upper bound on the number of pre-drawn permutation entries held at once.
_ORDER_BUDGET = 1 << 22
_NO_ORDERS = np.empty((0, 0), dtype=np.int64)


class ConvergenceWarning(UserWarning):
    """The perceptron still made mistakes in its last allowed epoch."""


@dataclass(frozen=True)
class MistakeRule:
    """When a visit to point ``i`` counts as a mistake and triggers an update.

    ``kind == PERCEPTRON_RULE``: ``y_i f(x_i) <= 0`` (Rosenblatt's rule; a
    score of exactly zero is a mistake, so the first visit always updates).
    ``kind == MARGIN_RULE``: ``w == 0`` or ``y_i f(x_i) / ||w|| < threshold``.
    """

    kind: int = PERCEPTRON_RULE
    threshold: float = 0.0

    @classmethod
    def margin(cls, threshold: float) -> "MistakeRule":
        return cls(MARGIN_RULE, float(threshold))


@dataclass(frozen=True)
class TrainingLog:
    """What happened during training, in the order it happened."""

    n_updates: int
    n_epochs: int
    converged: bool
    mistakes_per_epoch: NDArray[np.integer]
    update_indices: NDArray[np.integer]


@njit(cache=True)
def _primal_epochs(X, y, w, eta, rule, threshold, orders, shuffle, n_epochs, upd_buf, mist_buf):
    """Run up to ``n_epochs`` epochs on an explicit weight vector ``w`` (in place).

    Returns ``(epochs_run, updates_written, converged)``; stops early after an
    epoch without mistakes, or before an epoch that might overflow ``upd_buf``.
    """
    n, d = X.shape
    cap = upd_buf.shape[0]
    written = 0
    for e in range(n_epochs):
        if written + n > cap:
            return e, written, False
        mistakes = 0
        for t in range(n):
            i = orders[e, t] if shuffle else t
            score = 0.0
            for j in range(d):
                score += w[j] * X[i, j]
            margin = y[i] * score
            if rule == 0:
                wrong = margin <= 0.0
            else:
                nsq = 0.0
                for j in range(d):
                    nsq += w[j] * w[j]
                wrong = nsq <= 0.0 or margin < threshold * math.sqrt(nsq)
            if wrong:
                step = eta * y[i]
                for j in range(d):
                    w[j] += step * X[i, j]
                upd_buf[written] = i
                written += 1
                mistakes += 1
        mist_buf[e] = mistakes
        if mistakes == 0:
            return e + 1, written, True
    return n_epochs, written, False


@njit(cache=True)
def _dual_epochs(G, y, alpha, f, nsq, eta, rule, threshold, orders, shuffle, n_epochs, upd_buf,
                 mist_buf):
    """Run up to ``n_epochs`` epochs of the dual perceptron (state updated in place).

    ``f[i]`` holds the current score ``sum_j alpha_j y_j G[j, i]`` of every
    training point and ``nsq[0]`` the squared norm ``||w||^2`` of the implicit
    weight vector, both updated in O(n) per mistake from one row of ``G``.
    """
    n = G.shape[0]
    cap = upd_buf.shape[0]
    written = 0
    for e in range(n_epochs):
        if written + n > cap:
            return e, written, False
        mistakes = 0
        for t in range(n):
            i = orders[e, t] if shuffle else t
            margin = y[i] * f[i]
            if rule == 0:
                wrong = margin <= 0.0
            else:
                wrong = nsq[0] <= 0.0 or margin < threshold * math.sqrt(nsq[0])
            if wrong:
                step = eta * y[i]
                nsq[0] += 2.0 * step * f[i] + step * step * G[i, i]
                alpha[i] += eta
                for j in range(n):
                    f[j] += step * G[i, j]
                upd_buf[written] = i
                written += 1
                mistakes += 1
        mist_buf[e] = mistakes
        if mistakes == 0:
            return e + 1, written, True
    return n_epochs, written, False


_EpochRunner = Callable[[NDArray[np.int64], bool, int, NDArray[np.int64], NDArray[np.int64]],
                        tuple[int, int, bool]]


def _drive(run: _EpochRunner, n: int, *, max_epochs: int, shuffle: bool, random_state,
           what: str) -> TrainingLog:
    """Feed visiting orders to a compiled epoch runner and collect the log."""
    rng = np.random.default_rng(random_state)
    upd_buf = np.empty(max(2 * n, _UPDATE_BLOCK), dtype=np.int64)
    index_dtype = np.min_scalar_type(max(n - 1, 0))
    count_dtype = np.min_scalar_type(n)
    max_chunk = max(1, min(256, _ORDER_BUDGET // max(n, 1)))
    updates: list[NDArray[np.integer]] = []
    mistakes: list[NDArray[np.integer]] = []
    pending = np.empty((0, n), dtype=np.int64)  # permutations drawn but not yet visited
    done, converged, chunk = 0, False, 1
    while done < max_epochs and not converged:
        if shuffle:
            want = min(chunk, max_epochs - done)
            if pending.shape[0] < want:
                fresh = [rng.permutation(n) for _ in range(want - pending.shape[0])]
                pending = np.concatenate([pending, np.asarray(fresh, dtype=np.int64)])
            orders, n_run = pending[:want], want
            chunk = min(2 * chunk, max_chunk)
        else:
            orders, n_run = _NO_ORDERS, min(_FIXED_ORDER_EPOCHS, max_epochs - done)
        mist_buf = np.empty(n_run, dtype=np.int64)
        ran, written, converged = run(np.ascontiguousarray(orders), shuffle, n_run, upd_buf,
                                      mist_buf)
        if shuffle:
            pending = pending[ran:]
        updates.append(upd_buf[:written].astype(index_dtype))
        mistakes.append(mist_buf[:ran].astype(count_dtype))
        done += ran
        logger.debug("%s: %d epochs, %d updates in this block, converged=%s",
                     what, done, written, converged)
    update_indices = np.concatenate(updates)
    per_epoch = np.concatenate(mistakes)
    if not converged:
        warnings.warn(
            f"{what} did not converge within max_epochs={max_epochs}: "
            f"{int(per_epoch[-1])} mistake(s) in the last epoch (is the data separable?)",
            ConvergenceWarning,
            stacklevel=4,
        )
    return TrainingLog(
        n_updates=int(update_indices.shape[0]),
        n_epochs=int(per_epoch.shape[0]),
        converged=bool(converged),
        mistakes_per_epoch=per_epoch,
        update_indices=update_indices,
    )


def train_primal(X: NDArray[np.float64], y: NDArray[np.float64], *, eta: float, max_epochs: int,
                 shuffle: bool, random_state, rule: MistakeRule = MistakeRule(),
                 what: str = "Perceptron") -> tuple[NDArray[np.float64], TrainingLog]:
    """Train from ``w = 0`` with updates ``w += eta * y_i * x_i``; return ``(w, log)``.

    ``X`` (n, d) must already be in the homogeneous form the caller wants
    (a column of ones appended for a bias, lifted columns, ...).
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    w = np.zeros(X.shape[1])

    def run(orders, shuf, n_run, upd_buf, mist_buf):
        return _primal_epochs(X, y, w, float(eta), rule.kind, rule.threshold, orders, shuf,
                              n_run, upd_buf, mist_buf)

    log = _drive(run, X.shape[0], max_epochs=max_epochs, shuffle=shuffle,
                 random_state=random_state, what=what)
    return w, log


def train_dual(G: NDArray[np.float64], y: NDArray[np.float64], *, eta: float, max_epochs: int,
               shuffle: bool, random_state, rule: MistakeRule = MistakeRule(),
               what: str = "DualPerceptron") -> tuple[NDArray[np.float64], TrainingLog]:
    """Train from ``alpha = 0`` with updates ``alpha_i += eta``; return ``(alpha, log)``.

    ``G`` (n, n) is the Gram matrix of the homogeneous (and possibly lifted)
    training points, so the score of point ``i`` is ``sum_j alpha_j y_j G[j, i]``.
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = G.shape[0]
    alpha = np.zeros(n)
    f = np.zeros(n)
    nsq = np.zeros(1)

    def run(orders, shuf, n_run, upd_buf, mist_buf):
        return _dual_epochs(G, y, alpha, f, nsq, float(eta), rule.kind, rule.threshold, orders,
                            shuf, n_run, upd_buf, mist_buf)

    log = _drive(run, n, max_epochs=max_epochs, shuffle=shuffle, random_state=random_state,
                 what=what)
    return alpha, log
