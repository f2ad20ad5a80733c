"""The compiled k-best kernel (`structperc.decode.nbest_kernels.nbest_corpus`, JIT, and its
ahead-of-time build when current) against its numpy twin (`nbest_batch`) and brute-force ranking of
every path: scores, order and ties, for every k up to all paths, with the scheme's -inf transitions,
observation-conditioned transitions, per-token allowed masks and sentences with no allowed path; the
corpus driver's compiled and numpy paths against each other and against `predict` on trained models.

A lattice is turned into kernel inputs whose float32 sums reproduce it exactly: one attribute per
token whose weight row is the token's state scores (dense rows, or split into two sparse rows), one
conditioned-transition attribute per token whose table is that position's transitions."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_marginals import featurize
from test_nbest import _VALUES, COLUMNS, NEG, ranking
from testkit import SAMPLE_TEST, TOY

from structperc.compiled import loader
from structperc.decode import decoder
from structperc.decode import nbest as nbest_module
from structperc.decode.nbest import nbest, nbest_batch
from structperc.decode.nbest_kernels import nbest_corpus
from structperc.errors import InputError
from structperc.features.index import Features

AOT = loader.aot("nbest_corpus")
KERNELS = [pytest.param(nbest_corpus, id="jit"),
           pytest.param(AOT, id="aot", marks=pytest.mark.skipif(AOT is None, reason="_aot_nbest not built"))]


def kernel_inputs(states, trans, end, sparse=False, rng=None):
    """Arguments of `nbest_corpus` (all but ``allowed``, ``k`` and the outputs) for sentences with
    state scores ``states[s]`` (T_s, L) and transitions ``trans`` (L + 1, L) shared, or a list of
    per-sentence (T_s, L + 1, L) tables."""
    L = states[0].shape[1]
    S = np.concatenate(states).astype(np.float32)
    n = len(S)
    sent_ptr = np.concatenate([[0], np.cumsum([len(s) for s in states])]).astype(np.int64)
    if not sparse:                                    # attribute = token, a full row of L labels
        X = np.arange(n, dtype=np.int32)[:, None]
        ptr = np.arange(n + 1, dtype=np.int64) * L
        lab = np.tile(np.arange(L, dtype=np.int16), n)
        W = S.ravel()
    else:                                             # two rows per token, labels split at random
        X = np.stack([2 * np.arange(n), 2 * np.arange(n) + 1, np.full(n, -1)], axis=1).astype(np.int32)
        rows_lab, rows_w, ptr = [], [], [0]
        for i in range(n):
            first = rng.random(L) < 0.5
            for part in (first, ~first):
                ys = np.flatnonzero(part)
                rows_lab.append(ys)
                rows_w.append(S[i, ys])
                ptr.append(ptr[-1] + len(ys))
        ptr = np.array(ptr, dtype=np.int64)
        lab = np.concatenate(rows_lab + [np.zeros(0)]).astype(np.int16)
        W = np.concatenate(rows_w + [np.zeros(0)]).astype(np.float32)
    if isinstance(trans, np.ndarray):                 # shared
        base = trans.astype(np.float32)
        XT = np.zeros((n, 0), dtype=np.int32)
        Wc = np.zeros((1, L + 1, L), dtype=np.float32)
    else:                                             # per token: 0 + table + zero base, exact
        base = np.zeros((L + 1, L), dtype=np.float32)
        XT = np.arange(n, dtype=np.int32)[:, None]
        Wc = np.concatenate(list(trans) + [np.zeros((1, L + 1, L))]).astype(np.float32)
    return [X, XT, sent_ptr, ptr, lab, W, base, Wc, np.asarray(end, dtype=np.float64)]


def run_kernel(kernel, args, k, allowed=None):
    n = int(args[2][-1])
    L = args[6].shape[1]
    ids = np.full((k, n), 7, dtype=np.int32)          # garbage: the kernel writes every entry
    scores = np.full((len(args[2]) - 1, k), 7.0)
    mask = np.zeros((0, L), dtype=np.bool_) if allowed is None else np.ascontiguousarray(allowed)
    kernel(*args, mask, np.int64(k), ids, scores)
    return ids, scores


@st.composite
def corpora(draw, max_S=3, max_T=5, max_L=4):
    """Sentences of one to ``max_T`` tokens (or empty), dyadic scores (exact float32 sums: ties are
    real ties), -inf transitions and ends, allowed masks (sometimes none allowed at a token)."""
    L = draw(st.integers(1, max_L))
    lengths = draw(st.lists(st.integers(0, max_T), min_size=1, max_size=max_S))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    states = [rng.choice(_VALUES, (T, L)) for T in lengths]
    p_forbid = draw(st.sampled_from([0.0, 0.2, 0.5]))

    def table(shape):
        t = rng.choice(_VALUES, shape)
        t[rng.random(shape) < p_forbid] = NEG
        return t
    trans = table((L + 1, L)) if draw(st.booleans()) else [table((T, L + 1, L)) for T in lengths]
    end = np.where(rng.random(L) < 0.25, NEG, rng.choice(_VALUES, L))
    allowed = None
    if draw(st.booleans()):
        allowed = rng.random((sum(lengths), L)) < draw(st.sampled_from([0.3, 0.7, 0.9]))
    return states, trans, end, allowed, draw(st.booleans()), rng


def masked(states, allowed):
    """State scores with -inf where a label is not allowed."""
    if allowed is None:
        return states
    out, a = [], 0
    for s in states:
        out.append(np.where(allowed[a:a + len(s)], s, NEG))
        a += len(s)
    return out


def check(kernel, states, trans, end, allowed, k, sparse, rng):
    args = kernel_inputs(states, trans, end, sparse, rng)
    ids, scores = run_kernel(kernel, args, k, allowed)
    ptr = args[2]
    eff = masked(states, allowed)
    for s, st_ in enumerate(eff):
        a, T = int(ptr[s]), len(st_)
        if T == 0:
            assert scores[s].tolist() == [0.0] + [NEG] * (k - 1)
            continue
        tr = trans if isinstance(trans, np.ndarray) else trans[s]
        P, sc = ranking(st_, tr, end)
        m = min(k, len(sc))
        np.testing.assert_array_equal(ids[:m, a:a + T], P[:m])
        np.testing.assert_array_equal(scores[s, :m], sc[:m])
        assert (ids[m:, a:a + T] == -1).all() and (scores[s, m:] == NEG).all()
        # the numpy twin on the same (float32) lattice: identical lists
        paths, best = nbest_batch(st_[None].astype(np.float32), np.asarray(tr, dtype=np.float32)[None]
                                  if tr.ndim == 3 else tr.astype(np.float32), end, None, k)
        np.testing.assert_array_equal(ids[:, a:a + T], paths[0])
        np.testing.assert_array_equal(scores[s], best[0])
    return ids, scores


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=250, deadline=None)
@given(corpora(), st.data())
def test_kernel_equals_brute_force_ranking(kernel, corpus, data):
    states, trans, end, allowed, sparse, rng = corpus
    L = states[0].shape[1]
    n_paths = L ** max(len(s) for s in states)
    k = data.draw(st.integers(1, n_paths + 2), label="k")
    check(kernel, states, trans, end, allowed, k, sparse, rng)


@pytest.mark.parametrize("kernel", KERNELS)
def test_every_k_up_to_all_paths(kernel):
    """Fixed lattices (shared and conditioned transitions, with and without an allowed mask), every
    k from 1 to past the number of paths: each list a prefix of the next."""
    rng = np.random.default_rng(5)
    L = 3
    states = [rng.choice(_VALUES, (T, L)) for T in (4, 3, 1, 0, 2)]
    shared = rng.choice(_VALUES, (L + 1, L))
    shared[rng.random(shared.shape) < 0.15] = NEG
    cond = [rng.choice(_VALUES, (len(s), L + 1, L)) for s in states]
    for c in cond:
        c[rng.random(c.shape) < 0.15] = NEG
    allowed = rng.random((sum(len(s) for s in states), L)) < 0.8
    for trans in (shared, cond):
        for mask in (None, allowed):
            previous = None
            for k in range(1, L ** 4 + 3):
                ids, _ = check(kernel, states, trans, np.zeros(L), mask, k, False, rng)
                if previous is not None:
                    np.testing.assert_array_equal(ids[:k - 1], previous)
                previous = ids


def test_hand_example_ties_and_an_impossible_sentence():
    # two tokens, two labels, all paths tie: 00, 10, 01, 11 (labels read from the last token back);
    # the second sentence allows no label at its second token: no path at all
    states = [np.zeros((2, 2)), np.zeros((2, 2))]
    allowed = np.array([[True, True], [True, True], [True, False], [False, False]])
    args = kernel_inputs(states, np.zeros((3, 2)), np.zeros(2))
    ids, scores = run_kernel(nbest_corpus, args, 5, allowed)
    assert ids[:, :2].tolist() == [[0, 0], [1, 0], [0, 1], [1, 1], [-1, -1]]
    assert scores.tolist() == [[0, 0, 0, 0, NEG], [NEG] * 5]
    assert (ids[:, 2:] == -1).all()


@pytest.mark.parametrize("kernel", KERNELS)
def test_continuous_scores_where_pruning_prunes(kernel):
    """Longer sentences, up to 12 labels, float scores: pruning leaves most cells out; the kernel's
    lists equal the numpy twin's bit for bit, and brute force's to rounding."""
    rng = np.random.default_rng(11)
    for i in range(40):
        L, k = int(rng.integers(2, 13)), int(rng.integers(1, 9))
        lengths = rng.integers(1, 9, size=3)
        states = [rng.normal(scale=3, size=(T, L)).astype(np.float32) for T in lengths]
        if i % 2:
            trans = rng.normal(size=(L + 1, L)).astype(np.float32)
            trans[rng.random(trans.shape) < 0.1] = NEG
        else:
            trans = [rng.normal(size=(T, L + 1, L)).astype(np.float32) for T in lengths]
            for t_ in trans:
                t_[rng.random(t_.shape) < 0.1] = NEG
        end = np.where(rng.random(L) < 0.1, NEG, rng.normal(size=L))
        args = kernel_inputs(states, trans, end, sparse=bool(i % 3), rng=rng)
        ids, scores = run_kernel(kernel, args, k)
        ptr = args[2]
        for s, st_ in enumerate(states):
            a, T = int(ptr[s]), len(st_)
            tr = trans if i % 2 else trans[s]
            paths, best = nbest_batch(st_[None], tr if i % 2 else tr[None], end, None, k)
            np.testing.assert_array_equal(ids[:, a:a + T], paths[0])
            np.testing.assert_array_equal(scores[s], best[0])
            if L ** T <= 5000:
                _, sc = ranking(st_.astype(np.float64), tr.astype(np.float64), end)
                m = min(k, len(sc))
                np.testing.assert_allclose(scores[s, :m], sc[:m], rtol=1e-6, atol=1e-5)


# ------------------------------------------------------------------------------ the driver
@pytest.fixture(scope="module")
def cond_tagger():
    from testkit import SAMPLE_TRAIN

    from structperc import Tagger
    from structperc.features.templates import preset
    return Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template=preset("crfsuite") + ["y[-1]|y[0]|pos[0]"],
                        epochs=2, seed=0)


def both_ways(weights, feats, k, allowed=None, monkeypatch=None):
    """The driver through the kernel (JIT standing in for a missing build) and through numpy."""
    jit_kernel = (lambda: AOT) if AOT is not None else (lambda: nbest_corpus)
    monkeypatch.setattr(loader, "aot", lambda name: jit_kernel() if name == "nbest_corpus" else None)
    compiled = nbest(weights, feats, k, allowed)
    monkeypatch.setattr(nbest_module, "_nbest_compiled", lambda *args: False)
    numpy = nbest(weights, feats, k, allowed)
    monkeypatch.undo()
    np.testing.assert_array_equal(compiled.ids, numpy.ids)
    np.testing.assert_array_equal(compiled.scores, numpy.scores)
    return compiled


@pytest.mark.parametrize("model", ["toy", "cond"])
def test_driver_compiled_equals_numpy_and_predict(model, toy_tagger, cond_tagger, monkeypatch):
    if model == "toy":
        tagger, feats = toy_tagger, featurize(toy_tagger, [[t[:2] for t in s] for s in TOY])
    else:
        tagger, feats = cond_tagger, featurize(cond_tagger, str(SAMPLE_TEST))
    w = tagger.weights_
    best = decoder.predict(w, feats)
    for k in (1, 2, 5, 12):
        out = both_ways(w, feats, k, monkeypatch=monkeypatch)
        np.testing.assert_array_equal(out.ids[0], best)
        assert (out.scores[:, :-1] >= out.scores[:, 1:]).all()
    # allowed labels: predict's labels and about half the others; the best path stays the same,
    # and every listed path uses allowed labels only
    rng = np.random.default_rng(2)
    allowed = rng.random((len(best), w.n_labels)) < 0.5
    allowed[np.arange(len(best)), best] = True
    out = both_ways(w, feats, 5, allowed, monkeypatch)
    np.testing.assert_array_equal(out.ids[0], best)
    tok = np.broadcast_to(np.arange(len(best)), out.ids.shape)
    found = out.ids >= 0
    assert allowed[tok[found], out.ids[found]].all()


def test_driver_honours_a_sparse_allowed_mask(cond_tagger, monkeypatch):
    """Few allowed labels: some sentences have no path; those with paths list allowed labels only."""
    feats = featurize(cond_tagger, str(SAMPLE_TEST))
    w = cond_tagger.weights_
    allowed = np.random.default_rng(3).random((int(feats.sent_ptr[-1]), w.n_labels)) < 0.15
    out = both_ways(w, feats, 3, allowed, monkeypatch)
    ptr = feats.sent_ptr
    none = out.scores[:, 0] == NEG
    assert none.any() and not none.all()
    for s in np.flatnonzero(none):
        assert (out.ids[:, ptr[s]:ptr[s + 1]] == -1).all()
    tok = np.broadcast_to(np.arange(out.ids.shape[1]), out.ids.shape)
    found = out.ids >= 0
    assert allowed[tok[found], out.ids[found]].all()


def test_driver_validates_its_inputs(toy_tagger):
    feats = featurize(toy_tagger, [[t[:2] for t in s] for s in TOY])
    w = toy_tagger.weights_
    n, L = int(feats.sent_ptr[-1]), w.n_labels
    with pytest.raises(InputError, match="at least 1"):
        nbest(w, feats, 0)
    with pytest.raises(InputError, match="allowed"):
        nbest(w, feats, 2, np.ones((n, L + 1), dtype=bool))
    with pytest.raises(InputError, match="allowed"):
        nbest(w, feats, 2, np.ones((n, L), dtype=np.int8))
    bad = feats.state.copy()
    bad[0, 0] = len(w.sparse.ptr) - 1
    with pytest.raises(InputError, match="out of range"):
        nbest(w, Features(bad, feats.trans, feats.sent_ptr), 2)
    with pytest.raises(InputError, match="sent_ptr"):
        nbest(w, Features(feats.state, feats.trans, feats.sent_ptr[:-1]), 2)
