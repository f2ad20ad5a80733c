"""Second-order transitions (issue 20): the pair Viterbi against brute force and against a dense
numpy reference (ties included), the first-order path when the second-order weights are zero, the
compiled epoch against a numpy reference epoch, and data that only a second-order model fits."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import dense_pairs, dense_weights, epoch_problem, reference_lattice

from structperc.decode.decoder import predict
from structperc.decode.order2 import predict_order2
from structperc.decode.order2_kernels import viterbi2_corpus
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.state_weights import StateWeights, feature_set
from structperc.model.weights import Weights
from structperc.train import epoch_kernels
from structperc.train.order2 import SecondOrder, train_perceptron_order2
from structperc.train.order2_kernels import train_epoch_order2, viterbi2
from structperc.train.perceptron import PerceptronState, train_perceptron


def path_score(state, trans, T2, end, path):
    """Score of ``path``: state, first- and second-order transitions (``<bos>`` = L), end."""
    T, L = state.shape
    total = 0.0
    for t in range(T):
        tr = trans[t if trans.shape[0] == T else 0]
        p1 = L if t == 0 else path[t - 1]
        p2 = L if t < 2 else path[t - 2]
        total += state[t, path[t]] + tr[p1, path[t]] + T2[p2, p1, path[t]]
    return total + end[path[-1]]


def brute_force(state, trans, T2, end):
    """Every label sequence's score: (best score, the sequences within 1e-9 of it)."""
    T, L = state.shape
    scores = {seq: path_score(state, trans, T2, end, seq) for seq in itertools.product(range(L), repeat=T)}
    best = max(scores.values())
    return best, [seq for seq, s in scores.items() if s >= best - 1e-9]


def reference_viterbi2(state, trans, T2, end):
    """The pair Viterbi written densely: ``A[t, p, y]`` the best score of a path with labels (p, y)
    at t − 1, t before y's state score; predecessors chosen by np.argmax (lowest on ties); the last
    pair label first, then predecessor. Returns the path and its score."""
    T, L = state.shape

    def tr(t):
        return trans[t if trans.shape[0] == T else 0]
    A = np.full((T, L + 1, L), -np.inf)
    back = np.zeros((T, L + 1, L), np.int64)
    A[0, L] = tr(0)[L] + T2[L, L].astype(np.float64)
    for t in range(1, T):
        cand = A[t - 1][:, :, None] + T2[:, :L].astype(np.float64)    # (q, p, y)
        back[t, :L] = np.argmax(cand, axis=0)
        best = np.max(cand, axis=0)
        A[t, :L] = (best + state[t - 1][:, None]) + tr(t)[:L]
    last = A[T - 1]
    p_of_y = np.argmax(last, axis=0)
    total = (last[p_of_y, np.arange(L)] + state[T - 1]) + end
    path = np.empty(T, np.int64)
    path[-1] = np.argmax(total)
    if T > 1:
        path[-2] = p_of_y[path[-1]]
    for t in range(T - 1, 1, -1):
        path[t - 2] = back[t, path[t - 1], path[t]]
    return path, float(total[path[-1]])


def lattice(rng, T, L, per_token, forbid, integers):
    """Random state, transition, second-order and end scores; with ``forbid``, some transitions
    and ends are -inf but label 0 keeps every path alive."""
    draw = (lambda shape: rng.integers(-2, 3, shape).astype(np.float64)) if integers else \
        (lambda shape: rng.normal(size=shape))
    state = draw((T, L))
    trans = draw((T if per_token else 1, L + 1, L))
    T2 = draw((L + 1, L + 1, L))
    end = np.zeros(L)
    if forbid:
        trans[rng.random(trans.shape) < 0.3] = -np.inf
        trans[..., 0] = 0.0
        end[rng.random(L) < 0.3] = -np.inf
        end[0] = 0.0
    return state, trans, T2, end


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_pair_viterbi_equals_brute_force(T, L, per_token, forbid, seed):
    state, trans, T2, end = lattice(np.random.default_rng(seed), T, L, per_token, forbid, integers=False)
    path = np.empty(T, np.int32)
    score = viterbi2(state, trans, T2, end, path)
    best, argmax = brute_force(state, trans, T2, end)
    assert score == pytest.approx(best, abs=1e-9)
    assert path_score(state, trans, T2, end, path) == pytest.approx(best, abs=1e-9)
    if len(argmax) == 1:
        assert tuple(path) == argmax[0]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 7), st.integers(1, 9), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_pair_viterbi_equals_the_dense_reference_ties_included(T, L, per_token, forbid, seed):
    """Small integer scores (ties everywhere): the training kernel (float64) and the tagging kernel
    (float32, exact on these integers) give the reference's path and score."""
    state, trans, T2, end = lattice(np.random.default_rng(seed), T, L, per_token, forbid, integers=True)
    want, want_score = reference_viterbi2(state, trans, T2, end)
    path = np.empty(T, np.int32)
    assert viterbi2(state, trans, T2, end, path) == want_score
    np.testing.assert_array_equal(path, want)
    out = np.empty(T, np.int32)
    f32 = np.float32
    viterbi2_corpus(state.astype(f32), trans.astype(f32), T2.astype(f32), end, np.array([0, T], np.int64),
                    np.where(np.isfinite(trans).any(axis=0), 0.0, -np.inf), out)
    np.testing.assert_array_equal(out, want)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8), st.integers(1, 12), st.booleans(), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_zero_second_order_weights_give_the_first_order_path(T, L, per_token, forbid, integers, seed):
    """T2 ≡ 0: first-order Viterbi's path and score bit for bit, ties (integer scores) included."""
    state, trans, _, end = lattice(np.random.default_rng(seed), T, L, per_token, forbid, integers)
    path, first = np.empty(T, np.int32), np.empty(T, np.int32)
    score = viterbi2(state, trans, np.zeros((L + 1, L + 1, L), np.float32), end, path)
    assert score == epoch_kernels.viterbi(state, trans, end, first)
    np.testing.assert_array_equal(path, first)


def random_scheme(rng, L: int, forbid: bool) -> tuple[np.ndarray, np.ndarray]:
    """A transition mask and end penalties: all allowed, or (``forbid``) some transitions and ends
    forbidden at random, label 0 always reachable and a possible end."""
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    if forbid:
        mask[rng.random((L + 1, L)) < 0.3] = -np.inf
        mask[:, 0] = 0.0
        end[rng.random(L) < 0.3] = -np.inf
        end[0] = 0.0
    return mask, end


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9), st.integers(1, 6), st.integers(0, 2), st.booleans(), st.booleans(),
       st.integers(0, 2**32 - 1))
def test_zero_second_order_decoding_equals_predict(L, n_sent, KT, forbid, integers, seed):
    """The corpus decoder with T2 ≡ 0 gives `predict`'s labels (the first-order tagging decoder)."""
    rng = np.random.default_rng(seed)
    A, AT, K = 7, 3, 3
    draw = (lambda shape: rng.integers(-2, 3, shape).astype(np.float32)) if integers else \
        (lambda shape: rng.normal(size=shape).astype(np.float32))
    mask, end = random_scheme(rng, L, forbid)
    cond = np.zeros((AT + 1, L + 1, L), np.float32)
    cond[:-1] = draw((AT, L + 1, L))
    weights = Weights(StateWeights.from_dense(draw((A, L))), draw((L + 1, L)), cond, mask, end)
    lengths = rng.integers(0, 9, n_sent)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(ptr[-1])
    feats = Features(rng.integers(-1, A, (n, K)).astype(np.int32), rng.integers(-1, AT, (n, KT)).astype(np.int32),
                     ptr)
    got = predict_order2(weights, np.zeros((L + 1, L + 1, L), np.float32), feats)
    np.testing.assert_array_equal(got, predict(weights, feats))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(0, 2), st.booleans(), st.integers(0, 2**32 - 1))
def test_corpus_decoding_equals_the_reference(L, n_sent, KT, forbid, seed):
    """`predict_order2` on a corpus (batches of a few tokens, conditioned transitions or not) gives the
    dense reference's path of every sentence, on integer weights (ties; float32 is exact there)."""
    import structperc.decode.order2 as order2

    rng = np.random.default_rng(seed)
    A, AT, K = 6, 3, 2
    mask, end = random_scheme(rng, L, forbid)
    cond = np.zeros((AT + 1, L + 1, L), np.float32)
    cond[:-1] = rng.integers(-2, 3, (AT, L + 1, L))
    weights = Weights(StateWeights.from_dense(rng.integers(-2, 3, (A, L)).astype(np.float32)),
                      rng.integers(-2, 3, (L + 1, L)).astype(np.float32), cond, mask, end)
    T2 = rng.integers(-2, 3, (L + 1, L + 1, L)).astype(np.float32)
    lengths = rng.integers(0, 7, n_sent)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(ptr[-1])
    feats = Features(rng.integers(-1, A, (n, K)).astype(np.int32), rng.integers(-1, AT, (n, KT)).astype(np.int32),
                     ptr)
    saved = order2.BATCH_TOKENS
    order2.BATCH_TOKENS = int(rng.integers(1, 12))
    try:
        got = predict_order2(weights, T2, feats)
    finally:
        order2.BATCH_TOKENS = saved
    state = weights.state_scores(feats.state).astype(np.float64)
    trans = weights.transition_scores(feats.trans).astype(np.float64)
    for s in range(n_sent):
        a, b = ptr[s], ptr[s + 1]
        if b > a:
            tr = trans[a:b] if KT else trans[None]
            want, _ = reference_viterbi2(state[a:b], tr, T2, end)
            np.testing.assert_array_equal(got[a:b], want)


def reference_epoch2(order, sent_ptr, X, XT, y, pairs, W, U, Wt, Ut, Wc, Uc, W2, U2, mask, end, c):
    """One epoch of the second-order averaged perceptron on dense float64 weights: the first-order
    reference epoch's update plus ±1 on the gold and predicted triples (±c on their sums) where they
    differ. Returns (mistakes, token errors, c)."""
    L = Wt.shape[1]
    mistakes = token_errors = 0
    for s in order:
        a, b = sent_ptr[s], sent_ptr[s + 1]
        T = b - a
        if T == 0:
            c += 1
            continue
        state, trans = reference_lattice(X, XT, np.ones(X.shape), W, Wt, Wc, mask, a, b)
        path, _ = reference_viterbi2(state, trans, W2, end)
        gold = y[a:b]
        if (path != gold).any():
            mistakes += 1
            for t in range(T):
                g, p = gold[t], path[t]
                g1, p1 = (L, L) if t == 0 else (gold[t - 1], path[t - 1])
                g2, p2 = (L, L) if t < 2 else (gold[t - 2], path[t - 2])
                token_errors += int(g != p)
                for label, prev, prev2, sign in ((g, g1, g2, 1.0), (p, p1, p2, -1.0)):
                    if g != p or g1 != p1:
                        if g != p:
                            for at in X[a + t]:
                                if at >= 0 and pairs[at, label]:
                                    W[at, label] += sign
                                    U[at, label] += c * sign
                        Wt[prev, label] += sign
                        Ut[prev, label] += c * sign
                        for at in XT[a + t]:
                            if at >= 0:
                                Wc[at, prev, label] += sign
                                Uc[at, prev, label] += c * sign
                    if g != p or g1 != p1 or g2 != p2:
                        W2[prev2, prev, label] += sign
                        U2[prev2, prev, label] += c * sign
        c += 1
    return mistakes, token_errors, c


@st.composite
def problems(draw):
    return epoch_problem(draw, max_labels=6, max_attributes=8)


@settings(max_examples=150, deadline=None)
@given(problems())
def test_compiled_epoch_equals_the_reference(problem):
    sent_ptr, X, XT, y, mask, A, AT, L, kind, rng = problem
    fs = feature_set(kind, X, y, A, L)
    end = np.zeros(L)
    pairs = dense_pairs(fs, A, L)
    W, U = np.zeros(len(fs.labels), np.float32), np.zeros(len(fs.labels))
    Wt, Ut = np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L))
    Wc, Uc = np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))
    W2, U2 = np.zeros((L + 1, L + 1, L), np.float32), np.zeros((L + 1, L + 1, L))
    ref = [np.zeros((A, L)), np.zeros((A, L)), np.zeros((L + 1, L)), np.zeros((L + 1, L)),
           np.zeros((AT, L + 1, L)), np.zeros((AT, L + 1, L)), np.zeros((L + 1, L + 1, L)),
           np.zeros((L + 1, L + 1, L))]
    c = rc = 0
    max_len = max(int(np.diff(sent_ptr).max()), 1)
    for _epoch in range(3):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        got = train_epoch_order2(order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active, W, U, Wt, Ut, Wc, Uc,
                                 W2, U2, mask, end, c, max_len)
        want = reference_epoch2(order, sent_ptr, X, XT, y, pairs, *ref, mask, end, rc)
        assert tuple(int(v) for v in got) == want
        c, rc = int(got[2]), want[2]
        dense_W = dense_weights(fs, A, L, W)
        dense_U = dense_weights(fs, A, L, U)
        for mine, theirs in zip((dense_W, dense_U, Wt, Ut, Wc, Uc, W2, U2), ref):
            np.testing.assert_array_equal(mine, theirs)


def period_four_data(lengths=range(4, 13)):
    """Sentences of one repeated token whose labels run A A B B A A B B …: y_t = not y_{t−2}, a
    second-order rule. No first-order model fits them: on a sentence of length 8, the path
    A A A A B B B B and A A B A B A B B bracket the gold one (their score differences to it are
    opposite), whatever the weights."""
    pattern = [0, 0, 1, 1]
    y = np.concatenate([[pattern[t % 4] for t in range(n)] for n in lengths]).astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(list(lengths))]).astype(np.int64)
    n = int(ptr[-1])
    return Features(np.zeros((n, 1), np.int32), np.zeros((n, 0), np.int32), ptr), y


def test_second_order_data_is_fitted_by_order_two_only():
    feats, y = period_four_data()
    L = 2
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    first: list = []
    train_perceptron(feats, y, PerceptronState.zeros(1, 0, L), mask=mask, end=end, epochs=30, seed=0,
                     callback=first.append)
    second: list = []
    weights, T2, _ = train_perceptron_order2(feats, y, PerceptronState.zeros(1, 0, L), mask=mask, end=end,
                                             epochs=30, seed=0, callback=second.append)
    assert all(r.mistakes > 0 for r in first)
    assert second[-1].mistakes == 0
    np.testing.assert_array_equal(predict_order2(weights, T2, feats), y)


def test_order_two_with_dev_scoring_keeps_the_best_epoch():
    feats, y = period_four_data()
    L = 2
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    seen: list = []

    def dev_score(weights, T2):
        return float((predict_order2(weights, T2, feats) == y).mean())
    weights, T2, best = train_perceptron_order2(feats, y, PerceptronState.zeros(1, 0, L), mask=mask, end=end,
                                                epochs=6, dev_score=dev_score, callback=seen.append)
    scores = [r.dev_score for r in seen]
    assert best == 1 + int(np.argmax(scores))
    assert dev_score(weights, T2) == max(scores)


def test_order_two_refuses_what_it_does_not_do():
    feats, y = period_four_data([4, 5])
    L = 2
    mask, end = np.zeros((L + 1, L)), np.zeros(L)

    def train(**kwargs):
        return train_perceptron_order2(feats, y, PerceptronState.zeros(1, 0, L), mask=mask, end=end, epochs=1,
                                       **kwargs)
    with pytest.raises(InputError, match="attribute values"):
        train(values=np.full((len(y), 1), 2.0, np.float32))
    allowed = np.zeros((len(y), L), bool)
    allowed[np.arange(len(y)), y] = True
    allowed[0] = True
    with pytest.raises(InputError, match="partially labelled"):
        train(allowed=allowed)
    with pytest.raises(InputError, match="default update"):
        train(margin=1.0)
    with pytest.raises(InputError, match="default update"):
        train(step="pa")
    allowed[0] = False
    allowed[0, y[0]] = True
    train(allowed=allowed, values=np.ones((len(y), 1), np.float32))  # fully labelled, all ones: accepted


def test_second_order_state_zeros_and_average():
    second = SecondOrder.zeros(3)
    assert second.W2.shape == (4, 4, 3) and second.W2.dtype == np.float32 and second.U2.dtype == np.float64
    second.W2[0, 1, 2], second.U2[0, 1, 2] = 2.0, 3.0
    assert second.averaged(4)[0, 1, 2] == np.float32(2.0 - 0.75)
