"""``POST /explain``: a sentence taken apart into the weights of its score, as ``/tag`` tagged it (the same
labels: in its document's context for NER, the upstream model's POS for en-chunk), the parts summing to
the score, and every refusal a one-line ``{"error"}`` with the service's statuses."""
from __future__ import annotations

import pytest
from servicekit import NER

TOL = 1e-6


def post(server, path: str, body: dict) -> dict:
    status, response = server.request("POST", path, body)
    assert status == 200, response
    return response


def refused(server, body: dict, status: int, *words: str) -> str:
    got, response = server.request("POST", "/explain", body)
    assert got == status, response
    assert isinstance(response, dict) and set(response) <= {"error", "detail"}, response
    message = response["error"]
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def check_parts(explained: dict) -> None:
    """The token parts and ``end`` sum to ``score``; runner-ups are other tags with a margin ≥ 0."""
    total = explained["end"]
    for token in explained["tokens"]:
        total += sum(weight for _, weight in token["features"]) + token["transition"]
        assert [len(pair) for pair in token["features"] + token["conditioned"]] == \
            [2] * (len(token["features"]) + len(token["conditioned"]))
        if token["runner_up"] is not None:
            assert token["runner_up"] != token["label"] and token["margin"] > -TOL
    assert abs(total - explained["score"]) < TOL


def labels(explained: dict) -> list[str]:
    return [t["label"] for t in explained["tokens"]]


@pytest.mark.parametrize("model, sentences", [
    ("pos", [["The", "cat", "sat", "on", "the", "mat", "."], ["Prices", "rose", "sharply", "."]]),
    ("ner", [["Juan", "Pérez", "vive", "en", "Madrid", "."], ["La", "ONU", "abrió", "en", "Ginebra", "."]]),
    ("chunk", [[["Confidence", "NN"], ["in", "IN"], ["the", "DT"], ["pound", "NN"]],
               [["He", "PRP"], ["sat", "VBD"], [".", "."]]]),
])
def test_labels_are_the_tags_of_tag_and_parts_sum_to_the_score(server, model, sentences):
    tagged = post(server, "/tag", {"model": model, "sentences": sentences})
    for s, tags in enumerate(tagged["tags"]):
        explained = post(server, "/explain", {"model": model, "sentences": sentences, "sentence": s})
        assert explained["model"] == model and explained["sentence"] == s
        assert labels(explained) == tags
        assert [t["token"] for t in explained["tokens"]] == tagged["tokens"][s]
        assert explained["tokens"][0]["from"] == "<bos>"
        assert any(t["features"] for t in explained["tokens"])
        check_parts(explained)
    # one sentence alone: "tokens", as a one-sentence /tag request tags it
    alone = post(server, "/explain", {"model": model, "tokens": sentences[0]})
    assert labels(alone) == post(server, "/tag", {"model": model, "sentences": sentences[:1]})["tags"][0]
    assert "sentence" not in alone and "index" not in alone
    check_parts(alone)


def test_index_answers_one_token(server):
    tokens = ["The", "cat", "sat", "on", "the", "mat", "."]
    whole = post(server, "/explain", {"model": "pos", "tokens": tokens})
    one = post(server, "/explain", {"model": "pos", "tokens": tokens, "index": 2})
    assert one["index"] == 2 and one["tokens"] == [whole["tokens"][2]]
    assert one["score"] == whole["score"] and one["end"] == whole["end"]


def test_a_sentence_in_its_document_gets_the_tags_of_tag(server):
    """The NER model's ``doc`` column reads the sentences around each one: a sentence explained in its
    document (only the window around it is read) gets /tag's tags for that document."""
    document = [list(words) for words, _ in (zip(*s) for s in NER)]
    document = (document * 12)[:server.limits["max_sentences"] - 1]  # longer than twice the window
    tagged = post(server, "/tag", {"model": "ner", "sentences": document})
    for s in (0, len(document) // 2, len(document) - 1):
        explained = post(server, "/explain", {"model": "ner", "sentences": document, "sentence": s})
        assert labels(explained) == tagged["tags"][s]
        check_parts(explained)


def test_segmenter_explains_the_characters_of_one_line(server):
    text = "上海体育局召开会议"
    explained = post(server, "/explain", {"model": "cws", "text": text})
    assert [t["token"] for t in explained["tokens"]] == list(text)
    assert set(labels(explained)) <= {"B", "M", "E", "S"}
    check_parts(explained)
    # the labels spell /segment's words
    words, word = [], ""
    for token in explained["tokens"]:
        word += token["token"]
        if token["label"] in ("E", "S"):
            words.append(word)
            word = ""
    assert words == post(server, "/segment", {"model": "cws", "text": text})["words"][0]
    one = post(server, "/explain", {"model": "cws", "text": text, "index": 3})
    assert one["tokens"] == [explained["tokens"][3]] and "sentence" not in one


def test_refusals(server):
    max_tokens, max_sentences = server.limits["max_tokens"], server.limits["max_sentences"]
    refused(server, {"model": "nope", "tokens": ["a"]}, 404, "unknown model", "pos")
    refused(server, {"model": "pos"}, 400, '"tokens"', '"sentences"')
    refused(server, {"model": "pos", "tokens": ["a"], "sentences": [["a"]]}, 400, "either")
    refused(server, {"model": "pos", "tokens": ["a"], "sentence": 0}, 400, '"sentence"')
    refused(server, {"model": "pos", "tokens": []}, 400, "empty input")
    refused(server, {"model": "pos", "tokens": ["a", ""]}, 400, "token 1", "empty")
    refused(server, {"model": "pos", "text": "The cat"}, 400, '"tokens"')
    refused(server, {"model": "pos", "tokens": ["w"] * (max_tokens + 1)}, 413, str(max_tokens))
    refused(server, {"model": "pos", "sentences": [["w"]] * (max_sentences + 1)}, 413, str(max_sentences))
    refused(server, {"model": "pos", "tokens": ["a", "b"], "index": 2}, 400, "index 2", "2 tokens")
    refused(server, {"model": "pos", "sentences": [["a"]], "sentence": 1}, 400, "sentence 1")
    refused(server, {"model": "pos", "tokens": ["a"], "index": -1}, 422, "index")
    refused(server, {"model": "pos", "tokens": "The cat"}, 422, "tokens")
    refused(server, {"model": "pos", "tokens": ["a"], "index": "0"}, 422, "index")
    refused(server, {"model": "pos", "tokens": ["a"], "extra": 1}, 422, "extra")
    # the chunker reads word and POS and has no upstream model: words alone are refused, as /tag does
    refused(server, {"model": "chunk", "tokens": ["Confidence", "in"]}, 400, "token 0", "word, pos")
    # a segmenter takes text: one line, no whitespace, its characters within the token limit
    refused(server, {"model": "cws", "tokens": ["上海"]}, 400, '"text"')
    refused(server, {"model": "cws", "text": "上海 体育局"}, 400, "whitespace")
    refused(server, {"model": "cws", "text": "上海\n体育局"}, 400, "whitespace")
    refused(server, {"model": "cws", "text": " "}, 400, "empty input")
    refused(server, {"model": "cws", "text": "上" * (max_tokens + 1)}, 413, "characters", str(max_tokens))
    refused(server, {"model": "cws", "text": "上海", "index": 2}, 400, "index 2")
    status, response = server.request("POST", "/explain", raw=b"{not json")
    assert status == 400 and "malformed JSON" in response["error"]
    assert server.request("GET", "/health")[0] == 200


def test_openapi_describes_explain(server):
    status, spec = server.request("GET", "/openapi.json")
    assert status == 200
    operation = spec["paths"]["/explain"]["post"]
    assert "runner_up" in operation["description"] and "/tag" in operation["description"]
    assert {"200", "400", "404", "413", "422"} <= set(operation["responses"])
    request = spec["components"]["schemas"]["ExplainRequest"]["properties"]
    assert {"model", "tokens", "sentences", "sentence", "index", "text"} == set(request)
    token = spec["components"]["schemas"]["ExplainedToken"]["properties"]
    assert {"label", "features", "from", "transition", "runner_up", "margin"} <= set(token)


# ------------------------------------------------------------------------------------- the shipped models
def test_shipped_raw_text_explained_as_tag_tagged_it(shipped_server):
    """Raw text through /tag, then each sentence's tokens (words, as /tag answered them) through /explain:
    en-chunk's POS filled by en-xpos as the raw path fills it, NER in its document's context."""
    status, models = shipped_server.request("GET", "/models")
    raw = {m["name"]: m for m in models["models"] if m["raw"]}
    texts = {"en-chunk": "He didn't stay. The cat sat on the mat in Paris.",
             # 48 sentences: longer than es-ner's window either side (20), so /explain reads a part of it;
             # "Lo de Castaño" is tagged by what the text said of "Víctor Castaño" before
             "es-ner": "Ayer habló Víctor Castaño en Madrid. Lo de Castaño fue grande. La ONU abrió en Ginebra. " * 16,
             "nl-ner": "Gisteren sprak Jan Peeters in Brussel. Peeters was blij."}
    checked = [name for name in texts if name in raw]
    if not checked:
        pytest.skip("no shipped model taking raw text (en-chunk, es-ner, nl-ner) in this install")
    for name in checked:
        tagged = post(shipped_server, "/tag", {"model": name, "text": texts[name], "raw": True})
        n = len(tagged["tokens"])
        assert n > 1
        for s in sorted({0, 1, n // 2, n - 2, n - 1}):
            explained = post(shipped_server, "/explain", {"model": name, "sentences": tagged["tokens"],
                                                           "sentence": s})
            assert labels(explained) == tagged["tags"][s], (name, s)
            check_parts(explained)
