#!/usr/bin/env python
"""The NER lever study on CoNLL-2002 Spanish: entity F1 on esp.testa (the development set)
per template variant, epoch and seed; ``--test`` adds esp.testb (the test set) for the chosen variant and
the default, once.

    python scripts/studies/study_ner.py                        # every variant, seeds 0-2, epochs 1-12
    python scripts/studies/study_ner.py --variants base,docs --seeds 0,1,2,3 --epochs 14
    python scripts/studies/study_ner.py --test chosen          # + testb of `chosen` and `base` at their epochs

Each run trains once with esp.testa as ``dev`` and reads the dev F1 of every epoch from the epoch reports:
the averaged weights after epoch e are the model that ``epochs=e`` trains (same seed, same order), so one
run gives the whole curve. Variants add template lines to the ``ner`` preset (the columns are those of
`structperc.features.gazetteer`, jackknifed where they come from training entities); ``uc`` trains without
the transition mask and decodes with it (README, "Transition constraints"), scored at ``--at`` epochs only.
A ``/bN`` suffix sets the jackknife folds to blocks of N consecutive sentences (``/b1``: sentence-wise, the
assignment before blocks); without one the library's own assignment applies.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import statistics
import time
from pathlib import Path
from typing import Iterator

import numpy as np

from structperc import Tagger
from structperc.features import dictionary
from structperc.features.templates import preset
from structperc.labels import transition_mask

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2002"

#: Template lines each variant adds to the ``ner`` preset.
ADDITIONS: dict[str, list[str]] = {
    "base": [],
    # word-level (partial) gazetteer: the roles/types of the word inside known multi-word entities
    "gazw": ["?gazw[0]", "?gazw[-1]", "?gazw[1]"],
    "gazt": ["?gazt[0]", "?gazt[-1]", "?gazt[1]"],
    "gazwt": ["?gazw[0]", "?gazt[-1]", "?gazt[1]"],
    "gazt0": ["?gazt[0]"],
    "gaztx": ["?gazt[0]", "?gazt[-1]", "?gazt[1]", "?gazt[0]|shortshape(w[0])", "?gazt[0]|gaz[0]"],
    # match length of the gazetteer match
    "gazn": ["?gaz[0]|gazn[0]"],
    # every type of the matched string
    "gaza": ["?gaza[0]", "?gaza[0]|shortshape(w[0])"],
    # first vs later mention in the document window
    "docp": ["?docp[0]", "?docp[0]|doc[0]"],
    # capitalised-run relations (same run, inside a longer run, contains a shorter run) in the window
    "docs": ["?docs[0]", "?docs[0]|shortshape(w[0])"],
    "docs1": ["?docs[0]"],
    # the case column in conjunction with the document and gazetteer evidence
    "case2": ["?case[0]|doc[0]", "?case[0]|gaz[0]"],
}
COMBOS = {
    "docs+docp": ["docs", "docp"],
    "gazw+docs": ["gazw", "docs"],
    "gazw+docs+docp": ["gazw", "docs", "docp"],
    "gazt+docp": ["gazt", "docp"],
    "gaztx+docp": ["gaztx", "docp"],
}

#: The variants of the study's report (``/b1``: today's sentence-wise folds; ``/bN``: blocks).
STUDIED = ["base/b1", "base/b50", "base/b200", "base/b500", "base/b1000"] \
    + [f"{v}/b1" for v in ("gazw", "gazt", "gazn", "gaza", "docp", "docs", "case2", "gazt+docp", "gaztx", "gazt0")] \
    + ["gazt/b50", "gazt/b200"]


def block_folds(block: int):
    """A `structperc.features.dictionary.fold_assignment` that puts runs of ``block`` consecutive
    sentences (a stand-in for the documents the CoNLL-2002 files do not mark) into one fold, the blocks
    spread over the folds at random: a sentence's entities are then not found in the gazetteer through
    the other sentences of its own article, as at test time, where the articles are new."""
    def assign(n_sentences: int, folds: int, seed: int, _learners_block: int = 1) -> tuple[int, np.ndarray]:
        n_blocks = -(-n_sentences // block)
        k = max(1, min(int(folds), n_blocks))
        fold_of_block = np.random.default_rng(seed).permutation(n_blocks) % k
        return k, fold_of_block[np.arange(n_sentences) // block]
    return assign


def lines_of(variant: str) -> list[str]:
    """The template lines of a variant (a name of `ADDITIONS`, of `COMBOS`, or names joined by ``+``;
    a ``/bN`` suffix: jackknife folds of ``N``-sentence blocks, see `block_folds`; ``/b1`` sentence-wise
    folds; no suffix: the library's own assignment)."""
    variant = variant.split("/")[0]
    names = COMBOS.get(variant, variant.split("+"))
    extra = [line for name in names for line in ADDITIONS[name]]
    return preset("ner") + extra


@contextlib.contextmanager
def folds_of(variant: str) -> Iterator[None]:
    """The jackknife fold assignment of a variant: sentence-wise (the default) or ``/bN`` blocks."""
    if "/b" not in variant:
        yield
        return
    original = dictionary.fold_assignment
    dictionary.fold_assignment = block_folds(int(variant.split("/b")[1]))
    try:
        yield
    finally:
        dictionary.fold_assignment = original


def curve(variant: str, seed: int, epochs: int, files: dict[str, Path]) -> tuple[list[float], float]:
    """Dev F1 (%) after each epoch, and the training seconds."""
    reports: list = []
    start = time.perf_counter()
    with folds_of(variant):
        Tagger(task="ner", template=lines_of(variant), epochs=epochs, seed=seed).fit(
            str(files["train"]), dev=str(files["testa"]), callback=reports.append)
    return [100 * r.dev_score for r in reports], time.perf_counter() - start


def unconstrained_scores(seed: int, epochs: int, files: dict[str, Path], parts: tuple[str, ...]) -> list[float]:
    """Trained without the transition mask, decoded with it: F1 (%) on ``parts``."""
    tagger = Tagger.train(str(files["train"]), task="ner", epochs=epochs, seed=seed, constrained=False)
    mask, end = transition_mask(tagger.labels_, tagger.task_.model_scheme)
    tagger.weights_ = dataclasses.replace(tagger.weights_, mask=mask, end=end)
    return [100 * tagger.score(str(files[p])) for p in parts]


def test_score(variant: str, seed: int, epochs: int, files: dict[str, Path]) -> float:
    with folds_of(variant):
        tagger = Tagger(task="ner", template=lines_of(variant), epochs=epochs, seed=seed).fit(str(files["train"]))
    return 100 * tagger.score(str(files["testb"]))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default=",".join(STUDIED), help="comma-separated; see `lines_of`")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=12, help="curve length (dev F1 after each epoch)")
    p.add_argument("--show", default="6,7,8,9,10,11,12", help="epochs shown in the table")
    p.add_argument("--uc", action="store_true", help="add the train-unconstrained / decode-constrained row")
    p.add_argument("--at", type=int, default=8, help="epochs for --uc and for the default in --test")
    p.add_argument("--test", metavar="VARIANT", help="score VARIANT (at --test-epochs) and --default (at "
                   "--at) on esp.testb: once, after the choices")
    p.add_argument("--test-epochs", type=int, default=8)
    p.add_argument("--default", default="base/b1", help="the current default for --test (sentence-wise folds)")
    p.add_argument("--corpora", type=Path, default=CORPORA, help="folder holding esp.train, esp.testa, esp.testb")
    args = p.parse_args()
    files = {part: args.corpora / f"esp.{part}" for part in ("train", "testa", "testb")}
    for path in files.values():
        if not path.exists():
            raise SystemExit(f"error: {path} not found")
    seeds = [int(s) for s in args.seeds.split(",")]
    show = [int(e) for e in args.show.split(",") if int(e) <= args.epochs]
    print(f"esp.testa entity F1 (%), mean of seeds {seeds}; ner preset + variant lines")
    print(f"{'variant':<18}" + "".join(f"{'ep' + str(e):>7}" for e in show)
          + f"{'best':>11}{'s/run':>7}  per seed @{args.at}")
    for variant in filter(None, args.variants.split(",")):
        runs = [curve(variant, s, args.epochs, files) for s in seeds]
        mean = [statistics.fmean(c[e - 1] for c, _ in runs) for e in range(1, args.epochs + 1)]
        best = max(range(args.epochs), key=mean.__getitem__)
        at = " ".join(f"{c[args.at - 1]:.2f}" for c, _ in runs) if args.at <= args.epochs else ""
        print(f"{variant:<18}" + "".join(f"{mean[e - 1]:>7.2f}" for e in show)
              + f"{mean[best]:>7.2f}@{best + 1:<3}{statistics.fmean(t for _, t in runs):>7.1f}  {at}", flush=True)
    if args.uc:
        scores = [unconstrained_scores(s, args.at, files, ("testa",))[0] for s in seeds]
        print(f"{'uc (train U/dec C)':<18} @{args.at}: {statistics.fmean(scores):.2f}  "
              + " ".join(f"{x:.2f}" for x in scores), flush=True)
    if args.test:
        print("esp.testb entity F1 (%), the test set, scored once per seed:")
        for variant, epochs in ((args.test, args.test_epochs), (args.default, args.at)):
            scores = [test_score(variant, s, epochs, files) for s in seeds]
            print(f"{variant:<18} @{epochs}: mean {statistics.fmean(scores):.2f}  "
                  + " ".join(f"{x:.2f}" for x in scores), flush=True)


if __name__ == "__main__":
    main()
