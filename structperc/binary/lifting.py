"""The perceptron on lifted data, for training sets that are not separable."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from structperc.binary import bounds
from structperc.binary._base import BinaryEstimatorBase, KernelExpansionMixin
from structperc.binary._engine import MistakeRule, train_dual, train_primal
from structperc.binary._validation import check_positive, check_vector
from structperc.binary.dual import homogeneous_gram
from structperc.binary.gram import KernelSpec, resolve_kernel
from structperc.binary.perceptron import RandomState
from structperc.binary.transforms import homogeneous, lift

FORMS = ("implicit", "explicit")


class LiftedPerceptron(KernelExpansionMixin, BinaryEstimatorBase):
    """Perceptron on the lifted points ``x_i -> (x_i, A e_i)``, which are always separable.

    Why: on non-separable data the plain perceptron never stops and no
    Novikoff bound exists.  Giving each training point a private coordinate
    of size ``A`` makes any labelling separable (Freund & Schapire, 1999).
    For a reference unit vector ``v`` and margin ``rho`` with slacks
    ``eps_i = max(0, rho - y_i v . x_i)`` and ``delta = ||eps||``, the lifted
    data has margin ``rho / sqrt(1 + delta^2 / A^2)`` and, with
    ``A^2 = r delta``, the perceptron on it makes at most
    ``(r + delta)^2 / rho^2`` updates -- a bound that degrades gracefully
    with the total shortfall ``delta`` instead of not existing.

    Two equivalent forms make exactly the same updates:

    * ``form="explicit"`` builds the ``m`` extra columns
      (:func:`structperc.binary.transforms.lift`) and runs the primal
      perceptron on them (linear kernel only);
    * ``form="implicit"`` never builds them: the lifted Gram matrix is
      ``K'(i, j) = K(i, j) + A^2 [i = j]``, so it runs the dual perceptron on
      ``K + A^2 I`` -- with any kernel.

    The extra coordinates belong to the training examples only: a new point
    (even a copy of a training point) has zero there, so
    ``decision_function`` is the kernel expansion on the original features.

    Parameters
    ----------
    A : float or None, default=None
        Lifting scale (>= 0).  ``None`` uses ``sqrt(r delta)`` when ``rho`` is
        given and ``r`` otherwise (for every ``(v, rho)`` the bound with
        ``A = r`` is within a factor 2 of the optimal ``(r + delta)^2 / rho^2``).
    v : array-like or None, default=None
        Reference vector with ``||v|| <= 1`` in the homogeneous space
        (``n_features + 1`` entries when ``fit_intercept``, bias last); linear
        kernel only.  Requires ``rho``.
    rho : float or None, default=None
        Reference margin.  Without ``v`` the best ``v`` for this ``rho`` is
        computed (:func:`structperc.binary.bounds.soft_separator`).
    form : {"implicit", "explicit"}, default="implicit"
        Dual form on ``K + A^2 I`` or primal form on the lifted columns.
    kernel, degree, gamma, coef0
        As in :class:`DualPerceptron`.
    eta, fit_intercept, max_epochs, shuffle, random_state
        As in :class:`Perceptron`.

    Attributes
    ----------
    A_ : float
        The lifting scale used.
    radius_ : float
        ``r``, radius of the homogeneous (feature-space) training points.
    rho_, delta_, bound_ : float or None
        Reference margin, slack norm and update bound
        ``(r^2 + A^2)(1 + delta^2/A^2) / rho^2`` (``(r + delta)^2 / rho^2``
        for the default ``A``); ``None`` when no ``rho`` was given.
    v_ : ndarray or None
        Reference vector used (coordinates of ``homogeneous(X)`` for the
        linear kernel, of ``gram_embedding`` of the Gram matrix otherwise).
    slack_coef_ : ndarray of shape (n_samples,)
        Weights on the ``m`` lifted coordinates, ``A * alpha_i * y_i``.
    dual_coef_, support_, X_fit_, y_fit_, intercept_, coef_, kernel_
        As in :class:`DualPerceptron` (the original-feature part).
    classes_, n_updates_, n_epochs_, converged_, mistakes_per_epoch_, \
update_indices_, n_features_in_
        As in :class:`Perceptron`.

    References
    ----------
    .. [1] F. Rosenblatt, "The perceptron: a probabilistic model for
       information storage and organization in the brain", Psychological
       Review 65(6):386-408, 1958.
    .. [2] A. B. J. Novikoff, "On convergence proofs on perceptrons",
       Symposium on the Mathematical Theory of Automata 12:615-622, 1962.
    .. [3] Y. Freund and R. E. Schapire, "Large margin classification using
       the perceptron algorithm", Machine Learning 37(3):277-296, 1999.

    Examples
    --------
    A point on the wrong side makes the data non-separable; lifting still
    converges, within the bound:

    >>> import numpy as np
    >>> from structperc.binary import LiftedPerceptron
    >>> X = np.array([[2.0], [1.0], [-1.0], [-2.0], [1.5]])
    >>> y = np.array([1, 1, -1, -1, -1])
    >>> clf = LiftedPerceptron(v=[1.0], rho=1.0, fit_intercept=False, random_state=0).fit(X, y)
    >>> clf.converged_, clf.n_updates_ <= clf.bound_
    (True, True)
    """

    def __init__(
        self,
        *,
        A: float | None = None,
        v: ArrayLike | None = None,
        rho: float | None = None,
        form: str = "implicit",
        kernel: KernelSpec = "linear",
        degree: int = 3,
        gamma: float | None = None,
        coef0: float = 1.0,
        eta: float = 1.0,
        fit_intercept: bool = True,
        max_epochs: int = 1000,
        shuffle: bool = True,
        random_state: RandomState = None,
    ) -> None:
        self.A = A
        self.v = v
        self.rho = rho
        self.form = form
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.eta = eta
        self.fit_intercept = fit_intercept
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state

    def _reference(self, G: NDArray[np.float64], points: NDArray[np.float64] | None,
                   signs: NDArray[np.float64]) -> tuple[float, bounds.LiftingBound | None,
                                                        NDArray[np.float64] | None]:
        """Resolve ``A`` and the reference ``(v, rho)``; return ``(A, bound, v)``.

        ``points`` are the homogeneous training points for the linear kernel and
        ``None`` for other kernels (then the Gram matrix is embedded).
        """
        A = None if self.A is None else check_positive(self.A, "A", allow_zero=True)
        if self.rho is None:
            if self.v is not None:
                raise ValueError("v is a reference separator for a margin: pass rho as well")
            return (math.sqrt(float(np.max(np.diag(G)))) if A is None else A), None, None
        rho = check_positive(self.rho, "rho")
        if self.v is not None:
            if points is None:
                raise ValueError("v can only be given with the linear kernel; pass rho alone "
                                 "to let the best v be computed in the kernel's feature space")
            v = check_vector(self.v, points.shape[1])
        else:
            if points is None:
                points = bounds.gram_embedding(G)
            v, _ = bounds.soft_separator(points, signs, rho)
        ref = bounds.lifting(points, signs, v, rho, A=A)
        return ref.A, ref, v

    def fit(self, X: ArrayLike, y: ArrayLike) -> "LiftedPerceptron":
        """Train on ``X`` (n_samples, n_features) with two-class labels ``y``.

        Raises ``ValueError`` for bad data, labels or hyper-parameters.
        """
        eta, max_epochs, fit_intercept, shuffle = self._check_common_params()
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {self.form!r}")
        X, signs, classes = self._validate_data(X, y)
        kernel = resolve_kernel(self.kernel, degree=self.degree, gamma=self.gamma,
                                coef0=self.coef0, n_features=X.shape[1])
        if self.form == "explicit" and not kernel.is_linear:
            raise ValueError("form='explicit' builds the lifted columns and needs the linear "
                             "kernel; use form='implicit' with other kernels")
        G = homogeneous_gram(kernel, X, fit_intercept)
        points = (homogeneous(X) if fit_intercept else X) if kernel.is_linear else None
        A, ref, v = self._reference(G, points, signs)
        n = X.shape[0]
        common: dict[str, Any] = dict(eta=eta, max_epochs=max_epochs, shuffle=shuffle,
                                      random_state=self.random_state, rule=MistakeRule(),
                                      what=type(self).__name__)
        if self.form == "explicit":
            assert points is not None  # explicit form implies the linear kernel
            lifted = lift(points, A)
            w, log = train_primal(lifted, signs, **common)
            slack = w[lifted.shape[1] - n:].copy()
            alpha = eta * np.bincount(log.update_indices, minlength=n).astype(np.float64)
        else:
            alpha, log = train_dual(G + A**2 * np.eye(n), signs, **common)
            slack = A * alpha * signs
        self._set_expansion(X, signs, alpha, kernel, fit_intercept)
        self.A_ = A
        self.radius_ = math.sqrt(float(np.max(np.diag(G))))
        self.rho_ = None if ref is None else ref.rho
        self.delta_ = None if ref is None else ref.delta
        self.bound_ = None if ref is None else ref.bound
        self.v_ = v
        self.slack_coef_ = slack
        self._store_log(log, X.shape[1], classes)
        return self


__all__ = ["LiftedPerceptron"]
