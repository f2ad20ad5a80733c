"""``structperc info --weights`` (`structperc.model.inspection`): the weights by name, per label, the
transition matrix with its ``<bos>`` row, conditioned transitions in summary; ``--json`` against the
package's JSON Schema."""
from __future__ import annotations

import dataclasses
import json

import jsonschema
import numpy as np
import pytest
from click.testing import CliRunner

from structperc import Tagger
from structperc.cli.lifecycle import info_command
from structperc.model.inspection import SCHEMA_PATH, attribute_names, format_weights, weights_report
from structperc.model.shipped import resolve

NER_X = [["Juan", "vive", "en", "Madrid"], ["Ana", "Pérez", "vino", "ayer"], ["Madrid", "es", "grande"],
         ["Luis", "García", "habló", "en", "Buenos", "Aires"], ["Juan", "Carlos", "Pérez", "vino"],
         ["vive", "en", "San", "José", "del", "Valle"]]
NER_Y = [["B-PER", "O", "O", "B-LOC"], ["B-PER", "I-PER", "O", "O"], ["B-LOC", "O", "O"],
         ["B-PER", "I-PER", "O", "O", "B-LOC", "I-LOC"], ["B-PER", "I-PER", "I-PER", "O"],
         ["O", "O", "B-LOC", "I-LOC", "I-LOC", "I-LOC"]]
TEMPLATE = ["w[0]", "w[-1]", "suffix3(w[0])", "lower(w[-1])|w[0]", "bias", "y[-1]|y[0]|suffix3(w[0])"]


@pytest.fixture(scope="module")
def ner(tmp_path_factory):
    """A freshly trained NER tagger (IOB2 data learnt in IOBES) and where it is saved."""
    tagger = Tagger.train(NER_X * 2, NER_Y * 2, task="ner", columns=["word", "ner"], template=TEMPLATE, epochs=4)
    path = tmp_path_factory.mktemp("weights") / "ner"
    tagger.save(path)
    return tagger, path


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_attribute_names_are_the_index_names(ner):
    tagger, _ = ner
    fi = tagger.features_
    for transition, n in ((False, fi.n_state_attributes), (True, fi.n_transition_attributes)):
        assert n > 0
        assert attribute_names(fi, transition) == [fi.attribute_name(i, transition) for i in range(n)]
        ids = np.array([n - 1, 0, n // 2])
        assert attribute_names(fi, transition, ids) == [fi.attribute_name(int(i), transition) for i in ids]
    assert "suffix3(w[0])=rid" in attribute_names(fi)


def test_report_is_the_weights(ner):
    tagger, path = ner
    d = weights_report(path, top=3)
    labels, dense, fi = tagger.labels_, tagger.weights_.state[:-1], tagger.features_
    assert d["labels"] == labels and d["scheme"] == "iobes" and d["task"] == "ner" and d["model"] == str(path)
    assert [s["label"] for s in d["state"]] == labels
    for s, y in zip(d["state"], range(len(labels))):
        column = dense[:, y].astype(np.float64)
        assert s["nonzero"] == int(np.count_nonzero(column))
        positive, negative = np.sort(column[column > 0])[::-1][:3], np.sort(column[column < 0])[:3]
        assert [e["weight"] for e in s["largest"]] == positive.tolist()
        assert [e["weight"] for e in s["most_negative"]] == negative.tolist()
        for e in s["largest"] + s["most_negative"]:
            named = [a for a in np.flatnonzero(column == e["weight"]) if fi.attribute_name(int(a)) == e["feature"]]
            assert len(named) == 1
    t = d["transitions"]
    L = len(labels)
    assert t["from"] == labels + ["<bos>"] and t["to"] == labels
    assert np.array_equal(np.array(t["weights"]), tagger.weights_.trans.astype(np.float64))
    forbidden = {tuple(p) for p in t["forbidden"]}
    assert ("<bos>", "I-PER") in forbidden and ("B-PER", "E-PER") not in forbidden
    assert forbidden == {((labels + ["<bos>"])[i], labels[j]) for i, j in zip(*np.nonzero(np.isinf(
        tagger.weights_.mask)))}
    assert d["end"]["B-PER"] is None and d["end"]["S-PER"] == 0.0
    c = d["conditioned"]
    cond = tagger.weights_.cond[:-1]
    assert c["attributes"] == fi.n_transition_attributes and c["nonzero"] == int(np.count_nonzero(cond)) > 0
    assert [x["template"] for x in c["templates"]] == ["y[-1]|y[0]|suffix3(w[0])"]
    assert [abs(x["weight"]) for x in c["strongest"]] == np.sort(np.abs(cond[cond != 0]))[::-1][:3].tolist()
    x = c["strongest"][0]
    a = attribute_names(fi, True).index(x["feature"])
    assert cond[a, (labels + ["<bos>"]).index(x["from"]), labels.index(x["to"])] == np.float32(x["weight"])
    assert d["second_order"] is None and L == 9


def test_labels_and_types_select(ner):
    _, path = ner
    d = weights_report(path, top=2, labels=["PER"])
    assert [s["label"] for s in d["state"]] == ["B-PER", "E-PER", "I-PER", "S-PER"]
    assert d["transitions"]["from"] == ["B-PER", "E-PER", "I-PER", "S-PER", "<bos>"]
    assert d["transitions"]["to"] == ["B-PER", "E-PER", "I-PER", "S-PER"]
    assert list(d["end"]) == ["B-PER", "E-PER", "I-PER", "S-PER"]
    d = weights_report(path, top=0, labels=["O", "S-LOC"])
    assert [s["label"] for s in d["state"]] == ["O", "S-LOC"]
    assert all(s["largest"] == [] == s["most_negative"] for s in d["state"])


def test_cli_shows_features_and_the_bos_row(ner):
    tagger, path = ner
    result = CliRunner().invoke(info_command, ["--model", str(path), "--weights", "--top", "2"])
    assert result.exit_code == 0, result.output
    out = result.output.splitlines()
    header = next(line for line in out if line.startswith("from \\ to"))
    assert header.split()[3:] == tagger.labels_
    bos = next(line for line in out if line.startswith("<bos>"))
    cells = bos.split()[1:]
    L = len(tagger.labels_)
    assert len(cells) == L
    for cell, label, value in zip(cells, tagger.labels_, tagger.weights_.trans[L].tolist()):
        assert cell == ("x" if label.startswith(("I-", "E-")) else f"{value:+.4f}")
    assert header.index("B-LOC") + len("B-LOC") == bos.index(cells[0]) + len(cells[0])  # aligned, right
    best = weights_report(path, top=2)["state"][0]["largest"][0]
    assert any(line.endswith(best["feature"]) and f"{best['weight']:+.4f}" in line for line in out)
    assert "conditioned transitions:" in result.output and "y[-1]|y[0]|suffix3(w[0])" in result.output
    assert result.output.rstrip("\n") == format_weights(weights_report(str(path), top=2))


def test_cli_json_validates(ner, validator):
    _, path = ner
    result = CliRunner().invoke(info_command, ["--model", str(path), "--weights", "--json", "--label", "LOC"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    validator.validate(d)
    assert [s["label"] for s in d["state"]] == ["B-LOC", "E-LOC", "I-LOC", "S-LOC"]
    assert d["transitions"]["from"][-1] == "<bos>"
    broken = dict(d, state=[dict(d["state"][0], largest=[{"feature": "w[0]=x", "weight": -1.0}])])
    with pytest.raises(jsonschema.ValidationError):  # a "largest" weight is positive
        validator.validate(broken)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({k: v for k, v in d.items() if k != "transitions"})


def test_second_order_summary(ner, validator):
    tagger, _ = ner
    model = tagger.model_
    L = len(model.labels)
    T2 = np.zeros((L + 1, L + 1, L), dtype=np.float32)
    T2[L, L, 0], T2[0, 1, 2] = 2.5, -3.0
    d = weights_report(dataclasses.replace(model, weights=dataclasses.replace(model.weights, order2=T2)), top=5)
    validator.validate(d)
    labels = model.labels + ["<bos>"]
    assert d["model"] is None
    assert d["second_order"] == {"nonzero": 2, "strongest": [
        {"labels": [labels[0], labels[1], labels[2]], "weight": -3.0},
        {"labels": ["<bos>", "<bos>", labels[0]], "weight": 2.5}]}
    assert "second-order transitions: 2 non-zero weights" in format_weights(d)


def test_cli_errors(ner):
    _, path = ner
    result = CliRunner().invoke(info_command, ["--model", str(path), "--top", "3"])
    assert result.exit_code == 2 and "--weights" in result.output
    result = CliRunner().invoke(info_command, ["--model", str(path), "--weights", "--label", "DATE"])
    assert result.exit_code != 0 and "DATE" in result.output and "Traceback" not in result.output


def test_shipped_ner_model(validator):
    try:
        resolve("es-ner")
    except Exception:  # noqa: BLE001 -- not installed here
        pytest.skip("the shipped es-ner model is absent")
    result = CliRunner().invoke(info_command, ["--model", "es-ner", "--weights", "--json", "--top", "3"])
    assert result.exit_code == 0, result.output
    d = json.loads(result.output)
    validator.validate(d)
    assert d["transitions"]["from"][-1] == "<bos>" and len(d["state"]) == len(d["labels"])
    assert all(len(s["largest"]) == 3 for s in d["state"])
