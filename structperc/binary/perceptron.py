"""The primal perceptron of Rosenblatt (1958)."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from structperc.binary._base import BinaryEstimatorBase, LinearModelMixin
from structperc.binary._engine import MistakeRule, train_primal
from structperc.binary.transforms import homogeneous

RandomState = int | np.random.Generator | np.random.SeedSequence | None


class Perceptron(LinearModelMixin, BinaryEstimatorBase):
    """Rosenblatt's perceptron on an explicit weight vector.

    Starting from ``w = 0``, every epoch visits the training points (in a
    fresh random order unless ``shuffle=False``) and, whenever
    ``y_i w . x_i <= 0``, updates ``w += eta * y_i * x_i``.  It stops after
    the first epoch without a mistake or after ``max_epochs`` epochs.

    Why the theory applies unchanged: with ``fit_intercept=True`` the bias is
    learned in the homogeneous form ``x -> (x, 1)``, so the run is a
    bias-free perceptron on ``homogeneous(X)`` and Novikoff's theorem bounds
    its number of updates by ``r^2 / rho^2`` computed on those points
    (:func:`structperc.binary.bounds.novikoff`).  Because ``w`` starts at 0,
    ``eta`` only rescales ``w``: the mistakes, their order and their count do
    not depend on it.

    Parameters
    ----------
    eta : float, default=1.0
        Step size (> 0).
    fit_intercept : bool, default=True
        Learn a bias through the homogeneous form ``(x, 1)``.
    max_epochs : int, default=1000
        Maximum number of passes over the data; hitting it raises a
        :class:`ConvergenceWarning`.
    shuffle : bool, default=True
        Visit a fresh random permutation each epoch; ``False`` cycles through
        the points in their given order.
    random_state : int, numpy Generator or None, default=None
        Seed of the ``numpy.random.default_rng`` that draws the permutations.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Weights ``w`` (without the bias coordinate).
    intercept_ : float
        Bias ``b`` (the last homogeneous weight; 0.0 without intercept).
    classes_ : ndarray of shape (2,)
        Original labels; ``classes_[0]`` is encoded -1 and ``classes_[1]`` +1.
    n_updates_ : int
        Number of updates (= mistakes) made during training.
    n_epochs_ : int
        Number of epochs run, including the final mistake-free one.
    converged_ : bool
        Whether the last epoch was mistake-free.
    mistakes_per_epoch_ : ndarray of shape (n_epochs_,)
        Number of mistakes in each epoch.
    update_indices_ : ndarray of shape (n_updates_,)
        Index of the training point behind each update, in order.
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    DualPerceptron : the same algorithm in dual form, with kernels.
    MarginPerceptron : keeps updating until a margin is reached.

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
    >>> from structperc.binary import Perceptron, bounds
    >>> from structperc.binary.transforms import homogeneous
    >>> X = np.array([[2.0, 1.0], [1.0, 3.0], [-1.0, -2.0], [-2.0, 0.5]])
    >>> y = np.array([1, 1, -1, -1])
    >>> clf = Perceptron(random_state=0).fit(X, y)
    >>> clf.predict(X)
    array([ 1,  1, -1, -1])
    >>> hm = bounds.hard_margin(homogeneous(X), y)
    >>> clf.n_updates_ <= bounds.novikoff(homogeneous(X), y, hm.v).bound
    True
    """

    def __init__(
        self,
        *,
        eta: float = 1.0,
        fit_intercept: bool = True,
        max_epochs: int = 1000,
        shuffle: bool = True,
        random_state: RandomState = None,
    ) -> None:
        self.eta = eta
        self.fit_intercept = fit_intercept
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state

    def fit(self, X: ArrayLike, y: ArrayLike) -> "Perceptron":
        """Train on ``X`` (n_samples, n_features) with two-class labels ``y``.

        Raises ``ValueError`` for NaN/inf, mismatched or empty inputs, labels
        that are not two classes, and invalid hyper-parameters.
        """
        eta, max_epochs, fit_intercept, shuffle = self._check_common_params()
        X, signs, classes = self._validate_data(X, y)
        Xh = homogeneous(X) if fit_intercept else X
        w, log = train_primal(Xh, signs, eta=eta, max_epochs=max_epochs, shuffle=shuffle,
                              random_state=self.random_state, rule=MistakeRule(),
                              what=type(self).__name__)
        self._set_weights(w, X.shape[1], fit_intercept)
        self._store_log(log, X.shape[1], classes)
        return self


__all__ = ["Perceptron", "RandomState"]

