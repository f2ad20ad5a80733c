#!/usr/bin/env python
"""Calibration of the token confidence: expected calibration error on test
before and after fitting the temperature, and the accuracy-coverage curve.

    python scripts/bench/bench_calibration.py                  # CoNLL-2000 and CoNLL-2002 esp
    python scripts/bench/bench_calibration.py --corpus chunk   # one of them

Protocol (nothing is chosen on a test set):

* CoNLL-2000 chunking: ``train --dev-split 0.1``: the epochs are picked and τ is fitted on a seeded
  tenth of train held out by a probe model, then the model is retrained on all of train.
* CoNLL-2002 Spanish NER: ``train --dev esp.testa``: epochs and τ on esp.testa; scored on esp.testb.

The token confidence is the marginal probability of the predicted tag (data scheme: IOB2); a token is
correct when its predicted tag equals the gold one. ECE uses 15 equal-width bins.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
CORPORA = {
    "chunk": dict(task="chunk", train=ROOT / "conll2000" / "train.txt", test=ROOT / "conll2000" / "test.txt",
                  fit=dict(dev_split=0.1)),
    "ner-esp": dict(task="ner", train=ROOT / "conll2002" / "esp.train", test=ROOT / "conll2002" / "esp.testb",
                    fit=dict(), dev=ROOT / "conll2002" / "esp.testa"),
}


def run(name: str, spec: dict) -> dict:
    from structperc import Tagger, predict
    from structperc.metrics import accuracy_coverage

    t0 = time.perf_counter()
    params = dict(task=spec["task"], **spec["fit"])
    tagger = Tagger(**params).fit(str(spec["train"]), dev=str(spec["dev"]) if "dev" in spec else None)
    seconds = time.perf_counter() - t0
    model = tagger.model_
    corpus = tagger.gold_corpus(str(spec["test"]))
    before = predict.calibration_report(model, corpus, temperature=1.0)
    after = predict.calibration_report(model, corpus)
    score = tagger.score(corpus)
    c = tagger.calibration_
    print(f"\n== {name}: {spec['train'].name} -> {spec['test'].name}  (trained in {seconds:.1f} s, "
          f"best epoch {tagger.best_epoch_})")
    print(f"headline score (span F1 / accuracy) on test: {100 * score:.2f}")
    print(f"temperature τ = {c['temperature']:.4g} fitted on {c['source']} ({c['tokens']} tokens): "
          f"held-out NLL {c['nll'][0]:.4f} -> {c['nll'][1]:.4f}, held-out ECE {c['ece'][0]:.4f} -> "
          f"{c['ece'][1]:.4f}")
    print(f"test ECE (15 bins): before {before['ece']:.4f}  after {after['ece']:.4f}   "
          f"test token NLL: before {before['nll']:.4f}  after {after['nll']:.4f}")
    print("accuracy-coverage on test (after calibration): threshold  coverage  accuracy")
    for row in accuracy_coverage(after["confidence"], after["correct"]):
        acc = "-" if row["accuracy"] is None else f"{100 * row['accuracy']:.2f}"
        print(f"  {row['threshold']:>5.2f}  {100 * row['coverage']:>7.2f}  {acc:>7}")
    return {"ece_before": before["ece"], "ece_after": after["ece"], "temperature": c["temperature"],
            "accuracy": float(np.mean(after["correct"]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), action="append",
                        help="Corpus to run (repeatable) [default: all].")
    args = parser.parse_args()
    results = {}
    for name in args.corpus or sorted(CORPORA):
        spec = CORPORA[name]
        if not spec["train"].exists():
            print(f"{name}: {spec['train']} is absent; skipped")
            continue
        results[name] = run(name, spec)
    print("\ncorpus    τ        ECE before  ECE after  (target: after <= 0.02)")
    for name, r in results.items():
        print(f"{name:<9} {r['temperature']:<8.4g} {r['ece_before']:<11.4f} {r['ece_after']:.4f}")


if __name__ == "__main__":
    main()
