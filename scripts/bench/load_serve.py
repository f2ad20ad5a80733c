#!/usr/bin/env python
"""Bounded load test of `structperc serve` on loopback: throughput, latency and memory of a POS model.

    python scripts/bench/load_serve.py                          # trains a POS model on UD EWT, starts a server
    python scripts/bench/load_serve.py --model DIR --concurrency 16 --marginals
    python scripts/bench/load_serve.py --url http://127.0.0.1:8000 --server-pid 1234   # a running server

Every phase stops by itself at a fixed request count or a fixed duration (at most 60 s), whichever
comes first, so the whole run ends on its own. Only 127.0.0.1 is ever contacted.

1. Without ``--model``, trains one (``structperc train --task pos``, ~5 s) into a temporary directory.
2. Without ``--url``, starts ``python -m structperc serve --model pos=DIR`` on a free loopback port and
   waits for ``/health``; the server is stopped at the end, also on Ctrl+C or errors.
3. Warm-up (``--warmup`` single-sentence requests, not counted), then the phases: single-sentence
   ``POST /tag`` requests, ``--batch``-sentence requests, and ``GET /health`` as the client's own ceiling
   (httpx's overhead on a request the server answers at once; the client and the server share the cores).
4. ``--concurrency`` asyncio workers share one keep-alive ``httpx.AsyncClient`` (a pool of as many
   connections) and pull from the phase's request budget. Each response must be a 200 with one tag list
   per sentence sent, each as long as its sentence (and marginals when asked), else it is an error.

Printed per phase: requests, errors (and the first one), wall time, requests/s, sentences/s, tokens/s,
latency p50/p90/p99/max, client and server CPU seconds, and the server's resident memory (VmRSS of the
server process and its children) at the start, middle and end. Then the service's goal for the
single-sentence phase: >= 200 requests/s, p99 < 50 ms, no errors (PASS/FAIL; the exit status stays 0:
it is a measurement). ``--json`` also prints the summary as one JSON object.

Exit status: 0 when the run completed, 1 when it could not run (training or server start failed), 2 on a
usage error (e.g. a host other than 127.0.0.1), 130 on Ctrl+C.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "ud_en_ewt"
HOST = "127.0.0.1"
MAX_DURATION = 60.0
#: Seconds one request may take before it counts as an error (bounds a phase to duration + this).
REQUEST_TIMEOUT = 10.0
GOAL_RPS, GOAL_P99_MS = 200.0, 50.0


class LoadError(Exception):
    """A reason the run cannot go on, printed as one line (no traceback)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# --------------------------------------------------------------------------------------------- inputs

def read_sentences(path: Path) -> list[list[str]]:
    """Token forms of each sentence of a CoNLL-U file (column 2; multiword ranges and empty nodes
    skipped) or of a CoNLL column file (first column): what a client would send."""
    if not path.is_file():
        raise LoadError(f"sentence file not found: {path}", 2)
    conllu = path.name.endswith((".conllu", ".conllu.gz"))
    opener = _open_text(path)
    sentences: list[list[str]] = []
    current: list[str] = []
    with opener as fh:
        for line in fh:
            line = line.rstrip("\n").rstrip("\r")
            if not line.strip():
                if current:
                    sentences.append(current)
                    current = []
                continue
            if line.startswith("#") and (conllu or not current):
                continue  # CoNLL-U comments; a '#' line inside a CoNLL sentence is a token
            if conllu:
                cols = line.split("\t")
                if len(cols) < 2 or not cols[0].isdigit():
                    continue  # "1-2" multiword ranges and "1.1" empty nodes are not tokens
                current.append(cols[1])
            else:
                current.append(line.split()[0])
    if current:
        sentences.append(current)
    if not sentences:
        raise LoadError(f"no sentences in {path}", 2)
    return sentences


def _open_text(path: Path):
    if path.suffix == ".gz":
        import gzip
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


@dataclass
class Payload:
    """One request body, encoded once up front so the client spends its time on HTTP only."""

    body: bytes
    lengths: tuple[int, ...]


def payloads(sentences: list[list[str]], per_request: int, marginals: bool, model: str | None) -> list[Payload]:
    """Request bodies of ``per_request`` consecutive sentences each, cycling through the corpus."""
    out = []
    n = len(sentences)
    count = max(1, n // per_request) if per_request > 1 else n
    for i in range(count):
        group = [sentences[(i * per_request + j) % n] for j in range(per_request)]
        obj: dict[str, Any] = {"sentences": group}
        if marginals:
            obj["marginals"] = True
        if model:
            obj["model"] = model
        out.append(Payload(json.dumps(obj, ensure_ascii=False).encode("utf-8"), tuple(len(s) for s in group)))
    return out


# --------------------------------------------------------------------------------------------- server

def cli_module() -> str:
    """``structperc`` when ``python -m structperc`` works, else the CLI package itself."""
    return "structperc" if importlib.util.find_spec("structperc.__main__") else "structperc.cli"


def train_model(train: Path, directory: Path) -> Path:
    """A POS model trained on ``train`` (``structperc train --task pos``) in ``directory``."""
    if not train.is_file():
        raise LoadError(f"training corpus not found: {train} (give --model DIR or --train FILE)", 2)
    model = directory / "pos"
    cmd = [sys.executable, "-m", cli_module(), "train", "--task", "pos", "--train", str(train), "--model", str(model)]
    t0 = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise LoadError("training took more than 600 s") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise LoadError(f"training failed with status {done.returncode}: {tail[0]}")
    print(f"trained {model} from {train} in {time.perf_counter() - t0:.1f} s")
    return model


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def start_server(model: Path, log: Path, timeout: float = 60.0) -> tuple[subprocess.Popen, str]:
    """``structperc serve --model pos=DIR`` on a free loopback port, once ``/health`` answers 200."""
    import httpx

    port = free_port()
    cmd = [sys.executable, "-m", cli_module(), "serve", "--model", f"pos={model}", "--host", HOST, "--port", str(port)]
    with open(log, "wb") as fh:
        process = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://{HOST}:{port}"
    deadline = time.monotonic() + timeout
    t0 = time.perf_counter()
    try:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LoadError(f"structperc serve exited with status {process.returncode}: {_last_line(log)}")
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    print(f"server pid {process.pid} on {url}, ready in {time.perf_counter() - t0:.1f} s")
                    return process, url
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise LoadError(f"structperc serve did not answer /health in {timeout:.0f} s: {_last_line(log)}")
    except BaseException:
        stop_server(process)
        raise


def _last_line(log: Path) -> str:
    lines = [x for x in log.read_text(encoding="utf-8", errors="replace").splitlines() if x.strip()]
    return lines[-1] if lines else "(no output)"


def stop_server(process: subprocess.Popen) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def check_url(url: str) -> str:
    """``url`` without a trailing slash, when it is plain HTTP on 127.0.0.1 with a port; a load test
    never leaves this machine."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or parts.hostname != HOST or port is None or parts.path not in ("", "/"):
        raise LoadError(f"--url must be http://{HOST}:PORT (this load test only runs on loopback), not {url!r}", 2)
    return f"http://{HOST}:{port}"


# --------------------------------------------------------------------------------------------- memory

def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            pass
    return out


def rss_mib(pid: int | None) -> float | None:
    """Resident memory (VmRSS) of ``pid`` and its children in MiB, or None when unreadable."""
    if pid is None:
        return None
    total, seen = 0, False
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        seen = True
                        break
        except OSError:
            continue
    return total / 1024 if seen else None


def cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of ``pid`` and its children (from /proc/PID/stat)."""
    if pid is None:
        return None
    ticks, seen = 0, False
    for p in _descendants(pid):
        try:
            with open(f"/proc/{p}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
            seen = True
        except (OSError, IndexError, ValueError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK") if seen else None


# --------------------------------------------------------------------------------------------- phases

@dataclass
class PhaseResult:
    name: str
    requests: int = 0
    errors: int = 0
    first_error: str | None = None
    sentences: int = 0
    tokens: int = 0
    wall_s: float = 0.0
    req_per_s: float = 0.0
    sentences_per_s: float = 0.0
    tokens_per_s: float = 0.0
    latency_ms: dict[str, float] = field(default_factory=dict)
    client_cpu_s: float = 0.0
    server_cpu_s: float | None = None
    rss_mib: dict[str, float | None] = field(default_factory=dict)
    stopped_by: str = "requests"


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile ``q`` (0..100) of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), -(-len(sorted_values) * q // 100)))
    return sorted_values[int(rank) - 1]


def check_response(status: int, content: bytes, payload: Payload | None, marginals: bool) -> str | None:
    """Why a response is wrong, or None when it is right."""
    if status != 200:
        return f"status {status}: {content[:200].decode('utf-8', 'replace')}"
    if payload is None:
        return None
    try:
        body = json.loads(content)
    except ValueError:
        return f"not JSON: {content[:200].decode('utf-8', 'replace')}"
    tags = body.get("tags") if isinstance(body, dict) else None
    if not isinstance(tags, list) or len(tags) != len(payload.lengths):
        n = len(tags) if isinstance(tags, list) else "no"
        return f"{n} tag lists for {len(payload.lengths)} sentences"
    for i, (t, n) in enumerate(zip(tags, payload.lengths)):
        if not isinstance(t, list) or len(t) != n:
            return f"sentence {i}: {len(t) if isinstance(t, list) else 'no'} tags for {n} tokens"
    if marginals:
        m = body.get("marginals")
        if not isinstance(m, list) or len(m) != len(payload.lengths):
            return "marginals asked for but missing or of the wrong length"
    return None


async def run_phase(client: Any, name: str, method: str, url: str, bodies: list[Payload] | None,
                    requests: int, duration: float, concurrency: int, marginals: bool,
                    server_pid: int | None) -> PhaseResult:
    """``requests`` requests by ``concurrency`` workers, no new one started after ``duration`` seconds."""
    result = PhaseResult(name)
    latencies: list[float] = []
    state = {"next": 0}
    headers = {"Content-Type": "application/json"}
    start = time.perf_counter()
    deadline = start + duration
    samples: list[tuple[float, float | None]] = [(0.0, rss_mib(server_pid))]
    cpu0, server_cpu0 = time.process_time(), cpu_seconds(server_pid)

    async def worker() -> None:
        while state["next"] < requests:
            if time.perf_counter() >= deadline:
                result.stopped_by = "duration"
                return
            i = state["next"]
            state["next"] += 1
            payload = bodies[i % len(bodies)] if bodies else None
            t0 = time.perf_counter()
            try:
                if payload is None:
                    resp = await client.request(method, url)
                else:
                    resp = await client.request(method, url, content=payload.body, headers=headers)
                problem = check_response(resp.status_code, resp.content, payload, marginals)
            except Exception as exc:  # noqa: BLE001 - any failed request is an error to count
                problem = f"{type(exc).__name__}: {exc}"
            latencies.append(time.perf_counter() - t0)
            result.requests += 1
            if problem is not None:
                result.errors += 1
                if result.first_error is None:
                    result.first_error = problem
            elif payload is not None:
                result.sentences += len(payload.lengths)
                result.tokens += sum(payload.lengths)

    async def sampler() -> None:
        while True:
            await asyncio.sleep(0.5)
            samples.append((time.perf_counter() - start, rss_mib(server_pid)))

    tasks = [asyncio.create_task(sampler())]
    try:
        workers = [asyncio.create_task(worker()) for _ in range(concurrency)]
        tasks += workers
        await asyncio.wait(workers, timeout=duration + REQUEST_TIMEOUT + 5)
        for w in workers:
            if w.done() and w.exception() is not None:
                raise w.exception()
    finally:  # also on Ctrl+C: no task left running, no "exception never retrieved" noise
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    result.wall_s = time.perf_counter() - start
    samples.append((result.wall_s, rss_mib(server_pid)))
    result.client_cpu_s = time.process_time() - cpu0
    server_cpu1 = cpu_seconds(server_pid)
    if server_cpu0 is not None and server_cpu1 is not None:
        result.server_cpu_s = server_cpu1 - server_cpu0
    mid = min(samples, key=lambda s: abs(s[0] - result.wall_s / 2))
    known = [s[1] for s in samples if s[1] is not None]
    result.rss_mib = {"start": samples[0][1], "middle": mid[1], "end": samples[-1][1],
                      "max": max(known) if known else None}
    result.req_per_s = result.requests / result.wall_s if result.wall_s else 0.0
    result.sentences_per_s = result.sentences / result.wall_s if result.wall_s else 0.0
    result.tokens_per_s = result.tokens / result.wall_s if result.wall_s else 0.0
    lat = sorted(x * 1000 for x in latencies)
    result.latency_ms = {"p50": percentile(lat, 50), "p90": percentile(lat, 90), "p99": percentile(lat, 99),
                         "max": lat[-1] if lat else 0.0, "mean": sum(lat) / len(lat) if lat else 0.0}
    return result


def _mib(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}"


def report(r: PhaseResult) -> str:
    lat = r.latency_ms
    rss = r.rss_mib
    growth = (f"{rss['end'] - rss['start']:+.1f} MiB" if rss.get("start") is not None and rss.get("end") is not None
              else "n/a")
    server_cpu = "n/a" if r.server_cpu_s is None else f"{r.server_cpu_s:.1f}"
    lines = [
        f"== {r.name}",
        f"  requests {r.requests} (stopped by {r.stopped_by}), errors {r.errors}, wall {r.wall_s:.2f} s",
        f"  throughput {r.req_per_s:.1f} req/s, {r.sentences_per_s:.1f} sentences/s, {r.tokens_per_s:,.0f} tokens/s",
        f"  latency ms p50 {lat['p50']:.1f}  p90 {lat['p90']:.1f}  p99 {lat['p99']:.1f}  max {lat['max']:.1f}",
        f"  cpu s client {r.client_cpu_s:.1f}, server {server_cpu} (of {r.wall_s:.1f} s wall, 2 cores shared)",
        f"  server RSS MiB start {_mib(rss.get('start'))} -> middle {_mib(rss.get('middle'))} -> "
        f"end {_mib(rss.get('end'))} (growth {growth}, max {_mib(rss.get('max'))})",
    ]
    if r.first_error:
        lines.append(f"  first error: {r.first_error}")
    return "\n".join(lines)


def goal(r: PhaseResult) -> tuple[bool, str]:
    """The service's goal for single-sentence requests, and its line."""
    p99 = r.latency_ms["p99"]
    ok = r.req_per_s >= GOAL_RPS and p99 < GOAL_P99_MS and r.errors == 0 and r.requests > 0
    line = (f"single-sentence: {r.req_per_s:.1f} req/s (goal >= {GOAL_RPS:.0f}), p99 {p99:.1f} ms "
            f"(goal < {GOAL_P99_MS:.0f}), errors {r.errors} (goal 0): {'PASS' if ok else 'FAIL'}")
    return ok, line


# --------------------------------------------------------------------------------------------- main

async def load(args: argparse.Namespace, url: str, server_pid: int | None,
               sentences: list[list[str]]) -> dict[str, Any]:
    import httpx

    single = payloads(sentences, 1, args.marginals, args.name)
    batched = payloads(sentences, args.batch, args.marginals, args.name)
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    summary: dict[str, Any] = {"url": url, "server_pid": server_pid, "concurrency": args.concurrency,
                               "marginals": args.marginals, "batch": args.batch, "duration_cap_s": args.duration,
                               "httpx": httpx.__version__, "event_loop": type(asyncio.get_running_loop()).__module__}
    rss_before = rss_mib(server_pid)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=REQUEST_TIMEOUT) as client:
        if args.warmup:
            warm = await run_phase(client, "warm-up", "POST", "/tag", single, args.warmup, args.duration,
                                   args.concurrency, args.marginals, server_pid)
            print(f"warm-up: {warm.requests} requests, {warm.errors} errors, {warm.wall_s:.1f} s"
                  + (f"; first error: {warm.first_error}" if warm.first_error else ""))
        phases = [
            ("single-sentence POST /tag", "POST", "/tag", single, args.requests),
            (f"{args.batch}-sentence POST /tag", "POST", "/tag", batched, args.batch_requests),
            ("client ceiling GET /health", "GET", "/health", None, args.ceiling),
        ]
        results = []
        for name, method, path, bodies, n in phases:
            if n <= 0:
                continue
            r = await run_phase(client, name, method, path, bodies, n, args.duration, args.concurrency,
                                args.marginals, server_pid)
            print(report(r), flush=True)
            results.append(r)
    rss_after = rss_mib(server_pid)
    summary["phases"] = [asdict(r) for r in results]
    summary["rss_mib"] = {"start": rss_before, "end": rss_after,
                          "growth": None if rss_before is None or rss_after is None else rss_after - rss_before}
    print(f"server RSS over the run: {_mib(rss_before)} -> {_mib(rss_after)} MiB"
          + (f" (growth {summary['rss_mib']['growth']:+.1f} MiB)" if summary["rss_mib"]["growth"] is not None
             else ""))
    first = next((r for r in results if r.name.startswith("single")), None)
    if first is not None:
        ok, line = goal(first)
        summary["goal"] = {"pass": ok, "line": line}
        print(line)
    return summary


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, help="a POS model directory (default: train one into a temporary directory)")
    ap.add_argument("--train", type=Path, default=CORPORA / "en_ewt-ud-train.conllu",
                    help="corpus to train the POS model on when --model is not given")
    ap.add_argument("--sentences", type=Path, default=CORPORA / "en_ewt-ud-test.conllu",
                    help="sentences to send (CoNLL-U or CoNLL columns; token forms only)")
    ap.add_argument("--url", help=f"hit a running server at http://{HOST}:PORT instead of starting one")
    ap.add_argument("--server-pid", type=int, help="with --url: the server's process id, to read its memory")
    ap.add_argument("--name", help="model name to send in each request (default: the server's default model)")
    ap.add_argument("--requests", type=int, default=None,
                    help="requests per phase (default 4000 single-sentence, 500 batched)")
    ap.add_argument("--batch-requests", type=int, default=None, help="requests of the batched phase")
    ap.add_argument("--batch", type=int, default=32, help="sentences per request of the batched phase")
    ap.add_argument("--ceiling", type=int, default=None,
                    help="GET /health requests measuring the client's own ceiling (0 = skip; default 2000)")
    ap.add_argument("--duration", type=float, default=30.0, help=f"max seconds per phase (<= {MAX_DURATION:.0f})")
    ap.add_argument("--concurrency", type=int, default=8, help="concurrent connections / workers")
    ap.add_argument("--warmup", type=int, default=300, help="uncounted single-sentence requests first")
    ap.add_argument("--marginals", action="store_true", help='ask for "marginals": true in every request')
    ap.add_argument("--json", action="store_true", help="also print the summary as one JSON object")
    args = ap.parse_args(argv)
    if not 0 < args.duration <= MAX_DURATION:
        ap.error(f"--duration must be in (0, {MAX_DURATION:.0f}] seconds")
    if not 1 <= args.concurrency <= 256:
        ap.error("--concurrency must be in 1..256")
    if args.batch < 1:
        ap.error("--batch must be >= 1")
    for name in ("requests", "batch_requests", "ceiling", "warmup"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            ap.error(f"--{name.replace('_', '-')} must be >= 0")
    if args.batch_requests is None:
        args.batch_requests = 500 if args.requests is None else args.requests
    if args.ceiling is None:
        args.ceiling = 2000 if args.requests is None else args.requests
    if args.requests is None:
        args.requests = 4000
    if args.server_pid is not None and args.url is None:
        ap.error("--server-pid goes with --url")
    return args


def _event_loop_policy() -> None:
    """uvloop when installed (uvicorn[standard] brings it): a lighter client on the shared cores."""
    try:
        import uvloop
    except ImportError:
        return
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def run(args: argparse.Namespace) -> dict[str, Any]:
    if importlib.util.find_spec("httpx") is None:
        raise LoadError("httpx is not installed: pip install httpx (it is in the test extra)", 2)
    url = check_url(args.url) if args.url else None
    sentences = read_sentences(args.sentences)
    print(f"{len(sentences)} sentences ({sum(map(len, sentences))} tokens) from {args.sentences}")
    process = None
    with tempfile.TemporaryDirectory(prefix="structperc-load-") as tmp:
        try:
            if url is None:
                model = args.model if args.model is not None else train_model(args.train, Path(tmp))
                if not model.exists():
                    raise LoadError(f"model not found: {model}", 2)
                process, url = start_server(model, Path(tmp) / "serve.log")
                pid = process.pid
            else:
                pid = args.server_pid
            _event_loop_policy()
            summary = asyncio.run(load(args, url, pid, sentences))
            if process is not None and process.poll() is not None:
                raise LoadError(f"the server died during the run (status {process.returncode}): "
                                f"{_last_line(Path(tmp) / 'serve.log')}")
            return summary
        finally:
            if process is not None:
                stop_server(process)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        summary = run(args)
    except LoadError as exc:
        print(f"load_serve: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print("load_serve: interrupted", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
