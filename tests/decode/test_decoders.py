"""The two Viterbi decoders against brute-force enumeration, against each other (ties included),
with padding, with scheme masks, and through `Weights.predict`."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import structperc.decode.decoder as model_module
from structperc.decode.decoder import predict
from structperc.decode.viterbi import viterbi_batch
from structperc.features.index import Features
from structperc.labels import LabelSet, transition_mask, valid_sequence
from structperc.model.weights import Weights, with_zero_row
from structperc.train.epoch_kernels import viterbi as compiled_viterbi

NEG = -np.inf


def brute_force(state, trans, end):
    """Best score and path by enumerating all L^T paths.

    score(y) = trans[0, L, y0] + state[0, y0] + Σ_{t≥1} (trans[t, y_{t-1}, y_t] + state[t, y_t]) + end[y_{T-1}]
    Among tied best paths, Viterbi's backtracking (lowest label id at the end, then the lowest
    predecessor at each step) picks the smallest path read from the last position backwards.
    """
    T, L = state.shape
    trans = np.broadcast_to(trans, (T, L + 1, L))
    scored = []
    for path in itertools.product(range(L), repeat=T):
        s = trans[0, L, path[0]] + state[0, path[0]]
        for t in range(1, T):
            s += trans[t, path[t - 1], path[t]] + state[t, path[t]]
        s += end[path[-1]]
        scored.append((s, path))
    best = max(s for s, _ in scored)
    ties = [p for s, p in scored if s == best]
    return best, list(min(ties, key=lambda p: p[::-1]))


def compiled(state, trans, end):
    path = np.empty(state.shape[0], dtype=np.int32)
    score = compiled_viterbi(np.ascontiguousarray(state, dtype=np.float64),
                             np.ascontiguousarray(trans, dtype=np.float64),
                             np.ascontiguousarray(end, dtype=np.float64), path)
    return score, path.tolist()


def batched(state, trans, end):
    """viterbi_batch on a batch of one: a (1, L+1, L) shared matrix is passed 2-d."""
    t = trans[0] if trans.shape[0] == 1 else trans[None]
    return viterbi_batch(state[None], t, end).tolist()[0]


def path_score(state, trans, end, path):
    T, L = state.shape
    trans = np.broadcast_to(trans, (T, L + 1, L))
    s = trans[0, L, path[0]] + state[0, path[0]] + end[path[-1]]
    return s + sum(trans[t, path[t - 1], path[t]] + state[t, path[t]] for t in range(1, T))


# --------------------------------------------------------------------------- hand examples
def test_hand_example_transition_beats_state():
    # state prefers 0 then 1; switching costs 5 -> paths: 00 = 1+0+0 = 1, 01 = 1+1-5 = -3,
    # 10 = 0+0-5 = -5, 11 = 0+1+0 = 1 -> tie between 00 and 11 (score 1); the lowest final label
    # wins: 00.
    state = np.array([[1.0, 0.0], [0.0, 1.0]])
    trans = np.array([[[0.0, -5.0], [-5.0, 0.0], [0.0, 0.0]]])
    end = np.zeros(2)
    assert brute_force(state, trans, end) == (1.0, [0, 0])
    assert compiled(state, trans, end) == (1.0, [0, 0])
    assert batched(state, trans, end) == [0, 0]
    # a start bonus for label 1 (bos row) breaks the tie: 11 = 1 + 0.5
    trans[0, 2, 1] = 0.5
    assert compiled(state, trans, end) == (1.5, [1, 1])
    assert batched(state, trans, end) == [1, 1]
    # an end penalty on label 1 brings 00 back: 11 = 1.5 - 2 = -0.5 < 00 = 1
    end[1] = -2.0
    assert compiled(state, trans, end) == (1.0, [0, 0])
    assert batched(state, trans, end) == [0, 0]


def test_all_ties_give_label_zero():
    state = np.zeros((4, 3))
    trans = np.zeros((1, 4, 3))
    assert compiled(state, trans, np.zeros(3)) == (0.0, [0, 0, 0, 0])
    assert batched(state, trans, np.zeros(3)) == [0, 0, 0, 0]


# ------------------------------------------------------------------------------- properties
_VALUES = st.sampled_from([-2.0, -1.0, 0.0, 1.0, 2.0, NEG])
_FINITE = st.sampled_from([-2.0, -1.0, 0.0, 1.0, 2.0])


@st.composite
def problems(draw, max_T=5, max_L=4):
    T = draw(st.integers(1, max_T))
    L = draw(st.integers(1, max_L))
    shared = draw(st.booleans())
    state = draw(arrays(np.float64, (T, L), elements=_FINITE))
    trans = draw(arrays(np.float64, (1 if shared else T, L + 1, L), elements=_VALUES))
    end = draw(arrays(np.float64, (L,), elements=st.sampled_from([0.0, 0.0, 1.0, NEG])))
    return state, trans, end


@settings(max_examples=400, deadline=None)
@given(problems())
def test_decoders_equal_brute_force_with_ties_and_masks(problem):
    """Integer-valued scores make ties common; -inf entries act as masks."""
    state, trans, end = problem
    best, expected = brute_force(state, trans, end)
    score, path = compiled(state, trans, end)
    assert batched(state, trans, end) == path         # the two decoders agree, ties included
    if best == NEG:
        assert score == NEG                           # no allowed path: nothing more to compare
    else:
        assert score == best
        assert path == expected
        assert path_score(state, trans, end, path) == best


def test_decoders_equal_brute_force_random_floats():
    rng = np.random.default_rng(1234)
    for _ in range(300):
        T, L = int(rng.integers(1, 6)), int(rng.integers(1, 5))
        state = rng.normal(size=(T, L))
        trans = rng.normal(size=(int(rng.choice([1, T])), L + 1, L))
        trans[rng.random(trans.shape) < 0.2] = NEG
        end = np.where(rng.random(L) < 0.2, NEG, 0.0)
        best, expected = brute_force(state, trans, end)
        score, path = compiled(state, trans, end)
        assert batched(state, trans, end) == path
        if best > NEG:
            assert score == pytest.approx(best, abs=1e-9)
            assert path == expected


def test_shared_and_per_position_transitions_agree():
    rng = np.random.default_rng(5)
    for _ in range(50):
        T, L = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        state = rng.integers(-2, 3, (T, L)).astype(float)
        shared = rng.integers(-2, 3, (1, L + 1, L)).astype(float)
        full = np.repeat(shared, T, axis=0)
        end = np.zeros(L)
        assert compiled(state, shared, end) == compiled(state, full, end)
        assert viterbi_batch(state[None], shared[0], end).tolist() == \
            viterbi_batch(state[None], full[None], end).tolist()


@pytest.mark.parametrize("shared", [True, False])
def test_batch_with_lengths_equals_each_sentence(shared):
    rng = np.random.default_rng(7 + shared)
    for _ in range(60):
        B, T, L = int(rng.integers(1, 6)), int(rng.integers(1, 7)), int(rng.integers(1, 5))
        lengths = rng.integers(1, T + 1, B)
        lengths[rng.integers(B)] = T
        state = rng.integers(-2, 3, (B, T, L)).astype(float)
        trans = rng.integers(-2, 3, (L + 1, L) if shared else (B, T, L + 1, L)).astype(float)
        end = rng.integers(-1, 2, L).astype(float)
        for b in range(B):   # garbage in the padding must not matter
            state[b, lengths[b]:] = 100 * rng.normal(size=(T - lengths[b], L))
            if not shared:
                trans[b, lengths[b]:] = 100 * rng.normal(size=(T - lengths[b], L + 1, L))
        paths = viterbi_batch(state, trans, end, lengths)
        assert paths.dtype == np.int32 and paths.shape == (B, T)
        for b in range(B):
            n = int(lengths[b])
            tb = trans[None] if shared else trans[b, :n]
            _, expected = compiled(state[b, :n], tb, end)
            assert paths[b, :n].tolist() == expected
            if n <= 5 and L <= 4:
                assert expected == brute_force(state[b, :n], tb, end)[1]
            assert (paths[b, n:] == paths[b, n - 1]).all()   # padding repeats the last label


SCHEME_LABELS = {
    "iob1": ["B-NP", "B-PP", "I-NP", "I-PP", "O"],
    "iob2": ["B-NP", "B-VP", "I-NP", "I-VP", "O"],
    "iobes": ["B-LOC", "B-PER", "E-LOC", "E-PER", "I-LOC", "I-PER", "O", "S-LOC", "S-PER"],
    "bmes": ["B", "E", "M", "S"],
}


@settings(max_examples=150, deadline=None)
@given(scheme=st.sampled_from(sorted(SCHEME_LABELS)), T=st.integers(1, 9), seed=st.integers(0, 2**32 - 1),
       conditioned=st.booleans())
def test_masked_paths_are_valid(scheme, T, seed, conditioned):
    labels = LabelSet(SCHEME_LABELS[scheme]).labels
    L = len(labels)
    mask, end = transition_mask(labels, scheme)
    rng = np.random.default_rng(seed)
    state = rng.normal(scale=3, size=(T, L))
    base = rng.normal(size=(T if conditioned else 1, L + 1, L))
    trans = base + mask
    score, path = compiled(state, trans, end)
    assert np.isfinite(score)
    assert valid_sequence([labels[i] for i in path], scheme)
    assert batched(state, trans, end) == path
    if T <= 3 and L <= 5:
        assert path == brute_force(state, trans, end)[1]


def test_valid_sequence_examples():
    assert valid_sequence(["B-NP", "I-NP", "O", "B-VP"], "iob2")
    assert not valid_sequence(["I-NP"], "iob2")
    assert not valid_sequence(["B-NP", "I-VP"], "iob2")
    assert valid_sequence(["I-NP", "I-NP", "B-NP"], "iob1")
    assert not valid_sequence(["O", "B-NP"], "iob1")
    assert valid_sequence(["B-PER", "E-PER", "S-LOC"], "iobes")
    assert not valid_sequence(["B-PER"], "iobes")
    assert not valid_sequence(["B-PER", "O"], "iobes")
    assert valid_sequence(["B", "M", "E", "S"], "bmes")
    assert not valid_sequence(["M"], "bmes") and not valid_sequence(["B", "S"], "bmes")
    assert not valid_sequence(["S", "B"], "bmes")


def test_transition_mask_shape_and_bos_row():
    labels = ["B-NP", "I-NP", "O"]
    mask, end = transition_mask(labels, "iob2")
    assert mask.shape == (4, 3) and end.shape == (3,)
    # rows: from B-NP, I-NP, O, <bos>; columns: to B-NP, I-NP, O. I-NP only after B-NP or I-NP.
    assert np.isneginf(mask).tolist() == [[False, False, False], [False, False, False],
                                          [False, True, False], [False, True, False]]
    assert (end == 0).all()
    _, end = transition_mask(["B", "E", "M", "S"], "bmes")
    assert np.isneginf(end).tolist() == [True, False, True, False]


# ------------------------------------------------------------------ Weights.predict batching
def _reference_predict(w: Weights, feats: Features) -> list[int]:
    out = []
    L = w.n_labels
    ptr = feats.sent_ptr
    for s in range(len(ptr) - 1):
        a, b = int(ptr[s]), int(ptr[s + 1])
        if a == b:
            continue
        state = np.zeros((b - a, L))
        trans = np.zeros((b - a, L + 1, L))
        for t in range(b - a):
            for k in feats.state[a + t]:
                if k >= 0:
                    state[t] += w.state[k]
            trans[t] = w.trans + w.mask
            for k in feats.trans[a + t]:
                if k >= 0:
                    trans[t] += w.cond[k]
        out.extend(compiled(state, trans, w.end)[1])
    return out


@pytest.mark.parametrize("batch_tokens", [8192, 7, 1])
@pytest.mark.parametrize("conditioned", [False, True])
def test_weights_predict_equals_per_sentence_decoding(monkeypatch, batch_tokens, conditioned):
    monkeypatch.setattr(model_module, "BATCH_TOKENS", batch_tokens)
    rng = np.random.default_rng(11 + conditioned)
    labels = SCHEME_LABELS["iob2"]
    L, A, AT = len(labels), 15, 6
    mask, end = transition_mask(labels, "iob2")
    # integer weights: many ties, which both paths must break the same way
    w = Weights(with_zero_row(rng.integers(-2, 3, (A, L)).astype(np.float32)),
                rng.integers(-2, 3, (L + 1, L)).astype(np.float32),
                with_zero_row(rng.integers(-2, 3, (AT, L + 1, L)).astype(np.float32)), mask, end)
    lengths = np.array([3, 1, 7, 0, 3, 12, 2, 2, 5, 1, 9, 4, 3])
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, 3)).astype(np.int32)
    XT = rng.integers(-1, AT, (n, 2 if conditioned else 0)).astype(np.int32)
    feats = Features(X, XT, ptr)
    pred = predict(w, feats)
    assert pred.dtype == np.int32 and pred.shape == (n,)
    assert pred.tolist() == _reference_predict(w, feats)
    for s in range(len(lengths)):
        assert valid_sequence([labels[i] for i in pred[ptr[s]:ptr[s + 1]]], "iob2")


def test_state_scores_skip_unknown_ids():
    w = Weights(with_zero_row(np.array([[1, 2], [10, 20]], np.float32)), np.zeros((3, 2), np.float32),
                with_zero_row(np.zeros((0, 3, 2), np.float32)), np.zeros((3, 2)), np.zeros(2))
    ids = np.array([[0, 1], [1, -1], [-1, -1]], dtype=np.int32)
    # row 0: [1,2] + [10,20] = [11,22]; row 1: [10,20]; row 2: nothing
    assert w.state_scores(ids).tolist() == [[11, 22], [10, 20], [0, 0]]
