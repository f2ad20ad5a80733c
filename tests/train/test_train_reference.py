"""The compiled training epoch against a plain numpy reference of the averaged structured perceptron.

The epoch kernel is tuned for speed (prefetch pipeline over the next sentences, four labels at a time
in Viterbi, row-compressed weights); none of that may change a result. The reference is written the
obvious way: dense weights, scores by summation, Viterbi by `np.argmax` (ties to the lowest label),
Collins' update, averaging sums ``U += c·Δ``. Weights start at zero and move by ±1, so every score is
a small integer and ties are frequent: tie-breaking is exercised, not avoided.
"""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import dense_pairs, dense_weights, epoch_problem, reference_epoch, reference_viterbi

from structperc.model.state_weights import feature_set
from structperc.train import epoch_kernels as train_kernels
from structperc.train.perceptron import _epoch_kernel


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(1, 21), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_viterbi_equals_the_reference(T, L, per_token, forbid, seed):
    """Every width the compiled Viterbi uses (vectors of 8 and 4 labels, scalar remainders) gives
    the reference's path and score, on small integer scores where ties abound."""
    rng = np.random.default_rng(seed)
    state = rng.integers(-2, 3, (T, L)).astype(np.float64)
    trans = rng.integers(-2, 3, (T if per_token else 1, L + 1, L)).astype(np.float64)
    if forbid:
        trans[rng.random(trans.shape) < 0.2] = -np.inf
        trans[..., 0] = 0.0                                     # label 0 keeps every path alive
    end = np.where(rng.random(L) < 0.2, -np.inf, 0.0) if forbid else np.zeros(L)
    end[0] = 0.0
    path = np.empty(T, np.int32)
    score = train_kernels.viterbi(state, trans, end, path)
    want_path, want_score = reference_viterbi(state, trans, end)
    np.testing.assert_array_equal(path, want_path)
    assert score == want_score


@st.composite
def problems(draw):
    # labels: scalar only, a vector of 4, of 8, 8 + 4, remainders
    return epoch_problem(draw, max_labels=12, max_attributes=10)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_compiled_epochs_equal_the_reference(problem):
    sent_ptr, X, XT, y, mask, A, AT, L, kind, rng = problem
    fs = feature_set(kind, X, y, A, L)
    end = np.zeros(L)
    allowed = dense_pairs(fs, A, L)  # the feature set as a dense mask

    W, U = np.zeros(len(fs.labels), np.float32), np.zeros(len(fs.labels))
    Wt, Ut = np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L))
    Wc, Uc = np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))
    rW, rU = np.zeros((A, L)), np.zeros((A, L))
    rWt, rUt = np.zeros((L + 1, L)), np.zeros((L + 1, L))
    rWc, rUc = np.zeros((AT, L + 1, L)), np.zeros((AT, L + 1, L))
    c = rc = 0
    max_len = int(np.diff(sent_ptr).max())
    for _epoch in range(3):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        got = _epoch_kernel()(order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active, W, U,
                                  Wt, Ut, Wc, Uc, mask, end, c, max_len)
        want = reference_epoch(order, sent_ptr, X, XT, y, allowed, rW, rU, rWt, rUt, rWc, rUc,
                               mask, end, rc)[:3]
        assert tuple(int(v) for v in got) == want
        c, rc = int(got[2]), want[2]
        dense_W = dense_weights(fs, A, L, W)
        dense_U = dense_weights(fs, A, L, U)
        np.testing.assert_array_equal(dense_W, rW)
        np.testing.assert_array_equal(dense_U, rU)
        np.testing.assert_array_equal(Wt, rWt)
        np.testing.assert_array_equal(Ut, rUt)
        np.testing.assert_array_equal(Wc, rWc)
        np.testing.assert_array_equal(Uc, rUc)
