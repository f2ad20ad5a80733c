#!/usr/bin/env python
"""What transition constraints do to entity F1 on CoNLL-2002: train with or without them, decode with or
without them, score on testa (the development set) and testb (the test set).

    python scripts/studies/study_constraints.py --lang esp --epochs 8
    python scripts/studies/study_constraints.py --lang ned --epochs 13

Four rows per language:

* train C, decode C — the `ner` preset's default (``constrained=True``: IOBES mask in training and
  decoding);
* train U, decode C — the same constraints at decoding only, on a model trained without them;
* train U, decode U — ``--unconstrained``;
* train C, decode U — shown for completeness: a model trained under the mask never learned to avoid
  invalid transitions itself, so decoding it without the mask is poor.

"Train U, decode C" against "train U, decode U" isolates constrained *decoding* (same weights).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from structperc import Tagger
from structperc.labels import transition_mask

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2002"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lang", choices=["esp", "ned"], default="esp")
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--corpora", type=Path, default=CORPORA, help="folder holding esp.train, … ned.testb")
    args = p.parse_args()
    files = {part: args.corpora / f"{args.lang}.{part}" for part in ("train", "testa", "testb")}
    for path in files.values():
        if not path.exists():
            raise SystemExit(f"error: {path} not found (see ../shared/corpora/conll2002/README)")
    print(f"CoNLL-2002 {args.lang}, ner preset, {args.epochs} epochs, seed {args.seed}: entity F1 (%)")
    print(f"{'train':<7}{'decode':<8}{'testa':>7}{'testb':>7}")
    for train_constrained in (True, False):
        tagger = Tagger.train(str(files["train"]), task="ner", epochs=args.epochs, seed=args.seed,
                              constrained=train_constrained)
        trained = tagger.weights_
        for decode_constrained in (True, False):
            scheme = tagger.task_.model_scheme if decode_constrained else "none"
            mask, end = transition_mask(tagger.labels_, scheme)
            tagger.weights_ = dataclasses.replace(trained, mask=mask, end=end)
            scores = [100 * tagger.score(str(files[part])) for part in ("testa", "testb")]
            print(f"{'C' if train_constrained else 'U':<7}{'C' if decode_constrained else 'U':<8}"
                  f"{scores[0]:>7.2f}{scores[1]:>7.2f}", flush=True)


if __name__ == "__main__":
    main()
