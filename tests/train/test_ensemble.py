"""Seed averaging (`structperc.ensemble`): members share features, the model is their mean."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc import Tagger
from structperc.ensemble import average_weights, member_weights, train_seed_average
from structperc.model.weights import Weights

SENTS = [
    [("Juan", "B-PER"), ("vive", "O"), ("en", "O"), ("Madrid", "B-LOC"), (".", "O")],
    [("María", "B-PER"), ("trabaja", "O"), ("en", "O"), ("Zürich", "B-LOC"), (".", "O")],
    [("Juan", "B-PER"), ("visita", "O"), ("Madrid", "B-LOC"), (".", "O")],
    [("El", "O"), ("Banco", "B-ORG"), ("de", "I-ORG"), ("España", "I-ORG"), ("abrió", "O")],
    [("María", "B-PER"), ("ama", "O"), ("São", "B-LOC"), ("Paulo", "I-LOC")],
    [("Ayer", "O"), ("habló", "O"), ("Víctor", "B-PER"), ("Castaño", "I-PER"), ("en", "O"),
     ("Lima", "B-LOC")],
    [("Lo", "O"), ("de", "O"), ("Castaño", "B-PER"), ("fue", "O"), ("grande", "O")],
]
WORDS = [[w for w, _ in s] for s in SENTS]
TAGS = [[t for _, t in s] for s in SENTS]
KW = dict(task="ner", columns=["word", "ner"], epochs=4)


def _weights(*values: float) -> list[Weights]:
    mask, end = np.zeros((3, 2)), np.zeros(2)
    return [Weights(np.vstack([np.full((3, 2), v, np.float32), np.zeros((1, 2), np.float32)]),
                    np.full((3, 2), -v, np.float32),
                    np.full((2, 3, 2), 2 * v, np.float32), mask, end) for v in values]


def test_average_weights_is_the_elementwise_mean():
    avg = average_weights(_weights(1.0, 2.0, 6.0))
    assert np.all(avg.state[:-1] == 3.0) and np.all(avg.trans == -3.0) and np.all(avg.cond == 6.0)
    assert avg.state.dtype == np.float32
    with pytest.raises(ValueError, match="no weights"):
        average_weights([])
    odd = _weights(1.0)[0]
    odd = Weights(np.zeros((5, 2), np.float32), odd.trans, odd.cond, odd.mask, odd.end)
    with pytest.raises(ValueError, match="same features"):
        average_weights(_weights(1.0) + [odd])


def _reference_mean(members: list[Weights]) -> Weights:
    """The mean as a list of members gives it (every member held at once): the streamed sum must equal it."""
    from structperc.model.state_weights import StateWeights

    def mean(arrays):
        out = np.zeros(arrays[0].shape, dtype=np.float64)
        for a in arrays:
            out += a
        return (out / len(arrays)).astype(np.float32)
    first = members[0]
    if all(w.sparse.same_pairs(first.sparse) for w in members):
        state = first.sparse.with_values(mean([w.sparse.values for w in members]))
    else:
        state = StateWeights.from_dense(mean([w.sparse.to_dense() for w in members]))
    return Weights(state, mean([w.trans for w in members]), mean([w.cond for w in members]), first.mask, first.end)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_the_streamed_mean_is_the_mean_of_the_members_held_at_once(n, seed, pruned):
    """`average_weights` sums the members as an iterator yields them (seed averaging keeps one sum in memory):
    the same float32 weights as summing every member at once, also when some members dropped their zero
    weights (other pairs: the sum turns dense)."""
    rng = np.random.default_rng(seed)
    A, L, AT = 6, 3, 2
    members = []
    for i in range(n):
        dense = rng.standard_normal((A + 1, L)).astype(np.float32) * (rng.random((A + 1, L)) < 0.6)
        dense[-1] = 0
        w = Weights(dense, rng.standard_normal((L + 1, L)).astype(np.float32),
                    rng.standard_normal((AT + 1, L + 1, L)).astype(np.float32), np.zeros((L + 1, L)), np.zeros(L))
        if pruned and i % 2:
            w = Weights(w.sparse.nonzero(), w.trans, w.cond, w.mask, w.end)
        members.append(w)
    got, expected = average_weights(iter(members)), _reference_mean(members)
    assert np.array_equal(got.state, expected.state)
    assert np.array_equal(got.trans, expected.trans) and np.array_equal(got.cond, expected.cond)


def test_second_order_members_average_their_second_order_transitions():
    """A second-order model's ``order2`` tensor is averaged with the rest (by hand: the mean of 1, 2 and 6 is 3);
    members of different orders are refused."""
    members = _weights(1.0, 2.0, 6.0)
    for w, v in zip(members, (1.0, 2.0, 6.0)):
        w.order2 = np.full((3, 3, 2), v, np.float32)
    avg = average_weights(members)
    assert avg.order == 2 and avg.order2 is not None and avg.order2.dtype == np.float32
    assert np.all(avg.order2 == 3.0) and np.all(avg.trans == -3.0)
    with pytest.raises(ValueError, match="orders"):
        average_weights(_weights(1.0) + members[:1])


def test_a_second_order_two_stage_average_is_the_mean_of_its_members():
    """``--seeds`` with ``--order 2 --two-stage``: each stage's weights (the second-order tensor too) are the
    mean of the taggers trained alone with each seed. A template without learnt dictionary columns (their
    jackknife folds follow the first seed) and the second stage's training column from gold types: the seed
    then only orders the sentences, so the members are exactly those taggers."""
    kw = dict(KW, template=["w[0]", "lower(w[-1])", "shortshape(w[0])", "bias"], order=2, two_stage=True)
    alone = [Tagger.train(WORDS, TAGS, seed=s, **kw) for s in (0, 1, 2)]
    assert not np.array_equal(alone[0].weights_.order2, alone[1].weights_.order2)  # the seeds do differ
    avg = train_seed_average(WORDS, TAGS, seeds=[0, 1, 2], **kw)
    for got, members in ((avg.weights_, [t.weights_ for t in alone]),
                         (avg.stage1_.weights, [t.stage1_.weights for t in alone])):
        assert got.order == 2
        for part in ("state", "trans", "order2"):
            expected = sum(getattr(w, part).astype(np.float64) for w in members) / 3
            assert np.allclose(getattr(got, part), expected, atol=1e-5), part
    assert avg.provenance_["seeds"] == [0, 1, 2]


def test_one_seed_is_a_plain_tagger():
    plain = Tagger.train(WORDS, TAGS, seed=3, **KW)
    one = train_seed_average(WORDS, TAGS, seeds=[3], **KW)
    assert np.array_equal(one.weights_.state, plain.weights_.state)
    assert np.array_equal(one.weights_.cond, plain.weights_.cond)
    assert one.provenance_["seeds"] == [3] and one.seed == 3


def test_members_are_the_taggers_of_their_seeds_and_the_model_their_mean(tmp_path):
    """A member trained on the rebuilt features equals a tagger trained with that seed whenever the
    gazetteer folds agree (a template without gaz: the seed then only orders the sentences)."""
    kw = dict(KW, template=["w[0]", "lower(w[-1])", "shortshape(w[0])", "bias"])
    base = Tagger.train(WORDS, TAGS, seed=0, **kw)
    members = {s: w for s, _, w in member_weights(base, WORDS, TAGS, seeds=[0, 1, 2], epochs=[4])}
    for s in (0, 1, 2):
        alone = Tagger.train(WORDS, TAGS, seed=s, **kw)
        assert np.array_equal(members[s].state, alone.weights_.state)
    assert not np.array_equal(members[0].state, members[1].state)   # the seeds do differ
    avg = train_seed_average(WORDS, TAGS, seeds=[0, 1, 2], **kw)
    expected = (members[0].state.astype(np.float64) + members[1].state + members[2].state) / 3
    assert np.allclose(avg.weights_.state, expected, atol=1e-5)
    assert avg.provenance_["seeds"] == [0, 1, 2]
    avg.save(tmp_path / "m")
    loaded = Tagger.load(tmp_path / "m")
    assert loaded.predict(WORDS) == avg.predict(WORDS)


@pytest.mark.parametrize("update", [{"margin": 0.5}, {"step": "pa", "C": 0.5}, {"unknown": True}])
def test_members_train_as_their_tagger_does(update):
    """A member is the tagger of its seed with the tagger's update (the margin perceptron, passive-aggressive
    steps) and its partial labels (unknown tags filled by the trainer, never learnt as given): members once
    trained with the plain perceptron on every tag as written."""
    kw = dict(KW, template=["w[0]", "lower(w[-1])", "shortshape(w[0])", "bias"])
    tags = TAGS
    if update.pop("unknown", False):
        tags = [[("?" if (i + j) % 3 == 0 else t) for j, t in enumerate(s)] for i, s in enumerate(TAGS)]
    base = Tagger.train(WORDS, tags, seed=0, **kw, **update)
    members = {s: w for s, _, w in member_weights(base, WORDS, tags, seeds=[0, 1], epochs=[4])}
    for s in (0, 1):
        alone = Tagger.train(WORDS, tags, seed=s, **kw, **update)
        assert np.array_equal(members[s].state, alone.weights_.state)
        assert np.array_equal(members[s].trans, alone.weights_.trans)


def test_member_weights_continue_epoch_to_epoch():
    base = Tagger.train(WORDS, TAGS, seed=0, **KW)      # the ner preset: gazetteer folds from seed 0
    got = list(member_weights(base, WORDS, TAGS, seeds=[5], epochs=[3, 1]))
    assert [(s, e) for s, e, _ in got] == [(5, 1), (5, 3)]
    straight = list(member_weights(base, WORDS, TAGS, seeds=[5], epochs=[3]))[0][2]
    assert np.array_equal(got[1][2].state, straight.state)


def test_ner_preset_average_fits_the_training_data():
    avg = train_seed_average(WORDS, TAGS, seeds=(0, 1, 2, 3), **dict(KW, epochs=8))
    assert avg.predict(WORDS) == TAGS


def test_bad_arguments():
    with pytest.raises(ValueError, match="distinct"):
        train_seed_average(WORDS, TAGS, seeds=[1, 1], **KW)
    with pytest.raises(ValueError, match="at least one"):
        train_seed_average(WORDS, TAGS, seeds=[], **KW)
    with pytest.raises(TypeError, match="seeds="):
        train_seed_average(WORDS, TAGS, seed=1, **KW)


@pytest.mark.skipif(importlib.util.find_spec("spacy_lookups_data") is None,
                    reason="the language resources are not installed (pip install -e '.[resources]')")
def test_members_read_every_language_resource_table_the_tagger_read():
    """A ``lang`` tagger's members are rebuilt with its resource tables (clusters and the lexicon's parts of
    speech, ``lpos``), not the clusters alone: the rebuild once failed on a template reading ``lpos``."""
    words = [["I", "saw", "the", "cats", "."], ["She", "runs", "fast", "."], ["The", "cat", "saw", "me", "."]]
    tags = [["PRON", "VERB", "DET", "NOUN", "PUNCT"], ["PRON", "VERB", "ADV", "PUNCT"],
            ["DET", "NOUN", "VERB", "PRON", "PUNCT"]]
    kw = dict(task="pos", columns=["word", "upos"], epochs=3, lang="en",
              template=["w[0]", "lpos[0]", "lpos[1]", "clu4[0]", "bias"])
    avg = train_seed_average(words, tags, seeds=[0, 1], **kw)
    alone = [Tagger.train(words, tags, seed=s, **kw).weights_.state.astype(np.float64) for s in (0, 1)]
    assert np.allclose(avg.weights_.state, (alone[0] + alone[1]) / 2, atol=1e-5)
    assert not np.array_equal(alone[0], alone[1])
    assert {r["name"] for r in avg.provenance_["resources"]} == {"en-clusters", "en-lemmas"}
