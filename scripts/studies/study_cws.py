"""The CWS lever study on SIGHAN 2008 SXU: template variants scored on a held-out tenth
of the training file, never on test.

The held-out tenth is the one ``--dev-split 0.1`` holds out (the same permutation of the training
sentences for the same seed, `structperc.train.run.fit`); the model is trained on the other nine
tenths with the held-out sentences as ``dev``, so each epoch is scored on them, the best epoch is
kept (dev-chosen epochs), and the held-out sentences are then scored like test data: word F1 and
OOV recall against the nine tenths' words. With ``--test`` the chosen variant and the default are
also trained on all of train (``--dev-split 0.1`` picking the epoch, the README's command) and scored
once on test.txt.

    python scripts/studies/study_cws.py                      # every variant, seeds 0,1,2, 15 epochs (~10 min alone)
    python scripts/studies/study_cws.py --variants default,lexsets --seeds 0
    python scripts/studies/study_cws.py --no-dev --variants default,noatomic --test noatomic   # test, once

Variants reading the opt-in columns of `structperc.features.lexicon` (``lexbs`` …) train with
dictionaries that write them (`columns_for`); ``noatomic*`` variants segment without the Latin/digit
run constraint; ``folds*`` change the jackknife's folds; ``*25`` allow 25 epochs.
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
from structperc.features.lexicon import EXTRA_COLUMNS, LexiconLearner
from structperc.features.templates import CWS, CWS_CHARS
from structperc.io.segmented import read_segmented_corpus

CORPORA = os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "corpora", "sighan2008_sxu")

#: Boundary n-grams: the character trigram around the boundary before c[0], and the one after it.
TRIGRAM = ["c[-1]|c[0]|c[1]"]
TRIGRAM2 = ["c[-1]|c[0]|c[1]", "c[-2]|c[-1]|c[0]", "c[0]|c[1]|c[2]"]
#: Punctuation/number context: wider character-type windows.
TYPES = ["chartype(c[-2])|chartype(c[-1])|chartype(c[0])", "chartype(c[0])|chartype(c[1])|chartype(c[2])",
         "chartype(c[-1])|c[0]", "c[0]|chartype(c[1])"]
#: Character-type runs (columns ``trun``: length of the run of c[0]'s type, ``tpos``: c[0]'s place in it).
RUNS = ["trun[0]|tpos[0]", "chartype(c[0])|trun[0]|tpos[0]", "tpos[-1]|tpos[0]"]
#: Which lengths of dictionary words start (``lexbs``) and end (``lexes``) at c[0], not only the longest.
LEXSETS = ["lexbs[0]", "lexes[0]", "lexes[-1]|lexbs[0]", "lexbs[0]|lexes[0]|lexm[0]"]
#: Where c[0] stands in the dictionary's words (``chpos``: the set of B/M/E/S places it takes in them).
CHPOS = ["chpos[0]", "chpos[-1]|chpos[0]", "chpos[0]|chpos[1]", "chpos[-1]|chpos[0]|chpos[1]", "c[0]|chpos[0]"]

#: Dictionary evidence at the neighbours: does a word end just before c[0], start just after it.
LEXCTX = ["lexe[-1]", "lexb[1]", "lexb[0]|lexb[1]", "lexe[-1]|lexe[0]", "lexm[-1]|lexm[0]|lexm[1]"]
#: Transitions conditioned on the dictionary: a weight per (label pair, longest match starting/ending here).
YLEX = ["y[-1]|y[0]|lexb[0]", "y[-1]|y[0]|lexe[0]"]

VARIANTS: dict[str, list[str]] = {
    "default": list(CWS),
    "chars": list(CWS_CHARS),           # reference: no dictionary columns at all
    "trigram": CWS + TRIGRAM,
    "trigram3": CWS + TRIGRAM2,
    "types": CWS + TYPES,
    "runs": CWS + RUNS,
    "lexsets": CWS + LEXSETS,
    "chpos": CWS + CHPOS,
    "lexctx": CWS + LEXCTX,
    "ylex": CWS + YLEX,
    "types+lexsets": CWS + TYPES + LEXSETS,
    "folds5": list(CWS),
    "folds20": list(CWS),
    "folds2": list(CWS),
    "folds3": list(CWS),
    "epochs25": list(CWS),
    "noatomic": list(CWS),
    "noatomic25": list(CWS),
}
#: Variants that segment without keeping Latin-letter and digit runs whole (`Segmenter.atomic_`):
#: joined without spaces, bakeoff text runs words of such runs together ("ＢｒｙａｎＲｏｂｉｎｓｏｎ",
#: a date's day before a time "０４０９：２１：５６"), which the run constraint then cannot cut.
NOATOMIC = {"noatomic", "noatomic25"}
#: Epochs per variant (the most the held-out tenth chooses from; ``--epochs`` otherwise, and 15 for
#: ``--test``, the README's command).
EPOCHS = {"epochs25": 25, "noatomic25": 25}
#: Jackknife folds per variant (`Segmenter`'s ``folds``; 10 unless given).
FOLDS = {"folds2": 2, "folds3": 3, "folds5": 5, "folds20": 20}


@contextlib.contextmanager
def columns_for(lines: list[str]) -> Iterator[None]:
    """Segmenters trained inside learn dictionaries that write the opt-in `EXTRA_COLUMNS` when
    ``lines`` read any (`Segmenter` itself never asks for them: none paid)."""
    if set(EXTRA_COLUMNS) & template_columns(lines):
        with mock.patch.object(structperc.segmenter, "LexiconLearner",
                               functools.partial(LexiconLearner, extended=True)):
            yield
    else:
        yield


def dev_run(name: str, lines: list[str], sents: list[list[str]], seed: int, epochs: int) -> dict:
    def fit(kept: list, held: list, history: list) -> Segmenter:
        with columns_for(lines):
            seg = Segmenter(template=lines, epochs=epochs, seed=seed, folds=FOLDS.get(name, 10))
            seg.fit(kept, dev=held, callback=history.append)
        if name in NOATOMIC:
            seg.atomic_ = {kind: False for kind in seg.atomic_}
        return seg
    return held_out_run(fit, sents, seed, epochs, variant=name)


def test_run(name: str, lines: list[str], train: str, test: str, seed: int, epochs: int) -> dict:
    def fit() -> Segmenter:
        with columns_for(lines):
            seg = Segmenter(template=lines, epochs=epochs, seed=seed, dev_split=0.1,
                            folds=FOLDS.get(name, 10)).fit(train)
        if name in NOATOMIC:
            seg.atomic_ = {kind: False for kind in seg.atomic_}
        return seg
    return scored_on_test(fit, test, seed, variant=name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated names, or name=line;line")
    add_common_options(ap, CORPORA, "0,1,2")
    args = ap.parse_args(argv)
    train = os.path.join(args.corpora, "train.txt")
    sents, _ = read_segmented_corpus(train)
    results: list[dict] = []
    emit = emitter(results, args.jsonl)
    variants = {}
    for item in args.variants.split(","):
        name, _, extra = item.partition("=")
        variants[name] = CWS + extra.split(";") if extra else VARIANTS[name]
    if not args.no_dev:
        for name, lines in variants.items():
            for seed in [int(s) for s in args.seeds.split(",")]:
                emit(dev_run(name, lines, sents, seed, EPOCHS.get(name, args.epochs)))
        print("\n| variant | seeds | word F1 (dev) | OOV recall (dev) | best epochs | s/epoch |")
        print("|---|---|---|---|---|---|")
        for name in variants:
            rows = [r for r in results if r["variant"] == name]
            print(f"| {name} | {','.join(str(r['seed']) for r in rows)} | {np.mean([r['f1'] for r in rows]):.2f} "
                  f"| {np.mean([r['oov_recall'] for r in rows]):.2f} | {','.join(str(r['best_epoch']) for r in rows)} "
                  f"| {np.mean([r['epoch_seconds'] for r in rows]):.3f} |")
    if args.test:
        for name in dict.fromkeys(["default", args.test]):
            lines = variants.get(name) or VARIANTS[name]
            emit(test_run(name, lines, train, os.path.join(args.corpora, "test.txt"), 0, EPOCHS.get(name, 15)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
