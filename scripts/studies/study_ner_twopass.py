#!/usr/bin/env python
"""Two-stage NER (Krishnan & Manning 2006) on CoNLL-2002: a first-stage tagger's *predicted*
labels of the other occurrences of a token / entity string, in a window of sentences and corpus-wide, as
columns of a second-stage tagger. Entity F1 on esp.testa (the dev set) per variant, epoch and seed;
``--test`` adds esp.testb (the test set) for one variant and the default, once.

    python scripts/studies/study_ner_twopass.py                                  # round 1, K=2, seeds 0-2
    python scripts/studies/study_ner_twopass.py --variants tokd1,tokd+entd --folds 5  # K=5 stage-1 folds
    python scripts/studies/study_ner_twopass.py --variants tokd1 --window 50      # document window ±50
    python scripts/studies/study_ner_twopass.py --variants tokd1 --gold-train    # no stage-1 folds (cheap)
    python scripts/studies/study_ner_twopass.py --test tokd1 --test-epochs 8     # + esp.testb, after the choices
    python scripts/studies/study_ner_twopass.py --lang ned --first-epochs 13 --epochs 13 --variants base2,tokd1

The variants of a round are in `STUDIED` / `ROUND2`; ``--cache DIR`` keeps the stage-1 tags per seed
and K so later rounds do not retrain stage 1.

Stage 1 is the default ``Tagger(task="ner", epochs=8, seed=S)``. Its labels of the training sentences are
jackknifed: K folds of 200-sentence blocks (`structperc.features.dictionary.fold_assignment`, the
gazetteer's assignment), each fold tagged by a model trained on the other folds; the dev/test files are
tagged by the model trained on all of train, which is also the default whose dev/test F1 the table
reports. Stage 2 is ``Tagger(task="ner", template=NER preset + variant lines)`` on the same corpus plus
the non-local columns; one run with the dev file gives its whole epoch curve (as `study_ner.py`).
Cheaper stage 1s: ``--from-fold`` (dev/test columns from the first fold's model: no full stage-1 model),
``--gold-train`` (training columns from the gold tags of the other occurrences: no stage-1 folds; the
full stage-1 model tags dev/test only), ``--first-epochs`` (fewer stage-1 epochs; the "default" row then
is that model, not the default).

The columns (`nonlocal_columns`; "none": no other occurrence; "-": the token is outside a predicted entity):
  tmd / tmc  majority predicted type (PER, LOC, ..., O) of the other occurrences of the same word form in
             the window of ±W sentences / in the whole file (K&M's token-majority)
  tnd / tnc  the same with a count bucket of those occurrences (``PER:2``: 2-3 others; ``:1``, ``:4`` 4+)
  emd / emc  for a token inside a predicted entity: the majority type of the other predicted entities with
             the same string (K&M's entity-majority)
  smc        for a token inside a predicted entity: the majority type of the predicted entities whose
             string contains it as a proper part (K&M's superentity-majority), whole file
  s1         the first-stage label of the token itself (plain stacking; not K&M)
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

from structperc import Tagger
from structperc.features.dictionary import fold_assignment
from structperc.features.templates import preset
from structperc.io.conll import read_corpus
from structperc.io.corpus import Corpus

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2002"
COLUMNS = ("word", "pos", "ner")
BLOCK = 200
TYPE_ORDER = ("PER", "LOC", "ORG", "MISC", "O")  # ties between majority types break in this order

#: Template lines each variant adds to the ``ner`` preset.
ADDITIONS: dict[str, list[str]] = {
    "base2": [],  # stage 2 with no new line: the default retrained (control for the curve)
    "tokd": ["tmd[0]", "tmd[0]|shortshape(w[0])"],
    "tokc": ["tmc[0]", "tmc[0]|shortshape(w[0])"],
    "tok": ["tmd[0]", "tmd[0]|shortshape(w[0])", "tmc[0]", "tmc[0]|shortshape(w[0])", "tmd[0]|tmc[0]"],
    "tokn": ["tnd[0]", "tnd[0]|shortshape(w[0])", "tnc[0]", "tnc[0]|shortshape(w[0])"],
    "ent": ["emd[0]", "emc[0]", "smc[0]", "emc[0]|smc[0]"],
    "tokctx": ["tmd[-1]", "tmd[1]", "tmc[-1]", "tmc[1]"],
    "self": ["s1[0]", "s1[-1]", "s1[1]", "s1[0]|shortshape(w[0])"],
    "tokd1": ["tmd[0]"],
    "tokdn": ["tnd[0]", "tnd[0]|shortshape(w[0])"],
    "tokdx": ["tmd[-1]", "tmd[1]"],
    "entd": ["emd[0]"],
    "entc": ["emc[0]"],
    "sup": ["smc[0]"],
}
COMBOS = {
    "all": ["tok", "ent"],
    "all+ctx": ["tok", "ent", "tokctx"],
    "all+self": ["tok", "ent", "self"],
}
#: The first round (K=2, window 20, seeds 0-2); the second round varies around the best of it (tokd).
STUDIED = ["base2", "tokd", "tokc", "tok", "tokn", "ent", "all", "all+ctx", "self"]
ROUND2 = ["tokd", "tokd1", "tokdn", "tokd+tokdx", "tokd+entd", "tokd+entc", "tokd+sup", "tokd+ent"]


def lines_of(variant: str) -> list[str]:
    names = COMBOS.get(variant, variant.split("+"))
    return preset("ner") + [line for name in names for line in ADDITIONS[name]]


def etype(tag: str) -> str:
    return "O" if tag == "O" or "-" not in tag else tag.split("-", 1)[1]


def majority(counts: dict[str, int]) -> str:
    if not counts or sum(counts.values()) == 0:
        return "none"
    best = max(counts.values())
    return next(t for t in TYPE_ORDER if counts.get(t, 0) == best)


def bucket(n: int) -> str:
    return "1" if n == 1 else "2" if n <= 3 else "4"


def entities(tags: list[str], ptr: np.ndarray) -> list[tuple[int, int, int, str]]:
    """Predicted entities (sentence, first token, end token, type) of IOB2 tags (flat token indices);
    an ``I-`` after another type or after ``O`` opens an entity (the conlleval reading)."""
    out = []
    for s in range(len(ptr) - 1):
        a, b = int(ptr[s]), int(ptr[s + 1])
        start, typ = None, None
        for i in range(a, b + 1):
            t = tags[i] if i < b else "O"
            opens = t.startswith("B-") or (t.startswith("I-") and t[2:] != typ)
            if start is not None and (t == "O" or opens):
                out.append((s, start, i, typ))
                start, typ = None, None
            if opens:
                start, typ = i, t[2:]
    return out


def window_counts(keys_of: list[int], sents: np.ndarray, labels: list[str], window: int | None) \
        -> list[Counter]:
    """Per item: the labels of the *other* items with the same key within ``window`` sentences (None: all)."""
    n = len(keys_of)
    keys = np.asarray(keys_of, dtype=np.int64)
    span = int(sents.max()) + 2 * (window or 0) + 2 if n else 1
    out = [Counter() for _ in range(n)]
    for t in set(labels):
        mask = np.fromiter((lab == t for lab in labels), dtype=bool, count=n)
        if window is None:
            per_key = Counter(keys[mask].tolist())
            cnt = np.fromiter((per_key.get(k, 0) for k in keys.tolist()), dtype=np.int64, count=n)
        else:
            table = np.sort(keys[mask] * span + sents[mask] + window)
            probe = keys * span + sents + window
            cnt = np.searchsorted(table, probe + window, "right") - np.searchsorted(table, probe - window)
        cnt = cnt - mask  # not itself
        for i in np.flatnonzero(cnt).tolist():
            out[i][t] = int(cnt[i])
    return out


def nonlocal_columns(corpus: Corpus, tags: list[str], window: int) -> dict[str, list[str]]:
    """The stage-2 columns of ``corpus`` from the stage-1 tags ``tags`` (flat); see the module doc."""
    words = corpus.columns["word"]
    ptr = corpus.sent_ptr
    lengths = np.diff(ptr)
    sent = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    distinct, codes = corpus.factorize("word")
    types = [etype(t) for t in tags]
    cols: dict[str, list[str]] = {"s1": list(tags)}
    for name, win in (("d", window), ("c", None)):
        counts = window_counts(codes.tolist(), sent, types, win)
        cols[f"tm{name}"] = [majority(c) for c in counts]
        cols[f"tn{name}"] = [f"{majority(c)}:{bucket(sum(c.values()))}" if c else "none" for c in counts]
    ents = entities(tags, ptr)
    strings = [" ".join(words[a:b]) for _, a, b, _ in ents]
    ids = {s: i for i, s in enumerate(dict.fromkeys(strings))}
    esent = np.array([s for s, _, _, _ in ents], dtype=np.int64)
    etypes = [t for _, _, _, t in ents]
    for name, win in (("d", window), ("c", None)):
        counts = window_counts([ids[s] for s in strings], esent, etypes, win)
        col = ["-"] * corpus.n_tokens
        for (_, a, b, _), c in zip(ents, counts):
            col[a:b] = [majority(c)] * (b - a)
        cols[f"em{name}"] = col
    # superentity: entity strings that contain this one as a proper contiguous part (whole file)
    parts: dict[tuple, Counter] = defaultdict(Counter)
    for (_, a, b, t) in ents:
        toks = tuple(words[a:b])
        seen = set()
        for i in range(len(toks)):
            for j in range(i + 1, len(toks) + 1):
                if j - i < len(toks) and toks[i:j] not in seen:
                    seen.add(toks[i:j])
                    parts[toks[i:j]][t] += 1
    col = ["-"] * corpus.n_tokens
    for (_, a, b, _) in ents:
        col[a:b] = [majority(parts.get(tuple(words[a:b]), {}))] * (b - a)
    cols["smc"] = col
    return cols


def with_columns(corpus: Corpus, cols: dict[str, list[str]]) -> Corpus:
    for name, values in cols.items():
        corpus = corpus.with_column(name, values)
    return corpus


def first_stage(train: Corpus, others: dict[str, Corpus], seed: int, folds: int, epochs: int,
                cache: Path | None) -> tuple[list[str], dict, float, float]:
    """Jackknifed stage-1 tags of ``train``; the full model's tags of ``others`` (and, under ``fold0:``,
    those of the first fold's model, trained on (K-1)/K of train: the cheap variant without a full
    stage-1 model); the seconds of the folds and of the full model. The full model's F1 on ``others``
    (under ``_default_f1``) is the default's: stage 1 *is* the default tagger."""
    if cache is not None and cache.exists():
        tags, preds, t_folds, t_full = json.loads(cache.read_text(encoding="utf-8"))  # data, not pickles
        return tags, preds, t_folds, t_full
    k, fold_of = fold_assignment(len(train), folds, seed, BLOCK)
    tags: list[str] = [""] * train.n_tokens
    preds: dict = {}
    start = time.perf_counter()
    for f in range(k):
        rows = np.flatnonzero(fold_of == f)
        model = Tagger(task="ner", epochs=epochs, seed=seed).fit(train.select(np.flatnonzero(fold_of != f)))
        pred = [t for s in model.predict(train.select(rows)) for t in s]
        where = np.concatenate([np.arange(train.sent_ptr[r], train.sent_ptr[r + 1]) for r in rows])
        for i, t in zip(where.tolist(), pred):
            tags[i] = t
        if f == 0:
            t0 = time.perf_counter()
            preds.update({f"fold0:{name}": [t for s in model.predict(c) for t in s] for name, c in others.items()})
            start += time.perf_counter() - t0  # tagging the held-out files is not training time
    t_folds = time.perf_counter() - start
    start = time.perf_counter()
    full = Tagger(task="ner", epochs=epochs, seed=seed).fit(train)
    t_full = time.perf_counter() - start
    preds.update({name: [t for s in full.predict(c) for t in s] for name, c in others.items()})
    preds["_default_f1"] = {name: 100 * full.score(c) for name, c in others.items()}
    out = (tags, preds, t_folds, t_full)
    if cache is not None:
        cache.write_text(json.dumps(list(out)), encoding="utf-8")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--variants", default=",".join(STUDIED))
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--folds", type=int, default=2, help="stage-1 jackknife folds (of 200-sentence blocks)")
    p.add_argument("--window", type=int, default=20, help="sentences either side for the *d columns")
    p.add_argument("--first-epochs", type=int, default=8, help="stage 1 epochs (the default's)")
    p.add_argument("--epochs", type=int, default=12, help="stage 2 curve length")
    p.add_argument("--show", default="6,7,8,9,10,11,12")
    p.add_argument("--lang", default="esp", choices=("esp", "ned"))
    p.add_argument("--test", metavar="VARIANT", help="score VARIANT (at --test-epochs) and the default on testb")
    p.add_argument("--test-epochs", type=int, default=8)
    p.add_argument("--corpora", type=Path, default=CORPORA)
    p.add_argument("--from-fold", action="store_true", help="dev/test columns from the first fold's stage-1 "
                   "model instead of a full one (cheaper: no full stage-1 model is trained)")
    p.add_argument("--gold-train", action="store_true", help="training columns from the gold tags of the other "
                   "occurrences instead of jackknifed stage-1 tags (cheapest: no stage-1 folds)")
    p.add_argument("--cache", type=Path, default=None, help="folder to keep stage-1 tags in (reruns)")
    args = p.parse_args()
    files = {part: args.corpora / f"{args.lang}.{part}" for part in ("train", "testa", "testb")}
    for path in files.values():
        if not path.exists():
            raise SystemExit(f"error: {path} not found")
    seeds = [int(s) for s in args.seeds.split(",")]
    variants = args.variants.split(",") if not args.test else [args.test]
    parts = ("testa", "testb") if args.test else ("testa",)
    train = read_corpus(files["train"], COLUMNS)
    held = {part: read_corpus(files[part], COLUMNS) for part in parts}
    if args.cache:
        args.cache.mkdir(parents=True, exist_ok=True)
    show = [int(e) for e in args.show.split(",") if int(e) <= args.epochs]
    curves: dict[str, list[list[float]]] = defaultdict(list)
    default: dict[str, list[float]] = defaultdict(list)
    secs: dict[str, list[float]] = defaultdict(list)
    tests: dict[str, list[float]] = defaultdict(list)
    for seed in seeds:
        cache = args.cache / f"{args.lang}_s{seed}_k{args.folds}_e{args.first_epochs}_{'-'.join(parts)}_v2.json" \
            if args.cache else None
        tags, preds, t_folds, t_full = first_stage(train, held, seed, args.folds, args.first_epochs, cache)
        for part in parts:
            default[part].append(preds["_default_f1"][part])
        secs["stage1 folds"].append(t_folds)
        secs["stage1 full (= default)"].append(t_full)
        if args.gold_train:
            tags = list(train.columns["ner"])
        train2 = with_columns(train, nonlocal_columns(train, tags, args.window))
        source = "fold0:" if args.from_fold else ""
        held2 = {part: with_columns(c, nonlocal_columns(c, preds[source + part], args.window))
                 for part, c in held.items()}
        for v in variants:
            if args.test:
                start = time.perf_counter()
                tagger = Tagger(task="ner", template=lines_of(v), epochs=args.test_epochs, seed=seed).fit(train2)
                secs[f"stage2 {v} ({args.test_epochs} ep)"].append(time.perf_counter() - start)
                for part in parts:
                    tests[part].append(100 * tagger.score(held2[part]))
                print(f"seed {seed} {v}: " + "  ".join(f"{part} {tests[part][-1]:.2f} (default "
                      f"{default[part][-1]:.2f})" for part in parts), flush=True)
                continue
            reports: list = []
            start = time.perf_counter()
            Tagger(task="ner", template=lines_of(v), epochs=args.epochs, seed=seed).fit(
                train2, dev=held2["testa"], callback=reports.append)
            secs[f"stage2 {v} ({args.epochs} ep)"].append(time.perf_counter() - start)
            curves[v].append([100 * r.dev_score for r in reports])
            print(f"seed {seed} {v}: " + " ".join(f"{x:.2f}" for x in curves[v][-1])
                  + f"  (default {default['testa'][-1]:.2f})", flush=True)
    print(f"\n{args.lang}, stage-1 folds K={args.folds} of {BLOCK}-sentence blocks, {args.first_epochs} "
          f"epochs, window ±{args.window}, dev/test columns from the {'first fold' if args.from_fold else 'full'} "
          f"stage-1 model, seeds {args.seeds}" + (", training columns from gold tags" if args.gold_train else ""))
    if args.test:
        for part in parts:
            print(f"{part}: {args.test} at {args.test_epochs} ep: " + " ".join(f"{x:.2f}" for x in tests[part])
                  + f"  mean {statistics.mean(tests[part]):.2f};  default: "
                  + " ".join(f"{x:.2f}" for x in default[part]) + f"  mean {statistics.mean(default[part]):.2f}")
    else:
        print(f"default (stage 1 full model, {args.first_epochs} ep) testa: "
              + " ".join(f"{x:.2f}" for x in default["testa"]) + f"  mean {statistics.mean(default['testa']):.2f}")
        print(f"{'variant':<12}" + "".join(f"{'ep' + str(e):>8}" for e in show) + f"{'best':>12}")
        for v, cs in curves.items():
            mean = [statistics.mean(c[e - 1] for c in cs) for e in range(1, args.epochs + 1)]
            best = max(range(args.epochs), key=lambda e: mean[e])
            print(f"{v:<12}" + "".join(f"{mean[e - 1]:8.2f}" for e in show) + f"{mean[best]:8.2f}@{best + 1:<3}")
    print("seconds (mean over seeds): " + ", ".join(f"{k} {statistics.mean(v):.1f}" for k, v in secs.items()))


if __name__ == "__main__":
    main()
