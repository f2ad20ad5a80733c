#!/usr/bin/env python
"""Span voting across encodings (``--vote``, `structperc.labels.voting`) on held-out data only.

    python scripts/studies/study_vote.py ner                 # esp.testa, --lang es --order 2 --two-stage; seeds 0 1 2
    python scripts/studies/study_vote.py chunk               # CoNLL-2000's held-out tenth, --lang en
    python scripts/studies/study_vote.py ned                 # ned.testa, as the shipped nl-ner is trained
    python scripts/studies/study_vote.py chunk --seed-average   # the same, every member the mean of 3 seeds
    python scripts/studies/study_vote.py chunk --backward       # members that read the sentences backwards too

For each seed it trains the taggers that learn IOBES (the default), IOB2 and IOB1, then the voting model
(``vote=["iob2", "iob1"]``, whose members are those three taggers: `tests/train/test_vote.py`), and prints each
one's span F1 and the vote's; then the means over the seeds. ``ner``: trained on esp.train with the preset's 8
epochs and scored on esp.testa; ``chunk``: trained on the nine tenths ``--dev-split 0.1`` keeps (split seed 0)
with the preset's 10 epochs and scored on the tenth it holds out; ``ned``: words alone, ``--lang de --order 2
--two-stage``, trained on ned.train with ned.testa picking the epoch among 15 (the shipped ``nl-ner``'s recipe) and
scored on ned.testa. ``--seed-average`` (chunk) compares
``--seeds 0,1,2`` and ``3,4,5`` with and without the vote instead. ``--backward`` (a probe: no such member is
built) adds taggers trained and tagging on the sentences reversed (their spans mapped back; Kudo & Matsumoto's
backward parsing), each encoding both ways, and votes of 3, 5 and 6 of them. Nothing reads a test file.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from heldout import ROOT
from study_seed_average import write_split

from structperc import Tagger
from structperc.labels.schemes import spans
from structperc.labels.voting import vote_spans
from structperc.metrics import span_f1

ENCODINGS = ("iobes", "iob2", "iob1")
FAMILIES = {
    "ner": dict(task="ner", lang="es", order=2, two_stage=True),
    "chunk": dict(task="chunk", columns=["word", "pos", "chunk"], lang="en"),
    "ned": dict(task="ner", columns=["word", "_", "ner"], lang="de", order=2, two_stage=True, epochs=15),
}
#: The families whose held-out file also picks the epoch (``fit(dev=…)``).
PICKS_EPOCH = ("ned",)


def data(family: str, tmp: Path) -> tuple[Path, Path]:
    """The training file and the held-out file of ``family``."""
    if family == "ner":
        return ROOT / "conll2002" / "esp.train", ROOT / "conll2002" / "esp.testa"
    if family == "ned":
        return ROOT / "conll2002" / "ned.train", ROOT / "conll2002" / "ned.testa"
    return write_split(ROOT / "conll2000" / "train.txt", 0.1, 0, tmp)


def reversed_tags(tags: list[str]) -> list[str]:
    """The IOB2 tags of the reversed sentence whose IOB2 tags are ``tags``: the same spans, read backwards."""
    n, out = len(tags), ["O"] * len(tags)
    for start, end, kind in spans(tags, "iob2"):
        for i in range(n - end, n - start):
            out[i] = ("B-" if i == n - end else "I-") + kind
    return out


def reversed_file(source: Path, target: Path) -> Path:
    """``source`` (CoNLL columns, the tags last, IOB2) with every sentence reversed."""
    blocks = []
    for block in source.read_text(encoding="utf-8").strip().split("\n\n"):
        rows = [line.split() for line in block.split("\n") if line.strip()]
        tags = reversed_tags([r[-1] for r in rows])
        blocks.append("\n".join(" ".join([*r[:-1], t]) for r, t in zip(rows[::-1], tags)))
    target.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return target


#: The backward probe's votes: f forward, b backward members, by encoding.
BACKWARD_VOTES = (("fiobes", "fiob2", "fiob1"), ("fiobes", "biobes", "biob2"),
                  ("fiobes", "fiob2", "biobes", "biob2", "fiob1"),
                  ("fiobes", "fiob2", "fiob1", "biobes", "biob2", "biob1"))


def backward(params: dict, train: Path, held: Path, seeds: list[int], tmp: Path) -> None:
    """The ``--backward`` probe: every encoding trained forwards and backwards, each alone and in votes."""
    rtrain, rheld = reversed_file(train, tmp / "rtrain.txt"), reversed_file(held, tmp / "rheld.txt")
    gold = [[line.split()[-1] for line in block.split("\n") if line.strip()]
            for block in held.read_text(encoding="utf-8").strip().split("\n\n")]
    rows: dict[str, list[float]] = {}
    for seed in seeds:
        tags = {}
        for e in ENCODINGS:
            kw = dict(params, encoding=e, seed=seed)
            tags["f" + e] = Tagger(**kw).fit(str(train)).predict(str(held))
            tags["b" + e] = [reversed_tags(t) for t in Tagger(**kw).fit(str(rtrain)).predict(str(rheld))]
        for combo in [(k,) for k in tags] + list(BACKWARD_VOTES):
            voted = [vote_spans(list(ts), "iob2") for ts in zip(*(tags[c] for c in combo))]
            rows.setdefault(" ".join(combo), []).append(span_f1(gold, voted))
        print(f"seed {seed}: " + ", ".join(f"{k} {100 * v[-1]:.2f}" for k, v in rows.items()), flush=True)
    print("\n| members (f forward, b backward) | mean | by seed |\n|---|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {100 * statistics.mean(values):.2f} | {', '.join(f'{100 * v:.2f}' for v in values)} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--seed-average", action="store_true", help="members that are the mean of 3 seeds each")
    ap.add_argument("--backward", action="store_true", help="members that read the sentences backwards too (chunk)")
    args = ap.parse_args()
    params = FAMILIES[args.family]
    with tempfile.TemporaryDirectory() as tmp:
        train, held = data(args.family, Path(tmp))
        if args.backward:
            if args.family != "chunk":
                ap.error("--backward reverses CoNLL-2000's columns: chunk only")
            backward(params, train, held, args.seeds, Path(tmp))
            return
        if args.seed_average:
            for seeds in ([0, 1, 2], [3, 4, 5]):
                for vote in (None, ["iob2", "iob1"]):
                    started = time.perf_counter()
                    f1 = Tagger(seed=seeds[0], vote=vote, **params).fit(str(train), seeds=seeds).score(str(held))
                    print(f"seeds {seeds}, vote {vote}: {100 * f1:.2f} ({time.perf_counter() - started:.0f} s)",
                          flush=True)
            return
        rows: dict[str, list[float]] = {e: [] for e in (*ENCODINGS, "vote")}
        dev = {"dev": str(held)} if args.family in PICKS_EPOCH else {}
        for seed in args.seeds:
            for encoding in ENCODINGS:
                rows[encoding].append(Tagger(seed=seed, encoding=encoding, **params).fit(str(train), **dev)
                                      .score(str(held)))
            started = time.perf_counter()
            rows["vote"].append(Tagger(seed=seed, vote=["iob2", "iob1"], **params).fit(str(train), **dev)
                                .score(str(held)))
            print(f"seed {seed}: " + ", ".join(f"{k} {100 * v[-1]:.2f}" for k, v in rows.items())
                  + f" (the vote: {time.perf_counter() - started:.0f} s)", flush=True)
    print(f"\n| {args.family}, held-out span F1 | mean | by seed |\n|---|---|---|")
    for name, values in rows.items():
        label = "vote (iobes, iob2, iob1)" if name == "vote" else name
        print(f"| {label} | {100 * statistics.mean(values):.2f} | {', '.join(f'{100 * v:.2f}' for v in values)} |")
    gain = statistics.mean(rows["vote"]) - statistics.mean(rows["iobes"])
    print(f"\nthe vote against iobes alone: {100 * gain:+.2f}")


if __name__ == "__main__":
    main()
