#!/usr/bin/env python
"""Tagging speed with and without ``--lang``: the models of the README's commands, the test file ×5.

    python scripts/bench/bench_lang_tagging.py                  # every task, 9 runs each, alternating
    python scripts/bench/bench_lang_tagging.py --tasks crfsuite pos --runs 5

For each task the model is trained twice (the README's command, once with ``--lang``, once without; seed 0),
then ``structperc tag`` (``segment`` for SXU, on the raw text) reads the test file repeated five times, the
two models alternating, ``--runs`` times each; wall time and peak memory from ``/usr/bin/time``, start-up and
the tables' loading included. Prints the medians and their ratio (the aim: within 15 %).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

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
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", *cmd], capture_output=True, text=True, check=True)
    seconds, kb = out.stderr.strip().splitlines()[-1].split()
    return float(seconds), int(kb) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", nargs="+", choices=list(TASKS), default=list(TASKS))
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    rows = ["| model | without `--lang`, s | with, s | × | peak MB without / with |", "|---|---|---|---|---|"]
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
            times: dict[str, list[tuple[float, float]]] = {"without": [], "with": []}
            for _ in range(args.runs):
                for side in ("without", "with"):
                    times[side].append(timed([str(BIN), verb, "--model", models[side], str(data),
                                              "-o", f"{tmp}/out.txt"]))
            med = {s: statistics.median(t for t, _ in v) for s, v in times.items()}
            mem = {s: statistics.median(m for _, m in v) for s, v in times.items()}
            rows.append(f"| {task} | {med['without']:.2f} | {med['with']:.2f} | {med['with'] / med['without']:.2f} | "
                        f"{mem['without']:.0f} / {mem['with']:.0f} |")
            print(rows[-1], flush=True)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
