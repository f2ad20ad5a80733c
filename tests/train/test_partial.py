"""Partial-label training (the latent structured perceptron): tokens with unknown tags are filled by
the best path that agrees with the known ones.

* the constrained Viterbi is the best agreeing path (brute force over every path of tiny lattices);
* the compiled partial epoch equals a plain numpy reference of the latent perceptron, update for
  update (the reference of `test_train_reference` with ŷ_c in place of the gold path);
* data without unknown tags trains exactly as before (the same weights, bit for bit);
* end to end: ``None`` in tag lists, ``?`` in files, a wholly unknown sentence, ``unknown_tag=None``,
  dev data with unknown tags, continued training, the ``observed`` feature set.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import dense_pairs, dense_weights, random_sentences, reference_epoch

from structperc import Tagger
from structperc.errors import InputError
from structperc.io.corpus import Corpus
from structperc.model.state_weights import feature_set
from structperc.train import epoch_kernels
from structperc.train.perceptron import PerceptronState, _epoch_kernel, partial_sentences, train_perceptron


def brute_force(state, trans, end, allowed):
    """Best agreeing path by enumeration (ties: the lexicographically smallest path, which is what
    lowest-label tie-breaking in Viterbi gives on integer scores... compared by score only)."""
    T, L = state.shape
    best, arg = -np.inf, None
    for path in itertools.product(range(L), repeat=T):
        if not all(allowed[t, y] for t, y in enumerate(path)):
            continue
        s = 0.0
        for t, y in enumerate(path):
            tr = trans[t if trans.shape[0] == T else 0]
            s += state[t, y] + tr[L if t == 0 else path[t - 1], y]
        s += end[path[-1]]
        if s > best:
            best, arg = s, path
    return best, arg


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.booleans(), st.booleans(), st.integers(0, 2**32 - 1))
def test_constrained_viterbi_is_the_best_agreeing_path(T, L, per_token, forbid, seed):
    rng = np.random.default_rng(seed)
    state = rng.normal(size=(T, L))
    trans = rng.normal(size=(T if per_token else 1, L + 1, L))
    end = np.zeros(L)
    if forbid:
        trans[rng.random(trans.shape) < 0.3] = -np.inf
        end[rng.random(L) < 0.3] = -np.inf
    allowed = (rng.random((T, L)) < 0.6).astype(np.uint8)
    path = np.empty(T, np.int32)
    score = epoch_kernels.constrained_viterbi(state, trans, end, allowed, path)
    want, want_path = brute_force(state, trans, end, allowed)
    if want == -np.inf:
        assert score == -np.inf
        return
    assert score == pytest.approx(want, abs=1e-9)
    assert all(allowed[t, y] for t, y in enumerate(path))              # agrees with the known tags
    got, _ = brute_force(state, trans, end, np.eye(L, dtype=bool)[path])  # and scores as it says
    assert got == pytest.approx(score, abs=1e-9)


def test_constrained_viterbi_by_hand():
    # two labels; the free best path is 0 0, the constraint forces label 1 at t = 1
    state = np.array([[2.0, 0.0], [1.0, 0.0]])
    trans = np.zeros((1, 3, 2))
    trans[0, 0, 1] = -1.0   # 0 -> 1 costs 1
    trans[0, 1, 1] = 0.5    # 1 -> 1 earns 0.5
    path = np.empty(2, np.int32)
    allowed = np.array([[1, 1], [0, 1]], np.uint8)
    # 0 1: 2 - 1 + 0 = 1; 1 1: 0 + 0.5 + 0 = 0.5
    assert epoch_kernels.constrained_viterbi(state, trans, np.zeros(2), allowed, path) == 1.0
    assert path.tolist() == [0, 1]
    trans[0, 0, 1] = -np.inf  # now only 1 1 agrees and gets through
    assert epoch_kernels.constrained_viterbi(state, trans, np.zeros(2), allowed, path) == 0.5
    assert path.tolist() == [1, 1]
    trans[0, 1, 1] = -np.inf  # none
    assert epoch_kernels.constrained_viterbi(state, trans, np.zeros(2), allowed, path) == -np.inf


# --- the compiled epoch against a numpy reference ----------------------------------------------

@st.composite
def partial_problems(draw):
    L = draw(st.integers(1, 10))
    n_sent = draw(st.integers(1, 6))
    K = draw(st.integers(1, 3))
    KT = draw(st.sampled_from([0, 0, 1]))
    A, AT = draw(st.integers(1, 10)), 3
    kind = draw(st.sampled_from(["all", "observed"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    sent_ptr, X, XT, y = random_sentences(rng, n_sent, L, A, AT, K, KT)
    n = len(y)
    allowed = np.zeros((n, L), bool)
    allowed[np.arange(n), y] = True
    for s in range(n_sent):            # some sentences partial: unknown tokens, small sets
        if rng.random() < 0.6:
            for t in range(sent_ptr[s], sent_ptr[s + 1]):
                r = rng.random()
                if r < 0.4:
                    allowed[t] = True
                elif r < 0.6:
                    allowed[t, rng.integers(0, L)] = True
    mask = np.zeros((L + 1, L))
    if draw(st.booleans()):            # a scheme mask; some partial sentences get no agreeing path
        mask[rng.random((L + 1, L)) < 0.25] = -np.inf
        mask[:, 0] = 0.0
        for s in range(n_sent):
            for t in range(sent_ptr[s], sent_ptr[s + 1]):
                mask[L if t == sent_ptr[s] else y[t - 1], y[t]] = 0.0
    return sent_ptr, X, XT, y, allowed, mask, A, AT, L, kind, rng


@settings(max_examples=150, deadline=None)
@given(partial_problems())
def test_partial_epochs_equal_the_reference(problem):
    sent_ptr, X, XT, y, allowed, mask, A, AT, L, kind, rng = problem
    fs = feature_set(kind, X, y, A, L, allowed=allowed)
    end = np.zeros(L)
    pairs = dense_pairs(fs, A, L)
    partial = partial_sentences(allowed, y, sent_ptr)
    au8 = allowed.view(np.uint8)
    kernels = [_epoch_kernel("train_epoch_partial"), epoch_kernels.train_epoch_partial]  # AOT (or JIT), JIT
    states = [[np.zeros(len(fs.labels), np.float32), np.zeros(len(fs.labels)),
               np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L)),
               np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))] for _ in kernels]
    ref = [np.zeros((A, L)), np.zeros((A, L)), np.zeros((L + 1, L)), np.zeros((L + 1, L)),
           np.zeros((AT, L + 1, L)), np.zeros((AT, L + 1, L))]
    cs, rc = [0, 0], 0
    max_len = int(np.diff(sent_ptr).max())
    for _epoch in range(3):
        order = rng.permutation(len(sent_ptr) - 1).astype(np.int64)
        want = reference_epoch(order, sent_ptr, X, XT, y, pairs, *ref, mask, end, rc, allowed=allowed,
                               partial=partial)
        rc = want[2]
        for i, kernel in enumerate(kernels):
            got = kernel(order, sent_ptr, X, XT, y, fs.ptr, fs.labels, fs.active, *states[i], mask, end,
                         cs[i], max_len, au8, partial)
            assert tuple(int(v) for v in got) == want
            cs[i] = int(got[2])
            W, U, Wt, Ut, Wc, Uc = states[i]
            dense_W = dense_weights(fs, A, L, W)
            dense_U = dense_weights(fs, A, L, U)
            for got_arr, want_arr in zip((dense_W, dense_U, Wt, Ut, Wc, Uc), ref):
                np.testing.assert_array_equal(got_arr, want_arr)


def test_no_partial_sentence_trains_exactly_as_full_labels():
    """One-hot allowed rows (every tag known): the fully labelled epoch, the same bits."""
    rng = np.random.default_rng(0)
    n_sent, L, A = 30, 5, 40
    sent_ptr = np.concatenate([[0], np.cumsum(rng.integers(1, 9, n_sent))]).astype(np.int64)
    n = int(sent_ptr[-1])
    from structperc.features.index import Features

    feats = Features(rng.integers(-1, A, (n, 3)).astype(np.int32), np.zeros((n, 0), np.int32), sent_ptr)
    y = rng.integers(0, L, n).astype(np.int32)
    mask, end = np.zeros((L + 1, L)), np.zeros(L)
    out = []
    for allowed in (None, np.eye(L, dtype=bool)[y]):
        st_ = PerceptronState.zeros(A, 0, L)
        w, _ = train_perceptron(feats, y, st_, mask=mask, end=end, epochs=3, seed=1, allowed=allowed)
        out.append(w)
    np.testing.assert_array_equal(out[0].sparse.values, out[1].sparse.values)
    np.testing.assert_array_equal(out[0].trans, out[1].trans)


# --- end to end --------------------------------------------------------------------------------

SENTS = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog", "ran"], ["the", "big", "dog", "barked"],
         ["a", "cat", "saw", "the", "dog"], ["dogs", "bark"]]
TAGS = [["B-NP", "I-NP", "B-VP", "B-PP", "B-NP", "I-NP"], ["B-NP", "I-NP", "B-VP"],
        ["B-NP", "I-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP", "B-NP", "I-NP"], ["B-NP", "B-VP"]]
KW = dict(columns=["word", "chunk"], template=["w[0]", "w[-1]", "w[1]"], epochs=4)


def weights_of(tagger):
    w = tagger.weights_
    return w.sparse.values.copy(), w.trans.copy(), list(tagger.labels_)


def test_full_labels_ignore_the_marker_setting():
    """No unknown tag: the marker changes nothing (the same labels and weights, bit for bit)."""
    a = weights_of(Tagger.train(SENTS * 3, TAGS * 3, **KW))
    b = weights_of(Tagger.train(SENTS * 3, TAGS * 3, unknown_tag=None, **KW))
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2] == b[2]


def test_none_in_tag_lists_is_an_unknown_tag():
    tags = [[None if (i + j) % 3 == 0 else t for j, t in enumerate(s)] for i, s in enumerate(TAGS * 3)]
    tagger = Tagger.train(SENTS * 3, tags, **KW)
    assert "?" not in tagger.labels_ and "None" not in tagger.labels_
    # IOBES inside: every prefix of each type seen, since unknown tokens may carry any
    assert {"B-NP", "I-NP", "E-NP", "S-NP", "S-VP", "S-PP"} <= set(tagger.labels_)
    assert tagger.provenance_["partial_sentences"] > 0
    pred = tagger.predict(SENTS)
    assert all(len(p) == len(s) for p, s in zip(pred, SENTS))
    assert tagger.evaluate(SENTS, TAGS)["micro"]["f1"] > 0.5


def test_question_marks_in_a_file(tmp_path):
    lines = []
    for s, t in zip(SENTS * 3, TAGS * 3):
        lines += [f"{w} {'?' if i == 1 else g}" for i, (w, g) in enumerate(zip(s, t))] + [""]
    path = tmp_path / "partial.conll"
    path.write_text("\n".join(lines) + "\n")
    tagger = Tagger.train(str(path), **KW)
    assert "?" not in tagger.labels_


def test_a_wholly_unknown_sentence_is_fine():
    tags = [list(t) for t in TAGS * 2] + [[None] * 6]
    tagger = Tagger.train(SENTS * 2 + [SENTS[0]], tags, **KW)
    assert "?" not in tagger.labels_
    with pytest.raises(InputError, match="every tag is unknown"):
        Tagger.train([SENTS[0]], [[None] * 6], **KW)


def test_unknown_tag_none_makes_the_marker_an_ordinary_tag():
    tags = [[("?" if j == 0 else "NN") for j, _ in enumerate(s)] for s in SENTS]
    kw = dict(columns=["word", "tag"], template=["w[0]"], epochs=2, task="pos", scheme="none",
              tag_column="tag", constrained=False)
    assert "?" in Tagger.train(SENTS, tags, unknown_tag=None, **kw).labels_
    assert Tagger.train(SENTS, tags, **kw).labels_ == ["NN"]
    # None in tag lists with the marker disabled (the Tagger passes its unknown_tag to to_corpus)
    from structperc.features.task import get_task
    from structperc.io.inputs import to_corpus

    task = get_task("pos", columns=("word", "tag"), tag_column="tag", scheme="none")
    with pytest.raises(InputError, match="unknown tags are disabled"):
        to_corpus(SENTS, [[None] * len(s) for s in SENTS], task, need_tags=True, reads=None, unknown=None)
    corpus = to_corpus(SENTS, [[None] * len(s) for s in SENTS], task, need_tags=True, reads=None,
                       unknown="UNK")
    assert set(corpus.columns["tag"]) == {"UNK"}


def test_another_marker():
    tags = [[("UNK" if j == 0 else t) for j, t in enumerate(s)] for s in TAGS * 3]
    tagger = Tagger.train(SENTS * 3, tags, unknown_tag="UNK", **KW)
    assert not any("UNK" in lab for lab in tagger.labels_)


def test_dev_data_with_unknown_tags_scores_the_known_ones():
    """An unknown dev tag is taken to agree with the prediction: only known tags can cost."""
    dev_tags = [list(t) for t in TAGS]
    dev_tags[0][2] = None
    full = Tagger.train(SENTS * 3, TAGS * 3, dev=SENTS, dev_y=TAGS, **KW)
    part = Tagger.train(SENTS * 3, TAGS * 3, dev=SENTS, dev_y=dev_tags, **KW)
    assert [r.dev_score for r in part.history_] and all(r.dev_score is not None for r in part.history_)
    # the same training (the dev set only picks the epoch); a perfect epoch scores 1 either way
    for a, b in zip(full.history_, part.history_):
        assert (a.dev_score == 1.0) <= (b.dev_score == 1.0)
    # hiding a wrongly predicted token's tag can only help (token accuracy: exactly the known ones)
    kw = dict(columns=["word", "tag"], template=["w[0]"], epochs=1, task="pos", scheme="none",
              tag_column="tag", constrained=False)
    pos = [["DT", "NN", "VB", "IN", "DT", "NN"], ["DT", "NN", "VB"], ["DT", "JJ", "NN", "VB"],
           ["DT", "NN", "VB", "DT", "NN"], ["NN", "VB"]]
    wrong = [["XX"] * len(s) for s in pos]
    hide = [[None] + ["XX"] * (len(s) - 1) for s in pos]
    a = Tagger.train(SENTS, pos, dev=SENTS, dev_y=wrong, **kw).history_[0].dev_score
    b = Tagger.train(SENTS, pos, dev=SENTS, dev_y=hide, **kw).history_[0].dev_score
    n = sum(map(len, pos))
    assert a == 0.0 and b == pytest.approx(len(pos) / n)
    with pytest.raises(InputError, match="every dev tag is unknown"):
        Tagger.train(SENTS * 3, TAGS * 3, dev=SENTS[:1], dev_y=[[None] * 6], **KW)


def test_the_latent_update_learns_the_hidden_tags():
    """A corpus where half the tokens are hidden still teaches the pattern the known half shows."""
    rng = np.random.default_rng(0)
    sents, tags, full = [], [], []
    for _ in range(60):
        n = int(rng.integers(2, 7))
        words = [str(w) for w in rng.choice(["the", "a", "cat", "dog", "sat", "ran"], n)]
        gold = ["B-NP" if w in ("the", "a") else "I-NP" if w in ("cat", "dog") else "B-VP" for w in words]
        gold = [("B-NP" if g == "I-NP" and (i == 0 or gold[i - 1] == "B-VP") else g)
                for i, g in enumerate(gold)]
        sents.append(words)
        full.append(gold)
        tags.append([None if rng.random() < 0.5 else g for g in gold])
    tagger = Tagger.train(sents, tags, columns=["word", "chunk"], template=["w[0]", "w[-1]"], epochs=5)
    assert tagger.evaluate(sents, full)["micro"]["f1"] > 0.9


def test_continued_training_on_partial_data():
    tagger = Tagger.train(SENTS * 3, TAGS * 3, **KW)
    tags = [[None if j % 2 else t for j, t in enumerate(s)] for s in TAGS]
    tagger.partial_fit(SENTS + [["cats", "sleep"]], tags + [[None, "B-VP"]], epochs=2)
    assert "?" not in tagger.labels_
    assert tagger.provenance_["partial_sentences"] > 0


def test_observed_feature_set_with_partial_labels():
    """Known tokens give their pairs (all allowed labels when a few are), unknown ones none."""
    X = np.array([[0], [1], [2], [-1]], np.int32)
    y = np.array([0, 1, 0, 2], np.int32)
    allowed = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 1], [0, 0, 1]], bool)
    fs = feature_set("observed", X, y, 3, 3, allowed=allowed)
    rows = np.repeat(np.arange(3), np.diff(fs.ptr))
    active = fs.active.astype(bool) if len(fs.active) else np.ones(len(rows), bool)
    got = sorted(zip(rows[active].tolist(), fs.labels[active].tolist()))
    assert got == [(0, 0), (1, 1), (1, 2)]
    # without unknown tags it is the set of (attribute, gold label) pairs, as before
    plain = feature_set("observed", X, y, 3, 3)
    same = feature_set("observed", X, y, 3, 3, allowed=np.eye(3, dtype=bool)[y])
    assert all(np.array_equal(a, b) for a, b in zip(plain, same))


def test_corpus_unknown_marker_is_not_a_label():
    corpus = Corpus.from_sentences([["a", "b"], ["c"]], [["B-NP", "?"], ["O"]], token_column="word",
                                   tag_column="chunk")
    tagger = Tagger.train(corpus, **KW)
    assert "?" not in tagger.labels_


def test_resuming_a_partial_run_from_its_checkpoint_is_exact(tmp_path):
    tags = [[None if (i + j) % 3 == 0 else t for j, t in enumerate(s)] for i, s in enumerate(TAGS * 3)]
    kw = dict(KW, epochs=4)
    straight = weights_of(Tagger.train(SENTS * 3, tags, **kw))
    Tagger.train(SENTS * 3, tags, checkpoint_dir=tmp_path, **dict(kw, epochs=2))
    resumed = weights_of(Tagger.train(SENTS * 3, tags, resume=tmp_path, **kw))
    np.testing.assert_array_equal(straight[0], resumed[0])
    np.testing.assert_array_equal(straight[1], resumed[1])
    # the marker is part of the run: another one reads other data
    other = [[("UNK" if t is None else t) for t in s] for s in tags]
    with pytest.raises(InputError, match="different training run"):
        Tagger.train(SENTS * 3, other, resume=tmp_path, unknown_tag="UNK", **kw)
