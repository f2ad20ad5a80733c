"""What every binary perceptron estimator shares, apart from the training loop.

Why a base module: scikit-learn conventions (keyword-only ``__init__`` that
only stores its arguments, ``get_params``/``set_params``, validation in
``fit``, fitted attributes ending in ``_``) and the label handling
(``classes_``, ``predict`` mapping signs back to the original labels) are
identical for the primal, dual, margin and lifted estimators.  The training
loop itself lives in :mod:`structperc.binary._engine`; here are only the
glue and the two ways to evaluate a fitted model -- an explicit weight
vector or a kernel expansion.
"""
from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from structperc.binary._engine import TrainingLog
from structperc.binary._validation import (
    NotFittedError,
    check_count,
    check_flag,
    check_matrix,
    check_positive,
    encode_labels,
)
from structperc.binary.gram import ResolvedKernel


class BinaryEstimatorBase:
    """Parameter handling, label encoding and ``predict`` for binary perceptrons."""

    # The constructor arguments every subclass stores (its ``__init__`` sets them).
    eta: float
    max_epochs: int
    fit_intercept: bool
    shuffle: bool

    if TYPE_CHECKING:
        # Each subclass defines ``fit``; declared here for callers holding the base type only.
        def fit(self, X: ArrayLike, y: ArrayLike) -> BinaryEstimatorBase: ...

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Constructor arguments as a dict (scikit-learn protocol, so ``clone`` works)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> "BinaryEstimatorBase":
        """Set constructor arguments; unknown names raise ``ValueError``."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if sig.parameters[name].default is inspect.Parameter.empty
            or not _same(value, sig.parameters[name].default)
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    # -- fitting helpers -------------------------------------------------------------------------

    def _check_common_params(self) -> tuple[float, int, bool, bool]:
        eta = check_positive(self.eta, "eta")
        max_epochs = check_count(self.max_epochs, "max_epochs")
        fit_intercept = check_flag(self.fit_intercept, "fit_intercept")
        shuffle = check_flag(self.shuffle, "shuffle")
        return eta, max_epochs, fit_intercept, shuffle

    @staticmethod
    def _validate_data(X: ArrayLike, y: ArrayLike) -> tuple[NDArray[np.float64],
                                                            NDArray[np.float64], NDArray[Any]]:
        """``(X, signs, classes)``: finite float matrix, labels as +1/-1, original classes."""
        X = check_matrix(X)
        signs, classes = encode_labels(y, X.shape[0])
        return X, signs, classes

    def _store_log(self, log: TrainingLog, n_features: int, classes: NDArray[Any]) -> None:
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.n_updates_ = log.n_updates
        self.n_epochs_ = log.n_epochs
        self.converged_ = log.converged
        self.mistakes_per_epoch_ = log.mistakes_per_epoch
        self.update_indices_ = log.update_indices

    # -- prediction ------------------------------------------------------------------------------

    def _check_predict_input(self, X: ArrayLike) -> NDArray[np.float64]:
        if not hasattr(self, "classes_"):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, y) first"
            )
        X = check_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} was fitted with "
                f"{self.n_features_in_}"
            )
        return X

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover
        raise NotImplementedError

    def predict(self, X: ArrayLike) -> NDArray[Any]:
        """Predicted class of each row of ``X``: ``classes_[1]`` where the score is > 0.

        A score of exactly 0 predicts ``classes_[0]`` (-1); the training rule
        counts such a point as a mistake for either label.
        """
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(np.intp)]

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """Mean accuracy of ``predict(X)`` against ``y``."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


class LinearModelMixin:
    """Evaluation through an explicit weight vector ``coef_`` and bias ``intercept_``."""

    coef_: NDArray[np.float64]
    intercept_: float

    if TYPE_CHECKING:
        # Provided by ``BinaryEstimatorBase``, which every user of this mixin also derives from.
        def _check_predict_input(self, X: ArrayLike) -> NDArray[np.float64]: ...

    def _set_weights(self, w: NDArray[np.float64], n_features: int, fit_intercept: bool) -> None:
        self.coef_ = w[:n_features].copy()
        self.intercept_ = float(w[n_features]) if fit_intercept else 0.0

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Signed score ``coef_ . x + intercept_`` of every row of ``X``."""
        X = self._check_predict_input(X)
        return X @ self.coef_ + self.intercept_


class KernelExpansionMixin:
    """Evaluation through the kernel expansion ``sum_j alpha_j y_j K(x_j, x) + b``."""

    dual_coef_: NDArray[np.float64]
    X_fit_: NDArray[np.float64]
    y_fit_: NDArray[np.float64]
    intercept_: float
    kernel_: ResolvedKernel

    if TYPE_CHECKING:
        # Provided by ``BinaryEstimatorBase``, which every user of this mixin also derives from.
        def _check_predict_input(self, X: ArrayLike) -> NDArray[np.float64]: ...

    def _set_expansion(self, X: NDArray[np.float64], y: NDArray[np.float64],
                       alpha: NDArray[np.float64], kernel: ResolvedKernel,
                       fit_intercept: bool) -> None:
        self.kernel_ = kernel
        self.X_fit_ = X
        self.y_fit_ = y
        self.dual_coef_ = alpha
        self.support_ = np.flatnonzero(alpha)
        # Homogeneous form: the constant coordinate adds 1 to every kernel value,
        # so the bias is b = sum_j alpha_j y_j (each update adds eta * y_i to it).
        self.intercept_ = float(alpha @ y) if fit_intercept else 0.0

    def decision_function(self, X: ArrayLike) -> NDArray[np.float64]:
        """Signed score ``sum_j dual_coef_[j] y_j K(x_j, x) + intercept_`` of every row of ``X``."""
        X = self._check_predict_input(X)
        sv = self.support_
        if sv.size == 0:
            return np.full(X.shape[0], self.intercept_)
        K = self.kernel_(self.X_fit_[sv], X)
        return (self.dual_coef_[sv] * self.y_fit_[sv]) @ K + self.intercept_

    @property
    def coef_(self) -> NDArray[np.float64]:
        """Primal weights ``sum_j alpha_j y_j x_j``; only defined for the linear kernel."""
        if not hasattr(self, "kernel_"):
            raise AttributeError("coef_ is available after fit")
        if not self.kernel_.is_linear:
            raise AttributeError(f"coef_ is only defined for the linear kernel, "
                                 f"not {self.kernel_.name!r}")
        return (self.dual_coef_ * self.y_fit_) @ self.X_fit_


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else False
    except (TypeError, ValueError):
        return False
