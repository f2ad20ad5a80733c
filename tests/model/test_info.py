"""`structperc info`: what a model file says about itself (task, labels, sizes, provenance)."""
from __future__ import annotations

import datetime
import hashlib
import json
import zipfile

import pytest
from click.testing import CliRunner
from testkit import TOY, conll_text

from structperc import ModelFormatError, Tagger, __version__
from structperc.cli.lifecycle import info_command
from structperc.model.info import format_info, model_info
from structperc.model.schema import FIRST_ORDER_VERSION
from structperc.segmenter import Segmenter

TEMPLATE = ["w[0]", "w[-1]", "pos[0]", "pos[-1]|pos[0]", "bias", "y[-1]|y[0]|pos[0]"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("info")
    train = d / "toy-train.txt"
    train.write_text(conll_text(TOY * 3), encoding="utf-8")
    dev = d / "toy-dev.txt"
    dev.write_text(conll_text(TOY), encoding="utf-8")
    tagger = Tagger.train(str(train), dev=str(dev), columns=["word", "pos", "chunk"], template=TEMPLATE,
                          epochs=4, seed=7)
    tagger.save(d / "model")
    return tagger, d / "model", train


def test_fields_present_and_correct(trained):
    tagger, path, train = trained
    d = model_info(path)
    assert d["task"] == "chunk" and d["metric"] == "span"
    assert d["labels"] == tagger.labels_ and d["n_labels"] == len(tagger.labels_)
    assert d["columns"] == ["word", "pos", "chunk"] and d["tag_column"] == "chunk"
    assert d["templates"] == TEMPLATE and d["n_templates"] == len(TEMPLATE)
    assert d["attributes"] == {"state": tagger.features_.n_state_attributes,
                               "transition": tagger.features_.n_transition_attributes,
                               "total": tagger.features_.n_state_attributes
                               + tagger.features_.n_transition_attributes}
    assert d["attributes"]["transition"] > 0
    nonzero = int((tagger.weights_.state != 0).sum() + (tagger.weights_.cond != 0).sum())
    assert d["nonzero_weights"] == nonzero
    assert d["vocabulary"] == {"word": len(tagger.features_.vocabs[0]),
                               "pos": len(tagger.features_.vocabs[1])}
    assert d["file_size"] == (path / "model.zip").stat().st_size > 0
    assert d["format"] == "structperc-model" and d["format_version"] == FIRST_ORDER_VERSION  # v2: order 2 only
    assert d["structperc_version"] == __version__
    sha = hashlib.sha256(train.read_bytes()).hexdigest()
    assert d["training_files"] == [{"name": "toy-train.txt", "sha256": sha}]
    assert d["epochs"] == 4 and d["seed"] == 7
    assert d["best_epoch"] == tagger.best_epoch_ and 1 <= d["best_epoch"] <= 4
    assert d["dev_score"] == pytest.approx(max(r.dev_score for r in tagger.history_))
    assert d["n_sentences"] == 3 * len(TOY) and d["n_tokens"] == 3 * sum(map(len, TOY))
    date = datetime.datetime.fromisoformat(d["date"])
    assert abs((datetime.datetime.now(datetime.timezone.utc) - date).total_seconds()) < 3600
    assert d["compression"] is None
    assert d["provenance"] == tagger.provenance_
    assert "cws" not in d


def test_compression_is_reported(trained, tmp_path):
    tagger, _, _ = trained
    small = tagger.compress(keep=0.5)
    small.save(tmp_path / "small")
    d = model_info(tmp_path / "small")
    c = d["compression"]
    assert c["keep"] == 0.5 and c["threshold"] is None
    assert c["state_attributes_before"] == tagger.features_.n_state_attributes
    assert c["state_attributes_after"] == d["attributes"]["state"] == small.features_.n_state_attributes
    assert c["transition_attributes_after"] == d["attributes"]["transition"]
    assert "compressed   keep 0.5" in format_info(d)


def test_zip_path_accepted(trained):
    _, path, _ = trained
    assert model_info(path / "model.zip")["labels"] == model_info(path)["labels"]


def test_format_info_summary(trained):
    tagger, path, _ = trained
    text = format_info(model_info(path))
    for needle in ("task         chunk", f"labels       {len(tagger.labels_)}: B-NP",
                   f"templates    {len(TEMPLATE)}: w[0]", "toy-train.txt sha256 ",
                   "epochs       4", "seed 7", "dev score", f"structperc {__version__}",
                   "compressed   no", "structperc-model v1"):
        assert needle in text, needle


def test_segmenter_info(tmp_path):
    seg = Segmenter.train(["上海 和 体育局 召开 会议", "体育局 召开 会议"] * 3, epochs=2, folds=2)
    seg.save(tmp_path / "seg")
    d = model_info(tmp_path / "seg")
    assert d["task"] == "cws" and d["labels"] == ["B", "E", "M", "S"]
    assert d["cws"] == {"train_words": 5, "lexicon": 5}
    assert "dictionary   5 training words" in format_info(d)


def test_cli_info_human_and_json(trained):
    tagger, path, _ = trained
    runner = CliRunner()
    res = runner.invoke(info_command, ["--model", str(path)])
    assert res.exit_code == 0, res.output
    assert "labels" in res.output and "attributes" in res.output
    res = runner.invoke(info_command, ["--model", str(path), "--json"])
    assert res.exit_code == 0, res.output
    d = json.loads(res.output)
    assert d == json.loads(json.dumps(model_info(path)))
    assert d["labels"] == tagger.labels_ and d["file_size"] > 0


def test_missing_and_damaged_models(tmp_path):
    with pytest.raises(ModelFormatError, match="no model here"):
        model_info(tmp_path / "absent")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "model.zip").write_bytes(b"\x00" * 100)
    with pytest.raises(ModelFormatError):
        model_info(tmp_path / "bad")
    # a structperc archive whose metadata lacks required fields
    (tmp_path / "thin").mkdir()
    with zipfile.ZipFile(tmp_path / "thin" / "model.zip", "w") as zf:
        zf.writestr("metadata.json", json.dumps({"format": "structperc-model", "format_version": 1}))
    with pytest.raises(ModelFormatError, match="damaged"):
        model_info(tmp_path / "thin")
    for name in ("absent", "bad", "thin"):
        res = CliRunner().invoke(info_command, ["--model", str(tmp_path / name), "--json"])
        assert res.exit_code == 1
        assert res.output.startswith("Error: ") and res.output.count("\n") == 1
