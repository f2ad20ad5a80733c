"""The bound functions against closed forms and independent solvers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from structperc.binary import bounds


def separable(seed: int, n: int, d: int):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    y = np.where(X @ w >= 0, 1.0, -1.0)
    return X, y


def slsqp_margin(X, y):
    """Hard margin by a generic solver, to check the NNLS route against."""
    Z = y[:, None] * X
    start = np.linalg.lstsq(Z, np.ones(len(y)), rcond=None)[0]
    start *= 2.0 / max((Z @ start).min(), 1e-3)
    res = minimize(lambda w: 0.5 * w @ w, start, jac=lambda w: w, method="SLSQP",
                   constraints=[{"type": "ineq", "fun": lambda w: Z @ w - 1, "jac": lambda w: Z}],
                   options={"ftol": 1e-15, "maxiter": 2000})
    return 1.0 / np.linalg.norm(res.x)


def test_radius_and_margin_by_hand():
    X = np.array([[3.0, 4.0], [0.0, -1.0], [-2.0, 0.0]])
    y = np.array([1, -1, -1])
    assert bounds.radius(X) == 5.0
    # v = (0.6, 0.8): y v.x = 5, 0.8, 1.2
    assert bounds.margin(X, y, [0.6, 0.8]) == pytest.approx(0.8)
    assert bounds.margin(X, y, [6.0, 8.0]) == pytest.approx(0.8)  # direction only
    r, rho, bound = bounds.novikoff(X, y, [0.6, 0.8])
    assert (r, rho, bound) == pytest.approx((5.0, 0.8, 25 / 0.64))
    assert bounds.novikoff(X, y, [-0.6, -0.8]).bound == math.inf
    with pytest.raises(ValueError, match="non-zero"):
        bounds.margin(X, y, [0.0, 0.0])


@pytest.mark.parametrize("seed", range(15))
def test_hard_margin_matches_an_independent_solver_and_is_optimal(seed):
    rng = np.random.default_rng(seed)
    X, y = separable(seed, int(rng.integers(3, 40)), int(rng.integers(1, 5)))
    best = bounds.hard_margin(X, y)
    assert best is not None
    assert np.linalg.norm(best.v) == pytest.approx(1.0)
    assert bounds.margin(X, y, best.v) == pytest.approx(best.rho, rel=1e-12)
    assert best.rho == pytest.approx(slsqp_margin(X, y), rel=1e-6)
    # No other direction does better.
    others = rng.normal(size=(2000, X.shape[1]))
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    assert (((y[:, None] * X) @ others.T).min(axis=0) <= best.rho + 1e-12).all()


def test_hard_margin_is_the_distance_from_the_origin_to_the_hull():
    # Two labelled points: rho* is the distance from 0 to the segment [y1 x1, y2 x2].
    a, b = np.array([1.0, 2.0, 1.0]), np.array([4.0, -2.0, 1.0])
    z1, z2 = a, -b
    t = np.clip(-(z1 @ (z2 - z1)) / ((z2 - z1) @ (z2 - z1)), 0, 1)
    expected = np.linalg.norm((1 - t) * z1 + t * z2)
    best = bounds.hard_margin(np.array([a, b]), [1, -1])
    assert best.rho == pytest.approx(expected, rel=1e-12)
    nearest = (1 - t) * z1 + t * z2
    np.testing.assert_allclose(best.v, nearest / np.linalg.norm(nearest), atol=1e-12)


def test_non_separable_data_has_no_hard_margin():
    X = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    y = [1, -1, 1]
    assert not bounds.is_separable(X, y)
    assert bounds.hard_margin(X, y) is None
    assert bounds.is_separable(X, [1, 1, -1])


def test_gram_embedding_reproduces_the_gram_matrix_and_the_margin():
    X, y = separable(4, 25, 3)
    G = X @ X.T
    Phi = bounds.gram_embedding(G)
    np.testing.assert_allclose(Phi @ Phi.T, G, atol=1e-9)
    assert bounds.radius(Phi) == pytest.approx(bounds.radius(X))
    assert bounds.hard_margin(Phi, y).rho == pytest.approx(bounds.hard_margin(X, y).rho, rel=1e-6)
    with pytest.raises(ValueError, match="square"):
        bounds.gram_embedding(np.ones((2, 3)))


def test_lifting_bound_is_minimised_by_a_squared_equal_r_delta():
    r, rho, delta = 2.0, 0.3, 1.7
    best = bounds.lifting_bound(r, rho, delta)
    assert best == pytest.approx((r + delta) ** 2 / rho**2)
    grid = np.linspace(0.05, 10, 2000)
    values = [bounds.lifting_bound(r, rho, delta, A) for A in grid]
    assert min(values) >= best * (1 - 1e-12)
    assert bounds.lifting_bound(r, rho, delta, math.sqrt(r * delta)) == pytest.approx(best)
    assert bounds.lifting_bound(r, rho, 0.0, 1.0) == pytest.approx((r**2 + 1) / rho**2)
    assert bounds.lifting_bound(r, rho, delta, 0.0) == math.inf


def test_lifting_slacks_and_bound_by_hand():
    X = np.array([[1.0], [0.2], [-1.0]])
    y = np.array([1, 1, 1])
    np.testing.assert_allclose(bounds.lifting_slacks(X, y, [1.0], 0.5), [0.0, 0.3, 1.5])
    lb = bounds.lifting(X, y, [1.0], 0.5)
    delta = math.sqrt(0.09 + 2.25)
    assert lb.delta == pytest.approx(delta)
    assert lb.A == pytest.approx(math.sqrt(1.0 * delta))
    assert lb.lifted_margin == pytest.approx(0.5 / math.sqrt(1 + delta**2 / lb.A**2))
    assert lb.bound == pytest.approx((1 + delta) ** 2 / 0.25)
    with pytest.raises(ValueError, match="norm <= 1"):
        bounds.lifting(X, y, [2.0], 0.5)


def test_margin_bound_values():
    assert bounds.margin_perceptron_bound(1.0, 0.5, 0.5) == pytest.approx(64.0)
    assert bounds.margin_perceptron_bound(2.0, 0.1, 0.9) == pytest.approx(4 * 4 / (0.01 * 0.01))
    for bad in (0.0, 1.0, -0.2, 1.5):
        with pytest.raises(ValueError, match="open interval"):
            bounds.margin_perceptron_bound(1.0, 0.5, bad)
    assert bounds.novikoff_bound(1.0, 0.0) == math.inf


def test_soft_separator_beats_random_directions():
    rng = np.random.default_rng(0)
    X, y = separable(1, 40, 3)
    y[:6] *= -1
    rho = 0.4
    v, delta = bounds.soft_separator(X, y, rho)
    assert np.linalg.norm(v) <= 1 + 1e-9
    assert delta == pytest.approx(np.linalg.norm(bounds.lifting_slacks(X, y, v, rho)))
    for _ in range(300):
        u = rng.normal(size=3)
        u *= rng.uniform(0, 1) / np.linalg.norm(u)
        assert np.linalg.norm(bounds.lifting_slacks(X, y, u, rho)) >= delta - 1e-6
    # On data separable with margin rho the best slack is zero.
    Xs, ys = separable(2, 30, 2)
    rho_star = bounds.hard_margin(Xs, ys).rho
    assert bounds.soft_separator(Xs, ys, 0.5 * rho_star)[1] == pytest.approx(0.0, abs=1e-6)


def test_best_lifting_is_no_worse_than_any_grid_point():
    X, y = separable(5, 30, 2)
    y[:4] *= -1
    rhos = np.geomspace(0.05, 2.0, 9)
    v, best = bounds.best_lifting(X, y, rhos)
    for rho in rhos:
        u, _ = bounds.soft_separator(X, y, float(rho))
        assert best.bound <= bounds.lifting(X, y, u, float(rho)).bound + 1e-9
    assert best.bound == pytest.approx(bounds.lifting(X, y, v, best.rho).bound)
    with pytest.raises(ValueError, match="rhos"):
        bounds.best_lifting(X, y, [])


def test_bounds_require_plus_minus_one_labels():
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        bounds.novikoff(np.eye(2), [0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="mismatched"):
        bounds.hard_margin(np.eye(2), [1, -1, 1])
