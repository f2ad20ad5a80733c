"""The compiled forward-backward (`structperc.decode.fb_kernels.fb_corpus`, JIT and ahead-of-time
build) against brute-force enumeration and the numpy twin of `structperc.decode.marginals`: random
tiny corpora (T <= 5, L <= 4) with scheme masks, conditioned transitions, sparse and dense state
weights, per-token allowed masks, sentences without an allowed path, extreme score ranges (the
underflow fallback), and trained models."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import SAMPLE_TEST, SAMPLE_TRAIN

from structperc.compiled import loader
from structperc.decode import fb_kernels
from structperc.decode import marginals as M
from structperc.decode.decoder import predict
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights

NEG = -np.inf
AOT = loader.aot("fb_corpus")
aot = pytest.mark.skipif(AOT is None, reason="structperc._aot_fb is not built or stale "
                         "(python -m structperc.compiled.build _aot_fb)")


# ------------------------------------------------------------------------------ problems
def make_problem(rng, L, lengths, conditioned=False, sparse=True, mask_rate=0.2, end_rate=0.25,
                 allowed_rate=0.0, scale=2.0, K=3, A=12, AT=4, KT=None):
    """Random weights and features: (Weights, Features, allowed or None); ``KT`` conditioned
    templates (default: 1 or 2 when ``conditioned``, else 0)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    n = int(ptr[-1])
    if sparse:   # a random subset of labels per attribute (some rows empty, some full)
        rows = [np.flatnonzero(rng.random(L) < rng.choice([0.0, 0.5, 1.0])) for _ in range(A)]
        sptr = np.zeros(A + 1, dtype=np.int64)
        np.cumsum([len(r) for r in rows], out=sptr[1:])
        labs = np.concatenate(rows + [np.zeros(0, dtype=np.int64)]).astype(np.int16)
        sw = StateWeights(sptr, labs, rng.normal(scale=scale, size=len(labs)).astype(np.float32), L)
    else:
        sw = StateWeights.from_dense(rng.normal(scale=scale, size=(A, L)).astype(np.float32))
    trans = rng.normal(scale=scale / 2, size=(L + 1, L)).astype(np.float32)
    mask = np.where(rng.random((L + 1, L)) < mask_rate, NEG, 0.0)
    end = np.where(rng.random(L) < end_rate, NEG, 0.0)
    if KT is None:
        KT = int(rng.integers(1, 3)) if conditioned else 0
    cond = np.zeros((AT + 1, L + 1, L), dtype=np.float32)
    cond[:AT] = rng.normal(scale=scale / 2, size=(AT, L + 1, L))
    w = Weights(sw, trans, cond, mask, end)
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    allowed = rng.random((n, L)) >= allowed_rate if allowed_rate > 0 else None
    return w, Features(X, XT, ptr), allowed


def call_kernel(kernel, w, feats, tau=1.0, allowed=None, ids=None, want_marginals=True, cache_bytes=None):
    """Run ``kernel`` (JIT or AOT fb_corpus) on a problem, as the driver does; with ``cache_bytes``,
    the JIT `fb_corpus_budget` with that budget for the cached transition tables."""
    args = M._kernel_args(w, feats)
    L = w.n_labels
    n_tok, n_sent = feats.state.shape[0], len(feats.sent_ptr) - 1
    out = np.full((n_tok if want_marginals else 0, L), np.nan)
    log_z = np.full(n_sent, np.nan)
    path_lp = np.full(n_sent if ids is not None else 0, np.nan)
    mask = np.zeros((0, L), dtype=bool) if allowed is None else np.ascontiguousarray(allowed)
    path = np.zeros(0, dtype=np.int32) if ids is None else np.ascontiguousarray(ids, dtype=np.int32)
    if cache_bytes is None:
        kernel(*args, 1.0 / tau, mask, path, out, log_z, path_lp)
    else:
        fb_kernels.fb_corpus_budget(*args, 1.0 / tau, mask, path, out, log_z, path_lp, cache_bytes)
    return out, log_z, path_lp


def lattice(w, feats, allowed, s):
    """Sentence s's float64 lattice as the kernel sees it: state (T, L) with -inf where not allowed,
    trans (T, L + 1, L), end (L,)."""
    a, b = int(feats.sent_ptr[s]), int(feats.sent_ptr[s + 1])
    state = w.state_scores(feats.state[a:b]).astype(np.float64)
    if allowed is not None:
        state[~allowed[a:b]] = NEG
    tr = w.transition_scores(feats.trans[a:b]).astype(np.float64)
    tr = np.broadcast_to(tr, (b - a, w.n_labels + 1, w.n_labels)) if tr.ndim == 2 else tr
    return state, tr, np.asarray(w.end, dtype=np.float64)


def brute(state, trans, end, tau):
    """Marginals (T, L), log Z, every path (P, T) and its score by enumeration."""
    T, L = state.shape
    P = np.array(list(itertools.product(range(L), repeat=T)), dtype=np.int64).reshape(-1, T)
    prev = np.concatenate([np.full((len(P), 1), L), P[:, :-1]], axis=1)
    t = np.arange(T)
    with np.errstate(invalid="ignore"):
        s = state[t, P].sum(axis=1) + trans[t, prev, P].sum(axis=1) + end[P[:, -1]]
    ok = s > NEG
    if not ok.any():
        return np.zeros((T, L)), NEG, P, s
    log_z = np.logaddexp.reduce(s[ok] / tau)
    p = np.exp(np.where(ok, s / tau - log_z, NEG))
    marg = np.stack([np.bincount(P[:, i], weights=p, minlength=L) for i in range(T)])
    return marg, log_z, P, s


def check_against_brute(w, feats, allowed, tau, out, log_z, path_lp=None, ids=None, atol=1e-9):
    assert not np.isnan(out).any() and not np.isnan(log_z).any()
    ptr = feats.sent_ptr
    for s in range(len(ptr) - 1):
        a, b = int(ptr[s]), int(ptr[s + 1])
        state, tr, end = lattice(w, feats, allowed, s)
        marg, lz, P, sc = brute(state, tr, end, tau)
        if lz == NEG:
            assert log_z[s] == NEG and (out[a:b] == 0).all()
        else:
            assert log_z[s] == pytest.approx(lz, abs=atol, rel=1e-12)
            np.testing.assert_allclose(out[a:b], marg, atol=atol, rtol=0)
            np.testing.assert_allclose(out[a:b].sum(axis=1), 1.0, atol=1e-12)
            used = np.zeros_like(marg, dtype=bool)      # labels no allowed path uses: exactly 0
            for t in range(b - a):
                used[t, P[sc > NEG, t]] = True
            assert (out[a:b][~used] == 0).all()
        if ids is not None:
            score = sc[np.flatnonzero((P == ids[a:b]).all(axis=1))[0]]
            if score == NEG:
                assert path_lp[s] == NEG
            else:
                assert path_lp[s] == pytest.approx(score / tau - lz, abs=atol, rel=1e-12)


@pytest.fixture
def compiled_jit(monkeypatch):
    """Make the drivers take the compiled path with the JIT kernel (as if the build were current)."""
    real = loader.aot
    monkeypatch.setattr(loader, "aot", lambda name: fb_kernels.fb_corpus if name == "fb_corpus" else real(name))


# ----------------------------------------------------------------------------- hand cases
def test_hand_example_independent_tokens():
    """No transition scores: each token is a softmax of its own scores."""
    sw = StateWeights.from_dense(np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32))
    w = Weights(sw, np.zeros((3, 2), np.float32), np.zeros((1, 3, 2), np.float32), np.zeros((3, 2)), np.zeros(2))
    feats = Features(np.array([[0], [1]], np.int32), np.zeros((2, 0), np.int32), np.array([0, 2]))
    out, log_z, lp = call_kernel(fb_kernels.fb_corpus, w, feats, ids=np.array([0, 1]))
    p0, p1 = np.exp(1) / (np.exp(1) + 1), np.exp(2) / (np.exp(2) + 1)
    np.testing.assert_allclose(out, [[p0, 1 - p0], [1 - p1, p1]], atol=1e-15)
    assert log_z[0] == pytest.approx(np.log((np.e + 1) * (np.e ** 2 + 1)), abs=1e-14)
    assert lp[0] == pytest.approx(np.log(p0 * p1), abs=1e-14)
    # forcing token 1 to label 0: p(token 0) unchanged, token 1 certain, the best path forbidden
    allowed = np.array([[True, True], [True, False]])
    out, log_z, lp = call_kernel(fb_kernels.fb_corpus, w, feats, allowed=allowed, ids=np.array([0, 1]))
    np.testing.assert_allclose(out, [[p0, 1 - p0], [1, 0]], atol=1e-15)
    assert log_z[0] == pytest.approx(np.log(np.e + 1), abs=1e-14) and lp[0] == NEG


def test_no_allowed_path_and_empty_sentences():
    rng = np.random.default_rng(5)
    w, feats, _ = make_problem(rng, 3, [2, 0, 3, 1], mask_rate=0.0, end_rate=0.0)
    allowed = np.ones((6, 3), dtype=bool)
    allowed[3] = False                       # sentence 2, token 1: nothing allowed
    ids = np.zeros(6, dtype=np.int32)
    out, log_z, lp = call_kernel(fb_kernels.fb_corpus, w, feats, allowed=allowed, ids=ids)
    assert log_z[1] == 0 and lp[1] == 0                        # empty sentence
    assert log_z[2] == NEG and lp[2] == NEG and (out[2:5] == 0).all()
    assert np.isfinite(log_z[[0, 3]]).all() and np.isfinite(lp[[0, 3]]).all()
    # no label may end a sentence: no path anywhere
    w.end = np.full(3, NEG)
    out, log_z, lp = call_kernel(fb_kernels.fb_corpus, w, feats, ids=ids)
    assert (log_z[[0, 2, 3]] == NEG).all() and (out == 0).all() and (lp[[0, 2, 3]] == NEG).all()


# ------------------------------------------------------------------------ brute force
_PROBLEM = dict(L=st.integers(1, 4), n_sent=st.integers(1, 4), conditioned=st.booleans(), sparse=st.booleans(),
                mask_rate=st.sampled_from([0.0, 0.2, 0.5]), allowed_rate=st.sampled_from([0.0, 0.0, 0.2, 0.5]),
                tau=st.sampled_from([0.25, 1.0, 3.7]), seed=st.integers(0, 2 ** 32 - 1))


def draw_problem(seed, L, n_sent, conditioned, sparse, mask_rate, allowed_rate, min_len=1):
    """A `_PROBLEM` draw: (rng, weights, features, allowed or None, a random label path)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_len, 6, n_sent)
    w, feats, allowed = make_problem(rng, L, lengths, conditioned, sparse, mask_rate, allowed_rate=allowed_rate)
    return rng, w, feats, allowed, rng.integers(0, L, int(lengths.sum()))


@settings(max_examples=300, deadline=None)
@given(**_PROBLEM)
def test_kernel_equals_brute_force_and_the_numpy_twin(L, n_sent, conditioned, sparse, mask_rate, allowed_rate,
                                                      tau, seed):
    rng, w, feats, allowed, ids = draw_problem(seed, L, n_sent, conditioned, sparse, mask_rate, allowed_rate)
    ids = ids.astype(np.int32)
    if rng.random() < 0.5:
        ids = predict(w, feats).astype(np.int32)
    out, log_z, lp = call_kernel(fb_kernels.fb_corpus, w, feats, tau, allowed, ids)
    check_against_brute(w, feats, allowed, tau, out, log_z, lp, ids)
    # the numpy twin: same numbers
    m0, z0 = M._marginals_numpy(w, feats, tau, allowed)
    np.testing.assert_allclose(out, m0, atol=1e-12, rtol=0)
    np.testing.assert_allclose(log_z, z0, atol=1e-12, rtol=1e-14)
    np.testing.assert_allclose(lp, M._path_log_probs_numpy(w, feats, ids, tau, allowed), atol=1e-12, rtol=1e-14)
    # marginals only / path only: same numbers
    only_z = call_kernel(fb_kernels.fb_corpus, w, feats, tau, allowed, ids, want_marginals=False)
    np.testing.assert_array_equal(only_z[1], log_z)
    np.testing.assert_array_equal(only_z[2], lp)
    if AOT is not None:
        again = call_kernel(AOT, w, feats, tau, allowed, ids)
        for x, y in zip(again, (out, log_z, lp)):
            np.testing.assert_allclose(x, y, atol=1e-13, rtol=1e-14)


@settings(max_examples=150, deadline=None)
@given(L=st.integers(2, 4), conditioned=st.booleans(), scale=st.sampled_from([300.0, 3000.0]),
       tau=st.sampled_from([0.01, 1.0]), seed=st.integers(0, 2 ** 32 - 1))
def test_extreme_score_ranges_fall_back_exactly(L, conditioned, scale, tau, seed):
    """Scores spanning thousands of units (or a tiny temperature) underflow the scaled pass; the
    log-space fallback keeps the results equal to enumeration."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 6, 3)
    w, feats, allowed = make_problem(rng, L, lengths, conditioned, scale=scale, mask_rate=0.2,
                                     allowed_rate=float(rng.choice([0.0, 0.2])))
    out, log_z, _ = call_kernel(fb_kernels.fb_corpus, w, feats, tau, allowed)
    check_against_brute(w, feats, allowed, tau, out, log_z, atol=1e-9)


def winning_prefix_problem():
    """Labels 0, 1; paths 0 0 0 (score -1380) and 1 1 1 (score -800) only. Label 1 at token 0 is
    e^-800 times less likely than label 0 there, so its shifted exponential underflows to 0 in a
    scaled pass, in the forward and the backward alike (their log Z agree on the loss); yet its
    path wins."""
    dense = np.array([[0.0, -800.0], [0.0, 0.0]], dtype=np.float32)
    trans = np.array([[-690.0, 0.0], [0.0, 0.0], [0.0, 0.0]], dtype=np.float32)
    mask = np.array([[0.0, NEG], [NEG, 0.0], [0.0, 0.0]])
    w = Weights(StateWeights.from_dense(dense), trans, np.zeros((1, 3, 2), np.float32), mask, np.zeros(2))
    feats = Features(np.array([[0], [1], [1]], np.int32), np.zeros((3, 0), np.int32), np.array([0, 3]))
    return w, feats


def test_an_underflowed_winning_prefix_falls_back_to_log_space():
    w, feats = winning_prefix_problem()
    out, log_z, _ = call_kernel(fb_kernels.fb_corpus, w, feats)
    check_against_brute(w, feats, None, 1.0, out, log_z)
    np.testing.assert_allclose(out, [[0, 1]] * 3, atol=1e-12)
    assert log_z[0] == pytest.approx(-800.0, abs=1e-12)


def test_long_sentences_stay_exact():
    """Scaled passes over 300 tokens (normalizers multiply up far below 1e-308) agree with the
    log-space numpy twin."""
    rng = np.random.default_rng(7)
    for conditioned in (False, True):
        w, feats, allowed = make_problem(rng, 4, [300, 1, 57], conditioned, scale=4.0, allowed_rate=0.1)
        out, log_z, _ = call_kernel(fb_kernels.fb_corpus, w, feats, 1.0, allowed)
        m0, z0 = M._marginals_numpy(w, feats, 1.0, allowed)
        np.testing.assert_allclose(out, m0, atol=1e-10)
        np.testing.assert_allclose(log_z, z0, rtol=1e-12)


# ------------------------------------------------------------------------------ drivers
@settings(max_examples=60, deadline=None)
@given(**_PROBLEM)
def test_drivers_take_the_kernel_and_equal_the_numpy_path(L, n_sent, conditioned, sparse, mask_rate, allowed_rate,
                                                         tau, seed):
    _, w, feats, allowed, ids = draw_problem(seed, L, n_sent, conditioned, sparse, mask_rate, allowed_rate,
                                             min_len=0)
    real = loader.aot
    loader.aot = lambda name: fb_kernels.fb_corpus if name == "fb_corpus" else real(name)
    try:
        m1, z1 = M.marginals(w, feats, tau, allowed=allowed)
        p1 = M.path_log_probs(w, feats, ids, tau, allowed=allowed)
    finally:
        loader.aot = real
    m0, z0 = M._marginals_numpy(w, feats, tau, allowed)
    np.testing.assert_allclose(m1, m0, atol=1e-12, rtol=0)
    np.testing.assert_allclose(z1, z0, atol=1e-12, rtol=1e-14)
    np.testing.assert_allclose(p1, M._path_log_probs_numpy(w, feats, ids, tau, allowed), atol=1e-12, rtol=1e-14)


def test_allowed_mask_forces_tags_in_every_driver(compiled_jit):
    """Forcing a label at a token makes its marginal 1; spans under the mask equal enumeration."""
    rng = np.random.default_rng(4)
    w, feats, _ = make_problem(rng, 3, [4, 3], mask_rate=0.0, end_rate=0.0)
    allowed = np.ones((7, 3), dtype=bool)
    allowed[1] = [False, False, True]
    allowed[5] = [True, True, False]
    m, z = M.marginals(w, feats, allowed=allowed)
    assert m[1, 2] == 1.0 and m[5, 2] == 0.0
    check_against_brute(w, feats, allowed, 1.0, m, z)
    labels = ["B", "I", "O"]
    spans = [(0, "", 0, 1), (0, "", 1, 2), (1, "", 0, 0)]
    got = M.span_probs(w, feats, spans, labels, "iob2", allowed=allowed)
    assert got[0] == 0.0 and got[1] == 0.0                 # token 1 must be O: no span covers it
    free = M.span_probs(w, feats, spans, labels, "iob2")
    assert free[0] > 0 and free[1] > 0


def test_input_errors(compiled_jit):
    rng = np.random.default_rng(0)
    w, feats, _ = make_problem(rng, 3, [2, 3])
    with pytest.raises(InputError, match="allowed"):
        M.marginals(w, feats, allowed=np.ones((5, 2), dtype=bool))
    with pytest.raises(InputError, match="allowed"):
        M.marginals(w, feats, allowed=np.ones((5, 3), dtype=np.int8))
    with pytest.raises(InputError, match="label ids"):
        M.path_log_probs(w, feats, np.full(5, 3))
    with pytest.raises(InputError, match="ids must be"):
        M.path_log_probs(w, feats, np.zeros(4, dtype=int))
    with pytest.raises(InputError, match="temperature"):
        M.marginals(w, feats, temperature=0.0)
    bad = Features(feats.state.copy(), feats.trans, feats.sent_ptr)
    bad.state[0, 0] = 12                                      # A = 12 attributes: one past the end
    with pytest.raises(InputError, match="state attribute ids"):
        M.marginals(w, bad)
    with pytest.raises(InputError, match="sentence offsets"):
        M.marginals(w, Features(feats.state, feats.trans, np.array([0, 2, 6])))
    cw, cf, _ = make_problem(rng, 3, [2, 3], conditioned=True)
    cf.trans[1, 0] = 5                                        # AT + 1 = 5 slices
    with pytest.raises(InputError, match="transition attribute ids"):
        M.marginals(cw, cf)


# ------------------------------------------------------------------------------ real data
COLUMNS = ["word", "pos", "chunk"]


@pytest.fixture(scope="module")
def sample_model():
    from structperc import Tagger
    tagger = Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template="crfsuite", epochs=2, seed=0)
    feats = tagger.features_.transform(tagger._annotated(tagger._corpus(str(SAMPLE_TEST), None, need_tags=False)))
    return tagger.weights_, feats


@pytest.mark.parametrize("tau", [1.0, 0.3, 0.05])
def test_real_model_kernel_equals_numpy(sample_model, tau):
    w, feats = sample_model
    n, L = feats.state.shape[0], w.n_labels
    allowed = np.random.default_rng(1).random((n, L)) < 0.8
    best = predict(w, feats)
    for mask in (None, allowed):
        out, log_z, lp = call_kernel(fb_kernels.fb_corpus, w, feats, tau, mask, best)
        m0, z0 = M._marginals_numpy(w, feats, tau, mask)
        np.testing.assert_allclose(out, m0, atol=1e-9, rtol=0)
        np.testing.assert_allclose(log_z, z0, atol=1e-9, rtol=1e-13)
        p0 = M._path_log_probs_numpy(w, feats, best, tau, mask)
        np.testing.assert_allclose(lp, p0, atol=1e-9, rtol=1e-13)
        fin = np.isfinite(log_z)
        np.testing.assert_allclose(out[np.repeat(fin, np.diff(feats.sent_ptr))].sum(axis=1), 1.0, atol=1e-12)
        if AOT is not None:
            again = call_kernel(AOT, w, feats, tau, mask, best)
            np.testing.assert_allclose(again[0], out, atol=1e-12, rtol=0)
            np.testing.assert_allclose(again[1], log_z, atol=1e-12, rtol=1e-14)


def test_toy_model_with_conditioned_transitions(toy_tagger, compiled_jit):
    from testkit import TOY
    t = toy_tagger
    feats = t.features_.transform(t._annotated(t._corpus([[x[:2] for x in s] for s in TOY], None, need_tags=False)))
    assert feats.trans.shape[1] > 0
    m1, z1 = M.marginals(t.weights_, feats, 0.7)
    m0, z0 = M._marginals_numpy(t.weights_, feats, 0.7)
    np.testing.assert_allclose(m1, m0, atol=1e-12)
    np.testing.assert_allclose(z1, z0, rtol=1e-13)
    assert (m1.argmax(axis=1) == predict(t.weights_, feats)).all()


@aot
def test_drivers_use_the_ahead_of_time_build(sample_model, monkeypatch):
    """With a current build the driver calls it (and never the JIT)."""
    w, feats = sample_model
    calls = []

    def spy(*args):
        calls.append(1)
        return AOT(*args)
    real = loader.aot
    monkeypatch.setattr(loader, "aot", lambda name: spy if name == "fb_corpus" else real(name))
    monkeypatch.setattr(fb_kernels, "fb_corpus", None)
    m, z = M.marginals(w, feats)
    assert calls and np.isfinite(z).all()
    np.testing.assert_allclose(m, M._marginals_numpy(w, feats)[0], atol=1e-9)


# ------------------------------------------------- several conditioned templates (cached combinations)
def test_combination_slots_hand_example():
    """Distinct id tuples get slots 0, 1, ... in the order first met; a repeated tuple its slot; no
    room: -1 (the per-position path), and a full cache still finds the tuples it holds."""
    XT = np.array([[3, -1], [0, 2], [3, -1], [2, 0], [0, 2], [5, 5], [2, 0]], dtype=np.int32)
    hkey = np.empty((8, 2), dtype=np.int32)
    hval = np.full(8, -1, dtype=np.int64)
    got, used = [], 0
    for row in range(len(XT)):
        k, used = fb_kernels._slot(XT, row, hkey, hval, used, 3)
        got.append(k)
    assert got == [0, 1, 0, 2, 1, -1, 2] and used == 3
    per = fb_kernels._slot_bytes(40, 2)
    assert fb_kernels._combination_slots(40, 2, 10 ** 6, 5 * per + per - 1) == 5
    assert fb_kernels._combination_slots(40, 2, 3, 5 * per) == 3            # at most one per token
    assert fb_kernels._combination_slots(40, 2, 10 ** 6, fb_kernels._CACHE_BYTES) > 5000


def budgets(L, KT):
    """No cached table, room for two combinations, the default budget."""
    return [0, 2 * fb_kernels._slot_bytes(L, KT), fb_kernels._CACHE_BYTES]


@settings(max_examples=200, deadline=None)
@given(L=st.integers(1, 4), n_sent=st.integers(1, 4), KT=st.integers(2, 3), sparse=st.booleans(),
       mask_rate=st.sampled_from([0.0, 0.2, 0.5]), allowed_rate=st.sampled_from([0.0, 0.2]),
       tau=st.sampled_from([0.25, 1.0, 3.7]), AT=st.integers(1, 4), seed=st.integers(0, 2 ** 32 - 1))
def test_several_conditioned_templates_equal_brute_force(L, n_sent, KT, sparse, mask_rate, allowed_rate, tau, AT,
                                                         seed):
    """Two and three conditioned templates (few attribute ids: combinations repeat), with the cache
    off, nearly full (the per-position path next to cached tables) and on: enumeration, the numpy
    twin, and the same bits whatever the budget."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 6, n_sent)
    w, feats, allowed = make_problem(rng, L, lengths, True, sparse, mask_rate, allowed_rate=allowed_rate,
                                     KT=KT, AT=AT)
    assert feats.trans.shape[1] == KT
    ids = rng.integers(0, L, int(lengths.sum())).astype(np.int32)
    runs = [call_kernel(None, w, feats, tau, allowed, ids, cache_bytes=b) for b in budgets(L, KT)]
    out, log_z, lp = runs[-1]
    check_against_brute(w, feats, allowed, tau, out, log_z, lp, ids)
    for other in runs[:-1]:
        for x, y in zip(other, runs[-1]):
            np.testing.assert_array_equal(x, y)
    m0, z0 = M._marginals_numpy(w, feats, tau, allowed)
    np.testing.assert_allclose(out, m0, atol=1e-12, rtol=0)
    np.testing.assert_allclose(log_z, z0, atol=1e-12, rtol=1e-14)
    np.testing.assert_allclose(lp, M._path_log_probs_numpy(w, feats, ids, tau, allowed), atol=1e-12, rtol=1e-14)
    if AOT is not None:
        again = call_kernel(AOT, w, feats, tau, allowed, ids)
        for x, y in zip(again, runs[-1]):
            np.testing.assert_allclose(x, y, atol=1e-13, rtol=1e-14)


@settings(max_examples=100, deadline=None)
@given(L=st.integers(2, 4), KT=st.integers(2, 3), scale=st.sampled_from([300.0, 3000.0]),
       tau=st.sampled_from([0.01, 1.0]), small=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_several_conditioned_templates_extreme_ranges(L, KT, scale, tau, small, seed):
    """Cached combination tables whose exponentials underflow send their sentences to the exact
    log-space pass, as per-position tables do."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, 6, 3)
    w, feats, allowed = make_problem(rng, L, lengths, True, scale=scale, mask_rate=0.2, KT=KT, AT=2,
                                     allowed_rate=float(rng.choice([0.0, 0.2])))
    budget = 2 * fb_kernels._slot_bytes(L, KT) if small else fb_kernels._CACHE_BYTES
    out, log_z, _ = call_kernel(None, w, feats, tau, allowed, cache_bytes=budget)
    check_against_brute(w, feats, allowed, tau, out, log_z, atol=1e-9)


def test_long_sentences_with_three_conditioned_templates():
    rng = np.random.default_rng(11)
    w, feats, allowed = make_problem(rng, 4, [300, 1, 57], True, scale=4.0, allowed_rate=0.1, KT=3, AT=3)
    m0, z0 = M._marginals_numpy(w, feats, 1.0, allowed)
    for budget in budgets(4, 3):
        out, log_z, _ = call_kernel(None, w, feats, 1.0, allowed, cache_bytes=budget)
        np.testing.assert_allclose(out, m0, atol=1e-10)
        np.testing.assert_allclose(log_z, z0, rtol=1e-12)


@pytest.fixture(scope="module")
def default_chunk_model():
    """The default ``chunk`` template: two observation-conditioned transition templates."""
    from structperc import Tagger
    tagger = Tagger(task="chunk", epochs=2).fit(str(SAMPLE_TRAIN))
    feats = tagger.features_.transform(tagger._annotated(tagger._corpus(str(SAMPLE_TEST), None, need_tags=False)))
    return tagger.weights_, feats


@pytest.mark.parametrize("tau", [1.0, 0.3, 0.05])
def test_default_chunk_template_kernel_equals_numpy(default_chunk_model, tau):
    w, feats = default_chunk_model
    assert feats.trans.shape[1] == 2
    n, L = feats.state.shape[0], w.n_labels
    allowed = np.random.default_rng(2).random((n, L)) < 0.8
    best = predict(w, feats)
    for mask in (None, allowed):
        out, log_z, lp = call_kernel(None, w, feats, tau, mask, best, cache_bytes=fb_kernels._CACHE_BYTES)
        m0, z0 = M._marginals_numpy(w, feats, tau, mask)
        np.testing.assert_allclose(out, m0, atol=1e-9, rtol=0)
        np.testing.assert_allclose(log_z, z0, atol=1e-9, rtol=1e-13)
        np.testing.assert_allclose(lp, M._path_log_probs_numpy(w, feats, best, tau, mask), atol=1e-9, rtol=1e-13)
        # a cache with room for 50 of the ~600 combinations: the same bits
        few = call_kernel(None, w, feats, tau, mask, best, cache_bytes=50 * fb_kernels._slot_bytes(L, 2))
        for x, y in zip(few, (out, log_z, lp)):
            np.testing.assert_array_equal(x, y)
        if AOT is not None:
            again = call_kernel(AOT, w, feats, tau, mask, best)
            for x, y in zip(again, (out, log_z, lp)):
                np.testing.assert_allclose(x, y, atol=1e-12, rtol=1e-14)
        if mask is None and tau <= 0.3:   # concentrated on the Viterbi paths
            assert (out.argmax(axis=1) == best).mean() > 0.99
