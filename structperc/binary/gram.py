"""Kernel functions for the dual (and lifted) perceptron.

Why kernels fit the perceptron: the dual perceptron touches the data only
through inner products, since ``w = sum_j alpha_j y_j x_j`` gives
``w . x = sum_j alpha_j y_j <x_j, x>``.  Replacing ``<x_j, x>`` by a positive
semi-definite kernel ``K(x_j, x)`` runs the very same algorithm in the
kernel's feature space without ever building that space, and the Novikoff
bound still holds there with ``r = max_i sqrt(K(x_i, x_i))``.

All kernels take two matrices ``X`` (n, d) and ``Z`` (m, d) and return the
(n, m) matrix of ``K(x_i, z_j)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Union

import numpy as np
from numpy.typing import NDArray
from scipy.spatial.distance import cdist

from structperc.binary._validation import check_count, check_positive

KernelFunction = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]
KernelSpec = Union[str, KernelFunction]

KERNEL_NAMES = ("linear", "poly", "rbf")


def linear_kernel(X: NDArray[np.float64], Z: NDArray[np.float64]) -> NDArray[np.float64]:
    """``K(x, z) = x . z``, the plain inner product.

    Examples
    --------
    >>> import numpy as np
    >>> linear_kernel(np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]))
    array([[11.]])
    """
    return X @ Z.T


def polynomial_kernel(
    X: NDArray[np.float64], Z: NDArray[np.float64], *, degree: int = 3, coef0: float = 1.0
) -> NDArray[np.float64]:
    """``K(x, z) = (x . z + coef0) ** degree``.

    With ``coef0 > 0`` the feature space holds every monomial of degree at
    most ``degree``, e.g. the product ``x1 * x2`` that separates XOR.

    Examples
    --------
    >>> import numpy as np
    >>> polynomial_kernel(np.array([[1.0, 1.0]]), np.array([[1.0, -1.0]]), degree=2)
    array([[1.]])
    """
    return (X @ Z.T + coef0) ** degree


def rbf_kernel(
    X: NDArray[np.float64], Z: NDArray[np.float64], *, gamma: float = 1.0
) -> NDArray[np.float64]:
    """``K(x, z) = exp(-gamma * ||x - z||^2)``.

    Its Gram matrix on distinct points is positive definite, so any labelling
    of distinct points is separable in the feature space and the dual
    perceptron always converges on it.

    Examples
    --------
    >>> import numpy as np
    >>> rbf_kernel(np.array([[0.0, 0.0]]), np.array([[1.0, 0.0]]), gamma=0.5).round(4)
    array([[0.6065]])
    """
    return np.exp(-gamma * cdist(X, Z, "sqeuclidean"))


@dataclass(frozen=True)
class ResolvedKernel:
    """A kernel with all of its parameters fixed; calling it gives a Gram matrix."""

    name: str
    degree: int
    gamma: float
    coef0: float
    function: KernelFunction | None = None

    def __call__(self, X: NDArray[np.float64], Z: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.name == "linear":
            K = linear_kernel(X, Z)
        elif self.name == "poly":
            K = polynomial_kernel(X, Z, degree=self.degree, coef0=self.coef0)
        elif self.name == "rbf":
            K = rbf_kernel(X, Z, gamma=self.gamma)
        else:
            assert self.function is not None
            K = np.asarray(self.function(X, Z), dtype=np.float64)
        if K.shape != (X.shape[0], Z.shape[0]):
            raise ValueError(
                f"kernel returned shape {K.shape}, expected {(X.shape[0], Z.shape[0])}"
            )
        if not np.isfinite(K).all():
            raise ValueError("kernel matrix contains NaN or infinity")
        return K

    @property
    def is_linear(self) -> bool:
        return self.name == "linear"


def resolve_kernel(
    kernel: KernelSpec, *, degree: int, gamma: float | None, coef0: float, n_features: int
) -> ResolvedKernel:
    """Validate kernel parameters and fix defaults (``gamma=None`` -> 1/n_features)."""
    if callable(kernel):
        return ResolvedKernel("callable", 0, 0.0, 0.0, kernel)
    if kernel not in KERNEL_NAMES:
        raise ValueError(f"kernel must be one of {KERNEL_NAMES} or a callable, got {kernel!r}")
    deg = check_count(degree, "degree")
    c0 = check_positive(coef0, "coef0", allow_zero=True)
    g = 1.0 / n_features if gamma is None else check_positive(gamma, "gamma")
    return ResolvedKernel(kernel, deg, g, c0)


def parse_kernel_spec(spec: str) -> dict[str, object]:
    """Parse a command-line kernel spec into estimator keyword arguments.

    ``"linear"``, ``"poly"``, ``"poly:DEGREE"``, ``"rbf"`` and ``"rbf:GAMMA"``
    are accepted; anything else raises ``ValueError``.

    Examples
    --------
    >>> parse_kernel_spec("poly:3")
    {'kernel': 'poly', 'degree': 3}
    >>> parse_kernel_spec("rbf:0.5")
    {'kernel': 'rbf', 'gamma': 0.5}
    """
    name, sep, arg = spec.strip().partition(":")
    name = name.strip().lower()
    if name not in KERNEL_NAMES:
        raise ValueError(f"unknown kernel {spec!r}; use linear, poly:DEGREE or rbf:GAMMA")
    if not sep:
        return {"kernel": name}
    if name == "linear":
        raise ValueError(f"the linear kernel takes no parameter, got {spec!r}")
    try:
        if name == "poly":
            degree = int(arg)
            check_count(degree, "degree")
            return {"kernel": name, "degree": degree}
        gamma = float(arg)
        check_positive(gamma, "gamma")
        return {"kernel": name, "gamma": gamma}
    except ValueError:
        what = "a positive integer degree" if name == "poly" else "a positive gamma"
        raise ValueError(f"bad kernel spec {spec!r}: expected {what} after ':'") from None
