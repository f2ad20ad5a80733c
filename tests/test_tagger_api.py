"""The public `Tagger` API: training from lists, tuples, paths and corpora; tagging; evaluation;
model selection on dev data; parameter and input errors."""
from __future__ import annotations

import numpy as np
import pytest
from testkit import TOY, conll_text, toy_columns

from structperc import Corpus, InputError, Tagger

WORDS, POS, CHUNKS = toy_columns()
X_TUPLES = [list(zip(w, p)) for w, p in zip(WORDS, POS)]
TEMPLATE = ["w[0]", "w[-1]", "w[1]", "pos[0]", "pos[-1]|pos[0]", "bias", "y[-1]|y[0]|pos[0]"]

# single-column data: Chinese word segmentation-like tags on characters, plus Latin words
CHARS = [list("北京欢迎你"), list("上海很大"), ["naïve", "Zürich", "．"], list("欢迎")]
SEG = [["B-W", "I-W", "B-W", "I-W", "B-W"], ["B-W", "I-W", "B-W", "B-W"], ["B-W", "B-W", "O"],
       ["B-W", "I-W"]]


def _train_single(**kw):
    params = dict(columns=["char", "seg"], template=["c[-1]", "c[0]", "c[1]", "c[-1]|c[0]"], epochs=6)
    params.update(kw)
    return Tagger.train(CHARS, SEG, **params)


# ------------------------------------------------------------------------------- training
def test_train_from_single_column_lists():
    t = _train_single()
    assert t.predict(CHARS) == SEG
    assert t.tag(list("北京欢迎你")) == SEG[0]
    assert t.tag([]) == []
    assert t.best_epoch_ == 6 and len(t.history_) == 6
    assert t.history_[-1].n_sentences == 4 and t.history_[-1].n_tokens == 14
    assert t.provenance_["n_tokens"] == 14


def test_train_from_tuples_multi_column(toy_tagger):
    assert toy_tagger.predict(X_TUPLES) == CHUNKS
    assert toy_tagger.tag([("北京", "NNP"), ("欢迎", "VBP"), ("你", "PRP")]) == ["B-NP", "B-VP", "B-NP"]


def test_train_from_path_and_from_corpus(toy_path, toy_tagger):
    a = Tagger.train(toy_path, template=TEMPLATE, epochs=5)
    corpus = Corpus.from_sentences(WORDS, CHUNKS, extra={"pos": POS}, tag_column="chunk")
    b = Tagger.train(corpus, template=TEMPLATE, epochs=5)
    # the same data and seed in any form: the same model
    for t in (a, b):
        assert t.labels_ == toy_tagger.labels_
        assert np.array_equal(t.weights_.state, toy_tagger.weights_.state)
        assert np.array_equal(t.weights_.cond, toy_tagger.weights_.cond)
    assert a.provenance_["sources"][0]["name"] == "toy.txt"
    assert len(a.provenance_["sources"][0]["sha256"]) == 64
    # training drops the columns of corpora it read itself, never of one the caller holds
    assert list(corpus.columns["word"]) == [w for s in WORDS for w in s]
    assert corpus.factorize("chunk")[0] and b.provenance_["n_tokens"] == corpus.n_tokens
    assert a.provenance_["n_tokens"] == corpus.n_tokens and a.provenance_["n_sentences"] == len(WORDS)


def test_predict_from_path_without_gold_and_from_corpus(toy_tagger, write_file):
    p = write_file("in.txt", conll_text([[(w, pos) for w, pos, _ in s] for s in TOY]))
    assert toy_tagger.predict(p) == CHUNKS
    corpus = Corpus.from_sentences(WORDS, extra={"pos": POS})
    assert toy_tagger.predict(corpus) == CHUNKS


def test_empty_sentence_among_others():
    t = _train_single()
    assert t.predict([list("北京"), [], list("欢迎")]) == [["B-W", "I-W"], [], ["B-W", "I-W"]]


def test_unseen_tokens_still_get_known_tags(toy_tagger):
    tags = toy_tagger.predict([[("完全", "XX"), ("unbekannt", "YY")]])[0]
    assert len(tags) == 2 and set(tags) <= {c for s in CHUNKS for c in s}


def test_same_seed_same_model_and_params_stored():
    a, b = _train_single(seed=3), _train_single(seed=3)
    assert np.array_equal(a.weights_.state, b.weights_.state)
    assert np.array_equal(a.weights_.trans, b.weights_.trans)
    assert a.provenance_["seed"] == 3


def test_get_params_round_trip():
    t = Tagger(template=["w[0]"], columns=["word", "chunk"], epochs=3, seed=5, min_count=2,
               dev_split=0.25, refit=False)
    p = t.get_params()
    assert p["template"] == ["w[0]"] and p["epochs"] == 3 and p["seed"] == 5 and p["min_count"] == 2
    assert p["dev_split"] == 0.25 and p["refit"] is False and p["task"] == "chunk"
    assert Tagger(**p).get_params() == p
    assert set(p) >= {"task", "template", "columns", "tag_column", "scheme", "constrained", "epochs",
                      "min_count", "seed", "dev_split", "refit"}


# ----------------------------------------------------------------------------- evaluation
def test_evaluate_by_hand(toy_tagger):
    # toy_tagger tags "The cat sat" as B-NP I-NP B-VP. Against gold B-NP I-NP O:
    #   gold spans {NP[0:2]}, predicted {NP[0:2], VP[2]} -> P = 1/2, R = 1/1, F1 = 2·½·1/(½+1) = 2/3
    #   token accuracy 2/3; NP: P = R = F1 = 1 (support 1); VP: P = 0, support 0
    sent = X_TUPLES[:1]
    assert toy_tagger.predict(sent) == [["B-NP", "I-NP", "B-VP"]]
    r = toy_tagger.evaluate(sent, [["B-NP", "I-NP", "O"]])
    assert {"micro", "macro", "types", "accuracy"} <= set(r)
    assert r["micro"]["precision"] == pytest.approx(0.5)
    assert r["micro"]["recall"] == pytest.approx(1.0)
    assert r["micro"]["f1"] == pytest.approx(2 / 3)
    assert r["accuracy"] == pytest.approx(2 / 3)
    assert r["types"]["NP"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert r["types"]["VP"]["precision"] == 0.0 and r["types"]["VP"]["support"] == 0
    assert r["tokens"] == 3 and r["sentences"] == 1
    assert toy_tagger.score(sent, [["B-NP", "I-NP", "O"]]) == pytest.approx(2 / 3)


def test_evaluate_perfect_on_training_data(toy_tagger, toy_path):
    r = toy_tagger.evaluate(toy_path)
    assert r["micro"]["f1"] == 1.0 and r["accuracy"] == 1.0
    assert r["tokens"] == sum(len(s) for s in TOY) and r["sentences"] == len(TOY)
    assert toy_tagger.score(X_TUPLES, CHUNKS) == 1.0


# ------------------------------------------------------------------------ model selection
def _noisy(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X, y = [], []
    for _ in range(n):
        s = TOY[int(rng.integers(len(TOY)))]
        X.append([(w, p) for w, p, _ in s])
        y.append([c if rng.random() > 0.25 else "O" for _, _, c in s])
    return X, y


def test_dev_keeps_best_epoch():
    X, y = _noisy()
    t = Tagger.train(X, y, dev=X_TUPLES, dev_y=CHUNKS, template=TEMPLATE, epochs=6)
    scores = [r.dev_score for r in t.history_]
    assert len(scores) == 6 and all(s is not None for s in scores)
    assert 1 <= t.best_epoch_ <= 6
    assert t.best_epoch_ == 1 + int(np.argmax(scores))          # the first best epoch
    assert t.provenance_["dev_score"] == max(scores)
    assert t.score(X_TUPLES, CHUNKS) == pytest.approx(max(scores))
    # the kept weights are those of training for best_epoch_ epochs (same seed and order)
    plain = Tagger.train(X, y, template=TEMPLATE, epochs=t.best_epoch_)
    assert np.array_equal(plain.weights_.state, t.weights_.state)


def test_dev_split_with_refit():
    X, y = _noisy(n=20, seed=1)
    t = Tagger.train(X, y, template=TEMPLATE, epochs=5, dev_split=0.4)
    dev_scores = [r.dev_score for r in t.dev_history_]
    assert len(dev_scores) == 5 and all(s is not None for s in dev_scores)
    assert t.best_epoch_ == 1 + int(np.argmax(dev_scores))
    # refit: all 20 sentences, best_epoch_ epochs, no dev scores
    assert len(t.history_) == t.best_epoch_
    assert all(r.dev_score is None for r in t.history_)
    assert t.provenance_["n_sentences"] == 20


def test_dev_split_without_refit():
    X, y = _noisy(n=20, seed=1)
    t = Tagger.train(X, y, template=TEMPLATE, epochs=5, dev_split=0.4, refit=False)
    # round(0.4 · 20) = 8 sentences held out, 12 trained on
    assert t.provenance_["n_sentences"] == 12
    assert len(t.history_) == 5 and all(r.dev_score is not None for r in t.history_)
    assert t.best_epoch_ == 1 + int(np.argmax([r.dev_score for r in t.history_]))


# --------------------------------------------------------------------------------- errors
def test_untrained_tagger():
    t = Tagger()
    with pytest.raises(RuntimeError, match="not trained"):
        t.predict([["a"]])
    with pytest.raises(RuntimeError, match="not trained"):
        t.tag(["a"])


def test_untrained_tagger_evaluate():
    with pytest.raises(RuntimeError, match="not trained"):
        Tagger().evaluate([[("a", "DT")]], [["B-NP"]])


def test_string_instead_of_list(toy_tagger):
    with pytest.raises(InputError, match="not a string"):
        toy_tagger.tag("The cat sat")
    with pytest.raises(InputError, match="not a string"):
        Tagger.train([["a", "b"]], ["XY"], columns=["word", "tag"], template=["w[0]"], epochs=1)


def test_sentence_given_as_string_is_refused():
    t = _train_single()
    with pytest.raises(InputError):
        t.predict(["北京欢迎你"])           # one string, not a list of tokens


def test_mismatched_lengths():
    with pytest.raises(InputError, match="1 items for 2 tokens"):
        Tagger.train([["a", "b"]], [["B-NP"]], columns=["word", "chunk"], template=["w[0]"])
    with pytest.raises(InputError, match="1 sentences, tokens have 2"):
        Tagger.train([["a"], ["b"]], [["B-NP"]], columns=["word", "chunk"], template=["w[0]"])


def test_tuple_errors(toy_tagger):
    with pytest.raises(InputError, match="give each token as a tuple"):
        toy_tagger.predict([["The", "cat"]])
    with pytest.raises(InputError, match="needs 2 values"):
        toy_tagger.predict([[("The", "DT"), ("cat", "NN", "extra")]])


def test_tuple_with_too_few_values(toy_tagger):
    with pytest.raises(InputError, match="needs 2 values"):
        toy_tagger.predict([[("The", "DT"), ("cat",)]])


def test_missing_gold_tags():
    with pytest.raises(InputError, match="gold tags"):
        Tagger.train([["a"]], None, columns=["word", "chunk"], template=["w[0]"])


@pytest.mark.parametrize("params, message", [
    (dict(task="nope"), "unknown task 'nope'"),
    (dict(epochs=0), r"epochs \(max_iterations in StructuredPerceptron\) must be a positive integer"),
    (dict(min_count=0), r"min_count \(--min-count\) must be a positive integer"),
    (dict(dev_split=1.0), r"dev_split \(--dev-split\) must be in"),
    (dict(tag_column="label"), "tag column 'label' is not among"),
    (dict(scheme="bmes"), "span tasks need a span scheme"),
    (dict(template=["lemma[0]"]), "reads column\\(s\\) lemma"),
    (dict(template="no-such-preset"), "neither a template preset"),
    (dict(template=["foo(w[0])"]), "unknown function 'foo'"),
])
def test_parameter_errors(params, message):
    kw = dict(columns=["word", "pos", "chunk"], template=TEMPLATE, epochs=1)
    kw.update(params)
    with pytest.raises(InputError, match=message):
        Tagger.train(X_TUPLES, CHUNKS, **kw)


def test_empty_training_data():
    with pytest.raises(InputError, match="no sentences"):
        Tagger.train([], [], columns=["word", "chunk"], template=["w[0]"])


def test_unreadable_input_type():
    with pytest.raises(InputError, match="cannot read sentences from int"):
        Tagger.train(42, columns=["word", "chunk"], template=["w[0]"])


def test_reading_a_file_keeps_only_the_columns_templates_and_labels_need(tmp_path):
    from structperc.io.conll import read_conllu

    rows = [["1", "Dogs", "dog", "NOUN", "NNS", "_", "2", "nsubj", "_", "_"],
            ["2", "bark", "bark", "VERB", "VBP", "_", "0", "root", "_", "_"]]
    path = tmp_path / "t.conllu"
    path.write_text(("\n".join("\t".join(r) for r in rows) + "\n\n") * 3, encoding="utf-8")
    a = Tagger.train(str(path), task="pos", template=["w[0]", "lower(w[-1])"], epochs=2)
    b = Tagger.train(read_conllu(str(path)), task="pos", template=["w[0]", "lower(w[-1])"], epochs=2)
    assert np.array_equal(a.weights_.state, b.weights_.state)
    read = set(a._corpus(str(path), need_tags=True).columns)
    assert {"upos", "word"} <= read <= {"id", "upos", "word"}   # not lemma, xpos, feats, head, …
    assert a.predict(str(path)) == [["NOUN", "VERB"]] * 3
