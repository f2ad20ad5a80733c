"""Explicit feature maps used by the theory: the homogeneous form and the lifting.

Why they are explicit functions: both maps are *proof devices* -- the bias
disappears into an extra coordinate, non-separable data becomes separable in
a bigger space -- and the tests check the theory on exactly these matrices.
The estimators apply the same maps (or, for the dual lifting, their Gram
matrices) so that bounds computed on ``homogeneous(X)`` or ``lift(X, A)``
describe precisely the runs the estimators make.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from structperc.binary._validation import check_matrix, check_positive


def homogeneous(X: ArrayLike) -> NDArray[np.float64]:
    """Append a constant 1 to every point: ``x -> (x, 1)``.

    A separator ``(w, b)`` of ``X`` is then the homogeneous separator
    ``(w, b) . (x, 1)`` of the mapped points, so a perceptron without a bias
    learns the bias as the last weight.  Bounds for a perceptron fitted with
    ``fit_intercept=True`` must be computed on these points (``r`` grows
    because of the extra coordinate).

    Examples
    --------
    >>> homogeneous([[2.0, 3.0]])
    array([[2., 3., 1.]])
    """
    X = check_matrix(X)
    return np.hstack([X, np.ones((X.shape[0], 1))])


def lift(X: ArrayLike, A: float) -> NDArray[np.float64]:
    """Give every point its own extra coordinate: ``x_i -> (x_i, A e_i)``.

    The lifted points live in ``R^(d + m)`` for ``m`` points.  Whatever the
    labels, they are linearly separable for ``A > 0`` (Freund & Schapire,
    1999): with the slacks ``eps_i = max(0, rho - y_i v . x_i)`` of any unit
    ``v`` the vector ``(v, (y_1 eps_1, ..., y_m eps_m) / A)`` separates them
    with normalised margin ``rho / sqrt(1 + delta^2 / A^2)``, ``delta = ||eps||``.

    Examples
    --------
    >>> lift([[1.0], [2.0]], 3.0)
    array([[1., 3., 0.],
           [2., 0., 3.]])
    """
    X = check_matrix(X)
    A = check_positive(A, "A", allow_zero=True)
    return np.hstack([X, A * np.eye(X.shape[0])])
