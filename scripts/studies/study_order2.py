#!/usr/bin/env python
"""The second-order lever study: first-order (the default) against second-order transitions
(y_{t-2}, y_{t-1}, y_t) with the same features (the task presets), on held-out data only.

    python scripts/studies/study_order2.py                       # every corpus, orders 1 and 2, seed 0
    python scripts/studies/study_order2.py --corpora chunk,esp --seeds 0,1
    python scripts/studies/study_order2.py --table-only          # the table of what --out holds
    python scripts/studies/study_order2.py --bench --epochs 3    # training time of both orders, interleaved
    python scripts/studies/study_order2.py --corpora esp --seeds 0,1,2,3,4 --epochs 16 --test
                                                                 # + the test figure of both orders (once)

Protocol (nothing is chosen on a test set): both orders have the task's epoch budget and the best
epoch by the held-out score:

* chunk: CoNLL-2000 train.txt, ``Tagger(task="chunk", dev_split=0.1)`` (the held-out tenth, span F1);
* sxu: SIGHAN 2008 SXU train.txt, ``Segmenter(dev_split=0.1)`` (word F1 of the tenth);
* esp: CoNLL-2002 esp.train, ``Tagger(task="ner")`` with ``dev=esp.testa`` (entity F1);
* ewt: UD EWT train, ``Tagger(task="pos")`` with ``dev=en_ewt-ud-dev`` (UPOS accuracy).

Order 2 is the estimator's own ``Tagger(order=2)`` (dictionaries, jackknifing, features, labels, the
split, the dev scoring of `structperc.train.run`, `structperc.train.order2.train_perceptron_order2` and
`structperc.decode.order2.predict_order2`; a Segmenter, which has no ``order`` parameter, through
`heldout.StudySegmenter`); dev-only runs
skip the refit on the whole training file (the figure is the probe's). Time is the trainer's (its
epochs' seconds, dev scoring excluded), both orders in the same process one after the other; the
ratio is order 2's to order 1's on the same corpus and seed. Rows are appended to ``--out`` (JSON
lines) as they finish. ``--test`` (for the order chosen on the held-out figures and the default, once)
trains as the estimator would (the refit on the whole training file where the held-out data is a split)
and adds the test figure, the second-order model decoding the test file with its tensor.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from heldout import add_lever_options, corpora, estimator, fresh_state, training_arrays

#: The corpora in this study's order.
CORPORA = ("chunk", "ewt", "esp", "sxu")


def run(spec: dict, corpus: str, order: int, seed: int, epochs: int | None = None, test: bool = False) -> dict:
    """Train one order on one corpus: the best held-out score, its epoch, the trainer's seconds, and
    (``test``) the test score of the final model (the refit one where the held-out data is a split)."""
    reports: list = []
    started = time.perf_counter()
    model = estimator(spec, seed=seed, refit=test, order=order, **({"epochs": epochs} if epochs else {}))
    model.fit(str(spec["train"]), dev=str(spec["dev"]) if "dev" in spec else None, callback=reports.append)
    wall = time.perf_counter() - started
    test_score = 100 * model.score(str(spec["test"])) if test else None
    probe = [r for r in reports if r.dev_score is not None]
    best = max(probe, key=lambda r: r.dev_score)  # the first of equal scores, as the trainer keeps it
    trained = 2 if model.weights_.order2 is not None else 1  # what the model holds, not what was asked
    row = {"corpus": corpus, "order": order, "trained_order": trained, "seed": seed, "dev": 100 * best.dev_score,
           "epoch": best.epoch, "epochs": best.epochs, "train_s": sum(r.seconds for r in probe),
           "epoch_s": statistics.mean(r.seconds for r in probe), "wall_s": wall,
           "curve": [round(100 * r.dev_score, 2) for r in probe], "mistakes": [r.mistakes for r in probe]}
    if test_score is not None:
        row["test"] = test_score
    return row


def bench(spec: dict, corpus: str, epochs: int = 3, rounds: int = 3) -> str:
    """Training seconds of both orders on one corpus's featurized training data (featurized once, as
    the estimator does), the orders interleaved ``rounds`` times so that the machine's load falls on
    both alike; the fastest round of each, and the ratio."""
    from structperc.train import perceptron
    from structperc.train.order2 import train_perceptron_order2

    held = training_arrays(spec)
    times: dict = {1: [], 2: []}
    for _ in range(rounds):
        for order in (1, 2):
            state = fresh_state(held)
            reports: list = []
            train = perceptron.train_perceptron if order == 1 else train_perceptron_order2
            train(held["feats"], held["y"], state, mask=held["mask"], end=held["end"], epochs=epochs, seed=0,
                  callback=reports.append)
            times[order].append(sum(r.seconds for r in reports))
            del state
    base = min(times[1])
    lines = [f"{corpus}: {held['L']} labels, training seconds of {epochs} epochs, fastest of {rounds} "
             "interleaved rounds"]
    for order in (1, 2):
        t = min(times[order])
        each = ", ".join(f"{x:.2f}" for x in times[order])
        lines.append(f"  order {order}  {t:7.2f} s  ×{t / base:.2f}   (rounds: {each})")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    """Per corpus and order: the mean held-out score over its seeds, Δ = the mean paired difference to
    order 1, the best epochs, seconds per epoch and its ratio to order 1's on the same seeds."""
    out = [f"{'corpus':<6} {'order':>5} {'seeds':<10} {'dev':>7} {'Δ':>6} {'best epochs':<20} {'s/epoch':>8} "
           f"{'×o1':>5} {'test':>7}"]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["corpus"], r["order"]), {})[r["seed"]] = r
    for corpus in CORPORA:
        base = groups.get((corpus, 1), {})
        for order in (1, 2):
            g = groups.get((corpus, order))
            if not g:
                continue
            seeds = sorted(g)
            dev = statistics.mean(g[s]["dev"] for s in seeds)
            per_epoch = statistics.mean(g[s]["epoch_s"] for s in seeds)
            paired = [s for s in seeds if s in base]
            delta = f"{statistics.mean(g[s]['dev'] - base[s]['dev'] for s in paired):+6.2f}" if paired else ""
            ratio = f"{sum(g[s]['epoch_s'] for s in paired) / sum(base[s]['epoch_s'] for s in paired):5.2f}" \
                if paired else ""
            epochs = ",".join(str(g[s]["epoch"]) for s in seeds) + f" of {g[seeds[0]]['epochs']}"
            tests = [g[s]["test"] for s in seeds if "test" in g[s]]
            out.append(f"{corpus:<6} {order:>5} {','.join(map(str, seeds)):<10} {dev:7.2f} {delta:>6} {epochs:<20} "
                       f"{per_epoch:8.2f} {ratio:>5} {f'{statistics.mean(tests):7.2f}' if tests else '':>7}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", default=",".join(CORPORA))
    ap.add_argument("--orders", default="1,2")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--out", default="study_order2.jsonl", help="JSON lines, appended (and read back)")
    ap.add_argument("--table-only", action="store_true", help="print the table of --out, run nothing")
    ap.add_argument("--test", action="store_true", help="also score the test set (the chosen order and the default)")
    ap.add_argument("--bench", action="store_true",
                    help="time both orders on each of --corpora (featurized once, interleaved), run nothing else")
    add_lever_options(ap)
    args = ap.parse_args(argv)
    specs = corpora(args.corpora_dir)
    unknown = sorted(set(args.corpora.split(",")) - set(specs))
    if unknown:
        ap.error(f"unknown corpus {', '.join(unknown)} (one of {', '.join(specs)})")
    if args.bench:
        for corpus in args.corpora.split(","):
            print(bench(specs[corpus], corpus, args.epochs or 3), flush=True)
        return 0
    out = Path(args.out)
    if not args.table_only:
        for corpus in args.corpora.split(","):
            for seed in map(int, args.seeds.split(",")):
                for order in map(int, args.orders.split(",")):
                    row = run(specs[corpus], corpus, order, seed, args.epochs, args.test)
                    print(json.dumps(row), flush=True)
                    with out.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(row) + "\n")
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines() if line.strip()] \
        if out.exists() else []
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
