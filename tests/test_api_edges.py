"""What a new user's Python calls meet at the edges of the API: constraints given in the wrong shape, empty
batches, n-best lists of an unconstrained span model, scikit-learn's ``clone``, inputs of the wrong type,
labels of the wrong type. Each case was a silent wrong result, an obscure exception or an inconsistency
a user met; each test fails on the code before its fix."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from structperc import Tagger
from structperc.errors import InputError
from structperc.segmenter import Segmenter

X = [["Juan", "vive", "en", "Madrid"], ["Ana", "come", "en", "Roma"], ["el", "perro", "vive"],
     ["Juan", "Pérez", "vive", "en", "Nueva", "York"]]
Y = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "O", "O", "B-LOC"], ["O", "O", "O"],
     ["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC"]]
SMALL = dict(task="ner", columns=["word", "ner"], template=["w[0]", "w[-1]"], epochs=3)
pytestmark = pytest.mark.filterwarnings("ignore::structperc.errors.UncalibratedWarning")


@pytest.fixture(scope="module")
def ner() -> Tagger:
    return Tagger(**SMALL).fit(X, Y)


@pytest.fixture(scope="module")
def unconstrained() -> Tagger:
    return Tagger(**SMALL, constrained=False).fit(X, Y)


# ------------------------------------------------------------------ forced and allowed tags
def test_a_bare_mapping_for_forced_tags_is_refused_not_ignored(ner):
    # {0: "O"} for one sentence was read as a list of one sentence's mapping, keyed by its position:
    # nothing was constrained and the unconstrained tags came back
    assert ner.predict([["Juan", "vive"]])[0][0] == "B-PER"
    with pytest.raises(InputError, match="forced takes one mapping .* per sentence, in a list: got dict"):
        ner.predict([["Juan", "vive"]], forced={0: "O"})
    with pytest.raises(InputError, match="allowed takes one mapping .* got str"):
        ner.predict([["Juan", "vive"]], allowed="O")
    assert ner.predict([["Juan", "vive"]], forced=[{0: "O"}]) == [["O", "O"]]


@pytest.mark.parametrize("forced, message", [
    ([{0: None}], "sentence 0, token 0: None is not a tag"),
    ([["O", "O"]], "sentence 0 has list .* not a mapping"),
    ([{0: 5}], "sentence 0, token 0: 5 is not a tag"),
    ([{0: ["O", 5]}], "sentence 0, token 0: 5 is not a tag"),
])
def test_constraints_of_the_wrong_type_get_one_clear_line(ner, forced, message):
    with pytest.raises(InputError, match=message):
        ner.predict([["Juan", "vive"]], forced=forced)


def test_a_sentence_left_without_a_path_is_numbered_from_zero_like_the_constraints(ner):
    with pytest.raises(InputError, match="^sentence 1: its forced or allowed tags"):
        ner.predict([["a"], ["Juan", "vive"]], allowed=[None, {1: set()}])


# ------------------------------------------------------------------ empty batches
def test_an_empty_batch_gives_empty_results(ner):
    assert ner.predict([]) == [] and ner.predict(()) == []
    assert ner.predict_marginals([]) == [] and ner.predict_nbest([]) == []
    assert ner.predict_proba_sequence([]) == []
    with pytest.raises(RuntimeError, match="not trained yet"):  # an empty batch is still no way round fit()
        Tagger().predict([])


def test_empty_sentences_of_a_model_reading_several_columns():
    """A two-column model refused ``[[]]`` and ``explain([])`` with "give each token as a tuple": there was no
    token to give; a one-column model answered them."""
    two = Tagger(task="chunk", columns=["word", "pos", "chunk"], template=["w[0]", "pos[0]"], epochs=1).fit(
        [[("He", "PRP"), ("ran", "VBD")]], [["B-NP", "B-VP"]])
    assert two.predict([[]]) == [[]] and two.predict([[], [("He", "PRP")]])[0] == []
    assert two.explain([]) == {"tokens": [], "score": 0.0, "end": 0.0}


# ------------------------------------------------------------------ k best
def _brute_force_data_sequences(tagger: Tagger, sentence: list[str]) -> int:
    """How many distinct data-tag sequences the model's label paths read as (every path of the lattice)."""
    from structperc.features.instances import data_tags

    model = tagger.model_
    n = len(sentence)
    paths = np.array(list(itertools.product(range(len(model.labels)), repeat=n)), dtype=np.int32)
    ptr = np.arange(len(paths) + 1, dtype=np.int64) * n
    tags = data_tags(paths.ravel(), ptr, model.labels, model.task)
    return len({tuple(tags[i * n:(i + 1) * n]) for i in range(len(paths))})


def test_k_best_lists_distinct_tag_sequences_when_label_paths_read_alike(unconstrained):
    # unconstrained IOBES labels for IOB2 data: E-PER and I-PER before O both end a span, so label paths
    # read as the same tags; the list held the same sequence up to 3 times
    sentence = ["Juan", "Pérez", "vive"]
    found = unconstrained.predict_nbest([sentence], k=30)[0]
    sequences = [tuple(tags) for tags, _ in found]
    assert len(sequences) == len(set(sequences)) == 30
    assert sequences[0] == tuple(unconstrained.predict([sentence])[0])  # the first is still the decoded one
    assert all(0 < p <= 1 for _, p in found) and sum(p for _, p in found) <= 1 + 1e-9
    # a lattice with fewer distinct sequences than asked gives them all, once each
    everything = unconstrained.predict_nbest([["Juan"]], k=50)[0]
    assert len(everything) == len({tuple(t) for t, _ in everything}) == \
        _brute_force_data_sequences(unconstrained, ["Juan"])
    assert sum(p for _, p in everything) == pytest.approx(1.0)  # every label path's mass, summed


@pytest.mark.parametrize("k", [1.7, "3", True])
def test_a_number_of_paths_that_is_no_whole_number_is_refused(ner, k):
    with pytest.raises(InputError, match="must be a whole number"):
        ner.predict_nbest([["Juan"]], k=k)


# ------------------------------------------------------------------ scikit-learn's conventions
def test_clone_and_set_params_work_on_the_tagger_and_the_segmenter():
    from sklearn.base import clone

    tagger = Tagger(task="ner", epochs=3, lang=None)
    copy = clone(tagger)
    assert copy is not tagger and copy.get_params() == tagger.get_params()
    assert tagger.get_params(deep=False)["epochs"] == 3
    assert Tagger().set_params(epochs=4, seed=2).get_params()["epochs"] == 4
    with pytest.raises(ValueError, match="invalid parameter 'epoch' for Tagger"):
        Tagger().set_params(epoch=4)
    segmenter = Segmenter(epochs=4, lexicon=["上海"])
    assert clone(segmenter).get_params() == segmenter.get_params()
    assert list(segmenter.get_params()) == ["template", "epochs", "seed", "min_count", "dev_split", "lexicon",
                                            "folds", "feature_set", "step", "margin", "C", "raw", "encoding", "lang"]


# ------------------------------------------------------------------ inputs of the wrong type
def test_tags_that_are_not_strings_are_refused_like_tokens():
    with pytest.raises(InputError, match="sentence 0, token 0: the tag 1 is not a string"):
        Tagger(**SMALL).fit([["a", "b"]], [[1, 0]])
    with pytest.raises(InputError, match="one list of tags per sentence, not a string"):
        Tagger(**SMALL).fit([["a", "b"]], "OO")
    # numpy's strings and a generator of tag lists are tags
    tagger = Tagger(**SMALL).fit([["a", "b"]], (t for t in [np.array(["B-PER", "O"])]))
    assert tagger.predict([["a", "b"]]) == [["B-PER", "O"]]


def test_the_sklearn_face_keeps_plain_string_labels():
    from structperc.sklearn import StructuredPerceptron

    sp = StructuredPerceptron(max_iterations=1).fit([[{"w": "a"}, {"w": "b"}]], [np.array(["A", "O"])])
    assert sp.classes_ == ["A", "O"] and all(type(c) is str for c in sp.classes_)


def test_a_model_filename_that_holds_no_model_is_named(tmp_path):
    from sklearn.exceptions import NotFittedError

    from structperc.sklearn import StructuredPerceptron

    with pytest.raises(NotFittedError, match="model_filename .*nowhere.* holds no saved model"):
        StructuredPerceptron(model_filename=str(tmp_path / "nowhere")).predict([[{"w": "a"}]])


def test_reading_something_that_holds_no_sentences_names_what_it_takes(ner):
    with pytest.raises(InputError, match="cannot read sentences from int: give token lists"):
        ner.predict(5)


@pytest.fixture(scope="module")
def segmenter() -> Segmenter:
    return Segmenter(epochs=2).fit(["上海 人", "北京 人 在 上海"])


@pytest.mark.parametrize("call, message", [
    (lambda s: s.segment_texts(["上海", None]), r"texts\[1\] is NoneType, not a string"),
    (lambda s: list(s.segment_lines(["上海", None])), "line 2 is NoneType, not a string"),
    (lambda s: s.segment_texts("上海"), "takes a list of strings, not one string"),
])
def test_segmenter_inputs_that_are_not_text_get_one_clear_line(segmenter, call, message):
    with pytest.raises(InputError, match=message):
        call(segmenter)


def test_a_lone_surrogate_is_a_character_to_the_segmenter_as_to_a_tagger(segmenter):
    words = segmenter.segment("上海\ud800人")
    assert "".join(words) == "上海\ud800人"


def test_raw_text_of_the_wrong_type_is_refused(ner):
    with pytest.raises(InputError, match="tag_texts\\(\\) takes a string or strings, not int"):
        ner.tag_texts(5, lang="en")


def test_tagging_a_dataset_into_a_column_it_has_is_refused_before_tagging(ner):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"tokens": X, "tags": Y})
    with pytest.raises(InputError, match="already has a column 'tokens'"):
        ner.tag_dataset(ds, column="tokens")


def test_spacy_refuses_marginals_of_a_second_order_model_when_added(tmp_path):
    spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install \"structperc[spacy]\")")
    Tagger(**SMALL, order=2).fit(X, Y).save(tmp_path / "order2")
    nlp = spacy.blank("es")
    with pytest.raises(InputError, match="token marginals .* not available for second-order models"):
        nlp.add_pipe("structperc", config={"model": str(tmp_path / "order2"), "marginals": True})
    nlp.add_pipe("structperc", config={"model": str(tmp_path / "order2")})  # without them it tags
    assert [e.text for e in nlp("Juan vive en Madrid").ents] == ["Juan", "Madrid"]
