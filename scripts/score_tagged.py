#!/usr/bin/env python
"""Score `structperc tag`/`segment` output against the gold file, independently of `structperc eval`.

The README's figures come from ``structperc eval``; this script checks them from the tagged output itself,
with other code: seqeval's span F1 (CoNLL column files, where ``tag`` appends the predicted tag after the
gold one), UPOS accuracy (CoNLL-U, where ``tag`` rewrites the UPOS column: compared with the gold file line
by line) and word F1 on character spans (segmented text: ``segment``'s output against the gold lines).

    python scripts/score_tagged.py spans chunk.tagged
    python scripts/score_tagged.py upos pos.tagged ../shared/corpora/ud_en_ewt/en_ewt-ud-test.conllu
    python scripts/score_tagged.py words sxu.segmented ../shared/corpora/sighan2008_sxu/test.txt
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def spans(tagged: Path) -> float:
    """seqeval's micro span F1 of the last column (prediction) against the one before it (gold)."""
    from seqeval.metrics import f1_score

    gold: list[list[str]] = [[]]
    pred: list[list[str]] = [[]]
    for line in tagged.read_text(encoding="utf-8").splitlines():
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":  # a document break is a sentence break, not a token
            if gold[-1]:
                gold.append([])
                pred.append([])
            continue
        gold[-1].append(fields[-2])
        pred[-1].append(fields[-1])
    return float(f1_score([g for g in gold if g], [p for p in pred if p]))


def _upos(path: Path) -> list[str]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 10 and fields[0].isdigit():  # word lines (not ranges, empty nodes, comments)
            out.append(fields[3])
    return out


def upos(tagged: Path, gold: Path) -> float:
    """UPOS accuracy of a tagged CoNLL-U file against the gold file, word line by word line."""
    p, g = _upos(tagged), _upos(gold)
    if len(p) != len(g):
        sys.exit(f"{tagged}: {len(p)} words, but {gold} has {len(g)}")
    return sum(a == b for a, b in zip(p, g)) / len(g)


def words(segmented: Path, gold: Path) -> dict:
    """Word precision, recall and F1 on character spans, line by line (`structperc.metrics.word_scores`)."""
    from structperc.metrics import word_scores

    p = [line.split() for line in segmented.read_text(encoding="utf-8").splitlines()]
    g = [line.split() for line in gold.read_text(encoding="utf-8").splitlines()]
    if len(p) != len(g):
        sys.exit(f"{segmented}: {len(p)} lines, but {gold} has {len(g)}")
    return word_scores(g, p)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=("spans", "upos", "words"))
    ap.add_argument("output", type=Path, help="what structperc tag or segment wrote")
    ap.add_argument("gold", type=Path, nargs="?", help="the gold file (upos, words)")
    args = ap.parse_args()
    if args.kind != "spans" and args.gold is None:
        ap.error(f"{args.kind} needs the gold file")
    if args.kind == "spans":
        print(f"span F1 {100 * spans(args.output):.2f}")
    elif args.kind == "upos":
        print(f"UPOS accuracy {100 * upos(args.output, args.gold):.2f}")
    else:
        r = words(args.output, args.gold)
        print(f"word F1 {100 * r['f1']:.2f} (precision {100 * r['precision']:.2f}, recall {100 * r['recall']:.2f})")


if __name__ == "__main__":
    main()
