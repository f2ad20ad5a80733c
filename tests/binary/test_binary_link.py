"""The binary perceptron is the structured perceptron's single-label case.

A "sentence" of one token with labels {+1, -1} has no label-to-label transitions; its only transition is
from <bos>, which acts as the bias. The structured update W[:, y] += x, W[:, ŷ] -= x moves the difference
w = W[:, +1] - W[:, -1] by 2·y·x: the binary perceptron with η = 2 and an intercept. The one difference is
a tie (score difference exactly 0): the binary rule y·w·x ≤ 0 always counts it as a mistake, the Viterbi
decoder picks the lowest label id. So the label with id 0 is "+1" and data sets where a +1 point is met
on a tie are excluded (they do not exercise the equivalence); everything else must match exactly.
"""
from __future__ import annotations

import numpy as np

from structperc.binary import Perceptron
from structperc.features.index import Features
from structperc.train.perceptron import PerceptronState, train_perceptron


def _ties_on_positive(X: np.ndarray, y: np.ndarray, epochs: int) -> bool:
    """Replay the binary run and say whether a +1 point is ever met on a tie."""
    Xh = np.hstack([X, np.ones((len(X), 1))])
    w = np.zeros(Xh.shape[1])
    for _ in range(epochs):
        for x, label in zip(Xh, y):
            score = w @ x
            if score == 0 and label == 1:
                return True
            if label * score <= 0:
                w += 2 * label * x
    return False


def _case(seed: int):
    rng = np.random.default_rng(seed)
    n, n_attr = int(rng.integers(2, 13)), int(rng.integers(2, 8))
    k = int(rng.integers(1, n_attr + 1))
    active = np.stack([rng.choice(n_attr, size=k, replace=False) for _ in range(n)]).astype(np.int32)
    X = np.zeros((n, n_attr))
    np.put_along_axis(X, active, 1.0, axis=1)
    v = rng.normal(size=n_attr)  # a planted real-valued separator: ties with it are impossible
    y = np.where(X @ v + rng.normal() > 0, 1, -1)
    return active, X, y


def test_structured_trainer_makes_the_binary_perceptrons_updates():
    checked = 0
    for seed in range(4000):
        active, X, y = _case(seed)
        n, n_attr = X.shape
        if len(set(y)) < 2:
            continue
        clf = Perceptron(eta=2.0, shuffle=False, max_epochs=200).fit(X, y)
        if not clf.converged_ or _ties_on_positive(X, y, clf.n_epochs_):
            continue
        checked += 1
        feats = Features(active, np.zeros((n, 0), np.int32), np.arange(n + 1, dtype=np.int64))
        gold = np.where(y == 1, 0, 1).astype(np.int32)  # label id 0 is +1: ties go to it
        state = PerceptronState.zeros(n_attr, 0, 2)
        mistakes = []
        train_perceptron(feats, gold, state, mask=np.zeros((3, 2)), end=np.zeros(2),
                         epochs=clf.n_epochs_, shuffle=False,
                         callback=lambda r, mistakes=mistakes: mistakes.append(r.mistakes))
        assert mistakes == list(clf.mistakes_per_epoch_), seed
        W = state.pairs.to_dense()
        np.testing.assert_array_equal(W[:, 0] - W[:, 1], clf.coef_)
        assert state.Wt[2, 0] - state.Wt[2, 1] == clf.intercept_, seed
        assert np.all(state.Wt[:2] == 0)  # one-token sentences never use label-to-label transitions
    assert checked >= 200, f"only {checked} usable cases"
