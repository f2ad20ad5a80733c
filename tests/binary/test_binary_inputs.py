"""Bad input is rejected with a clear ValueError; estimator conventions hold."""
from __future__ import annotations

import numpy as np
import pytest

from structperc.binary import (
    DualPerceptron,
    LiftedPerceptron,
    MarginPerceptron,
    NotFittedError,
    Perceptron,
)

ESTIMATORS = [Perceptron, DualPerceptron, MarginPerceptron, LiftedPerceptron]
X_OK = np.array([[2.0, 1.0], [1.0, 3.0], [-1.0, -2.0], [-2.0, 0.5]])
Y_OK = np.array([1, 1, -1, -1])


@pytest.fixture(params=ESTIMATORS, ids=lambda cls: cls.__name__)
def estimator(request):
    return request.param(random_state=0)


@pytest.mark.parametrize(
    ("X", "y", "message"),
    [
        ([[1.0, np.nan], [0.0, 1.0]], [1, -1], "NaN or infinity"),
        ([[1.0, np.inf], [0.0, 1.0]], [1, -1], "NaN or infinity"),
        ([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], [1, -1], "mismatched lengths"),
        (np.empty((0, 2)), [], "empty"),
        (np.empty((3, 0)), [1, -1, 1], "no features"),
        ([1.0, 2.0, 3.0], [1, -1, 1], "2-D"),
        ([["a", "b"], ["c", "d"]], [1, -1], "numeric"),
        ([[1j, 0], [0, 1]], [1, -1], "real-valued"),
        ([[1.0], [2.0], [3.0]], [0, 1, 2], "exactly two classes"),
        ([[1.0], [2.0]], [5, 5], "exactly two classes"),
        ([[1.0], [2.0]], [1.0, np.nan], "y contains NaN"),
        ([[1.0], [2.0]], [[1], [-1]], "1-D"),
    ],
)
def test_bad_data_raises_value_error(estimator, X, y, message):
    with pytest.raises(ValueError, match=message):
        estimator.fit(X, y)
    assert not hasattr(estimator, "classes_")  # nothing half-fitted is left behind


def test_two_other_classes_are_mapped_and_recorded(estimator):
    estimator.fit(X_OK, np.where(Y_OK > 0, "spam", "ham"))
    assert estimator.classes_.tolist() == ["ham", "spam"]
    assert estimator.predict(X_OK).tolist() == np.where(Y_OK > 0, "spam", "ham").tolist()
    estimator.fit(X_OK, (Y_OK > 0).astype(int))
    assert estimator.classes_.tolist() == [0, 1]
    assert estimator.predict(X_OK).tolist() == [1, 1, 0, 0]
    assert estimator.score(X_OK, [1, 1, 0, 0]) == 1.0


def test_plus_minus_one_labels_are_kept(estimator):
    estimator.fit(X_OK, Y_OK.astype(float))
    assert estimator.classes_.tolist() == [-1, 1]
    assert estimator.predict(X_OK).tolist() == Y_OK.tolist()


def test_a_zero_score_predicts_the_negative_class():
    # w = e_1 after one update; e_2 scores exactly 0, which the training rule treats as
    # a mistake for either label, and predict maps to classes_[0].
    clf = Perceptron(fit_intercept=False).fit([[1.0, 0.0]], [1])
    assert clf.coef_.tolist() == [1.0, 0.0]
    assert clf.decision_function([[0.0, 1.0]]).tolist() == [0.0]
    clf = Perceptron(fit_intercept=False).fit([[1.0, 0.0], [-1.0, 0.0]], ["no", "yes"])
    assert clf.predict([[0.0, 1.0], [-2.0, 0.0]]).tolist() == ["no", "yes"]


def test_predict_checks(estimator):
    with pytest.raises(NotFittedError, match="not fitted"):
        estimator.predict(X_OK)
    assert issubclass(NotFittedError, ValueError)
    estimator.fit(X_OK, Y_OK)
    with pytest.raises(ValueError, match="3 features"):
        estimator.predict(np.ones((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        estimator.decision_function([[np.nan, 0.0]])


@pytest.mark.parametrize(
    ("cls", "params", "message"),
    [
        (Perceptron, {"eta": 0.0}, "eta"),
        (Perceptron, {"eta": -1.0}, "eta"),
        (Perceptron, {"eta": float("nan")}, "eta"),
        (Perceptron, {"eta": "1"}, "eta"),
        (Perceptron, {"max_epochs": 0}, "max_epochs"),
        (Perceptron, {"max_epochs": 2.5}, "max_epochs"),
        (Perceptron, {"shuffle": "yes"}, "shuffle"),
        (Perceptron, {"fit_intercept": 1}, "fit_intercept"),
        (MarginPerceptron, {"k": 0.0}, "k must"),
        (MarginPerceptron, {"k": 1.0}, "k must"),
        (MarginPerceptron, {"rho": -0.1}, "rho"),
        (DualPerceptron, {"kernel": "sigmoid"}, "kernel"),
        (DualPerceptron, {"kernel": "poly", "degree": 0}, "degree"),
        (DualPerceptron, {"kernel": "rbf", "gamma": -1.0}, "gamma"),
        (DualPerceptron, {"kernel": lambda A, B: np.ones((1, 1))}, "shape"),
        (LiftedPerceptron, {"form": "both"}, "form"),
        (LiftedPerceptron, {"form": "explicit", "kernel": "rbf"}, "linear"),
        (LiftedPerceptron, {"v": [1.0, 0.0, 0.0]}, "rho"),
        (LiftedPerceptron, {"v": [1.0, 0.0], "rho": 0.5}, r"shape \(3,\)"),
        (LiftedPerceptron, {"v": [1.0, 1.0, 0.0], "rho": 0.5}, "norm <= 1"),
        (LiftedPerceptron, {"v": [1.0, 0.0, 0.0], "rho": 0.5, "kernel": "rbf"}, "linear kernel"),
        (LiftedPerceptron, {"A": -1.0}, "A must"),
    ],
)
def test_bad_hyper_parameters_raise_in_fit(cls, params, message):
    clf = cls(**params)  # __init__ only stores
    for name, value in params.items():
        assert getattr(clf, name) is value
    with pytest.raises(ValueError, match=message):
        clf.fit(X_OK, Y_OK)


def test_estimator_conventions():
    with pytest.raises(TypeError):
        Perceptron(1.0)  # keyword-only
    clf = Perceptron(eta=0.5, random_state=3)
    assert clf.get_params() == {"eta": 0.5, "fit_intercept": True, "max_epochs": 1000,
                                "shuffle": True, "random_state": 3}
    assert repr(clf) == "Perceptron(eta=0.5, random_state=3)"
    assert clf.set_params(eta=2.0) is clf and clf.eta == 2.0
    with pytest.raises(ValueError, match="invalid parameter"):
        clf.set_params(learning_rate=1.0)
    assert clf.fit(X_OK, Y_OK) is clf
    fitted = {name for name in vars(clf) if name.endswith("_")}
    assert {"coef_", "intercept_", "classes_", "n_updates_", "mistakes_per_epoch_",
            "update_indices_", "converged_", "n_epochs_", "n_features_in_"} <= fitted
    clone = type(clf)(**clf.get_params())
    assert np.array_equal(clone.fit(X_OK, Y_OK).coef_, clf.coef_)


def test_a_numpy_generator_is_accepted_as_random_state():
    a = Perceptron(random_state=np.random.default_rng(9)).fit(X_OK, Y_OK)
    b = Perceptron(random_state=9).fit(X_OK, Y_OK)
    assert np.array_equal(a.update_indices_, b.update_indices_)
