"""sklearn-crfsuite's CoNLL-2002 tutorial, fitted by sklearn-crfsuite's averaged perceptron and by
`structperc.sklearn.StructuredPerceptron` on the same feature dicts, in one run.

The feature set is the tutorial's (https://sklearn-crfsuite.readthedocs.io/en/latest/tutorial.html,
``word2features``): bias, the lowercased word, its 2- and 3-character suffixes, isupper / istitle /
isdigit, the POS tag and its first two characters; lowercased word, istitle, isupper, POS and POS[:2]
of the previous and the next word; BOS / EOS at the sentence edges. It is written here anew; the
tutorial reads NLTK's copy of CoNLL-2002, whose files are the ones in ``corpora/conll2002`` (``word
POS tag`` lines).

Both estimators receive the same list of lists of dicts: train on ``esp.train``, predict
``esp.testb``, span F1 (conlleval's rules, `structperc.metrics.span_f1`, = seqeval's default mode).
Times are wall-clock seconds of ``fit`` and ``predict`` (feature dicts → model / tags, the
conversion each library does from the dicts included); ``--repeat`` runs each fit and predict that
many times and reports the minimum (the machine is shared: the minimum is the least disturbed run).
StructuredPerceptron's default ``scheme="auto"`` learns the IOB2 tags in IOBES (``--scheme none``:
opaque labels, as sklearn-crfsuite treats them).

Run: ``python scripts/bench/bench_sklearn_crfsuite.py [--corpora DIR] [--repeat 3] [--json out.json]``
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPORA = ROOT.parent / "shared" / "corpora"


def read_conll(path: Path) -> list[list[tuple[str, str, str]]]:
    """Sentences of (word, POS, tag) from a CoNLL-2002 file (blank lines between sentences)."""
    sents: list[list[tuple[str, str, str]]] = []
    cur: list[tuple[str, str, str]] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                if cur:
                    sents.append(cur)
                    cur = []
                continue
            if parts[0] == "-DOCSTART-":
                continue
            cur.append((parts[0], parts[1], parts[-1]))
    if cur:
        sents.append(cur)
    return sents


def _neighbour(word: str, pos: str, side: str) -> dict[str, Any]:
    return {f"{side}:word.lower()": word.lower(), f"{side}:word.istitle()": word.istitle(),
            f"{side}:word.isupper()": word.isupper(), f"{side}:postag": pos,
            f"{side}:postag[:2]": pos[:2]}


def token_features(sent: list[tuple[str, str, str]], i: int) -> dict[str, Any]:
    """The tutorial's feature dict of token ``i``."""
    word, pos, _ = sent[i]
    feats: dict[str, Any] = {
        "bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:], "word[-2:]": word[-2:],
        "word.isupper()": word.isupper(), "word.istitle()": word.istitle(),
        "word.isdigit()": word.isdigit(), "postag": pos, "postag[:2]": pos[:2],
    }
    if i:
        feats.update(_neighbour(sent[i - 1][0], sent[i - 1][1], "-1"))
    else:
        feats["BOS"] = True
    if i + 1 < len(sent):
        feats.update(_neighbour(sent[i + 1][0], sent[i + 1][1], "+1"))
    else:
        feats["EOS"] = True
    return feats


def sentence_features(sent: list[tuple[str, str, str]]) -> list[dict[str, Any]]:
    return [token_features(sent, i) for i in range(len(sent))]


def timed(fn, repeat: int) -> tuple[float, Any]:
    """(minimum seconds over ``repeat`` calls, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    ap.add_argument("--train", default="esp.train")
    ap.add_argument("--test", default="esp.testb")
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each fit/predict (minimum kept)")
    ap.add_argument("--scheme", default="auto", help="StructuredPerceptron's scheme (auto: IOB2 labels "
                    "learnt in IOBES; none: opaque labels, as sklearn-crfsuite)")
    ap.add_argument("--only", choices=("both", "crfsuite", "structperc"), default="both")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)

    import sklearn_crfsuite

    from structperc.metrics import span_f1
    from structperc.sklearn import StructuredPerceptron

    base = args.corpora / "conll2002"
    train, test = read_conll(base / args.train), read_conll(base / args.test)
    t0 = time.perf_counter()
    X_train = [sentence_features(s) for s in train]
    X_test = [sentence_features(s) for s in test]
    y_train = [[t for _, _, t in s] for s in train]
    y_test = [[t for _, _, t in s] for s in test]
    print(f"features: {len(X_train)} train / {len(X_test)} test sentences, "
          f"{sum(map(len, X_train))} / {sum(map(len, X_test))} tokens, built in "
          f"{time.perf_counter() - t0:.1f} s", flush=True)

    results: dict[str, dict[str, float]] = {}
    estimators = {
        "sklearn-crfsuite": lambda: sklearn_crfsuite.CRF(algorithm="ap", max_iterations=args.iterations),
        "structperc": lambda: StructuredPerceptron(max_iterations=args.iterations,
                                                      scheme=args.scheme),
    }
    if args.only != "both":
        estimators = {k: v for k, v in estimators.items() if (args.only == "crfsuite") == (k != "structperc")}
    for name, make in estimators.items():
        est = make()
        fit_s, _ = timed(lambda est=est: est.fit(X_train, y_train), args.repeat)
        pred_s, pred = timed(lambda est=est: est.predict(X_test), args.repeat)
        f1 = 100 * span_f1(y_test, [list(p) for p in pred])
        results[name] = {"f1": f1, "fit_s": fit_s, "predict_s": pred_s,
                         "attributes": float(len(est.attributes_))}
        print(f"{name:17s} span F1 {f1:6.2f}   fit {fit_s:7.2f} s   predict {pred_s:6.2f} s   "
              f"attributes {len(est.attributes_)}", flush=True)
    if len(results) == 2:
        a, b = results["structperc"], results["sklearn-crfsuite"]
        ratios = {"f1_gain": a["f1"] - b["f1"], "fit_ratio": a["fit_s"] / b["fit_s"],
                  "predict_ratio": a["predict_s"] / b["predict_s"]}
        results["ratios"] = ratios
        print(f"structperc − sklearn-crfsuite: F1 {ratios['f1_gain']:+.2f}   fit time "
              f"{ratios['fit_ratio']:.2f}×   predict time {ratios['predict_ratio']:.2f}×  "
              f"(min of {args.repeat} run(s) each; goal: F1 ≥ +1.00, fit ≤ 0.50×)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.fspath(ROOT))
    sys.exit(main())
