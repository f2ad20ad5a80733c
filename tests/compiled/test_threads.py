"""Tagging on several threads (`structperc.compiled.threads`): the setting, the runs of sentences, and the same
attribute ids, labels and output on any number of threads."""
from __future__ import annotations

import numpy as np
import pytest
from testkit import run

from structperc.compiled import threads as threading_setting
from structperc.compiled.threads import tagging_shards, tagging_threads, threads, usable_cpus


def test_one_thread_unless_asked():
    assert tagging_threads() == 1
    with threads(3) as n:
        assert n == tagging_threads() == 3
        with threads(1):
            assert tagging_threads() == 1
        assert tagging_threads() == 3
    assert tagging_threads() == 1
    for every in (None, 0):
        with threads(every) as n:
            assert n == tagging_threads() == usable_cpus() >= 1
    with pytest.raises(ValueError, match="at least 0"):
        with threads(-1):
            pass


def test_a_small_input_stays_whole_and_a_large_one_is_cut_into_runs_of_whole_sentences():
    lengths = np.array([5, 1, 7, 3] * 20_000)  # 320,000 tokens
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    assert tagging_shards(ptr) is None  # one thread unless asked
    with threads(4):
        bounds = tagging_shards(ptr)
        assert tagging_shards(ptr[:1000]) is None  # too few tokens for two threads
    assert bounds is not None and len(bounds) == 5
    assert bounds[0] == 0 and bounds[-1] == len(lengths) and np.all(np.diff(bounds) > 0)
    tokens = np.diff(ptr[bounds])
    assert tokens.min() >= threading_setting.MIN_TOKENS_PER_THREAD and tokens.max() - tokens.min() <= 2 * 7
    with threads(64):  # no more runs than the tokens allow
        assert len(tagging_shards(ptr)) - 1 == ptr[-1] // threading_setting.MIN_TOKENS_PER_THREAD


@pytest.fixture(scope="module")
def chunker(tmp_path_factory, sample_paths):
    train, _ = sample_paths
    d = tmp_path_factory.mktemp("threads") / "chunker"
    r = run("train", "--train", train, "--columns", "word,pos,chunk", "--epochs", 2, "--model", d, "-q")
    assert r.exit_code == 0, r.output
    return d


@pytest.mark.parametrize("n_threads", [2, 3])
def test_the_same_ids_and_labels_on_several_threads(chunker, sample_paths, monkeypatch, n_threads):
    from structperc import Tagger
    from structperc.decode.decoder import predict
    from structperc.io.conll import read_conll
    from structperc.predict.decoding import with_columns

    monkeypatch.setattr(threading_setting, "MIN_TOKENS_PER_THREAD", 50)  # the sample cut into runs too
    model = Tagger.load(chunker).model_
    corpus = with_columns(model, read_conll(sample_paths[1], ["word", "pos", "chunk"]))
    one = model.features.transform(corpus)
    labels = predict(model.weights, one)
    rng = np.random.default_rng(0)
    allowed = np.ones((corpus.n_tokens, len(model.labels)), dtype=bool)
    forced = np.flatnonzero(rng.random(corpus.n_tokens) < 0.1)  # a tenth of the tokens forced to a random label
    allowed[forced] = False
    allowed[forced, rng.integers(0, len(model.labels), len(forced))] = True
    masked = predict(model.weights, one, allowed=allowed)
    with threads(n_threads):
        assert len(tagging_shards(corpus.sent_ptr)) - 1 == n_threads
        many = model.features.transform(corpus)
        assert np.array_equal(many.state, one.state) and np.array_equal(many.trans, one.trans)
        assert np.array_equal(predict(model.weights, many), labels)
        assert np.array_equal(predict(model.weights, many, allowed=allowed), masked)
    assert not np.array_equal(masked, labels) and (masked == -1).any()  # the mask mattered, some have no path


def test_the_commands_write_the_same_on_any_number_of_threads(chunker, sample_paths, tmp_path, monkeypatch):
    monkeypatch.setattr(threading_setting, "MIN_TOKENS_PER_THREAD", 50)
    outputs = []
    for n in ("1", "2", "0"):
        out = tmp_path / f"tagged-{n}.txt"
        r = run("tag", "--model", chunker, "--threads", n, "-o", out, sample_paths[1])
        assert r.exit_code == 0, r.output
        outputs.append(out.read_bytes())
        r = run("eval", "--model", chunker, "--threads", n, sample_paths[1])
        assert r.exit_code == 0, r.output
        outputs.append(r.stdout.encode())
    assert outputs[0] == outputs[2] == outputs[4] and outputs[1] == outputs[3] == outputs[5]


def test_threads_are_refused_with_dask(chunker, sample_paths):
    r = run("tag", "--model", chunker, "--threads", "2", "--dask", "local:1", sample_paths[1])
    assert r.exit_code == 2 and "--threads is for tagging in this process" in r.output


def test_the_library_tags_on_the_threads_a_caller_asks_for(chunker, sample_paths, monkeypatch):
    import structperc
    from structperc.compiled.threads import map_threads
    from structperc.decode import decoder
    from structperc.features import lookup_tables

    monkeypatch.setattr(threading_setting, "MIN_TOKENS_PER_THREAD", 50)
    calls = []
    for module in (decoder, lookup_tables):
        monkeypatch.setattr(module, "map_threads",
                            lambda func, n, threads: calls.append(threads) or map_threads(func, n, threads))
    tagger = structperc.load(chunker)
    alone = tagger.predict(sample_paths[1])
    assert calls == []
    with structperc.threads(2):
        assert tagger.predict(sample_paths[1]) == alone
    assert calls == [2, 2]  # the attribute ids, then the decoder


def test_marginals_and_k_best_lists_are_the_same_on_several_threads(chunker, sample_paths, monkeypatch):
    from structperc import Tagger
    from structperc.decode.marginals import marginals, path_log_probs
    from structperc.decode.nbest import nbest
    from structperc.io.conll import read_conll
    from structperc.predict.decoding import featurize

    model = Tagger.load(chunker).model_
    feats = featurize(model, read_conll(sample_paths[1], ["word", "pos", "chunk"]))
    forced = np.ones((int(feats.sent_ptr[-1]), len(model.labels)), dtype=bool)
    forced[::7] = False
    forced[::7, 0] = True  # every seventh token forced to the first label
    one = [marginals(model.weights, feats), marginals(model.weights, feats, allowed=forced),
           nbest(model.weights, feats, 3), nbest(model.weights, feats, 2, allowed=forced)]
    ids = one[2].ids[0]
    lp = path_log_probs(model.weights, feats, ids)
    monkeypatch.setattr(threading_setting, "MIN_TOKENS_PER_THREAD", 50)
    with threads(3):
        many = [marginals(model.weights, feats), marginals(model.weights, feats, allowed=forced),
                nbest(model.weights, feats, 3), nbest(model.weights, feats, 2, allowed=forced)]
        assert np.array_equal(path_log_probs(model.weights, feats, ids), lp)
    for a, b in zip(one[:2], many[:2]):
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    for a, b in zip(one[2:], many[2:]):
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.scores, b.scores)
    assert not np.array_equal(one[0][0], one[1][0])  # the mask mattered


def test_a_second_order_model_decodes_the_same_on_several_threads(tmp_path, sample_paths, monkeypatch):
    from structperc import Tagger
    from structperc.decode import order2

    d = tmp_path / "order2"
    r = run("train", "--train", sample_paths[0], "--columns", "word,pos,chunk", "--epochs", 1, "--order", 2,
            "--template", "crfsuite", "--model", d, "-q")
    assert r.exit_code == 0, r.output
    tagger = Tagger.load(d)
    alone = tagger.predict(sample_paths[1])
    monkeypatch.setattr(threading_setting, "MIN_TOKENS_PER_THREAD", 50)
    monkeypatch.setattr(order2, "BATCH_TOKENS", 500)  # several batches for the threads to share
    with threads(2):
        assert tagger.predict(sample_paths[1]) == alone
