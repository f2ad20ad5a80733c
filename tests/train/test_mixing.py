"""Iterative parameter mixing (`structperc.train.mixing`): its two testable properties, bit for bit,
the two mixings computed by hand, the split and the shard orders, determinism, and partial labels and
attribute values under mixing.

* one shard = `train_perceptron` exactly: raw weights, sums, counter, averaged weights and mistakes
  per epoch, for full labels, partial labels and attribute values, both feature sets;
* N copies of one shard (same sentences, same order) = that shard trained alone, under both mixings;
* uniform and mistake-weighted mixing of a two-shard epoch worked out on paper;
* the in-process shards and the worker processes give the same bits (the arithmetic of `mix` does
  not depend on who computes which block).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.state_weights import feature_set
from structperc.train.mixing import (
    BLOCK,
    EpochOrders,
    Shard,
    make_shards,
    mix,
    mixing_numerators,
    shard_bounds,
    shard_order,
    train_mixed,
)
from structperc.train.perceptron import EpochReport, PerceptronState, epoch_inputs, train_perceptron

RAW = ("W", "U", "Wt", "Ut", "Wc", "Uc")


def problem(seed: int, *, n_sent: int = 40, L: int = 4, A: int = 30, AT: int = 3, K: int = 3, KT: int = 1,
            values: bool = False, partial: bool = False, kind: str = "all"):
    """A random, learnable-ish tagging problem as integer arrays."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, n_sent)
    ptr = np.zeros(n_sent + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    y = (np.maximum(X[:, 0], 0) % L).astype(np.int32)  # the first attribute mostly decides the label
    flip = rng.random(n) < 0.2
    y[flip] = rng.integers(0, L, int(flip.sum()))
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    V = rng.choice(np.array([0.5, 1.0, 1.5, 2.0], np.float32), (n, K)) if values else None
    allowed = None
    if partial:
        allowed = np.zeros((n, L), bool)
        allowed[np.arange(n), y] = True
        hidden = rng.random(n) < 0.25
        allowed[hidden] = True
    feats = Features(X, XT, ptr, V)
    pairs = feature_set(kind, X, y, A, L, allowed=allowed)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)

    def state() -> PerceptronState:
        return PerceptronState.zeros(A, AT, L, pairs)
    return feats, y, state, mask, end, allowed


def run_plain(feats, y, state, mask, end, allowed=None, **kw):
    reports: list[EpochReport] = []
    w, best = train_perceptron(feats, y, state, mask=mask, end=end, callback=reports.append, allowed=allowed, **kw)
    return w, reports


def run_mixed(feats, y, state, mask, end, allowed=None, **kw):
    reports: list[EpochReport] = []
    w, best = train_mixed(feats, y, state, mask=mask, end=end, callback=reports.append, allowed=allowed, **kw)
    return w, reports


def assert_same(s1: PerceptronState, w1, s2: PerceptronState, w2) -> None:
    for name in RAW:
        a, b = getattr(s1, name), getattr(s2, name)
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert s1.c == s2.c and s1.epoch == s2.epoch
    assert w1.sparse.values.tobytes() == w2.sparse.values.tobytes()
    assert w1.trans.tobytes() == w2.trans.tobytes() and w1.cond.tobytes() == w2.cond.tobytes()


VARIANTS = [dict(), dict(values=True), dict(partial=True), dict(values=True, partial=True),
            dict(kind="observed"), dict(KT=0)]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) or "plain")
@pytest.mark.parametrize("processes", [False, True], ids=["serial", "processes"])
def test_one_shard_is_the_plain_trainer(variant, processes):
    feats, y, state, mask, end, allowed = problem(11, **variant)
    s1, s2 = state(), state()
    w1, r1 = run_plain(feats, y, s1, mask, end, allowed, epochs=5, seed=7)
    w2, r2 = run_mixed(feats, y, s2, mask, end, allowed, epochs=5, seed=7, shards=1, processes=processes)
    assert_same(s1, w1, s2, w2)
    assert [(r.mistakes, r.token_errors, r.skipped) for r in r1] == \
        [(r.mistakes, r.token_errors, r.skipped) for r in r2]
    assert r1[-1].mistakes < r1[0].mistakes  # it learnt something: the comparison is not of zeros


@pytest.mark.parametrize("mixing", ["uniform", "mistakes"])
@pytest.mark.parametrize("variant", [dict(), dict(values=True, partial=True)], ids=["plain", "valued-partial"])
def test_copies_of_one_shard_mix_to_that_shard(mixing, variant):
    feats, y, state, mask, end, allowed = problem(5, **variant)
    s1, s2 = state(), state()
    w1, r1 = run_plain(feats, y, s1, mask, end, allowed, epochs=4, seed=3)
    inputs = epoch_inputs(feats, y, s2, mask, end, allowed)
    n = inputs.n_sent
    copies = [Shard(i, 0, n, n, inputs, seed=3) for i in range(3)]  # the same sentences, the same order
    w2, r2 = run_mixed(feats, y, s2, mask, end, allowed, epochs=4, seed=3, shards=copies, mixing=mixing,
                       processes=False)
    assert_same(s1, w1, s2, w2)
    assert [3 * r.mistakes for r in r1] == [r.mistakes for r in r2]


def test_copies_mix_to_that_shard_in_worker_processes():
    feats, y, state, mask, end, _ = problem(6)
    s1, s2 = state(), state()
    w1, _ = run_plain(feats, y, s1, mask, end, epochs=3, seed=1)
    inputs = epoch_inputs(feats, y, s2, mask, end)
    copies = [Shard(i, 0, inputs.n_sent, inputs.n_sent, inputs, seed=1) for i in range(2)]
    w2, _ = run_mixed(feats, y, s2, mask, end, epochs=3, seed=1, shards=copies, mixing="mistakes")
    assert_same(s1, w1, s2, w2)


def _by_hand_problem():
    # labels A = 0, B = 1 (<bos> row 2); attributes a 0, d 1, b 2, c 3; one token per sentence, no
    # transition attributes. Shard 0 = [a/B, d/A], shard 1 = [b/A, c/B] (4 tokens, 2 shards of 2).
    X = np.array([[0], [1], [2], [3]], np.int32)
    y = np.array([1, 0, 0, 1], np.int32)
    feats = Features(X, np.zeros((4, 0), np.int32), np.arange(5, dtype=np.int64), None)
    return feats, y, PerceptronState.zeros(4, 0, 2), np.zeros((3, 2)), np.zeros(2)


@pytest.mark.parametrize("mixing", ["uniform", "mistakes"])
def test_mixing_by_hand(mixing):
    """One epoch, in order (no shuffling). Ties go to label 0 = A.

    Shard 0, c = 0: a/B predicted A -> W[a] = (-1, 1), Wt[bos] = (-1, 1); sums unchanged (c = 0).
             c = 1: d/A scores A -1, B +1 -> predicted B -> W[d] = (1, -1), U[d] = (1, -1),
                    Wt[bos] = (0, 0), Ut[bos] = (1, -1). Two mistakes.
    Shard 1, c = 0: b/A predicted A, right.
             c = 1: c/B predicted A -> W[c] = (-1, 1), U[c] = (-1, 1), Wt[bos] = (-1, 1),
                    Ut[bos] = (-1, 1). One mistake.
    Mixed counter 0 + max(2, 2) = 2; averaged = W - U / 2.
    uniform, mu = (1/2, 1/2): W a (-1/2, 1/2), d (1/2, -1/2), c (-1/2, 1/2), Wt[bos] (-1/2, 1/2);
        U d (1/2, -1/2), c (-1/2, 1/2), Ut[bos] 0 -> averaged d (1/4, -1/4), c (-1/4, 1/4).
    mistakes, mu = (2/3, 1/3): W a (-2/3, 2/3), d (2/3, -2/3), c (-1/3, 1/3), Wt[bos] (-1/3, 1/3);
        U d (2/3, -2/3), c (-1/3, 1/3), Ut[bos] (1/3, -1/3)
        -> averaged a (-2/3, 2/3), d (1/3, -1/3), c (-1/6, 1/6), trans bos (-1/2, 1/2).
    """
    feats, y, state, mask, end = _by_hand_problem()
    weights, r = run_mixed(feats, y, state, mask, end, epochs=1, shards=2, shuffle=False, mixing=mixing,
                           processes=False)
    assert r[0].mistakes == 3 and state.c == 2
    if mixing == "uniform":
        W = [[-.5, .5], [.5, -.5], [0, 0], [-.5, .5]]
        U = [[0, 0], [.5, -.5], [0, 0], [-.5, .5]]
        Wt, Ut = [-.5, .5], [0, 0]
        avg, avg_t = [[-.5, .5], [.25, -.25], [0, 0], [-.25, .25]], [-.5, .5]
    else:
        W = [[-2 / 3, 2 / 3], [2 / 3, -2 / 3], [0, 0], [-1 / 3, 1 / 3]]
        U = [[0, 0], [2 / 3, -2 / 3], [0, 0], [-1 / 3, 1 / 3]]
        Wt, Ut = [-1 / 3, 1 / 3], [1 / 3, -1 / 3]
        avg, avg_t = [[-2 / 3, 2 / 3], [1 / 3, -1 / 3], [0, 0], [-1 / 6, 1 / 6]], [-.5, .5]
    np.testing.assert_allclose(state.W.reshape(4, 2), W, rtol=1e-7)
    np.testing.assert_allclose(state.U.reshape(4, 2), U, rtol=1e-12)
    np.testing.assert_allclose(state.Wt[2], Wt, rtol=1e-7)
    np.testing.assert_allclose(state.Ut[2], Ut, rtol=1e-12, atol=1e-15)
    assert not state.Wt[:2].any() and not state.Ut[:2].any()
    np.testing.assert_allclose(weights.state[:4], avg, rtol=1e-6)
    np.testing.assert_allclose(weights.trans[2], avg_t, rtol=1e-6)


def test_mistake_weights_fall_back_to_uniform():
    assert mixing_numerators([3, 0, 1], "mistakes") == [3, 0, 1]
    assert mixing_numerators([0, 0, 0], "mistakes") == [1, 1, 1]
    assert mixing_numerators([3, 0, 1], "uniform") == [1, 1, 1]
    with pytest.raises(InputError):
        mixing_numerators([1], "median")


def test_mix_is_exact_where_shards_agree():
    x = np.array([1.0, -0.0, 3.0, 2.5], np.float32)
    y = np.array([1.0, -0.0, 5.0, 2.5], np.float32)
    out = np.empty_like(x)
    mix([x, y, x], [1, 1, 1], [out])
    assert out[0] == 1.0 and out[2] == np.float32(3.0 + 2.0 / 3.0) and out[3] == 2.5
    assert out[1] == 0 and np.signbit(out[1])  # untouched where every shard agrees: even -0.0 stays


def test_split_is_contiguous_and_balanced_by_tokens():
    ptr = np.cumsum([0] + [10, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1])  # 11 sentences, 20 tokens
    b = shard_bounds(ptr, 2)
    assert b.tolist() == [0, 1, 11]  # 10 tokens each
    assert shard_bounds(ptr, 11).tolist() == list(range(12))  # one sentence each at most
    b4 = shard_bounds(np.arange(101), 4)
    assert b4.tolist() == [0, 25, 50, 75, 100]
    with pytest.raises(InputError):
        shard_bounds(ptr, 12)
    with pytest.raises(InputError):
        shard_bounds(ptr, 0)


def test_shard_orders_are_the_plain_order_restricted():
    orders = EpochOrders(9, 50)
    rng = np.random.default_rng(9)
    perms = [rng.permutation(50) for _ in range(3)]
    assert orders(3).tolist() == perms[2].tolist() and orders(1).tolist() == perms[0].tolist()
    o = shard_order(perms[1], 10, 20)
    assert sorted(o.tolist()) == list(range(10)) and (o + 10).tolist() == [s for s in perms[1] if 10 <= s < 20]
    assert EpochOrders(9, 5, shuffle=False)(4).tolist() == [0, 1, 2, 3, 4]


def test_shards_cover_the_data_once():
    feats, y, state, mask, end, _ = problem(2)
    inputs = epoch_inputs(feats, y, state(), mask, end)
    shards = make_shards(inputs, 3)
    assert sum(s.inputs.n_sent for s in shards) == inputs.n_sent
    assert np.concatenate([s.inputs.X for s in shards]).tobytes() == inputs.X.tobytes()
    assert [s.start for s in shards[1:]] == [s.stop for s in shards[:-1]]
    assert sorted(np.concatenate([s.order(2) + s.start for s in shards]).tolist()) == list(range(inputs.n_sent))


@pytest.mark.parametrize("mixing", ["uniform", "mistakes"])
def test_same_seed_and_shards_same_weights(mixing):
    feats, y, state, mask, end, _ = problem(4, n_sent=60)
    runs = []
    for seed, shards, processes in [(2, 3, False), (2, 3, True), (2, 3, True), (5, 3, False), (2, 2, False)]:
        s = state()
        w, r = run_mixed(feats, y, s, mask, end, epochs=4, seed=seed, shards=shards, mixing=mixing,
                         processes=processes)
        runs.append((s.W.tobytes(), s.U.tobytes(), w.sparse.values.tobytes(), [x.mistakes for x in r]))
    assert runs[0] == runs[1] == runs[2]  # in-process and worker processes alike
    assert runs[3][0] != runs[0][0] and runs[4][0] != runs[0][0]  # seed and shards matter


def test_uniform_and_mistakes_differ_and_both_learn():
    feats, y, state, mask, end, _ = problem(8, n_sent=80)
    got = {}
    for mixing in ("uniform", "mistakes"):
        s = state()
        _, r = run_mixed(feats, y, s, mask, end, epochs=6, seed=0, shards=4, mixing=mixing, processes=False)
        got[mixing] = s.W.tobytes()
        assert r[-1].mistakes < r[0].mistakes
    assert got["uniform"] != got["mistakes"]


@pytest.mark.parametrize("variant", [dict(partial=True), dict(values=True), dict(values=True, partial=True)],
                         ids=["partial", "valued", "valued-partial"])
def test_variants_train_on_shards(variant):
    feats, y, state, mask, end, allowed = problem(13, n_sent=60, **variant)
    s1, s2 = state(), state()
    _, r1 = run_mixed(feats, y, s1, mask, end, allowed, epochs=4, shards=3, processes=False)
    _, r2 = run_mixed(feats, y, s2, mask, end, allowed, epochs=4, shards=3, processes=True)
    assert s1.W.tobytes() == s2.W.tobytes() and s1.U.tobytes() == s2.U.tobytes()
    assert r1[-1].mistakes < r1[0].mistakes and s1.c == s2.c


def test_dev_scoring_and_best_epoch_under_mixing():
    feats, y, state, mask, end, _ = problem(3, n_sent=50)
    scores = iter([0.5, 0.9, 0.7, 0.8])
    s = state()
    checkpoints: list[int] = []
    w, best = train_mixed(feats, y, s, mask=mask, end=end, epochs=4, shards=2, processes=False,
                          dev_score=lambda weights: next(scores), on_epoch_end=lambda st: checkpoints.append(st.epoch))
    assert best == 2 and checkpoints == [1, 2, 3, 4] and s.best_score == 0.9


def test_resumed_mixed_run_equals_a_straight_one():
    feats, y, state, mask, end, _ = problem(12, n_sent=50)
    straight = state()
    w1, _ = run_mixed(feats, y, straight, mask, end, epochs=5, seed=4, shards=3, processes=False)
    part = state()
    run_mixed(feats, y, part, mask, end, epochs=2, seed=4, shards=3, processes=False)
    w2, _ = run_mixed(feats, y, part, mask, end, epochs=5, seed=4, shards=3, processes=True)
    assert_same(straight, w1, part, w2)


@pytest.mark.parametrize("variant", [dict(), dict(kind="observed"), dict(KT=0), dict(values=True, partial=True)],
                         ids=["plain", "observed", "no-cond", "valued-partial"])
def test_mixing_only_the_changed_rows_gives_the_same_bits(variant):
    feats, y, state, mask, end, allowed = problem(21, n_sent=60, **variant)
    got = []
    for kw in (dict(processes=False), dict(sparse=True), dict(sparse=False)):
        s = state()
        run_mixed(feats, y, s, mask, end, allowed, epochs=4, seed=1, shards=3, **kw)
        got.append(tuple(getattr(s, name).tobytes() for name in RAW))
    assert got[0] == got[1] == got[2]


def test_a_tracked_epoch_reports_every_row_it_changed():
    from structperc.train.mixing import MIXED, shard_epoch

    feats, y, state, mask, end, _ = problem(22, n_sent=60)
    s1, s2 = state(), state()
    inputs = epoch_inputs(feats, y, s1, mask, end)
    shard = make_shards(inputs, 1, seed=4)[0]
    pairs = (s1.ptr, s1.labels, s1.active)
    for epoch in (1, 2, 3):
        before = {name: getattr(s2, name).copy() for name in MIXED}
        plain = shard_epoch(shard, {n: getattr(s1, n) for n in MIXED}, pairs, s1.c, epoch)
        tracked = shard_epoch(shard, {n: getattr(s2, n) for n in MIXED}, pairs, s2.c, epoch, track=True)
        s1.c, s2.c = plain.c, tracked.c
        assert all(getattr(s1, n).tobytes() == getattr(s2, n).tobytes() for n in MIXED)  # the same epoch
        L = s2.Wt.shape[1]
        changed = np.flatnonzero((s2.W != before["W"]) | (s2.U != before["U"])) // L
        assert set(changed.tolist()) <= set(tracked.rows.tolist()) and len(changed)
        changed_cond = np.flatnonzero(((s2.Wc != before["Wc"]) | (s2.Uc != before["Uc"])).any(axis=(1, 2)))
        assert set(changed_cond.tolist()) <= set(tracked.trans_rows.tolist())


def test_mix_in_place_writes_every_block_where_any_differs():
    x0 = np.array([1.0, 2.0, 3.0, 5.0], np.float32)
    x1 = np.array([1.0, 4.0, 4.0, 5.0], np.float32)
    x2 = np.array([1.0, 0.0, 2.0, 5.0], np.float32)  # element 2: +1 and -1 cancel, the mix is x0's 3
    blocks = [x0, x1, x2]
    mix(blocks, [1, 1, 1], blocks)
    for x in blocks:
        assert x.tolist() == [1.0, 2.0, 3.0, 5.0]
    u0, u1 = np.array([0.5, 1.0]), np.array([0.5, 2.0])
    mix([u0, u1], [3, 1], [u0, u1])  # mistake-weighted: 1 + (2 - 1) / 4
    assert u0.tolist() == u1.tolist() == [0.5, 1.25]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([np.float32, np.float64]), st.integers(2, 4), st.integers(0, 2**32 - 1),
       st.booleans(), st.booleans())
def test_compiled_mixing_steps_give_numpys_bits(dtype, n_parts, seed, weighted, into_parts):
    """`mix`'s compiled pass per step and numpy's passes: the same bits, over a range that spans
    blocks, with signed zeros, NaN, equal and cancelling elements, zero weights and either kind of
    output (the parts themselves, or another array)."""
    rng = np.random.default_rng(seed)
    n = 2 * BLOCK + 17
    base = rng.standard_normal(n).astype(dtype)
    parts = []
    for _ in range(n_parts):
        p = base.copy()
        moved = rng.random(n) < 0.4
        p[moved] = rng.choice(np.array([0.0, -0.0, np.nan, 1.5, -1.5, 1e-30], dtype), int(moved.sum()))
        parts.append(p)
    k = [int(v) for v in rng.integers(0, 4, n_parts)] if weighted else [1] * n_parts
    if sum(k) == 0:
        k[0] = 1
    lo, hi = int(rng.integers(0, 100)), n - int(rng.integers(0, 100))
    results = []
    for compiled in (True, False):
        copies = [p.copy() for p in parts]
        outs = copies if into_parts else [np.full(n, 7.0, dtype)]
        mix(copies, k, outs, lo, hi, compiled=compiled)
        results.append([o.view(f"u{o.itemsize}").copy() for o in outs])
    for a, b in zip(*results):
        assert np.array_equal(a, b)
