#!/usr/bin/env python
"""Partial-label training on CoNLL-2000: test F1 when a seeded share of the
training tags is replaced by ``?``, against the baseline that drops every sentence with a hidden tag.

    python scripts/bench/bench_partial.py                     # 0/25/50/75 % hidden, seed 0
    python scripts/bench/bench_partial.py --rates 50 --seed 1

Protocol (nothing is chosen on the test set): for each rate, exactly round(rate * n_tokens) training
tokens, drawn uniformly without replacement with a fixed seed, get the tag ``?``; the file is written
as a user would give it (``structperc train --task chunk --train partial.conll``) and trained with
the chunk task's defaults (default template, 10 epochs, IOBES inside, seed 0). The baseline trains
on the sentences of the same file that have no ``?``. Scores: span micro F1 on test.txt (conlleval's
convention, what `Tagger.score` gives).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2000"


def read_sentences(path: Path) -> list[list[list[str]]]:
    sents, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            cur.append(line.split())
        elif cur:
            sents.append(cur)
            cur = []
    if cur:
        sents.append(cur)
    return sents


def write(sents: list[list[list[str]]], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for s in sents:
            fh.write("".join(" ".join(tok) + "\n" for tok in s) + "\n")


def hide(sents: list[list[list[str]]], rate: float, seed: int) -> list[list[list[str]]]:
    """A copy of ``sents`` with round(rate · n_tokens) tags, uniform over tokens, set to ``?``."""
    n = sum(map(len, sents))
    hidden = np.zeros(n, dtype=bool)
    hidden[np.random.default_rng(seed).permutation(n)[:int(round(rate * n))]] = True
    out, k = [], 0
    for s in sents:
        out.append([tok[:-1] + ["?"] if hidden[k + i] else list(tok) for i, tok in enumerate(s)])
        k += len(s)
    return out


def train_and_score(path: Path, test: Path) -> tuple[float, float]:
    from structperc import Tagger

    t0 = time.perf_counter()
    tagger = Tagger(task="chunk").fit(str(path))
    seconds = time.perf_counter() - t0
    return 100 * tagger.score(str(test)), seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", type=float, nargs="+", default=[0, 25, 50, 75], help="percent hidden")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-baseline", action="store_true")
    args = ap.parse_args()
    train, test = ROOT / "train.txt", ROOT / "test.txt"
    sents = read_sentences(train)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-partial-") as tmp:
        for rate in args.rates:
            part = hide(sents, rate / 100, args.seed)
            path = Path(tmp) / f"partial{rate:g}.conll"
            write(part, path)
            f1, sec = train_and_score(path, test)
            row = dict(rate=rate, f1=f1, sec=sec, n=len(part))
            if not args.no_baseline:
                kept = [s for s in part if all(tok[-1] != "?" for tok in s)]
                row["base_n"] = len(kept)
                if rate == 0:
                    row["base_f1"], row["base_sec"] = f1, sec
                elif kept:
                    base = Path(tmp) / f"complete{rate:g}.conll"
                    write(kept, base)
                    row["base_f1"], row["base_sec"] = train_and_score(base, test)
            rows.append(row)
            print(row, flush=True)
    print(f"\nCoNLL-2000 chunking, test span F1 (micro), seed {args.seed}, chunk defaults "
          f"({len(sents)} training sentences)")
    print(f"{'hidden':>7} {'partial F1':>11} {'train s':>8} {'drop-partial F1':>16} {'sentences kept':>15}")
    for r in rows:
        base = f"{r['base_f1']:16.2f}" if "base_f1" in r else f"{'-':>16}"
        kept = f"{r['base_n']:15d}" if "base_n" in r else f"{'-':>15}"
        print(f"{r['rate']:6g}% {r['f1']:11.2f} {r['sec']:8.1f} {base} {kept}")


if __name__ == "__main__":
    main()
