"""Inference beyond the best path through the estimator (issue 16): calibration (ECE, the fitted
temperature), forced and allowed tags, marginals, k-best lists and path probabilities in the data's
tag scheme, and the model file keeping the calibration."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import SAMPLE_TEST, SAMPLE_TRAIN

from structperc import Tagger, predict
from structperc.decode.calibration import fit_temperature, token_nll
from structperc.decode.marginals import marginals
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.metrics import accuracy_coverage, expected_calibration_error, reliability


@pytest.fixture(scope="module")
def chunker():
    """A chunker trained on the shipped sample, its temperature fitted on a held-out tenth."""
    return Tagger(task="chunk", epochs=4, dev_split=0.1).fit(str(SAMPLE_TRAIN))


@pytest.fixture(scope="module")
def test_sentences(chunker):
    corpus = chunker.gold_corpus(str(SAMPLE_TEST))
    words, pos = corpus.columns["word"], corpus.columns["pos"]
    ptr = corpus.sent_ptr.tolist()
    return [list(zip(words[a:b], pos[a:b])) for a, b in zip(ptr[:-1], ptr[1:])][:60]


# ------------------------------------------------------------------------------- metrics by hand
def test_ece_by_hand():
    conf = np.array([0.1, 0.95, 0.95, 0.5, 1.0, 0.0])
    correct = np.array([0, 1, 0, 1, 1, 0])
    # bins of 1/15: {0.0} -> bin 0 (acc 0, conf 0); 0.1 -> bin 1 (0 vs 0.1); 0.5 -> bin 7 (1 vs 0.5);
    # 0.95, 0.95, 1.0 -> bin 14 (2/3 vs 0.9667): (0 + 0.1 + 0.5 + 3 * 0.3) / 6
    assert expected_calibration_error(conf, correct) == pytest.approx(1.5 / 6)
    bins = reliability(conf, correct)
    assert [b["count"] for b in bins if b["count"]] == [1, 1, 1, 3]
    assert expected_calibration_error(np.array([0.8] * 5), np.array([1, 1, 1, 1, 0])) == pytest.approx(0.0)


def test_accuracy_coverage_by_hand():
    rows = accuracy_coverage(np.array([0.2, 0.6, 0.9, 0.99]), np.array([0, 1, 0, 1]), (0.5, 0.95, 1.0))
    assert [(r["coverage"], r["accuracy"]) for r in rows] == [(0.75, 2 / 3), (0.25, 1.0), (0.0, None)]


# ------------------------------------------------------------------------- the temperature fit
def _tiled(feats: Features, copies: int) -> Features:
    n = int(feats.sent_ptr[-1])
    ptr = np.concatenate([feats.sent_ptr[:-1] + i * n for i in range(copies)] + [[copies * n]])
    return Features(np.tile(feats.state, (copies, 1)), np.tile(feats.trans, (copies, 1)), ptr)


@pytest.mark.parametrize("true_tau", [0.6, 2.5])
def test_fit_recovers_the_temperature_gold_tags_were_drawn_at(chunker, true_tau):
    """Draw each token's gold label from the model's own marginals at τ*: the expected token NLL
    (a sum of cross-entropies H(p_τ*, p_τ)) is smallest at τ = τ*, so the fit must find it."""
    model = chunker.model_
    feats = _tiled(predict.featurize(model, chunker.gold_corpus(str(SAMPLE_TEST))), 8)
    probs = marginals(model.weights, feats, true_tau)[0]
    rng = np.random.default_rng(0)
    gold = (probs.cumsum(axis=1) > rng.random((len(probs), 1))).argmax(axis=1)
    tau = fit_temperature(model.weights, feats, gold)
    assert tau == pytest.approx(true_tau, rel=0.1)
    assert token_nll(model.weights, feats, gold, tau) <= token_nll(model.weights, feats, gold, 1.0)


def test_training_with_a_held_out_split_fits_a_temperature(chunker):
    c = chunker.calibration_
    assert c is not None and 0.01 < c["temperature"] < 1000
    assert c["tokens"] > 0 and c["nll"][1] <= c["nll"][0] + 1e-9   # τ = 1 was a candidate
    assert chunker.model_.temperature == c["temperature"]


def test_calibration_is_saved_and_refit(chunker, tmp_path):
    chunker.save(tmp_path / "m")
    loaded = Tagger.load(tmp_path / "m")
    assert loaded.calibration_ == chunker.calibration_
    from structperc.model.info import format_info, model_info

    info = model_info(tmp_path / "m")
    assert info["calibration"]["temperature"] == chunker.calibration_["temperature"]
    assert f"calibration  temperature {chunker.calibration_['temperature']:.4g} fitted on" in format_info(info)
    record = loaded.calibrate(str(SAMPLE_TEST))
    assert record["source"].endswith("conll2000-test-sample.txt.gz") and record["tokens"] > 1000
    assert loaded.calibration_["temperature"] == record["temperature"] != chunker.calibration_["temperature"]
    report = loaded.evaluate(str(SAMPLE_TEST))
    assert report["calibration"]["temperature"] == record["temperature"]
    assert report["calibration"]["ece"] == pytest.approx(record["ece"][1])


def test_partly_tagged_held_out_data_fits_about_the_temperature_of_the_whole(chunker, tmp_path):
    """A third of the test sample's chunk tags hidden ('?'): the model learns in IOBES, whose label of a known
    token reads its neighbour's tag, and labels converted across a '?' (B-NP before it read as S-NP) fitted 14.1
    where the whole file fits 7.6 (the audit's 100 sentences). Beside a '?' the label is unknown too."""
    import gzip

    lines = gzip.decompress(SAMPLE_TEST.read_bytes()).decode("utf-8").splitlines()
    rng = np.random.default_rng(7)
    partial = [" ".join(line.split()[:2] + ["?"]) if line.strip() and rng.random() < 0.3 else line for line in lines]
    path = tmp_path / "partial.txt"
    path.write_text("\n".join(partial) + "\n", encoding="utf-8")
    whole = Tagger.load(_saved(chunker, tmp_path / "a")).calibrate(str(SAMPLE_TEST))["temperature"]
    part = Tagger.load(_saved(chunker, tmp_path / "b")).calibrate(str(path))["temperature"]
    assert abs(math.log(part / whole)) < math.log(1.15), (part, whole)


def _saved(tagger, path):
    tagger.save(path)
    return path


def test_uncalibrated_models_use_temperature_one(toy_tagger):
    assert toy_tagger.calibration_ is None and toy_tagger.model_.temperature == 1.0


# ------------------------------------------------------------------ marginals, k-best, paths
def test_marginals_are_distributions_over_the_data_tags(chunker, test_sentences):
    margs = chunker.predict_marginals(test_sentences)
    tags = chunker.predict(test_sentences)
    data_tags = {t for s in tags for t in s}
    assert all(set(d) >= data_tags and not any(t.startswith(("E-", "S-")) for t in d)
               for s in margs for d in s)
    assert all(math.isclose(sum(d.values()), 1.0, abs_tol=1e-9) for s in margs for d in s)
    agree = np.mean([max(d, key=d.get) == t for s, ts in zip(margs, tags) for d, t in zip(s, ts)])
    assert agree > 0.97  # max-marginal and Viterbi tags differ on a few tokens only


def test_nbest_starts_with_the_best_path_and_is_sorted(chunker, test_sentences):
    best = chunker.predict(test_sentences)
    lists = chunker.predict_nbest(test_sentences, k=4)
    proba = chunker.predict_proba_sequence(test_sentences)
    for tags, paths, p in zip(best, lists, proba):
        assert paths[0][0] == tags and paths[0][1] == pytest.approx(p, rel=1e-4)  # float32 scores
        probs = [q for _, q in paths]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1 + 1e-9
        assert len({tuple(t) for t, _ in paths}) == len(paths)
    assert all(0 < p <= 1 for p in proba)


# ------------------------------------------------------------------------ forced and allowed
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_forced_and_allowed_tags_are_honoured(chunker, test_sentences, data):
    """Constraints drawn from one of the model's 5 best paths (so some path satisfies them), plus
    extra allowed tags: the output keeps every forced tag and stays inside every allowed set, and
    a forced token's marginal is 1."""
    sents = test_sentences[:8]
    tags = sorted({t for d in chunker.predict_marginals(sents[:1])[0] for t in d})
    forced, allowed = [], []
    for s, paths in zip(sents, chunker.predict_nbest(sents, k=5)):
        path = data.draw(st.sampled_from(paths))[0]
        pos, other = data.draw(st.integers(0, len(s) - 1)), data.draw(st.integers(0, len(s) - 1))
        forced.append({pos: path[pos]})
        extra = data.draw(st.lists(st.sampled_from(tags), max_size=3))
        allowed.append({} if other == pos else {other: {path[other], *extra}})
    out = chunker.predict(sents, forced=forced, allowed=allowed)
    for f, a, t in zip(forced, allowed, out):
        (pos, tag), = f.items()
        assert t[pos] == tag
        for p, options in a.items():
            assert t[p] in options
    margs = chunker.predict_marginals(sents, forced=forced)
    for f, m in zip(forced, margs):
        (pos, tag), = f.items()
        assert m[pos][tag] == pytest.approx(1.0)


def test_unsatisfiable_constraints_are_refused(chunker, test_sentences):
    sent = test_sentences[0]
    with pytest.raises(InputError, match="sentence 0: its forced or allowed tags .* leave no tag sequence"):
        chunker.predict([sent], forced=[{0: "I-NP"}])  # nothing starts inside a chunk (IOBES, constrained)
    # numbered from 0, as the forced and allowed lists' own errors number their sentences
    with pytest.raises(InputError, match="sentence 2: its forced or allowed tags .* leave no tag sequence"):
        chunker.predict([sent, sent, sent], forced=[None, {}, {0: "I-NP"}])


def test_constraints_are_checked(chunker, test_sentences):
    with pytest.raises(InputError, match="'B-NOPE' is not one of this model's tags"):
        chunker.predict(test_sentences[:1], forced=[{0: "B-NOPE"}])
    with pytest.raises(InputError, match="position 99 is not one"):
        chunker.predict(test_sentences[:1], forced=[{99: "O"}])
    with pytest.raises(InputError, match="1 entries for 2 sentences"):
        chunker.predict(test_sentences[:2], allowed=[{0: {"O"}}])
    assert chunker.predict(test_sentences[:3], forced=[{}, {}, {}]) == chunker.predict(test_sentences[:3])


# ----------------------------------------------------------------------------- tag dictionary
def test_tag_dictionary_is_learnt_saved_and_applied(tmp_path):
    """A POS tagger with ``tag_dictionary=True``: frequent words are tagged only with tags they had in
    training (checked token by token on held-out text), and the dictionary survives save/load."""
    pos = Tagger(columns=["word", "pos", "_"], tag_column="pos", task="pos", epochs=2,
                 tag_dictionary=True).fit(str(SAMPLE_TRAIN))
    td = pos.tag_dictionary_
    assert td is not None and len(td) > 500 and td.words["the"] == ("DT",)
    corpus = pos.gold_corpus(str(SAMPLE_TEST))
    words = corpus.columns["word"]
    predicted = [t for s in pos.predict(corpus) for t in s]
    listed = [(w, t) for w, t in zip(words, predicted) if w in td.words]
    assert len(listed) > 0.5 * len(words) and all(t in td.words[w] for w, t in listed)
    pos.save(tmp_path / "pos")
    again = Tagger.load(tmp_path / "pos")
    assert again.tag_dictionary_.words == td.words
    assert [t for s in again.predict(corpus) for t in s] == predicted
    plain = Tagger(columns=["word", "pos", "_"], tag_column="pos", task="pos", epochs=2).fit(str(SAMPLE_TRAIN))
    assert plain.tag_dictionary_ is None
    assert abs(plain.score(corpus) - pos.score(corpus)) < 0.01


# ------------------------------------------------------------------------ documents in one call
def test_documents_tagged_together_get_their_tags_alone(chunker, test_sentences):
    """`predict.tag_documents` keeps each document out of the others' window (`apart`), and the
    per-sentence views of `Tagged` cut the flat results where the corpus does."""
    from structperc.io.inputs import to_corpus

    model = chunker.model_

    def corpus_of(flat):
        return to_corpus(flat, None, model.task, need_tags=False, reads=chunker.reads(),
                         token_columns=set(model.features.columns), unknown=None)

    documents = [test_sentences[:3], test_sentences[3:4], test_sentences[4:9]]
    done = predict.tag_documents(model, documents, corpus_of, confidence=True, distributions=True)
    ptr = done.corpus.sent_ptr
    tags, conf = done.tagged.sentence_tags(ptr), done.tagged.sentence_confidence(ptr)
    dists = done.tagged.sentence_marginals(ptr)
    assert [len(r) for r in done.sentences] == [3, 1, 5]
    for document, where in zip(documents, done.sentences):
        assert [tags[s] for s in where] == chunker.predict(document)
        for s, sentence in zip(where, document):
            assert len(conf[s]) == len(dists[s]) == len(sentence)
            assert all(d[t] == pytest.approx(p) for d, t, p in zip(dists[s], tags[s], conf[s]))
    assert predict.by_sentence(list("abcde"), np.array([0, 2, 2, 5])) == [["a", "b"], [], ["c", "d", "e"]]
