"""Forward-backward marginals, partition functions, path and span probabilities against brute-force
enumeration of every path (with -inf masks, padding, shared and per-token transitions, several
temperatures), and the corpus drivers on trained models."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import SAMPLE_TEST, SAMPLE_TRAIN

from structperc.decode.decoder import predict
from structperc.decode.marginals import (
    forward_backward_batch,
    log_partition_batch,
    marginals,
    path_log_prob,
    path_log_probs,
    path_scores,
    span_log_probs,
    span_probs,
)
from structperc.decode.viterbi import viterbi_batch
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.labels import LabelSet, transition_mask

NEG = -np.inf
TEMPERATURES = [0.25, 1.0, 3.7]


# ------------------------------------------------------------------------------- brute force
def enumerate_paths(state: np.ndarray, trans: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every path of one sentence and its score: (L^n, n) label ids and (L^n,) scores."""
    n, L = state.shape
    P = np.array(list(itertools.product(range(L), repeat=n)), dtype=np.int64).reshape(-1, n)
    tr = np.broadcast_to(trans, (n, L + 1, L))
    prev = np.concatenate([np.full((len(P), 1), L), P[:, :-1]], axis=1)
    t = np.arange(n)
    return P, state[t, P].sum(axis=1) + tr[t, prev, P].sum(axis=1) + end[P[:, -1]]


def brute_marginals(state, trans, end, tau):
    """Token marginals (n, L) and log Z of one sentence by enumeration (zeros and -inf: no path)."""
    n, L = state.shape
    P, s = enumerate_paths(state, trans, end)
    ok = s > NEG
    if not ok.any():
        return np.zeros((n, L)), NEG, P, s
    log_z = np.logaddexp.reduce(s[ok] / tau)
    p = np.exp(np.where(ok, s / tau - log_z, NEG))
    marg = np.zeros((n, L))
    for t in range(n):
        marg[t] = np.bincount(P[:, t], weights=p, minlength=L)
    return marg, log_z, P, s


def sentence(state, trans, lengths, b):
    """Sentence b's own (n, L) state and its transitions (shared stay 2-d)."""
    n = int(lengths[b])
    return state[b, :n], (trans if trans.ndim == 2 else trans[b, :n])


# -------------------------------------------------------------------------------- strategies
_SCORE = st.floats(-4, 4, allow_nan=False, width=64)
_MASKED = st.one_of(_SCORE, _SCORE, st.just(NEG))


@st.composite
def lattices(draw, max_B=3, max_T=5, max_L=4):
    """A padded batch: state (B, T, L), trans shared or per token with -inf entries, end, lengths."""
    B = draw(st.integers(1, max_B))
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(1, max_L))
    lengths = np.array(draw(st.lists(st.integers(1, T), min_size=B, max_size=B)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    state = rng.uniform(-4, 4, (B, T, L))
    shared = draw(st.booleans())
    trans = rng.uniform(-4, 4, (L + 1, L) if shared else (B, T, L + 1, L))
    trans[rng.random(trans.shape) < draw(st.sampled_from([0.0, 0.2, 0.5]))] = NEG
    end = np.where(rng.random(L) < 0.25, NEG, rng.uniform(-1, 1, L))
    for b in range(B):                     # garbage in the padding must not matter
        state[b, lengths[b]:] = 1e3 * rng.normal(size=(T - lengths[b], L))
        if not shared:
            trans[b, lengths[b]:] = 1e3 * rng.normal(size=(T - lengths[b], L + 1, L))
    return state, trans, end, lengths


# ------------------------------------------------------------------------ marginals and log Z
def test_hand_example():
    # two labels, two tokens, no transition scores: the tokens are independent
    state = np.array([[[1.0, 0.0], [0.0, 2.0]]])
    fb = forward_backward_batch(state, np.zeros((3, 2)), np.zeros(2))
    p0 = np.exp(1) / (np.exp(1) + 1)
    p1 = np.exp(2) / (np.exp(2) + 1)
    np.testing.assert_allclose(fb.marginals[0], [[p0, 1 - p0], [1 - p1, p1]], atol=1e-12)
    assert fb.log_z[0] == pytest.approx(np.log((np.e + 1) * (np.e ** 2 + 1)), abs=1e-12)


@settings(max_examples=250, deadline=None)
@given(lattices(), st.sampled_from(TEMPERATURES))
def test_marginals_and_log_z_equal_brute_force(lattice, tau):
    state, trans, end, lengths = lattice
    fb = forward_backward_batch(state, trans, end, lengths, tau)
    B, T, L = state.shape
    assert fb.marginals.shape == (B, T, L) and fb.log_z.shape == (B,)
    assert not np.isnan(fb.marginals).any() and not np.isnan(fb.log_z).any()
    np.testing.assert_array_equal(log_partition_batch(state, trans, end, lengths, tau), fb.log_z)
    for b in range(B):
        n = int(lengths[b])
        st_, tr = sentence(state, trans, lengths, b)
        marg, log_z, P, s = brute_marginals(st_, tr, end, tau)
        assert (fb.marginals[b, n:] == 0).all()                      # padding rows are zero
        if log_z == NEG:
            assert fb.log_z[b] == NEG and (fb.marginals[b] == 0).all()
            continue
        assert fb.log_z[b] == pytest.approx(log_z, abs=1e-9)
        np.testing.assert_allclose(fb.marginals[b, :n], marg, atol=1e-9, rtol=0)
        np.testing.assert_allclose(fb.marginals[b, :n].sum(axis=1), 1.0, atol=1e-12)
        # a label no allowed path uses has probability exactly 0
        used = np.zeros((n, L), dtype=bool)
        for t in range(n):
            used[t, P[s > NEG, t]] = True
        assert (fb.marginals[b, :n][~used] == 0).all()


@settings(max_examples=150, deadline=None)
@given(lattices(), st.sampled_from(TEMPERATURES), st.integers(0, 2 ** 32 - 1))
def test_path_log_prob_equals_brute_force(lattice, tau, seed):
    state, trans, end, lengths = lattice
    B, T, L = state.shape
    rng = np.random.default_rng(seed)
    paths = rng.integers(0, L, (B, 3, T))
    paths[:, 0] = viterbi_batch(state, trans, end, lengths)
    logp = path_log_prob(state, trans, end, paths, lengths, tau)
    single = path_log_prob(state, trans, end, paths[:, 0], lengths, tau)
    assert logp.shape == (B, 3) and single.shape == (B,)
    np.testing.assert_array_equal(single, logp[:, 0])
    for b in range(B):
        n = int(lengths[b])
        st_, tr = sentence(state, trans, lengths, b)
        _, log_z, P, s = brute_marginals(st_, tr, end, tau)
        for r in range(3):
            score = s[np.flatnonzero((P == paths[b, r, :n]).all(axis=1))[0]]
            tb = trans if trans.ndim == 2 else trans[b:b + 1]
            assert path_scores(state[b:b + 1], tb, end, paths[b:b + 1, r], lengths[b:b + 1])[0] == \
                pytest.approx(score, abs=1e-9)
            if score == NEG:
                assert logp[b, r] == NEG
            else:
                assert logp[b, r] == pytest.approx(score / tau - log_z, abs=1e-9)
        if log_z > NEG:   # the Viterbi path is the most probable one
            assert logp[b, 0] == pytest.approx(np.log(np.exp(s[s > NEG] / tau - log_z).max()), abs=1e-9)


def test_extreme_score_ranges_stay_exact():
    """Scores spanning thousands of units (or a tiny temperature) underflow the shifted products;
    the exact log-sum-exp fallback keeps the results equal to enumeration in log space."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        B, T, L = 2, int(rng.integers(2, 6)), int(rng.integers(2, 5))
        scale = float(rng.choice([300.0, 3000.0]))
        state = rng.normal(scale=scale, size=(B, T, L))
        trans = rng.normal(scale=scale, size=(B, T, L + 1, L))
        trans[rng.random(trans.shape) < 0.2] = NEG
        end = np.zeros(L)
        tau = float(rng.choice([0.01, 1.0]))
        lengths = np.array([T, int(rng.integers(1, T + 1))])
        fb = forward_backward_batch(state, trans, end, lengths, tau)
        assert np.isfinite(fb.marginals).all()
        for b in range(B):
            n = int(lengths[b])
            marg, log_z, _, _ = brute_marginals(state[b, :n], trans[b, :n], end, tau)
            if log_z > NEG:
                assert fb.log_z[b] == pytest.approx(log_z, rel=1e-12)
                np.testing.assert_allclose(fb.marginals[b, :n], marg, atol=1e-9)


def test_low_temperature_concentrates_on_viterbi_and_high_spreads():
    rng = np.random.default_rng(11)
    state = rng.normal(size=(4, 6, 3))
    trans = rng.normal(size=(4, 3))
    best = viterbi_batch(state, trans, np.zeros(3))
    cold = forward_backward_batch(state, trans, np.zeros(3), temperature=1e-3).marginals
    np.testing.assert_allclose(cold, np.eye(3)[best], atol=1e-9)
    hot = forward_backward_batch(state, trans, np.zeros(3), temperature=1e6).marginals
    np.testing.assert_allclose(hot, 1 / 3, atol=1e-5)


def test_no_allowed_path_gives_zero_marginals_and_minus_infinite_log_z():
    state = np.zeros((2, 3, 2))
    trans = np.zeros((3, 2))
    end = np.array([NEG, NEG])                                   # no label may end a sentence
    fb = forward_backward_batch(state, trans, end)
    assert (fb.log_z == NEG).all() and (fb.marginals == 0).all()
    assert (path_log_prob(state, trans, end, np.zeros((2, 3), dtype=int)) == NEG).all()


@pytest.mark.parametrize("bad", [0.0, -1.0, np.inf, np.nan])
def test_temperature_must_be_positive(bad):
    with pytest.raises(InputError, match="temperature"):
        forward_backward_batch(np.zeros((1, 2, 2)), np.zeros((3, 2)), np.zeros(2), temperature=bad)


# ------------------------------------------------------------------------------------ spans
SPAN_LABELS = {
    "iob2": [["B-NP", "B-VP", "I-NP", "I-VP", "O"], ["B", "I", "O"], ["B-A", "I-A", "B-C", "O"]],
    "iobes": [["B-A", "E-A", "I-A", "O", "S-A", "S-C"], ["B", "E", "I", "O", "S"]],
    "bmes": [["B", "E", "M", "S"]],
}


def _parse(label):
    return (label[0], label[2:]) if len(label) >= 2 and label[1] in "-_" else (label, "")


def spans_in(tags: list[str], scheme: str) -> set[tuple[str, int, int]]:
    """The spans a tag sequence spells, straight from the definition in `span_log_probs`."""
    parsed = [_parse(t) for t in tags]
    n = len(tags)
    inside = "M" if scheme == "bmes" else "I"
    out = set()
    for s, (p, x) in enumerate(parsed):
        if scheme != "iob2" and p == "S":
            out.add((x, s, s))
        if p != "B":
            continue
        e = s
        while e + 1 < n and parsed[e + 1] == (inside, x):
            e += 1
        if scheme == "iob2":
            out.add((x, s, e))
        elif e + 1 < n and parsed[e + 1] == ("E", x):
            out.add((x, s, e + 1))
    return out


@settings(max_examples=150, deadline=None)
@given(scheme=st.sampled_from(sorted(SPAN_LABELS)), which=st.integers(0, 2), T=st.integers(1, 5),
       seed=st.integers(0, 2 ** 32 - 1), constrained=st.booleans(), conditioned=st.booleans(),
       tau=st.sampled_from(TEMPERATURES))
def test_span_probabilities_equal_brute_force(scheme, which, T, seed, constrained, conditioned, tau):
    labels = LabelSet(SPAN_LABELS[scheme][which % len(SPAN_LABELS[scheme])]).labels
    L = len(labels)
    rng = np.random.default_rng(seed)
    mask, end = transition_mask(labels, scheme) if constrained \
        else (np.zeros((L + 1, L)), np.zeros(L))
    B = 2
    lengths = np.array([T, int(rng.integers(1, T + 1))])
    state = rng.normal(scale=2, size=(B, T, L))
    trans = rng.normal(size=(B, T, L + 1, L) if conditioned else (L + 1, L)) + mask
    types = sorted({_parse(lab)[1] for lab in labels if lab != "O"}) + ["ZZ"]   # ZZ: no labels at all
    spans = [(b, x, s, e) for b in range(B) for x in types for s in range(int(lengths[b]))
             for e in range(s, int(lengths[b]))]
    got = np.exp(span_log_probs(state, trans, end, lengths, spans, labels, scheme, tau))
    fb = forward_backward_batch(state, trans, end, lengths, tau)
    again = np.exp(span_log_probs(state, trans, end, lengths, spans, labels, scheme, tau, fb=fb))
    np.testing.assert_array_equal(got, again)
    for b in range(B):
        n = int(lengths[b])
        st_, tr = sentence(state, trans, lengths, b)
        _, log_z, P, s = brute_marginals(st_, tr, end, tau)
        p = np.exp(s / tau - log_z) if log_z > NEG else np.zeros(len(s))
        expected: dict[tuple[str, int, int], float] = {}
        for path, w in zip(P.tolist(), p.tolist()):
            for span in spans_in([labels[i] for i in path], scheme):
                expected[span] = expected.get(span, 0.0) + w
        for i, (sb, x, s0, e0) in enumerate(spans):
            if sb == b:
                assert got[i] == pytest.approx(expected.get((x, s0, e0), 0.0), abs=1e-9), (x, s0, e0)
        assert all(k[0] != "ZZ" for k in expected) and n >= 1


def test_span_probabilities_add_up_to_the_begin_marginal():
    """Under IOB2 every path with B-X at s has exactly one X span starting at s: summing the exact
    span probabilities over the end gives the token marginal of B-X (a product of token marginals
    would not)."""
    labels = ["B-NP", "B-VP", "I-NP", "I-VP", "O"]
    mask, end = transition_mask(labels, "iob2")
    rng = np.random.default_rng(2)
    T = 7
    state = rng.normal(scale=2, size=(1, T, 5))
    trans = rng.normal(size=(6, 5)) + mask
    fb = forward_backward_batch(state, trans, end)
    for x, lab in (("NP", 0), ("VP", 1)):
        for s in range(T):
            spans = [(0, x, s, e) for e in range(s, T)]
            total = np.exp(span_log_probs(state, trans, end, None, spans, labels, "iob2", fb=fb)).sum()
            assert total == pytest.approx(fb.marginals[0, s, lab], abs=1e-12)


def test_span_input_errors():
    state, trans, end = np.zeros((1, 3, 3)), np.zeros((4, 3)), np.zeros(3)
    labels = ["B-NP", "I-NP", "O"]
    with pytest.raises(InputError, match="start <= end"):
        span_log_probs(state, trans, end, None, [(0, "NP", 2, 1)], labels, "iob2")
    with pytest.raises(InputError, match="start <= end"):
        span_log_probs(state, trans, end, None, [(0, "NP", 1, 3)], labels, "iob2")
    with pytest.raises(InputError, match="start <= end"):
        span_log_probs(state, trans, end, None, [(1, "NP", 0, 0)], labels, "iob2")
    with pytest.raises(InputError, match="schemes"):
        span_log_probs(state, trans, end, None, [(0, "NP", 0, 0)], labels, "iob1")
    assert span_log_probs(state, trans, end, None, [], labels, "iob2").shape == (0,)


# ------------------------------------------------------------------------- corpus drivers
COLUMNS = ["word", "pos", "chunk"]


@pytest.fixture(scope="module")
def sample_tagger():
    """crfsuite template (shared transitions), 2 epochs on the shipped sample."""
    from structperc import Tagger
    return Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template="crfsuite", epochs=2, seed=0)


def featurize(tagger, X) -> Features:
    return tagger.features_.transform(tagger._annotated(tagger._corpus(X, None, need_tags=False)))


@pytest.fixture(scope="module")
def sample_features(sample_tagger):
    return featurize(sample_tagger, str(SAMPLE_TEST))


def _check_driver(weights, feats, tau=1.0):
    marg, log_z = marginals(weights, feats, tau)
    ptr = feats.sent_ptr
    assert marg.shape == (int(ptr[-1]), weights.n_labels) and log_z.shape == (len(ptr) - 1,)
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-9)
    best = predict(weights, feats)
    lp = path_log_probs(weights, feats, best, tau)
    assert (lp <= 1e-12).all() and np.isfinite(lp).all()
    return marg, log_z, best, lp


def test_driver_on_the_toy_tagger(toy_tagger):
    """Observation-conditioned transitions (per-token tables)."""
    from testkit import TOY
    feats = featurize(toy_tagger, [[t[:2] for t in s] for s in TOY])
    w = toy_tagger.weights_
    assert feats.trans.shape[1] > 0
    marg, log_z, best, lp = _check_driver(w, feats)
    assert (marg.argmax(axis=1) == best).all()
    # each sentence alone gives the same numbers as the length-sorted batches
    ptr = feats.sent_ptr
    for s in range(len(ptr) - 1):
        a, b = int(ptr[s]), int(ptr[s + 1])
        one = Features(feats.state[a:b], feats.trans[a:b], np.array([0, b - a]))
        m1, z1 = marginals(w, one)
        np.testing.assert_allclose(m1, marg[a:b], atol=1e-12)
        assert z1[0] == pytest.approx(log_z[s], abs=1e-9)


def test_driver_on_a_sample_model(sample_tagger, sample_features):
    w, feats = sample_tagger.weights_, sample_features
    marg, log_z, best, lp = _check_driver(w, feats)
    agree = (marg.argmax(axis=1) == best).mean()
    assert agree > 0.99, agree
    # the best path is at least as probable as anything its tokens' marginals allow
    ptr = feats.sent_ptr
    first_marg = marg[np.arange(int(ptr[-1])), best]
    worst = np.minimum.reduceat(first_marg, ptr[:-1])
    assert (np.exp(lp) <= worst + 1e-9).all()
    # temperature: colder is more peaked on the Viterbi path
    cold, _ = marginals(w, feats, 0.25)
    assert cold[np.arange(len(best)), best].mean() > marg[np.arange(len(best)), best].mean()


def test_span_driver_on_a_sample_model(sample_tagger, sample_features):
    """The spans of the decoded output (IOBES inside the model): probabilities in (0, 1], and the
    exact span probabilities starting at a token add up to its B/S marginal."""
    labels = sample_tagger.labels_
    w, feats = sample_tagger.weights_, sample_features
    best = predict(w, feats)
    marg, _ = marginals(w, feats)
    ptr = feats.sent_ptr
    rng = np.random.default_rng(0)
    chosen = rng.choice(len(ptr) - 1, 25, replace=False)
    spans, starts = [], []
    for s in chosen.tolist():
        tags = [labels[i] for i in best[ptr[s]:ptr[s + 1]]]
        found = sorted(spans_in(tags, "iobes"))
        spans += [(s, x, a, e) for x, a, e in found]
        for x, a, _ in found[:2]:                      # every end of spans starting where one does
            starts.append((s, x, a, [(s, x, a, e) for e in range(a, len(tags))]))
    p = span_probs(w, feats, spans, labels, "iobes")
    assert ((p > 0) & (p <= 1 + 1e-12)).all()
    index = {lab: i for i, lab in enumerate(labels)}
    for s, x, a, group in starts:
        total = span_probs(w, feats, group, labels, "iobes").sum()
        tok = int(ptr[s]) + a
        expected = marg[tok, index.get(f"B-{x}", 0)] * (f"B-{x}" in index) + \
            marg[tok, index.get(f"S-{x}", 0)] * (f"S-{x}" in index)
        assert total == pytest.approx(expected, abs=1e-9)
    with pytest.raises(InputError, match="sentence index"):
        span_probs(w, feats, [(len(ptr), "NP", 0, 0)], labels, "iobes")
