#!/usr/bin/env python
"""The language-resource study (``--lang``): which resource templates pay, per task family, on held-out data.

    python scripts/studies/study_lang.py chunk                 # every variant, seeds 0 1 2, held-out figures
    python scripts/studies/study_lang.py pos --variants none,window --seeds 0 1 2
    python scripts/studies/study_lang.py cws --variants none,all,freq10

Protocol (nothing is chosen on a test file):

* chunk (CoNLL-2000) holds out the tenth of train.txt that ``--dev-split 0.1`` holds out; pos (EWT) and ner
  (CoNLL-2002 esp) score their dev files (en_ewt-ud-dev, esp.testa); cws (SXU) holds out a tenth of
  train.txt. The held-out file also picks the epoch (the best of the task's epoch budget); the models are not
  refit, the held-out score is the figure.
* one thing varies at a time: the cluster templates added to the task's preset (each variant's lines below;
  ``none`` is the preset without ``--lang``), or, for cws, which of jieba's words are used (all, or those of
  frequency ≥ k) and where they enter: the training lexicon's columns, columns of their own, or both.
  Every variant runs on each seed (``--seeds``); the table gives the mean, the spread (max − min) and the
  mean best epoch. ``--param NAME=VALUE`` adds an estimator parameter to every run (``order=2``).
* the chosen variant becomes the package's default (`structperc.features.templates.LANGUAGE_LINES`,
  `structperc.features.resources.language.MIN_WORD_FREQUENCY` and ``WORDS_IN_LEXICON``): chosen here and
  nowhere else. The test
  figures come from the README's commands, once, after.

Output: one JSON line per run (``--jsonl`` appends them to a file), then the table.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from heldout import CORPORA, StudySegmenter, estimator  # noqa: E402

from structperc.features.templates import (  # noqa: E402
    BAND_LINES,
    CASE_LINES,
    DICTIONARY_LINES,
    LEMMA_LINES,
    WORD_CONTEXT_CLUSTER_LINES,
    WORD_CONTEXT_LEMMA_LINES,
    language_lines,
    preset,
    with_min_count,
)

#: the cluster path prefixes read at each offset
PREFIXES = (4, 6, 10, 20)


def window(lo: int, hi: int, prefixes=PREFIXES) -> list[str]:
    return [f"clu{n}[{i}]" for i in range(lo, hi + 1) for n in prefixes]


def counted(lines: list[str], n: int) -> list[str]:
    """``lines`` with the word-context conjunctions cut off below ``n`` occurrences (the templates' ``@n``)."""
    context = WORD_CONTEXT_CLUSTER_LINES + WORD_CONTEXT_LEMMA_LINES
    return [with_min_count([line], n)[0] if line in context else line for line in lines]


#: the pos preset's ``--lang`` lines before their word-context lines had a count of their own
#: (`structperc.features.templates.WORD_CONTEXT_MIN_COUNT`)
CONTEXT = (window(-1, 1) + WORD_CONTEXT_CLUSTER_LINES + CASE_LINES + LEMMA_LINES + WORD_CONTEXT_LEMMA_LINES)


#: the full set of pos ``--lang`` lines the study above built (the pos preset's), and groups of them whose tagging
#: time the backward elimination weighs: ``full-clu20-ctxlem`` is the full set less two groups
FULL_POS = counted(CONTEXT, 3)
_CTX_CLU = with_min_count(WORD_CONTEXT_CLUSTER_LINES, 3)
_CTX_LEM = with_min_count(WORD_CONTEXT_LEMMA_LINES, 3)
POS_DROPS = {
    "clu4+20@nbr": ["clu4[-1]", "clu20[-1]", "clu4[1]", "clu20[1]"],
    "clu@nbr": window(-1, -1) + window(1, 1),
    "clu4": ["clu4[-1]", "clu4[0]", "clu4[1]"],
    "clu6@nbr": ["clu6[-1]", "clu6[1]"],
    "clu10@nbr": ["clu10[-1]", "clu10[1]"],
    "clu10": ["clu10[-1]", "clu10[0]", "clu10[1]"],
    "clu20": ["clu20[-1]", "clu20[0]", "clu20[1]"],
    "case": CASE_LINES,
    "cap@nbr": ["cap[-1]", "cap[1]"],
    "cap|istitle": ["cap[0]|istitle(w[0])"],
    "lpos|suffix2": ["lpos[0]|suffix2(w[0])"],
    "ctxclu": _CTX_CLU,
    "ctxlem": _CTX_LEM,
    "clu6[2]ctx": [line for line in _CTX_CLU if "clu6[2]" in line],
}


def ablated(names: str) -> list[str]:
    """The full set of pos ``--lang`` lines less the groups ``names`` (``POS_DROPS`` keys joined by ``-``)."""
    drop = {line for name in names.split("-") for line in POS_DROPS[name]}
    return [line for line in FULL_POS if line not in drop]


#: the first try of the issue (prefixes 4/6/10/20 at -1..+1), then one change at a time
COMMON = {
    "window": window(-1, 1),
    "centre": window(0, 0),
    "window2": window(-2, 2),
    "window+full": window(-1, 1) + ["clu[-1]", "clu[0]", "clu[1]"],
    "window+bands": window(-1, 1) + BAND_LINES,
    "bands": list(BAND_LINES),
    "window+lemmas": window(-1, 1) + LEMMA_LINES,
    "window+bands+lemmas": window(-1, 1) + BAND_LINES + LEMMA_LINES,
    "window+bigram": window(-1, 1) + ["clu6[-1]|clu6[0]", "clu6[0]|clu6[1]", "clu10[-1]|clu10[0]",
                                      "clu10[0]|clu10[1]"],
}
FAMILY = {
    "chunk": {"corpus": "chunk", "lang": "en", "variants": {
        **COMMON, "window+pos": window(-1, 1) + ["clu10[0]|pos[0]", "clu6[0]|pos[-1]", "clu6[0]|pos[1]"]}},
    "pos": {"corpus": "ewt", "lang": "en", "variants": {
        **COMMON,
        "window+lemmas+ctx": window(-1, 1) + LEMMA_LINES + ["lpos[-2]", "lpos[2]", "lpos[-1]|lpos[0]",
                                                            "lpos[0]|lpos[1]"],
        "window+lemmas+conj": window(-1, 1) + LEMMA_LINES + ["lpos[0]|lamb[0]", "lpos[0]|rare(w[0])",
                                                             "lpos[0]|suffix3(w[0])", "y[-1]|y[0]|lpos[0]"],
        "window+rare": window(-1, 1) + ["rare(w[0])|clu10[0]", "rare(w[0])|clu[0]", "clu10[0]|suffix3(w[0])"],
        # the capitalisation evidence of the word probabilities, the word with its neighbours' classes, both
        "window+lemmas+case": window(-1, 1) + LEMMA_LINES + CASE_LINES,
        "window+lemmas+context": window(-1, 1) + LEMMA_LINES + WORD_CONTEXT_CLUSTER_LINES + WORD_CONTEXT_LEMMA_LINES,
        "window+lemmas+case+context": CONTEXT,
        # the same with the word-context conjunctions' attributes seen once (@2) or twice (@3) left out: two
        # thirds of their 234,000 attributes on EWT are seen once, each a weight slot per label
        **{f"window+lemmas+case+context@{n}": counted(CONTEXT, n) for n in (2, 3)},
        # the same with the cluster prefixes at the word alone (the window's ±1 prefixes cost tagging time)
        "centre+lemmas+case+context@3": counted(window(0, 0) + WORD_CONTEXT_CLUSTER_LINES + CASE_LINES + LEMMA_LINES
                                                + WORD_CONTEXT_LEMMA_LINES, 3),
        "preset": language_lines(None, "pos", ["clusters", "probabilities", "lemmas"]),
        # backward elimination for tagging speed (each template costs about the same per token): the full set less
        # one group of lines at a time, then less the groups that kept the full set's mean within its standard
        # error, and so on (any combination runs: full-clu20-lpos|suffix2); the set with the fewest templates that
        # kept it is confirmed on fresh seeds
        "full": FULL_POS, **{f"full-{name}": ablated(name) for name in POS_DROPS}}},
    "ner": {"corpus": "esp", "lang": "es", "variants": {
        **COMMON, "window+shape": window(-1, 1) + ["clu10[0]|shortshape(w[0])", "clu[0]|shortshape(w[0])",
                                                   "y[-1]|y[0]|clu6[0]"]}},
}
#: The CRFsuite chunking template (the benchmark's, `bench/bench_crfsuite.py`) with the clusters: does the cheaper
#: centre set do as well there as the window?
FAMILY["crfsuite"] = {"corpus": "chunk", "lang": "en", "preset": "crfsuite",
                      "variants": {"window": COMMON["window"], "centre": COMMON["centre"]}}
#: Dutch NER (ned.testa picks): Dutch has the lemmatizer's tables only (no clusters, no probabilities)
FAMILY["ned"] = {"corpus": "ned", "lang": "nl", "variants": {
    "lemmas": ["lpos[-1]", "lpos[0]", "lpos[1]"], "lemmas+shape": ["lpos[-1]", "lpos[0]", "lpos[1]",
                                                                   "lpos[0]|shortshape(w[0])"]}}
CORPORA.setdefault("ned", {"kind": "tagger", "train": CORPORA["esp"]["train"].with_name("ned.train"),
                           "dev": CORPORA["esp"]["train"].with_name("ned.testa"),
                           "test": CORPORA["esp"]["train"].with_name("ned.testb"), "params": {"task": "ner"}})
#: cws: jieba's words of frequency >= k ("all": k = 1; jieba lists no word below 1), into the training
#: lexicon's columns ("lexicon"), into columns of their own (``dic*``: "columns"), or both
CWS_WIDE = DICTIONARY_LINES + ["c[0]|dicm[0]", "dicb[-1]", "dice[1]", "dicb[0]|lexb[0]", "dice[0]|lexe[0]",
                                "dicm[0]|lexm[0]"]
CWS_VARIANTS = {"all": (1, True, []), "freq5": (5, True, []), "freq20": (20, True, []),
                "freq100": (100, True, []), "columns": (1, False, DICTIONARY_LINES),
                "both": (1, True, DICTIONARY_LINES),
                "both-freq20": (20, True, DICTIONARY_LINES), "columns-freq5": (5, False, DICTIONARY_LINES),
                "columns-freq20": (20, False, DICTIONARY_LINES), "columns-wide": (1, False, CWS_WIDE)}


def tagger_run(family: str, variant: str, seed: int, epochs: int | None, params: dict | None = None) -> dict:
    spec = CORPORA[FAMILY[family]["corpus"]]
    task = spec["params"]["task"]
    lines = preset(FAMILY[family].get("preset", task))
    extra = {"template": lines} if variant == "none" else {"template": lines + FAMILY[family]["variants"][variant],
                                                            "lang": FAMILY[family]["lang"]}
    tagger = estimator(spec, seed=seed, refit=False, **({"epochs": epochs} if epochs else {}), **extra,
                       **(params or {}))
    t0 = time.perf_counter()
    tagger.fit(str(spec["train"]), dev=str(spec["dev"]) if "dev" in spec else None)
    seconds = time.perf_counter() - t0
    best = max(getattr(tagger, "dev_history_", None) or tagger.history_, key=lambda r: r.dev_score)
    return {"family": family, "variant": variant + "".join(f" {k}={v}" for k, v in (params or {}).items()),
            "seed": seed, "score": 100 * best.dev_score,
            "best_epoch": best.epoch, "seconds": round(seconds, 1)}


def cws_run(variant: str, seed: int, epochs: int | None) -> dict:
    from heldout import split

    from structperc.features.resources import language

    spec = CORPORA["sxu"]
    sents = [line.split() for line in Path(spec["train"]).read_text(encoding="utf-8").splitlines() if line.split()]
    kept, held = split(sents, seed)
    floor, into_lexicon, own_columns = CWS_VARIANTS.get(variant, (1, True, []))
    language.MIN_WORD_FREQUENCY, language.WORDS_IN_LEXICON = floor, into_lexicon
    seg = StudySegmenter(seed=seed, refit=False, lang=None if variant == "none" else "zh",
                         template=preset("cws") + own_columns,
                         **({"epochs": epochs} if epochs else {}))
    t0 = time.perf_counter()
    seg.fit(kept, dev=held)
    seconds = time.perf_counter() - t0
    rep = seg.evaluate(held)
    best = max(getattr(seg, "dev_history_", None) or seg.history_, key=lambda r: r.dev_score)
    return {"family": "cws", "variant": variant, "seed": seed, "score": 100 * rep["f1"],
            "oov_recall": 100 * rep["oov_recall"], "best_epoch": best.epoch, "seconds": round(seconds, 1)}


def table(results: list[dict]) -> str:
    out = ["| variant | held-out score (mean) | spread | OOV recall | best epoch | seconds |",
           "|---|---|---|---|---|---|"]
    variants = list(dict.fromkeys(r["variant"] for r in results))
    base = [r["score"] for r in results if r["variant"] == "none"]
    for v in variants:
        rs = [r for r in results if r["variant"] == v]
        scores = [r["score"] for r in rs]
        mean = statistics.mean(scores)
        delta = f" ({mean - statistics.mean(base):+.2f})" if base and v != "none" else ""
        oov = f"{statistics.mean(r['oov_recall'] for r in rs):.2f}" if "oov_recall" in rs[0] else "–"
        epoch, seconds = (statistics.mean(r[k] for r in rs) for k in ("best_epoch", "seconds"))
        out.append(f"| {v} | {mean:.2f}{delta} | {max(scores) - min(scores):.2f} | {oov} | {epoch:.1f} | "
                   f"{seconds:.0f} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("family", choices=[*FAMILY, "cws"])
    ap.add_argument("--variants", help="comma-separated (default: none and every variant of the family)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--epochs", type=int, default=None, help="the epoch budget [default: the task's]")
    ap.add_argument("--jsonl", help="append every run to this file")
    ap.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                    help="a further Tagger parameter for every run (an int where it reads as one), e.g. order=2")
    args = ap.parse_args()
    names = ["none", *(CWS_VARIANTS if args.family == "cws" else FAMILY[args.family]["variants"])]
    variants = args.variants.split(",") if args.variants else names
    if args.family == "pos":  # any combination of the ablation's groups: full-clu20-lpos|suffix2
        for v in variants:
            if v.startswith("full-") and v not in names and all(g in POS_DROPS for g in v[len("full-"):].split("-")):
                FAMILY["pos"]["variants"][v] = ablated(v[len("full-"):])
                names.append(v)
    unknown = sorted(set(variants) - set(names))
    if unknown:
        ap.error(f"unknown variants {unknown}; known: {names}")
    params = {k: int(v) if v.isdigit() else v for k, v in (p.split("=", 1) for p in args.param)}
    results = []
    for variant in variants:
        for seed in args.seeds:
            r = cws_run(variant, seed, args.epochs) if args.family == "cws" else \
                tagger_run(args.family, variant, seed, args.epochs, params)
            results.append(r)
            print(json.dumps(r), flush=True)
            if args.jsonl:
                with open(args.jsonl, "a", encoding="utf-8") as f:
                    f.write(json.dumps(r) + "\n")
    print(table(results))


if __name__ == "__main__":
    main()
