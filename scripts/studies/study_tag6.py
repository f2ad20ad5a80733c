"""The 6-tag set on SIGHAN 2008 SXU: a segmenter learning in B/M/E/S against one learning in
B, B2, B3, M, E, S (Zhao et al. 2006; ``Segmenter(encoding="bmes6")``), scored on a held-out tenth of the
training file, never on test.

The held-out tenth is the one ``--dev-split 0.1`` holds out (the permutation of `structperc.train.run.fit`
for the seed); the model trains on the other nine tenths with the held-out sentences as ``dev`` (the best
of ``--epochs`` epochs is kept), and the held-out sentences are then scored like test data (word F1, OOV
and IV recall against the nine tenths' words), as in ``study_cws.py`` and ``study_av.py``. Training
seconds are the whole fit's (dictionary jackknife, featurizing, the epochs).

    python scripts/studies/study_tag6.py                                    # cws preset, both encodings, seeds 0,1,2
    python scripts/studies/study_tag6.py --templates cws,hanlp-cws --seeds 0
    python scripts/studies/study_tag6.py --no-dev --test cws:bmes6          # test figure of it and of the default, once
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from heldout import emitter, held_out_run
from heldout import test_run as scored_on_test

from structperc import Segmenter
from structperc.io.segmented import read_segmented_corpus

CORPORA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpora", "sighan2008_sxu")
ENCODINGS = ("bmes", "bmes6")
DEFAULT = "cws:bmes"


def dev_run(template: str, encoding: str, sents: list[list[str]], seed: int, epochs: int) -> dict:
    def fit(kept: list, held: list, history: list) -> Segmenter:
        seg = Segmenter(template=template, epochs=epochs, seed=seed, encoding=encoding)
        return seg.fit(kept, dev=held, callback=history.append)
    return held_out_run(fit, sents, seed, epochs, template=template, encoding=encoding)


def test_run(template: str, encoding: str, train: str, test: str, seed: int, epochs: int) -> dict:
    """The README's command: ``--dev-split 0.1 --epochs 15`` on all of train.txt, scored on test.txt."""
    return scored_on_test(lambda: Segmenter(template=template, epochs=epochs, seed=seed, dev_split=0.1,
                                            encoding=encoding).fit(train),
                          test, seed, template=template, encoding=encoding)


def variant(name: str) -> tuple[str, str]:
    """``TEMPLATE:ENCODING`` -> (template preset, encoding)."""
    template, _, encoding = name.partition(":")
    if encoding not in ENCODINGS:
        raise SystemExit(f"a variant is TEMPLATE:ENCODING with ENCODING one of {', '.join(ENCODINGS)}, not {name!r}")
    return template, encoding


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default=CORPORA)
    ap.add_argument("--templates", default="cws", help="comma-separated template presets (cws, hanlp-cws, …)")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--test", metavar="TEMPLATE:ENCODING",
                    help=f"also score this variant and the default ({DEFAULT}) once on test.txt, seed 0")
    ap.add_argument("--no-dev", action="store_true", help="skip the held-out runs (with --test)")
    ap.add_argument("--jsonl", help="append every result to this file")
    args = ap.parse_args(argv)
    train = os.path.join(args.corpora, "train.txt")
    sents, _ = read_segmented_corpus(train)
    seeds = [int(s) for s in args.seeds.split(",")]
    results: list[dict] = []
    emit = emitter(results, args.jsonl)

    if not args.no_dev:
        templates = args.templates.split(",")
        for template in templates:
            for seed in seeds:
                for encoding in ENCODINGS:
                    emit(dev_run(template, encoding, sents, seed, args.epochs))
        print(f"\nSXU held-out tenth of train.txt, best of {args.epochs} epochs; means over seeds")
        print("| template | encoding | seeds | word F1 | Δ F1 | OOV recall | IV recall | best epochs "
              "| train s | s/epoch |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for template in templates:
            base = [r for r in results if r["template"] == template and r["encoding"] == "bmes"]
            for encoding in ENCODINGS:
                rows = [r for r in results if r["template"] == template and r["encoding"] == encoding]
                delta = np.mean([r["f1"] for r in rows]) - np.mean([r["f1"] for r in base])
                print(f"| {template} | {encoding} | {','.join(str(r['seed']) for r in rows)} "
                      f"| {np.mean([r['f1'] for r in rows]):.2f} | {delta:+.2f} "
                      f"| {np.mean([r['oov_recall'] for r in rows]):.2f} "
                      f"| {np.mean([r['iv_recall'] for r in rows]):.2f} "
                      f"| {','.join(str(r['best_epoch']) for r in rows)} "
                      f"| {np.mean([r['train_seconds'] for r in rows]):.1f} "
                      f"| {np.mean([r['epoch_seconds'] for r in rows]):.3f} |")
            print("per seed, F1 bmes → bmes6: " + "; ".join(
                f"seed {s}: " + " → ".join(f"{r['f1']:.2f}" for r in results
                                           if r["template"] == template and r["seed"] == s)
                for s in seeds))
    if args.test:
        for name in dict.fromkeys([DEFAULT, args.test]):
            emit(test_run(*variant(name), train, os.path.join(args.corpora, "test.txt"), 0, 15))
    return 0


if __name__ == "__main__":
    sys.exit(main())
