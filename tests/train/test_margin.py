"""The structured margin perceptron (cost-augmented decoding) and passive-aggressive steps.

* margin 0 with perceptron steps is today's epoch bit for bit: through the margin kernel itself
  (plain, valued, partial) and through `train_perceptron`, which then runs the default kernel;
* the compiled margin epochs equal the numpy reference (`reference.reference_epoch` with ``margin``
  and ``step``) update for update, weights stored as float32 as the kernel stores them;
* PA steps computed by hand on tiny sentences (one where a feature's occurrences cancel in Δφ);
* PA with a huge C on separable data stops making mistakes;
* bad hyperparameters are refused with `InputError`.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import dense_pairs, dense_weights, random_sentences, reference_epoch, reference_viterbi

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.state_weights import feature_set
from structperc.train import epoch_kernels
from structperc.train.perceptron import PerceptronState, _epoch_kernel, margin_hyperparameters, train_perceptron

DYADIC = np.array([-1.0, -0.5, 0.5, 1.0, 1.5, 2.0], dtype=np.float32)


def _random_problem(rng, L, n_sent=6, K=3, KT=1, A=10, AT=3, max_len=7):
    return random_sentences(rng, n_sent, L, A, AT, K, KT, max_len)


def _zeros(fs, L, AT):
    return [np.zeros(len(fs.labels), np.float32), np.zeros(len(fs.labels)),
            np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L)),
            np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))]


def test_hyperparameter_layout_matches_the_kernel():
    H = margin_hyperparameters(0.5, "pa", 0.1)
    assert H[epoch_kernels.H_MARGIN] == 0.5 and H[epoch_kernels.H_C] == 0.1
    assert H[epoch_kernels.H_STEP] == epoch_kernels.STEP_PA
    assert margin_hyperparameters(0.5, "perceptron", 1)[epoch_kernels.H_STEP] == epoch_kernels.STEP_PERCEPTRON
    assert margin_hyperparameters(0, "perceptron", 1) is None  # the default epoch


@pytest.mark.parametrize("margin, step, C", [(-1, "perceptron", 1), (float("nan"), "pa", 1),
                                             (0, "mira", 1), (0, "pa", 0), (0, "pa", float("inf"))])
def test_bad_hyperparameters_are_refused(margin, step, C):
    with pytest.raises(InputError):
        margin_hyperparameters(margin, step, C)


@pytest.mark.parametrize("variant", ["plain", "valued", "partial"])
def test_margin_zero_perceptron_steps_equal_the_default_epoch_bit_for_bit(variant):
    """The margin kernel with ρ = 0 and τ = 1 against the default kernels, over several epochs of
    weights that grow past small integers (ties and all)."""
    rng = np.random.default_rng(7)
    L, AT = 5, 3
    sent_ptr, X, XT, y = _random_problem(rng, L, n_sent=40, max_len=12)
    fs = feature_set("observed", X, y, 10, L)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    max_len = int(np.diff(sent_ptr).max())
    n = len(y)
    allowed, partial = np.zeros((0, 1), np.uint8), np.zeros(0, np.uint8)
    V = rng.choice(DYADIC, X.shape).astype(np.float32)
    if variant == "partial":
        allowed = np.zeros((n, L), np.uint8)
        allowed[np.arange(n), y] = 1
        allowed[rng.random(n) < 0.3] = 1
        partial = np.ones(len(sent_ptr) - 1, np.uint8)
    H = np.array([0.0, epoch_kernels.STEP_PERCEPTRON, 1.0])
    a, b = _zeros(fs, L, AT), _zeros(fs, L, AT)
    ca = cb = 0
    for _ in range(4):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        common = (order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active)
        if variant == "plain":
            got_a = _epoch_kernel("train_epoch")(*common, *a, mask, end, ca, max_len) + (0,)
            got_b = _epoch_kernel("train_epoch_margin")(*common, *b, mask, end, cb, max_len, allowed, partial, H)
        elif variant == "valued":
            got_a = _epoch_kernel("train_epoch_valued")(*common, *a, mask, end, ca, max_len, allowed, partial, V)
            got_b = _epoch_kernel("train_epoch_margin_valued")(*common, *b, mask, end, cb, max_len, allowed,
                                                               partial, V, H)
        else:
            got_a = _epoch_kernel("train_epoch_partial")(*common, *a, mask, end, ca, max_len, allowed, partial)
            got_b = _epoch_kernel("train_epoch_margin")(*common, *b, mask, end, cb, max_len, allowed, partial, H)
        assert tuple(got_a) == tuple(got_b)
        ca, cb = int(got_a[2]), int(got_b[2])
        for u, v in zip(a, b):
            assert u.tobytes() == v.tobytes()
    assert np.abs(a[0]).max() > 2  # the weights did move past the first updates


def test_train_perceptron_with_the_default_margin_settings_runs_the_default_epoch():
    rng = np.random.default_rng(3)
    L = 4
    sent_ptr, X, XT, y = _random_problem(rng, L, n_sent=30, KT=0, max_len=10)
    X[X < 0] = 0
    feats = Features(state=X, trans=XT, sent_ptr=sent_ptr)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    results = []
    for kwargs in ({}, {"margin": 0.0, "step": "perceptron", "C": 5.0}):
        state = PerceptronState.zeros(10, 0, L)
        w, _ = train_perceptron(feats, y, state, mask=mask, end=end, epochs=3, seed=1, **kwargs)
        results.append(w)
    assert results[0].sparse.values.tobytes() == results[1].sparse.values.tobytes()
    assert results[0].trans.tobytes() == results[1].trans.tobytes()
    state = PerceptronState.zeros(10, 0, L)
    w, _ = train_perceptron(feats, y, state, mask=mask, end=end, epochs=3, seed=1, margin=1.0)
    assert w.sparse.values.tobytes() != results[0].sparse.values.tobytes()  # the margin does change training


@st.composite
def problems(draw):
    L = draw(st.integers(1, 10))
    K = draw(st.integers(1, 3))
    KT = draw(st.sampled_from([0, 0, 1]))
    kind = draw(st.sampled_from(["all", "observed"]))
    constrained = draw(st.booleans())
    valued = draw(st.booleans())
    partly = draw(st.booleans())
    margin = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]))
    step = draw(st.sampled_from(["perceptron", "pa"]))
    C = draw(st.sampled_from([0.1, 1.0, 100.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sent_ptr, X, XT, y = _random_problem(rng, L, n_sent=draw(st.integers(1, 6)), K=K, KT=KT)
    mask = np.zeros((L + 1, L))
    if constrained:
        mask[rng.random((L + 1, L)) < 0.2] = -np.inf
        mask[:, 0] = 0.0
        for s in range(len(sent_ptr) - 1):
            for t in range(sent_ptr[s], sent_ptr[s + 1]):
                mask[L if t == sent_ptr[s] else y[t - 1], y[t]] = 0.0
    V = rng.choice(DYADIC, X.shape).astype(np.float32) if valued else None
    n = len(y)
    allowed = partial = None
    if partly:
        allowed = np.zeros((n, L), np.uint8)
        allowed[np.arange(n), y] = 1
        allowed[rng.random(n) < 0.3] = 1
        partial = (rng.random(len(sent_ptr) - 1) < 0.5).astype(np.uint8)
    return sent_ptr, X, XT, y, mask, L, kind, V, allowed, partial, margin, step, C, rng


@settings(max_examples=200, deadline=None)
@given(problems())
def test_compiled_margin_epochs_equal_the_reference(problem):
    sent_ptr, X, XT, y, mask, L, kind, V, allowed, partial, margin, step, C, rng = problem
    A, AT = 10, 3
    fs = feature_set(kind, X, y, A, L)
    end = np.zeros(L)
    pairs = dense_pairs(fs, A, L)
    W, U, Wt, Ut, Wc, Uc = _zeros(fs, L, AT)
    rW, rU = np.zeros((A, L), np.float32), np.zeros((A, L))
    rWt, rUt = np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L))
    rWc, rUc = np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))
    H = margin_hyperparameters(margin, step, C)
    if H is None:
        H = np.array([0.0, epoch_kernels.STEP_PERCEPTRON, C])
    k_allowed = allowed if allowed is not None else np.zeros((0, 1), np.uint8)
    k_partial = partial if partial is not None else np.zeros(0, np.uint8)
    c = rc = 0
    max_len = max(int(np.diff(sent_ptr).max()), 1)
    for _epoch in range(3):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        args = (order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active, W, U, Wt, Ut, Wc, Uc, mask, end, c,
                max_len, k_allowed, k_partial)
        if V is None:
            got = _epoch_kernel("train_epoch_margin")(*args, H)
        else:
            got = _epoch_kernel("train_epoch_margin_valued")(*args, V, H)
        want = reference_epoch(order, sent_ptr, X, XT, y, pairs, rW, rU, rWt, rUt, rWc, rUc, mask, end, rc,
                               values=V, allowed=allowed, partial=partial, margin=margin, step=step, C=C)
        assert tuple(int(v) for v in got) == want
        c, rc = int(got[2]), want[2]
        dense_W = dense_weights(fs, A, L, W, np.float32)
        dense_U = dense_weights(fs, A, L, U)
        np.testing.assert_array_equal(dense_W, rW)
        np.testing.assert_array_equal(dense_U, rU)
        np.testing.assert_array_equal(Wt, rWt)
        np.testing.assert_array_equal(Ut, rUt)
        np.testing.assert_array_equal(Wc, rWc)
        np.testing.assert_array_equal(Uc, rUc)


def _one_sentence(X, y, margin, C, c0=3):
    """One margin/PA epoch over one sentence from zero weights (the "all" feature set over the
    attributes of ``X``, no transition attributes), the counter starting at ``c0``."""
    X = np.asarray(X, np.int32)
    y = np.asarray(y, np.int32)
    L = 2
    fs = feature_set("all", X, y, int(X.max()) + 1, L)
    W, U, Wt, Ut, Wc, Uc = _zeros(fs, L, 0)
    H = np.array([margin, epoch_kernels.STEP_PA, C])
    got = _epoch_kernel("train_epoch_margin")(
        np.zeros(1, np.int64), np.array([0, len(y)], np.int64), X, np.zeros((len(y), 0), np.int32), y,
        fs.ptr, fs.labels, fs.active, W, U, Wt, Ut, Wc, Uc, np.zeros((L + 1, L)), np.zeros(L), c0, len(y),
        np.zeros((0, 1), np.uint8), np.zeros(0, np.uint8), H)
    return tuple(int(v) for v in got), W.reshape(-1, L), U.reshape(-1, L), Wt, Ut


def test_a_pa_step_by_hand():
    """Tokens with attributes 0 and 1, gold labels (0, 1), zero weights: Viterbi ties go to label 0,
    so ŷ = (0, 0). Hamming 1, s(ŷ) − s(y) = 0, so ℓ = 0 + √1 = 1 (margin 0: CRFsuite's loss).
    Δφ = +(1, lab 1) − (1, lab 0) + trans(0→1) − trans(0→0): ‖Δφ‖² = 4, τ = min(C, 1/4)."""
    for C, tau in ((1.0, 0.25), (0.1, 0.1)):
        counts, W, U, Wt, Ut = _one_sentence([[0], [1]], [0, 1], 0.0, C)
        assert counts == (1, 1, 4, 0)
        np.testing.assert_array_equal(W, np.array([[0, 0], [-tau, tau]], np.float32))
        np.testing.assert_array_equal(U, [[0, 0], [-3 * tau, 3 * tau]])  # c·τ·Δ with c = 3
        want_t = np.zeros((3, 2))
        want_t[0, 1], want_t[0, 0] = tau, -tau
        np.testing.assert_allclose(Wt, want_t, rtol=1e-7)
        np.testing.assert_allclose(Ut, 3 * want_t, rtol=1e-7)


def test_a_margin_pa_step_by_hand_where_features_cancel():
    """One attribute (0) at both tokens, gold (0, 1), margin 1: the cost-augmented scores are
    (0, 1) then (1, 0), so ŷ = (1, 0) with augmented score 2 against the gold's 0: ℓ = 2 (the hinge,
    Hamming 2 included). Δφ's state part cancels ((0, lab 0) and (0, lab 1) each once + and once −);
    its transitions are bos→0, 0→1 (+) and bos→1, 1→0 (−): ‖Δφ‖² = 4 (not the 8 occurrences),
    τ = 2/4 = 0.5."""
    counts, W, U, Wt, Ut = _one_sentence([[0], [0]], [0, 1], 1.0, 1.0)
    assert counts == (1, 2, 4, 0)
    np.testing.assert_array_equal(W, [[0, 0]])
    np.testing.assert_array_equal(U, [[0, 0]])
    np.testing.assert_array_equal(Wt, [[0, 0.5], [-0.5, 0], [0.5, -0.5]])
    np.testing.assert_array_equal(Ut, 3 * Wt.astype(np.float64))


@pytest.mark.parametrize("margin", [0.0, 1.0])
def test_pa_with_a_huge_c_converges_on_separable_data(margin):
    """Each token's attribute determines its label (separable with any margin): PA with C = 1e6 (the
    step that makes each instance's loss zero) reaches an epoch without a mistake. With a margin the
    constraints it meets are active (the gold path beats the best other one by exactly ρ·Hamming),
    so float32 rounding leaves a tie now and then: there the current weights must meet the margin
    to within rounding, every gold path beating every other by 0.999·Hamming."""
    rng = np.random.default_rng(11)
    L, n_sent = 4, 60
    lengths = rng.integers(1, 9, n_sent)
    sent_ptr = np.zeros(n_sent + 1, np.int64)
    np.cumsum(lengths, out=sent_ptr[1:])
    n = int(sent_ptr[-1])
    words = rng.integers(0, 12, n)
    y = (words % L).astype(np.int32)
    X = np.stack([words, rng.integers(12, 20, n)], axis=1).astype(np.int32)  # + a noise attribute
    feats = Features(state=X, trans=np.zeros((n, 0), np.int32), sent_ptr=sent_ptr)
    reports = []
    state = PerceptronState.zeros(20, 0, L)
    train_perceptron(feats, y, state, mask=np.zeros((L + 1, L)), end=np.zeros(L), epochs=30, seed=0,
                     callback=reports.append, margin=margin, step="pa", C=1e6)
    assert reports[0].mistakes > 0
    if margin == 0:
        assert reports[-1].mistakes == 0
        return
    W = state.W.reshape(20, L).astype(np.float64)
    for s in range(n_sent):
        a, b = sent_ptr[s], sent_ptr[s + 1]
        scores = W[X[a:b]].sum(axis=1) + 0.999 * margin * (np.arange(L) != y[a:b, None])
        path, _ = reference_viterbi(scores, (state.Wt.astype(np.float64))[None], np.zeros(L))
        np.testing.assert_array_equal(path, y[a:b])


def test_tagger_and_cli_pass_the_update_rule_through(tmp_path):
    """``Tagger(step="pa", margin=…, C=…)`` trains with it (other weights than the default), saves it
    in the model's parameters, and refuses bad values in one line."""
    from testkit import SAMPLE_TRAIN

    from structperc import Tagger
    from structperc.errors import InputError

    plain = Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=2).fit(str(SAMPLE_TRAIN))
    pa = Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=2, step="pa", margin=0.5,
                C=0.5).fit(str(SAMPLE_TRAIN))
    assert not np.array_equal(plain.weights_.sparse.values, pa.weights_.sparse.values)
    pa.save(tmp_path / "m")
    again = Tagger.load(tmp_path / "m")
    assert (again.step, again.margin, again.C) == ("pa", 0.5, 0.5)
    for bad in ({"step": "mira"}, {"margin": -1.0}, {"C": 0.0}):
        with pytest.raises(InputError):
            Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=1, **bad).fit(str(SAMPLE_TRAIN))
