"""`structperc serve` over the shipped models: with no ``--model`` it serves every shipped model (``GET
/models`` lists them with their cards), ``--model NAME`` takes a shipped name (an unknown one is one
error line listing the shipped names), and ``/tag`` takes raw text (``"raw": true``) for models with a
language, answering each token's character offsets. In process (FastAPI's TestClient) where possible;
the command line itself through a real process (`shipped_server`)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from servicekit import LIMITS

from structperc.errors import InputError, ModelFormatError
from structperc.model import shipped
from structperc.service import serving

pytest.importorskip("fastapi", reason="the service needs the serve extra: pip install -e '.[serve]'")

#: Raw English with contractions, a non-ASCII letter (offsets count characters, not bytes), a line
#: break inside a sentence and a blank line that ends a paragraph.
RAW_EN = "Zoë didn't stay. I'm here,\nreally!\n\n  Prices rose 3.5% in May."


def need_shipped(*names: str) -> None:
    """Skip unless the shipped models ``names`` (none: any) are installed."""
    have = shipped.names()
    if not have:
        pytest.skip(f"no shipped models in {shipped.FOLDER} (built by scripts/build_models.py NAME)")
    missing = [n for n in names if n not in have]
    if missing:
        pytest.skip(f"shipped model(s) {', '.join(missing)} not in {shipped.FOLDER} (shipped: {', '.join(have)})")


def need_spacy() -> None:
    pytest.importorskip("spacy", reason='raw text is split by spaCy: pip install -e ".[text]"')


@pytest.fixture(scope="module")
def everything():
    """(the table of every shipped model, a client of the app serving it) — what `structperc serve`
    with no --model serves."""
    need_shipped()
    from fastapi.testclient import TestClient

    from structperc.service.app import create_app

    table = serving.ModelTable.all_shipped()
    with TestClient(create_app(table, serving.Limits(**LIMITS))) as client:
        yield table, client


@pytest.fixture(scope="module")
def mixed(service_models):
    """A client of en-upos (by its shipped name) and the toy ``pos`` model (no language), small limits."""
    need_shipped("en-upos")
    from fastapi.testclient import TestClient

    from structperc.service.app import create_app

    table = serving.ModelTable.load(["en-upos", f"pos={service_models['pos']}"])
    limits = serving.Limits(**{**LIMITS, "max_sentences": 3, "max_tokens": 8})
    with TestClient(create_app(table, limits)) as client:
        yield client


def tag(client, body: dict) -> dict:
    response = client.post("/tag", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def error(client, body: dict, status: int) -> str:
    response = client.post("/tag", json=body)
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert message and "\n" not in message
    return message


# ------------------------------------------------------------------------------- serving every shipped model
def test_no_model_serves_every_shipped_model_with_its_card(everything):
    table, client = everything
    names = shipped.names()
    out = client.get("/models").json()
    assert sorted(m["name"] for m in out["models"]) == names
    assert out["default"] == ("en-upos" if "en-upos" in names else names[0]) == out["models"][0]["name"]
    for model in out["models"]:
        card = shipped.card(model["name"])
        assert model["language"] == card["language"]
        assert model["card"]["description"] == card["description"] and model["card"]["description"]
        for key in ("corpus", "licence", "test"):
            assert model["card"][key] == card[key], key
        assert model["endpoint"] == ("/segment" if card["task"] == "cws" else "/tag")
        # every shipped tagger takes raw text (en-chunk's POS comes from en-xpos); a segmenter uses /segment
        assert model["raw"] is (model["endpoint"] == "/tag")


def test_shipped_order_puts_en_upos_first():
    assert serving.shipped_order(["zh-seg", "en-xpos", "en-upos", "es-ner"]) == ["en-upos", "en-xpos", "es-ner",
                                                                                "zh-seg"]
    assert serving.shipped_order(["zh-seg", "en-xpos"]) == ["en-xpos", "zh-seg"]


def test_every_shipped_tagger_takes_raw_text(everything):
    """Each shipped tagger answers raw text in its language with the tags `Tagger.tag_texts` gives."""
    need_spacy()
    table, client = everything
    texts = {"en": "He didn't stay. The cat sat on the mat.", "es": "Juan Pérez vive en Madrid. Trabaja en la ONU.",
             "nl": "Jan de Vries woont in Amsterdam. Hij werkt bij Philips."}
    for served in table.models.values():
        if served.segments:
            continue
        text = texts.get(served.language or "", texts["en"])
        answer = tag(client, {"model": served.name, "text": text, "raw": True})
        expected = served.tagger.tag_texts(text)[0]
        assert answer["tokens"] == [[t.text for t in s] for s in expected], served.name
        assert answer["tags"] == [[t.tag for t in s] for s in expected], served.name
        assert answer["offsets"] == [[[t.start, t.end] for t in s] for s in expected], served.name


def test_raw_documents_batched_are_tagged_as_each_alone(everything):
    """The service batches concurrent raw requests into one call (`tag_raw_documents`): each document is
    tagged as if alone (NER's document-level window stays inside it) and keeps its own offsets."""
    need_spacy()
    table, _ = everything
    limits = serving.Limits()
    for served in table.models.values():
        if served.segments:
            continue
        texts = ["Juan Pérez vive en Madrid. Pérez trabaja en la ONU.", "He didn't stay.\n\nMadrid, Pérez.",
                 "Jan woont in Amsterdam."]
        docs = [serving.raw_input(served, text, limits) for text in texts]
        together = serving.tag_raw_documents(served, docs)
        alone = [serving.tag_raw_documents(served, [doc])[0] for doc in docs]
        assert together == alone, served.name
        for text, answer in zip(texts, together):
            assert [[text[a:b] for a, b in s] for s in answer["offsets"]] == answer["tokens"], served.name


def test_chinese_still_goes_to_segment(everything):
    need_shipped("zh-seg")
    table, client = everything
    response = client.post("/segment", json={"model": "zh-seg", "text": "上海体育局召开会议"})
    assert response.status_code == 200, response.text
    assert "".join(response.json()["words"][0]) == "上海体育局召开会议"
    message = error(client, {"model": "zh-seg", "text": "上海体育局召开会议", "raw": True}, 400)
    assert "/segment" in message


# ------------------------------------------------------------------------------------------------ raw text
def test_raw_text_is_split_like_the_corpus_with_offsets(mixed):
    need_spacy()
    answer = tag(mixed, {"model": "en-upos", "text": RAW_EN, "raw": True, "marginals": True})
    tokens, offsets = answer["tokens"], answer["offsets"]
    assert tokens[0] == ["Zoë", "did", "n't", "stay", "."]
    assert tokens[1][:2] == ["I", "'m"] and "really" in tokens[1]  # a line break inside a sentence
    assert tokens[-1] == ["Prices", "rose", "3.5", "%", "in", "May", "."]  # after a blank line
    assert [len(s) for s in answer["tags"]] == [len(s) for s in tokens] == [len(s) for s in offsets]
    assert [len(s) for s in answer["confidence"]] == [len(s) for s in tokens]
    for sentence, places in zip(tokens, offsets):
        for token, (start, end) in zip(sentence, places):
            assert RAW_EN[start:end] == token
    starts = [start for places in offsets for start, _ in places]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert answer["tags"][0][1:3] == ["AUX", "PART"]  # did n't


def test_text_without_raw_is_unchanged(mixed):
    answer = tag(mixed, {"model": "en-upos", "text": "He didn't stay.\nShe did ."})
    assert answer["tokens"] == [["He", "didn't", "stay."], ["She", "did", "."]]
    assert "offsets" not in answer


def test_a_model_without_language_refuses_raw_text(mixed):
    assert {m["name"]: m for m in mixed.get("/models").json()["models"]}["pos"]["raw"] is False
    message = error(mixed, {"model": "pos", "text": "He didn't stay.", "raw": True}, 400)
    assert "'pos' has no language" in message and "without \"raw\"" in message


def test_raw_text_requests_are_checked(mixed):
    need_spacy()
    assert "not \"sentences\"" in error(mixed, {"model": "en-upos", "sentences": [["a"]], "raw": True}, 400)
    assert error(mixed, {"model": "en-upos", "raw": True}, 400) == "\"raw\": true takes \"text\" (raw text)"
    assert error(mixed, {"model": "en-upos", "text": " \n\t", "raw": True}, 400).startswith("empty input")
    assert error(mixed, {"model": "en-upos", "text": "x", "raw": "yes"}, 422).startswith("raw:")
    # the limits count the split text: 4 sentences (at most 3), 12 tokens (at most 8)
    message = error(mixed, {"model": "en-upos", "text": "Yes. No. Maybe. Fine.", "raw": True}, 413)
    assert "4 sentences: at most 3" in message
    message = error(mixed, {"model": "en-upos", "text": "Hi. I didn't stay there, no, not at all.", "raw": True}, 413)
    assert "sentence 1 (from character 4): 12 tokens, at most 8" in message


def test_openapi_documents_raw_text(mixed):
    schema = mixed.get("/openapi.json").json()["components"]["schemas"]
    assert "raw text" in schema["TagRequest"]["properties"]["raw"]["description"]
    assert "text[start:end]" in schema["TagResponse"]["properties"]["offsets"]["description"]


# -------------------------------------------------------------------------------------- shipped names
def test_model_table_takes_shipped_names_and_refuses_unknown_ones(tmp_path, monkeypatch):
    need_shipped("en-upos")
    table = serving.ModelTable.load(["en-upos", "tagger=en-upos"])
    assert list(table.models) == ["en-upos", "tagger"] and table.default == "en-upos"
    with pytest.raises(InputError) as info:
        serving.ModelTable.load(["en-nope"])
    message = str(info.value)
    assert "'en-nope'" in message and "\n" not in message
    assert all(name in message for name in shipped.names())
    with pytest.raises(InputError, match="no model at this path"):  # a path is not a name
        serving.ModelTable.load(["./en-nope"])
    # a path that exists wins over the shipped name
    monkeypatch.chdir(tmp_path)
    (tmp_path / "en-upos").mkdir()
    with pytest.raises((InputError, ModelFormatError)) as info:  # the empty folder is read, and is no model
        serving.ModelTable.load(["en-upos"])
    assert "no shipped model" not in str(info.value)


def test_serve_with_an_unknown_shipped_name_is_one_error_line():
    need_shipped()
    proc = subprocess.run([sys.executable, "-m", "structperc", "serve", "--model", "en-nope", "--port", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "'en-nope'" in lines[0], proc.stderr
    assert all(name in lines[0] for name in shipped.names()), lines[0]


def test_serve_with_no_model_serves_the_shipped_ones(shipped_server):
    status, out = shipped_server.request("GET", "/models")
    assert status == 200, out
    assert set(shipped_server.models) <= {m["name"] for m in out["models"]} <= set(shipped.names())
    assert all(m["card"] and m["card"]["description"] for m in out["models"])
    if "en-upos" in shipped_server.models:
        assert out["default"] == "en-upos"
        need_spacy()
        status, answer = shipped_server.request("POST", "/tag", {"text": "He didn't stay.", "raw": True})
        assert status == 200 and answer["model"] == "en-upos", answer
        assert answer["tokens"] == [["He", "did", "n't", "stay", "."]]
        assert answer["offsets"] == [[[0, 2], [3, 6], [6, 9], [10, 14], [14, 15]]]
