"""Separators of binary data: whether a separating hyperplane exists (a linear program), the
hard-margin unit separator and its margin rho* (least-distance programming, Lawson & Hanson 1974,
ch. 23), the soft separator behind the lifting bound, and the points of a Gram matrix. The bounds in
`structperc.binary.bounds` are stated against these references.
"""
from __future__ import annotations

from typing import NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog, minimize, nnls

from structperc.binary._validation import (
    check_matrix,
    check_positive,
    check_signs,
)


class HardMargin(NamedTuple):
    """The maximum-margin unit separator ``v`` and its margin ``rho``."""

    v: NDArray[np.float64]
    rho: float


def as_data(X: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    X = check_matrix(X)
    return X, check_signs(y, X.shape[0])



def is_separable(X: ArrayLike, y: ArrayLike) -> bool:
    """Whether some ``w`` has ``y_i w . x_i > 0`` for every ``i`` (homogeneous separability).

    Solved as the linear feasibility problem ``y_i w . x_i >= 1`` (any strict
    separator can be scaled to satisfy it) with ``scipy.optimize.linprog``.

    Examples
    --------
    >>> is_separable([[1.0, 1.0], [-1.0, -1.0]], [1, -1])
    True
    >>> is_separable([[1.0, 0.0], [2.0, 0.0]], [1, -1])
    False
    """
    X, y = as_data(X, y)
    return _lp_separator(X, y) is not None


def _lp_separator(X: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.float64] | None:
    Z = y[:, None] * X
    res = linprog(np.zeros(X.shape[1]), A_ub=-Z, b_ub=-np.ones(X.shape[0]),
                  bounds=[(None, None)] * X.shape[1], method="highs")
    return res.x if res.status == 0 else None


def hard_margin(X: ArrayLike, y: ArrayLike) -> HardMargin | None:
    """The maximum-margin homogeneous separator, or ``None`` if the data is not separable.

    Solves ``min ||w||`` subject to ``y_i w . x_i >= 1``; then ``v = w / ||w||``
    and ``rho* = 1 / ||w||``.  This is a least-distance programme, solved
    exactly (finite active-set steps) through non-negative least squares as
    in Lawson & Hanson (1974), with an SLSQP polish as a fallback.  The
    returned ``rho`` is recomputed as ``min_i y_i v . x_i`` so that it is
    always a true margin of the returned ``v``.

    Examples
    --------
    >>> import numpy as np
    >>> hm = hard_margin(np.eye(4), [1, -1, -1, 1])
    >>> round(hm.rho, 12), hm.v.round(3)
    (0.5, array([ 0.5, -0.5, -0.5,  0.5]))
    >>> hard_margin([[1.0], [1.0]], [1, -1]) is None
    True
    """
    X, y = as_data(X, y)
    w0 = _lp_separator(X, y)
    if w0 is None:
        return None
    Z = y[:, None] * X
    w = _least_distance(Z)
    if w is None or (Z @ w).min() < 1.0 - 1e-7:
        w = _slsqp_hard_margin(Z, w0)
    v = w / np.linalg.norm(w)
    rho = float((Z @ v).min())
    if rho <= 0:  # pragma: no cover - numerically degenerate data
        v = w0 / np.linalg.norm(w0)
        rho = float((Z @ v).min())
    return HardMargin(v, rho)


def _least_distance(Z: NDArray[np.float64]) -> NDArray[np.float64] | None:
    m, d = Z.shape
    E = np.vstack([Z.T, np.ones((1, m))])
    f = np.zeros(d + 1)
    f[-1] = 1.0
    try:
        u, _ = nnls(E, f, maxiter=100 * (m + d + 1))
    except RuntimeError:
        return None
    res = E @ u - f
    if not np.isfinite(res).all() or abs(res[-1]) < 1e-14:
        return None
    return -res[:d] / res[-1]


def _slsqp_hard_margin(Z: NDArray[np.float64], w0: NDArray[np.float64]) -> NDArray[np.float64]:
    result = minimize(
        lambda w: 0.5 * w @ w, w0, jac=lambda w: w, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda w: Z @ w - 1.0, "jac": lambda w: Z}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    return result.x if (Z @ result.x).min() > 0 else w0


def gram_embedding(G: ArrayLike) -> NDArray[np.float64]:
    """Points ``Phi`` (rows) whose inner products reproduce the Gram matrix: ``Phi Phi^T = G``.

    Why: the bounds are stated for points, but a kernel perceptron only has
    a Gram matrix.  On a finite training set the kernel's feature space can
    be replaced by the span of the training points, whose coordinates come
    from the eigendecomposition ``G = U diag(s) U^T``: ``Phi = U sqrt(s)``.
    Radius, margins and the hard-margin separator of ``Phi`` are those of the
    kernel feature space.  Tiny negative eigenvalues (round-off) are dropped.

    Examples
    --------
    >>> import numpy as np
    >>> G = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> Phi = gram_embedding(G)
    >>> np.allclose(Phi @ Phi.T, G)
    True
    """
    G = check_matrix(G, name="G")
    if G.shape[0] != G.shape[1]:
        raise ValueError(f"G must be square, got shape {G.shape}")
    G = cast("NDArray[np.float64]", 0.5 * (G + G.T))  # numpy's stubs type the product as Any
    s, U = np.linalg.eigh(G)
    keep = s > max(s.max(), 0.0) * G.shape[0] * np.finfo(float).eps
    if not keep.any():
        return np.zeros((G.shape[0], 1))
    return U[:, keep] * np.sqrt(s[keep])


def soft_separator(X: ArrayLike, y: ArrayLike, rho: float) -> tuple[NDArray[np.float64], float]:
    """The ``v`` with ``||v|| <= 1`` that minimises ``delta = ||eps||`` for margin ``rho``.

    Minimises the convex squared hinge ``sum_i max(0, rho - y_i v . x_i)^2``
    over the unit ball with SLSQP, which makes the lifting bound
    ``(r + delta)^2 / rho^2`` as small as possible for this ``rho``.  Returns
    ``(v, delta)``, ``delta`` recomputed exactly for the returned ``v``.

    Examples
    --------
    Here the squared hinge is ``(0.5 - v)^2 + (0.5 + v)^2 + (0.5 + 0.5 v)^2``,
    minimised at ``v = -1/9``:

    >>> v, delta = soft_separator([[1.0], [-1.0], [0.5]], [1, 1, -1], 0.5)
    >>> v.round(4), round(delta, 4)
    (array([-0.1111]), 0.8498)
    """
    X, y = as_data(X, y)
    rho = check_positive(rho, "rho")
    Z = y[:, None] * X

    def objective(v):
        gap = np.maximum(0.0, rho - Z @ v)
        return gap @ gap, -2.0 * (gap @ Z)

    result = minimize(
        objective, np.zeros(X.shape[1]), jac=True, method="SLSQP",
        constraints=[{"type": "ineq", "fun": lambda v: 1.0 - v @ v, "jac": lambda v: -2.0 * v}],
        options={"ftol": 1e-12, "maxiter": 500},
    )
    v = result.x / max(1.0, float(np.linalg.norm(result.x)))
    return v, float(np.linalg.norm(np.maximum(0.0, rho - Z @ v)))

