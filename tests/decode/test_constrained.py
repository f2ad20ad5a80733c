"""Decoding under a mask of allowed labels per token (`structperc.decode.decoder.predict(..., allowed)`):
the numpy twin, the compiled kernel through the JIT and its ahead-of-time build, against brute force
over the allowed paths (ties included), against each other, and against the unconstrained decoder
for an all-True mask."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lattices import corpus_ids

from structperc.compiled import loader
from structperc.decode import constrained_kernels, tag_kernels
from structperc.decode.decoder import _predict_allowed_numpy, check_allowed, no_path, predict
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.state_weights import StateWeights, feature_set
from structperc.model.weights import Weights

AOT_KERNEL = loader.aot("decode_corpus_allowed")
aot = pytest.mark.skipif(AOT_KERNEL is None, reason="the _aot_constrained build is absent or stale "
                         "(python -m structperc.compiled.build _aot_constrained)")


# --------------------------------------------------------------------------- problems and references
def make_problem(rng, n_sent=4, L=3, K=3, KT=0, A=12, AT=4, max_T=5, kind="all", floats=False,
                 scheme_mask=True):
    ptr, X, XT = corpus_ids(rng, rng.integers(1, max_T + 1, n_sent), K, KT, A, AT)
    y = rng.integers(0, L, len(X)).astype(np.int32)
    sp, lab, _ = feature_set(kind, X, y, A, L)
    draw = (lambda size: rng.normal(0, 2, size)) if floats else (lambda size: rng.integers(-2, 3, size))
    state = StateWeights(sp, lab, draw(len(lab)).astype(np.float32), L)
    trans = draw((L + 1, L)).astype(np.float32)
    cond = np.zeros((AT + 1, L + 1, L), np.float32)
    cond[:-1] = draw((AT, L + 1, L))
    mask = np.where(rng.random((L + 1, L)) < (0.2 if scheme_mask else 0.0), -np.inf, 0.0)
    end = np.where(rng.random(L) < (0.2 if scheme_mask else 0.0), -np.inf, 0.0)
    return Weights(state, trans, cond, mask, end), Features(X, XT, ptr)


def lattice(w: Weights, feats: Features):
    """Per-token state scores (n, L) and transition scores (n, L + 1, L), float32 as decoded."""
    state = w.state_scores(feats.state)
    trans = w.transition_scores(feats.trans)
    if trans.ndim == 2:
        trans = np.broadcast_to(trans, (len(state),) + trans.shape)
    return state, trans


def brute_force(w: Weights, feats: Features, allowed: np.ndarray) -> tuple[list[int], list[float]]:
    """Best allowed path of each sentence by enumeration (-1s when none scores above -inf); among
    tied best paths the one Viterbi's backtracking picks (lowest last label, then lowest
    predecessors: the smallest path read backwards). Scores summed in float64: exact for the small
    integer weights used with it."""
    state, trans = lattice(w, feats)
    L = w.n_labels
    out, best_scores = [], []
    ptr = feats.sent_ptr
    for s in range(len(ptr) - 1):
        a, b = int(ptr[s]), int(ptr[s + 1])
        choices = [np.flatnonzero(allowed[t]).tolist() for t in range(a, b)]
        best, ties = -np.inf, []
        for path in itertools.product(*choices):
            sc = float(trans[a, L, path[0]]) + float(state[a, path[0]]) + float(w.end[path[-1]])
            for i in range(1, len(path)):
                sc += float(trans[a + i, path[i - 1], path[i]]) + float(state[a + i, path[i]])
            if sc > best:
                best, ties = sc, [path]
            elif sc == best and sc > -np.inf:
                ties.append(path)
        out += list(min(ties, key=lambda p: p[::-1])) if ties else [-1] * (b - a)
        best_scores.append(best)
    return out, best_scores


def run_jit(w: Weights, feats: Features, allowed: np.ndarray, fn=None) -> np.ndarray:
    fn = constrained_kernels.decode_corpus_allowed if fn is None else fn
    out = np.full(len(allowed), -7, np.int32)
    sw = w.sparse
    fn(feats.state, feats.trans, feats.sent_ptr, sw.ptr, sw.labels, sw.values, w.base_transitions(),
       np.ascontiguousarray(w.cond, np.float32), np.ascontiguousarray(w.end, np.float64),
       np.ascontiguousarray(allowed).view(np.uint8), out)
    return out


def run_numpy(w: Weights, feats: Features, allowed: np.ndarray) -> np.ndarray:
    out = np.full(len(allowed), -7, np.int32)
    _predict_allowed_numpy(w, feats, check_allowed(allowed, len(allowed), w.n_labels), out)
    return out


def all_decoders(w: Weights, feats: Features, allowed: np.ndarray) -> dict[str, np.ndarray]:
    outs = {"numpy": run_numpy(w, feats, allowed), "jit": run_jit(w, feats, allowed),
            "predict": predict(w, feats, allowed=allowed)}
    if AOT_KERNEL is not None:
        outs["aot"] = run_jit(w, feats, allowed, AOT_KERNEL)
    return outs


def random_mask(rng, n, L, density):
    return rng.random((n, L)) < density


# --------------------------------------------------------------------------- hand examples
def _two_label_problem():
    """Two tokens, two labels, one attribute each: state prefers 0 then 1; switching costs 5."""
    state = StateWeights.from_dense(np.array([[1.0, 0.0], [0.0, 1.0]], np.float32))
    trans = np.array([[0.0, -5.0], [-5.0, 0.0], [0.0, 0.0]], np.float32)
    w = Weights(state, trans, np.zeros((1, 3, 2), np.float32), np.zeros((3, 2)), np.zeros(2))
    feats = Features(np.array([[0], [1]], np.int32), np.zeros((2, 0), np.int32), np.array([0, 2]))
    return w, feats


@pytest.mark.parametrize("decoder", ["numpy", "jit", "predict"])
def test_hand_example(decoder):
    # paths: 00 = 1, 01 = 1 + 1 - 5 = -3, 10 = -5, 11 = 1: unconstrained, 00 and 11 tie -> 00
    w, feats = _two_label_problem()
    run = {"numpy": run_numpy, "jit": run_jit,
           "predict": lambda w, f, a: predict(w, f, allowed=a)}[decoder]
    assert predict(w, feats).tolist() == [0, 0]
    assert run(w, feats, np.ones((2, 2), bool)).tolist() == [0, 0]
    # forbid label 0 at the second token: 01 = -3 and 11 = 1 -> 11
    assert run(w, feats, np.array([[1, 1], [0, 1]], bool)).tolist() == [1, 1]
    # force 1 then 0: the only allowed path, however bad (-5)
    assert run(w, feats, np.array([[0, 1], [1, 0]], bool)).tolist() == [1, 0]
    # nothing allowed at a token: no path
    assert run(w, feats, np.array([[1, 1], [0, 0]], bool)).tolist() == [-1, -1]


@pytest.mark.parametrize("decoder", ["numpy", "jit", "predict"])
def test_no_allowed_path_marks_only_that_sentence(decoder):
    # the scheme forbids 0 -> 1; forcing 0 then 1 leaves no path in sentence 1; sentence 0 is free
    w, _ = _two_label_problem()
    w.mask = np.array([[0.0, -np.inf], [0.0, 0.0], [0.0, 0.0]])
    feats = Features(np.array([[0], [1], [0], [1]], np.int32), np.zeros((4, 0), np.int32),
                     np.array([0, 2, 4]))
    allowed = np.array([[1, 1], [1, 1], [1, 0], [0, 1]], bool)
    run = {"numpy": run_numpy, "jit": run_jit,
           "predict": lambda w, f, a: predict(w, f, allowed=a)}[decoder]
    assert run(w, feats, allowed).tolist() == [0, 0, -1, -1]
    assert no_path(run(w, feats, allowed), feats.sent_ptr).tolist() == [1]
    # and an `end` that forbids the only allowed last label
    w.mask = np.zeros((3, 2))
    w.end = np.array([0.0, -np.inf])
    assert run(w, feats, allowed).tolist() == [0, 0, -1, -1]


def test_mask_is_validated_at_the_boundary():
    w, feats = _two_label_problem()
    for bad in (np.ones((2, 2), np.uint8), np.ones((2, 3), bool), np.ones((3, 2), bool), np.ones(4, bool),
                [[True, True], [True, True]]):
        with pytest.raises(InputError, match="allowed must be a bool array of shape"):
            predict(w, feats, allowed=bad)  # type: ignore[arg-type]
    # a non-contiguous view is accepted (copied)
    wide = np.ones((2, 4), bool)
    assert predict(w, feats, allowed=wide[:, ::2]).tolist() == [0, 0]


def test_none_is_the_unconstrained_decoder():
    rng = np.random.default_rng(0)
    w, feats = make_problem(rng, n_sent=20, L=5, floats=True)
    np.testing.assert_array_equal(predict(w, feats, allowed=None), predict(w, feats))


def test_empty_sentences_and_empty_corpus():
    w, _ = _two_label_problem()
    feats = Features(np.array([[0], [1]], np.int32), np.zeros((2, 0), np.int32), np.array([0, 0, 2, 2]))
    for run in (run_numpy, run_jit):
        assert run(w, feats, np.array([[1, 0], [1, 1]], bool)).tolist() == [0, 0]
        got = run(w, feats, np.array([[0, 0], [1, 1]], bool))
        assert got.tolist() == [-1, -1] and no_path(got, feats.sent_ptr).tolist() == [1]
    empty = Features(np.zeros((0, 1), np.int32), np.zeros((0, 0), np.int32), np.array([0]))
    assert predict(w, empty, allowed=np.zeros((0, 2), bool)).tolist() == []
    assert run_jit(w, empty, np.zeros((0, 2), bool)).tolist() == []
    assert no_path(np.zeros(0, np.int32), empty.sent_ptr).tolist() == []


# --------------------------------------------------------------------------- properties
@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.sampled_from([0, 2]), st.sampled_from(["all", "observed"]),
       st.floats(0.2, 1.0), st.integers(0, 2**32 - 1))
def test_best_allowed_path_equals_brute_force(L, KT, kind, density, seed):
    """Every decoder returns the brute-force best allowed path (ties included), -1s exactly when no
    allowed path exists; the labels honour the mask."""
    rng = np.random.default_rng(seed)
    w, feats = make_problem(rng, L=L, KT=KT, kind=kind)
    allowed = random_mask(rng, len(feats.state), L, density)
    want, _ = brute_force(w, feats, allowed)
    for name, got in all_decoders(w, feats, allowed).items():
        assert got.tolist() == want, name
        ok = got >= 0
        assert allowed[np.flatnonzero(ok), got[ok]].all(), name


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 4), st.sampled_from([0, 2]), st.floats(0.0, 0.7), st.integers(0, 2**32 - 1))
def test_forced_labels_are_honoured_exactly(L, KT, share, seed):
    """Forcing a single label at some tokens: they get it whenever any path allows it, and the rest
    is the best path given them (brute force); without a scheme mask a path always exists."""
    rng = np.random.default_rng(seed)
    w, feats = make_problem(rng, L=L, KT=KT, scheme_mask=bool(seed % 2))
    n = len(feats.state)
    forced = rng.random(n) < share
    labels = rng.integers(0, L, n)
    allowed = np.ones((n, L), bool)
    allowed[forced] = False
    allowed[np.flatnonzero(forced), labels[forced]] = True
    want, _ = brute_force(w, feats, allowed)
    for name, got in all_decoders(w, feats, allowed).items():
        assert got.tolist() == want, name
        if not seed % 2:
            assert (got >= 0).all()
        kept = forced & (got >= 0)
        np.testing.assert_array_equal(got[kept], labels[kept])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.sampled_from([0, 2]), st.sampled_from(["all", "observed"]),
       st.booleans(), st.integers(0, 2**32 - 1))
def test_all_true_mask_gives_exactly_the_unconstrained_labels(L, KT, kind, floats, seed):
    """An all-True mask does the unconstrained decoder's arithmetic: same labels, for every label
    count (the vector steps of 16, 8, 4 and the scalar code), on ties and on random floats."""
    rng = np.random.default_rng(seed)
    w, feats = make_problem(rng, n_sent=8, L=L, KT=KT, kind=kind, floats=floats, max_T=9, A=30)
    mask = w.mask.copy()
    mask[:, 0] = 0.0  # label 0 always reachable: every sentence has a path
    w.mask = mask
    w.end = np.zeros(L)
    n = len(feats.state)
    want = np.full(n, -7, np.int32)
    sw = w.sparse
    tag_kernels.decode_corpus(feats.state, feats.trans, feats.sent_ptr, sw.ptr, sw.labels, sw.values,
                              w.base_transitions(), w.cond, w.end, want)
    np.testing.assert_array_equal(predict(w, feats), want)
    for name, got in all_decoders(w, feats, np.ones((n, L), bool)).items():
        np.testing.assert_array_equal(got, want, err_msg=name)


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.sampled_from([0, 2]), st.sampled_from(["all", "observed"]),
       st.floats(0.0, 1.0), st.booleans(), st.integers(0, 2**32 - 1))
def test_compiled_equals_numpy_for_every_label_count_and_density(L, KT, kind, density, floats, seed):
    """The kernel's scalar pair loops, its vector steps over partly forbidden rows and its skipped
    single-label tokens give the numpy twin's labels exactly, random floats included (the two do the
    same float32 arithmetic); the labels honour the mask."""
    rng = np.random.default_rng(seed)
    w, feats = make_problem(rng, n_sent=8, L=L, KT=KT, kind=kind, floats=floats, max_T=9, A=30)
    n = len(feats.state)
    allowed = random_mask(rng, n, L, density)
    allowed[rng.random(n) < 0.3] = True
    singles = np.flatnonzero(rng.random(n) < 0.3)
    allowed[singles] = False
    allowed[singles, rng.integers(0, L, len(singles))] = True
    outs = all_decoders(w, feats, allowed)
    for name, got in outs.items():
        np.testing.assert_array_equal(got, outs["numpy"], err_msg=name)
        ok = got >= 0
        assert allowed[np.flatnonzero(ok), got[ok]].all(), name


@aot
def test_aot_build_is_used_by_predict(monkeypatch):
    """`predict` calls the ahead-of-time kernel when it is built and current."""
    calls = []

    def spy(*args):
        calls.append(1)
        return AOT_KERNEL(*args)

    monkeypatch.setattr(loader, "aot", lambda name: spy if name == "decode_corpus_allowed" else None)
    w, feats = _two_label_problem()
    assert predict(w, feats, allowed=np.array([[1, 1], [0, 1]], bool)).tolist() == [1, 1]
    assert calls == [1]


def test_numpy_twin_runs_without_the_build(monkeypatch):
    monkeypatch.setattr(loader, "aot", lambda name: None)
    rng = np.random.default_rng(3)
    w, feats = make_problem(rng, n_sent=30, L=6, KT=2, floats=True)
    allowed = random_mask(rng, len(feats.state), 6, 0.6)
    np.testing.assert_array_equal(predict(w, feats, allowed=allowed), run_jit(w, feats, allowed))


def test_a_single_allowed_label_is_not_scored():
    """A token with one allowed label adds its score to every allowed path, so neither twin adds it:
    a huge common score (2**24, where float32's spacing is 2) would otherwise round away the 0.5 that
    decides the next token. Both twins give the exact answer, the path through the 0.5."""
    state = StateWeights.from_dense(np.array([[2.0 ** 24, 0.0], [0.0, 0.5], [0.0, 0.0]], np.float32))
    w = Weights(state, np.zeros((3, 2), np.float32), np.zeros((1, 3, 2), np.float32), np.zeros((3, 2)),
                np.zeros(2))
    feats = Features(np.array([[0], [1], [2]], np.int32), np.zeros((3, 0), np.int32), np.array([0, 3]))
    allowed = np.array([[1, 0], [1, 1], [1, 1]], bool)
    assert predict(w, feats).tolist() == [0, 0, 0]  # unconstrained: 2**24 + 0.5 rounds to a tie
    for name, got in all_decoders(w, feats, allowed).items():
        assert got.tolist() == [0, 1, 0], name
