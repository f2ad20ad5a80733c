"""Train one binary perceptron and put its update count beside the bound that applies.

Why a library function: the ``structperc binary`` command stays a thin layer
(parse options, read the file, print), and the same comparison is available
from Python.  Which bound applies depends on the algorithm:

* ``primal`` / ``dual``: Novikoff ``r^2 / rho*^2`` with the hard-margin
  separator of the (homogeneous, kernel feature-space) points, when they are
  separable; no bound otherwise;
* ``margin``: ``4 r^2 / ((1 - k)^2 rho^2)`` with ``rho`` given or ``rho*``;
* ``lifted``: ``(r + delta)^2 / rho^2`` for the reference ``(v, rho)`` --
  ``rho`` given (and the best ``v`` for it) or the best pair on a grid.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from structperc.binary import bounds
from structperc.binary._base import BinaryEstimatorBase
from structperc.binary._engine import ConvergenceWarning
from structperc.binary._validation import check_matrix, check_signs
from structperc.binary.dual import DualPerceptron, homogeneous_gram
from structperc.binary.gram import resolve_kernel
from structperc.binary.lifting import LiftedPerceptron
from structperc.binary.margin import MarginPerceptron
from structperc.binary.perceptron import Perceptron
from structperc.binary.transforms import homogeneous

ALGORITHMS = ("primal", "dual", "margin", "lifted")


@dataclass
class ExperimentResult:
    """A fitted estimator, its update count and the bound it is held to.

    ``bound`` is ``None`` when no bound applies (``note`` says why);
    ``quantities`` holds the ingredients of the bound (``r``, ``rho``, ...).
    """

    algorithm: str
    estimator: BinaryEstimatorBase
    n_updates: int
    n_epochs: int
    converged: bool
    bound: float | None
    bound_name: str
    quantities: dict[str, float] = field(default_factory=dict)
    note: str | None = None


def _margin(r: float, best: bounds.HardMargin | None, k: float, rho: float | None, common: dict,
            quantities: dict[str, float]) -> tuple[BinaryEstimatorBase, float | None, str | None]:
    """The margin perceptron at ``rho`` (default: the hard margin) and its bound, if one applies."""
    if rho is None:
        if best is None:
            raise ValueError("the data is not linearly separable: pass rho or use the lifted perceptron")
        rho = best.rho
    quantities.update(k=k, rho=rho)
    estimator = MarginPerceptron(k=k, rho=rho, **common)
    if best is None or rho > best.rho * (1 + 1e-9):
        return estimator, None, "no unit vector has margin rho on this data, so no bound applies"
    return estimator, bounds.margin_perceptron_bound(r, rho, k), None


def _lifted(points: np.ndarray, signs: np.ndarray, rho: float | None, kernel_args: dict, common: dict,
            quantities: dict[str, float]) -> tuple[BinaryEstimatorBase, float]:
    """The lifted perceptron for the reference ``(v, rho)`` with the smallest lifting bound (or at
    the given ``rho``), and that bound."""
    if rho is None:
        _, ref = bounds.best_lifting(points, signs)
    else:
        v, _ = bounds.soft_separator(points, signs, rho)
        ref = bounds.lifting(points, signs, v, rho)
    quantities.update(rho=ref.rho, delta=ref.delta, A=ref.A)
    return LiftedPerceptron(A=ref.A, **kernel_args, **common), ref.bound


def _points(X: np.ndarray, kern: Any, fit_intercept: bool) -> np.ndarray:
    """The points the theory talks about: homogeneous (with ``fit_intercept``), and in the kernel's
    feature space."""
    if kern.is_linear:
        return homogeneous(X) if fit_intercept else X
    return bounds.gram_embedding(homogeneous_gram(kern, X, fit_intercept))


def _novikoff(r: float, best: bounds.HardMargin | None) -> tuple[float | None, str | None]:
    """Novikoff's bound ``r^2 / rho*^2`` for separable points, or why none applies."""
    if best is None:
        return None, ("the points are not separable in this feature space, so no Novikoff bound "
                      "applies; the lifted perceptron has one")
    return bounds.novikoff_bound(r, best.rho), None


def run_experiment(
    X: ArrayLike,
    y: ArrayLike,
    *,
    algorithm: str = "primal",
    kernel: str = "linear",
    degree: int = 3,
    gamma: float | None = None,
    eta: float = 1.0,
    k: float = 0.5,
    rho: float | None = None,
    fit_intercept: bool = True,
    shuffle: bool = True,
    max_epochs: int = 1000,
    random_state: int | None = 0,
) -> ExperimentResult:
    """Fit ``algorithm`` on ``(X, y)`` (labels +1/-1) and compute the bound that applies.

    Raises ``ValueError`` for bad data or options, and for ``margin`` on data
    that is not separable when no ``rho`` is given.

    Examples
    --------
    >>> import numpy as np
    >>> res = run_experiment(np.eye(3), [1, -1, 1], fit_intercept=False)
    >>> res.n_updates, round(res.bound, 6), res.bound_name
    (3, 3.0, 'Novikoff r^2/rho*^2')
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    X = check_matrix(X)
    signs = check_signs(y, X.shape[0])
    kern = resolve_kernel(kernel, degree=degree, gamma=gamma, coef0=1.0, n_features=X.shape[1])
    if algorithm in ("primal", "margin") and not kern.is_linear:
        raise ValueError(f"the {algorithm} perceptron has no kernel; use the dual or lifted one")
    common: dict[str, Any] = dict(eta=eta, fit_intercept=fit_intercept, shuffle=shuffle,
                                  max_epochs=max_epochs, random_state=random_state)
    kernel_args: dict[str, Any] = dict(kernel=kern.name, degree=kern.degree, gamma=kern.gamma)
    points = _points(X, kern, fit_intercept)
    r = bounds.radius(points)
    quantities: dict[str, float] = {"r": r}
    note = None
    bound: float | None = None

    best = None if algorithm == "lifted" else bounds.hard_margin(points, signs)
    if best is not None:
        quantities["rho*"] = best.rho
    if algorithm in ("primal", "dual"):
        estimator: BinaryEstimatorBase = (
            Perceptron(**common) if algorithm == "primal"
            else DualPerceptron(**kernel_args, **common)
        )
        bound_name = "Novikoff r^2/rho*^2"
        bound, note = _novikoff(r, best)
    elif algorithm == "margin":
        estimator, bound, note = _margin(r, best, k, rho, common, quantities)
        bound_name = "margin 4r^2/((1-k)^2 rho^2)"
    else:
        estimator, bound = _lifted(points, signs, rho, kernel_args, common, quantities)
        bound_name = "lifting (r+delta)^2/rho^2"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        estimator.fit(X, signs)
    return ExperimentResult(
        algorithm=algorithm,
        estimator=estimator,
        n_updates=estimator.n_updates_,
        n_epochs=estimator.n_epochs_,
        converged=estimator.converged_,
        bound=bound,
        bound_name=bound_name,
        quantities=quantities,
        note=note,
    )


__all__ = ["ALGORITHMS", "ExperimentResult", "run_experiment"]
