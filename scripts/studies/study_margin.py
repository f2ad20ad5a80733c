#!/usr/bin/env python
"""The training lever study: the structured margin perceptron and passive-aggressive steps against
the default averaged perceptron, on held-out data of the four corpora.

    python scripts/studies/study_margin.py                          # every corpus and variant, seed 0
    python scripts/studies/study_margin.py --corpora chunk,esp --variants default,m1 --seeds 0,1
    python scripts/studies/study_margin.py --test --chosen pa1      # + the test figure of the chosen
                                                                    # variant and of the default (once)
    python scripts/studies/study_margin.py --bench --corpora chunk  # training time of each variant

Variants (`VARIANTS`): ``default`` (margin 0, perceptron steps: today's epoch), ``m0.5`` / ``m1``
(cost-augmented decoding with margin ρ = 0.5 / 1: Viterbi over s(y') + ρ·Hamming(y, y'), perceptron
steps; ``m2``: ρ = 2), ``pa0.1`` / ``pa1`` / ``pa0.01`` (PA-I steps, C = 0.1 / 1 / 0.01, ρ = 0:
CRFsuite's ``pa``), ``m1pa1`` (ρ = 1 and PA-I with C = 1: the max-loss step on the structured hinge).

Protocol (nothing is chosen on a test set): every variant has the corpus's epoch budget (the task's, or
``--epochs``) and the best epoch by the held-out score (`heldout.corpora`):

* chunk: CoNLL-2000 train.txt, ``Tagger(task="chunk", dev_split=0.1)`` (the held-out tenth, span F1);
* sxu: SIGHAN 2008 SXU train.txt, ``Segmenter(dev_split=0.1)`` (word F1 of the tenth);
* esp: CoNLL-2002 esp.train, ``Tagger(task="ner")`` with ``dev=esp.testa`` (entity F1);
* ewt: UD EWT train, ``Tagger(task="pos")`` with ``dev=en_ewt-ud-dev`` (UPOS accuracy).

The variants are the estimators' own ``margin``/``step``/``C`` parameters; dev-only runs skip the refit
on the whole training file (``refit=False``; the figure is the probe's). Time is the trainer's (sum of
its epochs' seconds, dev scoring excluded); the ratio is to the default's on the same corpus and seed.
Rows are appended to ``--out`` (JSON lines) as they finish, so a long study can be resumed or split.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from heldout import CORPORA, add_lever_options, corpora, estimator, fresh_state, training_arrays

VARIANTS = {
    "default": {},
    "m0.5": {"margin": 0.5},
    "m1": {"margin": 1.0},
    "pa0.1": {"step": "pa", "C": 0.1},
    "pa1": {"step": "pa", "C": 1.0},
    "pa0.01": {"step": "pa", "C": 0.01},
    "m2": {"margin": 2.0},
    "m1pa1": {"margin": 1.0, "step": "pa", "C": 1.0},
}


def run(spec: dict, corpus: str, variant: str, seed: int, test: bool = False, epochs: int | None = None) -> dict:
    """Train one variant on one corpus; the best held-out score, its epoch, the trainer's seconds, and
    (``test``) the test score of the final model (the refit one where the held-out slice is a split)."""
    reports: list = []
    started = time.perf_counter()
    model = estimator(spec, seed=seed, refit=test, **({"epochs": epochs} if epochs else {}), **VARIANTS[variant])
    model.fit(str(spec["train"]), dev=str(spec["dev"]) if "dev" in spec else None, callback=reports.append)
    wall = time.perf_counter() - started
    probe = [r for r in reports if r.dev_score is not None]
    best = max(probe, key=lambda r: r.dev_score)  # the first of equal scores, as the trainer keeps it
    row = {"corpus": corpus, "variant": variant, "seed": seed, "dev": 100 * best.dev_score,
           "epoch": best.epoch, "epochs": best.epochs, "train_s": sum(r.seconds for r in probe),
           "wall_s": wall, "curve": [round(100 * r.dev_score, 2) for r in probe],
           "mistakes": [r.mistakes for r in probe]}
    if test:
        row["test"] = 100 * model.score(str(spec["test"]))
    return row


def bench(spec: dict, corpus: str, variants: list[str], epochs: int = 3, rounds: int = 3) -> str:
    """Training seconds of each variant on one corpus's featurized training data (featurized once),
    the variants interleaved ``rounds`` times so that the machine's load falls on all of them alike;
    the fastest round of each, and its ratio to the default's."""
    from structperc.train import perceptron

    held = training_arrays(spec)
    times: dict = {v: [] for v in variants}
    for _ in range(rounds):
        for v in variants:
            state = fresh_state(held)
            reports: list = []
            perceptron.train_perceptron(held["feats"], held["y"], state, mask=held["mask"], end=held["end"],
                                        epochs=epochs, seed=0, allowed=held["allowed"], values=held["values"],
                                        callback=reports.append, **VARIANTS[v])
            times[v].append(sum(r.seconds for r in reports))
            del state
    base = min(times["default"]) if "default" in times else None
    lines = [f"{corpus}: training seconds of {epochs} epochs, fastest of {rounds} interleaved rounds"]
    for v in variants:
        t = min(times[v])
        lines.append(f"  {v:<8} {t:7.2f} s" + (f"  ×{t / base:.2f}" if base else "")
                     + f"   (rounds: {', '.join(f'{x:.2f}' for x in times[v])})")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    """Per corpus and variant: the mean held-out score over its seeds, Δ = the mean paired difference
    to the default on the same seeds (the seed also draws the held-out tenth of chunk and sxu), the
    best epochs, and the training-time ratio to the default on the same seeds."""
    out = [f"{'corpus':<6} {'variant':<8} {'seeds':<6} {'dev':>7} {'Δ':>6} {'epochs':<10} {'time':>6} "
           f"{'×def':>5} {'test':>7}"]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["corpus"], r["variant"]), {})[r["seed"]] = r
    for corpus in CORPORA:
        base = groups.get((corpus, "default"), {})
        for variant in VARIANTS:
            g = groups.get((corpus, variant))
            if not g:
                continue
            seeds = sorted(g)
            dev = statistics.mean(g[s]["dev"] for s in seeds)
            t = statistics.mean(g[s]["train_s"] for s in seeds)
            paired = [s for s in seeds if s in base]
            delta = f"{statistics.mean(g[s]['dev'] - base[s]['dev'] for s in paired):+6.2f}" if paired else ""
            ratio = f"{sum(g[s]['train_s'] for s in paired) / sum(base[s]['train_s'] for s in paired):5.2f}" \
                if paired else ""
            tests = [g[s]["test"] for s in seeds if "test" in g[s]]
            out.append(f"{corpus:<6} {variant:<8} {','.join(map(str, seeds)):<6} {dev:7.2f} {delta:>6} "
                       f"{','.join(str(g[s]['epoch']) for s in seeds):<10} {t:6.1f} {ratio:>5} "
                       f"{'' if not tests else f'{statistics.mean(tests):7.2f}':>7}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--variants", default="default,m0.5,m1,pa0.1,pa1")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", default="study_margin.jsonl", help="JSON lines, appended (and read back)")
    ap.add_argument("--test", action="store_true", help="also score the test set of --chosen and default")
    ap.add_argument("--chosen", default=None, help="the variant chosen on the dev figures (with --test)")
    ap.add_argument("--table-only", action="store_true", help="print the table of --out, run nothing")
    ap.add_argument("--bench", action="store_true",
                    help="time the --variants on each of --corpora (featurized once, interleaved), run nothing else")
    add_lever_options(ap)
    args = ap.parse_args(argv)
    specs = corpora(args.corpora_dir)
    unknown = sorted(set(args.corpora.split(",")) - set(specs))
    if unknown:
        ap.error(f"unknown corpus {', '.join(unknown)} (one of {', '.join(specs)})")
    if args.bench:
        for corpus in args.corpora.split(","):
            print(bench(specs[corpus], corpus, args.variants.split(","), epochs=args.epochs or 3), flush=True)
        return 0
    out = Path(args.out)
    done = [json.loads(line) for line in out.read_text().splitlines() if line.strip()] if out.exists() else []
    if not args.table_only:
        seeds = [int(s) for s in args.seeds.split(",")]
        variants = args.variants.split(",")
        if args.test:
            if not args.chosen:
                ap.error("--test needs --chosen (the variant picked on the dev figures)")
            variants = ["default", args.chosen] if args.chosen != "default" else ["default"]
        for corpus in args.corpora.split(","):
            for seed in seeds:
                for variant in variants:
                    if any(r["corpus"] == corpus and r["variant"] == variant and r["seed"] == seed
                           and ("test" in r) == args.test for r in done):
                        continue
                    row = run(specs[corpus], corpus, variant, seed, test=args.test, epochs=args.epochs)
                    done.append(row)
                    with out.open("a") as f:
                        f.write(json.dumps(row) + "\n")
                    print(f"{corpus} {variant} seed {seed}: dev {row['dev']:.2f} (epoch {row['epoch']}) "
                          f"train {row['train_s']:.1f} s" + (f" test {row['test']:.2f}" if "test" in row else ""),
                          flush=True)
    print(table([r for r in done if ("test" in r) == args.test]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
