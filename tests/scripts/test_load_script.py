"""`scripts/bench/load_serve.py`, run as a user runs it (a process, from the repository root): it stays on
loopback, sends token forms the way a client would, counts a wrong answer as an error, and (smoke test) runs
a tiny bounded load against a real `structperc serve` to the end. The answers it checks come from a stand-in
service on 127.0.0.1 that records what it is sent and answers right or wrong on purpose."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from testkit import REPO, SAMPLE_TRAIN

SCRIPT = REPO / "scripts" / "bench" / "load_serve.py"
#: A small bounded run: two single-sentence requests, one request of two sentences, one GET /health.
SMALL = ["--requests", "2", "--batch", "2", "--batch-requests", "1", "--ceiling", "1", "--warmup", "0",
         "--concurrency", "1", "--duration", "60", "--json"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO)


def summary(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout[done.stdout.index("\n{") + 1:])


# --------------------------------------------------------------------------------- a stand-in service
def right(body: dict) -> tuple[int, dict]:
    tags = [["X"] * len(s) for s in body["sentences"]]
    answer: dict = {"tags": tags}
    if body.get("marginals"):
        answer["marginals"] = [[{"X": 1.0}] * len(s) for s in body["sentences"]]
    return 200, answer


ANSWERS = {
    "right": right,
    "one tag list short": lambda body: (200, {"tags": right(body)[1]["tags"][:-1]}),
    "one tag short": lambda body: (200, {"tags": [t[:-1] for t in right(body)[1]["tags"]]}),
    "too big": lambda body: (413, {"error": "too big"}),
    "no marginals": lambda body: (200, {"tags": right(body)[1]["tags"]}),
}


class Service(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answer) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.answer, self.received = answer, []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real service

    def log_message(self, *args) -> None:
        pass

    def reply(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.reply(200, {"status": "ok"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.received.append(body)
        self.reply(*self.server.answer(body))


@pytest.fixture()
def service(request):
    server = Service(ANSWERS[getattr(request, "param", "right")])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


# --------------------------------------------------------------------------------- the tests
@pytest.mark.parametrize("url", ["http://10.1.2.3:8000", "http://localhost:8000", "https://127.0.0.1:8000",
                                 "http://127.0.0.1", "http://127.0.0.1:8000/other", "http://127.0.0.1.evil:80"])
def test_refuses_anything_but_loopback(url):
    done = run("--url", url, "--requests", "1")
    assert done.returncode == 2
    assert done.stderr.startswith("load_serve: --url must be http://127.0.0.1:PORT") and "Traceback" not in done.stderr


def test_duration_is_capped():
    done = run("--duration", "61")
    assert done.returncode == 2 and "--duration must be in (0, 60]" in done.stderr


def test_sends_conllu_token_forms(service, tmp_path):
    path = tmp_path / "s.conllu"
    path.write_text("# text = Don't go.\n1-2\tDon't\t_\n1\tDo\tdo\n2\tn't\tnot\n3\tgo\tgo\n3.1\tgone\t_\n4\t.\t.\n\n"
                    "# sent_id = 2\n1\tHi\thi\n", encoding="utf-8")
    result = summary(run("--url", service.url + "/", "--sentences", str(path), *SMALL))
    assert result["url"] == service.url  # a loopback URL is taken, its trailing slash dropped
    sent = [body["sentences"] for body in service.received]
    assert sent == [[["Do", "n't", "go", "."]], [["Hi"]], [["Do", "n't", "go", "."], ["Hi"]]]
    phases = {p["name"]: p for p in result["phases"]}
    assert [p["errors"] for p in phases.values()] == [0, 0, 0]
    assert phases["single-sentence POST /tag"]["sentences"] == 2
    assert phases["2-sentence POST /tag"]["tokens"] == 5
    for p in phases.values():  # nearest-rank percentiles, in order
        lat = p["latency_ms"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]


def test_sends_conll_first_column(service, tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("The DT B-NP\n# NN I-NP\n\n\nOK UH O\n", encoding="utf-8")
    summary(run("--url", service.url, "--sentences", str(path), *SMALL))
    assert service.received[-1]["sentences"] == [["The", "#"], ["OK"]]


@pytest.mark.parametrize("service, marginals, single, batched", [
    ("one tag list short", False, "0 tag lists for 1 sentences", "1 tag lists for 2 sentences"),
    ("one tag short", False, "sentence 0: 1 tags for 2 tokens", "sentence 0: 1 tags for 2 tokens"),
    ("too big", False, 'status 413: {"error": "too big"}', 'status 413: {"error": "too big"}'),
    ("no marginals", True, "marginals asked for but missing or of the wrong length",
     "marginals asked for but missing or of the wrong length"),
], indirect=["service"], ids=["tag-lists", "tags", "status", "marginals"])
def test_a_wrong_answer_is_an_error(service, tmp_path, marginals, single, batched):
    path = tmp_path / "s.txt"
    path.write_text("a X\nb X\n\nc X\nd X\n\n", encoding="utf-8")
    result = summary(run("--url", service.url, "--sentences", str(path), *SMALL,
                         *(["--marginals"] if marginals else [])))
    phases = {p["name"]: p for p in result["phases"]}
    for name, first in (("single-sentence POST /tag", single), ("2-sentence POST /tag", batched)):
        assert phases[name]["errors"] == phases[name]["requests"] > 0
        assert phases[name]["first_error"] == first
        assert phases[name]["sentences"] == 0  # a wrong answer's sentences are not counted as served
    assert phases["client ceiling GET /health"]["errors"] == 0
    assert result["goal"]["pass"] is False and result["goal"]["line"].endswith("FAIL")


def test_smoke_run_against_a_real_server(tmp_path):
    pytest.importorskip("fastapi", reason="the service needs the serve extra: pip install -e '.[serve]'")
    pytest.importorskip("uvicorn", reason="the service needs the serve extra: pip install -e '.[serve]'")
    pytest.importorskip("httpx", reason="the load script's client is httpx (in the test extra)")
    from structperc import Tagger

    model = tmp_path / "pos"
    Tagger(task="pos", columns=["word", "pos", "_"], tag_column="pos", epochs=2).fit(str(SAMPLE_TRAIN)).save(model)
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("Confidence NN\nin IN\nthe DT\npound NN\n\nHe PRP\nsaid VBD\nso RB\n. .\n\n",
                         encoding="utf-8")
    done = run("--model", str(model), "--sentences", str(sentences), "--requests", "40", "--duration", "5",
               "--warmup", "10", "--batch", "4", "--json", timeout=240)
    result = summary(done)
    out = done.stdout
    for line in ("== single-sentence POST /tag", "== 4-sentence POST /tag", "== client ceiling GET /health",
                 "server RSS over the run:", "single-sentence: "):
        assert line in out
    phases = {p["name"]: p for p in result["phases"]}
    for name in ("single-sentence POST /tag", "4-sentence POST /tag", "client ceiling GET /health"):
        p = phases[name]
        assert p["errors"] == 0, p["first_error"]
        assert p["requests"] == 40 or p["stopped_by"] == "duration"
        assert p["rss_mib"]["start"] > 0 and p["rss_mib"]["end"] > 0
    single = phases["single-sentence POST /tag"]
    assert single["sentences"] == single["requests"]
    assert phases["4-sentence POST /tag"]["sentences"] == 4 * phases["4-sentence POST /tag"]["requests"]
    assert result["goal"]["line"] in out and result["goal"]["line"].startswith("single-sentence: ")
