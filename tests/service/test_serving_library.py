"""`structperc.service.serving`, the library behind the HTTP face, in process: model names and the table,
request checks, and documents batched into one call tagged exactly as each alone."""
from __future__ import annotations

import pytest

from structperc import predict
from structperc.errors import InputError
from structperc.features.gazetteer import DOC_WINDOW
from structperc.service.serving import Limits, ModelTable, RequestError, parse_spec, tag_documents, tag_input


@pytest.fixture(scope="module")
def table(service_models):
    return ModelTable.load([f"{name}={path}" for name, path in service_models.items()])


def test_names_come_from_the_spec_or_the_directory(tmp_path):
    assert parse_spec("ner=models/x") == ("ner", tmp_path.__class__("models/x"))
    assert parse_spec(str(tmp_path / "pos-en"))[0] == "pos-en"
    assert parse_spec(str(tmp_path / "pos-en") + "/")[0] == "pos-en"
    assert parse_spec(str(tmp_path / "m" / "model.zip"))[0] == "m"
    for bad in ("../x=dir", "a/b=dir", "=dir", ".hidden=dir", "x" * 65 + "=dir"):
        with pytest.raises(InputError, match="model name"):
            parse_spec(bad)


def test_table_refuses_duplicates_missing_models_and_unknown_names(service_models, tmp_path):
    with pytest.raises(InputError, match="two models are named 'a'"):
        ModelTable.load([f"a={service_models['pos']}", f"a={service_models['ner']}"])
    with pytest.raises(InputError, match="no model at this path"):
        ModelTable.load([f"a={tmp_path / 'nothing'}"])
    with pytest.raises(InputError, match="no model to serve"):
        ModelTable([])
    t = ModelTable.load([f"a={service_models['pos']}"])
    assert t.get(None).name == "a"
    with pytest.raises(RequestError, match=r"unknown model '\.\./a' \(known: a\)") as err:
        t.get("../a")
    assert err.value.status == 404


def test_describe_gives_columns_labels_and_endpoints(table):
    d = {m["name"]: m for m in table.describe()["models"]}
    assert table.describe()["default"] == "chunk"
    assert d["chunk"]["columns"] == ["word", "pos"] and d["chunk"]["spans"] and d["chunk"]["scheme"] == "iob2"
    assert d["pos"]["columns"] == ["word"] and not d["pos"]["spans"] and d["pos"]["scheme"] is None
    assert d["cws"]["endpoint"] == "/segment" and not d["cws"]["marginals"]
    assert "B-PER" in d["ner"]["labels"] and "S-PER" not in d["ner"]["labels"]  # the data's scheme


def test_tag_input_checks(table):
    limits = Limits(max_sentences=3, max_tokens=4)
    pos, chunk, cws = table.get("pos"), table.get("chunk"), table.get("cws")
    assert tag_input(pos, None, "a b\n\n  \nc\n", limits) == [["a", "b"], ["c"]]
    assert tag_input(pos, [["a", ["b"]]], None, limits) == [["a", "b"]]
    assert tag_input(chunk, [[["a", "DT"]]], None, limits) == [[("a", "DT")]]
    cases = [(pos, None, None, 400, "either"), (pos, [["a"]], "a", 400, "either"),
             (pos, [], None, 400, "empty input"), (pos, None, " \n ", 400, "empty input"),
             (pos, [["a"]] * 4, None, 413, "4 sentences"), (pos, [["a"] * 5], None, 413, "5 tokens"),
             (chunk, None, "a b", 400, "reads 2 columns"), (chunk, [[["a"]]], None, 400, "token 0: 1 values"),
             (pos, [["a", ""]], None, 400, "token 1: an empty string"), (cws, [["a"]], None, 400, "/segment")]
    for served, sentences, text, status, message in cases:
        with pytest.raises(RequestError, match=message) as err:
            tag_input(served, sentences, text, limits)
        assert err.value.status == status, message


def test_documents_batched_together_get_the_tags_each_gets_alone(table):
    ner = table.get("ner")
    assert predict.document_window(ner.tagger.model_) == DOC_WINDOW  # the model reads `doc`
    docs = [[["Juan", "Pérez", "vive", "en", "Madrid", "."], ["Pérez", "habló", "."]],
            [["Madrid", "abrió", "."]],
            [["Pérez", "García", "visitó", "Ginebra", "."], ["La", "ONU", "."]]]
    alone = [tag_documents(ner, [d], marginals=True, nbest=2)[0] for d in docs]
    together = tag_documents(ner, docs, marginals=True, nbest=2)
    assert together == alone
    # and a document is tagged as its sentences are by the tagger itself, as one corpus
    assert alone[0]["tags"] == ner.tagger.predict(docs[0])


def test_marginals_and_nbest_agree_with_the_tagger(table):
    pos = table.get("pos")
    sents = [["The", "cat", "sat", "."], ["Dogs", "run"]]
    out = tag_documents(pos, [sents], marginals=True, nbest=3)[0]
    expected = pos.tagger.predict_marginals(sents)
    for got_s, exp_s in zip(out["marginals"], expected):
        for got, exp in zip(got_s, exp_s):
            assert got.keys() == exp.keys()
            assert all(abs(got[t] - exp[t]) < 1e-12 for t in got)
    for tags, conf, dist in zip(out["tags"], out["confidence"], out["marginals"]):
        assert [d[t] for t, d in zip(tags, dist)] == conf
    assert [paths[0]["tags"] for paths in out["nbest"]] == out["tags"]
