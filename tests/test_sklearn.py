"""`structperc.sklearn.StructuredPerceptron` (sklearn-crfsuite's interface) and the python-crfsuite item
rules of `structperc.features.attributes` (issue 17, acceptance 2).

The item rules are checked against python-crfsuite itself (``pycrfsuite.ItemSequence(...).items()``),
by hand cases and a hypothesis property; the fast path of the attribute index against the rule book;
decoding against brute force over every label path scored from the inspection attributes.
"""
from __future__ import annotations

import io
import itertools
import pickle
import pickletools

import numpy as np
import pycrfsuite  # the test extra installs python-crfsuite: its ItemSequence rules are the reference
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import InputError
from structperc.features.attributes import AttributeIndex, item_attributes
from structperc.model import schema
from structperc.sklearn import CRF_ONLY, StructuredPerceptron

PEOPLE = ["Ana", "Juan", "Luis", "Marta", "Pedro"]
PLACES = ["Madrid", "Lima", "Quito", "Bogotá"]
WORDS = ["vive", "en", "con", "y", "visita", "la", "casa", "de", "hoy"]


def toy(n: int, seed: int = 0):
    """n sentences of feature dicts (strings, bools, bias 1.0, a nested dict, a list) and IOB2 tags."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        words, tags = [], []
        for _ in range(int(rng.integers(2, 8))):
            r = rng.random()
            if r < 0.25:
                words.append(PEOPLE[rng.integers(len(PEOPLE))])
                tags.append("B-PER")
                if rng.random() < 0.3:
                    words.append(PEOPLE[rng.integers(len(PEOPLE))])
                    tags.append("I-PER")
            elif r < 0.4:
                words.append(PLACES[rng.integers(len(PLACES))])
                tags.append("B-LOC")
            else:
                words.append(WORDS[rng.integers(len(WORDS))])
                tags.append("O")
        X.append([features(words, i) for i in range(len(words))])
        y.append(tags)
    return X, y


def features(words, i):
    w = words[i]
    f = {"bias": 1.0, "w": w.lower(), "title": w.istitle(), "suf": [w[-2:], w[-3:]],
         "prev": {"w": words[i - 1].lower() if i else "<s>"}}
    if i + 1 == len(words):
        f["EOS"] = True
    return f


@pytest.fixture(scope="module")
def data():
    return toy(120, seed=1), toy(40, seed=2)


@pytest.fixture(scope="module")
def fitted(data):
    """Opaque labels (``scheme="none"``): the model's labels are `classes_`, which the brute-force
    checks score paths over."""
    (X, y), _ = data
    return StructuredPerceptron(max_iterations=5, scheme="none").fit(X, y)


@pytest.fixture(scope="module")
def fitted_iob(data):
    """The default: the IOB2 labels are detected and learnt in IOBES."""
    (X, y), _ = data
    return StructuredPerceptron(max_iterations=5).fit(X, y)


def crfsuite_items(seq):
    return pycrfsuite.ItemSequence(seq).items()


# ------------------------------------------------------------------------------- item rules
@pytest.mark.parametrize("item, expected", [
    ({"k": "v"}, {"k:v": 1.0}),                                   # string
    ({"k": 2.5}, {"k": 2.5}),                                     # number
    ({"k": 3}, {"k": 3.0}),
    ({"k": True, "j": False}, {"k": 1.0, "j": 0.0}),              # bools
    ({"k": {"a": "b", "n": 0.5}}, {"k:a:b": 1.0, "k:n": 0.5}),    # nested dict
    ({"k": {"a": {"b": "c"}}}, {"k:a:b:c": 1.0}),
    ({"k": ["x", "y"]}, {"k:x": 1.0, "k:y": 1.0}),                # list
    ({"k": {"x"}}, {"k:x": 1.0}),                                 # set
    ({b"k": b"v\xc3\xa9", "b": {b"n": 2.0}}, {"k:vé": 1.0, "b:n": 2.0}),  # bytes are UTF-8
    (["bias", "w=a"], {"bias": 1.0, "w=a": 1.0}),                 # an item as a list of strings
    ([b"caf\xc3\xa9"], {"café": 1.0}),
    ({"w": "a:b"}, {"w:a:b": 1.0}),
    ({}, {}),
    ({"k": np.float32(0.25), "m": np.int64(2)}, {"k": 0.25, "m": 2.0}),
])
def test_item_rules_are_python_crfsuites(item, expected):
    assert dict(item_attributes(item)) == expected
    assert crfsuite_items([item]) == [expected]


def _index_view(feats, names):
    """{name: summed value} per token, from ids and values."""
    out = []
    vals = feats.values if feats.values is not None else np.ones(feats.state.shape, np.float32)
    for row, vrow in zip(feats.state.tolist(), vals.tolist()):
        d: dict = {}
        for a, v in zip(row, vrow):
            if a >= 0:
                d[names[a]] = d.get(names[a], 0.0) + v
        out.append(d)
    return out


def _reference(X):
    """The same from the rule book (zero values left out, repeated names summed)."""
    out = []
    for seq in X:
        for item in seq:
            d: dict = {}
            for name, v in item_attributes(item):
                if v != 0:
                    d[name] = d.get(name, 0.0) + np.float32(v)
            out.append(d)
    return out


names = st.text(alphabet="ab:é", min_size=1, max_size=3)
leaf = st.one_of(names, st.booleans(), st.integers(-3, 3), st.floats(-4, 4, width=32),
                 names.map(lambda s: s.encode()))
value = st.recursive(leaf, lambda inner: st.one_of(
    st.lists(names, max_size=3), st.dictionaries(names, inner, max_size=3)), max_leaves=6)
item = st.one_of(st.dictionaries(st.one_of(names, names.map(lambda s: s.encode())), value, max_size=5),
                 st.lists(names, max_size=4))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(item, min_size=1, max_size=4), min_size=1, max_size=4))
def test_index_matches_python_crfsuite_and_the_rule_book(X):
    for seq in X:  # the rule book is python-crfsuite's (repeated names: its dict keeps the last)
        ours = [dict(item_attributes(it)) for it in seq]
        assert ours == crfsuite_items(seq)
    index = AttributeIndex()
    feats = index.fit_transform(X)
    assert _index_view(feats, index.names) == _reference(X)
    assert feats.sent_ptr.tolist() == np.cumsum([0] + [len(s) for s in X]).tolist()
    again = index.transform(X)  # frozen: the same ids
    assert np.array_equal(again.state, feats.state)
    ones = all(v in (0, 1) for seq in X for it in seq for _, v in item_attributes(it))
    assert (feats.values is None) == ones


def test_unknown_attributes_are_dropped_at_predict_time():
    index = AttributeIndex()
    index.fit_transform([[{"w": "a"}, ["x"]]])
    feats = index.transform([[{"w": "b", "x": 1.0}, {"w": "a"}]])
    assert feats.state.tolist() == [[-1, 1], [0, -1]]
    assert index.names == ["w:a", "x"]


def test_item_sequences_are_accepted(data):
    (X, _), _ = data
    # ItemSequence.items() is a dict per item: a name given twice (suffix "de" of "de") is kept once
    X = [[dict(item_attributes(it)) for it in s] for s in X[:10]]
    plain = AttributeIndex()
    a = plain.fit_transform(X)
    wrapped = AttributeIndex()
    b = wrapped.fit_transform([pycrfsuite.ItemSequence(s) for s in X])
    assert _index_view(a, plain.names) == _index_view(b, wrapped.names)


@pytest.mark.parametrize("bad, message", [
    ([[{"k": None}]], "neither a string"),
    ([[{"k": float("nan")}]], "non-finite"),
    ([[{"k": ("a", "b")}]], "neither a string"),
    ([[{3: "a"}]], "str or bytes"),
    ([[{b"\xff": 1.0}]], "UTF-8"),
    ([[5]], "dict or a list"),
    ([[["a", 1]]], "str or bytes"),
    ([["a", 1]], "dict or a list"),
    ("abc", "list of sequences"),
    ([{"k": "v"}], "list of items"),
])
def test_bad_items_raise_one_line_errors(bad, message):
    with pytest.raises(InputError, match=message):
        AttributeIndex().fit_transform(bad)


def test_a_failed_fit_leaves_the_index_unchanged():
    index = AttributeIndex()
    with pytest.raises(InputError):
        index.fit_transform([[{"a": "x"}, {"k": None}]])
    assert index.names == [] and not index.fitted
    index.fit_transform([[{"b": "y"}]])
    assert index.names == ["b:y"]


# ------------------------------------------------------------------------------ estimator
def test_before_fitting_everything_is_none():
    sp = StructuredPerceptron()
    for name in ("classes_", "attributes_", "num_attributes_", "state_features_",
                 "transition_features_", "size_", "model_"):
        assert getattr(sp, name) is None, name
    from sklearn.exceptions import NotFittedError
    from sklearn.utils.validation import check_is_fitted

    with pytest.raises(NotFittedError):
        sp.predict([[{"w": "a"}]])
    with pytest.raises(NotFittedError):
        check_is_fitted(sp)
    with pytest.raises(NotFittedError):  # a model_filename with no model there yet
        StructuredPerceptron(model_filename="/nonexistent/model").predict([[{"w": "a"}]])


def test_empty_inputs(fitted):
    assert fitted.predict([]).shape == (0,)
    assert list(fitted.predict([[], [{"w": "ana"}]])) == [[], ["B-PER"]]
    assert fitted.predict_marginals([[]])[0] == []
    unknown = fitted.predict_single([{}, ["never-seen"]])  # no known attribute: transitions decide
    assert len(unknown) == 2 and set(unknown) <= set(fitted.classes_)
    sp = StructuredPerceptron(max_iterations=2).fit([[{}, {}], [{"w": "x"}]], [["A", "B"], ["A"]])
    assert sp.predict_single([{}, {}]) == ["A", "B"]  # transitions alone


def test_fit_predict_and_score(fitted, data):
    (X, y), (Xt, yt) = data
    pred = fitted.predict(Xt)
    assert isinstance(pred, np.ndarray) and pred.dtype == object and pred.shape == (len(Xt),)
    assert [len(p) for p in pred] == [len(s) for s in Xt]
    flat_gold = [t for s in yt for t in s]
    flat_pred = [t for s in pred for t in s]
    accuracy = np.mean([a == b for a, b in zip(flat_gold, flat_pred)])
    assert fitted.score(Xt, yt) == pytest.approx(accuracy)
    assert accuracy > 0.9  # the toy data is learnable
    assert fitted.predict_single(Xt[3]) == list(pred[3])
    assert fitted.classes_ == sorted({t for s in y for t in s})
    equal = StructuredPerceptron(max_iterations=2).fit([X[0], X[0]], [y[0], y[0]]).predict([X[0], X[0]])
    assert equal.shape == (2,)  # sequences of equal length still give a 1-D array of lists


def test_marginals(fitted, data):
    _, (Xt, _) = data
    marg = fitted.predict_marginals(Xt)
    assert marg.shape == (len(Xt),)
    for seq, m in zip(Xt, marg):
        assert len(m) == len(seq)
        for row in m:
            assert sorted(row) == fitted.classes_
            assert sum(row.values()) == pytest.approx(1.0)
    assert fitted.predict_marginals_single(Xt[0]) == marg[0]
    # the most probable label agrees with Viterbi on this easy data nearly everywhere
    best = [max(row, key=row.get) for m in marg for row in m]
    viterbi = [t for s in fitted.predict(Xt) for t in s]
    assert np.mean([a == b for a, b in zip(best, viterbi)]) > 0.95


def _path_scores(sp, xseq):
    """Every label path with its score, from state_features_ / transition_features_ and the start
    row of the model's transitions (CRFsuite has no start weights to list)."""
    labels = sp.classes_
    sf, tf = sp.state_features_, sp.transition_features_
    start = sp.model_.weights.trans[-1]
    attrs = [item_attributes(it) for it in xseq]
    for path in itertools.product(range(len(labels)), repeat=len(xseq)):
        s = float(start[path[0]])
        for t, lab in enumerate(path):
            s += sum(v * sf.get((a, labels[lab]), 0.0) for a, v in attrs[t])
            if t:
                s += tf[(labels[path[t - 1]], labels[lab])]
        yield path, s


def _brute_force(sp, xseq):
    """The best label path by enumeration (the first of equal scores)."""
    best, best_path = -np.inf, None
    for path, s in _path_scores(sp, xseq):
        if s > best + 1e-4:
            best, best_path = s, path
    return [sp.classes_[i] for i in best_path]


def _brute_marginals(sp, xseq):
    paths = list(_path_scores(sp, xseq))
    scores = np.array([s for _, s in paths]) / sp.temperature_
    p = np.exp(scores - scores.max())
    p /= p.sum()
    out = [dict.fromkeys(sp.classes_, 0.0) for _ in xseq]
    for (path, _), q in zip(paths, p):
        for t, lab in enumerate(path):
            out[t][sp.classes_[lab]] += q
    return out


def test_inspection_attributes_score_like_the_decoder(fitted, data):
    _, (Xt, _) = data
    assert fitted.num_attributes_ == len(fitted.attributes_) > 0
    assert len(fitted.transition_features_) == len(fitted.classes_) ** 2
    assert all(v != 0 for v in fitted.state_features_.values())
    assert {a for a, _ in fitted.state_features_} == set(fitted.attributes_)  # zero rows dropped
    short = [x for x in Xt if len(x) <= 4][:6]
    for xseq in short:
        assert fitted.predict_single(xseq) == _brute_force(fitted, xseq)
    for got, want in zip(fitted.predict_marginals_single(short[0]), _brute_marginals(fitted, short[0])):
        assert got == pytest.approx(want, abs=1e-5)
    assert fitted.size_ == len(schema.to_bytes(fitted.model_))


def test_values_scale_the_weights():
    X = [[{"a": 2.0, "w": "x"}, {"b": 0.5, "w": "y"}], [{"a": 1.0}, {"b": 3.0, "w": "x"}]] * 5
    y = [["P", "Q"], ["Q", "P"]] * 5
    sp = StructuredPerceptron(max_iterations=4).fit(X, y)
    probe = [{"a": 1.5, "b": -0.5, "w": "y"}, {"a": 0.25, "w": "x"}, {"b": 2.0}]
    assert sp.predict_single(probe) == _brute_force(sp, probe)
    for got, want in zip(sp.predict_marginals_single(probe), _brute_marginals(sp, probe)):
        assert got == pytest.approx(want, abs=1e-5)
    # a value of 2 is the same attribute twice
    twice = StructuredPerceptron(max_iterations=4).fit(
        [[["a", "a", "w:x"], {"b": 0.5, "w": "y"}], [["a"], {"b": 3.0, "w": "x"}]] * 5, y)
    assert twice.state_features_ == sp.state_features_


def test_value_one_forms_are_the_same_attribute(data):
    (X, y), _ = data
    X, y = X[:30], y[:30]

    def fit(extra):
        X2 = [[dict(it, **extra) for it in s] for s in X]
        return StructuredPerceptron(max_iterations=3).fit(X2, y).state_features_

    ones = [fit({"flag": v}) for v in (True, 1, 1.0, np.float64(1.0))]
    assert all(f == ones[0] for f in ones) and any(a == "flag" for a, _ in ones[0])
    named = [fit({"flag": v}) for v in ("x", b"x", ["x"], {"x"}, {"x": True}, {"x": 1.0})]
    assert all(f == named[0] for f in named) and any(a == "flag:x" for a, _ in named[0])
    # False (and 0) is value 0: no attribute at all
    assert fit({"flag": False}) == fit({"flag": 0}) == fit({})
    # an item given as a list of names is a dict of value-1 attributes
    as_lists = StructuredPerceptron(max_iterations=3).fit(
        [[[name for name, _ in item_attributes(it)] for it in s] for s in [[{"w": t["w"], "b": t["bias"]}
                                                                              for t in seq] for seq in X]], y)
    as_dicts = StructuredPerceptron(max_iterations=3).fit([[{"w": t["w"], "b": t["bias"]} for t in seq]
                                                          for seq in X], y)
    assert as_lists.state_features_ == as_dicts.state_features_


def test_dev_set_picks_an_iteration_and_calibrates(data):
    (X, y), (Xt, yt) = data
    sp = StructuredPerceptron(max_iterations=6).fit(X, y, X_dev=Xt, y_dev=yt)
    assert 1 <= sp.best_iteration_ <= 6 and len(sp.history_) == 6
    scores = [r.dev_score for r in sp.history_]
    assert sp.model_.provenance["dev_score"] == max(scores)
    assert sp.temperature_ > 0 and sp.model_.calibration["source"] == "X_dev"
    before, after = sp.model_.calibration["nll"]
    assert after <= before + 1e-9
    raw = StructuredPerceptron(max_iterations=6, calibrate=False).fit(X, y, X_dev=Xt, y_dev=yt)
    assert raw.temperature_ == 1.0


@pytest.mark.parametrize("kw", [{"X_dev": [[{"w": "a"}]]}, {"y_dev": [["O"]]}])
def test_dev_without_labels_or_labels_without_dev(kw, data):
    (X, y), _ = data
    with pytest.raises(ValueError, match="both X_dev and y_dev"):
        StructuredPerceptron().fit(X, y, **kw)


def test_crf_only_parameters_are_refused_by_name():
    with pytest.raises(ValueError, match="c1, c2"):
        StructuredPerceptron(c1=0.1, c2=0.01)
    with pytest.raises(ValueError, match="num_memories"):
        StructuredPerceptron(num_memories=6)
    StructuredPerceptron(c1=None, min_freq=None)  # sklearn-crfsuite's defaults: nothing to refuse
    with pytest.raises(TypeError, match="bogus"):
        StructuredPerceptron(bogus=1)
    with pytest.raises(ValueError, match="algorithm must be 'ap' .*got 'lbfgs'"):
        StructuredPerceptron(algorithm="lbfgs").fit([[{"w": "a"}]], [["O"]])
    assert set(CRF_ONLY) >= {"c1", "c2", "linesearch", "pa_type", "variance", "gamma"}


def test_model_filename_naming_another_file_is_refused_before_training(tmp_path):
    """A CRFsuite model file given as ``model_filename``: training ran, then saving raised FileExistsError with a
    traceback and the trained model was lost. Now one line before any work; the user's file is untouched."""
    crfsuite_file = tmp_path / "model.crfsuite"
    crfsuite_file.write_bytes(b"lCRF not ours")
    sp = StructuredPerceptron(max_iterations=1, model_filename=crfsuite_file)
    with pytest.raises(InputError, match="model.crfsuite: exists and is not a model directory"):
        sp.fit([[{"w": "a"}]], [["O"]])
    assert crfsuite_file.read_bytes() == b"lCRF not ours"
    from structperc import Tagger

    tagger = Tagger(epochs=1).fit([[("a", "x")]], [["O"]])
    with pytest.raises(InputError, match="exists and is not a model directory"):
        tagger.save(crfsuite_file)
    assert crfsuite_file.read_bytes() == b"lCRF not ours"


def test_crf_parameters_at_their_crfsuite_defaults_are_no_setting():
    """``keep_tempfiles`` defaults to False in sklearn-crfsuite, not None: that value, and so a CRF's own
    ``get_params()``, was refused."""
    StructuredPerceptron(keep_tempfiles=False)
    with pytest.raises(ValueError, match="keep_tempfiles"):
        StructuredPerceptron(keep_tempfiles=True)
    sklearn_crfsuite = pytest.importorskip("sklearn_crfsuite")
    sp = StructuredPerceptron(**sklearn_crfsuite.CRF(algorithm="ap", max_iterations=3).get_params())
    assert sp.max_iterations == 3 and sp.fit([[{"w": "a"}]], [["O"]]).predict_single([{"w": "a"}]) == ["O"]


@pytest.mark.parametrize("params, message", [
    ({"max_iterations": 0}, "max_iterations"),
    ({"max_iterations": 2.5}, "max_iterations"),
    ({"scheme": "bilou"}, "scheme"),
    ({"constrained": True}, "needs a tag scheme"),
    ({"random_state": -1}, "random_state"),
    ({"all_possible_states": "yes"}, "all_possible_states"),
])
def test_bad_parameters(params, message):
    with pytest.raises(ValueError, match=message):
        StructuredPerceptron(**params).fit([[{"w": "a"}]], [["O"]])


@pytest.mark.parametrize("X, y, message", [
    ([[{"w": "a"}]], [["O", "O"]], r"y\[0\] has 2 label"),
    ([[{"w": "a"}]], [["O"], ["O"]], "2 sequences"),
    ([[{"w": "a"}]], ["O"], "a string"),
    ([[{"w": "a"}]], [[1]], "labels must be strings"),
    ([], [], "no training tokens"),
])
def test_bad_training_data(X, y, message):
    with pytest.raises(InputError, match=message):
        StructuredPerceptron().fit(X, y)


def test_constrained_scheme(data):
    (X, y), (Xt, _) = data
    from structperc.labels import valid_sequence

    sp = StructuredPerceptron(max_iterations=3, scheme="iob2").fit(X, y)
    assert sp.model_.task.constrained
    assert all(valid_sequence(p, "iob2") for p in sp.predict(Xt))
    # learning in IOB2 itself, the labels are checked as IOB2
    with pytest.raises(InputError, match="not a valid iob2"):
        StructuredPerceptron(scheme="iob2", encoding="iob2").fit([[{"w": "a"}]], [["I-PER"]])
    StructuredPerceptron(scheme="iob2", encoding="iob2", constrained=False).fit([[{"w": "a"}]], [["I-PER"]])
    # learning in IOBES, they are checked after conversion: an I-X after O begins a span (conlleval)
    one = StructuredPerceptron(scheme="iob2").fit([[{"w": "a"}, {"w": "b"}]], [["O", "I-PER"]])
    assert one.model_.labels == ["O", "S-PER"] and one.classes_ == ["B-PER", "O"]


def test_observed_states_only_pair_attributes_with_their_training_labels(data):
    (X, y), _ = data
    sp = StructuredPerceptron(max_iterations=4, all_possible_states=False, scheme="none").fit(X, y)
    seen = {(a, lab) for seq, tags in zip(X, y) for it, lab in zip(seq, tags)
            for a, _ in item_attributes(it)}
    assert set(sp.state_features_) <= seen
    dense = StructuredPerceptron(max_iterations=4, all_possible_states=True, scheme="none").fit(X, y)
    assert not set(dense.state_features_) <= seen  # negative evidence is learnt
    assert StructuredPerceptron(all_possible_transitions=True, max_iterations=4).fit(X, y) \
        .transition_features_ == StructuredPerceptron(max_iterations=4).fit(X, y).transition_features_


def test_deterministic_and_seeded(data):
    (X, y), _ = data
    a = StructuredPerceptron(max_iterations=3, random_state=7).fit(X, y).state_features_
    b = StructuredPerceptron(max_iterations=3, random_state=7).fit(X, y).state_features_
    c = StructuredPerceptron(max_iterations=3, random_state=8).fit(X, y).state_features_
    assert a == b and a != c
    rs = StructuredPerceptron(max_iterations=3, random_state=np.random.RandomState(0)).fit(X, y)
    assert rs.classes_


def test_verbose_prints_each_iteration(data, capsys):
    (X, y), _ = data
    StructuredPerceptron(max_iterations=3, verbose=True).fit(X, y)
    assert capsys.readouterr().out.count("epoch ") == 3


# ----------------------------------------------------------------- files, pickles, sklearn
def test_model_filename_saves_and_loads(fitted, data, tmp_path):
    (X, y), (Xt, _) = data
    path = tmp_path / "ner-model"
    sp = StructuredPerceptron(max_iterations=5, model_filename=path, scheme="none").fit(X, y)
    assert (path / "model.zip").exists()
    loaded = StructuredPerceptron(model_filename=path)
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(loaded)
    assert list(loaded.predict(Xt)) == list(sp.predict(Xt)) == list(fitted.predict(Xt))
    assert loaded.attributes_ == sp.attributes_ and loaded.classes_ == sp.classes_
    assert loaded.state_features_ == sp.state_features_
    zipped = StructuredPerceptron(max_iterations=5, model_filename=tmp_path / "m.zip").fit(X, y)
    assert (tmp_path / "m.zip").is_file() and zipped.size_ == (tmp_path / "m.zip").stat().st_size


def test_attribute_models_save_byte_identically(fitted, tmp_path):
    schema.write(tmp_path / "a", fitted.model_)
    again = schema.read(tmp_path / "a")
    assert again.attribute_model and again.templates == []
    schema.write(tmp_path / "b", again)
    assert (tmp_path / "a" / "model.zip").read_bytes() == (tmp_path / "b" / "model.zip").read_bytes()


def test_a_template_model_is_not_loaded_as_an_estimator(tmp_path):
    from structperc.tagger import Tagger
    from tests.conftest import toy_columns

    words, pos, chunks = toy_columns()
    sentences = [list(zip(w, p)) for w, p in zip(words, pos)]
    Tagger(task="chunk", epochs=1).fit(sentences, chunks).save(tmp_path / "t")
    with pytest.raises(InputError, match="template model"):
        StructuredPerceptron(model_filename=tmp_path / "t").predict([[{"w": "a"}]])


def test_pickles_hold_archive_bytes_not_arrays(fitted, data):
    _, (Xt, _) = data
    blob = pickle.dumps(fitted)
    globals_ = [arg for op, arg, _ in pickletools.genops(io.BytesIO(blob))
                if op.name in ("GLOBAL", "STACK_GLOBAL", "SHORT_BINUNICODE", "BINUNICODE")
                and isinstance(arg, str) and "numpy" in arg]
    assert globals_ == []
    back = pickle.loads(blob)
    assert list(back.predict(Xt)) == list(fitted.predict(Xt))
    assert back.state_features_ == fitted.state_features_
    assert back.get_params() == fitted.get_params()
    assert pickle.loads(pickle.dumps(StructuredPerceptron(max_iterations=3))).classes_ is None


def test_get_set_params_and_clone(fitted):
    from sklearn.base import clone

    params = fitted.get_params()
    assert params["max_iterations"] == 5 and "c1" not in params
    twin = clone(fitted)
    assert twin.get_params() == params and twin.classes_ is None
    twin.set_params(max_iterations=2, scheme="iob2")
    assert twin.max_iterations == 2 and twin.scheme == "iob2"
    with pytest.raises(ValueError):
        twin.set_params(c1=0.1)
    assert "StructuredPerceptron(max_iterations=5, scheme='none')" == repr(fitted)


def test_cross_val_score_in_two_processes(data):
    from sklearn.model_selection import cross_val_score

    (X, y), _ = data
    scores = cross_val_score(StructuredPerceptron(max_iterations=3), X, y, cv=3, n_jobs=2)
    assert scores.shape == (3,) and (scores > 0.8).all()
    serial = cross_val_score(StructuredPerceptron(max_iterations=3), X, y, cv=3, n_jobs=1)
    assert np.array_equal(scores, serial)


def test_grid_search(data):
    from sklearn.model_selection import GridSearchCV

    (X, y), (Xt, yt) = data
    search = GridSearchCV(StructuredPerceptron(), {"max_iterations": [1, 4],
                                                   "all_possible_states": [True, False]}, cv=2)
    search.fit(X, y)
    assert set(search.best_params_) == {"max_iterations", "all_possible_states"}
    assert search.best_estimator_.classes_ is not None
    assert search.score(Xt, yt) == search.best_estimator_.score(Xt, yt)


def test_damaged_model_bytes_name_the_bytes(fitted):
    from structperc.errors import ModelFormatError

    data = schema.to_bytes(fitted.model_)
    assert schema.from_bytes(data).labels == fitted.classes_
    with pytest.raises(ModelFormatError, match="^model bytes: "):
        schema.from_bytes(data[: len(data) // 2])


def test_the_name_cache_is_bounded_and_changes_no_id(monkeypatch):
    import structperc.features.attributes as attributes

    index = AttributeIndex()
    index.fit_transform([[{"w": "a"}, {"w": "b"}, {"w": "c"}]])
    monkeypatch.setattr(attributes, "CACHE_MAX", 2)
    for _ in range(3):
        assert index.transform([[{"w": "c"}, {"w": "z"}, {"w": "a"}]]).state.tolist() == [[2], [-1], [0]]
        assert sum(map(len, index._cache.values())) <= 3  # emptied when over the bound, then refilled
    index.prune(np.array([True, False, True]))
    assert index.transform([[{"w": "c"}, {"w": "b"}]]).state.tolist() == [[1], [-1]]


# ------------------------------------------------------------------- span labels in IOBES
def _iob2_valid(seq):
    from structperc.labels import valid_sequence

    return valid_sequence(list(seq), "iob2")


def test_iob2_labels_are_detected_and_learnt_in_iobes(fitted_iob, data):
    (X, y), (Xt, yt) = data
    from structperc.labels.schemes import convert

    task = fitted_iob.model_.task
    assert (task.scheme, task.model_scheme, task.constrained, task.metric) == ("iob2", "iobes", True, "span")
    assert fitted_iob.classes_ == sorted({t for s in y for t in s})
    assert set(fitted_iob.model_.labels) == {t for s in y for t in convert(s, "iob2", "iobes")}
    assert any(lab[0] in "ES" for lab in fitted_iob.model_.labels)
    pred = fitted_iob.predict(Xt)
    assert all(_iob2_valid(p) for p in pred)
    assert {t for p in pred for t in p} <= set(fitted_iob.classes_)
    assert fitted_iob.score(Xt, yt) > 0.9
    # predictions are the model's IOBES Viterbi path converted back, sequence by sequence
    from structperc.decode.decoder import predict

    model = fitted_iob.model_
    feats = model.features.transform(Xt)
    ids = predict(model.weights, feats).tolist()
    ptr = feats.sent_ptr.tolist()
    for i, p in enumerate(pred):
        raw = [model.labels[j] for j in ids[ptr[i]:ptr[i + 1]]]
        assert list(p) == convert(raw, "iobes", "iob2")
    # the inspection attributes speak the user's labels; the learnt_ ones the model's
    # (tests/test_sklearn_inspection.py checks the mapping)
    assert {lab for _, lab in fitted_iob.state_features_} <= set(fitted_iob.classes_)
    assert {lab for _, lab in fitted_iob.learnt_state_features_} <= set(model.labels)
    assert {lab for pair in fitted_iob.transition_features_ for lab in pair} <= set(fitted_iob.classes_)
    assert len(fitted_iob.learnt_transition_features_) == int((model.weights.mask[:-1] == 0).sum())


def test_iobes_marginals_sum_into_iob2_tags(fitted_iob, data):
    _, (Xt, _) = data
    from structperc.decode.marginals import marginals

    model = fitted_iob.model_
    marg = fitted_iob.predict_marginals(Xt)
    feats = model.features.transform(Xt)
    raw = marginals(model.weights, feats, model.temperature)[0]
    flat = [row for m in marg for row in m]
    assert len(flat) == raw.shape[0]
    lab = {l: j for j, l in enumerate(model.labels)}
    for row, probs in zip(flat, raw):
        assert sorted(row) == fitted_iob.classes_
        assert sum(row.values()) == pytest.approx(1.0)
        # by hand: B-X collects B-X and S-X, I-X collects I-X and E-X
        for tag, p in row.items():
            kinds = ("B", "S") if tag[0] == "B" else ("I", "E") if tag[0] == "I" else ("O",)
            want = sum(probs[lab[k + tag[1:]]] for k in kinds if k + tag[1:] in lab)
            assert p == pytest.approx(want, abs=1e-9)
    best = [max(row, key=row.get) for row in flat]
    viterbi = [t for s in fitted_iob.predict(Xt) for t in s]
    assert np.mean([a == b for a, b in zip(best, viterbi)]) > 0.95


def test_iobes_conversion_survives_files_and_pickles(fitted_iob, data, tmp_path):
    (X, y), (Xt, _) = data
    path = tmp_path / "iob"
    StructuredPerceptron(max_iterations=5, model_filename=path).fit(X, y)
    loaded = StructuredPerceptron(model_filename=path, scheme="none")  # the saved task decides
    assert (loaded.model_.task.scheme, loaded.model_.task.model_scheme) == ("iob2", "iobes")
    assert list(loaded.predict(Xt)) == list(fitted_iob.predict(Xt))
    assert loaded.classes_ == fitted_iob.classes_
    assert list(loaded.predict_marginals(Xt[:3])) == list(fitted_iob.predict_marginals(Xt[:3]))
    back = pickle.loads(pickle.dumps(fitted_iob))
    t, u = back.model_.task, fitted_iob.model_.task
    assert (t.scheme, t.model_scheme, t.constrained, t.metric) == (u.scheme, u.model_scheme, u.constrained, u.metric)
    assert list(back.predict(Xt)) == list(fitted_iob.predict(Xt))
    assert list(back.predict_marginals(Xt[:3])) == list(fitted_iob.predict_marginals(Xt[:3]))


@pytest.mark.parametrize("y, scheme", [
    ([["NOUN", "VERB"], ["NOUN"]], "none"),
    ([["O", "O"], ["O"]], "none"),                  # no span label at all
    ([["B-NP", "I-NP"], ["E-NP"]], "none"),         # IOBES-shaped: not auto-detected
    ([["B-NP", "I-NP"], ["PER"]], "none"),
    ([["B-NP", "I-NP"], ["B-"]], "none"),           # no type
    ([["B-NP", "I-NP"], ["O"]], "iob2"),
    ([["I-NP", "I-NP"], ["O"]], "iob2"),            # IOB1 data reads the same way
])
def test_auto_detection(y, scheme):
    from structperc.sklearn import detect_scheme

    X = [[{"w": "a"}, {"w": "b"}], [{"w": "c"}]]
    assert detect_scheme([t for s in y for t in s]) == scheme
    sp = StructuredPerceptron(max_iterations=2).fit(X, y)
    assert sp.model_.task.scheme == scheme
    assert sp.model_.task.model_scheme == ("iobes" if scheme == "iob2" else scheme)
    if scheme == "none":
        assert sp.classes_ == sp.model_.labels == sorted({t for s in y for t in s})
        assert not sp.model_.task.constrained


def test_opaque_labels_are_unchanged_by_auto(data):
    (X, y), (Xt, _) = data
    names = {"B-PER": "PERSON", "I-PER": "PERSON2", "B-LOC": "PLACE", "O": "OTHER"}
    y2 = [[names[t] for t in s] for s in y]
    auto = StructuredPerceptron(max_iterations=3).fit(X, y2)
    none = StructuredPerceptron(max_iterations=3, scheme="none").fit(X, y2)
    assert auto.model_.task == none.model_.task
    assert auto.state_features_ == none.state_features_
    assert list(auto.predict(Xt)) == list(none.predict(Xt))


def test_explicit_iob2_encoding_trains_without_conversion(data):
    (X, y), (Xt, _) = data
    sp = StructuredPerceptron(max_iterations=3, scheme="iob2", encoding="iob2").fit(X, y)
    assert sp.model_.task.model_scheme == "iob2" and sp.model_.labels == sp.classes_
    assert sp.model_.labels == sorted({t for s in y for t in s})
    assert all(_iob2_valid(p) for p in sp.predict(Xt))
    marg = sp.predict_marginals_single(Xt[0])
    assert all(sorted(r) == sp.classes_ for r in marg)


def test_iobes_dev_scoring_and_calibration(data):
    (X, y), (Xt, yt) = data
    from structperc.metrics import span_f1

    sp = StructuredPerceptron(max_iterations=4).fit(X, y, X_dev=Xt, y_dev=yt)
    scores = [r.dev_score for r in sp.history_]
    assert sp.model_.provenance["dev_score"] == max(scores)
    # the kept iteration's dev score is span F1 of the IOB2 predictions against y_dev
    assert max(scores) == pytest.approx(span_f1(yt, [list(p) for p in sp.predict(Xt)]))
    assert sp.temperature_ > 0
    before, after = sp.model_.calibration["nll"]
    assert after <= before + 1e-9


@pytest.mark.parametrize("params, y, message", [
    ({"encoding": "bilou"}, [["B-PER"]], "encoding must be"),
    ({"encoding": "iobes"}, [["NOUN"]], "needs span labels"),
    ({"encoding": "iobes", "scheme": "none"}, [["B-PER"]], "needs span labels"),
    ({"constrained": True}, [["NOUN"]], "needs a tag scheme"),
])
def test_bad_encoding(params, y, message):
    with pytest.raises(ValueError, match=message):
        StructuredPerceptron(**params).fit([[{"w": "a"}]], y)
