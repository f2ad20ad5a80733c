"""The dual (kernel) perceptron."""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from structperc.binary._base import BinaryEstimatorBase, KernelExpansionMixin
from structperc.binary._engine import MistakeRule, train_dual
from structperc.binary.gram import KernelSpec, ResolvedKernel, resolve_kernel
from structperc.binary.perceptron import RandomState


def homogeneous_gram(kernel: ResolvedKernel, X: np.ndarray, fit_intercept: bool) -> np.ndarray:
    """Gram matrix of the training points, plus 1 everywhere for the bias coordinate.

    Why ``+ 1``: the primal perceptron learns its bias on ``(x, 1)``, whose
    inner products are ``x . x' + 1``.  Using the same homogeneous form in the
    dual keeps the two forms step-for-step identical for the linear kernel.
    """
    K = kernel(X, X)
    return K + 1.0 if fit_intercept else K


class DualPerceptron(KernelExpansionMixin, BinaryEstimatorBase):
    """The perceptron in dual form: one mistake count per training point.

    The weight vector is never stored: ``w = sum_j alpha_j y_j phi(x_j)``, so a
    mistake on point ``i`` (``y_i f(x_i) <= 0``) becomes ``alpha_i += eta`` and
    the score is ``f(x) = sum_j alpha_j y_j K(x_j, x) + b``.  The Gram matrix
    is computed once; each update then refreshes all training scores with one
    of its rows.  The bias uses the same homogeneous form as
    :class:`Perceptron` (``K + 1``, i.e. ``b += eta * y_i`` on each mistake),
    so with the linear kernel and the same ``random_state`` both forms make
    exactly the same mistakes in the same order.

    Why kernels: data that no hyperplane separates (XOR) is separable in the
    feature space of a polynomial or RBF kernel, and Novikoff's bound holds
    there with the feature-space radius and margin
    (see :func:`structperc.binary.bounds.gram_embedding`).

    Parameters
    ----------
    kernel : {"linear", "poly", "rbf"} or callable, default="linear"
        ``poly``: ``(x . z + coef0) ** degree``; ``rbf``:
        ``exp(-gamma ||x - z||^2)``; a callable maps ``(X, Z)`` to the
        ``(len(X), len(Z))`` kernel matrix.
    degree : int, default=3
        Degree of the polynomial kernel.
    gamma : float or None, default=None
        RBF width; ``None`` means ``1 / n_features``.
    coef0 : float, default=1.0
        Constant of the polynomial kernel (>= 0).
    eta : float, default=1.0
        Step size (> 0); the mistakes do not depend on it.
    fit_intercept : bool, default=True
        Learn a bias through the homogeneous form.
    max_epochs : int, default=1000
        Maximum number of epochs (then :class:`ConvergenceWarning`).
    shuffle : bool, default=True
        Visit a fresh random permutation each epoch.
    random_state : int, numpy Generator or None, default=None
        Seed of the permutations.

    Attributes
    ----------
    dual_coef_ : ndarray of shape (n_samples,)
        ``alpha``: ``eta`` times the number of mistakes made on each point.
    support_ : ndarray of int
        Indices of the points with ``alpha > 0``.
    X_fit_ : ndarray of shape (n_samples, n_features)
        The training points (needed to evaluate the kernel expansion).
    y_fit_ : ndarray of shape (n_samples,)
        Training labels as +1/-1.
    intercept_ : float
        Bias ``b = sum_j alpha_j y_j`` (0.0 without intercept).
    coef_ : ndarray of shape (n_features,)
        ``sum_j alpha_j y_j x_j``; only for the linear kernel.
    kernel_ : ResolvedKernel
        The kernel with its parameters fixed (``gamma`` resolved).
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
    XOR is not linearly separable, but it is with a degree-2 polynomial kernel:

    >>> import numpy as np
    >>> from structperc.binary import DualPerceptron
    >>> X = np.array([[1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, 1.0]])
    >>> y = np.array([1, 1, -1, -1])
    >>> clf = DualPerceptron(kernel="poly", degree=2, random_state=0).fit(X, y)
    >>> clf.converged_, clf.predict(X)
    (True, array([ 1,  1, -1, -1]))
    """

    def __init__(
        self,
        *,
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
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.eta = eta
        self.fit_intercept = fit_intercept
        self.max_epochs = max_epochs
        self.shuffle = shuffle
        self.random_state = random_state

    def _resolve_kernel(self, n_features: int) -> ResolvedKernel:
        return resolve_kernel(self.kernel, degree=self.degree, gamma=self.gamma,
                              coef0=self.coef0, n_features=n_features)

    def fit(self, X: ArrayLike, y: ArrayLike) -> "DualPerceptron":
        """Train on ``X`` (n_samples, n_features) with two-class labels ``y``.

        Raises ``ValueError`` for bad data, labels or hyper-parameters.
        """
        eta, max_epochs, fit_intercept, shuffle = self._check_common_params()
        X, signs, classes = self._validate_data(X, y)
        kernel = self._resolve_kernel(X.shape[1])
        G = homogeneous_gram(kernel, X, fit_intercept)
        alpha, log = train_dual(G, signs, eta=eta, max_epochs=max_epochs, shuffle=shuffle,
                                random_state=self.random_state, rule=MistakeRule(),
                                what=type(self).__name__)
        self._set_expansion(X, signs, alpha, kernel, fit_intercept)
        self._store_log(log, X.shape[1], classes)
        return self


__all__ = ["DualPerceptron", "homogeneous_gram"]
