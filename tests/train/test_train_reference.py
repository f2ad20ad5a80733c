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

from structperc.train.perceptron import _epoch_kernel

from structperc.train import epoch_kernels as train_kernels
from structperc.model.state_weights import feature_set


def _reference_viterbi(state, trans, end):
    """Plain Viterbi: ``trans`` is (T or 1, L + 1, L); ties go to the lowest label (np.argmax)."""
    T, L = state.shape
    def tr(t):
        return trans[t if trans.shape[0] == T else 0]
    delta = np.empty((T, L))
    back = np.zeros((T, L), np.int64)
    delta[0] = state[0] + tr(0)[L]
    for t in range(1, T):
        cand = delta[t - 1][:, None] + tr(t)[:L]               # (previous, current)
        back[t] = np.argmax(cand, axis=0)                       # first maximum: lowest label
        delta[t] = cand[back[t], np.arange(L)] + state[t]
    path = np.empty(T, np.int64)
    path[-1] = np.argmax(delta[-1] + end)
    for t in range(T - 1, 0, -1):
        path[t - 1] = back[t, path[t]]
    return path, float((delta[-1] + end)[path[-1]])


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
    want_path, want_score = _reference_viterbi(state, trans, end)
    np.testing.assert_array_equal(path, want_path)
    assert score == want_score


def _reference_epoch(order, sent_ptr, X, XT, y, allowed, W, U, Wt, Ut, Wc, Uc, mask, end, c):
    L = Wt.shape[1]
    mistakes = token_errors = 0
    for s in order:
        a, b = sent_ptr[s], sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        state = np.zeros((T, L))
        trans = np.empty((T, L + 1, L))
        for t in range(T):
            for at in X[a + t]:
                if at >= 0:
                    state[t] += W[at]
            trans[t] = Wt + mask
            for at in XT[a + t]:
                if at >= 0:
                    trans[t] += Wc[at]
        path, _ = _reference_viterbi(state, trans, end)
        gold = y[a:b]
        if (path != gold).any():
            mistakes += 1
            for t in range(T):
                g, p = gold[t], path[t]
                gp = L if t == 0 else gold[t - 1]
                pp = L if t == 0 else path[t - 1]
                token_errors += int(g != p)
                if g == p and gp == pp:
                    continue
                for label, prev, sign in ((g, gp, 1.0), (p, pp, -1.0)):
                    if g != p:
                        for at in X[a + t]:
                            if at >= 0 and allowed[at, label]:
                                W[at, label] += sign
                                U[at, label] += c * sign
                    Wt[prev, label] += sign
                    Ut[prev, label] += c * sign
                    for at in XT[a + t]:
                        if at >= 0:
                            Wc[at, prev, label] += sign
                            Uc[at, prev, label] += c * sign
        c += 1
    return mistakes, token_errors, c


@st.composite
def problems(draw):
    L = draw(st.integers(1, 12))         # scalar only, a vector of 4, of 8, 8 + 4, remainders
    n_sent = draw(st.integers(1, 6))     # shorter and longer than the prefetch pipeline
    K = draw(st.integers(1, 3))
    KT = draw(st.sampled_from([0, 0, 1]))
    A = draw(st.integers(1, 10))
    AT = 3
    kind = draw(st.sampled_from(["all", "observed"]))
    constrained = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    lengths = rng.integers(0, 7, n_sent)
    sent_ptr = np.zeros(n_sent + 1, np.int64)
    np.cumsum(lengths, out=sent_ptr[1:])
    n = int(sent_ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    y = rng.integers(0, L, n).astype(np.int32)
    mask = np.zeros((L + 1, L))
    if constrained:
        mask[rng.random((L + 1, L)) < 0.2] = -np.inf
        mask[:, 0] = 0.0                 # label 0 always reachable: every sentence has a path
        for s in range(n_sent):          # gold paths stay allowed (as a scheme's data would be)
            for t in range(sent_ptr[s], sent_ptr[s + 1]):
                mask[L if t == sent_ptr[s] else y[t - 1], y[t]] = 0.0
    return sent_ptr, X, XT, y, mask, A, AT, L, kind, rng


@settings(max_examples=150, deadline=None)
@given(problems())
def test_compiled_epochs_equal_the_reference(problem):
    sent_ptr, X, XT, y, mask, A, AT, L, kind, rng = problem
    fs = feature_set(kind, X, y, A, L)
    end = np.zeros(L)
    rows = np.repeat(np.arange(A), np.diff(fs.ptr))
    active = fs.active.astype(bool) if len(fs.active) else np.ones(len(rows), bool)
    allowed = np.zeros((A, L), bool)  # the feature set as a dense mask
    allowed[rows[active], fs.labels[active]] = True

    W, U = np.zeros(len(fs.labels), np.float32), np.zeros(len(fs.labels))
    Wt, Ut = np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L))
    Wc, Uc = np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))
    rW, rU = np.zeros((A, L)), np.zeros((A, L))
    rWt, rUt = np.zeros((L + 1, L)), np.zeros((L + 1, L))
    rWc, rUc = np.zeros((AT, L + 1, L)), np.zeros((AT, L + 1, L))
    c = rc = 0
    max_len = int(np.diff(sent_ptr).max())
    for epoch in range(3):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        got = _epoch_kernel()(order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active, W, U,
                                  Wt, Ut, Wc, Uc, mask, end, c, max_len)
        want = _reference_epoch(order, sent_ptr, X, XT, y, allowed, rW, rU, rWt, rUt, rWc, rUc,
                                mask, end, rc)
        assert tuple(int(v) for v in got) == want
        c, rc = int(got[2]), want[2]
        dense_W, dense_U = np.zeros((A, L)), np.zeros((A, L))
        dense_W[rows, fs.labels] = W
        dense_U[rows, fs.labels] = U
        np.testing.assert_array_equal(dense_W, rW)
        np.testing.assert_array_equal(dense_U, rU)
        np.testing.assert_array_equal(Wt, rWt)
        np.testing.assert_array_equal(Ut, rUt)
        np.testing.assert_array_equal(Wc, rWc)
        np.testing.assert_array_equal(Uc, rUc)
