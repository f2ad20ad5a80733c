"""Convergence theory of the binary perceptrons, checked on generated data.

Novikoff's bound (random separable data, several step sizes, primal and
dual), its tightness on the standard basis, the exponential family, the
margin perceptron's bound and the lifting bound on non-separable data.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from structperc.binary import (
    ConvergenceWarning,
    DualPerceptron,
    LiftedPerceptron,
    MarginPerceptron,
    Perceptron,
    bounds,
    homogeneous,
    lift,
)

ETAS = (0.1, 1.0, 3.7)
REL = 1e-9  # slack for comparing an integer count with a float bound


def planted(seed: int, n: int, d: int, gamma: float, offset: float = 0.0):
    """Separable data: unit ``w``, bias ``offset``, every ``y (w.x + b) >= gamma``.

    Points closer than ``gamma`` to the hyperplane are pushed out along ``w``,
    so the planted separator's margin is exactly ``gamma`` when any point was
    pushed.  Returns ``X, y, w``.
    """
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    w /= np.linalg.norm(w)
    X = rng.normal(size=(n, d))
    s = X @ w + offset
    y = np.where(s >= 0, 1.0, -1.0)
    short = np.abs(s) < gamma
    X[short] += ((gamma - np.abs(s[short])) * y[short])[:, None] * w
    return X, y, w


def normalised_margins(points, y, w):
    return y * (points @ w) / np.linalg.norm(w)


# --- 1. Novikoff ----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    d=st.integers(1, 6),
    gamma=st.floats(0.05, 0.5),
    offset=st.floats(-1.0, 1.0),
    intercept=st.booleans(),
)
def test_novikoff_bound_holds_for_every_eta_primal_and_dual(seed, n, d, gamma, offset, intercept):
    if not intercept:
        offset = 0.0
    X, y, w = planted(seed, n, d, gamma, offset)
    points = homogeneous(X) if intercept else X
    v = np.append(w, offset) if intercept else w
    r, rho, bound = bounds.novikoff(points, y, v / np.linalg.norm(v))
    assert rho > 0
    assert r == pytest.approx(np.linalg.norm(points, axis=1).max())
    best = bounds.hard_margin(points, y)
    assert best is not None and best.rho >= rho * (1 - 1e-7)

    sequences = []
    for eta in ETAS:
        for cls in (Perceptron, DualPerceptron):
            est = cls(eta=eta, fit_intercept=intercept, random_state=seed).fit(X, y)
            assert est.converged_
            assert est.n_updates_ <= bound * (1 + REL)
            assert est.n_updates_ <= bounds.novikoff_bound(r, best.rho) * (1 + REL)
            assert np.array_equal(est.predict(X), y.astype(int))
            assert est.n_updates_ == len(est.update_indices_) == est.mistakes_per_epoch_.sum()
            assert est.mistakes_per_epoch_[-1] == 0
            sequences.append(est.update_indices_)
    # Same mistakes, same order: for every eta, and in primal and dual form.
    for seq in sequences[1:]:
        assert np.array_equal(seq, sequences[0])


def test_weights_scale_with_eta_and_primal_matches_dual():
    X, y, _ = planted(7, 80, 4, 0.1, 0.3)
    base = Perceptron(random_state=3).fit(X, y)
    for eta in ETAS:
        primal = Perceptron(eta=eta, random_state=3).fit(X, y)
        dual = DualPerceptron(eta=eta, random_state=3).fit(X, y)
        np.testing.assert_allclose(primal.coef_, eta * base.coef_, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(dual.coef_, primal.coef_, rtol=1e-10, atol=1e-10)
        assert dual.intercept_ == pytest.approx(primal.intercept_, abs=1e-10)
        np.testing.assert_allclose(dual.decision_function(X), primal.decision_function(X),
                                   rtol=1e-9, atol=1e-9)
        counts = np.bincount(primal.update_indices_, minlength=len(y))
        np.testing.assert_allclose(dual.dual_coef_, eta * counts)


def test_seed_controls_the_order():
    X, y, _ = planted(11, 60, 3, 0.05)
    a = Perceptron(random_state=1).fit(X, y)
    b = Perceptron(random_state=1).fit(X, y)
    c = Perceptron(random_state=2).fit(X, y)
    assert np.array_equal(a.update_indices_, b.update_indices_)
    assert not np.array_equal(a.update_indices_, c.update_indices_)
    fixed = Perceptron(shuffle=False).fit(X, y)
    again = Perceptron(shuffle=False, random_state=99).fit(X, y)
    assert np.array_equal(fixed.update_indices_, again.update_indices_)


# --- 2. Tightness on the standard basis -------------------------------------------------------


@pytest.mark.parametrize("m", range(1, 11))
def test_standard_basis_meets_the_bound_with_equality(m):
    X = np.eye(m)
    rng = np.random.default_rng(m)
    labelings = [rng.choice([-1, 1], size=m) for _ in range(4)]
    labelings += [np.ones(m, int), -np.ones(m, int)]
    for y in labelings:
        r, rho, bound = bounds.novikoff(X, y, y / math.sqrt(m))
        assert r == 1.0
        assert rho == pytest.approx(1 / math.sqrt(m), rel=1e-12)
        best = bounds.hard_margin(X, y)
        assert best.rho == pytest.approx(1 / math.sqrt(m), rel=1e-9)
        assert bounds.novikoff_bound(1.0, best.rho) == pytest.approx(m, rel=1e-9)
        for seed, eta in enumerate(ETAS):
            for cls in (Perceptron, DualPerceptron):
                est = cls(eta=eta, fit_intercept=False, random_state=seed).fit(X, y)
                assert est.n_updates_ == m
                assert est.n_updates_ == pytest.approx(bound, rel=1e-12)
                assert sorted(est.update_indices_.tolist()) == list(range(m))
                assert est.mistakes_per_epoch_.tolist() == [m, 0]


# --- 3. The exponential family ----------------------------------------------------------------


def exponential_family(m: int, first: int = 0):
    """x_i = [(-1)^i (i times), (-1)^(i+1), 0, ...] in R^(m+1), y_i = (-1)^(i+1), i = first..m."""
    rows, labels = [], []
    for i in range(first, m + 1):
        x = np.zeros(m + 1)
        x[:i] = (-1) ** i
        x[i] = (-1) ** (i + 1)
        rows.append(x)
        labels.append((-1) ** (i + 1))
    return np.array(rows), np.array(labels, dtype=float)


# Measured with shuffle=False (points visited in the order i = 0, 1, ..., m) and pinned.
# They equal (4^(m+1) - 1) / 3.
EXPONENTIAL_COUNTS = {
    1: 5, 2: 21, 3: 85, 4: 341, 5: 1365, 6: 5461, 7: 21845, 8: 87381,
    9: 349525, 10: 1398101, 11: 5592405, 12: 22369621,
}


def test_exponential_family_construction():
    X, y = exponential_family(3)
    expected = np.array([
        [-1, 0, 0, 0],    # i = 0: no copies, then (-1)^1
        [-1, 1, 0, 0],    # i = 1
        [1, 1, -1, 0],    # i = 2
        [-1, -1, -1, 1],  # i = 3
    ], dtype=float)
    assert np.array_equal(X, expected)
    assert y.tolist() == [-1, 1, -1, 1]
    # y_i x_i = (-1, ..., -1, 1, 0, ...): a separator needs w_(i+1) > w_1 + ... + w_i and,
    # from the i = 0 point, w_1 > 0 -- so its weights at least double at every step.
    assert np.array_equal(y[:, None] * X,
                          [[1, 0, 0, 0], [-1, 1, 0, 0], [-1, -1, 1, 0], [-1, -1, -1, 1]])


@pytest.mark.parametrize("m", range(1, 13))
def test_exponential_family_needs_exponentially_many_updates(m):
    X, y = exponential_family(m)
    clf = Perceptron(fit_intercept=False, shuffle=False, max_epochs=10**8).fit(X, y)
    assert clf.converged_
    assert clf.n_updates_ == EXPONENTIAL_COUNTS[m]
    assert clf.n_updates_ >= 2**m
    # Integer data and eta = 1 keep w integral: w_1 >= 1 forces w_(m+1) >= 2^m, and an
    # update changes w_(m+1) by at most 1.
    assert clf.coef_[-1] >= 2**m
    assert np.all(y * (X @ clf.coef_) > 0)
    best = bounds.hard_margin(X, y)
    assert clf.n_updates_ <= bounds.novikoff_bound(bounds.radius(X), best.rho) * (1 + REL)


@pytest.mark.parametrize("m", range(1, 7))
def test_exponential_family_dual_and_shuffled_orders(m):
    X, y = exponential_family(m)
    primal = Perceptron(fit_intercept=False, shuffle=False, max_epochs=10**7).fit(X, y)
    dual = DualPerceptron(fit_intercept=False, shuffle=False, max_epochs=10**7).fit(X, y)
    assert np.array_equal(primal.update_indices_, dual.update_indices_)
    for seed in range(3):  # the 2^m lower bound holds in every order
        shuffled = Perceptron(fit_intercept=False, random_state=seed, max_epochs=10**7).fit(X, y)
        assert shuffled.converged_ and shuffled.n_updates_ >= 2**m


@pytest.mark.parametrize("m", range(2, 13))
def test_exponential_family_without_the_anchor_point_is_easy(m):
    # Without the i = 0 point nothing forces w_1 > 0: w = (-2, 0, 1, 0, ...) separates,
    # and the perceptron finds a separator after two updates.
    X, y = exponential_family(m, first=1)
    clf = Perceptron(fit_intercept=False, shuffle=False).fit(X, y)
    assert clf.n_updates_ == 2


# --- 4. Margin perceptron ---------------------------------------------------------------------


@pytest.mark.parametrize("k", [1 / 3, 1 / 2, 0.9])
def test_margin_perceptron_reaches_k_rho_within_its_bound(k):
    plain_fell_short = 0
    for seed in range(25):
        rng = np.random.default_rng(seed)
        n, d = int(rng.integers(5, 50)), int(rng.integers(1, 5))
        intercept = bool(seed % 2)
        X, y, w = planted(seed, n, d, float(rng.uniform(0.1, 0.5)),
                          float(rng.uniform(-1, 1)) if intercept else 0.0)
        points = homogeneous(X) if intercept else X
        r = bounds.radius(points)
        best = bounds.hard_margin(points, y)
        for rho in (best.rho, 0.5 * best.rho):
            clf = MarginPerceptron(k=k, rho=rho, fit_intercept=intercept,
                                   random_state=seed).fit(X, y)
            assert clf.converged_
            w_hat = np.append(clf.coef_, clf.intercept_) if intercept else clf.coef_
            assert normalised_margins(points, y, w_hat).min() >= k * rho * (1 - 1e-12)
            assert clf.n_updates_ <= bounds.margin_perceptron_bound(r, rho, k) * (1 + REL)
        plain = Perceptron(fit_intercept=intercept, random_state=seed).fit(X, y)
        w_plain = np.append(plain.coef_, plain.intercept_) if intercept else plain.coef_
        plain_fell_short += normalised_margins(points, y, w_plain).min() < k * best.rho
    # The margin condition is not automatic: the plain perceptron often misses it.
    assert plain_fell_short > 0


def test_margin_perceptron_default_rho_is_the_hard_margin():
    X, y, _ = planted(5, 40, 3, 0.2)
    clf = MarginPerceptron(k=0.9, fit_intercept=False, random_state=0).fit(X, y)
    assert clf.rho_ == pytest.approx(bounds.hard_margin(X, y).rho)
    assert clf.threshold_ == pytest.approx(0.9 * clf.rho_)
    assert normalised_margins(X, y, clf.coef_).min() >= clf.threshold_ * (1 - 1e-12)


def test_margin_perceptron_refuses_non_separable_data_without_rho():
    X = np.array([[1.0], [2.0]])
    with pytest.raises(ValueError, match="not linearly separable"):
        MarginPerceptron(fit_intercept=False).fit(X, [1, -1])


# --- 5. Lifting -------------------------------------------------------------------------------


def noisy(seed: int, n: int, d: int, flip: float):
    """Planted data with a fraction of labels flipped; returns X, y, planted w."""
    X, y, w = planted(seed, n, d, 0.2)
    rng = np.random.default_rng(seed + 1000)
    flipped = rng.random(n) < flip
    flipped[0] = True
    y = np.where(flipped, -y, y)
    return X, y, w


@pytest.mark.parametrize("seed", range(12))
def test_lifting_separates_and_respects_the_bound(seed):
    rng = np.random.default_rng(seed)
    intercept = bool(seed % 2)
    X, y, w = noisy(seed, int(rng.integers(20, 60)), int(rng.integers(1, 4)), 0.15)
    points = homogeneous(X) if intercept else X
    assert not bounds.is_separable(points, y)
    v = np.append(w, 0.0) if intercept else w
    rho = float(rng.uniform(0.1, 1.0))
    ref = bounds.lifting(points, y, v, rho)
    eps = np.maximum(0, rho - y * (points @ v))
    assert ref.delta == pytest.approx(np.linalg.norm(eps)) and ref.delta > 0
    assert ref.A**2 == pytest.approx(ref.r * ref.delta)
    assert ref.bound == pytest.approx((ref.r + ref.delta) ** 2 / rho**2)

    lifted = lift(points, ref.A)
    assert bounds.is_separable(lifted, y)
    v_lift = np.concatenate([v, y * eps / ref.A])  # the separator of the proof
    assert bounds.margin(lifted, y, v_lift) >= ref.lifted_margin * (1 - 1e-9)
    best = bounds.hard_margin(lifted, y)
    assert best.rho >= ref.lifted_margin * (1 - 1e-7)

    runs = {}
    for form in ("explicit", "implicit"):
        clf = LiftedPerceptron(v=v, rho=rho, form=form, fit_intercept=intercept,
                               random_state=seed).fit(X, y)
        assert clf.A_ == pytest.approx(ref.A)
        assert clf.bound_ == pytest.approx(ref.bound)
        assert clf.converged_
        assert clf.n_updates_ <= ref.bound * (1 + REL)
        w_hat = np.append(clf.coef_, clf.intercept_) if intercept else clf.coef_
        lifted_scores = points @ w_hat + clf.A_ * clf.slack_coef_  # scores on lift(points, A)
        assert np.all(y * lifted_scores > 0)
        runs[form] = clf
    explicit, implicit = runs["explicit"], runs["implicit"]
    assert np.array_equal(explicit.update_indices_, implicit.update_indices_)
    np.testing.assert_allclose(explicit.slack_coef_, implicit.slack_coef_, atol=1e-9)
    np.testing.assert_allclose(explicit.decision_function(X), implicit.decision_function(X),
                               atol=1e-9)
    # The explicit form is the primal perceptron on lift(points, A).
    on_lifted = Perceptron(fit_intercept=False, random_state=seed).fit(lifted, y)
    assert np.array_equal(on_lifted.update_indices_, explicit.update_indices_)


def test_lifting_with_a_kernel_and_the_best_reference():
    X, y, _ = noisy(3, 40, 2, 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        clf = LiftedPerceptron(rho=0.5, kernel="rbf", gamma=0.5, random_state=0).fit(X, y)
    assert clf.n_updates_ <= clf.bound_ * (1 + REL)
    assert clf.bound_ == pytest.approx((clf.radius_ + clf.delta_) ** 2 / clf.rho_**2)
    # The plain perceptron does not converge on the same data.
    with pytest.warns(ConvergenceWarning):
        plain = Perceptron(random_state=0, max_epochs=200).fit(X, y)
    assert not plain.converged_
