"""The sklearn face's inspection attributes and `structperc.sklearn.metrics`, against sklearn-crfsuite's
behaviour on the same feature dicts.

Both estimators are fitted on the first 300 sentences of the shipped CoNLL-2000 sample, turned into the
feature dicts of sklearn-crfsuite's tutorial (strings, numbers, booleans, a nested dict, a list).
The weights differ (two learners), so the checks are of shape and rule: the keys of ``state_features_``
and ``transition_features_`` are over ``classes_`` for both (what eli5 and the tutorial read), both list
the same ``classes_``, ``attributes_`` follows one rule (the attributes with a non-zero weight) and
names attributes the same way; the labels a model learnt in IOBES map back by the documented rule
(checked against a plain re-computation from the learnt weights); each metric equals sklearn-crfsuite's
on the same predictions.
"""
from __future__ import annotations

import ctypes
import pickle
import warnings

import numpy as np
import pytest
import sklearn_crfsuite  # the reference
from sklearn_crfsuite import metrics as crf_metrics
from testkit import SAMPLE_TEST, SAMPLE_TRAIN, first_sentences

from structperc.features.attributes import AttributeIndex, item_attributes
from structperc.sklearn import StructuredPerceptron
from structperc.sklearn import metrics as sp_metrics


def read(path, n):
    """The first ``n`` sentences of a gzipped CoNLL sample, as rows of columns."""
    blocks = first_sentences(path, n).strip("\n").split("\n\n")
    return [[line.split() for line in block.split("\n")] for block in blocks]


def word2features(sent, i):
    """sklearn-crfsuite's tutorial features (CoNLL-2000 has word and POS), with every value kind."""
    word, pos = sent[i][0], sent[i][1]
    f = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:], "word.isupper()": word.isupper(),
         "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(), "postag": pos,
         "len": len(word) / 10, "shape": {"pos2": pos[:2]}, "affixes": [word[:2], word[-2:]]}
    if i > 0:
        f.update({"-1:word.lower()": sent[i - 1][0].lower(), "-1:postag": sent[i - 1][1]})
    else:
        f["BOS"] = True
    if i == len(sent) - 1:
        f["EOS"] = True
    return f


def featurize(sents):
    return ([[word2features(s, i) for i in range(len(s))] for s in sents], [[t[-1] for t in s] for s in sents])


@pytest.fixture(scope="module")
def data():
    return featurize(read(SAMPLE_TRAIN, 300)), featurize(read(SAMPLE_TEST, 100))


@pytest.fixture(scope="module")
def crf(data):
    """The reference. CRFsuite's averaged perceptron shuffles with the C library's ``rand()``, whose state is
    whatever the process's earlier calls left: the C generator is seeded first, so that the reference is the
    same model whichever tests ran before (seeds 0-7 gave 5,740-5,891 state features)."""
    (X, y), _ = data
    ctypes.CDLL(None).srand(1)
    return sklearn_crfsuite.CRF(algorithm="ap", max_iterations=10).fit(X, y)


@pytest.fixture(scope="module")
def sp(data):
    """The default: IOB2 chunks learnt in IOBES."""
    (X, y), _ = data
    return StructuredPerceptron(max_iterations=5).fit(X, y)


@pytest.fixture(scope="module")
def sp_none(data):
    """Opaque labels, learnt as given (unconstrained)."""
    (X, y), _ = data
    return StructuredPerceptron(max_iterations=5, scheme="none").fit(X, y)


@pytest.fixture(scope="module")
def sp_observed(data):
    """IOBES, weights only for the (attribute, label) pairs seen in training: a learnt label with no
    stored weight counts 0 in the mapping."""
    (X, y), _ = data
    return StructuredPerceptron(max_iterations=5, all_possible_states=False).fit(X, y)


@pytest.fixture(scope="module")
def sp_iob1(data):
    """IOB1 data (the IOB2 chunks, read as IOB1) learnt in IOBES: I-X maps from every learnt X label."""
    (X, y), _ = data
    return StructuredPerceptron(max_iterations=3, scheme="iob1").fit(X, y)


ESTIMATORS = ["crf", "sp", "sp_none", "sp_observed", "sp_iob1"]


def seen_attributes(X):
    return {name for s in X for it in s for name, v in item_attributes(it) if v != 0}


# ------------------------------------------------------------------------- inspection, shapes
def test_classes_are_crfsuites(crf, sp, sp_none, data):
    (_, y), _ = data
    labels = {t for s in y for t in s}
    assert set(crf.classes_) == labels
    for est in (sp, sp_none):
        assert set(est.classes_) == set(crf.classes_)
        assert est.classes_ == sorted(est.classes_)
    assert set(sp.learnt_classes_) != set(sp.classes_)  # IOBES: the model's labels are others
    assert any(lab.startswith(("E-", "S-")) for lab in sp.learnt_classes_)
    assert sp_none.learnt_classes_ == sp_none.classes_


@pytest.mark.parametrize("name", ESTIMATORS)
def test_state_features_are_keyed_by_attribute_and_class(name, request):
    est = request.getfixturevalue(name)
    sf = est.state_features_
    assert isinstance(sf, dict) and sf
    classes, attrs = set(est.classes_), set(est.attributes_)
    for key, value in sf.items():
        assert isinstance(key, tuple) and len(key) == 2
        attr, label = key
        assert isinstance(attr, str) and attr in attrs
        assert label in classes, key
        # structperc lists the pairs with a non-zero weight; CRFsuite's averaged perceptron may keep a feature
        # whose average came to exactly 0.0 (one of 5,824 in a CI run, with another state of rand())
        assert isinstance(value, float) and (value != 0.0 or name == "crf")
    assert {lab for _, lab in sf} == classes  # every class has evidence on this data


@pytest.mark.parametrize("name", ESTIMATORS)
def test_transition_features_are_keyed_by_class_pairs(name, request):
    est = request.getfixturevalue(name)
    tf = est.transition_features_
    classes = set(est.classes_)
    assert isinstance(tf, dict) and tf
    for key, value in tf.items():
        assert isinstance(key, tuple) and len(key) == 2 and set(key) <= classes, key
        assert isinstance(value, float)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_eli5_reads_the_inspection_attributes(name, request):
    """eli5's ``explain_weights`` for sklearn-crfsuite (``crf_state_coef``, ``crf_transition_coef``)
    indexes ``state_features_`` by ``attributes_`` and ``classes_``: no key may fall outside them."""
    est = request.getfixturevalue(name)
    attr_index = {a: i for i, a in enumerate(est.attributes_)}
    class_index = {c: i for i, c in enumerate(est.classes_)}
    coef = np.zeros((len(class_index), len(attr_index)))
    for (attr, label), value in est.state_features_.items():
        coef[class_index[label], attr_index[attr]] = value
    trans = np.array([[est.transition_features_.get((a, b), 0.0) for b in est.classes_] for a in est.classes_])
    assert np.count_nonzero(coef) == sum(1 for v in est.state_features_.values() if v != 0.0)  # one cell per key
    assert np.count_nonzero(trans) > 0


def test_transitions_list_the_pairs_the_model_allows(sp, sp_none, crf):
    n = len(sp.classes_)
    assert len(sp_none.transition_features_) == n * n  # unconstrained: every pair, zeros too
    tf = sp.transition_features_
    assert ("B-NP", "I-NP") in tf and ("I-NP", "I-NP") in tf and ("O", "B-NP") in tf
    assert ("O", "I-NP") not in tf and ("B-VP", "I-NP") not in tf  # IOB2 forbids them
    assert ("O", "I-NP") not in crf.transition_features_  # never seen, so never weighted, there either
    L = len(sp.learnt_classes_)
    mask = sp.model_.weights.mask[:L]
    assert len(sp.learnt_transition_features_) == int((mask == 0).sum()) < L * L
    assert sp_none.learnt_transition_features_ == sp_none.transition_features_


# -------------------------------------------------------------------------------- attributes_
def test_attributes_name_attributes_as_crfsuite_does(data):
    """The same items give the same attribute names: CRFsuite with L2 only (every attribute of a
    non-zero value gets a non-zero weight) lists exactly what the attribute index reads."""
    (X, y), _ = data
    lbfgs = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.0, c2=1.0, max_iterations=5).fit(X, y)
    index = AttributeIndex()
    index.fit_transform(X)
    assert set(lbfgs.attributes_) == set(index.names) == seen_attributes(X)


@pytest.mark.parametrize("name", ESTIMATORS)
def test_attributes_are_those_with_a_non_zero_weight(name, request, data):
    """sklearn-crfsuite's rule (CRFsuite's model keeps the attributes of non-zero features): with the
    averaged perceptron, many attributes seen in training are not listed, by either estimator."""
    (X, _), _ = data
    est = request.getfixturevalue(name)
    attrs = est.attributes_
    assert isinstance(attrs, list) and all(isinstance(a, str) for a in attrs)
    assert len(set(attrs)) == len(attrs) == est.num_attributes_
    seen = seen_attributes(X)
    assert set(attrs) < seen
    exact = est.state_features_ if name == "crf" else est.learnt_state_features_
    assert set(attrs) == {a for a, _ in exact}


# ---------------------------------------------------------------------------- label mapping
IOB2_FROM_IOBES = {"B": "B", "S": "B", "I": "I", "E": "I"}


def test_label_map_says_how_iobes_maps_back_to_iob2(sp):
    lm = sp.label_map_
    assert list(lm) == sp.classes_
    back = {}
    for tag, learnt in lm.items():
        assert learnt == sorted(learnt)
        for lab in learnt:
            assert lab not in back  # IOB2 from IOBES: each learnt label reads as one class
            back[lab] = tag
    assert set(back) == set(sp.learnt_classes_)
    for lab, tag in back.items():
        assert tag == ("O" if lab == "O" else f"{IOB2_FROM_IOBES[lab[0]]}-{lab[2:]}"), (lab, tag)
    assert lm["B-NP"] == ["B-NP", "S-NP"] and lm["I-NP"] == ["E-NP", "I-NP"] and lm["O"] == ["O"]


def test_label_map_of_iob1_and_of_labels_learnt_as_given(sp_iob1, sp_none):
    lm = sp_iob1.label_map_
    assert lm["I-NP"] == ["B-NP", "E-NP", "I-NP", "S-NP"]  # an IOB1 I-NP may begin a span
    assert lm["B-NP"] == ["B-NP", "S-NP"]
    assert sp_none.label_map_ == {c: [c] for c in sp_none.classes_}


def reference_state_features(est):
    """The documented rule, computed plainly: a class's weight is the largest weight of its learnt
    labels (`label_map_`), a missing one counting 0; zeros left out."""
    learnt = est.learnt_state_features_
    out = {}
    for attr in {a for a, _ in learnt}:
        for tag, labs in est.label_map_.items():
            w = max(learnt.get((attr, lab), 0.0) for lab in labs)
            if w != 0:
                out[(attr, tag)] = w
    return out


def reference_transition_features(est):
    learnt = est.learnt_transition_features_
    out = {}
    for a, from_labs in est.label_map_.items():
        for b, to_labs in est.label_map_.items():
            ws = [learnt[(f, t)] for f in from_labs for t in to_labs if (f, t) in learnt]
            if ws:
                out[(a, b)] = max(ws)
    return out


@pytest.mark.parametrize("name", ["sp", "sp_none", "sp_observed", "sp_iob1"])
def test_class_weights_are_the_largest_learnt_weight(name, request):
    est = request.getfixturevalue(name)
    assert est.state_features_ == reference_state_features(est)
    assert est.transition_features_ == reference_transition_features(est)
    if name == "sp_none":
        assert est.state_features_ == est.learnt_state_features_


def test_the_mapping_rule_bites(sp, sp_observed):
    """The data holds the cases that tell the rule from others (a sum, the first learnt label, the
    largest magnitude): attributes with B-NP and S-NP weights of opposite signs, and one with a
    negative weight on one of them and none (0) on the other, which is then not listed."""
    for est in (sp, sp_observed):
        learnt, sf = est.learnt_state_features_, est.state_features_
        both = [a for a, lab in learnt if lab == "B-NP" and (a, "S-NP") in learnt]
        mixed = [a for a in both if learnt[(a, "B-NP")] * learnt[(a, "S-NP")] < 0]
        assert mixed
        for a in mixed:
            assert sf[(a, "B-NP")] == max(learnt[(a, "B-NP")], learnt[(a, "S-NP")]) > 0
        lonely = [a for a, lab in learnt if lab == "S-NP" and learnt[(a, lab)] < 0 and (a, "B-NP") not in learnt]
        assert lonely
        assert all((a, "B-NP") not in sf for a in lonely)


def test_inspection_survives_pickling_and_loading(sp, tmp_path, data):
    (X, y), _ = data
    names = ["classes_", "learnt_classes_", "label_map_", "attributes_", "state_features_",
             "transition_features_", "learnt_state_features_", "learnt_transition_features_"]
    again = pickle.loads(pickle.dumps(sp))
    for name in names:
        assert getattr(again, name) == getattr(sp, name), name
    path = tmp_path / "model"
    saved = StructuredPerceptron(max_iterations=2, model_filename=path).fit(X[:50], y[:50])
    loaded = StructuredPerceptron(model_filename=path)
    for name in names:
        assert getattr(loaded, name) == getattr(saved, name), name
    fresh = StructuredPerceptron()
    assert all(getattr(fresh, name) is None for name in names)


# ------------------------------------------------------------------------------------ metrics
@pytest.fixture(scope="module")
def predictions(sp, crf, data):
    _, (Xt, yt) = data
    return yt, sp.predict(Xt), crf.predict(Xt)


KWARGS = [{}, {"average": "micro"}, {"average": "macro", "zero_division": 0},
          {"average": "weighted", "zero_division": 0},
          {"average": "weighted", "labels": ["B-NP", "I-NP", "B-VP", "I-VP"]},
          {"average": None, "labels": ["B-NP", "I-NP", "O"]}]


@pytest.mark.parametrize("fn", ["flat_precision_score", "flat_recall_score", "flat_f1_score"])
@pytest.mark.parametrize("kwargs", KWARGS)
def test_flat_scores_are_sklearn_crfsuites(fn, kwargs, predictions):
    yt, ours, theirs = predictions
    kwargs = dict(kwargs)
    if "average" not in kwargs:
        kwargs["average"] = "weighted"  # sklearn's default "binary" needs two labels
    for pred in (ours, theirs, [list(s) for s in yt]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # both warn alike where a label is never predicted
            got = getattr(sp_metrics, fn)(yt, pred, **kwargs)
            want = getattr(crf_metrics, fn)(yt, pred, **kwargs)
        np.testing.assert_array_equal(got, want)


def test_flat_accuracy_fbeta_and_report_are_sklearn_crfsuites(predictions):
    yt, ours, theirs = predictions
    labels = sorted({t for s in yt for t in s} - {"O"})
    for pred in (ours, theirs):
        assert sp_metrics.flat_accuracy_score(yt, pred) == crf_metrics.flat_accuracy_score(yt, pred)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert sp_metrics.flat_fbeta_score(yt, pred, beta=0.5, average="macro") == \
                crf_metrics.flat_fbeta_score(yt, pred, beta=0.5, average="macro")
            for kw in ({}, {"labels": labels, "digits": 3}, {"labels": labels, "output_dict": True}):
                assert sp_metrics.flat_classification_report(yt, pred, **kw) == \
                    crf_metrics.flat_classification_report(yt, pred, **kw)
    flat_true = [t for s in yt for t in s]
    flat_pred = [t for s in ours for t in s]
    assert sp_metrics.flat_accuracy_score(yt, ours) == pytest.approx(
        np.mean([a == b for a, b in zip(flat_true, flat_pred)]))


def test_sequence_accuracy(predictions):
    yt, ours, theirs = predictions
    assert len({len(s) for s in yt}) > 1  # sentences of several lengths: sklearn-crfsuite's is right
    for pred in (ours, theirs, list(yt)):
        got = sp_metrics.sequence_accuracy_score(yt, pred)
        assert got == crf_metrics.sequence_accuracy_score(yt, pred)
        assert got == np.mean([list(a) == list(b) for a, b in zip(yt, pred)])
    assert sp_metrics.sequence_accuracy_score(yt, yt) == 1.0
    assert sp_metrics.sequence_accuracy_score([], []) == crf_metrics.sequence_accuracy_score([], []) == 0
    # sequences of one length: the share of sequences, where sklearn-crfsuite's counts tokens
    same = [["B-NP", "I-NP"], ["O", "O"]]
    assert sp_metrics.sequence_accuracy_score(same, [["B-NP", "I-NP"], ["O", "B-NP"]]) == 0.5
    assert sp_metrics.sequence_accuracy_score(same, same, normalize=False) == 2


@pytest.mark.parametrize("y_true, y_pred, message", [
    (["B-NP", "O"], ["B-NP", "O"], r"y_true\[0\] is str"),          # flat lists, not sequences
    ([["B-NP", "O"]], [["B-NP"], ["O"]], "1 sequences, y_pred 2"),
    ([["B-NP", "O"], ["O"]], [["B-NP"], ["O", "O"]], r"y_true\[0\] has 2 labels, y_pred\[0\] 1"),
    ("B-NP", "B-NP", "list of label sequences"),
])
def test_misaligned_labels_raise(y_true, y_pred, message):
    for fn in (sp_metrics.flat_accuracy_score, sp_metrics.flat_f1_score, sp_metrics.sequence_accuracy_score):
        with pytest.raises(ValueError, match=message):
            fn(y_true, y_pred)
