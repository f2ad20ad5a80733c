"""`datasets.Dataset` in and out: a locally built Dataset with `ClassLabel` tags trains, tags and
evaluates to the same numbers as the equivalent CoNLL file; string tag columns; `save_to_disk` and
.jsonl specs through `structperc.io.hf.load` and the CLI; missing columns. No network (no ``hf:``)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

datasets = pytest.importorskip("datasets")

from testkit import SAMPLE_TEST, SAMPLE_TRAIN, conll_text  # noqa: E402

from structperc import Tagger  # noqa: E402
from structperc.cli import main  # noqa: E402
from structperc.errors import InputError  # noqa: E402
from structperc.io import read_conll  # noqa: E402
from structperc.io.hf import corpus_from_dataset, is_dataset_spec, load  # noqa: E402

N_TRAIN = 300
N_TEST = 200
W_TEMPLATE = ["w[-2]", "w[-1]", "w[0]", "w[1]", "w[2]", "w[-1]|w[0]", "w[0]|w[1]", "bias"]


def _sentences(path, n):
    c = read_conll(str(path), ["word", "pos", "chunk"])
    cols = [list(c.sentences(name))[:n] for name in ("word", "pos", "chunk")]
    return [list(zip(*s)) for s in zip(*cols)]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The first sentences of the shipped samples as CoNLL files, ClassLabel Datasets and string
    Datasets, plus the label names."""
    train, test = _sentences(SAMPLE_TRAIN, N_TRAIN), _sentences(SAMPLE_TEST, N_TEST)
    every = train + test
    pos_names = sorted({t[1] for s in every for t in s})
    chunk_names = sorted({t[2] for s in every for t in s})
    features = datasets.Features({
        "tokens": datasets.Sequence(datasets.Value("string")),
        "pos_tags": datasets.Sequence(datasets.ClassLabel(names=pos_names)),
        "chunk_tags": datasets.Sequence(datasets.ClassLabel(names=chunk_names)),
    })

    def labelled(sents):
        return datasets.Dataset.from_dict({
            "tokens": [[t[0] for t in s] for s in sents],
            "pos_tags": [[pos_names.index(t[1]) for t in s] for s in sents],
            "chunk_tags": [[chunk_names.index(t[2]) for t in s] for s in sents],
        }, features=features)

    def strings(sents):
        return datasets.Dataset.from_dict({
            "tokens": [[t[0] for t in s] for s in sents],
            "pos": [[t[1] for t in s] for s in sents],
            "chunk": [[t[2] for t in s] for s in sents],
        })
    d = tmp_path_factory.mktemp("datasets")
    (d / "train.txt").write_text(conll_text(train), encoding="utf-8")
    (d / "test.txt").write_text(conll_text(test), encoding="utf-8")
    return {"train": train, "test": test, "pos_names": pos_names, "chunk_names": chunk_names,
            "ds_train": labelled(train), "ds_test": labelled(test),
            "str_train": strings(train), "str_test": strings(test),
            "conll_train": str(d / "train.txt"), "conll_test": str(d / "test.txt"), "dir": d}


@pytest.fixture(scope="module")
def from_dataset(data):
    return Tagger.train(data["ds_train"], tokens="tokens", tags="chunk_tags",
                        features={"pos": "pos_tags"}, template="crfsuite", epochs=3)


@pytest.fixture(scope="module")
def from_conll(data):
    return Tagger.train(data["conll_train"], columns=["word", "pos", "chunk"], template="crfsuite",
                        epochs=3)


def test_dataset_builds_the_same_corpus_as_the_conll_file(data):
    c = corpus_from_dataset(data["ds_train"], token_column="word", tokens="tokens", tags="chunk_tags",
                            tag_column="chunk", features={"pos": "pos_tags"})
    f = read_conll(data["conll_train"], ["word", "pos", "chunk"])
    assert c.sent_ptr.tolist() == f.sent_ptr.tolist()
    for name in ("word", "pos", "chunk"):
        assert c.columns[name] == f.columns[name], name      # ClassLabel ids decoded to names


def test_classlabel_dataset_equals_conll_file(data, from_dataset, from_conll):
    """Acceptance: a Dataset built locally with ClassLabel tags trains, tags and evaluates to the same
    numbers as the equivalent CoNLL file."""
    assert from_dataset.labels_ == from_conll.labels_
    assert from_dataset.template_lines_ == from_conll.template_lines_
    assert from_dataset.features_.n_state_attributes == from_conll.features_.n_state_attributes
    pred_ds = from_dataset.predict(data["ds_test"])
    pred_file = from_conll.predict(data["conll_test"])
    assert pred_ds == pred_file
    assert len(pred_ds) == N_TEST
    # cross-check: each model on the other's input format
    assert from_conll.predict([[(w, p) for w, p, _ in s] for s in data["test"]]) == pred_file
    r_ds = from_dataset.evaluate(data["ds_test"])
    r_file = from_conll.evaluate(data["conll_test"])
    assert r_ds == r_file
    assert r_ds["sentences"] == N_TEST and 0.5 < r_ds["micro"]["f1"] < 1.0
    assert from_dataset.score(data["ds_test"]) == from_conll.score(data["conll_test"])


def test_tag_dataset_adds_a_classlabel_column(data, from_dataset):
    out = from_dataset.tag_dataset(data["ds_test"])
    assert out.column_names == ["tokens", "pos_tags", "chunk_tags", "predicted"]
    feature = out.features["predicted"]
    assert isinstance(feature.feature, datasets.ClassLabel)
    assert feature.feature.names == data["chunk_names"]       # same ClassLabel as the gold column
    names = data["chunk_names"]
    decoded = [[names[i] for i in sent] for sent in out["predicted"]]
    assert decoded == from_dataset.predict(data["ds_test"])
    assert len(data["ds_test"].column_names) == 3              # the input is not modified
    other = from_dataset.tag_dataset(data["ds_test"], column="chunk_pred")
    assert "chunk_pred" in other.column_names


def test_tag_dataset_without_gold_column_gives_strings(data, from_dataset):
    bare = data["ds_test"].remove_columns(["chunk_tags"])
    out = from_dataset.tag_dataset(bare)
    assert out.features["predicted"].feature.dtype == "string"
    assert out["predicted"] == from_dataset.predict(data["ds_test"])


def test_saved_model_keeps_dataset_columns(data, from_dataset, tmp_path):
    from_dataset.save(tmp_path / "m")
    loaded = Tagger.load(tmp_path / "m")
    assert loaded.predict(data["ds_test"]) == from_dataset.predict(data["ds_test"])
    assert loaded.tag_dataset(data["ds_test"])["predicted"] == \
        from_dataset.tag_dataset(data["ds_test"])["predicted"]


def test_string_tag_columns(data, from_dataset):
    tagger = Tagger.train(data["str_train"], tokens="tokens", tags="chunk", features={"pos": "pos"},
                          template="crfsuite", epochs=3)
    assert tagger.predict(data["str_test"]) == from_dataset.predict(data["ds_test"])
    out = tagger.tag_dataset(data["str_test"])
    assert out.features["predicted"].feature.dtype == "string"
    assert out["predicted"] == tagger.predict(data["str_test"])
    assert tagger.evaluate(data["str_test"]) == from_dataset.evaluate(data["ds_test"])


def test_unicode_string_dataset():
    ds = datasets.Dataset.from_dict({
        "tokens": [["北京", "欢迎", "你"], ["Zürich", "grüßt", "😀"], ["北京", "很", "大"]],
        "ner": [["B-LOC", "O", "O"], ["B-LOC", "O", "O"], ["B-LOC", "O", "O"]],
    })
    tagger = Tagger.train(ds, tags="ner", columns=["word", "ner"], template=["w[0]", "bias"], epochs=3)
    assert tagger.predict(ds) == ds["ner"]
    assert tagger.evaluate(ds)["micro"]["f1"] == 1.0


def test_save_to_disk_and_load(data, from_dataset, tmp_path):
    path = tmp_path / "saved"
    data["ds_train"].save_to_disk(str(path))
    assert is_dataset_spec(str(path))
    ds = load(str(path))
    assert ds.features == data["ds_train"].features and len(ds) == N_TRAIN
    tagger = Tagger.train(ds, tokens="tokens", tags="chunk_tags", features={"pos": "pos_tags"},
                          template="crfsuite", epochs=3)
    assert tagger.predict(data["ds_test"]) == from_dataset.predict(data["ds_test"])


def test_dataset_dict_split_spec(data, tmp_path):
    path = tmp_path / "dd"
    datasets.DatasetDict({"train": data["ds_train"], "test": data["ds_test"]}).save_to_disk(str(path))
    assert len(load(str(path))) == N_TRAIN                     # default split: train
    assert len(load(f"{path}:test")) == N_TEST
    with pytest.raises(InputError, match="no split 'dev'"):
        load(f"{path}:dev")


def test_jsonl_and_load(data, from_dataset, tmp_path, monkeypatch):
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    path = tmp_path / "train.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for s in data["train"]:
            fh.write(json.dumps({"tokens": [t[0] for t in s], "pos": [t[1] for t in s],
                                 "chunk": [t[2] for t in s]}, ensure_ascii=False) + "\n")
    assert is_dataset_spec(str(path))
    ds = load(str(path))
    assert len(ds) == N_TRAIN and ds["tokens"][0] == [t[0] for t in data["train"][0]]
    tagger = Tagger.train(ds, tokens="tokens", tags="chunk", features={"pos": "pos"},
                          template="crfsuite", epochs=3)
    assert tagger.predict(data["ds_test"].rename_columns({"pos_tags": "pos"})) == \
        from_dataset.predict(data["ds_test"])


def test_load_bad_specs(tmp_path):
    with pytest.raises(InputError):
        load(str(tmp_path / "missing.jsonl"))
    (tmp_path / "x.txt").write_text("a B-NP\n", encoding="utf-8")
    with pytest.raises(InputError, match="not a dataset"):
        load(str(tmp_path / "x.txt"))
    assert not is_dataset_spec(str(tmp_path / "x.txt"))


def test_cli_train_on_saved_dataset_directory(data, tmp_path):
    path = tmp_path / "saved"
    data["ds_train"].save_to_disk(str(path))
    template = tmp_path / "w.template"
    template.write_text("\n".join(W_TEMPLATE) + "\n", encoding="utf-8")
    model = tmp_path / "model"
    r = CliRunner().invoke(main, ["train", "--train", str(path), "--tokens-column", "tokens",
                                  "--tags-column", "chunk_tags", "--template", str(template),
                                  "--epochs", "2", "--model", str(model), "-q"])
    assert r.exit_code == 0, (r.output, r.exception)
    loaded = Tagger.load(model)
    api = Tagger.train(data["ds_train"], tokens="tokens", tags="chunk_tags", template=W_TEMPLATE,
                       epochs=2)
    assert loaded.template_lines_ == W_TEMPLATE
    assert loaded.labels_ == api.labels_
    assert loaded.predict(data["ds_test"]) == api.predict(data["ds_test"])
    assert loaded.evaluate(data["ds_test"]) == api.evaluate(data["ds_test"])


def test_cli_dataset_with_missing_column(data, tmp_path):
    path = tmp_path / "saved"
    data["ds_train"].save_to_disk(str(path))
    r = CliRunner().invoke(main, ["train", "--train", str(path), "--tokens-column", "words",
                                  "--tags-column", "chunk_tags", "--template", "crfsuite",
                                  "--model", str(tmp_path / "m"), "-q"])
    assert r.exit_code == 1 and isinstance(r.exception, SystemExit)
    assert r.stderr.startswith("Error: ") and "'words'" in r.stderr and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("kwargs, missing", [
    ({"tokens": "words", "tags": "chunk_tags", "features": {"pos": "pos_tags"}}, "words"),
    ({"tokens": "tokens", "tags": "ner_tags", "features": {"pos": "pos_tags"}}, "ner_tags"),
    ({"tokens": "tokens", "tags": "chunk_tags", "features": {"pos": "upos"}}, "upos"),
])
def test_missing_column_is_input_error(data, kwargs, missing):
    with pytest.raises(InputError, match=f"no column '{missing}'") as info:
        Tagger.train(data["ds_train"], template="crfsuite", epochs=1, **kwargs)
    assert "tokens" in str(info.value) and "chunk_tags" in str(info.value)   # lists the columns


def test_default_tag_column_name_missing(data):
    with pytest.raises(InputError, match="no column 'chunk'"):
        Tagger.train(data["ds_train"], features={"pos": "pos_tags"}, template="crfsuite", epochs=1)


def test_template_column_missing_from_dataset(data):
    with pytest.raises(InputError, match="pos"):
        Tagger.train(data["ds_train"], tags="chunk_tags", template="crfsuite", epochs=1)


def test_a_column_named_as_the_task_reads_it_is_read_without_features(data, from_conll):
    """A dataset with a ``pos`` column: training read only the tokens (no ``features`` mapping: the command line
    has none), left the preset's POS lines out and warned that the data had no such column."""
    model = Tagger.train(data["str_train"], tags="chunk", template="crfsuite", epochs=3)
    assert model.predict(data["str_test"]) == from_conll.predict(data["conll_test"])
    assert model.template_lines_ == from_conll.template_lines_


def test_predict_on_dataset_without_token_column(data, from_dataset):
    with pytest.raises(InputError, match="no column 'tokens'"):
        from_dataset.predict(data["ds_test"].rename_column("tokens", "words"))


def test_issue_example_tokens_and_tags_only():
    """`Tagger.train(ds, tokens="tokens", tags="ner_tags")` with nothing else: the default preset's POS
    templates are optional, and the trained model tags plain token lists."""
    names = ["O", "B-PER", "I-PER", "B-LOC"]
    ds = datasets.Dataset.from_dict(
        {"tokens": [["Ana", "Pérez", "vive", "en", "Madrid"], ["Juan", "vive", "en", "Lima"]] * 6,
         "ner_tags": [[1, 2, 0, 0, 3], [1, 0, 0, 3]] * 6},
        features=datasets.Features({"tokens": datasets.Sequence(datasets.Value("string")),
                                    "ner_tags": datasets.Sequence(datasets.ClassLabel(names=names))}))
    tagger = Tagger.train(ds, tokens="tokens", tags="ner_tags", epochs=4)
    assert "pos" not in tagger.features_.columns
    assert tagger.tag(["Ana", "vive", "en", "Lima"]) == ["B-PER", "O", "O", "B-LOC"]  # a new sentence
    assert tagger.evaluate(ds)["micro"]["f1"] == 1.0
