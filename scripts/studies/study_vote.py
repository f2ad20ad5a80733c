#!/usr/bin/env python
"""Span voting across encodings (``--vote``, `structperc.labels.voting`) on held-out data only.

    python scripts/studies/study_vote.py ner                 # esp.testa, --lang es --order 2 --two-stage; seeds 0 1 2
    python scripts/studies/study_vote.py chunk               # CoNLL-2000's held-out tenth, --lang en
    python scripts/studies/study_vote.py ned                 # ned.testa, as the shipped nl-ner is trained
    python scripts/studies/study_vote.py chunk --seed-average   # the same, every member the mean of 3 seeds
    python scripts/studies/study_vote.py chunk --backward       # members that read the sentences backwards too
    python scripts/studies/study_vote.py chunk --ioe            # members that learn IOE1 and IOE2 too

For each seed it trains the taggers that learn IOBES (the default), IOB2 and IOB1, then the voting model
(``vote=["iob2", "iob1"]``, whose members are those three taggers: `tests/train/test_vote.py`), and prints each
one's span F1 and the vote's; then the means over the seeds. ``ner``: trained on esp.train with the preset's 8
epochs and scored on esp.testa; ``chunk``: trained on the nine tenths ``--dev-split 0.1`` keeps (split seed 0)
with the preset's 10 epochs and scored on the tenth it holds out; ``ned``: words alone, ``--lang de --order 2
--two-stage``, trained on ned.train with ned.testa picking the epoch among 15 (the shipped ``nl-ner``'s recipe) and
scored on ned.testa. ``--seed-average`` (chunk) compares
``--seeds 0,1,2`` and ``3,4,5`` with and without the vote instead. ``--backward`` (a probe: no such member is
built) adds taggers trained and tagging on the sentences reversed (their spans mapped back; Kudo & Matsumoto's
backward parsing), each encoding both ways, and votes of 3, 5 and 6 of them. ``--ioe`` (a probe: no such
encoding is built) adds taggers that learn IOE2 (every span's last token E, the others I) and IOE1 (E only where
a span of the same type follows at once), the end-marking representations Tjong Kim Sang & Veenstra (1999) name
and Kudo & Matsumoto (2001) and Shen & Sarkar (2005) vote with; they train on plain tags (unconstrained, the
chunk preset's template and ``--lang`` lines), and their tags are read back to IOB2 for the vote; with
``--seed-average``, each member is the mean of seeds S, S+1, S+2 for each ``--seeds`` S. Nothing reads a test file.
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


def score_votes(tags: dict[str, list[list[str]]], votes: tuple[tuple[str, ...], ...], gold: list[list[str]],
                rows: dict[str, list[float]], seed: int) -> None:
    """Append each member's span F1 and each vote's (IOB2 tags) to ``rows``, and print the seed's line."""
    for combo in [(k,) for k in tags] + list(votes):
        voted = [vote_spans(list(ts), "iob2") for ts in zip(*(tags[c] for c in combo))]
        rows.setdefault(" ".join(combo), []).append(span_f1(gold, voted))
    print(f"seed {seed}: " + ", ".join(f"{k} {100 * v[-1]:.2f}" for k, v in rows.items()), flush=True)


def print_votes(rows: dict[str, list[float]], header: str) -> None:
    """The table of ``rows``: mean and per-seed span F1 of each member and vote."""
    print(f"\n| {header} | mean | by seed |\n|---|---|---|")
    for name, values in rows.items():
        print(f"| {name} | {100 * statistics.mean(values):.2f} | {', '.join(f'{100 * v:.2f}' for v in values)} |")


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
        score_votes(tags, BACKWARD_VOTES, gold, rows, seed)
    print_votes(rows, "members (f forward, b backward)")


def to_ioe(tags: list[str], kind: str) -> list[str]:
    """IOB2 ``tags`` in IOE2 (``kind`` "ioe2": each span's last token E-X, the others I-X) or IOE1 (E-X only on the
    last token of a span followed at once by a span of the same type)."""
    out = ["O"] * len(tags)
    found = spans(tags, "iob2")
    for i, (start, end, t) in enumerate(found):
        for k in range(start, end):
            out[k] = "I-" + t
        follows = i + 1 < len(found) and found[i + 1][0] == end and found[i + 1][2] == t
        if kind == "ioe2" or follows:
            out[end - 1] = "E-" + t
    return out


def from_ioe(tags: list[str]) -> list[str]:
    """IOE1 or IOE2 ``tags`` read back to IOB2: a span starts after O, after another type, or after an E."""
    out, prev = [], "O"
    for tag in tags:
        if tag == "O" or len(tag) < 3:
            out.append("O")
        else:
            starts = prev == "O" or prev[2:] != tag[2:] or prev.startswith("E-")
            out.append(("B-" if starts else "I-") + tag[2:])
        prev = tag if len(tag) >= 3 else "O"
    return out


def ioe_file(source: Path, target: Path, kind: str) -> Path:
    """``source`` (CoNLL columns, the tags last, IOB2) with its tags in ``kind``."""
    blocks = []
    for block in source.read_text(encoding="utf-8").strip().split("\n\n"):
        rows = [line.split() for line in block.split("\n") if line.strip()]
        tags = to_ioe([r[-1] for r in rows], kind)
        blocks.append("\n".join(" ".join([*r[:-1], t]) for r, t in zip(rows, tags)))
    target.write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    return target


#: The IOE probe's votes.
IOE_VOTES = (("iobes", "iob2", "iob1"), ("iobes", "iob2", "ioe2"), ("iobes", "ioe2", "ioe1"),
             ("iob2", "ioe2", "iobes"), ("iobes", "iob2", "iob1", "ioe2", "ioe1"))


def ioe(params: dict, train: Path, held: Path, seeds: list[int], tmp: Path, average: bool = False) -> None:
    """The ``--ioe`` probe: IOE1 and IOE2 members beside the three encodings, each alone and in votes; with
    ``average`` (``--seed-average``), every member the mean of seeds S, S+1, S+2 for each seed S given."""
    gold = [[line.split()[-1] for line in block.split("\n") if line.strip()]
            for block in held.read_text(encoding="utf-8").strip().split("\n\n")]
    files = {k: ioe_file(train, tmp / f"{k}.txt", k) for k in ("ioe2", "ioe1")}
    plain = {k: v for k, v in params.items() if k != "task"}
    rows: dict[str, list[float]] = {}
    for seed in seeds:
        tags = {}
        fit = {"seeds": list(range(seed, seed + 3))} if average else {}
        for e in ENCODINGS:
            tags[e] = Tagger(**params, encoding=e, seed=seed).fit(str(train), **fit).predict(str(held))
        for k, f in files.items():
            model = Tagger(task="pos", template="chunk", tag_column="chunk", epochs=10, seed=seed, **plain)
            tags[k] = [from_ioe(t) for t in model.fit(str(f), **fit).predict(str(held))]
        score_votes(tags, IOE_VOTES, gold, rows, seed)
    print_votes(rows, "members")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=sorted(FAMILIES))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--seed-average", action="store_true", help="members that are the mean of 3 seeds each")
    ap.add_argument("--backward", action="store_true", help="members that read the sentences backwards too (chunk)")
    ap.add_argument("--ioe", action="store_true", help="members that learn IOE1 and IOE2 too (chunk)")
    args = ap.parse_args()
    params = FAMILIES[args.family]
    with tempfile.TemporaryDirectory() as tmp:
        train, held = data(args.family, Path(tmp))
        if args.backward:
            if args.family != "chunk":
                ap.error("--backward reverses CoNLL-2000's columns: chunk only")
            backward(params, train, held, args.seeds, Path(tmp))
            return
        if args.ioe:
            if args.family != "chunk":
                ap.error("--ioe: chunk only")
            ioe(params, train, held, args.seeds, Path(tmp), args.seed_average)
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
