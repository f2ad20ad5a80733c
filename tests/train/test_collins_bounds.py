"""Collins' (2002) mistake bounds, checked on the package's own trainer (`pytest -k collins`).

* Theorem 1 (separable; Novikoff 1962 for two labels): on sequence data that a known u separates
  with margin δ, the mistakes of `train_perceptron` until its first error-free epoch never exceed
  R²/δ², with R and δ computed exactly by enumerating every path.
* Theorem 2 (not separable; Freund & Schapire 1999): with some gold paths replaced by wrong ones,
  the mistakes of the first pass never exceed (R + D_{u,δ})²/δ², for the generating u (and another)
  and several δ.
* The degenerate case: one-token sentences with two labels are `structperc.binary.Perceptron`
  (fit_intercept=True, eta=1, the same seed): the same updates in the same order, w_± = ±coef_ and
  ``<bos>`` transitions ±intercept_ (so w_+ − w_− = 2·coef_), exactly when the structured run's ties
  cannot happen (margin ρ = 1 on integer data), and, for the plain run, up to the first tie on a
  point of class −1, which Rosenblatt's rule counts as a mistake and the decoder gives to label 0.

R, δ and D come from `structperc.train.convergence`, whose enumeration is checked on hand-computed
cases and against the engine's own update and decoder.
"""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings, target
from hypothesis import strategies as st

from structperc.binary import ConvergenceWarning
from structperc.binary import Perceptron as BinaryPerceptron
from structperc.binary.bounds import hard_margin
from structperc.decode.decoder import predict
from structperc.features.index import Features
from structperc.model.weights import Weights, with_zero_row
from structperc.train import convergence as cv

SEEDS = st.integers(0, 2**32 - 1)
FAST = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TOL = 1 + 1e-9  # R²/δ² in floating point


# ----------------------------------------------------------------------------------------- data

def corpus(lengths: list[int], X: np.ndarray, XT: np.ndarray | None = None) -> Features:
    n = int(sum(lengths))
    X = np.asarray(X, np.int32)
    XT = np.zeros((n, 0), np.int32) if XT is None else np.asarray(XT, np.int32)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Features(X if X.ndim == 2 else X.reshape(n, -1), XT if XT.ndim == 2 else XT.reshape(n, -1), ptr)


def subset(feats: Features, y: np.ndarray, keep: list[int]) -> tuple[Features, np.ndarray]:
    rows = [np.arange(feats.sent_ptr[s], feats.sent_ptr[s + 1]) for s in keep]
    idx = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    return corpus([len(r) for r in rows], feats.state[idx], feats.trans[idx]), y[idx]


def random_case(rng: np.random.Generator, masked: bool = True, many: bool = False):
    """Random small sequence data (1-6 sentences of 1-3 tokens, 2-3 labels, state attributes, maybe
    conditioned transitions and a scheme mask; ``many``: 10-40 sentences of 1-2 tokens over 2-3
    attributes, which repeat, so that the bounds are nearer the mistakes), gold paths the best of an
    integer u with a unique best (ties dropped). Returns (layout, feats, y, u, mask, end), or None
    if nothing is left."""
    L = int(rng.integers(2, 4))
    A, AT, K = int(rng.integers(1, 5)), int(rng.integers(0, 3)), int(rng.integers(1, 3))
    lengths = rng.integers(1, 4, int(rng.integers(1, 7))).tolist()
    if many:
        A, AT, K = int(rng.integers(2, 4)), int(rng.integers(0, 2)), 1
        lengths = rng.integers(1, 3, int(rng.integers(10, 41))).tolist()
    n = sum(lengths)
    X = rng.integers(-1, A, (n, K))
    XT = rng.integers(-1, AT, (n, 1)) if AT else None
    feats, layout = corpus(lengths, X, XT), cv.Layout(A, AT, L)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    if masked and rng.random() < 0.4:
        mask[rng.random((L + 1, L)) < 0.25] = -np.inf
        end[rng.random(L) < 0.25] = -np.inf
    if not np.isfinite(end).any():
        end[0] = 0.0
    keep = [s for s in range(len(lengths)) if len(cv.lattice(layout, feats, s, mask, end)[0])]
    u = rng.integers(-3, 4, layout.dim).astype(np.float64)
    if not keep or not u.any():
        return None
    feats, _ = subset(feats, np.zeros(n, np.int32), keep)
    y, gaps = cv.best_paths(layout, feats, u, mask, end)
    keep = [s for s in range(len(gaps)) if gaps[s] > 0]
    if not keep:
        return None
    feats, y = subset(feats, y, keep)
    return layout, feats, y, u, mask, end


def max_margin(lay, feats, y, mask, end) -> np.ndarray | None:
    """The maximum-margin unit u (`structperc.binary.bounds.hard_margin` of every Δφ as a point of
    class +1), or None with no Δφ (every sentence has one candidate) or none separating."""
    D = cv.differences(lay, feats, y, mask, end)
    if not len(D):
        return None
    hm = hard_margin(D, np.ones(len(D)))
    return None if hm is None else hm.v


def decode(state, feats: Features, mask: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The package's decoder on the current (not averaged) weights of ``state``."""
    return predict(Weights(state.pairs, state.Wt.copy(), with_zero_row(state.Wc), mask, end), feats)


# -------------------------------------------------------------- the enumeration, by hand and engine

def test_collins_hand_case_two_tokens():
    """One sentence x = (attribute 0, attribute 1), two labels, gold (1, 0). By hand:
    φ(y) − φ(00) = [s(0,1) − s(0,0)] + [bos→1 − bos→0] + [1→0 − 0→0]: ‖·‖² = 6;
    φ(y) − φ(11) = [s(1,0) − s(1,1)] + [1→0 − 1→1]: 4; φ(y) − φ(01): 8 (both tokens and all three
    transitions differ). u = (s(0,1) − s(0,0) + s(1,0) − s(1,1))/2 scores them 1, 1, 2: R = 2√2,
    δ = 1, bound 8;
    at δ = 1.5 the deficit is 0.5, so D = 0.5 and Theorem 2's bound is (2√2 + 0.5)²/1.5²."""
    feats, lay = corpus([2], [[0], [1]]), cv.Layout(2, 0, 2)
    assert lay.dim == 2 * 2 + 3 * 2
    zs, Phi = cv.lattice(lay, feats, 0)
    assert zs.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    gold = Phi[2]
    assert gold[[lay.state(0, 1), lay.state(1, 0), lay.trans(2, 1), lay.trans(1, 0)]].tolist() == [1, 1, 1, 1]
    assert gold.sum() == 4
    assert ((gold - Phi) ** 2).sum(axis=1).tolist() == [6, 8, 0, 4]
    u = np.zeros(lay.dim)
    u[[lay.state(0, 1), lay.state(1, 0)]], u[[lay.state(0, 0), lay.state(1, 1)]] = 1, -1
    geo = cv.geometry(lay, feats, np.array([1, 0]), 5 * u)  # any positive multiple: u is normalized
    assert geo.R == pytest.approx(2 * math.sqrt(2)) and geo.margins.tolist() == pytest.approx([1.0])
    assert geo.separable_bound() == pytest.approx(8)
    assert geo.D(1.5) == pytest.approx(0.5) and geo.D(1.0) == 0
    assert geo.bound(1.5) == pytest.approx((2 * math.sqrt(2) + 0.5) ** 2 / 2.25)
    log, state = cv.count_mistakes(lay, feats, np.array([1, 0]), epochs=10)
    assert log.per_epoch == [1, 0]  # w = 0 decodes (0, 0): one mistake, then (1, 0) wins
    assert cv.weights_of(state).tolist() == (gold - Phi[0]).tolist()  # the engine's update is Δφ


def test_collins_hand_case_one_token_novikoff():
    """Three one-token sentences with attributes 0, 1, 2, all gold label 1: every Δφ = e(a,1) −
    e(a,0) + e(bos,1) − e(bos,0) has ‖Δφ‖² = 4 (R = 2); u = the ``<bos>`` difference / √2 gives
    each margin √2, bound R²/δ² = 2. The perceptron makes one mistake (w = 0 ties to label 0),
    after which the learnt bias labels everything 1."""
    feats, lay = corpus([1, 1, 1], [[0], [1], [2]]), cv.Layout(3, 0, 2)
    u = np.zeros(lay.dim)
    u[lay.trans(2, 1)], u[lay.trans(2, 0)] = 1, -1
    geo = cv.geometry(lay, feats, np.ones(3, np.int32), u)
    assert geo.R == 2 and geo.margins.tolist() == pytest.approx([math.sqrt(2)] * 3)
    assert geo.separable_bound() == pytest.approx(2)
    for seed in range(5):
        log, _ = cv.count_mistakes(lay, feats, np.ones(3), epochs=3, seed=seed)
        assert log.per_epoch == [1, 0]


def test_collins_hand_case_contradiction():
    """Two copies of one token (attribute 0), gold 1 then gold 0: no u separates them. u =
    (s(0,1) − s(0,0))/√2 has margins √2 and −√2; at δ = √2 the deficits are 0 and 2√2, so D = 2√2
    and (R + D)²/δ² = (2 + 2√2)²/2 = 6 + 4√2. Visited in order, the first pass makes 2 mistakes
    (w = 0 ties to label 0; then label 1 leads by 4)."""
    feats, lay = corpus([1, 1], [[0], [0]]), cv.Layout(1, 0, 2)
    u = np.zeros(lay.dim)
    u[lay.state(0, 1)], u[lay.state(0, 0)] = 1, -1
    geo = cv.geometry(lay, feats, np.array([1, 0]), u)
    assert geo.margins.tolist() == pytest.approx([math.sqrt(2), -math.sqrt(2)])
    assert geo.deficits(math.sqrt(2)).tolist() == pytest.approx([0, 2 * math.sqrt(2)])
    assert geo.bound(math.sqrt(2)) == pytest.approx(6 + 4 * math.sqrt(2))
    assert geo.separable_bound() == math.inf
    log, _ = cv.count_mistakes(lay, feats, np.array([1, 0]), epochs=1, shuffle=False, until_clean=False)
    assert log.per_epoch == [2]


def test_collins_paths_respect_the_mask():
    """GEN(x) leaves out what the scheme forbids: of the 4 paths of 2 tokens over 2 labels,
    forbidding 0 → 1 removes (0, 1) and forbidding the end in 0 removes (0, 0) and (1, 0)."""
    mask, end = np.zeros((3, 2)), np.array([-np.inf, 0.0])
    mask[0, 1] = -np.inf
    assert cv.paths(2, 2, mask, end).tolist() == [[1, 1]]
    assert cv.paths(2, 2).shape == (4, 2)
    with pytest.raises(ValueError):
        cv.paths(40, 2)


@settings(max_examples=120, **FAST)
@given(SEEDS)
def test_collins_phi_is_the_engine_update(seed):
    """One engine epoch from w = 0 on one sentence moves w by exactly φ(x, y) − φ(x, 0..0) (the
    all-0 path is the decoder's tie-break at w = 0), in `Layout` order: the φ of the enumeration is
    the engine's feature map (state pairs, ``<bos>``, transitions, conditioned transitions)."""
    rng = np.random.default_rng(seed)
    L, A, AT, T = int(rng.integers(2, 4)), int(rng.integers(1, 4)), int(rng.integers(0, 3)), int(rng.integers(1, 4))
    feats = corpus([T], rng.integers(-1, A, (T, 2)), rng.integers(-1, AT, (T, 1)) if AT else None)
    lay = cv.Layout(A, AT, L)
    y = rng.integers(0, L, T).astype(np.int32)
    log, state = cv.count_mistakes(lay, feats, y, epochs=1, until_clean=False)
    expected = cv.phi(lay, feats, 0, y) - cv.phi(lay, feats, 0, np.zeros(T, np.int32))
    assert log.per_epoch == [int(y.any())]
    assert cv.weights_of(state).tolist() == expected.tolist()


@settings(max_examples=120, **FAST)
@given(SEEDS)
def test_collins_enumeration_argmax_is_the_engine_decoder(seed):
    """For random integer weights w, the package's decoder returns argmax_z w·φ(x, z) found by
    enumeration (where that best path is unique), mask and end included."""
    rng = np.random.default_rng(seed)
    case = random_case(rng)
    assume(case is not None)
    lay, feats, _, _, mask, end = case
    state = lay.zeros()
    state.W[:] = rng.integers(-50, 51, state.W.shape)
    state.Wt[:] = rng.integers(-50, 51, state.Wt.shape)
    state.Wc[:] = rng.integers(-50, 51, state.Wc.shape)
    best, gaps = cv.best_paths(lay, feats, cv.weights_of(state), mask, end)
    got = decode(state, feats, mask, end)
    for s in np.flatnonzero(gaps > 0):
        rows = cv.sentence_rows(feats, int(s))
        assert got[rows].tolist() == best[rows].tolist()


@settings(max_examples=60, **FAST)
@given(SEEDS, st.booleans(), st.sampled_from([0.0, 1.0]))
def test_collins_trace_is_the_trainer(seed, shuffle, margin):
    """`trace` (the compiled epochs one sentence at a time, in `Perceptron`'s order) is
    `train_perceptron`: the same mistakes per epoch and the same weights, bit for bit; its update
    list has one entry per mistake."""
    rng = np.random.default_rng(seed)
    case = random_case(rng)
    assume(case is not None)
    lay, feats, y, _, mask, end = case
    y = rng.integers(0, lay.n_labels, len(y)).astype(np.int32) if rng.random() < 0.5 else y
    try:
        cv.geometry(lay, feats, y, np.ones(lay.dim), mask, end)
    except ValueError:
        assume(False)  # a random gold path the mask forbids
    kw = dict(epochs=6, seed=seed, shuffle=shuffle, margin=margin, mask=mask, end=end)
    log, state = cv.count_mistakes(lay, feats, y, **kw)
    tlog, tstate = cv.trace(lay, feats, y, **kw)
    assert tlog.per_epoch == log.per_epoch and len(tlog.updates) == tlog.total
    assert cv.weights_of(tstate).tolist() == cv.weights_of(state).tolist()


# ---------------------------------------------------------------------------------- Theorem 1

@settings(max_examples=150, **FAST)
@given(SEEDS, st.booleans(), st.booleans())
def test_collins_theorem1_separable(seed, shuffle, many):
    """Separable data (gold = the unique best path of a known u): the trainer's mistakes until its
    first error-free epoch are at most R²/δ², it reaches one within ⌊R²/δ²⌋ + 1 epochs, and its
    final (un-averaged) weights decode every training sentence right."""
    rng = np.random.default_rng(seed)
    case = random_case(rng, many=many)
    assume(case is not None)
    lay, feats, y, u, mask, end = case
    geo = cv.geometry(lay, feats, y, u, mask, end)
    assert geo.delta > 0
    bound = geo.separable_bound()
    # at most ⌊R²/δ²⌋ epochs can hold a mistake, so one of the first ⌊R²/δ²⌋ + 1 is error-free
    log, state = cv.count_mistakes(lay, feats, y, epochs=int(bound * TOL) + 1, seed=seed, shuffle=shuffle,
                                   mask=mask, end=end)
    assert log.converged, log
    assert log.total <= bound * TOL, (log, geo)
    best = max_margin(lay, feats, y, mask, end)
    if best is not None:  # the tightest bound: the maximum-margin u
        hm = cv.geometry(lay, feats, y, best, mask, end)
        bound = hm.separable_bound()
        assert log.total <= bound * (1 + 1e-6), (log, hm)  # the solver's v: its δ recomputed here
    assert decode(state, feats, mask, end).tolist() == y.tolist()
    event(f"mistakes {'>' if log.total else '='} 0")
    if bound > 0:  # 0: every sentence has one candidate path (the mask allows no other)
        target(log.total / bound, label="mistakes / (R/delta)^2")


class _Clean(Exception):
    pass


def _stop_when_clean(reports: list):
    def callback(report) -> None:
        reports.append(report)
        if report.mistakes == 0:
            raise _Clean
    return callback


@settings(max_examples=50, **FAST)
@given(SEEDS, st.booleans())
def test_collins_theorem1_through_the_tagger(seed, many):
    """The same through the public face: `Tagger.fit` on token lists with the template ``w[0]``
    (one state attribute per token, its word; POS tags, no scheme mask) makes, epoch by epoch, the
    mistakes `count_mistakes` counts on the corresponding integer data (attribute ids are only
    renamed), and they stay within R²/δ²."""
    from structperc import Tagger

    rng = np.random.default_rng(seed)
    L, A = int(rng.integers(2, 4)), int(rng.integers(1, 5))
    lengths = rng.integers(1, 3 if many else 4, int(rng.integers(10, 31) if many else rng.integers(4, 10))).tolist()
    feats, lay = corpus(lengths, rng.integers(0, A, (sum(lengths), 1))), cv.Layout(A, 0, L)
    u = rng.integers(-3, 4, lay.dim).astype(np.float64)
    assume(u.any())
    y, gaps = cv.best_paths(lay, feats, u)
    feats, y = subset(feats, y, [s for s in range(len(gaps)) if gaps[s] > 0])
    assume(len(y) and len(set(y.tolist())) == L)  # the tagger knows only the labels it sees
    geo = cv.geometry(lay, feats, y, u)
    bound = geo.separable_bound()
    ptr = feats.sent_ptr
    words = [[f"w{feats.state[t, 0]}" for t in range(ptr[s], ptr[s + 1])] for s in range(len(ptr) - 1)]
    tags = [["ABC"[y[t]] for t in range(ptr[s], ptr[s + 1])] for s in range(len(ptr) - 1)]
    epochs = int(bound * TOL) + 1
    reports: list = []
    with pytest.raises(_Clean):  # an error-free epoch within ⌊R²/δ²⌋ + 1
        Tagger(task="pos", columns=["word", "pos"], template=["w[0]"], epochs=epochs, seed=seed).fit(
            words, tags, callback=_stop_when_clean(reports))
    log, _ = cv.count_mistakes(lay, feats, y, epochs=epochs, seed=seed)
    assert [r.mistakes for r in reports] == log.per_epoch
    assert log.total <= bound * TOL


# ---------------------------------------------------------------------------------- Theorem 2

@settings(max_examples=150, **FAST)
@given(SEEDS, st.booleans(), st.booleans(), st.floats(0.02, 0.9))
def test_collins_theorem2_flipped_labels(seed, shuffle, many, flip):
    """Some gold paths replaced by another candidate path: the first pass's mistakes are at most
    (R + D_{u,δ})²/δ² for the generating u, the clean data's maximum-margin u and a random u, at
    several δ (each a valid instance of the theorem, which holds for every unit u and δ > 0), the
    δ that minimizes it among them."""
    rng = np.random.default_rng(seed)
    case = random_case(rng, many=many)
    assume(case is not None)
    lay, feats, y, u, mask, end = case
    clean_delta = cv.geometry(lay, feats, y, u, mask, end).delta
    best = max_margin(lay, feats, y, mask, end)
    y = y.copy()
    n = len(feats.sent_ptr) - 1
    flipped = [s for s in range(n) if rng.random() < flip] or [int(rng.integers(n))]
    for s in flipped:
        zs, _ = cv.lattice(lay, feats, s, mask, end)
        rows = cv.sentence_rows(feats, s)
        others = [z for z in zs if z.tolist() != y[rows].tolist()]
        if others:
            y[rows] = others[int(rng.integers(len(others)))]
    log, _ = cv.count_mistakes(lay, feats, y, epochs=1, seed=seed, shuffle=shuffle, mask=mask, end=end,
                               until_clean=False)
    mistakes = log.per_epoch[0]
    lowest = math.inf
    for v in (u, rng.normal(size=lay.dim)) + (() if best is None else (best,)):
        geo = cv.geometry(lay, feats, y, v, mask, end)
        finite = geo.margins[np.isfinite(geo.margins)]
        deltas = {0.25 * clean_delta, 0.5 * clean_delta, clean_delta, 2 * clean_delta, 1.0}
        deltas |= {float(m) for m in finite if m > 0}
        deltas.add(geo.best_delta())
        for delta in (d for d in deltas if math.isfinite(d)):  # inf: every sentence has one candidate
            b = geo.bound(delta)
            assert mistakes <= b * TOL, (mistakes, delta, geo)
            lowest = min(lowest, b)
    if lowest > 0:
        target(mistakes / lowest, label="first-pass mistakes / (R+D)^2/delta^2")


# ------------------------------------------------------------------------------ the degenerate case

BINARY = st.integers(1, 8).flatmap(lambda n: st.integers(1, 4).flatmap(lambda d: st.tuples(
    st.lists(st.lists(st.integers(-3, 3), min_size=d, max_size=d), min_size=n, max_size=n),
    st.lists(st.sampled_from([-1, 1]), min_size=n, max_size=n))))
MAX_EPOCHS = 25


def binary_run(X: np.ndarray, signs: np.ndarray, seed: int, shuffle: bool) -> BinaryPerceptron:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # non-separable draws run MAX_EPOCHS
        return BinaryPerceptron(eta=1.0, fit_intercept=True, max_epochs=MAX_EPOCHS, shuffle=shuffle,
                                random_state=seed).fit(X, signs)


def visits(per_epoch, updates, n: int, seed: int, shuffle: bool) -> list[tuple[int, bool]]:
    """(point, updated) of every visit, from per-epoch counts and the update list, replaying the
    orders of ``np.random.default_rng(seed)`` (checked: each epoch's updates come in visit order)."""
    rng = np.random.default_rng(seed)
    out, pos = [], 0
    for m in per_epoch:
        order = rng.permutation(n) if shuffle else np.arange(n)
        ups = [int(i) for i in updates[pos:pos + m]]
        pos += m
        assert [int(i) for i in order if i in ups] == ups  # one visit per point per epoch
        out += [(int(i), int(i) in ups) for i in order]
    assert pos == len(updates)
    return out


def check_weight_identity(state, X: np.ndarray, signs: np.ndarray, updates: list[int]) -> tuple[np.ndarray, float]:
    """The structured weights are ±Σ y_i·(x_i, 1) over the updates: w_+ = −w_−, bias on the ``<bos>``
    transitions, nothing on the others. Returns (coef, intercept) = (w_+ − w_−)/2."""
    Xh = np.hstack([X, np.ones((len(X), 1))])
    v = sum((signs[i] * Xh[i] for i in updates), np.zeros(Xh.shape[1]))
    W = np.asarray(state.W, np.float64).reshape(-1, 2)
    assert W[:, 1].tolist() == v[:-1].tolist() and W[:, 0].tolist() == (-v[:-1]).tolist()
    assert state.Wt[2].tolist() == [-v[-1], v[-1]] and not state.Wt[:2].any()
    coef, intercept = cv.binary_weights(state)
    assert (2 * coef).tolist() == (W[:, 1] - W[:, 0]).tolist()
    return coef, intercept


@settings(max_examples=200, **FAST)
@given(BINARY, SEEDS, st.booleans())
def test_collins_degenerate_margin_run_is_the_binary_perceptron(data, seed, shuffle):
    """Integer data, the structured perceptron with margin ρ = 1 (perceptron steps): the gold label
    beats the other by 2·y·v·x̃, an even integer, so "behind by less than 1" is exactly Rosenblatt's
    y·v·x̃ ≤ 0, ties included. Then it is `structperc.binary.Perceptron` (fit_intercept, eta 1, the
    same seed): the same mistakes per epoch, the same updates in the same order, coef_ and
    intercept_ exactly (w_+ − w_− = 2·coef_, the ``<bos>`` difference 2·intercept_)."""
    X, signs = np.array(data[0], np.float64), np.array(data[1], np.float64)
    clf = binary_run(X, signs, seed, shuffle)
    feats, lay = cv.one_token_corpus(X)
    log, state = cv.trace(lay, feats, (signs > 0).astype(np.int32), epochs=MAX_EPOCHS, seed=seed,
                          shuffle=shuffle, margin=1.0)
    assert log.per_epoch == clf.mistakes_per_epoch_.tolist()
    assert log.updates == clf.update_indices_.tolist()
    coef, intercept = check_weight_identity(state, X, signs, log.updates)
    assert coef.tolist() == clf.coef_.tolist() and intercept == clf.intercept_
    event("converged" if clf.converged_ else "not separable")


@settings(max_examples=200, **FAST)
@given(BINARY, SEEDS, st.booleans())
def test_collins_degenerate_plain_run_is_the_binary_perceptron_until_a_tie(data, seed, shuffle):
    """The plain structured perceptron (ρ = 0) on the same data makes the binary perceptron's
    decisions at every visit up to the first visit of a class −1 point whose score is exactly 0
    (Rosenblatt: a mistake; the decoder: a tie, given to label 0, the gold one). Without such a
    visit the runs are identical, weights included; in any case each run's weights are the sum of
    its own updates (w_+ − w_− = 2·Σ y_i·x̃_i)."""
    X, signs = np.array(data[0], np.float64), np.array(data[1], np.float64)
    n = len(X)
    clf = binary_run(X, signs, seed, shuffle)
    feats, lay = cv.one_token_corpus(X)
    log, state = cv.trace(lay, feats, (signs > 0).astype(np.int32), epochs=MAX_EPOCHS, seed=seed,
                          shuffle=shuffle)
    ours = visits(log.per_epoch, log.updates, n, seed, shuffle)
    theirs = visits(clf.mistakes_per_epoch_.tolist(), clf.update_indices_.tolist(), n, seed, shuffle)
    coef, intercept = check_weight_identity(state, X, signs, log.updates)
    first = next((k for k, (a, b) in enumerate(zip(ours, theirs)) if a != b), None)
    if first is None:
        assert len(ours) == len(theirs)
        assert coef.tolist() == clf.coef_.tolist() and intercept == clf.intercept_
        event("identical runs")
        return
    i, _ = theirs[first]
    assert theirs[first] == (i, True) and ours[first] == (i, False) and signs[i] == -1
    Xh = np.hstack([X, np.ones((n, 1))])
    before = [j for j, updated in theirs[:first] if updated]
    v = sum((signs[j] * Xh[j] for j in before), np.zeros(Xh.shape[1]))
    assert v @ Xh[i] == 0
    event("diverged at a tie" + (" at w = 0" if not before else ""))


def test_collins_degenerate_hand_cases():
    """x = 1 (class −1) then x = 2 (class +1), visited in order. Rosenblatt updates at once (score
    0 ≤ 0): v = −(1, 1); the plain structured run gives the tie to label 0, the gold one, and
    first updates on x = 2. With ρ = 1 both update on x = 1 first and agree throughout."""
    X, signs = np.array([[1.0], [2.0]]), np.array([-1.0, 1.0])
    clf = binary_run(X, signs, 0, shuffle=False)
    feats, lay = cv.one_token_corpus(X)
    plain, _ = cv.trace(lay, feats, np.array([0, 1]), epochs=MAX_EPOCHS, shuffle=False)
    margin, state = cv.trace(lay, feats, np.array([0, 1]), epochs=MAX_EPOCHS, shuffle=False, margin=1.0)
    assert clf.update_indices_[:2].tolist() == [0, 1] and plain.updates[:1] == [1]
    assert margin.updates == clf.update_indices_.tolist()
    coef, intercept = cv.binary_weights(state)
    assert coef.tolist() == clf.coef_.tolist() and intercept == clf.intercept_
    # A run with no tie on class −1: a class +1 point first, then points it already separates.
    X, signs = np.array([[2.0, 1.0], [-1.0, -2.0], [1.0, 3.0]]), np.array([1.0, -1.0, 1.0])
    clf = binary_run(X, signs, 0, shuffle=False)
    feats, lay = cv.one_token_corpus(X)
    plain, state = cv.trace(lay, feats, np.array([1, 0, 1]), epochs=MAX_EPOCHS, shuffle=False)
    assert plain.per_epoch == clf.mistakes_per_epoch_.tolist() == [1, 0]
    coef, intercept = cv.binary_weights(state)
    assert coef.tolist() == clf.coef_.tolist() == [2.0, 1.0] and intercept == clf.intercept_ == 1.0
