"""The `structperc serve` HTTP contract (issue #18), through a real server process: every endpoint, every
error case with its status and a JSON ``error`` line, and requests kept apart when many arrive at once.

The server is the session fixture `server` (models ``chunk`` — the default, reading word and pos —,
``pos``, ``ner``, ``cws``; limits `LIMITS`); the same model directories loaded in-process give the answers
the server must return."""
from __future__ import annotations

import gzip
import http.client
import json
import math
import os
import random
import socket
import urllib.parse
from concurrent.futures import ThreadPoolExecutor

import pytest
from servicekit import LIMITS, NER, SAMPLE_TEST

from structperc import commands

TOL = 1e-9


# ----------------------------------------------------------------------------------------------- helpers
def read_conll(path) -> list[list[list[str]]]:
    """Sentences of a (gzipped) CoNLL file as lists of column-value lists."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        blocks = fh.read().strip().split("\n\n")
    return [[line.split() for line in block.splitlines() if line.strip()] for block in blocks if block.strip()]


SAMPLE = read_conll(SAMPLE_TEST)
#: Chunker input: [word, pos] tokens; tagger input: words.
CHUNK_SENTS = [[[w, p] for w, p, _ in s] for s in SAMPLE[:8]]
WORD_SENTS = [[w for w, _, _ in s] for s in SAMPLE[:8]]
NER_VOCAB = sorted({w for s in NER for w, _ in s} | {"Castaño", "Víctor", "de", "Lo"})


def ok(server, path: str, body: dict) -> dict:
    status, out = server.request("POST", path, body)
    assert status == 200, out
    assert isinstance(out, dict)
    return out


def assert_error(answer: tuple[int, object], status: int) -> str:
    """``answer`` is ``status`` with a one-line JSON ``error`` message; returns the message."""
    got, out = answer
    assert got == status, out
    assert isinstance(out, dict) and isinstance(out.get("error"), str), out
    assert out["error"].strip() and "\n" not in out["error"], out
    return out["error"]


def split_tag(tag: str) -> tuple[str, str]:
    if len(tag) > 2 and tag[1] in "-_":
        return tag[0], tag[2:]
    return ("O", "") if tag == "O" else (tag, "")


def conlleval_spans(tags: list[str]) -> list[dict]:
    """conlleval's chunks of a tag sequence (its startOfChunk/endOfChunk), as the contract's spans."""
    spans, start = [], None
    prev, prev_type = "O", ""
    for i, tag in enumerate(list(tags) + ["O"]):
        cur, cur_type = split_tag(tag)
        end = (prev in "ES" or (prev in "BI" and cur in "BSO")
               or (prev != "O" and prev_type != cur_type))
        begin = (cur in "BS" or (prev in "ESO" and cur in "EI")
                 or (cur != "O" and prev_type != cur_type))
        if start is not None and end:
            spans.append({"start": start, "end": i, "type": prev_type})
            start = None
        if begin:
            start = i
        prev, prev_type = cur, cur_type
    return spans


def same(a, b, tol: float = TOL) -> bool:
    """Equal JSON values, floats within ``tol``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=0, abs_tol=tol)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y, tol) for x, y in zip(a, b))
    return a == b


def data_labels(model) -> list[str]:
    """A loaded model's labels in its data's scheme, sorted (span labels learnt in IOBES read as IOB2)."""
    task = model.model_.task
    if task.metric == "span" and task.model_scheme != task.scheme:
        from structperc.labels.partial import label_projection

        return sorted(label_projection(model.labels_, task.model_scheme, task.scheme))
    return sorted(model.labels_)


def tuples(sentences):
    return [[tuple(t) if isinstance(t, list) else t for t in s] for s in sentences]


@pytest.fixture(scope="module")
def loaded(service_models):
    """The served models, loaded in-process."""
    return {name: commands.load(path) for name, path in service_models.items()}


@pytest.fixture(scope="module")
def ner_document(loaded):
    """NER sentences whose tags as one document differ from their tags sentence by sentence (the
    document-level features matter), so that mixing or splitting documents shows."""
    model = loaded["ner"]
    rng = random.Random(0)
    for _ in range(2000):
        doc = [[rng.choice(NER_VOCAB) for _ in range(rng.randint(3, 7))] for _ in range(4)]
        if model.predict(doc) != [model.predict([s])[0] for s in doc]:
            return doc
    pytest.fail("no NER document found whose document-level features change its tags")


# ----------------------------------------------------------------------------------------------- /health, /models
def test_health(server):
    assert server.request("GET", "/health") == (200, {"status": "ok"})


def test_models(server, service_models, loaded):
    status, out = server.request("GET", "/models")
    assert status == 200, out
    assert out["default"] == "chunk"
    models = {m["name"]: m for m in out["models"]}
    assert len(models) == len(out["models"]) == 4
    assert set(models) == {"chunk", "pos", "ner", "cws"}
    expected_task = {"chunk": "chunk", "pos": "pos", "ner": "ner", "cws": "cws"}
    for name, m in models.items():
        model = loaded[name]
        assert m["task"] == expected_task[name] == model.model_.task.name
        assert m["endpoint"] == ("/segment" if name == "cws" else "/tag")
        assert m["labels"] == data_labels(model), name
        assert m["spans"] is (name in ("chunk", "ner"))
        assert m["scheme"] == ("iob2" if name in ("chunk", "ner") else None)
        for flag in ("marginals", "nbest", "calibrated"):
            assert isinstance(m[flag], bool), (name, flag)
        assert m["calibrated"] is (model.calibration_ is not None)
        assert isinstance(m["columns"], list) and all(isinstance(c, str) for c in m["columns"])
    assert models["chunk"]["columns"] == ["word", "pos"]
    assert models["pos"]["columns"] == ["word"]
    assert models["ner"]["columns"] == ["word"]
    assert all(models[n]["marginals"] and models[n]["nbest"] for n in ("chunk", "pos", "ner"))
    assert data_labels(loaded["ner"]) == ["B-LOC", "B-ORG", "B-PER", "I-PER", "O"]


def test_openapi_and_page(server):
    status, spec = server.request("GET", "/openapi.json")
    assert status == 200
    assert {"/tag", "/segment", "/models", "/health"} <= set(spec["paths"])
    status, page = server.request("GET", "/")
    assert status == 200 and isinstance(page, str) and "<html" in page.lower()


def test_docs_and_page_load_nothing_from_the_network(server):
    """/docs and / name only this server's own files (the machine running it may be offline)."""
    import re

    for path in ("/docs", "/"):
        status, html = server.request("GET", path)
        assert status == 200 and isinstance(html, str)
        links = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert links and not [u for u in links if re.match(r"(?:[a-z]+:)?//", u) and "127.0.0.1" not in u], links
        for url in links:
            if url.endswith((".js", ".css")):
                local = url if url.startswith("/") else "/" + url
                assert server.request("GET", local)[0] == 200, url


# ----------------------------------------------------------------------------------------------- /tag
def test_tag_string_tokens(server, loaded):
    out = ok(server, "/tag", {"model": "pos", "sentences": WORD_SENTS[:3]})
    assert out["model"] == "pos"
    assert out["tokens"] == WORD_SENTS[:3]
    assert out["tags"] == loaded["pos"].predict(WORD_SENTS[:3])
    assert all(len(t) == len(s) for t, s in zip(out["tags"], WORD_SENTS))
    off = {"model": "pos", "sentences": WORD_SENTS[:3], "nbest": 0, "marginals": False}  # the defaults
    assert ok(server, "/tag", off) == out
    assert not {"spans", "confidence", "marginals", "nbest"} & set(out)


def test_tag_column_lists_and_default_model(server, loaded):
    out = ok(server, "/tag", {"sentences": CHUNK_SENTS})  # no "model": the default, chunk
    assert out["model"] == "chunk"
    assert out["tokens"] == WORD_SENTS
    assert out["tags"] == loaded["chunk"].predict(tuples(CHUNK_SENTS))
    assert out == ok(server, "/tag", {"model": "chunk", "sentences": CHUNK_SENTS})


def test_tag_text(server, loaded):
    lines = [" ".join(s) for s in WORD_SENTS[:3]]
    text = "\n".join([lines[0], "", "   ", "\t" + lines[1].replace(" ", "  \t "), lines[2] + "  ", ""])
    out = ok(server, "/tag", {"model": "pos", "text": text})
    assert out["tokens"] == WORD_SENTS[:3]
    assert out["tags"] == loaded["pos"].predict(WORD_SENTS[:3])
    assert out["tags"] == ok(server, "/tag", {"model": "pos", "sentences": WORD_SENTS[:3]})["tags"]


@pytest.mark.parametrize("name", ["chunk", "ner"])
def test_spans_read_the_tags(server, name, ner_document):
    sentences = CHUNK_SENTS if name == "chunk" else ner_document
    out = ok(server, "/tag", {"model": name, "sentences": sentences})
    assert len(out["spans"]) == len(sentences)
    assert any(out["spans"])
    for tags, spans in zip(out["tags"], out["spans"]):
        assert spans == conlleval_spans(tags)


def test_conlleval_reading_of_ill_formed_tags():
    """The reference reading the spans are checked against: an I- after O or another type starts a span."""
    assert conlleval_spans(["I-NP", "I-NP", "O", "B-VP", "I-NP", "B-NP", "B-NP"]) == [
        {"start": 0, "end": 2, "type": "NP"}, {"start": 3, "end": 4, "type": "VP"},
        {"start": 4, "end": 5, "type": "NP"}, {"start": 5, "end": 6, "type": "NP"},
        {"start": 6, "end": 7, "type": "NP"}]


@pytest.mark.parametrize("name", ["chunk", "pos", "ner"])
def test_marginals(server, loaded, name, ner_document):
    sentences = {"chunk": CHUNK_SENTS, "pos": WORD_SENTS, "ner": ner_document}[name]
    out = ok(server, "/tag", {"model": name, "sentences": sentences, "marginals": True})
    plain = ok(server, "/tag", {"model": name, "sentences": sentences})
    assert out["tags"] == plain["tags"]
    labels = set(data_labels(loaded[name]))
    expected = loaded[name].predict_marginals(tuples(sentences))
    assert len(out["marginals"]) == len(out["confidence"]) == len(sentences)
    for tags, conf, dists, want in zip(out["tags"], out["confidence"], out["marginals"], expected):
        assert len(tags) == len(conf) == len(dists) == len(want)
        for tag, p, dist, w in zip(tags, conf, dists, want):
            assert set(dist) == labels
            assert abs(sum(dist.values()) - 1) <= 1e-6
            assert 0 <= p <= 1 and p == dist[tag]
            assert same(dist, w)


@pytest.mark.parametrize("name,k", [("chunk", 3), ("pos", 5), ("ner", 4), ("ner", 1)])
def test_nbest(server, loaded, name, k, ner_document):
    sentences = {"chunk": CHUNK_SENTS[:4], "pos": WORD_SENTS[:4], "ner": ner_document}[name]
    out = ok(server, "/tag", {"model": name, "sentences": sentences, "nbest": k})
    expected = loaded[name].predict_nbest(tuples(sentences), k)
    assert len(out["nbest"]) == len(sentences)
    for tags, paths, want in zip(out["tags"], out["nbest"], expected):
        assert 1 <= len(paths) <= k
        assert paths[0]["tags"] == tags
        scores = [p["score"] for p in paths]
        assert all(a >= b for a, b in zip(scores, scores[1:]))
        for p in paths:
            assert len(p["tags"]) == len(tags)
            assert 0 < p["probability"] <= 1, p
        assert [p["tags"] for p in paths] == [t for t, _ in want]
        assert same([p["probability"] for p in paths], [q for _, q in want])
    # more paths than a short sentence has: as many as there are, each path once
    one = ok(server, "/tag", {"model": "ner", "sentences": [["Madrid"]], "nbest": LIMITS["max_nbest"]})
    paths = [tuple(p["tags"]) for p in one["nbest"][0]]
    assert 1 <= len(paths) <= LIMITS["max_nbest"] and len(set(paths)) == len(paths)


def test_nbest_and_marginals_together(server):
    out = ok(server, "/tag", {"model": "chunk", "sentences": CHUNK_SENTS[:2], "nbest": 2, "marginals": True})
    assert {"tags", "confidence", "marginals", "nbest", "spans"} <= set(out)
    assert [paths[0]["tags"] for paths in out["nbest"]] == out["tags"]


# ----------------------------------------------------------------------------------------------- /segment
def test_segment(server, loaded):
    lines = ["上海体育局召开会议", "", "北京欢迎你", " 上海 欢迎你 ", "体育局"]
    out = ok(server, "/segment", {"model": "cws", "text": "\n".join(lines)})
    assert out["model"] == "cws"
    assert len(out["words"]) == len(lines)
    for line, words in zip(lines, out["words"]):
        assert "".join(words) == "".join(line.split())
        assert all(w and not any(c.isspace() for c in w) for w in words)
    assert out["words"][1] == []
    assert out["words"][0] == loaded["cws"].segment(lines[0])
    assert out["words"][2] == loaded["cws"].segment(lines[2])


# ----------------------------------------------------------------------------------------------- errors
TAG_400 = {
    "both sentences and text": {"model": "pos", "sentences": [["a"]], "text": "a"},
    "neither sentences nor text": {"model": "pos"},
    "neither, default model": {},
    "empty sentences list": {"model": "pos", "sentences": []},
    "empty sentences list, default model": {"sentences": []},
    "text of blanks": {"model": "pos", "text": " \n\t\n  \n"},
    "empty text": {"model": "pos", "text": ""},
    "empty token string": {"model": "pos", "sentences": [["a", ""]]},
    "empty token value in a column list": {"model": "chunk", "sentences": [[["a", "DT"], ["", "NN"]]]},
    "one column value for chunk": {"model": "chunk", "sentences": [[["Confidence"], ["in"]]]},
    "three column values for chunk": {"model": "chunk", "sentences": [[["Confidence", "NN", "B-NP"]]]},
    "string tokens for chunk": {"model": "chunk", "sentences": [["Confidence", "in"]]},
    "one bad token among good ones": {"sentences": [[["the", "DT"], ["pound", "NN", "x"]]]},
    "text for the two-column chunk model": {"model": "chunk", "text": "Confidence NN\n"},
    "text for the default (chunk) model": {"text": "Confidence in the pound"},
    "/tag on cws": {"model": "cws", "text": "上海欢迎你"},
    "/tag on cws with sentences": {"model": "cws", "sentences": [["上", "海"]]},
}

TAG_422 = {
    "sentences a string": {"model": "pos", "sentences": "a b c"},
    "sentences a list of strings": {"model": "pos", "sentences": ["a b c"]},
    "sentences an object": {"model": "pos", "sentences": {"a": ["b"]}},
    "a token a number": {"model": "pos", "sentences": [["a", 3]]},
    "a token null": {"model": "pos", "sentences": [["a", None]]},
    "a column value a number": {"model": "chunk", "sentences": [[["a", 1]]]},
    "text a list": {"model": "pos", "text": ["a b"]},
    "model a number": {"model": 3, "sentences": [["a"]]},
    "nbest negative": {"model": "pos", "sentences": [["a"]], "nbest": -1},
    "nbest above the limit": {"model": "pos", "sentences": [["a"]], "nbest": LIMITS["max_nbest"] + 1},
    "nbest a fraction": {"model": "pos", "sentences": [["a"]], "nbest": 2.5},
    "nbest a string": {"model": "pos", "sentences": [["a"]], "nbest": "3"},
    "marginals a string": {"model": "pos", "sentences": [["a"]], "marginals": "yes"},
    "marginals a number": {"model": "pos", "sentences": [["a"]], "marginals": 2},
    "unknown field": {"model": "pos", "sentences": [["a"]], "tokens": [["a"]]},
    "unknown field, misspelt option": {"model": "pos", "sentences": [["a"]], "marginal": True},
    "body a list": [["a"]],
    "body a string": "a b c",
}

SEGMENT_ERRORS = {
    "segment on pos": ({"model": "pos", "text": "a b"}, 400),
    "segment on ner": ({"model": "ner", "text": "Madrid"}, 400),
    "segment text a number": ({"model": "cws", "text": 3}, 422),
    "segment unknown field": ({"model": "cws", "text": "上海", "nbest": 2}, 422),
    "segment sentences": ({"model": "cws", "sentences": [["上海"]]}, 422),
    "segment unknown model": ({"model": "nosuch", "text": "上海"}, 404),
}


@pytest.mark.parametrize("body", TAG_400.values(), ids=TAG_400.keys())
def test_tag_400(server, body):
    assert_error(server.request("POST", "/tag", body), 400)


@pytest.mark.parametrize("body", TAG_422.values(), ids=TAG_422.keys())
def test_tag_422(server, body):
    assert_error(server.request("POST", "/tag", body), 422)


@pytest.mark.parametrize("body,status", SEGMENT_ERRORS.values(), ids=SEGMENT_ERRORS.keys())
def test_segment_errors(server, body, status):
    assert_error(server.request("POST", "/segment", body), status)


def test_segment_without_a_model_goes_to_the_segmenter_not_the_default_tagger(server):
    status, answer = server.request("POST", "/segment", {"text": "a b"})
    assert status == 200 and answer["model"] == "cws", answer


@pytest.mark.parametrize("raw", [b"{", b'{"sentences": [["a"]]', b"not json", b'{"sentences": [["a"]]}}',
                                 b"\xff\xfe", b"", b'{"sentences": [["a"],]}'],
                         ids=["open brace", "unclosed", "not json", "trailing brace", "not utf-8", "empty",
                              "trailing comma"])
@pytest.mark.parametrize("path", ["/tag", "/segment"])
def test_malformed_json(server, path, raw):
    assert_error(server.request("POST", path, raw=raw), 400)


def test_unknown_model_lists_the_known_ones(server):
    for path, body in [("/tag", {"model": "nosuch", "sentences": [["a"]]}),
                       ("/tag", {"model": "nosuch", "text": "a"}),
                       ("/segment", {"model": "nosuch", "text": "上海"}),
                       ("/tag", {"model": "", "sentences": [["a"]]}),
                       ("/tag", {"model": "CHUNK", "sentences": [[["a", "DT"]]]})]:
        message = assert_error(server.request("POST", path, body), 404)
        assert all(name in message for name in ("chunk", "pos", "ner", "cws")), message


def test_model_names_are_never_paths(server, service_models):
    """A model name is looked up in the table of loaded models only: names that are paths — even paths
    of real model directories, relative to the server's directory or to a served model's — are 404."""
    pos, cws = service_models["pos"], service_models["cws"]
    names = ["../cws", "../pos", "/etc/passwd", "..%2Fcws", "..%2Fpos", "..\\cws", "./cws", "cws/", "cws/../cws",
             "cws/.", str(pos), str(cws), os.path.relpath(pos), os.path.relpath(cws), pos.as_uri(),
             "../../../../../../etc/passwd", "%2e%2e/cws", "pos\x00", "pos/"]
    for name in names:
        for path, body in [("/tag", {"model": name, "sentences": [["Madrid"]]}),
                           ("/tag", {"model": name, "text": "Madrid"}),
                           ("/segment", {"model": name, "text": "上海欢迎你"})]:
            status, out = server.request("POST", path, body)
            assert status == 404, (name, path, out)
            assert isinstance(out, dict) and isinstance(out.get("error"), str), out
    assert server.request("GET", "/health") == (200, {"status": "ok"})


def test_too_many_sentences(server):
    n = LIMITS["max_sentences"]
    assert ok(server, "/tag", {"model": "pos", "sentences": [["a", "b"]] * n})["tags"]
    assert_error(server.request("POST", "/tag", {"model": "pos", "sentences": [["a", "b"]] * (n + 1)}), 413)
    assert_error(server.request("POST", "/tag", {"model": "pos", "text": "a b\n" * (n + 1)}), 413)
    chunk = [[["a", "DT"]]] * (n + 1)
    assert_error(server.request("POST", "/tag", {"model": "chunk", "sentences": chunk}), 413)


def test_sentence_too_long(server):
    n = LIMITS["max_tokens"]
    assert ok(server, "/tag", {"model": "pos", "sentences": [["a"] * n]})["tags"]
    assert_error(server.request("POST", "/tag", {"model": "pos", "sentences": [["a"], ["a"] * (n + 1)]}), 413)
    assert_error(server.request("POST", "/tag", {"model": "pos", "text": "a\n" + "a " * (n + 1)}), 413)
    assert_error(server.request("POST", "/tag", {"model": "chunk", "sentences": [[["a", "DT"]] * (n + 1)]}), 413)


def _padded(size: int) -> bytes:
    """A valid /tag body of exactly ``size`` bytes (trailing JSON whitespace)."""
    body = json.dumps({"model": "pos", "sentences": [["a", "b"]]}).encode()
    return body + b" " * (size - len(body))


def post_raw(server, path: str, body: bytes, *, chunked: bool, piece: int = 4096) -> tuple[int, object]:
    """POST ``body`` over a plain socket, with Content-Length or chunked without it, and read the answer
    even when the server answers before it has read the whole body and closes (urllib would raise
    BrokenPipeError while still sending, and lose the answer)."""
    url = urllib.parse.urlsplit(server.url)
    framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(body)}"
    head = (f"POST {path} HTTP/1.1\r\nHost: {url.netloc}\r\nContent-Type: application/json\r\n"
            f"{framing}\r\nConnection: close\r\n\r\n").encode()
    pieces = [body[i:i + piece] for i in range(0, len(body), piece)]
    if chunked:
        pieces = [b"%x\r\n%s\r\n" % (len(p), p) for p in pieces] + [b"0\r\n\r\n"]
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        try:
            sock.sendall(head)
            for p in pieces:
                sock.sendall(p)
        except (BrokenPipeError, ConnectionResetError):
            pass  # answered early and closed: the answer is in the socket's receive buffer
        response = http.client.HTTPResponse(sock)
        response.begin()
        text = response.read().decode("utf-8")
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def test_body_over_the_byte_limit(server):
    limit = LIMITS["max_body_bytes"]
    status, out = post_raw(server, "/tag", _padded(limit - 100), chunked=False)
    assert status == 200, out
    assert out["tokens"] == [["a", "b"]]
    assert_error(post_raw(server, "/tag", _padded(limit + 1), chunked=False), 413)
    assert_error(post_raw(server, "/tag", _padded(4 * limit), chunked=False), 413)
    assert_error(post_raw(server, "/segment", _padded(limit + 1000), chunked=False), 413)


def test_chunked_body_over_the_byte_limit(server):
    limit = LIMITS["max_body_bytes"]
    status, out = post_raw(server, "/tag", _padded(limit - 100), chunked=True)
    assert status == 200, out
    assert out["tokens"] == [["a", "b"]]
    assert_error(post_raw(server, "/tag", _padded(limit + 1), chunked=True), 413)
    assert_error(post_raw(server, "/tag", _padded(4 * limit), chunked=True), 413)
    assert_error(post_raw(server, "/segment", _padded(limit + 5000), chunked=True, piece=1000), 413)


@pytest.mark.parametrize("method,path,status", [
    ("GET", "/tag", 405), ("GET", "/segment", 405), ("PUT", "/tag", 405), ("DELETE", "/segment", 405),
    ("POST", "/health", 405), ("POST", "/models", 405),
    ("GET", "/nope", 404), ("POST", "/tags", 404), ("GET", "/tag/chunk", 404), ("POST", "/../tag", 404),
])
def test_wrong_method_and_unknown_path(server, method, path, status):
    body = {"sentences": [["a"]]} if method in ("POST", "PUT") else None
    assert_error(server.request(method, path, body), status)


# ----------------------------------------------------------------------------------------------- concurrency
def _requests(ner_doc) -> list[tuple[str, object]]:
    """Requests of every model and option (and a few errors), all different from one another."""
    pos_text = "\n".join(" ".join(s) for s in WORD_SENTS[2:6])
    return [
        ("/tag", {"sentences": CHUNK_SENTS[:3]}),
        ("/tag", {"model": "chunk", "sentences": CHUNK_SENTS[3:5], "marginals": True}),
        ("/tag", {"model": "chunk", "sentences": CHUNK_SENTS[5:6], "nbest": 3}),
        ("/tag", {"model": "chunk", "sentences": CHUNK_SENTS[6:8], "marginals": True, "nbest": 2}),
        ("/tag", {"model": "pos", "sentences": WORD_SENTS[:2]}),
        ("/tag", {"model": "pos", "text": pos_text, "marginals": True}),
        ("/tag", {"model": "pos", "sentences": WORD_SENTS[4:7], "nbest": 2}),
        ("/tag", {"model": "pos", "sentences": [WORD_SENTS[7]]}),
        ("/tag", {"model": "ner", "sentences": ner_doc}),
        ("/tag", {"model": "ner", "sentences": ner_doc[:1]}),
        ("/tag", {"model": "ner", "sentences": ner_doc[1:], "marginals": True}),
        ("/tag", {"model": "ner", "text": "\n".join(" ".join(s) for s in ner_doc), "nbest": 3}),
        ("/segment", {"model": "cws", "text": "上海体育局召开会议\n\n北京欢迎你"}),
        ("/segment", {"model": "cws", "text": "上海欢迎你"}),
        ("/tag", {"model": "pos", "sentences": []}),
        ("/tag", {"model": "nosuch", "sentences": [["a"]]}),
    ]


def test_concurrent_requests_get_their_own_answers(server, ner_document):
    requests = _requests(ner_document)
    alone = [server.request("POST", path, body) for path, body in requests]
    assert [s for s, _ in alone] == [200] * 14 + [400, 404]
    assert len({json.dumps(out, sort_keys=True) for _, out in alone}) == len(requests)

    def worker(seed: int) -> list[tuple[int, tuple]]:
        rng = random.Random(seed)
        picks = [rng.randrange(len(requests)) for _ in range(20)]
        return [(i, server.request("POST", *requests[i])) for i in picks]

    with ThreadPoolExecutor(16) as pool:
        results = [r for rs in pool.map(worker, range(16)) for r in rs]
    assert len(results) == 16 * 20
    wrong = [(i, got) for i, got in results if got[0] != alone[i][0] or not same(got[1], alone[i][1])]
    assert not wrong, f"{len(wrong)} of {len(results)} answers differ from the request's answer alone: {wrong[:2]}"


def test_documents_are_kept_apart(server, loaded, ner_document):
    """One request is one document: its sentences see each other through the NER model's document
    features, and never the sentences of requests tagged at the same time."""
    model = loaded["ner"]
    whole = {"model": "ner", "sentences": ner_document}
    singles = [{"model": "ner", "sentences": [s]} for s in ner_document]
    whole_alone = ok(server, "/tag", whole)["tags"]
    singles_alone = [ok(server, "/tag", b)["tags"] for b in singles]
    assert whole_alone == model.predict(ner_document)
    assert singles_alone == [model.predict([s]) for s in ner_document]
    assert whole_alone != [t[0] for t in singles_alone]  # the fixture's point: the document matters

    bodies = ([whole] + singles) * 8
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda b: server.request("POST", "/tag", b), bodies))
    for body, (status, out) in zip(bodies, answers):
        assert status == 200, out
        want = whole_alone if body is whole else singles_alone[singles.index(body)]
        assert out["tags"] == want


# ----------------------------------------------------------------------------------------------- still alive
def test_server_survived_everything(server):
    """Last in the file: after every error case above, the process is up and answers."""
    assert server.process.poll() is None
    assert server.request("GET", "/health") == (200, {"status": "ok"})
    assert ok(server, "/tag", {"model": "pos", "sentences": WORD_SENTS[:1]})["tokens"] == WORD_SENTS[:1]
