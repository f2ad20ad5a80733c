"""The margin perceptron: keep updating until every point has margin ``k rho``."""
from __future__ import annotations

from numpy.typing import ArrayLike

from structperc.binary import bounds
from structperc.binary._base import BinaryEstimatorBase, LinearModelMixin
from structperc.binary._engine import MistakeRule, train_primal
from structperc.binary._validation import check_fraction, check_positive
from structperc.binary.perceptron import RandomState
from structperc.binary.transforms import homogeneous


class MarginPerceptron(LinearModelMixin, BinaryEstimatorBase):
    """Perceptron that also updates on correct points with a small normalised margin.

    A visit to point ``i`` triggers ``w += eta * y_i * x_i`` whenever
    ``w = 0`` or ``y_i w . x_i / ||w|| < k rho``.  Training stops after an
    epoch without such an update, so on convergence *every* training point
    has normalised margin at least ``k rho`` -- a fraction ``k`` of the margin
    the data is known to allow -- instead of merely being on the right side.

    Why it still terminates: if some unit ``v`` has margin ``rho`` the number
    of updates is at most ``4 r^2 / ((1 - k)^2 rho^2)``
    (:func:`structperc.binary.bounds.margin_perceptron_bound`), for any
    ``eta`` (the rule is scale-invariant, so ``eta`` does not change the run).
    The price of a larger ``k`` is the ``1 / (1 - k)^2`` factor.

    With ``fit_intercept=True`` the norm and the margins are those of the
    homogeneous vector ``(coef_, intercept_)`` on the points ``(x, 1)``.

    Parameters
    ----------
    k : float, default=0.5
        Fraction of ``rho`` to reach, in (0, 1).
    rho : float or None, default=None
        A margin some unit separator achieves; ``None`` computes the best one,
        ``rho*``, with :func:`structperc.binary.bounds.hard_margin` (and
        raises ``ValueError`` if the data is not linearly separable).
    eta, fit_intercept, max_epochs, shuffle, random_state
        As in :class:`Perceptron`.

    Attributes
    ----------
    rho_ : float
        The ``rho`` used.
    threshold_ : float
        ``k * rho_``, the normalised margin every point reaches on convergence.
    coef_, intercept_, classes_, n_updates_, n_epochs_, converged_, \
mistakes_per_epoch_, update_indices_, n_features_in_
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
    >>> import numpy as np
    >>> from structperc.binary import MarginPerceptron
    >>> X = np.array([[2.0, 1.0], [1.0, 3.0], [-1.0, -2.0], [-2.0, 0.5]])
    >>> y = np.array([1, 1, -1, -1])
    >>> clf = MarginPerceptron(k=0.5, fit_intercept=False, random_state=0).fit(X, y)
    >>> w = clf.coef_
    >>> bool((y * (X @ w) / np.linalg.norm(w) >= clf.threshold_).all())
    True
    """

    def __init__(
        self,
        *,
        k: float = 0.5,
        rho: float | None = None,
        eta: float = 1.0,
        fit_intercept: bool = True,
        max_epochs: int = 1000,
        shuffle: bool = True,
        random_state: RandomState = None,
    ) -> None:
        self.k = k
        self.rho = rho
        self.eta = eta
        self.fit_intercept = fit_intercept
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> "MarginPerceptron":
        """Train on ``X`` (n_samples, n_features) with two-class labels ``y``.

        Raises ``ValueError`` for bad data, labels or hyper-parameters, and
        when ``rho=None`` and the data is not linearly separable.
        """
        eta, max_epochs, fit_intercept, shuffle = self._check_common_params()
        k = check_fraction(self.k, "k")
        X, signs, classes = self._validate_data(X, y)
        Xh = homogeneous(X) if fit_intercept else X
        if self.rho is None:
            best = bounds.hard_margin(Xh, signs)
            if best is None:
                raise ValueError(
                    "the data is not linearly separable, so there is no margin rho to aim "
                    "for; pass rho=... explicitly or use LiftedPerceptron"
                )
            rho = best.rho
        else:
            rho = check_positive(self.rho, "rho")
        w, log = train_primal(Xh, signs, eta=eta, max_epochs=max_epochs, shuffle=shuffle,
                              random_state=self.random_state, rule=MistakeRule.margin(k * rho),
                              what=type(self).__name__)
        self.rho_ = rho
        self.threshold_ = k * rho
        self._set_weights(w, X.shape[1], fit_intercept)
        self._store_log(log, X.shape[1], classes)
        return self


__all__ = ["MarginPerceptron"]
