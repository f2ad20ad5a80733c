#!/usr/bin/env python
"""Tagging speed with and without ``--lang``: the models of the README's commands, the test file ×5.

    python scripts/bench/bench_lang_tagging.py                  # every task, 9 runs each, alternating
    python scripts/bench/bench_lang_tagging.py --tasks crfsuite pos --runs 5
    python scripts/bench/bench_lang_tagging.py --tasks pos --phases   # also where the extra time goes

For each task the model is trained twice (the README's command, once with ``--lang``, once without; seed 0),
then ``structperc tag`` (``segment`` for SXU, on the raw text) reads the test file repeated five times, the
two models alternating, ``--runs`` times each; wall time from spawn to exit and peak memory from the child's
``os.wait4`` rusage (`bench_crfsuite.run_measured`: to the microsecond, where ``/usr/bin/time`` gave hundredths of
a second, 0.016 of POS's ratio), start-up and the tables' loading included. Prints the medians and their ratio
(the aim: within 15 %), and the ratio of each run with ``--lang`` to the run without it just before (its median and
quartiles: how far the machine's noise moves the ratio). ``--threads 1 0`` times each model on one thread and on
every CPU, alternating; by default the commands' own default (every CPU).

With ``--phases``, each model then tags the same file ``--runs`` more times (alternating) with its phases timed
inside the process (`PHASES`: reading the model, the columns its dictionaries write (the resources' among
them), the attribute ids, the decoder, the rest of ``structperc tag``/``segment`` and the start-up before it),
and the medians of each phase are printed side by side: what ``--lang`` costs once per run (the model's
tables, the columns of the input's distinct words) against what it costs per token (its templates' ids and
scores).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _kernels import require_current_build  # noqa: E402
from bench_crfsuite import run_measured  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
C = ROOT.parent / "shared" / "corpora"
BIN = Path(sys.executable).with_name("structperc")

#: task -> (train arguments without --model/--lang, the --lang code, the test file, tag or segment)
TASKS = {
    "chunk": (["--train", f"{C}/conll2000/train.txt", "--columns", "word,pos,chunk", "--dev-split", "0.1",
               "--epochs", "15"], "en", C / "conll2000/test.txt", "tag"),
    "ner": (["--task", "ner", "--train", f"{C}/conll2002/esp.train"], "es", C / "conll2002/esp.testb", "tag"),
    "pos": (["--task", "pos", "--train", f"{C}/ud_en_ewt/en_ewt-ud-train.conllu", "--dev",
             f"{C}/ud_en_ewt/en_ewt-ud-dev.conllu", "--epochs", "20"], "en", C / "ud_en_ewt/en_ewt-ud-test.conllu",
            "tag"),
    "cws": (["--task", "cws", "--train", f"{C}/sighan2008_sxu/train.txt", "--dev-split", "0.1", "--epochs", "15"],
            "zh", C / "sighan2008_sxu/test.txt", "segment"),
    "crfsuite": (["--train", f"{C}/conll2000/train.txt", "--columns", "word,pos,chunk", "--template", "crfsuite",
                  "--epochs", "10"], "en", C / "conll2000/test.txt", "tag"),
}


def timed(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``cmd``."""
    done = run_measured(cmd)
    return done.wall, done.maxrss / 2**20


#: The child that times ``structperc tag``'s phases: the functions named (module, attribute path) are wrapped with
#: timers, then the command runs; prints one JSON object of seconds per phase (``total`` from before the imports).
PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
import importlib
from structperc.cli import main
spent = {}
def timed(module, path, label):
    owner = importlib.import_module(module)
    *parents, name = path.split(".")
    for p in parents:
        owner = getattr(owner, p)
    inner = getattr(owner, name)
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return inner(*a, **k)
        finally:
            spent[label] = spent.get(label, 0.0) + time.perf_counter() - t
    setattr(owner, name, wrapper)
for module, path, label in [("structperc.model.schema", "read", "read the model"),
                            ("structperc.predict.decoding", "with_dictionary", "dictionary columns"),
                            ("structperc.features.index", "FeatureIndex.transform", "attribute ids"),
                            ("structperc.predict.documents", "decode", "decode"),
                            ("structperc.predict.decoding", "decode", "decode")]:
    timed(module, path, label)
spent["start-up"] = time.perf_counter() - t0
sys.argv = ["structperc", *sys.argv[1:]]
try:
    main()
except SystemExit:
    pass
spent["total"] = time.perf_counter() - t0
spent["the rest"] = spent["total"] - sum(v for k, v in spent.items() if k != "total")
print(json.dumps(spent))
"""


def threads_args(threads: str) -> list[str]:
    """The command's ``--threads`` option for a `main` setting ("": none, the command's default)."""
    return ["--threads", threads] if threads else []


def threads_label(threads: str) -> str:
    return f" (`--threads {threads}`)" if threads else ""


def phases(models: dict[str, str], verb: str, data: Path, out: str, runs: int, extra: list[str] | None = None) \
        -> list[str]:
    """Table rows: the median seconds of each `PHASES` phase without and with ``--lang``, and the difference."""
    seen: dict[str, list[dict[str, float]]] = {"without": [], "with": []}
    for _ in range(runs):
        for side in ("without", "with"):
            done = subprocess.run([sys.executable, "-c", PHASES, verb, "--model", models[side], str(data), "-o", out,
                                   *(extra or [])], capture_output=True, text=True, check=True)
            seen[side].append(json.loads(done.stdout.strip().splitlines()[-1]))
    rows = []
    for phase in ("start-up", "read the model", "dictionary columns", "attribute ids", "decode", "the rest", "total"):
        a, b = (statistics.median(r.get(phase, 0.0) for r in seen[side]) for side in ("without", "with"))
        rows.append(f"| {phase} | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--phases", action="store_true", help="also time each phase inside the process (PHASES)")
    ap.add_argument("--threads", nargs="+", default=[""], metavar="N",
                    help="time `tag`/`segment --threads N` for each N given, alternating (0: every CPU) [default: the "
                         "command's default, every CPU]")
    args = ap.parse_args()
    settings = args.threads
    require_current_build()  # timings of a stale build would measure numba's compiler
    rows = ["| model | without `--lang`, s | with, s | × | × of each pair: median (quartiles) "
            "| peak MB without / with |",
            "|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for task in args.tasks:
            train, lang, test, verb = TASKS[task]
            models = {}
            for side in ("without", "with"):
                models[side] = f"{tmp}/{task}-{side}"
                extra = ["--lang", lang] if side == "with" else []
                subprocess.run([str(BIN), "train", *train, *extra, "--model", models[side], "-q"], check=True)
            data = Path(tmp) / f"{task}-test5.txt"
            if verb == "segment":  # raw text: the gold words joined
                text = "".join("".join(line.split()) + "\n" for line in test.read_text(encoding="utf-8").splitlines())
            else:
                text = test.read_text(encoding="utf-8").rstrip("\n") + "\n\n"
            data.write_text(text * 5, encoding="utf-8")
            times: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for _ in range(args.runs):
                for threads in settings:
                    for side in ("without", "with"):
                        times.setdefault((threads, side), []).append(timed(
                            [str(BIN), verb, "--model", models[side], str(data), "-o", f"{tmp}/out.txt",
                             *threads_args(threads)]))
            for threads in settings:
                med = {s: statistics.median(t for t, _ in times[threads, s]) for s in ("without", "with")}
                mem = {s: statistics.median(m for _, m in times[threads, s]) for s in ("without", "with")}
                pairs = [w / o for (o, _), (w, _) in zip(times[threads, "without"], times[threads, "with"])]
                q1, q2, q3 = statistics.quantiles(pairs, n=4) if len(pairs) > 1 else pairs * 3
                rows.append(f"| {task}{threads_label(threads)} | {med['without']:.3f} | {med['with']:.3f} | "
                            f"{med['with'] / med['without']:.3f} | {q2:.3f} ({q1:.3f}–{q3:.3f}) | "
                            f"{mem['without']:.0f} / {mem['with']:.0f} |")
                print(rows[-1], flush=True)
            if args.phases:
                for threads in settings:
                    table = phases(models, verb, data, f"{tmp}/out.txt", args.runs, threads_args(threads))
                    print(f"\n{task}{threads_label(threads)}: seconds by phase (medians of {args.runs})\n\n| phase | "
                          "without | with | difference |\n|---|---|---|---|\n" + "\n".join(table) + "\n", flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
