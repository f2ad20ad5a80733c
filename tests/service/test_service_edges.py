"""Service defects a new user met, each fixed and held here: lone surrogates answered 400 (not a 500 after the
model's work), ``/segment`` within the limits and choosing a segmentation model by default, its lines split as
`structperc segment` splits a file, an archive named after itself, and the port a ``--port 0`` server took."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request

import pytest
from servicekit import LIMITS

from structperc.model import shipped
from structperc.service import serving

pytest.importorskip("fastapi", reason="the service needs the serve extra: pip install -e '.[serve]'")


def _need(*names: str) -> None:
    missing = [n for n in names if n not in shipped.names()]
    if missing:
        pytest.skip(f"shipped model(s) {', '.join(missing)} not built (python scripts/build_models.py NAME)")


@pytest.fixture(scope="module")
def client():
    """en-upos (the default) and zh-seg, with /segment limits small enough to reach."""
    _need("en-upos", "zh-seg")
    from fastapi.testclient import TestClient

    from structperc.service.app import create_app

    table = serving.ModelTable.load(["en-upos", "zh-seg"])
    with TestClient(create_app(table, serving.Limits(**{**LIMITS, "max_sentences": 3, "max_tokens": 8}))) as c:
        yield c


def _post(client, path: str, body: dict):
    # json.dumps escapes a lone surrogate as "\ud800", as a JavaScript client's JSON.stringify does
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


@pytest.mark.parametrize("path, body, where", [
    ("/tag", {"text": "a \ud800 b"}, "text"),
    ("/tag", {"text": "a \ud800 b", "raw": True}, "text"),
    ("/tag", {"sentences": [["a", "\udfff"]]}, "sentences.0.1"),
    ("/segment", {"text": "我爱\ud800北京"}, "text"),
    ("/explain", {"tokens": ["a", "\ud800"]}, "tokens.1"),
    ("/tag", {"text": "ok", "model": "x\ud800"}, "model"),
])
def test_a_lone_surrogate_is_bad_input(client, path, body, where):
    r = _post(client, path, body)
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith(f"{where}: not valid Unicode: a lone surrogate")
    assert _post(client, "/tag", {"text": "The cat sat ."}).status_code == 200  # and the server goes on


def test_segment_keeps_to_the_limits(client):
    assert _post(client, "/segment", {"text": "上海\n北京\n天津\n"}).status_code == 200  # 3 lines: the limit
    r = _post(client, "/segment", {"text": "上\n海\n北\n京"})
    assert r.status_code == 413 and r.json()["error"] == "4 lines: at most 3 a request"
    assert _post(client, "/segment", {"text": "上海 体育局 召开"}).status_code == 200  # 7 characters, spaces aside
    r = _post(client, "/segment", {"text": "上海\n上海体育局召开会议"})
    assert r.status_code == 413 and r.json()["error"] == "line 1: 9 characters, at most 8"


def test_segment_without_a_model_takes_the_segmenter(client):
    r = _post(client, "/segment", {"text": "上海体育局"})
    assert r.status_code == 200 and r.json()["model"] == "zh-seg"


def test_segment_with_no_segmenter_served_says_so():
    _need("en-upos")
    from fastapi.testclient import TestClient

    from structperc.service.app import create_app

    with TestClient(create_app(serving.ModelTable.load(["en-upos"]))) as c:
        r = _post(c, "/segment", {"text": "上海"})
    assert r.status_code == 400
    assert r.json()["error"] == "no word segmentation model is served (the default, 'en-upos', is a pos tagger: " \
                                "use /tag)"


def test_segment_lines_end_at_newlines_alone(client):
    """As `structperc segment` reads a file: CR LF ends a line, a lone CR or U+2028 is whitespace inside one."""
    r = _post(client, "/segment", {"text": "ab\u2028北京\r\n天津\r上海\n"})
    assert r.status_code == 200
    assert r.json()["words"] == [["ab", "北京"], ["天津", "上海"]]


def test_raw_without_text_names_what_is_missing(client):
    r = _post(client, "/tag", {"raw": True})
    assert r.status_code == 400 and r.json()["error"] == "\"raw\": true takes \"text\" (raw text)"
    r = _post(client, "/tag", {"raw": True, "sentences": [["a"]]})
    assert r.json()["error"] == "\"raw\": true takes \"text\" (raw text), not \"sentences\""


def test_an_archive_is_named_after_itself(tmp_path):
    assert serving.parse_spec(str(tmp_path / "en-upos.zip"))[0] == "en-upos"
    (tmp_path / "pos").mkdir()
    assert serving.parse_spec(str(tmp_path / "pos" / "model.zip"))[0] == "pos"
    assert serving.parse_spec(str(tmp_path / "pos"))[0] == "pos"


def test_serve_on_port_0_reports_the_port_it_took():
    """The ready line named port 0, where the system had chosen another: the client had nowhere to go."""
    _need("en-upos")
    proc = subprocess.Popen([sys.executable, "-m", "structperc.cli", "serve", "--model", "en-upos", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        port = int(re.search(r"http://127\.0\.0\.1:(\d+) ", line).group(1))  # type: ignore[union-attr]
        assert port != 0, line
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as answer:
            assert json.load(answer) == {"status": "ok"}
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
