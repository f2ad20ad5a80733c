"""Decoding with attribute values (`structperc.decode.values`): Viterbi, constrained Viterbi, k-best,
marginals, path and span probabilities of valued features, through the fold into one attribute per token.

* every value 1.0 gives what the same ids without values give: labels, k-best lists and their scores,
  marginals, log Z and path probabilities bit for bit (the folded state scores are summed in the
  decoders' own float32 order);
* a value 2 equals the attribute listed twice, a value 0 an absent attribute (integer weights:
  every sum is exact, so any difference is a bug, not rounding);
* brute force over every path of small lattices, scored in float64 from the ids and values (negative
  and fractional values included), agrees with the best path, the k-best scores and the marginals;
* runs of sentences (a small `VALUE_CELLS`) change nothing; bad values and ids raise `InputError`.

Each is checked on the decoders' ahead-of-time build when current, on numba's JIT of the same kernels,
and on the numpy twins.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import SAMPLE_TEST, SAMPLE_TRAIN

from structperc.compiled import loader
from structperc.decode import values as values_mod
from structperc.decode.decoder import predict
from structperc.decode.marginals import marginals, path_log_probs, span_probs
from structperc.decode.nbest import nbest
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights

DYADIC = np.array([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0], dtype=np.float32)


def _jit_kernel(name):
    from structperc.decode import constrained_kernels, fb_kernels, nbest_kernels, tag_kernels

    for module in (tag_kernels, constrained_kernels, nbest_kernels, fb_kernels):
        if name in getattr(module, "AOT_EXPORTS", {}):
            return getattr(module, name)
    return None


@pytest.fixture(params=["default", "jit", "numpy"])
def kernels(request, monkeypatch):
    """Which decoders run: the ahead-of-time build as found, numba's JIT of the kernel modules (as
    if built), or the numpy twins (no build)."""
    if request.param == "jit":
        monkeypatch.setattr(loader, "aot", _jit_kernel)
        monkeypatch.setattr(loader, "mode", lambda: "aot")
    elif request.param == "numpy":
        monkeypatch.setattr(loader, "aot", lambda name: None)
    return request.param


def random_model(rng, A, AT, L, integer=True, constrained=False, sparse=False):
    """Random weights; ``sparse``: the nonzero pairs only (a sparse feature set, the product path of
    `state_score_rows`), else every pair (dense rows, its gather path)."""
    draw = (lambda shape: rng.integers(-3, 4, shape).astype(np.float32)) if integer \
        else (lambda shape: rng.normal(size=shape).astype(np.float32))
    dense = draw((A, L))
    dense[rng.random((A, L)) < 0.4] = 0.0
    if sparse:  # half the rows (row 0 always) keep one label: short rows beside padded full ones
        short = rng.random(A) < 0.5
        short[0] = True
        keep = rng.integers(0, L, A)
        dense[short] = np.where(np.arange(L) == keep[short, None], dense[short] + 0.5, 0.0)
    cond = np.zeros((AT + 1, L + 1, L), np.float32)
    cond[:-1] = draw((AT, L + 1, L))
    mask = np.zeros((L + 1, L))
    end = np.zeros(L)
    if constrained and L > 1:
        mask[rng.random((L + 1, L)) < 0.25] = -np.inf
        mask[:, 0] = 0.0  # label 0 always reachable
    state = StateWeights.from_dense(dense)
    if sparse:
        state = state.nonzero().padded()  # short rows, and rows padded to full length
        assert len(state.values) < A * L or L == 1
    return Weights(state, draw((L + 1, L)), cond, mask, end)


def random_feats(rng, n_sent, K, KT, A, AT, max_len=7, empty=True):
    lengths = rng.integers(0 if empty else 1, max_len + 1, n_sent)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    return Features(X, XT, ptr)


def valued(feats, values):
    return Features(feats.state, feats.trans, feats.sent_ptr, np.asarray(values, np.float32))


def _everything(weights, feats, k=3, allowed=None, tau=1.0):
    out = {"labels": predict(weights, feats, allowed)}
    nb = nbest(weights, feats, k, allowed)
    out.update(nbest_ids=nb.ids, nbest_scores=nb.scores)
    marg, log_z = marginals(weights, feats, tau, allowed)
    out.update(marginals=marg, log_z=log_z)
    ids = np.where(out["labels"] >= 0, out["labels"], 0)
    out["path_lp"] = path_log_probs(weights, feats, ids, tau, allowed)
    return out


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


# ----------------------------------------------------------------------------- equivalences
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 9), st.sampled_from([0, 1]), st.booleans(), st.booleans(),
       st.booleans())
def test_values_all_one_decode_as_no_values(seed, L, KT, use_allowed, integer, sparse):
    rng = np.random.default_rng(seed)
    A, AT = 12, 3
    w = random_model(rng, A, AT, L, integer=integer, constrained=True, sparse=sparse)
    feats = random_feats(rng, 6, 3, KT, A, AT)
    allowed = None
    if use_allowed:
        allowed = rng.random((int(feats.sent_ptr[-1]), L)) < 0.7
    _assert_same(_everything(w, feats, allowed=allowed), _everything(w, valued(feats, np.ones(feats.state.shape)),
                                                                    allowed=allowed))


def test_values_all_one_on_a_trained_model(sample_model, kernels):
    w, feats = sample_model
    ones = valued(feats, np.ones(feats.state.shape))
    _assert_same(_everything(w, feats, k=4), _everything(w, ones, k=4))
    spans = [(0, "NP", 0, 1), (1, "VP", 2, 2), (3, "NP", 0, 0), (len(feats.sent_ptr) - 2, "PP", 0, 0)]
    labels = sample_model.labels
    np.testing.assert_array_equal(span_probs(w, feats, spans, labels, "iobes"),
                                  span_probs(w, ones, spans, labels, "iobes"))


class _Sample(tuple):
    labels: list[str]


@pytest.fixture(scope="module")
def sample_model():
    """A model with shared and observation-conditioned transitions, 2 epochs on the shipped sample,
    and the sample test set's features."""
    from structperc import Tagger
    from structperc.features.templates import preset

    tagger = Tagger.train(str(SAMPLE_TRAIN), columns=["word", "pos", "chunk"],
                          template=preset("crfsuite") + ["y[-1]|y[0]|pos[0]"], epochs=2, seed=0)
    feats = tagger.features_.transform(tagger._annotated(tagger._corpus(str(SAMPLE_TEST), None,
                                                                        need_tags=False)))
    out = _Sample((tagger.weights_, feats))
    out.labels = list(tagger.model_.labels)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_a_value_of_two_is_the_attribute_listed_twice(seed, kernels):
    rng = np.random.default_rng(seed)
    A, AT, L = 15, 3, 6
    w = random_model(rng, A, AT, L, constrained=seed % 2 == 1, sparse=seed >= 3)
    feats = random_feats(rng, 8, 4, seed % 2, A, AT)
    X = feats.state
    twice = Features(np.concatenate([X, X[:, 2:3]], axis=1), feats.trans, feats.sent_ptr)
    values = np.ones(X.shape, np.float32)
    values[:, 2] = 2.0
    _assert_same(_everything(w, twice), _everything(w, valued(feats, values)))


@pytest.mark.parametrize("seed", range(6))
def test_a_value_of_zero_is_an_absent_attribute(seed, kernels):
    rng = np.random.default_rng(seed)
    A, AT, L = 15, 3, 5
    w = random_model(rng, A, AT, L, sparse=seed >= 3)
    feats = random_feats(rng, 8, 4, 1, A, AT)
    zero = rng.random(feats.state.shape) < 0.4
    absent = Features(np.where(zero, -1, feats.state).astype(np.int32), feats.trans, feats.sent_ptr)
    _assert_same(_everything(w, absent), _everything(w, valued(feats, np.where(zero, 0.0, 1.0))))


def test_values_change_the_result():
    """Not a vacuous fold: values other than 1 (negative ones included) change the labels."""
    rng = np.random.default_rng(0)
    A, AT, L = 20, 3, 5
    w = random_model(rng, A, AT, L, integer=False)
    feats = random_feats(rng, 30, 3, 0, A, AT, empty=False)
    plain = predict(w, feats)
    assert not np.array_equal(plain, predict(w, valued(feats, -np.ones(feats.state.shape))))
    assert not np.array_equal(plain, predict(w, valued(feats, rng.choice(DYADIC, feats.state.shape))))


# ----------------------------------------------------------------------------- brute force
def _brute(w, feats, values, s, allowed=None):
    """Every path of sentence s, scored in float64 from the ids and values."""
    L = w.n_labels
    a, b = int(feats.sent_ptr[s]), int(feats.sent_ptr[s + 1])
    dense = w.sparse.to_dense().astype(np.float64)
    state = np.zeros((b - a, L))
    for t in range(b - a):
        for at, v in zip(feats.state[a + t], values[a + t]):
            if at >= 0:
                state[t] += float(v) * dense[at]
    base = w.trans.astype(np.float64) + w.mask
    paths, scores = [], []
    for path in itertools.product(range(L), repeat=b - a):
        if allowed is not None and not all(allowed[a + t, y] for t, y in enumerate(path)):
            continue
        sc = w.end[path[-1]]
        for t, y in enumerate(path):
            tr = base.copy()
            for at in feats.trans[a + t]:
                if at >= 0:
                    tr += w.cond[at]
            sc += state[t, y] + tr[L if t == 0 else path[t - 1], y]
        paths.append(path)
        scores.append(sc)
    return paths, np.array(scores)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.sampled_from([0, 1]), st.booleans(), st.booleans())
def test_brute_force(seed, L, KT, use_allowed, sparse):
    rng = np.random.default_rng(seed)
    A, AT, k = 8, 2, 4
    w = random_model(rng, A, AT, L, integer=False, constrained=True, sparse=sparse and L > 1)
    feats = random_feats(rng, 4, 3, KT, A, AT, max_len=4)
    values = rng.choice(DYADIC, feats.state.shape).astype(np.float32)
    n = int(feats.sent_ptr[-1])
    allowed = rng.random((n, L)) < 0.8 if use_allowed else None
    vf = valued(feats, values)
    labels = predict(w, vf, allowed)
    nb = nbest(w, vf, k, allowed)
    marg, log_z = marginals(w, vf, 1.0, allowed)
    for s in range(len(feats.sent_ptr) - 1):
        a, b = int(feats.sent_ptr[s]), int(feats.sent_ptr[s + 1])
        if a == b:
            assert log_z[s] == 0.0 and nb.scores[s, 0] == 0.0
            continue
        paths, scores = _brute(w, feats, values, s, allowed)
        finite = np.isfinite(scores)
        if not finite.any():
            assert (labels[a:b] == -1).all() and log_z[s] == -np.inf
            continue
        best = scores.max()
        got = scores[paths.index(tuple(labels[a:b].tolist()))]
        assert got == pytest.approx(best, abs=1e-4)
        top = np.sort(scores[finite])[::-1][:k]
        np.testing.assert_allclose(nb.scores[s, :len(top)], top, atol=1e-4)
        p = np.exp(scores[finite] - best)
        assert log_z[s] == pytest.approx(best + np.log(p.sum()), abs=1e-4)
        want = np.zeros((b - a, L))
        for path, q in zip(np.array(paths)[finite], p / p.sum()):
            want[np.arange(b - a), path] += q
        np.testing.assert_allclose(marg[a:b], want, atol=1e-5)


# ----------------------------------------------------------------------------- runs, errors
def test_runs_of_sentences_change_nothing(monkeypatch, kernels):
    rng = np.random.default_rng(3)
    A, AT, L = 20, 3, 6
    w = random_model(rng, A, AT, L, integer=False)
    plain = random_feats(rng, 40, 3, 1, A, AT)
    feats = valued(plain, rng.choice(DYADIC, plain.state.shape))
    whole = _everything(w, feats)
    monkeypatch.setattr(values_mod, "VALUE_CELLS", 5 * L)  # runs of ~5 tokens, long sentences alone
    assert len(values_mod.sentence_runs(feats.sent_ptr, 5)) > 10
    _assert_same(whole, _everything(w, feats))
    spans = [(s, "X", 0, 0) for s in range(40) if feats.sent_ptr[s + 1] > feats.sent_ptr[s]]
    labels = ["S-X", "B-X", "I-X", "E-X", "O", "S-Y"]
    got = span_probs(w, feats, spans, labels, "iobes")
    monkeypatch.setattr(values_mod, "VALUE_CELLS", 1 << 21)
    np.testing.assert_array_equal(got, span_probs(w, feats, spans, labels, "iobes"))


def test_sentence_runs():
    ptr = np.array([0, 3, 3, 10, 12, 13])
    assert values_mod.sentence_runs(ptr, 4) == [(0, 2), (2, 3), (3, 5)]
    assert values_mod.sentence_runs(ptr, 100) == [(0, 5)]
    assert values_mod.sentence_runs(np.array([0]), 4) == [(0, 0)]


@pytest.mark.parametrize("sparse", [False, True])
def test_state_score_rows_is_the_sum_of_valued_rows(sparse):
    rng = np.random.default_rng(1)
    w = random_model(rng, 10, 1, 4, integer=False, sparse=sparse)
    ids = rng.integers(-1, 10, (30, 5)).astype(np.int32)
    vals = rng.normal(size=ids.shape).astype(np.float32)
    dense = np.vstack([w.sparse.to_dense(), np.zeros((1, 4), np.float32)]).astype(np.float64)
    want = (vals[:, :, None].astype(np.float64) * dense[ids]).sum(axis=1)
    np.testing.assert_allclose(values_mod.state_score_rows(w, ids, vals), want, rtol=1e-5, atol=1e-5)


def test_empty_corpora():
    rng = np.random.default_rng(0)
    w = random_model(rng, 5, 1, 3)
    for ptr in (np.array([0]), np.array([0, 0, 0])):
        feats = Features(np.zeros((0, 2), np.int32), np.zeros((0, 0), np.int32), ptr, np.zeros((0, 2), np.float32))
        assert predict(w, feats).shape == (0,)
        assert nbest(w, feats, 2).scores.shape == (len(ptr) - 1, 2)
        assert marginals(w, feats)[1].tolist() == [0.0] * (len(ptr) - 1)


@pytest.mark.parametrize("values, message", [
    (np.ones((2, 2)), "do not match"),
    (np.full((6, 3), np.nan), "finite"),
    (np.full((6, 3), "a"), "numbers"),
])
def test_bad_values(values, message):
    rng = np.random.default_rng(0)
    w = random_model(rng, 5, 1, 3)
    feats = Features(rng.integers(0, 5, (6, 3)).astype(np.int32), np.zeros((6, 0), np.int32),
                     np.array([0, 2, 6]), values)
    for call in (lambda: predict(w, feats), lambda: nbest(w, feats, 2), lambda: marginals(w, feats),
                 lambda: path_log_probs(w, feats, np.zeros(6, np.int32))):
        with pytest.raises(InputError, match=message):
            call()


def test_bad_ids_with_values():
    rng = np.random.default_rng(0)
    w = random_model(rng, 5, 1, 3)
    feats = Features(np.full((4, 2), 5, np.int32), np.zeros((4, 0), np.int32), np.array([0, 4]),
                     np.ones((4, 2), np.float32))
    with pytest.raises(InputError, match="state attribute ids"):
        predict(w, feats)
