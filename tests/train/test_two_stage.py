"""Two-stage tagging (``Tagger(two_stage=True)``, ``structperc train --two-stage``; Krishnan & Manning
2006, issue 20): the first stage's predictions give the ``tmd`` column at tagging time, the gold tags give
it in training; the model file nests the first stage (format version 3); what two stages cannot do is
refused in one line."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import DOC_TRAIN, conll_text

from structperc import Tagger, predict
from structperc.cli import main
from structperc.dask.parts import train_on_workers
from structperc.errors import InputError, ModelFormatError
from structperc.features.dictionary import fold_assignment
from structperc.features.gazetteer import DOC_WINDOW, FOLD_BLOCK, document_gap
from structperc.features.instances import data_tags, split_tags
from structperc.features.stacking import majority_types, tag_types
from structperc.io.corpus import Corpus
from structperc.model import archive, schema
from structperc.train import run as fitting
from structperc.train.config import task_for

TEMPLATE = ["w[0]", "w[-1]", "w[1]", "bias"]
X = [[w for w, _ in s] for s in DOC_TRAIN]
Y = [[t for _, t in s] for s in DOC_TRAIN]
# a name seen as a person once is tagged in a sentence that alone says nothing of it
NEW = [["Víctor", "Ortega", "habló"], ["Ayer", "Ortega", "vino"], ["Ayer", "Lunes", "vino"]]


REPORTS: list = []


@pytest.fixture(scope="module")
def two_stage():
    return Tagger.train(X, Y, task="ner", columns=["word", "ner"], template=TEMPLATE, epochs=4, two_stage=True,
                        callback=REPORTS.append)


def test_both_stages_report_their_epochs(two_stage):
    assert [(r.stage, r.epoch) for r in REPORTS] == [(1, 1), (1, 2), (1, 3), (1, 4), (0, 1), (0, 2), (0, 3), (0, 4)]
    assert str(REPORTS[0]).startswith("first stage: epoch 1/4") and str(REPORTS[4]).startswith("epoch 1/4")
    assert len(two_stage.history_) == 4  # the model's own epochs


def meta_of(path) -> dict:
    with zipfile.ZipFile(archive.archive_path(path)) as zf:
        return json.loads(zf.read("metadata.json"))


def test_the_first_stage_is_the_template_without_its_column(two_stage):
    assert two_stage.template_lines_ == TEMPLATE + ["tmd[0]"]
    assert two_stage.stage1_.templates == TEMPLATE and two_stage.stage1_.stage1 is None
    assert two_stage.get_params()["two_stage"] is True
    assert document_gap(two_stage.features_.columns) == DOC_WINDOW  # services keep documents apart


def test_tagging_reads_the_first_stage_predictions(two_stage):
    corpus = Corpus.from_sentences(NEW)
    first = Tagger.from_model(two_stage.stage1_)
    tags = [t for s in first.predict(NEW) for t in s]
    types = tag_types(tags, span=True)
    column = majority_types(corpus, "word", types)
    assert (column[1], column[4], column[7]) == (types[4], types[1], "none")  # the two "Ortega" see each other
    feats = two_stage.features_.transform(corpus.with_column("tmd", column))
    expected = split_tags(data_tags(predict.decode(two_stage.model_, feats, None), corpus.sent_ptr,
                                    two_stage.labels_, two_stage.task_), corpus.sent_ptr)
    assert two_stage.predict(NEW) == expected
    # the first stage cannot tell the new name after "Ayer" from "Lunes"; the second stage can
    assert first.predict(NEW)[1][1] == "O" and expected[1][1] == "B-PER" and expected[2][1] == "O"


@pytest.mark.parametrize("folds", [0, 2])
def test_training_types(folds, monkeypatch):
    # 480 sentences (3 blocks of 200), each copy with names of its own: a fold's names are new to the others
    words = [[w + str(i) if w not in ("Víctor", "Ayer") else w for w in s] for i in range(20) for s in X]
    corpus = Corpus.from_sentences(words, Y * 20, tag_column="ner")
    task = task_for(Tagger(task="ner", columns=["word", "ner"]).get_params())
    stage = dict(task=task, params={"seed": 0, "feature_set": "all"}, dictionary=None, dataset_columns={},
                 callback=None, progress=None, mixing=None)
    monkeypatch.setattr(fitting, "STAGE_FOLDS", folds)
    got = fitting._stage_types(corpus, task, ["w[0]"], 2, stage, workers=1)
    gold = tag_types([t for s in Y * 20 for t in s], span=True)
    if not folds:
        assert got == gold
        return
    # fold 1 holds the sentences the model of the other folds tags
    _, fold_of = fold_assignment(len(corpus), 2, 0, FOLD_BLOCK)
    assert set(fold_of.tolist()) == {0, 1}
    model = fitting.train_model(corpus.select(np.flatnonzero(fold_of == 0)), None, ["w[0]"], 2, **stage).model
    rows = corpus.select(np.flatnonzero(fold_of == 1))
    tags = data_tags(predict.decode(model, predict.featurize(model, rows), None), rows.sent_ptr, model.labels,
                     task)
    token_fold = np.repeat(fold_of, np.diff(corpus.sent_ptr))
    assert [t for t, f in zip(got, token_fold) if f == 1] == tag_types(tags, span=True)
    assert "tmd" not in corpus.columns and got != gold  # noisy like the first stage at tagging time
    assert fitting._stage_types(corpus, task, ["w[0]"], 2, stage, workers=2) == got  # forked folds: the same


def test_saved_nested_and_loaded(two_stage, tmp_path, monkeypatch):
    two_stage.save(tmp_path / "m")
    meta = meta_of(tmp_path / "m")
    assert meta["format_version"] == 3 and meta["params"]["two_stage"] is True
    assert meta["stage1"]["templates"] == TEMPLATE and "stage1.trans" in meta["arrays"]
    again = Tagger.load(tmp_path / "m")
    assert again.stage1_ is not None and again.predict(NEW) == two_stage.predict(NEW)
    assert schema.read(tmp_path / "m").stage1.format_version == 3
    monkeypatch.setattr(archive, "FORMAT_VERSION", 2)  # a release before two stages
    with pytest.raises(ModelFormatError, match="newer structperc"):
        Tagger.load(tmp_path / "m")


def test_one_stage_models_keep_their_bytes(tmp_path):
    one = Tagger.train(X, Y, task="ner", columns=["word", "ner"], template=TEMPLATE, epochs=2)
    one.save(tmp_path / "m")
    meta = meta_of(tmp_path / "m")
    assert meta["format_version"] == 1 and "two_stage" not in meta["params"] and "stage1" not in meta


def test_damaged_first_stage_is_refused(two_stage, tmp_path):
    two_stage.save(tmp_path / "m")
    path = archive.archive_path(tmp_path / "m")
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = json.loads(members["metadata.json"])
    meta["stage1"]["shapes"]["state"][1] += 1
    members["metadata.json"] = json.dumps(meta).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    with pytest.raises(ModelFormatError, match="damaged"):
        Tagger.load(tmp_path / "m")


def test_compress_compresses_both_stages(two_stage, monkeypatch, tmp_path):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # the reproducible-builds date, in both stages' records
    small = two_stage.compress(keep=0.5)
    assert small.stage1_.provenance["compressed"]["date"] == small.provenance_["compressed"]["date"] \
        == "2023-11-14T22:13:20+00:00"
    assert small.save(tmp_path / "a").read_bytes() == two_stage.compress(keep=0.5).save(tmp_path / "b").read_bytes()
    assert small.stage1_.features.n_state_attributes < two_stage.stage1_.features.n_state_attributes
    assert [len(s) for s in small.predict(NEW)] == [3, 3, 3]


def test_dev_split_trains_each_probe_with_its_own_first_stage():
    tagger = Tagger.train(X, Y, task="ner", columns=["word", "ner"], template=TEMPLATE, epochs=3,
                          dev_split=0.25, two_stage=True)
    assert tagger.stage1_ is not None and tagger.dev_history_ and tagger.calibration_ is not None


def test_refusals(two_stage, tmp_path):
    with pytest.raises(InputError, match="does not continue training"):
        Tagger.from_model(two_stage.model_).partial_fit(X, Y)
    with pytest.raises(InputError, match="checkpoints"):
        Tagger(task="ner", columns=["word", "ner"], template=TEMPLATE, epochs=2, two_stage=True).fit(
            X, Y, checkpoint_dir=tmp_path / "ck")
    with pytest.raises(InputError, match="--two-stage"):
        train_on_workers(["x.txt"], None, TEMPLATE, 2, task=two_stage.task_,
                         params={"two_stage": True, "seed": 0}, dask="local:2", workers=2)


def test_seed_averaging_averages_both_stages_and_member_weights_refuses_them(two_stage):
    """`train_seed_average` averages each stage of a two-stage tagger (checked member by member in
    tests/train/test_ensemble.py); `member_weights`, which trains members of a fitted tagger's last stage alone,
    refuses one: they would read another first stage's column."""
    from structperc.ensemble import member_weights, train_seed_average

    avg = train_seed_average(X, Y, seeds=(0, 1), task="ner", columns=["word", "ner"], two_stage=True)
    assert avg.stage1_ is not None and avg.provenance_["seeds"] == [0, 1]
    with pytest.raises(InputError, match="one-stage"):
        next(member_weights(two_stage, X, Y, seeds=[1], epochs=[2]))


def test_cli_trains_tags_and_describes(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text(conll_text(DOC_TRAIN), encoding="utf-8")
    new = tmp_path / "new.txt"
    new.write_text("\n\n".join("\n".join(s) for s in NEW) + "\n", encoding="utf-8")
    template = tmp_path / "template.txt"
    template.write_text("\n".join(TEMPLATE) + "\n", encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(main, ["train", "--train", str(train), "--task", "ner", "--columns", "word,ner",
                                  "--template", str(template), "--epochs", "4", "--two-stage",
                                  "--model", str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert "first stage: epoch 4/4" in result.output and "\nepoch 4/4" in result.output
    tagged = runner.invoke(main, ["tag", "--model", str(tmp_path / "m"), str(new)])
    assert tagged.exit_code == 0, tagged.output
    got = [[line.split()[-1] for line in block.splitlines()] for block in tagged.output.strip().split("\n\n")]
    assert got == Tagger.load(tmp_path / "m").predict(NEW)
    info = runner.invoke(main, ["info", "--model", str(tmp_path / "m")])
    assert "two-stage    its first stage: 4 templates" in info.output
    refused = runner.invoke(main, ["train", "--train", str(train), "--task", "cws", "--two-stage",
                                   "--model", str(tmp_path / "c")])
    assert refused.exit_code == 2
    assert "--two-stage (two_stage) is for taggers, not for word segmentation" in refused.output


def test_second_order_two_stages_round_trip(tmp_path):
    tagger = Tagger.train(X, Y, task="ner", columns=["word", "ner"], template=TEMPLATE, epochs=3, order=2,
                          two_stage=True)
    assert tagger.weights_.order2 is not None and tagger.stage1_.weights.order2 is not None
    tagger.save(tmp_path / "m")
    meta = meta_of(tmp_path / "m")
    assert meta["format_version"] == 3 and "trans2" in meta["arrays"] and "stage1.trans2" in meta["arrays"]
    assert Tagger.load(tmp_path / "m").predict(NEW) == tagger.predict(NEW)
