"""The averaged structured perceptron: exact updates, Collins averaging, determinism, convergence."""
from __future__ import annotations

import numpy as np

from structperc.features.index import FeatureIndex
from structperc.features.templates import parse_templates
from structperc.io.corpus import Corpus
from structperc.labels import LabelSet, transition_mask
from structperc.train.perceptron import EpochReport, PerceptronState, train_perceptron


def _dense(state: PerceptronState, values: np.ndarray) -> np.ndarray:
    """A state's per-pair array (weights or sums) as the attribute × label matrix."""
    return state.pairs.with_values(values).to_dense()

def _setup(words, tags, templates, scheme="none"):
    corpus = Corpus.from_sentences(words, tags)
    labels = LabelSet(corpus.columns["tag"])
    fi = FeatureIndex(parse_templates(templates))
    feats = fi.fit_transform(corpus)
    y = labels.encode(corpus.columns["tag"])
    mask, end = transition_mask(labels.labels, scheme)
    state = PerceptronState.zeros(fi.n_state_attributes, fi.n_transition_attributes, len(labels))
    return feats, y, state, mask, end, labels, fi


def _train(feats, y, state, mask, end, **kw):
    reports: list[EpochReport] = []
    weights, epoch = train_perceptron(feats, y, state, mask=mask, end=end, callback=reports.append, **kw)
    return weights, epoch, reports


def test_one_update_by_hand():
    # one sentence "a/B b/A"; labels sorted: A = 0, B = 1, so gold y = [1, 0], L = 2, <bos> row = 2
    # state attributes: w[0]=a 0, w[0]=b 1, bias 2; transition attributes (y[-1]|y[0]|w[0]): a 0, b 1
    feats, y, state, mask, end, labels, fi = _setup([["a", "b"]], [["B", "A"]],
                                                    ["w[0]", "bias", "y[-1]|y[0]|w[0]"])
    assert labels.labels == ["A", "B"] and y.tolist() == [1, 0]
    assert feats.state.tolist() == [[0, 2], [1, 2]] and feats.trans.tolist() == [[0], [1]]
    weights, epoch, reports = _train(feats, y, state, mask, end, epochs=1)
    # All weights 0: every path scores 0, ties go to label 0, predicted path [A, A] = [0, 0].
    # t=0: gold (bos->B), predicted (bos->A): labels differ ->
    #   W[a, B] += 1, W[bias, B] += 1, W[a, A] -= 1, W[bias, A] -= 1
    #   Wt[bos, B] += 1, Wt[bos, A] -= 1;  Wc[a, bos, B] += 1, Wc[a, bos, A] -= 1
    # t=1: both label A but the previous labels differ (B vs A): state features cancel,
    #   Wt[B, A] += 1, Wt[A, A] -= 1;  Wc[b, B, A] += 1, Wc[b, A, A] -= 1
    assert _dense(state, state.W).tolist() == [[-1, 1], [0, 0], [-1, 1]]
    assert state.Wt.tolist() == [[-1, 0], [1, 0], [-1, 1]]
    assert state.Wc.tolist() == [[[0, 0], [0, 0], [-1, 1]], [[-1, 0], [1, 0], [0, 0]]]
    # the only update happened with c = 0 instances seen before: the sums stay 0
    assert not state.U.any() and not state.Ut.any() and not state.Uc.any()
    assert state.c == 1 and state.epoch == 1 and epoch == 1
    # one instance, one epoch: the average equals the weights (plus the all-zero unknown row)
    assert weights.state.tolist() == [[-1, 1], [0, 0], [-1, 1], [0, 0]]
    assert weights.trans.tolist() == state.Wt.tolist()
    assert weights.cond[:-1].tolist() == state.Wc.tolist() and not weights.cond[-1].any()
    assert weights.state.dtype == weights.trans.dtype == weights.cond.dtype == np.float32
    r = reports[0]
    assert (r.epoch, r.epochs, r.mistakes, r.token_errors, r.n_sentences, r.n_tokens) == (1, 1, 1, 1, 1, 2)


def test_second_epoch_is_correct_and_changes_nothing():
    feats, y, state, mask, end, *_ = _setup([["a", "b"]], [["B", "A"]], ["w[0]", "bias", "y[-1]|y[0]|w[0]"])
    weights, epoch, reports = _train(feats, y, state, mask, end, epochs=2)
    # Epoch 2 with the weights above: t=0 scores A: W[a]+W[bias]+Wt[bos]+Wc[a,bos] = -1-1-1-1 = -4,
    # B: +4. t=1 state b+bias = [-1, 1]; into A from A: -4 + (Wt[A,A] + Wc[b,A,A] = -2) = -6,
    # from B: 4 + (1 + 1) = 6 -> 6 - 1 = 5; into B: from A -4 + 0, from B 4 + 0 -> 4 + 1 = 5.
    # Tie 5/5 at the end -> label A (lowest id), its best predecessor B: path [B, A] = gold.
    assert [r.mistakes for r in reports] == [1, 0]
    # no update in epoch 2: the average of (w1, w2) = (W, W) is W
    assert weights.state[:-1].tolist() == [[-1, 1], [0, 0], [-1, 1]]
    assert state.c == 2 and epoch == 2


def test_averaging_two_instances_by_hand():
    # sentences "a"/B then "b"/A in this order (shuffle off); labels A = 0, B = 1; attrs a 0, b 1
    feats, y, state, mask, end, *_ = _setup([["a"], ["b"]], [["B"], ["A"]], ["w[0]"])
    weights, _, reports = _train(feats, y, state, mask, end, epochs=1, shuffle=False)
    # instance 1 (c = 0): scores 0 -> predicts A, gold B:
    #   W[a] = [-1, 1], Wt[bos] = [-1, 1]; sums += 0 * delta
    # instance 2 (c = 1): "b" scores W[b] + Wt[bos] = [-1, 1] -> predicts B, gold A:
    #   W[b] = [1, -1], Wt[bos] = [0, 0]; U[b] += 1 * [1, -1], Ut[bos] += 1 * [1, -1]
    assert reports[0].mistakes == 2
    assert _dense(state, state.W).tolist() == [[-1, 1], [1, -1]]
    assert state.Wt.tolist() == [[0, 0], [0, 0], [0, 0]]
    assert _dense(state, state.U).tolist() == [[0, 0], [1, -1]]
    assert state.Ut.tolist() == [[0, 0], [0, 0], [1, -1]]
    # Collins: average of w1 and w2 — w1 = {a: [-1, 1], b: 0, bos: [-1, 1]},
    # w2 = {a: [-1, 1], b: [1, -1], bos: [0, 0]} -> a [-1, 1], b [0.5, -0.5], bos [-0.5, 0.5]
    # (= W - U / c with c = 2)
    assert weights.state.tolist() == [[-1, 1], [0.5, -0.5], [0, 0]]
    assert weights.trans.tolist() == [[0, 0], [0, 0], [-0.5, 0.5]]


def test_other_order_by_hand():
    # the same two instances in the other order: "b"/A first is already right (ties -> A);
    # then "a"/B: predicts A -> W[a] = [-1, 1], Wt[bos] = [-1, 1] at c = 1
    feats, y, state, mask, end, *_ = _setup([["b"], ["a"]], [["A"], ["B"]], ["w[0]"])
    weights, _, reports = _train(feats, y, state, mask, end, epochs=1, shuffle=False)
    assert reports[0].mistakes == 1
    # average of w1 = 0 and w2 = W: half of W
    assert weights.state[:-1].tolist() == [[0, 0], [-0.5, 0.5]]   # attrs: b 0, a 1
    assert weights.trans.tolist() == [[0, 0], [0, 0], [-0.5, 0.5]]


def _toy(seed=0, n=40, noise=0.0):
    rng = np.random.default_rng(seed)
    vocab = ["the", "cat", "dog", "sat", "ran", "on", "mat", "北京", "欢迎", "naïve"]
    tag_of = {"the": "B-NP", "cat": "I-NP", "dog": "I-NP", "sat": "B-VP", "ran": "B-VP", "on": "B-PP",
              "mat": "I-NP", "北京": "B-NP", "欢迎": "B-VP", "naïve": "I-NP"}
    words, tags = [], []
    for _ in range(n):
        s = list(rng.choice(vocab, size=int(rng.integers(1, 7))))
        t = [tag_of[w] if rng.random() >= noise else str(rng.choice(["O", "B-NP", "B-VP"])) for w in s]
        words.append(s)
        tags.append(t)
    return words, tags


def test_same_seed_same_arrays_different_seed_different_order():
    words, tags = _toy(noise=0.3)
    runs = {}
    for seed in (0, 0, 1):
        feats, y, state, mask, end, *_ = _setup(words, tags, ["w[0]", "w[-1]", "w[1]"])
        weights, _, _ = _train(feats, y, state, mask, end, epochs=3, seed=seed)
        runs.setdefault(seed, []).append((state, weights))
    (s0, w0), (s0b, w0b) = runs[0]
    for name in ("W", "U", "Wt", "Ut", "Wc", "Uc"):
        assert np.array_equal(getattr(s0, name), getattr(s0b, name)), name
    assert np.array_equal(w0.state, w0b.state) and np.array_equal(w0.trans, w0b.trans)
    assert s0.rng_state == s0b.rng_state
    # another seed visits the sentences in another order: on noisy data the sums differ
    s1, _ = runs[1][0]
    assert s0.rng_state != s1.rng_state
    assert not np.array_equal(s0.U, s1.U)


def test_continuing_training_equals_training_at_once():
    words, tags = _toy(seed=3, noise=0.2)
    feats, y, state_a, mask, end, *_ = _setup(words, tags, ["w[0]", "w[-1]|w[0]", "y[-1]|y[0]|w[0]"])
    wa, _, _ = _train(feats, y, state_a, mask, end, epochs=4, seed=9)
    feats, y, state_b, mask, end, *_ = _setup(words, tags, ["w[0]", "w[-1]|w[0]", "y[-1]|y[0]|w[0]"])
    _train(feats, y, state_b, mask, end, epochs=2, seed=9)
    assert state_b.epoch == 2
    wb, epoch, reports = _train(feats, y, state_b, mask, end, epochs=4, seed=9)
    assert epoch == 4 and [r.epoch for r in reports] == [3, 4]
    for name in ("W", "U", "Wt", "Ut", "Wc", "Uc"):
        assert np.array_equal(getattr(state_a, name), getattr(state_b, name)), name
    assert np.array_equal(wa.state, wb.state) and np.array_equal(wa.cond, wb.cond)


def test_separable_toy_reaches_zero_mistakes():
    words, tags = _toy(seed=1, n=60)
    feats, y, state, mask, end, *_ = _setup(words, tags, ["w[0]"])   # tag = f(word): separable
    _, _, reports = _train(feats, y, state, mask, end, epochs=10, seed=0)
    mistakes = [r.mistakes for r in reports]
    assert mistakes[0] > 0
    assert mistakes[-1] == 0 and mistakes[-2] == 0
    assert all(r.n_sentences == 60 and r.seconds >= 0 for r in reports)


def test_dev_score_picks_best_epoch():
    words, tags = _toy(seed=2, noise=0.1)
    feats, y, state, mask, end, *_ = _setup(words, tags, ["w[0]", "w[1]"])
    scores = iter([0.2, 0.7, 0.7, 0.4])
    snapshots = []

    def on_epoch_end(s):
        snapshots.append(s.averaged(mask, end))
    weights, epoch, reports = _train(feats, y, state, mask, end, epochs=4,
                                     dev_score=lambda w: next(scores), on_epoch_end=on_epoch_end)
    # the first of the tied best scores wins: epoch 2
    assert epoch == 2
    assert [r.best for r in reports] == [True, True, False, False]
    assert [r.dev_score for r in reports] == [0.2, 0.7, 0.7, 0.4]
    assert np.array_equal(weights.state, snapshots[1].state)
    assert np.array_equal(weights.trans, snapshots[1].trans)
    assert "dev 70.00 *" in str(reports[1])


def test_empty_sentences_count_as_instances():
    # "a"/B, then an empty sentence: c counts both instances
    corpus = Corpus.from_sentences([["a"], []], [["B"], []])
    labels = LabelSet(["A", "B"])
    fi = FeatureIndex(parse_templates(["w[0]"]))
    feats = fi.fit_transform(corpus)
    y = labels.encode(corpus.columns["tag"])
    mask, end = transition_mask(labels.labels, "none")
    state = PerceptronState.zeros(fi.n_state_attributes, 0, 2)
    weights, _, reports = _train(feats, y, state, mask, end, epochs=1, shuffle=False)
    # "a": all-zero scores pick A, gold B -> W[a] = [-1, 1] at c = 0; the empty one makes c = 2.
    # Average of w1 = w2 = W is W.
    assert state.c == 2 and reports[0].mistakes == 1
    assert weights.state[:-1].tolist() == [[-1, 1]]


def test_averaged_with_no_instances_is_zero():
    state = PerceptronState.zeros(3, 1, 2)
    w = state.averaged(np.zeros((3, 2)), np.zeros(2))
    assert w.state.shape == (4, 2) and w.cond.shape == (2, 3, 2) and w.trans.shape == (3, 2)
    assert not w.state.any() and not w.trans.any()
