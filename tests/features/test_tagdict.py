"""The tag dictionary (`structperc.features.tagdict`): what it learns on hand-made tokens, its mask
over a model's labels, and its JSON round trip."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import ModelFormatError
from structperc.features.tagdict import TagDictionary

LABELS = ["DET", "NOUN", "VERB"]


def _tokens():
    # "the": DET ×4; "run": NOUN ×1, VERB ×3; "dog": NOUN ×2; "rare": VERB ×1; "?"-tagged "run" ×1
    words = ["the", "run", "the", "dog", "run", "the", "run", "dog", "the", "run", "rare", "run"]
    tags = ["DET", "NOUN", "DET", "NOUN", "VERB", "DET", "VERB", "NOUN", "DET", "VERB", "VERB", None]
    ids = np.array([-1 if t is None else LABELS.index(t) for t in tags])
    return words, ids


def test_learns_the_labels_of_frequent_words():
    words, ids = _tokens()
    d = TagDictionary.learn(words, ids, LABELS, min_count=2)
    assert d.words == {"dog": ("NOUN",), "run": ("NOUN", "VERB"), "the": ("DET",)}
    assert list(d.words) == ["dog", "run", "the"]  # sorted: deterministic
    # min_count counts the tokens with a known tag only: "run" has 4 (its '?' token is skipped)
    assert TagDictionary.learn(words, ids, LABELS, min_count=4).words == {"run": ("NOUN", "VERB"),
                                                                         "the": ("DET",)}
    assert TagDictionary.learn(words, ids, LABELS, min_count=5).words == {}


def test_threshold_drops_rare_labels_of_a_word():
    words, ids = _tokens()
    # "run" is NOUN in 1 of 4: kept at threshold 0.25, dropped above it
    assert TagDictionary.learn(words, ids, LABELS, min_count=2, threshold=0.25).words["run"] == ("NOUN", "VERB")
    assert TagDictionary.learn(words, ids, LABELS, min_count=2, threshold=0.26).words["run"] == ("VERB",)


def test_allowed_mask_over_the_model_labels():
    words, ids = _tokens()
    d = TagDictionary.learn(words, ids, LABELS, min_count=2)
    mask = d.allowed(["the", "run", "unseen", "rare", "dog"], LABELS)
    assert mask.dtype == np.bool_
    assert mask.tolist() == [[True, False, False], [False, True, True], [True, True, True],
                             [True, True, True], [False, True, False]]
    # another model's label order and label set: names are mapped, unknown names ignored
    other = ["VERB", "ADJ", "NOUN"]
    assert d.allowed(["run", "the", "dog"], other).tolist() == [
        [True, False, True],
        [True, True, True],   # "the" allows only DET, which this model lacks: no constraint
        [False, False, True]]
    assert d.allowed([], LABELS).shape == (0, 3)


def test_json_round_trip():
    words, ids = _tokens()
    d = TagDictionary.learn(words, ids, LABELS, min_count=2, threshold=0.1)
    data = d.to_json()
    assert json.loads(json.dumps(data)) == data  # plain JSON types
    assert data["words"]["run"] == ["NOUN", "VERB"]  # names, not ids
    back = TagDictionary.from_json(json.loads(json.dumps(data)))
    assert back == d
    np.testing.assert_array_equal(back.allowed(words, LABELS), d.allowed(words, LABELS))


@pytest.mark.parametrize("bad", [None, [], {"words": []}, {"words": {"a": "NOUN"}},
                                 {"words": {"a": [1]}}, {"version": 99, "words": {}}])
def test_from_json_rejects_what_is_not_a_dictionary(bad):
    with pytest.raises(ModelFormatError):
        TagDictionary.from_json(bad)


def test_learn_validates_its_input():
    with pytest.raises(ValueError):
        TagDictionary.learn(["a", "b"], np.array([0]), LABELS)
    with pytest.raises(ValueError):
        TagDictionary.learn(["a"], np.array([3]), LABELS)
    with pytest.raises(ValueError):
        TagDictionary.learn(["a"], np.array([0]), LABELS, min_count=0)
    with pytest.raises(ValueError):
        TagDictionary.learn(["a"], np.array([0]), LABELS, threshold=1.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(-1, 2)), max_size=60),
       st.integers(1, 4), st.sampled_from([0.0, 0.2, 0.5]))
def test_training_tokens_are_always_allowed_their_frequent_labels(pairs, min_count, threshold):
    """Against a direct count: a word with ≥ min_count known tags allows exactly its labels whose
    share reaches the threshold; every other word allows everything. Learning is deterministic."""
    words = [w for w, _ in pairs]
    ids = np.array([i for _, i in pairs], dtype=np.int64)
    d = TagDictionary.learn(words, ids, LABELS, min_count=min_count, threshold=threshold)
    assert d == TagDictionary.learn(words, ids, LABELS, min_count=min_count, threshold=threshold)
    mask = d.allowed(list("abcdefg"), LABELS)
    for row, w in zip(mask, "abcdefg"):
        seen = [i for x, i in pairs if x == w and i >= 0]
        if len(seen) >= min_count:
            want = [seen.count(j) > 0 and seen.count(j) >= threshold * len(seen) for j in range(3)]
            if not any(want):
                want = [True] * 3
        else:
            want = [True] * 3
        assert row.tolist() == want
    if threshold == 0.0:  # no label seen in training is ever forbidden for its word
        known = ids >= 0
        if known.any():
            m = d.allowed(words, LABELS)
            assert m[np.flatnonzero(known), ids[known]].all()


def test_allowed_from_factorized_words():
    from structperc.io.corpus import Corpus

    words, ids = _tokens()
    d = TagDictionary.learn(words, ids, LABELS, min_count=2)
    corpus = Corpus.from_sentences([words[:5], words[5:] + ["unseen"]])
    distinct, codes = corpus.factorize("word")
    want = d.allowed(corpus.columns["word"], LABELS)
    np.testing.assert_array_equal(d.allowed(distinct, LABELS, codes=codes), want)
    with pytest.raises(ValueError):
        d.allowed(distinct, LABELS, codes=np.array([len(distinct)]))
