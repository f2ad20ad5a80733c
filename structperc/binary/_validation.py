"""Input and hyper-parameter checks shared by every binary estimator.

Why a module of its own: the estimators, the bound functions and the CLI must
reject the same bad inputs (NaN, infinity, ragged shapes, empty sets, labels
that are not two classes) with the same clear ``ValueError``.  Checking once,
here, keeps the messages identical and the numerical code free of defensive
clutter: everything past this module may assume finite float64 arrays and
labels in {+1, -1}.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


class NotFittedError(ValueError, AttributeError):
    """Raised when ``predict`` or ``decision_function`` is called before ``fit``.

    It subclasses both ``ValueError`` and ``AttributeError``, like scikit-learn's
    exception of the same name, so either ``except`` clause catches it.
    """


def check_matrix(X: ArrayLike, *, name: str = "X") -> NDArray[np.float64]:
    """Return ``X`` as a finite, non-empty, C-contiguous float64 matrix."""
    if np.iscomplexobj(X):
        raise ValueError(f"{name} must be real-valued, got complex numbers")
    try:
        arr = np.asarray(X, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D with shape (n_samples, n_features); got shape {arr.shape}"
        )
    if arr.shape[0] == 0:
        raise ValueError(f"{name} is empty: at least one sample is required")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has no features: at least one column is required")
    finite = np.isfinite(arr)
    if not finite.all():
        row, col = np.argwhere(~finite)[0]
        raise ValueError(
            f"{name} contains NaN or infinity (first at row {row}, column {col}: {arr[row, col]})"
        )
    return np.ascontiguousarray(arr)


def _as_label_array(y: ArrayLike, n_samples: int) -> NDArray[Any]:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per sample; got shape {arr.shape}")
    if arr.shape[0] != n_samples:
        raise ValueError(
            f"X and y have mismatched lengths: X has {n_samples} samples, y has {arr.shape[0]}"
        )
    if arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        raise ValueError("y contains NaN or infinity")
    if arr.dtype.kind == "O" and any(
        isinstance(v, numbers.Real) and not math.isfinite(v) for v in arr
    ):
        raise ValueError("y contains NaN or infinity")
    return arr


def _is_plus_minus_one(uniq: NDArray[Any]) -> bool:
    if uniq.dtype.kind not in "iuf":
        return False
    return bool(np.isin(uniq, (-1, 1)).all())


def check_signs(y: ArrayLike, n_samples: int) -> NDArray[np.float64]:
    """Return ``y`` as float64 signs, requiring every label to be +1 or -1.

    Used by the bound functions, where a silent relabelling would change which
    side of the separator a point is on and so change the margin.
    """
    arr = _as_label_array(y, n_samples)
    uniq = np.unique(arr)
    if not _is_plus_minus_one(uniq):
        bad = [v for v in uniq.tolist() if v not in (-1, 1)][:3]
        raise ValueError(f"labels must be +1 or -1; found {bad}")
    return arr.astype(np.float64)


def encode_labels(y: ArrayLike, n_samples: int) -> tuple[NDArray[np.float64], NDArray[Any]]:
    """Map labels to signs; return ``(signs, classes)``.

    Labels already in {+1, -1} are kept as they are and ``classes`` is
    ``[-1, 1]``.  Exactly two other classes are accepted too: the smaller one
    (in ``np.unique`` order) becomes -1 and the larger +1, so ``{0, 1}`` or
    ``{"ham", "spam"}`` work without a manual recoding.  Anything else (three
    classes, a single class other than +1/-1) raises ``ValueError``.
    """
    arr = _as_label_array(y, n_samples)
    uniq = np.unique(arr)
    if _is_plus_minus_one(uniq):
        return arr.astype(np.float64), np.array([-1, 1])
    if uniq.shape[0] == 2:
        return np.where(arr == uniq[1], 1.0, -1.0), uniq
    preview = uniq[:5].tolist()
    raise ValueError(
        "labels must be +1/-1 or exactly two classes (mapped to -1/+1 in sorted order); "
        f"got {uniq.shape[0]} distinct value(s): {preview}"
    )


def check_vector(v: ArrayLike, n_features: int, *, name: str = "v") -> NDArray[np.float64]:
    """Return ``v`` as a finite float64 vector of length ``n_features``."""
    try:
        arr = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric vector: {exc}") from None
    if arr.ndim != 1 or arr.shape[0] != n_features:
        raise ValueError(f"{name} must have shape ({n_features},); got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return arr


def check_positive(value: Any, name: str, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float, requiring it to be finite and > 0 (or >= 0)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    val = float(value)
    if not math.isfinite(val) or val < 0 or (val == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {value!r}")
    return val


def check_fraction(value: Any, name: str) -> float:
    """Return ``value`` as a float in the open interval (0, 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number in (0, 1), got {value!r}")
    val = float(value)
    if not 0.0 < val < 1.0:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return val


def check_count(value: Any, name: str) -> int:
    """Return ``value`` as an int >= 1 (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def check_flag(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool (numpy bools included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)
