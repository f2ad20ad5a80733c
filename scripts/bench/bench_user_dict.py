#!/usr/bin/env python
"""A user dictionary at segmentation time on SIGHAN 2008 SXU: word F1, OOV recall and time of
segmenting test without a dictionary, with it forced (hard) and with it in the lexicon columns (soft).

    python scripts/bench/bench_user_dict.py                  # trains Segmenter(epochs=10) (~15 s)
    python scripts/bench/bench_user_dict.py --model /tmp/sxu  # or loads a saved one (--save writes it)

The dictionary is the test set's OOV words (gold words not among the training words): what a user who
knows the domain's new words would add. It is an upper bound of what a dictionary buys (every OOV word,
no noise), and it shows the price: a forced word is a word even where the gold standard cuts the same
characters otherwise. Text is the test file's lines with the spaces removed; scores are
`structperc.metrics.word_scores` against the gold lines. Times are one run each, segmentation only
(the dictionary's words passed as a list).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "sighan2008_sxu"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=Path, default=CORPUS / "train.txt")
    ap.add_argument("--test", type=Path, default=CORPUS / "test.txt")
    ap.add_argument("--model", type=Path, help="A saved segmenter to load instead of training.")
    ap.add_argument("--save", type=Path, help="Save the trained segmenter here.")
    ap.add_argument("--epochs", type=int, default=10)
    args = ap.parse_args()

    from structperc.metrics import word_scores
    from structperc.segmenter import Segmenter

    start = time.perf_counter()
    if args.model is not None:
        seg = Segmenter.load(args.model)
        print(f"loaded {args.model} in {time.perf_counter() - start:.1f} s")
    else:
        seg = Segmenter(epochs=args.epochs).fit(str(args.train))
        print(f"trained on {args.train} ({args.epochs} epochs) in {time.perf_counter() - start:.1f} s")
        if args.save is not None:
            seg.save(args.save)
    train_words = set(seg.train_words_)
    gold = [line.split() for line in args.test.read_text(encoding="utf-8").splitlines()]
    gold = [g for g in gold if g]
    texts = ["".join(g) for g in gold]
    oov = sorted({w for g in gold for w in g} - train_words)
    print(f"test: {len(gold)} sentences, {sum(map(len, gold))} words; user dictionary: {len(oov)} OOV words")

    rows = []
    for mode in ("none", "hard", "soft"):
        start = time.perf_counter()
        pred = seg.segment_texts(texts) if mode == "none" else \
            seg.segment_texts(texts, user_dict=oov, user_dict_mode=mode)
        seconds = time.perf_counter() - start
        rows.append((mode, word_scores(gold, pred, train_words), seconds))
    base = rows[0][2]
    print(f"{'mode':<6} {'F1':>7} {'OOV R':>7} {'IV R':>7} {'seconds':>8} {'x none':>7}")
    for mode, s, seconds in rows:
        print(f"{mode:<6} {s['f1']:7.4f} {s['oov_recall']:7.4f} {s['iv_recall']:7.4f} {seconds:8.2f} "
              f"{seconds / base:7.2f}")


if __name__ == "__main__":
    main()
