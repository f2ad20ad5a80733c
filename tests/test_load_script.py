"""`scripts/load_serve.py`: it stays on loopback, reads token forms the way a client sends them, counts a wrong
answer as an error, and (smoke test) runs a tiny bounded load against a real `structperc serve` to the end."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import script_module

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "load_serve.py"
SAMPLE_TRAIN = REPO / "corpora" / "conll2000-train-sample.txt.gz"


@pytest.fixture()
def load():
    with script_module(SCRIPT, "load_serve_under_test") as module:
        yield module


@pytest.mark.parametrize("url", ["http://10.1.2.3:8000", "http://localhost:8000", "https://127.0.0.1:8000",
                                 "http://127.0.0.1", "http://127.0.0.1:8000/other", "http://127.0.0.1.evil:80"])
def test_refuses_anything_but_loopback(load, url, capsys):
    assert load.main(["--url", url, "--requests", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("load_serve: --url must be http://127.0.0.1:PORT") and "Traceback" not in err


def test_accepts_loopback_url(load):
    assert load.check_url("http://127.0.0.1:8123/") == "http://127.0.0.1:8123"


def test_duration_is_capped(load):
    with pytest.raises(SystemExit):
        load.parse_args(["--duration", "61"])
    assert load.parse_args(["--duration", "60"]).duration == 60


def test_reads_conllu_token_forms(load, tmp_path):
    path = tmp_path / "s.conllu"
    path.write_text("# text = Don't go.\n1-2\tDon't\t_\n1\tDo\tdo\n2\tn't\tnot\n3\tgo\tgo\n3.1\tgone\t_\n4\t.\t.\n\n"
                    "# sent_id = 2\n1\tHi\thi\n", encoding="utf-8")
    assert load.read_sentences(path) == [["Do", "n't", "go", "."], ["Hi"]]


def test_reads_conll_first_column(load, tmp_path):
    path = tmp_path / "s.txt"
    path.write_text("The DT B-NP\n# NN I-NP\n\n\nOK UH O\n", encoding="utf-8")
    assert load.read_sentences(path) == [["The", "#"], ["OK"]]


def test_a_wrong_answer_is_an_error(load):
    payload = load.payloads([["a", "b"], ["c"]], 2, False, None)[0]
    good = json.dumps({"tags": [["X", "Y"], ["Z"]]}).encode()
    assert load.check_response(200, good, payload, False) is None
    assert "1 tag lists for 2 sentences" in load.check_response(200, json.dumps({"tags": [["X", "Y"]]}).encode(),
                                                                 payload, False)
    assert "1 tags for 2 tokens" in load.check_response(200, json.dumps({"tags": [["X"], ["Z"]]}).encode(),
                                                        payload, False)
    assert load.check_response(413, b'{"error": "too big"}', payload, False).startswith("status 413")
    assert "marginals" in load.check_response(200, good, payload, True)


def test_percentile_nearest_rank(load):
    values = [float(i) for i in range(1, 101)]
    assert (load.percentile(values, 50), load.percentile(values, 99), load.percentile(values, 100)) == (50, 99, 100)
    assert load.percentile([], 99) == 0


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
    done = subprocess.run([sys.executable, str(SCRIPT), "--model", str(model), "--sentences", str(sentences),
                           "--requests", "40", "--duration", "5", "--warmup", "10", "--batch", "4", "--json"],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for line in ("== single-sentence POST /tag", "== 4-sentence POST /tag", "== client ceiling GET /health",
                 "server RSS over the run:", "single-sentence: "):
        assert line in out
    summary = json.loads(out[out.index("\n{") + 1:])
    phases = {p["name"]: p for p in summary["phases"]}
    for name in ("single-sentence POST /tag", "4-sentence POST /tag", "client ceiling GET /health"):
        p = phases[name]
        assert p["errors"] == 0, p["first_error"]
        assert p["requests"] == 40 or p["stopped_by"] == "duration"
        assert p["rss_mib"]["start"] > 0 and p["rss_mib"]["end"] > 0
    single = phases["single-sentence POST /tag"]
    assert single["sentences"] == single["requests"]
    assert phases["4-sentence POST /tag"]["sentences"] == 4 * phases["4-sentence POST /tag"]["requests"]
    assert summary["goal"]["line"] in out and summary["goal"]["line"].startswith("single-sentence: ")
    assert "Traceback" not in done.stderr
