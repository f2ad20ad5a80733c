"""Fixtures and data of the HTTP service tests (`conftest.py` star-imports them; tests import data from
``servicekit``): small models of every task, trained once per session from the
shipped CoNLL-2000 sample and inline data (no corpus download, so these tests never skip), and a real
`structperc serve` process on loopback with small limits the tests know."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from testkit import REPO

SAMPLE_TRAIN = REPO / "corpora" / "conll2000-train-sample.txt.gz"
SAMPLE_TEST = REPO / "corpora" / "conll2000-test-sample.txt.gz"

#: A toy NER corpus in IOB2 (word, ner); enough for a model that tags these words back.
NER = [
    [("Juan", "B-PER"), ("Pérez", "I-PER"), ("vive", "O"), ("en", "O"), ("Madrid", "B-LOC"), (".", "O")],
    [("La", "O"), ("ONU", "B-ORG"), ("abrió", "O"), ("en", "O"), ("Ginebra", "B-LOC"), (".", "O")],
    [("María", "B-PER"), ("trabaja", "O"), ("para", "O"), ("la", "O"), ("ONU", "B-ORG"), (".", "O")],
    [("Pedro", "B-PER"), ("García", "I-PER"), ("visitó", "O"), ("Madrid", "B-LOC"), ("ayer", "O"), (".", "O")],
] * 5
#: Segmented Chinese for a toy word segmenter.
CWS = ["上海 体育局 召开 会议", "体育局 召开 会议", "北京 欢迎 你", "上海 欢迎 你"] * 5

#: The limits the test server runs with (small, so the tests can cross them cheaply).
LIMITS = {"max_body_bytes": 65536, "max_sentences": 50, "max_tokens": 200, "max_nbest": 5}


def _conll(sentences) -> str:
    return "".join("\n".join(" ".join(tok) for tok in s) + "\n\n" for s in sentences)


@pytest.fixture(scope="session")
def service_models(tmp_path_factory) -> dict[str, Path]:
    """Model directories by name: ``chunk`` (reads word and pos), ``pos`` (reads words), ``ner``
    (words; document-level features), ``cws`` (a segmenter)."""
    from structperc import Segmenter, Tagger

    root = tmp_path_factory.mktemp("service-models")
    out = {"chunk": root / "chunk", "pos": root / "pos", "ner": root / "ner", "cws": root / "cws"}
    Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=3).fit(str(SAMPLE_TRAIN)).save(out["chunk"])
    Tagger(task="pos", columns=["word", "pos", "_"], tag_column="pos", epochs=3).fit(str(SAMPLE_TRAIN)) \
        .save(out["pos"])
    ner_file = root / "ner.txt"
    ner_file.write_text(_conll(NER), encoding="utf-8")
    Tagger(task="ner", columns=["word", "ner"], epochs=5).fit(str(ner_file)).save(out["ner"])
    Segmenter(epochs=5).fit(CWS).save(out["cws"])
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A running ``structperc serve``; ``url`` is its base address, ``log`` what it printed."""

    url: str
    process: subprocess.Popen
    models: dict[str, Path]
    limits: dict[str, int] = field(default_factory=lambda: dict(LIMITS))
    log: Path | None = None

    def request(self, method: str, path: str, body=None, *, raw: bytes | None = None,
                headers: dict[str, str] | None = None, timeout: float = 30) -> tuple[int, dict | str]:
        """(status, JSON body — or text when it is not JSON) of one request."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                status, text = resp.status, resp.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode("utf-8")
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text


def start_server(models: dict[str, Path], log: Path, limits: dict[str, int] | None = None,
                 timeout: float = 60) -> Server:
    """Start ``python -m structperc serve`` with ``models`` (NAME=DIR, the first the default; none:
    every shipped model) on a free loopback port and wait until ``/health`` answers."""
    limits = dict(LIMITS if limits is None else limits)
    port = free_port()
    cmd = [sys.executable, "-m", "structperc", "serve", "--host", "127.0.0.1", "--port", str(port)]
    for name, path in models.items():
        cmd += ["--model", f"{name}={path}"]
    for key, value in limits.items():
        cmd += ["--" + key.replace("_", "-"), str(value)]
    fh = open(log, "wb")
    process = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    server = Server(f"http://127.0.0.1:{port}", process, dict(models), limits, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            fh.close()
            raise RuntimeError(f"structperc serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if server.request("GET", "/health", timeout=2)[0] == 200:
                fh.close()
                return server
        except OSError:
            pass
        time.sleep(0.1)
    process.kill()
    fh.close()
    raise RuntimeError(f"structperc serve did not answer in {timeout} s:\n{log.read_text()}")


def stop_server(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - uvicorn stops on SIGTERM
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def server(service_models, tmp_path_factory):
    """One server for the session with the four models (``chunk`` is the default) and `LIMITS`."""
    for module in ("fastapi", "uvicorn"):  # in the test extra: CI never skips
        pytest.importorskip(module, reason="the service needs the serve extra: pip install -e '.[serve]'")
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    srv = start_server(service_models, log)
    yield srv
    stop_server(srv)


@pytest.fixture(scope="session")
def shipped_server(tmp_path_factory):
    """``structperc serve`` with no --model: every shipped model (skips, saying why, if none is
    installed); `LIMITS`. Its ``models`` are the shipped models' files when it started."""
    for module in ("fastapi", "uvicorn"):
        pytest.importorskip(module, reason="the service needs the serve extra: pip install -e '.[serve]'")
    from structperc.model import shipped

    names = shipped.names()
    if not names:
        pytest.skip(f"no shipped models in {shipped.FOLDER} (built by scripts/build_models.py NAME)")
    log = tmp_path_factory.mktemp("serve-shipped") / "serve.log"
    srv = start_server({}, log, timeout=180)
    srv.models = {name: shipped.path_of(name) for name in names}
    yield srv
    stop_server(srv)
