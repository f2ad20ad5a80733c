"""Training with attribute values (python-crfsuite's ``{"k": 2.5}``): a state score is Σ_k v_k·W[a_k, y], an
update adds ±v_k.

* the compiled valued epoch equals a plain numpy reference of the averaged perceptron on real-valued
  features, update for update (values are small dyadic numbers, so every sum is exact in float32 and
  float64: a wrong product or a missing value cannot hide in rounding);
* values all 1 train the very same weights as no values (bit for bit), through `train_perceptron`
  and through the valued kernel itself; a value 2 equals the attribute listed twice; a value 0
  equals an absent attribute (id -1); a value -1 is not the same as 1 (the test can fail);
* partial labels with values, checkpoints (resume = straight run), dev scoring on compacted ids;
* bad values are refused with `InputError` before any compiled code runs.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import dense_pairs, dense_weights, random_sentences, reference_epoch

from structperc.decode.decoder import predict
from structperc.errors import InputError
from structperc.features.index import Features, compact_features
from structperc.model.state_weights import feature_set
from structperc.train.checkpoint import load_checkpoint, save_checkpoint
from structperc.train.perceptron import PerceptronState, _epoch_kernel, train_perceptron

DYADIC = np.array([-1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0], dtype=np.float32)


@st.composite
def problems(draw):
    L = draw(st.integers(1, 12))
    n_sent = draw(st.integers(1, 6))
    K = draw(st.integers(1, 3))
    KT = draw(st.sampled_from([0, 0, 1]))
    A = draw(st.integers(1, 10))
    AT = 3
    kind = draw(st.sampled_from(["all", "observed"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sent_ptr, X, XT, y = random_sentences(rng, n_sent, L, A, AT, K, KT)
    V = rng.choice(DYADIC, X.shape).astype(np.float32)
    return sent_ptr, X, XT, V, y, A, AT, L, kind, rng


@settings(max_examples=150, deadline=None)
@given(problems())
def test_compiled_valued_epochs_equal_the_reference(problem):
    sent_ptr, X, XT, V, y, A, AT, L, kind, rng = problem
    fs = feature_set(kind, X, y, A, L)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    allowed = dense_pairs(fs, A, L)
    W, U = np.zeros(len(fs.labels), np.float32), np.zeros(len(fs.labels))
    Wt, Ut = np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L))
    Wc, Uc = np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))
    rW, rU = np.zeros((A, L)), np.zeros((A, L))
    rWt, rUt = np.zeros((L + 1, L)), np.zeros((L + 1, L))
    rWc, rUc = np.zeros((AT, L + 1, L)), np.zeros((AT, L + 1, L))
    c = rc = 0
    max_len = int(np.diff(sent_ptr).max())
    kernel = _epoch_kernel("train_epoch_valued")
    no_partial = np.zeros((0, 1), np.uint8), np.zeros(0, np.uint8)
    for _ in range(3):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        got = kernel(order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active, W, U, Wt, Ut, Wc, Uc,
                     mask, end, c, max_len, *no_partial, V)
        want = reference_epoch(order, sent_ptr, X, XT, y, allowed, rW, rU, rWt, rUt, rWc, rUc,
                               mask, end, rc, values=V)[:3]
        assert tuple(int(v) for v in got[:3]) == want and got[3] == 0
        c, rc = int(got[2]), want[2]
        dense_W = dense_weights(fs, A, L, W)
        dense_U = dense_weights(fs, A, L, U)
        np.testing.assert_array_equal(dense_W, rW)
        np.testing.assert_array_equal(dense_U, rU)
        np.testing.assert_array_equal(Wt, rWt)
        np.testing.assert_array_equal(Ut, rUt)
        np.testing.assert_array_equal(Wc, rWc)
        np.testing.assert_array_equal(Uc, rUc)


# ----------------------------------------------------------------------------- equivalences
def _data(seed=0, n_sent=60, L=5, K=4, KT=1, A=40, AT=6):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, n_sent)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    X[:, 0] = rng.integers(0, A, n)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    # labels that depend on the attributes: something to learn, and mistakes to learn from
    y = ((X[:, 0] + np.maximum(X[:, 1], 0)) % L).astype(np.int32)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    return Features(X, XT, ptr), y, mask, end, A, AT, L


def _train(feats, y, mask, end, A, AT, L, epochs=4, kind="all", values=None, allowed=None, **kw):
    pairs = feature_set(kind, feats.state, y, A, L)
    state = PerceptronState.zeros(A, AT, L, pairs)
    weights, _ = train_perceptron(feats, y, state, mask=mask, end=end, epochs=epochs, seed=3,
                                  values=values, allowed=allowed, **kw)
    return weights, state


def _same(w1, w2):
    np.testing.assert_array_equal(w1.sparse.ptr, w2.sparse.ptr)
    np.testing.assert_array_equal(w1.sparse.labels, w2.sparse.labels)
    assert w1.sparse.values.tobytes() == w2.sparse.values.tobytes()
    assert w1.trans.tobytes() == w2.trans.tobytes()
    assert w1.cond.tobytes() == w2.cond.tobytes()


@pytest.mark.parametrize("kind", ["all", "observed"])
def test_values_all_one_train_the_same_weights_bit_for_bit(kind):
    feats, y, mask, end, A, AT, L = _data()
    base, _ = _train(feats, y, mask, end, A, AT, L, kind=kind)
    ones = np.ones(feats.state.shape, np.float32)
    _same(base, _train(feats, y, mask, end, A, AT, L, kind=kind, values=ones)[0])
    # through Features.values too (the default of ``values``)
    _same(base, _train(Features(feats.state, feats.trans, feats.sent_ptr, ones), y, mask, end, A, AT, L,
                       kind=kind)[0])


def test_the_valued_kernel_with_ones_equals_the_plain_kernel():
    """`train_perceptron` runs the plain epoch for all-ones values; the valued kernel itself must
    agree with it too (x·1.0 = x), sums and counters included."""
    feats, y, mask, end, A, AT, L = _data(seed=5)
    X, XT, ptr = feats.state, feats.trans, feats.sent_ptr
    max_len = int(np.diff(ptr).max())
    runs = []
    for valued in (False, True):
        st_ = PerceptronState.zeros(A, AT, L)
        counts = []
        for epoch in range(3):
            order = np.random.default_rng(epoch).permutation(len(ptr) - 1).astype(np.int64)
            args = (order, ptr, X, XT, y, st_.ptr, st_.labels, st_.active, st_.W, st_.U, st_.Wt, st_.Ut,
                    st_.Wc, st_.Uc, mask, end, st_.c, max_len)
            if valued:
                out = _epoch_kernel("train_epoch_valued")(*args, np.zeros((0, 1), np.uint8),
                                                          np.zeros(0, np.uint8), np.ones(X.shape, np.float32))
                assert out[3] == 0
            else:
                out = _epoch_kernel("train_epoch")(*args)
            st_.c = int(out[2])
            counts.append(tuple(int(v) for v in out[:3]))
        runs.append((counts, st_))
    (c0, s0), (c1, s1) = runs
    assert c0 == c1 and c0[0][0] > 0
    for name in ("W", "U", "Wt", "Ut", "Wc", "Uc"):
        assert getattr(s0, name).tobytes() == getattr(s1, name).tobytes(), name


@pytest.mark.parametrize("kind", ["all", "observed"])
def test_a_value_of_two_is_the_attribute_listed_twice(kind):
    feats, y, mask, end, A, AT, L = _data(seed=1)
    X = feats.state
    twice = Features(np.concatenate([X, X[:, 1:2]], axis=1), feats.trans, feats.sent_ptr)
    values = np.ones(X.shape, np.float32)
    values[:, 1] = 2.0
    w_twice, _ = _train(twice, y, mask, end, A, AT, L, kind=kind)
    w_two, _ = _train(feats, y, mask, end, A, AT, L, kind=kind, values=values)
    _same(w_twice, w_two)
    # and decoding agrees: the id listed twice, or its value 2
    np.testing.assert_array_equal(predict(w_two, twice),
                                  predict(w_two, Features(X, feats.trans, feats.sent_ptr, values)))


def test_a_value_of_zero_is_an_absent_attribute():
    feats, y, mask, end, A, AT, L = _data(seed=2)
    rng = np.random.default_rng(0)
    zero = rng.random(feats.state.shape) < 0.3
    values = np.where(zero, 0.0, 1.0).astype(np.float32)
    absent = Features(np.where(zero, -1, feats.state).astype(np.int32), feats.trans, feats.sent_ptr)
    _same(_train(absent, y, mask, end, A, AT, L)[0], _train(feats, y, mask, end, A, AT, L, values=values)[0])


def test_negative_values_change_the_model_and_match_negated_weights():
    """Every value -1 on an attribute whose weights start at zero: the model learns the same
    weights with the sign flipped (φ negated, the perceptron's path is the same), so the scores and
    transitions are those of values +1. A kernel that ignored values would fail the sign check."""
    feats, y, mask, end, A, AT, L = _data(seed=4)
    plus, _ = _train(feats, y, mask, end, A, AT, L)
    minus, _ = _train(feats, y, mask, end, A, AT, L, values=-np.ones(feats.state.shape, np.float32))
    np.testing.assert_array_equal(minus.sparse.values, -plus.sparse.values)
    np.testing.assert_array_equal(minus.trans, plus.trans)
    assert np.abs(plus.sparse.values).max() > 0


def test_partial_labels_with_values():
    """The latent perceptron honours values too: ones equal no values; a value 2 equals the
    attribute listed twice (unknown tags filled by the best agreeing path under valued scores)."""
    feats, y, mask, end, A, AT, L = _data(seed=6)
    rng = np.random.default_rng(1)
    allowed = np.zeros((len(y), L), bool)
    allowed[np.arange(len(y)), y] = True
    allowed[rng.random(len(y)) < 0.3] = True  # unknown tags: every label allowed
    base, st_base = _train(feats, y, mask, end, A, AT, L, allowed=allowed)
    ones = np.ones(feats.state.shape, np.float32)
    _same(base, _train(feats, y, mask, end, A, AT, L, allowed=allowed, values=ones)[0])
    X = feats.state
    twice = Features(np.concatenate([X, X[:, :1]], axis=1), feats.trans, feats.sent_ptr)
    values = ones.copy()
    values[:, 0] = 2.0
    _same(_train(twice, y, mask, end, A, AT, L, allowed=allowed)[0],
          _train(feats, y, mask, end, A, AT, L, allowed=allowed, values=values)[0])


def test_checkpoint_resume_with_values(tmp_path):
    feats, y, mask, end, A, AT, L = _data(seed=7)
    values = np.random.default_rng(3).choice(DYADIC, feats.state.shape).astype(np.float32)
    straight, _ = _train(feats, y, mask, end, A, AT, L, epochs=4, values=values)
    fingerprint = {"run": "values"}
    _train(feats, y, mask, end, A, AT, L, epochs=2, values=values,
           on_epoch_end=lambda st_: save_checkpoint(tmp_path, st_, fingerprint))
    state = load_checkpoint(tmp_path, fingerprint, mask, end)
    assert state.epoch == 2
    resumed, _ = train_perceptron(feats, y, state, mask=mask, end=end, epochs=4, seed=3, values=values)
    _same(straight, resumed)


def test_dev_scoring_on_compacted_ids_keeps_values_aligned():
    """What `structperc.train.run.run_trainer` does for a dev set: compact the ids, keep the values, score the
    average of the dev rows only. The labels must be those of the whole average on the raw ids."""
    feats, y, mask, end, A, AT, L = _data(seed=8)
    dev, _, _, _, _, _, _ = _data(seed=9, n_sent=20)
    dev.values = np.random.default_rng(5).choice(DYADIC, dev.state.shape).astype(np.float32)
    compact, rows = compact_features(dev)
    compact.values = dev.values
    seen = []

    def dev_score(weights):
        seen.append(predict(weights, compact))
        return float(np.mean(seen[-1] == 0))
    values = np.random.default_rng(6).choice(DYADIC, feats.state.shape).astype(np.float32)
    pairs = feature_set("all", feats.state, y, A, L)
    state = PerceptronState.zeros(A, AT, L, pairs)
    train_perceptron(feats, y, state, mask=mask, end=end, epochs=2, seed=3, values=values,
                     dev_score=dev_score, dev_rows=rows)
    whole = state.averaged(mask, end)
    np.testing.assert_array_equal(seen[-1], predict(whole, dev))
    assert not np.array_equal(predict(whole, dev), predict(whole, Features(dev.state, dev.trans, dev.sent_ptr)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(-1, 40), min_size=3, max_size=3), max_size=30))
def test_compacted_ids_are_the_ranks_among_the_ids_used(rows):
    """The dev ids compacted without a sort: each known id becomes its rank among the distinct known ids
    (what ``np.unique(..., return_inverse=True)`` gives, written out by hand here), -1 stays -1, and the
    rows listed are the distinct known ids in order."""
    state = np.array(rows, dtype=np.int32).reshape(-1, 3)
    compact, used = compact_features(Features(state, np.zeros((len(state), 0), np.int32),
                                              np.array([0, len(state)])))
    distinct = sorted({v for row in rows for v in row if v >= 0})
    rank = {v: i for i, v in enumerate(distinct)}
    assert used.dtype == np.int64 and used.tolist() == distinct
    assert compact.state.dtype == np.int32
    assert compact.state.tolist() == [[rank.get(v, -1) for v in row] for row in rows]


def test_compacted_ids_by_hand():
    state = np.array([[7, -1, 3], [3, 9, 7]], dtype=np.int32)
    compact, used = compact_features(Features(state, np.zeros((2, 0), np.int32), np.array([0, 2])))
    assert used.tolist() == [3, 7, 9]
    assert compact.state.tolist() == [[1, -1, 0], [0, 2, 1]]


@pytest.mark.parametrize("bad, message", [
    (np.ones((3, 2), np.float32), "do not match"),
    ("nan", "finite"),
    ("inf", "finite"),
    ("big", "finite"),
    (np.array([["a"]]), "do not match"),
])
def test_bad_values_are_refused(bad, message):
    feats, y, mask, end, A, AT, L = _data(seed=10, n_sent=5)
    if isinstance(bad, str):
        v = np.ones(feats.state.shape)
        v[0, 0] = {"nan": np.nan, "inf": np.inf, "big": 1e300}[bad]
        bad = v
    with pytest.raises(InputError, match=message):
        _train(feats, y, mask, end, A, AT, L, epochs=1, values=bad)


def test_string_values_are_refused():
    feats, y, mask, end, A, AT, L = _data(seed=10, n_sent=5)
    with pytest.raises(InputError, match="numbers"):
        _train(feats, y, mask, end, A, AT, L, epochs=1, values=np.full(feats.state.shape, "x"))


def test_fitting_run_passes_the_values_through():
    """`structperc.train.run.run_trainer` (the one training loop of the estimators) trains on
    ``data.feats.values``: its model's weights are `train_perceptron`'s with those values."""
    from structperc.features.instances import Instances
    from structperc.features.task import get_task, masks
    from structperc.train.run import run_trainer

    feats, y, _, _, A, AT, L = _data(seed=11)
    labels = [f"L{i}" for i in range(L)]
    task = get_task("pos")
    mask, end = masks(labels, task)
    values = np.random.default_rng(2).choice(DYADIC, feats.state.shape).astype(np.float32)
    valued = Features(feats.state, feats.trans, feats.sent_ptr, values)
    model = dict(task=task, labels=labels, templates=[], features=None, params={}, dictionary=None,
                 dataset_columns={})
    fitted = run_trainer(model, Instances(valued, y), PerceptronState.zeros(A, AT, L), 3, None, None, None, 3)
    want, _ = _train(feats, y, mask, end, A, AT, L, epochs=3, values=values)
    _same(fitted.model.weights, want)
    plain = run_trainer(model, Instances(feats, y), PerceptronState.zeros(A, AT, L), 3, None, None, None, 3)
    assert plain.model.weights.sparse.values.tobytes() != want.sparse.values.tobytes()
