"""Convergence bounds for binary perceptrons, as plain functions.

Why plain functions: a bound is a property of a data set and a reference
separator, not of a fitted estimator.  Keeping them here lets the tests (and
the CLI) compute the bound and the perceptron's update count independently
and compare the two.

Notation (for points ``x_i`` with labels ``y_i`` in {+1, -1}, i = 1..m):

* ``r = max_i ||x_i||`` -- the radius of the data;
* ``rho = min_i y_i v . x_i`` -- the margin of a unit vector ``v``;
* ``rho*`` -- the largest margin of any unit vector (hard-margin problem);
* Novikoff (1962): a perceptron started at ``w = 0`` makes at most
  ``r^2 / rho^2`` updates, for every step size ``eta`` and every visiting
  order;
* margin perceptron (update while ``y w . x / ||w|| < k rho``):
  at most ``4 r^2 / ((1 - k)^2 rho^2)`` updates;
* lifting (Freund & Schapire, 1999): on any data, with slacks
  ``eps_i = max(0, rho - y_i v . x_i)`` and ``delta = ||eps||``, the
  perceptron on the lifted points ``(x_i, A e_i)`` with ``A^2 = r delta``
  makes at most ``(r + delta)^2 / rho^2`` updates.

All functions work on the points exactly as given: for a perceptron with a
bias, pass ``homogeneous(X)``; for a kernel, pass ``gram_embedding(G)``.

References
----------
.. [1] F. Rosenblatt, "The perceptron: a probabilistic model for information
   storage and organization in the brain", Psychological Review 65(6), 1958.
.. [2] A. B. J. Novikoff, "On convergence proofs on perceptrons", Symposium
   on the Mathematical Theory of Automata 12, 1962.
.. [3] Y. Freund and R. E. Schapire, "Large margin classification using the
   perceptron algorithm", Machine Learning 37(3), 1999.
.. [4] C. L. Lawson and R. J. Hanson, "Solving Least Squares Problems",
   Prentice-Hall, 1974, ch. 23 (least distance programming via NNLS).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from structperc.binary._validation import (
    check_fraction,
    check_matrix,
    check_positive,
    check_vector,
)
from structperc.binary.separators import HardMargin, as_data, gram_embedding, hard_margin, is_separable, soft_separator

__all__ = [
    "HardMargin",
    "LiftingBound",
    "NovikoffBound",
    "best_lifting",
    "gram_embedding",
    "hard_margin",
    "is_separable",
    "lifting",
    "lifting_bound",
    "lifting_slacks",
    "margin",
    "margin_perceptron_bound",
    "novikoff",
    "novikoff_bound",
    "radius",
    "soft_separator",
]


class NovikoffBound(NamedTuple):
    """``r``, ``rho`` and the Novikoff bound ``r**2 / rho**2`` (inf if ``rho <= 0``)."""

    r: float
    rho: float
    bound: float


class LiftingBound(NamedTuple):
    """Quantities of the lifting argument for one reference ``(v, rho)``.

    ``lifted_margin`` is the margin ``rho / sqrt(1 + delta^2 / A^2)`` that the
    lifted points are guaranteed to have, and ``bound`` the resulting bound
    ``(r^2 + A^2)(1 + delta^2 / A^2) / rho^2``, which equals
    ``(r + delta)^2 / rho^2`` for the optimal ``A^2 = r delta``.
    """

    r: float
    rho: float
    delta: float
    A: float
    lifted_margin: float
    bound: float


def radius(X: ArrayLike) -> float:
    """``r = max_i ||x_i||``, the radius of the smallest origin-centred ball holding the data.

    Examples
    --------
    >>> radius([[3.0, 4.0], [1.0, 0.0]])
    5.0
    """
    X = check_matrix(X)
    return float(np.sqrt(np.einsum("ij,ij->i", X, X).max()))


def margin(X: ArrayLike, y: ArrayLike, v: ArrayLike) -> float:
    """``rho = min_i y_i v . x_i / ||v||``: the margin of the direction ``v``.

    ``v`` is normalised first, so only its direction matters.  A positive
    value means ``v`` separates the data; the margin is then the distance
    from the hyperplane ``v . x = 0`` to the closest point.

    Examples
    --------
    >>> margin([[1.0, 0.0], [0.0, 1.0]], [1, -1], [3.0, -4.0])
    0.6
    """
    X, y = as_data(X, y)
    v = check_vector(v, X.shape[1])
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        raise ValueError("v must be non-zero")
    return float((y * (X @ v)).min() / norm)


def novikoff_bound(r: float, rho: float) -> float:
    """``r^2 / rho^2``, or ``inf`` when ``rho <= 0`` (no separation, no bound).

    Why it holds: after ``T`` updates from ``w = 0``, ``v . w >= T eta rho``
    (each update gains at least ``eta rho`` along ``v``) while
    ``||w||^2 <= T eta^2 r^2`` (an update happens only when ``y w . x <= 0``,
    so the cross term is never positive).  Cauchy-Schwarz gives
    ``T eta rho <= sqrt(T) eta r``, i.e. ``T <= r^2 / rho^2``; ``eta`` cancels.

    Examples
    --------
    >>> novikoff_bound(1.0, 0.5)
    4.0
    """
    return math.inf if rho <= 0 else (r / rho) ** 2


def novikoff(X: ArrayLike, y: ArrayLike, v: ArrayLike) -> NovikoffBound:
    """Novikoff's bound for the points ``X`` and the reference direction ``v``.

    Returns ``(r, rho, r**2 / rho**2)`` with ``rho = margin(X, y, v)``; the
    bound is ``inf`` when ``v`` does not separate the data.  The smallest
    bound over all ``v`` uses the hard-margin separator (:func:`hard_margin`).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.eye(4)
    >>> y = np.array([1, -1, 1, 1])
    >>> novikoff(X, y, y / 2.0)
    NovikoffBound(r=1.0, rho=0.5, bound=4.0)
    """
    X, y = as_data(X, y)
    r, rho = radius(X), margin(X, y, v)
    return NovikoffBound(r, rho, novikoff_bound(r, rho))


def margin_perceptron_bound(r: float, rho: float, k: float) -> float:
    """``4 r^2 / ((1 - k)^2 rho^2)`` for the margin perceptron with threshold ``k rho``.

    Why it holds: as for Novikoff, ``||w_T|| >= v . w_T >= T eta rho``.  An
    update happens only when ``y w . x < k rho ||w||``, so
    ``||w + eta y x|| <= ||w|| + eta k rho + eta^2 r^2 / (2 ||w||)``: once
    ``||w|| >= 2 eta r^2 / ((1 - k) rho)`` each update adds at most
    ``eta rho (1 + 3k) / 4`` to the norm, and before that point an update adds
    at most ``eta r``.  Comparing the two growth rates gives
    ``T <= 8 r^2 / (3 (1-k)^2 rho^2) + 4 r / (3 (1-k) rho)``, which is at most
    ``4 r^2 / ((1 - k)^2 rho^2)`` because ``r >= rho`` and ``k < 1``.

    Examples
    --------
    >>> margin_perceptron_bound(1.0, 0.5, 0.5)
    64.0
    """
    k = check_fraction(k, "k")
    return math.inf if rho <= 0 else 4.0 * r**2 / ((1.0 - k) ** 2 * rho**2)


def lifting_slacks(X: ArrayLike, y: ArrayLike, v: ArrayLike, rho: float) -> NDArray[np.float64]:
    """``eps_i = max(0, rho - y_i v . x_i)``: how far each point falls short of margin ``rho``.

    ``v`` is used as given (not normalised) and must satisfy ``||v|| <= 1``.

    Examples
    --------
    >>> lifting_slacks([[1.0], [0.2], [-1.0]], [1, 1, 1], [1.0], 0.5)
    array([0. , 0.3, 1.5])
    """
    X, y = as_data(X, y)
    v = _check_short_vector(v, X.shape[1])
    rho = check_positive(rho, "rho")
    return np.maximum(0.0, rho - y * (X @ v))


def _check_short_vector(v: ArrayLike, n_features: int) -> NDArray[np.float64]:
    v = check_vector(v, n_features)
    if np.linalg.norm(v) > 1.0 + 1e-9:
        raise ValueError(f"v must have norm <= 1 (a unit vector), got norm {np.linalg.norm(v):.6g}")
    return v


def lifting_bound(r: float, rho: float, delta: float, A: float | None = None) -> float:
    """Update bound on the lifted data: ``(r^2 + A^2)(1 + delta^2 / A^2) / rho^2``.

    With ``A=None`` the minimising ``A^2 = r delta`` is used and the bound is
    ``(r + delta)^2 / rho^2``.  ``delta = 0`` (``v`` already has margin
    ``rho``) gives Novikoff's ``r^2 / rho^2`` for every ``A``.

    Examples
    --------
    >>> lifting_bound(1.0, 0.5, 1.0)
    16.0
    """
    if rho <= 0:
        return math.inf
    if A is None:
        return (r + delta) ** 2 / rho**2
    if delta == 0:
        return (r**2 + A**2) / rho**2
    if A == 0:
        return math.inf
    return (r**2 + A**2) * (1.0 + delta**2 / A**2) / rho**2


def lifting(X: ArrayLike, y: ArrayLike, v: ArrayLike, rho: float,
            A: float | None = None) -> LiftingBound:
    """The lifting argument of Freund & Schapire (1999) for a reference ``(v, rho)``.

    Non-separable data cannot have a Novikoff bound, but the lifted points
    ``(x_i, A e_i)`` are always separable: ``v' = (v, (y_i eps_i / A)_i)``
    satisfies ``y_i v' . x_i' = y_i v . x_i + eps_i >= rho`` and
    ``||v'||^2 <= 1 + delta^2 / A^2``.  With ``||x_i'||^2 <= r^2 + A^2``
    Novikoff's theorem bounds the updates on the lifted data by
    ``(r^2 + A^2)(1 + delta^2 / A^2) / rho^2``, minimised by ``A^2 = r delta``
    (the default) where it equals ``(r + delta)^2 / rho^2``.

    Parameters
    ----------
    X : array-like of shape (m, d)
        The points (use ``homogeneous(X)`` for a perceptron with a bias).
    y : array-like of shape (m,)
        Labels in {+1, -1}.
    v : array-like of shape (d,)
        Reference vector with ``||v|| <= 1``.
    rho : float
        Target margin, > 0.
    A : float, optional
        Lifting scale; default ``sqrt(r * delta)``.

    Examples
    --------
    >>> lb = lifting([[1.0], [-0.5]], [1, 1], [1.0], 0.5)
    >>> lb.delta, lb.A, lb.bound
    (1.0, 1.0, 16.0)
    """
    X, y = as_data(X, y)
    eps = lifting_slacks(X, y, v, rho)
    r = radius(X)
    delta = float(np.linalg.norm(eps))
    if A is None:
        A_val = math.sqrt(r * delta)
    else:
        A_val = check_positive(A, "A", allow_zero=True)
    if delta == 0:
        lifted = rho
    elif A_val == 0:
        lifted = 0.0
    else:
        lifted = rho / math.sqrt(1.0 + delta**2 / A_val**2)
    return LiftingBound(r, float(rho), delta, A_val, lifted,
                        lifting_bound(r, rho, delta, None if A is None else A_val))


def best_lifting(X: ArrayLike, y: ArrayLike,
                 rhos: ArrayLike | None = None) -> tuple[NDArray[np.float64], LiftingBound]:
    """The reference ``(v, rho)`` with the smallest lifting bound on a grid of ``rho``.

    For each ``rho`` (default: 31 values from ``r / 1000`` to ``r``, geometric)
    the best ``v`` comes from :func:`soft_separator`; returns ``(v, bound)``
    for the smallest ``(r + delta)^2 / rho^2``.

    Examples
    --------
    >>> v, lb = best_lifting([[1.0], [-1.0], [0.5]], [1, 1, -1])
    >>> lb.bound < 40
    True
    """
    X, y = as_data(X, y)
    r = radius(X)
    grid = r * np.geomspace(1e-3, 1.0, 31) if rhos is None else np.asarray(rhos, dtype=float)
    if grid.ndim != 1 or grid.size == 0 or not (np.isfinite(grid).all() and (grid > 0).all()):
        raise ValueError("rhos must be a non-empty 1-D array of positive numbers")
    best: tuple[NDArray[np.float64], LiftingBound] | None = None
    for rho in grid:
        v, _ = soft_separator(X, y, float(rho))
        lb = lifting(X, y, v, float(rho))
        if best is None or lb.bound < best[1].bound:
            best = (v, lb)
    assert best is not None
    return best
