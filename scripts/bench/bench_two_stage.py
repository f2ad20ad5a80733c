#!/usr/bin/env python
"""Two-stage NER as the library builds it (``Tagger(two_stage=True)``, ``structperc train --two-stage``)
against the default ``ner`` tagger, on CoNLL-2002: entity F1 on the development file
(``*.testa``) per seed, training and tagging seconds, and, with ``--test``, the test file (``*.testb``)
scored once per model, after the choice.

    python scripts/bench/bench_two_stage.py                          # esp and ned, seeds 0-2, testa
    python scripts/bench/bench_two_stage.py --langs esp --seeds 0,1,2,3,4 --test
    python scripts/bench/bench_two_stage.py --stage-folds 0         # training columns from the gold tags
    python scripts/bench/bench_two_stage.py --langs esp --order 2   # both rows with second-order transitions

Nothing is chosen here on a test file: the column and its window were chosen on esp.testa by
``scripts/studies/study_ner_twopass.py``; ``--stage-folds`` (`structperc.train.run.STAGE_FOLDS`: the training
sentences' column from jackknifed first-stage predictions over K folds, or 0: from their gold tags) was
chosen with this script on the two development files.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from structperc import Tagger
from structperc.train import run as fitting

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2002"
#: The epochs of the corpus-floor tests, each chosen on the language's testa: 8 (the ner preset) for
#: Spanish, 13 for Dutch.
EPOCHS = {"esp": 8, "ned": 13}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--langs", default="esp,ned")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--test", action="store_true", help="also score the test file (once per model)")
    p.add_argument("--order", type=int, default=1, choices=(1, 2), help="the Markov order of both rows' transitions")
    p.add_argument("--stage-folds", type=int, default=None,
                   help=f"jackknife folds of the training column (0: gold tags) [default: {fitting.STAGE_FOLDS}]")
    args = p.parse_args()
    if args.stage_folds is not None:
        fitting.STAGE_FOLDS = args.stage_folds
    seeds = [int(s) for s in args.seeds.split(",")]
    parts = ("testa", "testb") if args.test else ("testa",)
    for lang in args.langs.split(","):
        files = {part: CORPORA / f"{lang}.{part}" for part in ("train",) + parts}
        missing = [str(f) for f in files.values() if not f.exists()]
        if missing:
            raise SystemExit(f"error: {', '.join(missing)} not found")
        rows: dict[str, dict[str, list[float]]] = {}
        for seed in seeds:
            for name, two_stage in (("default", False), ("two-stage", True)):
                row = rows.setdefault(name, {})
                start = time.perf_counter()
                tagger = Tagger.train(str(files["train"]), task="ner", seed=seed, epochs=EPOCHS.get(lang),
                                      two_stage=two_stage, order=args.order)
                row.setdefault("train s", []).append(time.perf_counter() - start)
                for part in parts:
                    start = time.perf_counter()
                    row.setdefault(part, []).append(100 * tagger.score(str(files[part])))
                    row.setdefault(f"{part} tag+score s", []).append(time.perf_counter() - start)
                print(f"{lang} seed {seed} {name:<9} " + "  ".join(f"{part} {row[part][-1]:.2f}" for part in parts)
                      + f"  train {row['train s'][-1]:.1f} s", flush=True)
        print(f"\n{lang}, seeds {args.seeds}, order {args.order}, training column from {fitting.STAGE_FOLDS or 'gold'} "
              f"{'folds' if fitting.STAGE_FOLDS else 'tags'} (means; Δ paired on the same seeds)")
        for name, row in rows.items():
            print(f"  {name:<9} " + "  ".join(f"{k} {statistics.mean(v):.2f}" for k, v in row.items()))
        for part in parts:
            deltas = [b - a for a, b in zip(rows["default"][part], rows["two-stage"][part])]
            print(f"  Δ {part}: {statistics.mean(deltas):+.2f} (" + ", ".join(f"{d:+.2f}" for d in deltas) + ")")
        ratio = statistics.mean(rows["two-stage"]["train s"]) / statistics.mean(rows["default"]["train s"])
        print(f"  training time ×{ratio:.2f}\n", flush=True)


if __name__ == "__main__":
    main()
