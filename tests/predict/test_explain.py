"""`Tagger.explain` / `Segmenter.explain` (`structperc.predict.explain`): the best path taken apart into
its weights, checked against brute force over every path of tiny random models, and by hand."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from testkit import CWS_TRAIN

from structperc import Tagger
from structperc.errors import InputError
from structperc.features.instances import data_tags
from structperc.io.corpus import Corpus
from structperc.io.segmented import char_corpus
from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights, with_zero_row
from structperc.predict import constraint_mask, featurize
from structperc.predict.explain import explain
from structperc.segmenter import Segmenter

POS_X = [["a", "b", "c"], ["b", "a"], ["c", "c", "a", "b"], ["a", "a"]]
POS_Y = [["A", "B", "C"], ["B", "A"], ["C", "C", "A", "B"], ["A", "C"]]
NER_X = [["Juan", "vive", "en", "Madrid"], ["Ana", "Pérez", "vino"], ["Madrid", "es", "grande"]]
NER_Y = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "I-PER", "O"], ["B-LOC", "O", "O"]]
WORDS = {"pos": ["a", "b", "c", "zzz"], "ner": ["Juan", "Ana", "Pérez", "Madrid", "vive", "en", "zzz"]}
TEMPLATE = ["w[0]", "w[-1]", "bias", "y[-1]|y[0]|w[0]"]


@functools.lru_cache(maxsize=None)
def base(kind: str) -> Tagger:
    """A tiny trained tagger: ``pos`` (labels A, B, C, no scheme) or ``ner`` (IOB2 data learnt in IOBES,
    constrained)."""
    if kind == "pos":
        return Tagger.train(POS_X, POS_Y, task="pos", columns=["word", "tag"], template=TEMPLATE, epochs=3)
    return Tagger.train(NER_X, NER_Y, task="ner", columns=["word", "ner"], template=TEMPLATE + ["suffix3(w[0])"],
                        epochs=3)


def with_weights(tagger: Tagger, state: np.ndarray, trans: np.ndarray, cond: np.ndarray,
                 order2: np.ndarray | None = None) -> Tagger:
    """``tagger``'s model with other weights (dense state (A, L), trans (L + 1, L), cond (AT, L + 1, L))."""
    m = tagger.model_
    w = Weights(StateWeights.from_dense(state.astype(np.float32)), trans.astype(np.float32),
                with_zero_row(cond.astype(np.float32)), m.weights.mask, m.weights.end,
                None if order2 is None else order2.astype(np.float32))
    return Tagger.from_model(dataclasses.replace(m, weights=w))


def naive_sum(e: dict) -> float:
    return sum(sum(w for _, w in t["features"]) + t["transition"] for t in e["tokens"]) + e["end"]


def brute_force(tagger: Tagger, words: list) -> list[tuple[list[str], float]]:
    """Every path of finite score: its data tags and its score (the float32 scores of `Weights`, as the
    decoders read them, summed in float64)."""
    model = tagger.model_
    corpus = tagger._corpus([words], need_tags=False)
    feats = featurize(model, corpus)
    w = model.weights
    L, T = len(model.labels), len(words)
    S = w.state_scores(feats.state).astype(np.float64)
    Tr = w.transition_scores(feats.trans).astype(np.float64)
    if Tr.ndim == 2:
        Tr = np.repeat(Tr[None], T, axis=0)
    out = []
    for path in itertools.product(range(L), repeat=T):
        score = 0.0
        for t, y in enumerate(path):
            p = path[t - 1] if t else L
            score += S[t, y] + Tr[t, p, y]
            if w.order2 is not None:
                score += float(w.order2[path[t - 2] if t >= 2 else L, p, y])
        score += float(w.end[path[-1]])
        if math.isfinite(score):
            tags = data_tags(np.array(path), corpus.sent_ptr, model.labels, model.task)
            out.append((tags, score))
    return out


def check_against_brute_force(tagger: Tagger, words: list, exact: bool) -> dict:
    e = tagger.explain(words)
    assert [t["label"] for t in e["tokens"]] == tagger.predict([words])[0]
    assert naive_sum(e) == e["score"]
    paths = brute_force(tagger, words)
    best = max(s for _, s in paths)
    labels = [t["label"] for t in e["tokens"]]
    close = (lambda a, b: a == b) if exact else (lambda a, b: math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-4))
    assert close(e["score"], best)
    for t, tok in enumerate(e["tokens"]):
        others = [(tags[t], s) for tags, s in paths if tags[t] != labels[t]]
        if not others:
            assert tok["runner_up"] is None and tok["margin"] is None
            continue
        rival = max(s for _, s in others)
        assert close(tok["margin"], e["score"] - rival)
        assert close(max(s for tag, s in others if tag == tok["runner_up"]), rival)
    return e


def check_parts(tagger: Tagger, words: list, e: dict) -> None:
    """Each token's features and transition are the model's weights for its label, by name."""
    model = tagger.model_
    fi, w = model.features, model.weights
    feats = featurize(model, tagger._corpus([words], need_tags=False))
    L = len(model.labels)
    ids = [model.labels.index(t["model_label"]) for t in e["tokens"]]
    dense = w.state
    for t, tok in enumerate(e["tokens"]):
        y, p = ids[t], ids[t - 1] if t else L
        assert tok["from"] == ("<bos>" if p == L else model.labels[p])
        fired = {fi.attribute_name(a): float(dense[a, y]) for a in feats.state[t].tolist()
                 if a >= 0 and dense[a, y] != 0}
        assert dict(tok["features"]) == fired and len(tok["features"]) == len(fired)
        assert [v for _, v in tok["features"]] == sorted((v for _, v in tok["features"]), reverse=True)
        cond = {fi.attribute_name(a, True): float(w.cond[a, p, y]) for a in feats.trans[t].tolist()
                if a >= 0 and w.cond[a, p, y] != 0}
        assert dict(tok["conditioned"]) == cond
        second = 0.0 if w.order2 is None else float(w.order2[ids[t - 2] if t >= 2 else L, p, y])
        assert tok["second_order"] == second
        assert tok["transition"] == pytest.approx(float(w.trans[p, y]) + sum(cond.values()) + second, abs=1e-9)
        assert tok["token"] == words[t]


@st.composite
def random_models(draw):
    """A tiny model of random weights (multiples of 1/4: every sum is exact, so are the comparisons),
    maybe second-order, and a sentence of its words (and an unknown one)."""
    kind = draw(st.sampled_from(["pos", "ner"]))
    tagger = base(kind)
    w = tagger.weights_
    (A, L), AT = w.sparse.shape, w.cond.shape[0] - 1
    quarters = st.integers(-8, 8).map(lambda v: v / 4)

    def weights(shape):
        return draw(arrays(np.float64, shape, elements=quarters))
    order2 = weights((L + 1, L + 1, L)) if draw(st.booleans()) else None
    model = with_weights(tagger, weights((A, L)), weights((L + 1, L)), weights((AT, L + 1, L)), order2)
    words = draw(st.lists(st.sampled_from(WORDS[kind]), min_size=1, max_size=4))
    return model, words


@settings(max_examples=60, deadline=None)
@given(random_models())
def test_explanation_is_the_best_path_taken_apart(case):
    tagger, words = case
    e = check_against_brute_force(tagger, words, exact=True)
    check_parts(tagger, words, e)
    assert e["end"] == 0.0


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["pos", "ner"]).flatmap(
    lambda kind: st.tuples(st.just(kind), st.lists(st.sampled_from(WORDS[kind]), min_size=1, max_size=5))))
def test_trained_weights_sum_exactly_and_labels_are_predicts(case):
    kind, words = case
    tagger = base(kind)
    e = check_against_brute_force(tagger, words, exact=False)
    check_parts(tagger, words, e)
    # the decoder adds in float32: a tie (averaged weights make some) may show a margin of -1e-7
    assert all(t["margin"] is None or t["margin"] >= -1e-5 for t in e["tokens"])


def hand_model(order2: bool = False) -> Tagger:
    """Labels A, B; templates w[0], bias, y[-1]|y[0]|w[0]; weights set by name (see the test)."""
    tagger = Tagger.train([["a", "b"], ["b", "a"]], [["A", "B"], ["B", "A"]], task="pos", columns=["word", "tag"],
                          template=["w[0]", "bias", "y[-1]|y[0]|w[0]"], epochs=1)
    fi = tagger.features_
    s = {fi.attribute_name(i): i for i in range(fi.n_state_attributes)}
    c = {fi.attribute_name(i, True): i for i in range(fi.n_transition_attributes)}
    A, B, BOS = 0, 1, 2
    state = np.zeros((fi.n_state_attributes, 2))
    state[s["w[0]=a"], A], state[s["w[0]=b"], B], state[s["bias"], A] = 2.0, 1.5, 0.25
    trans = np.zeros((3, 2))
    trans[BOS, A], trans[A, A], trans[A, B] = 0.5, 0.75, -1.0
    cond = np.zeros((fi.n_transition_attributes, 3, 2))
    cond[c["y[-1]|y[0]|w[0]=b"], A, A] = 0.125
    T2 = None
    if order2:
        T2 = np.zeros((3, 3, 2))
        T2[BOS, A, B] = 1.0
    return with_weights(tagger, state, trans, cond, T2)


def test_a_hand_case():
    # paths of "a b": AA .5 + 2.25 + (.75 + .125) + .25 = 3.875, AB .5 + 2.25 - 1 + 1.5 = 3.25,
    # BA 0 + 0 + 0 + .25 = .25, BB 1.5
    tagger = hand_model()
    e = tagger.explain(["a", "b"])
    assert e["score"] == 3.875 and e["end"] == 0.0
    t0, t1 = e["tokens"]
    assert t0 == {"token": "a", "label": "A", "model_label": "A", "features": [("w[0]=a", 2.0), ("bias", 0.25)],
                  "from": "<bos>", "transition": 0.5, "conditioned": [], "second_order": 0.0,
                  "runner_up": "B", "margin": 3.875 - 1.5}
    assert t1 == {"token": "b", "label": "A", "model_label": "A", "features": [("bias", 0.25)],
                  "from": "A", "transition": 0.875, "conditioned": [("y[-1]|y[0]|w[0]=b", 0.125)],
                  "second_order": 0.0, "runner_up": "B", "margin": 3.875 - 3.25}


def test_a_hand_case_second_order():
    # T2[<bos>, A, B] = 1 lifts AB to 4.25
    tagger = hand_model(order2=True)
    assert tagger.weights_.order == 2
    e = tagger.explain(["a", "b"])
    assert [t["label"] for t in e["tokens"]] == ["A", "B"] == tagger.tag(["a", "b"])
    assert e["score"] == 4.25
    t0, t1 = e["tokens"]
    assert (t0["transition"], t0["second_order"], t0["margin"]) == (0.5, 0.0, 4.25 - 1.5)
    assert t1["features"] == [("w[0]=b", 1.5)]
    assert (t1["transition"], t1["second_order"], t1["conditioned"]) == (0.0, 1.0, [])
    assert (t1["runner_up"], t1["margin"]) == ("A", 4.25 - 3.875)


def test_allowed_labels_bound_the_runner_up():
    tagger = hand_model()
    model = tagger.model_
    corpus = tagger._corpus([["a", "b"]], need_tags=False)
    allowed = np.array([[True, False], [True, True]])  # token 0 may only be A
    e = explain(model, corpus, allowed)
    assert [t["label"] for t in e["tokens"]] == ["A", "A"]
    assert e["tokens"][0]["runner_up"] is None and e["tokens"][0]["margin"] is None
    assert e["tokens"][1]["runner_up"] == "B"
    allowed = np.array([[True, True], [False, True]])  # token 1 must be B: AB (3.25), then BB (1.5)
    e = explain(model, corpus, allowed)
    assert [t["label"] for t in e["tokens"]] == ["A", "B"] and e["score"] == 3.25
    assert e["tokens"][0]["margin"] == 3.25 - 1.5


def test_inputs_of_one_sentence():
    tagger = base("pos")
    e = tagger.explain(("a", "b"))
    assert [t["label"] for t in e["tokens"]] == tagger.predict([["a", "b"]])[0]
    assert tagger.explain(Corpus.from_sentences([["a", "b"]]))["score"] == e["score"]
    assert tagger.explain([]) == {"tokens": [], "score": 0.0, "end": 0.0}
    with pytest.raises(InputError, match="one sentence"):
        tagger.explain("a b")
    with pytest.raises(InputError, match="one sentence, not 2"):
        tagger.explain([["a"], ["b"]])


def test_state_and_transition_features():
    tagger = hand_model()
    assert dict(tagger.state_features_) == {("w[0]=a", "A"): 2.0, ("w[0]=b", "B"): 1.5, ("bias", "A"): 0.25}
    tf = tagger.transition_features_
    assert len(tf) == 6 and tf[("<bos>", "A")] == 0.5 and tf[("A", "B")] == -1.0 and tf[("B", "A")] == 0.0
    assert set(tf) == {(a, b) for a in ["A", "B", "<bos>"] for b in ["A", "B"]}


def test_state_features_of_a_trained_tagger():
    tagger = base("ner")
    fi, dense, labels = tagger.features_, tagger.weights_.state, tagger.labels_
    expected = {(fi.attribute_name(a), labels[y]): float(dense[a, y])
                for a, y in zip(*np.nonzero(dense[:-1])) for a, y in [(int(a), int(y))]}
    sf = tagger.state_features_
    assert len(sf) == len(expected) > 0
    assert dict(sf) == expected
    tf = tagger.transition_features_
    L = len(labels)
    assert len(tf) == (L + 1) * L
    assert [tf[("<bos>", b)] for b in labels] == tagger.weights_.trans[L].astype(float).tolist()


@functools.lru_cache(maxsize=None)
def segmenter() -> Segmenter:
    return Segmenter.train(CWS_TRAIN[:4] * 3, epochs=3, folds=2)


@pytest.mark.parametrize("text", ["上海体育局召开会议", "我爱北京", "北京", "会"])
def test_segmenter_explains_characters(text):
    seg = segmenter()
    e = seg.explain(text)
    tags = [t["label"] for t in e["tokens"]]
    assert tags == seg.predict_corpus(char_corpus([text]))
    assert [t["token"] for t in e["tokens"]] == list(text)
    words, word = [], ""
    for ch, tag in zip(text, tags):
        word += ch
        if tag in ("E", "S"):
            words.append(word)
            word = ""
    assert words + ([word] if word else []) == seg.segment(text)
    assert naive_sum(e) == e["score"]
    with pytest.raises(InputError, match="whitespace"):
        seg.explain("上海 体育局")


def test_forced_and_allowed_tags_explain_the_path_predict_gives_under_them():
    # the hand case's paths of "a b": AA 3.875, AB 3.25, BB 1.5, BA .25
    tagger = hand_model()
    e = tagger.explain(["a", "b"], forced={1: "B"})
    assert [t["label"] for t in e["tokens"]] == ["A", "B"] == tagger.predict([["a", "b"]], forced=[{1: "B"}])[0]
    assert e["score"] == 3.25 and e["tokens"][1]["runner_up"] is None  # B is the only tag token 1 may take
    assert e["tokens"][0]["runner_up"] == "B" and e["tokens"][0]["margin"] == 3.25 - 1.5
    e = tagger.explain(["a", "b"], allowed={0: ["B"]})
    assert [t["label"] for t in e["tokens"]] == ["B", "B"] and e["score"] == 1.5
    assert (e["tokens"][1]["runner_up"], e["tokens"][1]["margin"]) == ("A", 1.5 - 0.25)
    assert tagger.explain(["a", "b"], forced={}) == tagger.explain(["a", "b"])
    with pytest.raises(InputError):
        tagger.explain(["a", "b"], forced={0: "C"})   # not a tag of the model
    with pytest.raises(InputError):
        tagger.explain(["a", "b"], forced={5: "A"})   # past the sentence's end
    with pytest.raises(InputError, match="one sentence"):
        tagger.explain([["a"], ["b"]], forced={0: "A"})


def test_segmenter_explains_forced_characters():
    seg = segmenter()
    text = "上海体育局"
    free = [t["label"] for t in seg.explain(text)["tokens"]]
    e = seg.explain(text, forced={0: "S"}, allowed={1: ["S", "B"]})
    tags = [t["label"] for t in e["tokens"]]
    assert tags[0] == "S" and tags[1] in ("S", "B") and naive_sum(e) == e["score"]
    corpus = char_corpus([text])
    mask = constraint_mask(seg.model_, corpus, forced=[{0: "S"}], allowed=[{1: ["S", "B"]}])
    assert tags == seg.predict_corpus(corpus, mask)   # the path the decoder gives under the same constraints
    assert e["tokens"][0]["runner_up"] is None   # forced: no other tag has a path
    assert e["score"] <= seg.explain(text)["score"] and (tags != free or e["score"] == seg.explain(text)["score"])
