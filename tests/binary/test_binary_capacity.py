"""What halfspaces and kernels can and cannot separate.

VC dimension of homogeneous halfspaces (d) and of halfspaces with a bias
(d + 1), and kernels that separate XOR where a hyperplane cannot.
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.linalg import null_space
from scipy.optimize import linprog

from structperc.binary import (
    ConvergenceWarning,
    DualPerceptron,
    Perceptron,
    bounds,
    homogeneous,
)


def all_labelings(n: int):
    return [np.array(signs) for signs in itertools.product([-1, 1], repeat=n)]


def lp_separable(X, y) -> bool:
    """Independent LP: maximise t subject to y_i w.x_i >= t, -1 <= w <= 1; separable iff t* > 0."""
    n, d = X.shape
    c = np.zeros(d + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-(y[:, None] * X), np.ones((n, 1))])
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), bounds=[(-1, 1)] * d + [(None, 1)],
                  method="highs")
    assert res.status == 0
    return -res.fun > 1e-9


# --- 6. VC dimension --------------------------------------------------------------------------


@pytest.mark.parametrize("d", range(1, 9))
def test_homogeneous_halfspaces_shatter_the_standard_basis(d):
    X = np.eye(d)
    for y in all_labelings(d):
        clf = Perceptron(fit_intercept=False, random_state=0).fit(X, y)
        assert clf.converged_
        assert np.array_equal(clf.predict(X), y)


@pytest.mark.parametrize("d", range(1, 7))
def test_d_plus_one_points_are_not_shattered_without_a_bias(d):
    for seed in range(3 if d <= 4 else 1):  # 2^(d+1) labellings, two LPs each
        X = np.random.default_rng(seed).normal(size=(d + 1, d))
        infeasible = [tuple(y) for y in all_labelings(d + 1) if not lp_separable(X, y)]
        assert infeasible, "some labelling of d+1 points must be infeasible"
        for y in all_labelings(d + 1):
            assert bounds.is_separable(X, y) == (tuple(y) not in infeasible)
        # The culprit: the d+1 points are linearly dependent, sum_i c_i x_i = 0, and
        # labelling by sign(c_i) would make sum_i c_i w.x_i > 0.
        c = null_space(X.T)[:, 0]
        culprit = np.where(c > 0, 1, -1)
        assert tuple(culprit) in infeasible
        with pytest.warns(ConvergenceWarning):
            clf = Perceptron(fit_intercept=False, random_state=0, max_epochs=100).fit(X, culprit)
        assert not clf.converged_
        assert clf.mistakes_per_epoch_.min() > 0  # it keeps failing, epoch after epoch


@pytest.mark.parametrize("d", range(1, 9))
def test_halfspaces_with_a_bias_shatter_origin_and_basis(d):
    X = np.vstack([np.zeros(d), np.eye(d)])
    for y in all_labelings(d + 1):
        clf = Perceptron(random_state=1).fit(X, y)
        assert clf.converged_
        assert np.array_equal(clf.predict(X), y)
    # Without the bias the origin scores 0 and can never be classified.
    with pytest.warns(ConvergenceWarning):
        Perceptron(fit_intercept=False, max_epochs=20).fit(X, np.ones(d + 1))


# --- 7. Kernels -------------------------------------------------------------------------------


def xor(seed: int, per_corner: int = 10, noise: float = 0.15):
    rng = np.random.default_rng(seed)
    corners = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=float)
    X = np.repeat(corners, per_corner, axis=0) + noise * rng.normal(size=(4 * per_corner, 2))
    y = np.repeat([1, 1, -1, -1], per_corner)
    return X, y


def brute_force_scores(clf, Z, kernel):
    """sum_j alpha_j y_j K(x_j, z) + b, one term at a time."""
    out = []
    for z in Z:
        total = clf.intercept_
        for alpha, yj, xj in zip(clf.dual_coef_, clf.y_fit_, clf.X_fit_):
            total += alpha * yj * kernel(xj, z)
        out.append(total)
    return np.array(out)


def rbf(gamma):
    return lambda a, b: math.exp(-gamma * sum((ai - bi) ** 2 for ai, bi in zip(a, b)))


def poly(degree, coef0=1.0):
    return lambda a, b: (sum(ai * bi for ai, bi in zip(a, b)) + coef0) ** degree


def test_linear_models_cannot_fit_xor():
    X, y = xor(0)
    assert not bounds.is_separable(homogeneous(X), y)
    for clf in (Perceptron(random_state=0, max_epochs=50),
                DualPerceptron(random_state=0, max_epochs=50)):
        with pytest.warns(ConvergenceWarning):
            clf.fit(X, y)
        assert not clf.converged_
        assert (clf.predict(X) != y).any()


@pytest.mark.parametrize(
    ("params", "kernel"),
    [
        ({"kernel": "rbf", "gamma": 1.0}, rbf(1.0)),
        ({"kernel": "rbf", "gamma": 0.25}, rbf(0.25)),
        ({"kernel": "poly", "degree": 2}, poly(2)),
        ({"kernel": "poly", "degree": 3}, poly(3)),
    ],
)
def test_kernels_separate_xor_and_predict_is_the_kernel_expansion(params, kernel):
    X, y = xor(1)
    clf = DualPerceptron(random_state=0, **params).fit(X, y)
    assert clf.converged_
    assert np.array_equal(clf.predict(X), y)
    # Novikoff in the kernel feature space (homogeneous: K + 1).
    Phi = bounds.gram_embedding(clf.kernel_(X, X) + 1.0)
    best = bounds.hard_margin(Phi, y)
    assert clf.n_updates_ <= bounds.novikoff_bound(bounds.radius(Phi), best.rho) * (1 + 1e-9)
    # Held-out XOR points, and a brute-force evaluation of the expansion.
    Z, z_labels = xor(2, per_corner=5)
    Z = np.vstack([Z, np.random.default_rng(3).uniform(-2, 2, size=(20, 2))])
    expected = brute_force_scores(clf, Z, kernel)
    np.testing.assert_allclose(clf.decision_function(Z), expected, rtol=1e-10, atol=1e-10)
    assert np.array_equal(clf.predict(Z), np.where(expected > 0, 1, -1))
    assert (clf.predict(Z[: len(z_labels)]) == z_labels).mean() >= 0.9


def test_callable_kernel_matches_the_builtin_one():
    X, y = xor(4)
    builtin = DualPerceptron(kernel="poly", degree=2, random_state=5).fit(X, y)
    custom = DualPerceptron(kernel=lambda A, B: (A @ B.T + 1.0) ** 2, random_state=5).fit(X, y)
    assert np.array_equal(builtin.update_indices_, custom.update_indices_)
    with pytest.raises(AttributeError, match="linear kernel"):
        _ = builtin.coef_
