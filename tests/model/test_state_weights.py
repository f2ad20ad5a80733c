"""Feature sets and row-compressed state weights (`structperc.model.state_weights`), and training on them."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import structperc.model.state_weights as sw
from structperc.features.index import Features
from structperc.model.state_weights import StateWeights, feature_set, observed_pairs
from structperc.tagger import Tagger
from structperc.train.perceptron import PerceptronState, train_perceptron


@st.composite
def problems(draw):
    A = draw(st.integers(1, 12))
    L = draw(st.integers(1, 9))
    n = draw(st.integers(1, 40))
    K = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    y = rng.integers(0, L, n).astype(np.int32)
    return X, y, A, L, rng


def _pairs(fs: sw.FeatureSet, L: int, active_only: bool = True) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(len(fs.ptr) - 1), np.diff(fs.ptr))
    keep = fs.active.astype(bool) if active_only and len(fs.active) else np.ones(len(rows), bool)
    return set(zip(rows[keep].tolist(), fs.labels[keep].tolist()))


@settings(max_examples=200, deadline=None)
@given(problems())
def test_observed_pairs_are_exactly_the_seen_pairs(problem):
    X, y, A, L, _ = problem
    fs = observed_pairs(X, y, A, L)
    seen = {(int(a), int(l)) for row, l in zip(X, y) for a in row if a >= 0}
    assert _pairs(fs, L) == seen
    counts = np.diff(fs.ptr)
    for a in range(A):
        labels = fs.labels[fs.ptr[a]:fs.ptr[a + 1]].tolist()
        assert labels == sorted(set(labels))                     # ascending, no repeats
        n_seen = sum(1 for (b, _) in seen if b == a)
        padded = bool(sw.pads_row(np.array([n_seen]), L)[0])
        assert counts[a] == (L if padded else n_seen)           # padded rows hold every label


@settings(max_examples=100, deadline=None)
@given(problems())
def test_padding_nonzero_and_positions_keep_the_weights(problem):
    X, y, A, L, rng = problem
    fs = observed_pairs(X, y, A, L)
    values = rng.integers(-3, 4, len(fs.labels)).astype(np.float32) * fs.active
    w = StateWeights(fs.ptr, fs.labels, values, L)
    dense = w.to_dense()
    small = w.nonzero()
    assert (small.values != 0).all()
    np.testing.assert_array_equal(small.to_dense(), dense)
    np.testing.assert_array_equal(small.padded().to_dense(), dense)
    rows, labels = np.nonzero(dense)
    pos = w.positions(rows, labels)
    assert (pos >= 0).all() and (w.values[pos] == dense[rows, labels]).all()
    absent = [(a, l) for a in range(A) for l in range(L)
              if not ((w.rows() == a) & (w.labels == l)).any()]
    if absent:
        a, l = map(np.array, zip(*absent))
        assert (w.positions(a, l) == -1).all()
    np.testing.assert_allclose(w.row_norms(), np.sqrt((dense.astype(np.float64) ** 2).sum(1)))


def _train(X, y, A, L, pairs, epochs=3):
    ptr = np.arange(len(X) + 1, dtype=np.int64)  # one token per sentence keeps the case small
    feats = Features(X, np.zeros((len(X), 0), np.int32), ptr)
    state = PerceptronState.zeros(A, 0, L, pairs)
    train_perceptron(feats, y, state, mask=np.zeros((L + 1, L)), end=np.zeros(L), epochs=epochs,
                     seed=1)
    return state


@settings(max_examples=60, deadline=None)
@given(problems())
def test_padded_rows_train_exactly_like_unpadded_ones(problem):
    """Padding is layout only: inactive slots are never updated, so the weights are identical."""
    X, y, A, L, _ = problem
    padded = _train(X, y, A, L, observed_pairs(X, y, A, L))
    original = sw.pads_row
    try:
        sw.pads_row = lambda counts, n_labels: np.zeros(len(counts), bool)
        plain = _train(X, y, A, L, observed_pairs(X, y, A, L))
    finally:
        sw.pads_row = original
    np.testing.assert_array_equal(padded.pairs.to_dense(), plain.pairs.to_dense())
    inactive = (padded.active == 0) if len(padded.active) else np.zeros(len(padded.W), bool)
    assert not padded.W[inactive].any() and not padded.U[inactive].any()


def test_observed_set_drops_updates_outside_it_by_hand():
    # "a" is only ever B, "b" only ever A; template w[0]; labels A=0, B=1, attributes a=0, b=1.
    # instance "a"/B: all scores 0 -> predicts A (ties to the lowest label):
    #   W[a, B] += 1; W[a, A] -= 1 is outside the set -> dropped; Wt[bos] = [-1, 1]
    # instance "b"/A: W[b] = 0, Wt[bos] = [-1, 1] -> predicts B:
    #   W[b, A] += 1; W[b, B] -= 1 dropped; Wt[bos] = [0, 0]
    X = np.array([[0], [1]], np.int32)
    y = np.array([1, 0], np.int32)
    ptr = np.arange(3, dtype=np.int64)
    feats = Features(X, np.zeros((2, 0), np.int32), ptr)
    out = {}
    for kind in ("observed", "all"):
        state = PerceptronState.zeros(2, 0, 2, feature_set(kind, X, y, 2, 2))
        train_perceptron(feats, y, state, mask=np.zeros((3, 2)), end=np.zeros(2), epochs=1,
                         shuffle=False)
        out[kind] = state.pairs.to_dense().tolist()
    assert out["observed"] == [[0, 1], [1, 0]]
    assert out["all"] == [[-1, 1], [1, -1]]


def test_unknown_feature_set_is_refused():
    with pytest.raises(ValueError, match="unknown feature set"):
        feature_set("some", np.zeros((1, 1), np.int32), np.zeros(1, np.int32), 1, 1)
    from structperc.errors import InputError
    with pytest.raises(InputError, match="feature_set"):
        Tagger(feature_set="some", columns=["word", "tag"], template=["w[0]"]).fit(
            [["a"]], [["B"]])


SENTS = [["the", "cat", "sat"], ["a", "dog", "ran"], ["the", "dog", "sat"], ["a", "cat", "ran"]]
TAGS = [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"],
        ["B-NP", "I-NP", "B-VP"]]


def test_observed_model_saves_loads_and_tags_the_same(tmp_path):
    kw = dict(columns=["word", "chunk"], template=["w[0]", "w[-1]", "w[-1]|w[0]", "bias"], epochs=3)
    obs = Tagger.train(SENTS, TAGS, feature_set="observed", **kw)
    full = Tagger.train(SENTS, TAGS, **kw)
    assert obs.weights_.sparse.nnz < full.weights_.sparse.nnz
    obs.save(tmp_path / "m")
    back = Tagger.load(tmp_path / "m")
    assert back.feature_set == "observed"
    np.testing.assert_array_equal(back.weights_.state, obs.weights_.state)
    assert back.predict(SENTS) == obs.predict(SENTS) == TAGS


@settings(max_examples=150, deadline=None)
@given(problems(), st.booleans())
def test_compiled_loading_equals_numpy(problem, break_order):
    """`structperc.model.weight_kernels` (the JIT here, and the ahead-of-time build when it exists) lays
    out padded rows and checks label order exactly as the numpy code it replaces at load time."""
    from structperc.compiled import loader as kernels
    from structperc.model import weight_kernels

    X, y, A, L, rng = problem
    fs = observed_pairs(X, y, A, L)
    values = rng.integers(-3, 4, len(fs.labels)).astype(np.float32) * fs.active
    w = StateWeights(fs.ptr, fs.labels, values, L).nonzero()   # short rows, empty rows, full rows
    counts = np.diff(w.ptr)
    if break_order and (counts >= 2).any():                    # swap two labels of one row
        a = int(np.nonzero(counts >= 2)[0][0])
        labels = w.labels.copy()
        labels[w.ptr[a]], labels[w.ptr[a] + 1] = labels[w.ptr[a] + 1], labels[w.ptr[a]]
        w = StateWeights(w.ptr, labels, w.values, L)
    builds = [lambda name: getattr(weight_kernels, name)]
    if kernels.mode() == "aot":
        builds.append(kernels.aot)
    original = sw._aot
    try:
        sw._aot = lambda name: None
        want, want_ok = w.padded(), w.rows_ascending()
        for build in builds:
            sw._aot = build
            got = w.padded()
            for part in ("ptr", "labels", "values"):
                np.testing.assert_array_equal(getattr(got, part), getattr(want, part))
                assert getattr(got, part).dtype == getattr(want, part).dtype
            assert w.rows_ascending() == want_ok
    finally:
        sw._aot = original
    assert want_ok == (not break_order or not (counts >= 2).any())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=12), st.integers(0, 2**32 - 1), st.booleans())
def test_row_counts_equal_the_count_by_row_ids(lengths, seed, long_row):
    """`row_counts` (bytes per row, or row ids past 255 pairs a row) counts what the row ids count."""
    if long_row and lengths:
        lengths[0] = 300
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    flags = np.random.default_rng(seed).random(int(ptr[-1])) < 0.8
    want = np.bincount(np.repeat(np.arange(len(lengths)), lengths)[flags], minlength=len(lengths))
    assert sw.row_counts(flags, ptr).tolist() == want.tolist()


def test_nonzero_keeps_the_weights_that_are_not_zero_row_by_row():
    w = StateWeights(np.array([0, 2, 2, 5]), np.array([0, 1, 0, 1, 2], np.int16),
                     np.array([0.0, 1.5, -2.0, 0.0, 3.0], np.float32), 3)
    kept = w.nonzero()
    assert kept.ptr.tolist() == [0, 1, 1, 3] and kept.labels.tolist() == [1, 0, 2]
    assert kept.values.tolist() == [1.5, -2.0, 3.0]
