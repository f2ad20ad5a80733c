"""k-best decoding (list Viterbi) against brute-force ranking of every path: scores, order and the
tie rule, for every k up to all paths; the first path against `viterbi_batch`; the corpus driver
against `predict` on trained models (compiled and numpy decoders)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_marginals import enumerate_paths, featurize
from testkit import SAMPLE_TEST, SAMPLE_TRAIN, TOY

from structperc.decode import decoder
from structperc.decode.marginals import path_scores
from structperc.decode.nbest import _live_cells, nbest, nbest_batch
from structperc.decode.viterbi import viterbi_batch
from structperc.errors import InputError
from structperc.features.index import Features

NEG = -np.inf


def ranking(state, trans, end):
    """Allowed paths of one sentence, best first, ties broken by the label ids read backwards."""
    P, s = enumerate_paths(state, trans, end)
    order = np.lexsort(tuple(P[:, t] for t in range(P.shape[1])) + (-s,))
    order = order[s[order] > NEG]
    return P[order], s[order]


#: dyadic scores: sums are exact in any order and in float32, so ties are real ties
_VALUES = np.array([-2.0, -1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 2.0])


@st.composite
def lattices(draw, max_B=3, max_T=5, max_L=4):
    B = draw(st.integers(1, max_B))
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(1, max_L))
    lengths = np.array(draw(st.lists(st.integers(1, T), min_size=B, max_size=B)))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    state = rng.choice(_VALUES, (B, T, L)).astype(dtype)
    shared = draw(st.booleans())
    trans = rng.choice(_VALUES, (L + 1, L) if shared else (B, T, L + 1, L)).astype(dtype)
    trans[rng.random(trans.shape) < draw(st.sampled_from([0.0, 0.2, 0.5]))] = NEG
    end = np.where(rng.random(L) < 0.25, NEG, rng.choice(_VALUES, L))
    for b in range(B):                     # garbage in the padding must not matter
        state[b, lengths[b]:] = 100 * rng.normal(size=(T - lengths[b], L))
        if not shared:
            trans[b, lengths[b]:] = 100 * rng.normal(size=(T - lengths[b], L + 1, L))
    return state, trans, end, lengths


def check_against_ranking(state, trans, end, lengths, k, paths, scores):
    B, T, L = state.shape
    assert paths.shape == (B, k, T) and paths.dtype == np.int32 and scores.shape == (B, k)
    for b in range(B):
        n = int(lengths[b])
        tb = trans if trans.ndim == 2 else trans[b, :n]
        P, s = ranking(state[b, :n], tb, end)
        m = min(k, len(s))
        np.testing.assert_array_equal(paths[b, :m, :n], P[:m])
        np.testing.assert_array_equal(scores[b, :m], s[:m])
        assert (paths[b, m:] == -1).all() and (scores[b, m:] == NEG).all()
        assert (paths[b, :m, n:] == paths[b, :m, n - 1:n]).all()     # padding repeats the last label


def test_hand_example_ties_read_backwards():
    # all four paths of two tokens and two labels tie: 00, 10, 01, 11 (last label first)
    paths, scores = nbest_batch(np.zeros((1, 2, 2)), np.zeros((3, 2)), np.zeros(2), k=6)
    assert paths[0].tolist() == [[0, 0], [1, 0], [0, 1], [1, 1], [-1, -1], [-1, -1]]
    assert scores[0].tolist() == [0, 0, 0, 0, NEG, NEG]


@settings(max_examples=300, deadline=None)
@given(lattices(), st.data())
def test_nbest_equals_brute_force_ranking(lattice, data):
    state, trans, end, lengths = lattice
    B, T, L = state.shape
    n_paths = L ** int(lengths.max())
    k = data.draw(st.integers(1, n_paths + 2), label="k")
    paths, scores = nbest_batch(state, trans, end, lengths, k)
    check_against_ranking(state, trans, end, lengths, k, paths, scores)
    best = viterbi_batch(state, trans, end, lengths)
    found = scores[:, 0] > NEG
    np.testing.assert_array_equal(paths[found, 0], best[found])
    np.testing.assert_array_equal(scores, np.where(scores > NEG, path_scores(state, trans, end, paths, lengths), NEG))


def test_every_k_up_to_all_paths():
    """One lattice, every k from 1 to past the number of paths: each list is a prefix of the next."""
    rng = np.random.default_rng(4)
    state = rng.choice(_VALUES, (2, 4, 3))
    trans = rng.choice(_VALUES, (2, 4, 4, 3))
    trans[rng.random(trans.shape) < 0.15] = NEG
    end = np.zeros(3)
    lengths = np.array([4, 3])
    previous = None
    for k in range(1, 3 ** 4 + 3):
        paths, scores = nbest_batch(state, trans, end, lengths, k)
        check_against_ranking(state, trans, end, lengths, k, paths, scores)
        if previous is not None:
            np.testing.assert_array_equal(paths[:, :k - 1], previous)
        previous = paths


def test_random_float_scores_and_many_labels():
    """Continuous scores and L up to 9 (the pruning of `_live_cells` really prunes): scores equal to
    1e-9, the order exact wherever neighbouring scores are not within rounding of each other."""
    rng = np.random.default_rng(8)
    for _ in range(40):
        T, L, k = int(rng.integers(1, 5)), int(rng.integers(2, 10)), int(rng.integers(2, 12))
        state = rng.normal(scale=2, size=(2, T, L))
        trans = rng.normal(size=(L + 1, L))
        trans[rng.random(trans.shape) < 0.1] = NEG
        end = np.where(rng.random(L) < 0.1, NEG, 0.0)
        lengths = np.array([T, int(rng.integers(1, T + 1))])
        paths, scores = nbest_batch(state, trans, end, lengths, k)
        for b in range(2):
            n = int(lengths[b])
            P, s = ranking(state[b, :n], trans, end)
            m = min(k, len(s))
            np.testing.assert_allclose(scores[b, :m], s[:m], atol=1e-9)
            near = np.zeros(len(s), dtype=bool)                     # within rounding of a neighbour
            close = np.abs(np.diff(s)) <= 1e-9
            near[:-1] |= close
            near[1:] |= close
            clear = ~near[:m]
            np.testing.assert_array_equal(paths[b, :m, :n][clear], P[:m][clear])


def test_live_cells_keep_every_path_of_the_k_best():
    rng = np.random.default_rng(21)
    for _ in range(30):
        T, L, k = 4, 8, int(rng.integers(2, 6))
        state = rng.normal(scale=3, size=(1, T, L)).astype(np.float32)
        trans = rng.normal(size=(L + 1, L)).astype(np.float32)
        live = _live_cells(state, trans, np.zeros(L), np.array([T]), k)
        assert live.sum() < T * L                               # something is pruned
        P, _ = ranking(state[0].astype(np.float64), trans.astype(np.float64), np.zeros(L))
        for path in P[:k]:
            assert live[0, np.arange(T), path].all()


def test_k_must_be_positive():
    with pytest.raises(InputError, match="at least 1"):
        nbest_batch(np.zeros((1, 2, 2)), np.zeros((3, 2)), np.zeros(2), k=0)


# ------------------------------------------------------------------------------ the driver
COLUMNS = ["word", "pos", "chunk"]


@pytest.fixture(scope="module")
def cond_tagger():
    """Shared (crfsuite) and observation-conditioned transitions, 2 epochs on the shipped sample."""
    from structperc import Tagger
    from structperc.features.templates import preset
    return Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template=preset("crfsuite") + ["y[-1]|y[0]|pos[0]"],
                        epochs=2, seed=0)


@pytest.fixture(params=["compiled", "numpy"])
def decode_path(request, monkeypatch):
    if request.param == "numpy":
        monkeypatch.setattr(decoder, "_predict_compiled", lambda *args: False)
    return request.param


def _check_driver(weights, feats, k):
    best = decoder.predict(weights, feats)
    one = nbest(weights, feats, 1)
    np.testing.assert_array_equal(one.ids[0], best)
    out = nbest(weights, feats, k)
    ptr = feats.sent_ptr
    assert out.ids.shape == (k, int(ptr[-1])) and out.scores.shape == (len(ptr) - 1, k)
    np.testing.assert_array_equal(out.ids[0], best)
    np.testing.assert_array_equal(out.scores[:, 0], one.scores[:, 0])
    assert (np.diff(out.scores, axis=1) <= 0).all()
    for s in range(len(ptr) - 1):
        a, b = int(ptr[s]), int(ptr[s + 1])
        rows = out.ids[:, a:b][out.scores[s] > NEG]
        assert len({tuple(r) for r in rows.tolist()}) == len(rows)           # distinct paths
        assert (out.ids[:, a:b][out.scores[s] == NEG] == -1).all()
    return out


def test_driver_on_the_toy_tagger(toy_tagger, decode_path):
    feats = featurize(toy_tagger, [[t[:2] for t in s] for s in TOY])
    out = _check_driver(toy_tagger.weights_, feats, 4)
    assert np.isfinite(out.scores).all()


def test_driver_on_a_sample_model(cond_tagger, decode_path):
    feats = featurize(cond_tagger, str(SAMPLE_TEST))
    out = _check_driver(cond_tagger.weights_, feats, 5)
    # float32 scores as the decoder's; the float64 rescoring of the same paths agrees closely
    w = cond_tagger.weights_
    ptr = feats.sent_ptr
    for s in range(0, len(ptr) - 1, 50):
        a, b = int(ptr[s]), int(ptr[s + 1])
        one = Features(feats.state[a:b], feats.trans[a:b], np.array([0, b - a]))
        state = w.state_scores(one.state)[None]
        trans = w.transition_scores(one.trans)
        trans = trans if trans.ndim == 2 else trans[None]
        rescored = path_scores(state, trans, w.end, out.ids[:, a:b][None])
        np.testing.assert_allclose(rescored[0], out.scores[s], rtol=1e-5, atol=1e-3)


def test_driver_with_an_empty_sentence(toy_tagger):
    feats = featurize(toy_tagger, [[t[:2] for t in s] for s in TOY[:2]])
    n = len(feats.state)
    ptr = np.array([0, 3, 3, n])                                  # the middle sentence is empty
    gapped = Features(feats.state, feats.trans, ptr)
    out = nbest(toy_tagger.weights_, gapped, 2)
    assert out.scores[1].tolist() == [0.0, NEG]
    np.testing.assert_array_equal(out.ids[0], decoder.predict(toy_tagger.weights_, gapped))
