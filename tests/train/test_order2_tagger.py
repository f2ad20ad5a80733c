"""Second-order transitions as a Tagger option (``Tagger(order=2)``, ``structperc train --order 2``,
issue 20): trained, saved, loaded and tagged through every face; first-order models keep their bytes;
what a second-order model cannot do is refused in one line."""
from __future__ import annotations

import gzip
import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import DATA, SAMPLE_TRAIN

from structperc import Tagger
from structperc.cli import main
from structperc.decode.order2 import predict_order2
from structperc.errors import InputError, ModelFormatError
from structperc.model import archive, schema
from structperc.predict import featurize

TEMPLATE = ["w[0]", "w[-1]", "w[1]", "pos[0]", "pos[-1]", "pos[1]", "pos[-1]|pos[0]", "bias"]


def sample_text(first: int, stop: int) -> str:
    with gzip.open(SAMPLE_TRAIN, "rt", encoding="utf-8") as fh:
        blocks = fh.read().strip("\n").split("\n\n")[first:stop]
    return "\n\n".join(blocks) + "\n\n"


@pytest.fixture(scope="session")
def chunk_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("order2")
    train, dev = folder / "train.txt", folder / "dev.txt"
    train.write_text(sample_text(0, 400), encoding="utf-8")
    dev.write_text(sample_text(400, 500), encoding="utf-8")
    return train, dev


@pytest.fixture(scope="session")
def order2(chunk_files):
    train, dev = chunk_files
    return Tagger(task="chunk", template=TEMPLATE, epochs=4, order=2).fit(train, dev=dev)


def meta_of(path) -> dict:
    with zipfile.ZipFile(archive.archive_path(path)) as zf:
        return json.loads(zf.read("metadata.json"))


def test_order_two_saves_loads_and_tags_identically(order2, chunk_files, tmp_path):
    _, dev = chunk_files
    assert order2.weights_.order == 2 and order2.calibration_ is None and 1 <= order2.best_epoch_ <= 4
    order2.save(tmp_path / "m")
    meta = meta_of(tmp_path / "m")
    assert meta["format_version"] == 2 and meta["params"]["order"] == 2 and "trans2" in meta["arrays"]
    again = Tagger.load(tmp_path / "m")
    assert again.order == 2
    np.testing.assert_array_equal(again.weights_.order2, order2.weights_.order2)
    assert again.predict(dev) == order2.predict(dev)
    # the faces decode with the second-order weights: the pair Viterbi on the trained weights
    model = again.model_
    corpus = again._corpus(dev, need_tags=False)
    want = predict_order2(model.weights, model.weights.order2, featurize(model, corpus))
    np.testing.assert_array_equal(again.predict_ids(corpus), want)


def test_second_order_weights_change_the_path(order2, chunk_files):
    """The saved T2 is used: zeroing it changes some decoded labels on held-out data."""
    _, dev = chunk_files
    model = order2.model_
    corpus = order2._corpus(dev, need_tags=False)
    feats = featurize(model, corpus)
    with_t2 = predict_order2(model.weights, model.weights.order2, feats)
    without = predict_order2(model.weights, np.zeros_like(model.weights.order2), feats)
    assert np.abs(model.weights.order2).sum() > 0 and (with_t2 != without).any()


def test_order_one_writes_the_bytes_of_a_model_without_the_parameter(chunk_files, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    train, _ = chunk_files
    Tagger(task="chunk", template=TEMPLATE, epochs=2).fit(train).save(tmp_path / "plain")
    Tagger(task="chunk", template=TEMPLATE, epochs=2, order=1).fit(train).save(tmp_path / "one")
    plain = archive.archive_path(tmp_path / "plain").read_bytes()
    assert archive.archive_path(tmp_path / "one").read_bytes() == plain
    meta = meta_of(tmp_path / "plain")
    assert meta["format_version"] == 1 and "order" not in meta["params"] and "trans2" not in meta["arrays"]


@pytest.mark.parametrize("name", ["legacy-chunk", "legacy-ner"])
def test_old_models_load_as_first_order_and_save_as_version_one(name, tmp_path):
    tagger = Tagger.load(DATA / name)
    assert tagger.order == 1 and tagger.weights_.order2 is None
    tagger.save(tmp_path / "again")
    assert meta_of(tmp_path / "again")["format_version"] == 1


def test_a_reader_of_version_one_refuses_a_second_order_model(order2, tmp_path, monkeypatch):
    order2.save(tmp_path / "m")
    monkeypatch.setattr(archive, "FORMAT_VERSION", 1)
    with pytest.raises(ModelFormatError, match="newer structperc"):
        schema.read(tmp_path / "m")


def test_compress_keeps_the_second_order_weights(order2, chunk_files):
    _, dev = chunk_files
    small = order2.compress(keep=0.5)
    np.testing.assert_array_equal(small.weights_.order2, order2.weights_.order2)
    assert small.weights_.order == 2


def test_forced_tags_and_dead_ends(order2):
    sentence = [("He", "PRP"), ("reckons", "VBZ"), ("the", "DT"), ("current", "JJ"), ("deficit", "NN")]
    free = order2.predict([sentence])[0]
    forced = order2.predict([sentence], forced=[{2: "O"}])[0]
    assert forced[2] == "O" and len(forced) == len(free)
    with pytest.raises(InputError, match="no tag sequence"):  # I-NP after O is forbidden (IOBES inside)
        order2.predict([sentence], forced=[{2: "O", 3: "I-NP"}])


@pytest.mark.parametrize("call", ["predict_marginals", "predict_nbest", "predict_proba_sequence"])
def test_first_order_inference_is_refused(order2, call):
    with pytest.raises(InputError, match="not available for second-order models"):
        getattr(order2, call)([[("He", "PRP"), ("ran", "VBD")]])


def test_evaluate_has_no_calibration_and_calibrate_is_refused(order2, chunk_files):
    _, dev = chunk_files
    report = order2.evaluate(dev)
    assert "calibration" not in report and 0 < report["micro"]["f1"] <= 1
    with pytest.raises(InputError, match="not available for second-order models"):
        order2.calibrate(dev)


def test_dev_split_probes_and_refits_in_order_two(chunk_files):
    train, _ = chunk_files
    tagger = Tagger(task="chunk", template=TEMPLATE, epochs=3, order=2, dev_split=0.2).fit(train)
    assert tagger.weights_.order == 2 and tagger.calibration_ is None and len(tagger.dev_history_) == 3


@pytest.mark.parametrize("params, fit, message", [
    ({"order": 3}, {}, "order must be 1 or 2"),
    ({"order": True}, {}, "order must be 1 or 2"),
    ({"order": 2, "margin": 1.0}, {}, "default update only"),
    ({"order": 2, "step": "pa"}, {}, "default update only"),
    ({"order": 2}, {"workers": 2}, "one worker"),
    ({"order": 2}, {"checkpoint_dir": "CKPT"}, "checkpoints"),
])
def test_refusals(chunk_files, tmp_path, params, fit, message):
    train, _ = chunk_files
    fit = {k: (tmp_path / "ckpt" if v == "CKPT" else v) for k, v in fit.items()}
    with pytest.raises(InputError, match=message):
        Tagger(task="chunk", template=TEMPLATE, epochs=1, **params).fit(train, **fit)


def test_partial_labels_are_refused(tmp_path):
    path = tmp_path / "partial.txt"
    path.write_text("The DT B-NP\ncat NN ?\n\nA DT B-NP\ndog NN I-NP\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="partially labelled"):
        Tagger(task="chunk", template=TEMPLATE, epochs=1, order=2).fit(path)


def test_continued_training_is_refused(order2, chunk_files):
    train, _ = chunk_files
    with pytest.raises(InputError, match="continued training"):
        order2.partial_fit(train, epochs=1)


def test_seed_averaging_averages_second_order_members(chunk_files):
    """Seed averaging of second-order taggers: the second-order tensor of the mean is the mean of the members'
    (each a tagger trained alone with its seed), and the mean model decodes second-order."""
    from structperc.ensemble import train_seed_average

    train, _ = chunk_files
    kw = dict(task="chunk", template=TEMPLATE, epochs=2, order=2)
    members = [Tagger(seed=s, **kw).fit(train) for s in (0, 1)]
    avg = train_seed_average(train, seeds=[0, 1], **kw)
    expected = (members[0].weights_.order2.astype(np.float64) + members[1].weights_.order2) / 2
    assert avg.weights_.order == 2 and np.allclose(avg.weights_.order2, expected, atol=1e-6)
    assert len(avg.predict(train)) == len(members[0].predict(train))


def test_cli_train_order_two_tag_eval_info(chunk_files, tmp_path):
    train, dev = chunk_files
    runner = CliRunner()
    model = tmp_path / "cli-model"
    r = runner.invoke(main, ["train", "--train", str(train), "--dev", str(dev), "--template", "chunk",
                             "--epochs", "2", "--order", "2", "--model", str(model), "-q"])
    assert r.exit_code == 0, r.output
    tagger = Tagger.load(model)
    assert tagger.order == 2 and tagger.weights_.order == 2
    raw = "\n\n".join("\n".join(" ".join(line.split()[:2]) for line in block.splitlines())
                      for block in dev.read_text(encoding="utf-8").strip().split("\n\n")) + "\n\n"
    r = runner.invoke(main, ["tag", "--model", str(model)], input=raw)
    assert r.exit_code == 0, r.output
    got = [line.split()[-1] for line in r.stdout.splitlines() if line]
    assert got == [t for s in tagger.predict(dev) for t in s]
    r = runner.invoke(main, ["eval", "--model", str(model), str(dev)])
    assert r.exit_code == 0 and "NP" in r.stdout, r.output
    r = runner.invoke(main, ["info", "--model", str(model)])
    assert r.exit_code == 0 and "second-order transitions" in r.stdout and "v2" in r.stdout, r.output
    r = runner.invoke(main, ["tag", "--model", str(model), "--marginals"], input=raw)
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert r.stderr.strip().splitlines() == ["Error: token marginals and confidences are not available for "
                                             "second-order models (order=2): they decode the best path only"]


def test_cli_refuses_order_two_for_segmenters(tmp_path):
    r = CliRunner().invoke(main, ["train", "--task", "cws", "--train", "x", "--order", "2", "--model",
                                  str(tmp_path / "m")])
    assert r.exit_code == 2 and "--order 2 (order=2) is for taggers, not for word segmentation" in r.output


def _built(name: str) -> bool:
    from structperc.compiled import loader

    return loader.aot(name) is not None


@pytest.mark.skipif(not (_built("train_epoch_order2") and _built("viterbi2_corpus")), reason=(
    "the ahead-of-time build of the order-2 kernels is absent or stale (pip install builds it; "
    "`python -m structperc.compiled.build _aot _aot_order2` rebuilds it in place)"))
@pytest.mark.parametrize("feature_set", ["all", "observed"])
def test_ahead_of_time_kernels_equal_the_jit(chunk_files, monkeypatch, feature_set):
    """Training and tagging with the build give the JIT's weights and labels bit for bit."""
    import structperc.decode.order2 as decode2
    import structperc.train.order2 as train2
    from structperc.decode import order2_kernels as decode_jit
    from structperc.train import order2_kernels as train_jit

    train, dev = chunk_files
    params = dict(task="chunk", template=TEMPLATE + ["y[-1]|y[0]|pos[0]"], epochs=2, order=2,
                  feature_set=feature_set)
    built = Tagger(**params).fit(train)
    aot_labels = built.predict(dev)
    monkeypatch.setattr(train2, "_epoch_kernel", lambda: train_jit.train_epoch_order2)
    monkeypatch.setattr(decode2, "_kernel", lambda: decode_jit.viterbi2_corpus)
    jit = Tagger(**params).fit(train)
    np.testing.assert_array_equal(jit.weights_.order2, built.weights_.order2)
    np.testing.assert_array_equal(jit.weights_.sparse.values, built.weights_.sparse.values)
    np.testing.assert_array_equal(jit.weights_.cond, built.weights_.cond)
    assert jit.predict(dev) == aot_labels
