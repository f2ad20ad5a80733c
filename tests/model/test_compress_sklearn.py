"""`compress` on a model of the sklearn face (an `AttributeIndex`, no template key tables): it used to
raise AttributeError from the vocabulary pruning that only template models have."""
from __future__ import annotations

import copy

from structperc.model.compress import compress
from structperc.sklearn import StructuredPerceptron

X = [[{"w": "the"}, {"w": "cat", "suf": "at"}], [{"w": "a"}, {"w": "dog"}], [{"w": "北京"}, {"w": "欢迎"}]] * 4
Y = [["D", "N"], ["D", "N"], ["N", "V"]] * 4


def test_compress_a_sklearn_model_keeps_its_predictions():
    est = StructuredPerceptron(max_iterations=3).fit(X, Y)
    before = est.predict(X)
    small = copy.copy(est)
    small._model = compress(est.model_, keep=1.0)  # the fitted model the estimator holds
    assert [list(s) for s in small.predict(X)] == [list(s) for s in before]
    assert compress(est.model_, keep=0.5).weights.sparse.nnz <= est.model_.weights.sparse.nnz
