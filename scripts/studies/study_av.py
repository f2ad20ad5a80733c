"""Accessor variety on SIGHAN 2008 SXU: template variants reading the ``av*`` columns of
`structperc.features.variety`, scored on a held-out tenth of the training file, never on test.

The held-out tenth is the one ``--dev-split 0.1`` holds out (the permutation of `structperc.train.run.fit`
for the seed); the model trains on the other nine tenths with the held-out sentences as ``dev`` (the best
epoch is kept), and the held-out sentences are then scored like test data (word F1, OOV recall against
the nine tenths' words).

Where the AV statistics come from, per variant:

* inductive (no prefix): the nine tenths' text only, each training sentence's values from the other
  jackknife folds' text (``VarietyLearner(jackknife=True)``, as the lexicon's);
* ``nojk-``: the nine tenths' text, every sentence with the statistics of all of it;
* ``trans-`` (transductive, as the bakeoff systems used the test text): the nine tenths' text plus the
  held-out sentences' raw characters (``Segmenter(raw=...)``), no jackknife (the text tagged is in the
  statistics at tagging time too). With ``--test``, the test file's raw text is the raw text.

    python scripts/studies/study_av.py                          # every variant, seed 0
    python scripts/studies/study_av.py --variants default,zk --seeds 0,1,2
    python scripts/studies/study_av.py --no-dev --test zk       # test figure of zk and of the default, once
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys
from typing import Iterator
from unittest import mock

import numpy as np
from heldout import add_common_options, emitter, held_out_run
from heldout import test_run as scored_on_test

import structperc.segmenter
from structperc import Segmenter
from structperc.features.instances import template_columns
from structperc.features.templates import CWS, CWS_CHARS
from structperc.features.variety import NS, VarietyLearner, variety_columns
from structperc.io.segmented import read_segmented_corpus

CORPORA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpora", "sighan2008_sxu")

#: Zhao & Kit's formulation: per n, the best covering n-gram's bucket and c[0]'s place in it.
ZK = [f"av{n}[0]" for n in NS]
#: ... and the same at the neighbours, and all n together.
ZK_CTX = ZK + ["av2[-1]", "av2[1]", "av2[0]|av3[0]|av4[0]|av5[0]"]
#: Edge formulation: the buckets of the n-grams that start / end at c[0]; the boundary before c[0] (an
#: n-gram ending at c[-1], one starting at c[0]).
EDGE = [f"av{n}{k}[0]" for n in NS for k in "be"] + ["av2e[-1]|av2b[0]", "av3e[-1]|av3b[0]"]
#: Longest-first view: for each side, the buckets of all lengths as one feature.
EDGE_ALL = EDGE + ["av2b[0]|av3b[0]|av4b[0]|av5b[0]", "av2e[0]|av3e[0]|av4e[0]|av5e[0]"]

#: Feng et al.'s unsupervised segmentation (the one maximising the summed length × AV bucket of its words),
#: as B/M/E/S tags.
SEG = ["avseg[0]", "avseg[-1]|avseg[0]", "avseg[0]|avseg[1]", "c[0]|avseg[0]"]

TEMPLATES: dict[str, list[str]] = {
    "default": list(CWS),
    "zk": CWS + ZK,
    "zkctx": CWS + ZK_CTX,
    "edge": CWS + EDGE,
    "edgeall": CWS + EDGE_ALL,
    "zk+edge": CWS + ZK + EDGE,
    "zkc": CWS + ZK + ["c[0]|av2[0]", "c[0]|av3[0]", "c[0]|av4[0]"],
    "seg": CWS + SEG,
    "zklex": CWS + ZK + ["av2[0]|lexb[0]", "av2[0]|lexe[0]", "av3[0]|lexm[0]"],
    "chars": list(CWS_CHARS),            # references: no lexicon columns, with and without AV
    "chars+zk": CWS_CHARS + ZK,
    "chars+seg": CWS_CHARS + SEG,
    "zk+seg": CWS + ZK + SEG,
}
DEFAULT_VARIANTS = ["default", "zk", "nojk-zk", "trans-zk", "edge", "nojk-edge", "trans-edge", "nojk-zkctx",
                    "nojk-edgeall", "nojk-zk+edge", "nojk-zkc", "nojk-zk-min4", "nojk-zk-min8"]


def variant(name: str) -> tuple[str, str, int]:
    """A variant's template, AV statistics ("jk", "nojk", "trans") and ``min_av``: names are
    ``[nojk-|trans-]TEMPLATE[-minK]``, e.g. ``trans-zk-min4``."""
    stats = "jk"
    for prefix in ("nojk", "trans"):
        if name.startswith(prefix + "-"):
            stats, name = prefix, name[len(prefix) + 1:]
    template, _, min_av = name.partition("-min")
    if template not in TEMPLATES:
        raise SystemExit(f"unknown variant template {template!r} (known: {', '.join(TEMPLATES)})")
    return template, stats, int(min_av or 2)


@contextlib.contextmanager
def statistics(stats: str, min_av: int) -> Iterator[None]:
    """Segmenters trained inside learn AV with or without jackknifing, and keep n-grams of AV ≥ ``min_av``."""
    learner = functools.partial(VarietyLearner, jackknife=stats == "jk", min_av=min_av)
    with mock.patch.object(structperc.segmenter, "VarietyLearner", learner):
        yield


def dev_run(name: str, sents: list[list[str]], seed: int, epochs: int) -> dict:
    template, stats, min_av = variant(name)

    def fit(kept: list, held: list, history: list) -> Segmenter:
        raw = ["".join(s) for s in held] if stats == "trans" else None
        with statistics(stats, min_av):
            seg = Segmenter(template=TEMPLATES[template], epochs=epochs, seed=seed, raw=raw)
            return seg.fit(kept, dev=held, callback=history.append)
    return held_out_run(fit, sents, seed, epochs, variant=name)


def test_run(name: str, train: str, test: str, seed: int, epochs: int) -> dict:
    template, stats, min_av = variant(name)
    raw = test if stats == "trans" else None    # the test file's characters, spaces removed: unlabelled text

    def fit() -> Segmenter:
        with statistics(stats, min_av):
            return Segmenter(template=TEMPLATES[template], epochs=epochs, seed=seed, dev_split=0.1, raw=raw).fit(train)
    return scored_on_test(fit, test, seed, variant=name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                    help="comma-separated [nojk-|trans-]TEMPLATE[-minK], TEMPLATE one of " + ", ".join(TEMPLATES))
    add_common_options(ap, CORPORA, "0")
    args = ap.parse_args(argv)
    train = os.path.join(args.corpora, "train.txt")
    sents, _ = read_segmented_corpus(train)
    results: list[dict] = []
    emit = emitter(results, args.jsonl)
    names = args.variants.split(",")
    if not args.no_dev:
        for name in names:
            for seed in [int(s) for s in args.seeds.split(",")]:
                emit(dev_run(name, sents, seed, args.epochs))
        print("\n| variant | AV statistics | seeds | word F1 (dev) | OOV recall (dev) | best epochs | train s |")
        print("|---|---|---|---|---|---|---|")
        for name in names:
            rows = [r for r in results if r["variant"] == name]
            _, stats, min_av = variant(name)
            reads = variety_columns(template_columns(TEMPLATES[variant(name)[0]]))
            what = {"jk": "train, jackknifed", "nojk": "train",
                    "trans": "train + held-out raw (transductive)"}[stats] if reads else "none"
            print(f"| {name} | {what}, AV ≥ {min_av} | {','.join(str(r['seed']) for r in rows)} "
                  f"| {np.mean([r['f1'] for r in rows]):.2f} | {np.mean([r['oov_recall'] for r in rows]):.2f} "
                  f"| {','.join(str(r['best_epoch']) for r in rows)} "
                  f"| {np.mean([r['train_seconds'] for r in rows]):.1f} |")
    if args.test:
        for name in dict.fromkeys(["default", args.test]):
            emit(test_run(name, train, os.path.join(args.corpora, "test.txt"), 0, 15))
    return 0


if __name__ == "__main__":
    sys.exit(main())
