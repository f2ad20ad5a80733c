"""Model compression (issue 6): attributes ranked by weight norm, the weak ones dropped, ids renumbered
densely with their weights moving in step (HanLP issue #1031 was ids drifting out of step with the
weights after compression), vocabularies trimmed, and accuracy barely touched."""
from __future__ import annotations

import math
import os
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import CORPORA, SAMPLE_TEST, SAMPLE_TRAIN

from structperc import InputError, Tagger
from structperc.cli.lifecycle import compress_command
from structperc.features.templates import preset
from structperc.io.conll import read_conll
from structperc.model.compress import attribute_norms, keep_masks, n_kept
from structperc.segmenter import Segmenter

COLUMNS = ["word", "pos", "chunk"]


@pytest.fixture(scope="module")
def sample_tagger():
    """The brief's small model: crfsuite template, 3 epochs on the shipped 2,000-sentence sample."""
    return Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template="crfsuite", epochs=3)


@pytest.fixture(scope="module")
def cond_tagger():
    """A sample model with transition-conditioned templates too (cond weights, `same`, affixes)."""
    lines = preset("crfsuite") + ["y[-1]|y[0]|pos[0]", "y[-1]|y[0]|pos[-1]|pos[0]", "suffix3(w[0])",
                                  "same(pos[0],pos[-1])", "same(w[0],w[1])|pos[0]"]
    return Tagger.train(str(SAMPLE_TRAIN), columns=COLUMNS, template=lines, epochs=2)


@pytest.fixture(scope="module")
def test_corpus():
    return read_conll(str(SAMPLE_TEST), COLUMNS)


def _snapshot(tagger):
    fi, w = tagger.features_, tagger.weights_
    return ([k.copy() for k in fi.keys], [list(v) for v in fi.vocabs], [list(r) for r in fi.radix],
            w.state.copy(), w.cond.copy(), w.trans.copy(), dict(tagger.provenance_))


def _old_ids(mask: np.ndarray) -> np.ndarray:
    """Old id of each new (dense) id, for a keep mask."""
    return np.flatnonzero(mask)


# ----------------------------------------------------------------------------- rule and API
def test_n_kept_rule_is_ceiling_without_float_noise():
    assert n_kept(0.3, 10) == 3          # 0.3 * 10 = 3.0000000000000004 must not become 4
    assert n_kept(0.25, 10) == 3         # ceil(2.5)
    assert n_kept(0.3, 120826) == 36248  # ceil(36247.8)
    assert n_kept(1.0, 7) == 7
    assert n_kept(0.01, 7) == 1
    assert n_kept(0.5, 0) == 0


def test_input_untouched(sample_tagger, test_corpus):
    before = _snapshot(sample_tagger)
    pred_before = sample_tagger.predict_corpus(test_corpus)
    small = sample_tagger.compress(keep=0.3)
    assert small is not sample_tagger and small.features_ is not sample_tagger.features_
    after = _snapshot(sample_tagger)
    for a, b in zip(before[0], after[0]):
        np.testing.assert_array_equal(a, b)
    assert before[1:3] == after[1:3]
    for a, b in zip(before[3:6], after[3:6]):
        np.testing.assert_array_equal(a, b)
    assert before[6] == after[6] and "compressed" not in sample_tagger.provenance_
    assert sample_tagger.predict_corpus(test_corpus) == pred_before


def test_keep_one_identical_predictions_and_drops_only_dead_attributes(sample_tagger, test_corpus):
    full = sample_tagger.compress(keep=1.0)
    assert full.predict_corpus(test_corpus) == sample_tagger.predict_corpus(test_corpus)
    s_norm, _ = attribute_norms(sample_tagger.weights_)
    # a 3-epoch perceptron never touched most attributes: they are all-zero and always dropped
    assert full.features_.n_state_attributes == int(np.count_nonzero(s_norm > 0))
    assert full.features_.n_state_attributes < 0.5 * sample_tagger.features_.n_state_attributes


def test_keep_fraction_keeps_ceil_of_attributes_with_largest_norms(sample_tagger):
    A = sample_tagger.features_.n_state_attributes
    small = sample_tagger.compress(keep=0.3)
    assert small.features_.n_state_attributes == math.ceil(0.3 * A) == 36248
    assert small.weights_.state.shape == (36248 + 1, len(sample_tagger.labels_))
    assert not small.weights_.state[-1].any()
    keep_state, _ = keep_masks(sample_tagger.weights_, keep=0.3)
    s_norm, _ = attribute_norms(sample_tagger.weights_)
    assert s_norm[keep_state].min() >= s_norm[~keep_state].max()
    c = small.provenance_["compressed"]
    assert c["keep"] == 0.3 and c["threshold"] is None
    assert (c["state_attributes_before"], c["state_attributes_after"]) == (A, 36248)
    assert c["vocabulary_after"] < c["vocabulary_before"]


def test_threshold_keeps_norms_above_it(sample_tagger, test_corpus):
    s_norm, _ = attribute_norms(sample_tagger.weights_)
    t = float(np.median(s_norm[s_norm > 0]))
    small = sample_tagger.compress(threshold=t)
    assert small.features_.n_state_attributes == int(np.count_nonzero(s_norm > t))
    assert small.provenance_["compressed"]["threshold"] == t
    lossless = sample_tagger.compress(threshold=0)
    assert lossless.predict_corpus(test_corpus) == sample_tagger.predict_corpus(test_corpus)


@pytest.mark.parametrize("kwargs", [{}, {"keep": 0.5, "threshold": 1.0}, {"keep": 0.0},
                                    {"keep": 1.5}, {"keep": -0.1}, {"threshold": -1.0},
                                    {"keep": float("nan")}, {"threshold": float("inf")},
                                    {"keep": "0.5"}, {"keep": True}])
def test_bad_arguments_raise_input_error(toy_tagger, kwargs):
    with pytest.raises(InputError):
        toy_tagger.compress(**kwargs)


def test_untrained_tagger_refused():
    with pytest.raises(RuntimeError, match="not trained"):
        Tagger().compress(keep=0.5)


# ----------------------------------------------------- HanLP #1031: ids in step with weights
def _check_consistent(old, new, keep_state, keep_trans, corpus):
    fo, fn = old.features_, new.features_
    ids_s, ids_t = _old_ids(keep_state), _old_ids(keep_trans)
    assert fn.n_state_attributes == len(ids_s) and fn.n_transition_attributes == len(ids_t)
    for ids, transition in ((ids_s, False), (ids_t, True)):
        # every template's first and last kept attribute, and a large sample of the rest (naming
        # all 36k one by one is slow; the transform check below covers every id)
        check = set(range(min(len(ids), 500)))
        check |= set(np.random.default_rng(0).choice(len(ids), min(len(ids), 4000), replace=False)
                     .tolist()) if len(ids) else set()
        offs = fn.offsets(transition)
        check |= {int(o) for o in offs[:-1] if o < len(ids)} | {int(o) - 1 for o in offs[1:] if o > 0}
        for j in sorted(check):
            assert fn.attribute_name(j, transition) == fo.attribute_name(int(ids[j]), transition)
    np.testing.assert_array_equal(new.weights_.state[:-1], old.weights_.state[ids_s])
    np.testing.assert_array_equal(new.weights_.cond[:-1], old.weights_.cond[ids_t])
    np.testing.assert_array_equal(new.weights_.trans, old.weights_.trans)
    # End to end on unseen text: a token's new id is the kept old attribute's new id, or -1.
    for kind, mask in (("state", keep_state), ("trans", keep_trans)):
        old_ids = getattr(fo.transform(corpus), kind).astype(np.int64)
        new_ids = getattr(fn.transform(corpus), kind).astype(np.int64)
        rank = np.full(len(mask) + 1, -1, dtype=np.int64)  # index -1 → -1
        rank[:-1][mask] = np.arange(int(mask.sum()))
        np.testing.assert_array_equal(new_ids, rank[old_ids])


@pytest.mark.parametrize("keep", [1.0, 0.3, 0.05])
def test_names_weights_and_ids_move_together(sample_tagger, test_corpus, keep):
    new = sample_tagger.compress(keep=keep)
    ks, kt = keep_masks(sample_tagger.weights_, keep=keep)
    _check_consistent(sample_tagger, new, ks, kt, test_corpus)


@pytest.mark.parametrize("keep", [0.5, 0.1])
def test_transition_conditioned_attributes_move_with_their_slices(cond_tagger, test_corpus, keep):
    assert cond_tagger.features_.n_transition_attributes > 0
    new = cond_tagger.compress(keep=keep)
    ks, kt = keep_masks(cond_tagger.weights_, keep=keep)
    _, c_norm = attribute_norms(cond_tagger.weights_)
    assert int(kt.sum()) == min(n_kept(keep, len(kt)), int(np.count_nonzero(c_norm > 0)))
    assert new.weights_.cond.shape == (int(kt.sum()) + 1, len(cond_tagger.labels_) + 1,
                                       len(cond_tagger.labels_))
    _check_consistent(cond_tagger, new, ks, kt, test_corpus)
    # and after a save/load round trip
    loaded = _round_trip(new)
    assert loaded.features_.vocabs == new.features_.vocabs
    _check_consistent(cond_tagger, loaded, ks, kt, test_corpus)
    assert loaded.predict_corpus(test_corpus) == new.predict_corpus(test_corpus)


def test_lossless_with_transition_templates(cond_tagger, test_corpus):
    assert cond_tagger.compress(keep=1.0).predict_corpus(test_corpus) == \
        cond_tagger.predict_corpus(test_corpus)


def _round_trip(tagger):
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        tagger.save(d)
        return Tagger.load(d)


def test_compressed_model_can_continue_training(sample_tagger, test_corpus):
    """partial_fit re-encodes keys with grown vocabularies: the trimmed vocabularies and radixes of a
    compressed model must be consistent for that to work."""
    small = sample_tagger.compress(keep=0.1)
    before = small.features_.n_state_attributes
    vocab = [len(v) for v in small.features_.vocabs]
    small.partial_fit(str(SAMPLE_TRAIN), epochs=1)
    assert small.features_.n_state_attributes > before
    assert [len(v) for v in small.features_.vocabs] > vocab
    for ti, _t in enumerate(small.features_.templates):
        keys = small.features_.keys[ti]
        assert np.all(np.diff(keys) > 0)
    assert small.score(str(SAMPLE_TEST)) > 0.9


def test_compressing_twice_keeps_history_and_predictions(sample_tagger, test_corpus):
    once = sample_tagger.compress(keep=0.3)
    twice = once.compress(keep=1.0)
    assert twice.predict_corpus(test_corpus) == once.predict_corpus(test_corpus)
    c = twice.provenance_["compressed"]
    assert c["state_attributes_before"] == 36248 and c["previous"]["keep"] == 0.3


# ---------------------------------------------------------------- files, accuracy, segmenter
def test_saved_compressed_model_predicts_like_in_memory_and_is_smaller(sample_tagger, test_corpus,
                                                                        tmp_path):
    sizes = {}
    for keep in (1.0, 0.3, 0.1):
        small = sample_tagger.compress(keep=keep)
        path = small.save(tmp_path / f"k{keep}")
        sizes[keep] = path.stat().st_size
        loaded = Tagger.load(tmp_path / f"k{keep}")
        assert loaded.predict_corpus(test_corpus) == small.predict_corpus(test_corpus)
        assert loaded.provenance_["compressed"]["keep"] == keep
        assert loaded.features_.n_state_attributes == small.features_.n_state_attributes
        with zipfile.ZipFile(path) as zf:
            per_attr = sum(i.file_size for i in zf.infolist() if i.filename.startswith("keys_"))
        # key tables: 8 bytes per kept attribute plus a 128-byte .npy header per template
        n_templates = len(small.features_.templates)
        assert per_attr == 8 * small.features_.n_state_attributes + 128 * n_templates
    orig = sample_tagger.save(tmp_path / "orig").stat().st_size
    # measured: 2.65 MB → 1.20 MB at keep=0.3 (45%: the kept attributes hold most nonzero weights),
    # 0.52 MB at 0.1
    assert sizes[1.0] < 0.75 * orig
    assert sizes[0.3] < 0.5 * orig
    assert sizes[0.1] < 0.5 * sizes[0.3]


def test_f1_loss_at_keep_03_is_small(sample_tagger):
    full = sample_tagger.score(str(SAMPLE_TEST))
    small = sample_tagger.compress(keep=0.3).score(str(SAMPLE_TEST))
    tiny = sample_tagger.compress(keep=0.05).score(str(SAMPLE_TEST))
    # measured: 0.91979 full, 0.91977 at keep=0.3, 0.91599 at keep=0.05
    assert full - small < 0.01
    assert small >= 0.915
    assert tiny >= 0.91


def test_segmenter_compression(tmp_path):
    sents = ["上海 体育局 召开 会议", "体育局 召开 体育 宣传 工作 会议", "研究 部署 当前 和 今后 工作",
             "上海市 体育局 召开 会议", "中国 代表团 顺利 完成 任务"] * 4
    seg = Segmenter.train(sents, epochs=3, folds=2)
    texts = ["上海体育局召开会议", "中国代表团召开工作会议", "研究部署"]
    keys_before = [k.copy() for k in seg.tagger_.features_.keys]
    full = seg.compress(keep=1.0)
    assert isinstance(full, Segmenter) and full.tagger_ is not seg.tagger_
    assert full.segment_texts(texts) == seg.segment_texts(texts)
    small = seg.compress(keep=0.3)
    A = seg.tagger_.features_.n_state_attributes
    assert small.tagger_.features_.n_state_attributes <= n_kept(0.3, A)
    for a, b in zip(keys_before, seg.tagger_.features_.keys):
        np.testing.assert_array_equal(a, b)
    small.save(tmp_path / "seg")
    loaded = Segmenter.load(tmp_path / "seg")
    assert loaded.segment_texts(texts) == small.segment_texts(texts)
    assert loaded.evaluate(sents)["f1"] == small.evaluate(sents)["f1"]
    assert loaded.tagger_.provenance_["compressed"]["keep"] == 0.3
    # compressing the wrapped tagger directly works as well
    assert seg.tagger_.compress(keep=1.0).features_.n_state_attributes == \
        full.tagger_.features_.n_state_attributes


# ------------------------------------------------------------------------------------- CLI
def test_cli_compress(sample_tagger, test_corpus, tmp_path):
    sample_tagger.save(tmp_path / "m")
    runner = CliRunner()
    res = runner.invoke(compress_command, ["--model", str(tmp_path / "m"), "--keep", "0.3",
                                           "--out", str(tmp_path / "small")])
    assert res.exit_code == 0, res.output
    assert "36,248 of 120,826" in res.output
    loaded = Tagger.load(tmp_path / "small")
    expected = sample_tagger.compress(keep=0.3)
    assert loaded.predict_corpus(test_corpus) == expected.predict_corpus(test_corpus)
    # in place, when asked explicitly; threshold mode
    res = runner.invoke(compress_command, ["--model", str(tmp_path / "small"), "--threshold", "1.5",
                                           "--out", str(tmp_path / "small"), "-q"])
    assert res.exit_code == 0, res.output
    again = Tagger.load(tmp_path / "small")
    assert again.provenance_["compressed"]["threshold"] == 1.5
    assert again.provenance_["compressed"]["previous"]["keep"] == 0.3
    assert [p for p in os.listdir(tmp_path / "small") if p != "model.zip"] == []


@pytest.mark.parametrize("args, code, message", [
    (["--keep", "0.3"], 1, "no model here"),
    (["--keep", "0.3", "--threshold", "1"], 2, "exactly one"),
    ([], 2, "exactly one"),
    (["--keep", "0"], 2, "--keep"),
    (["--keep", "1.5"], 2, "--keep"),
    (["--threshold", "-1"], 2, "--threshold"),
])
def test_cli_compress_errors(tmp_path, args, code, message):
    res = CliRunner().invoke(compress_command, ["--model", str(tmp_path / "absent"), *args,
                                                "--out", str(tmp_path / "out")])
    assert res.exit_code == code
    assert message in res.output
    assert "Traceback" not in res.output and not isinstance(res.exception, (KeyError, TypeError))
    assert not (tmp_path / "out").exists()


def test_cli_compress_damaged_model_is_one_line(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "model.zip").write_bytes(b"PK\x03\x04 not really a zip")
    res = CliRunner().invoke(compress_command, ["--model", str(tmp_path / "bad"), "--keep", "0.5",
                                                "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    assert res.output.startswith("Error: ") and res.output.count("\n") == 1
    assert "damaged" in res.output


# --------------------------------------------------------------------------- real corpora
def _curve(evaluate, model, keeps, tmp_path):
    rows = []
    for keep in keeps:
        small = model.compress(keep=keep)
        path = small.save(tmp_path / f"keep{keep}")
        tagger = small.tagger_ if isinstance(small, Segmenter) else small
        rows.append((keep, tagger.features_.n_state_attributes, path.stat().st_size, evaluate(small)))
    return rows


def _print_curve(title, rows):
    print(f"\n{title}")
    print(f"{'keep':>6} {'attributes':>11} {'file MB':>8} {'F1':>7}")
    for keep, n, size, f1 in rows:
        print(f"{keep:>6} {n:>11,} {size / 1e6:>8.2f} {100 * f1:>7.2f}")


@pytest.mark.corpus
def test_conll2000_compression_curve(tmp_path):
    train, test = CORPORA / "conll2000" / "train.txt", CORPORA / "conll2000" / "test.txt"
    if not (train.is_file() and test.is_file()):
        pytest.skip(f"CoNLL-2000 corpus not found under {CORPORA / 'conll2000'}")
    tagger = Tagger.train(str(train), columns=COLUMNS, template="crfsuite", epochs=10, seed=0)
    base = tagger.score(str(test))
    size = tagger.save(tmp_path / "full").stat().st_size
    rows = [("orig", tagger.features_.n_state_attributes, size, base)]
    rows += _curve(lambda m: m.score(str(test)), tagger, (1.0, 0.5, 0.3, 0.1, 0.05), tmp_path)
    _print_curve("CoNLL-2000, crfsuite template, 10 epochs", rows)
    f1 = {keep: f for keep, _, _, f in rows}
    assert f1[1.0] == base
    assert base - f1[0.3] <= 0.003, f"F1 loss at keep=0.3: {100 * (base - f1[0.3]):.2f} points"


@pytest.mark.corpus
def test_sxu_compression_curve(tmp_path):
    train, test = CORPORA / "sighan2008_sxu" / "train.txt", CORPORA / "sighan2008_sxu" / "test.txt"
    if not (train.is_file() and test.is_file()):
        pytest.skip(f"SIGHAN 2008 SXU corpus not found under {CORPORA / 'sighan2008_sxu'}")
    seg = Segmenter.train(str(train), epochs=5)
    base = seg.evaluate(str(test))["f1"]
    size = seg.save(tmp_path / "full").stat().st_size
    rows = [("orig", seg.tagger_.features_.n_state_attributes, size, base)]
    rows += _curve(lambda m: m.evaluate(str(test))["f1"], seg, (1.0, 0.5, 0.3, 0.1, 0.05), tmp_path)
    _print_curve("SIGHAN 2008 SXU, cws template, 5 epochs", rows)
    f1 = {keep: f for keep, _, _, f in rows}
    assert f1[1.0] == base
    assert base - f1[0.3] <= 0.003, f"F1 loss at keep=0.3: {100 * (base - f1[0.3]):.2f} points"
