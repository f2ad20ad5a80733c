"""What the segmentation lever studies share (`study_cws.py`, `study_av.py`, `study_tag6.py`): the held-out
tenth of train as `Segmenter(dev_split=0.1)` cuts it, one held-out run and one test run with the figures
every study reports, and the command line's common options and JSON-lines output."""
from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

import numpy as np

from structperc import Segmenter

#: fit(kept sentences, held-out sentences, epoch reports list) -> the fitted segmenter.
DevFit = Callable[[list, list, list], Segmenter]


def split(sents: list[list[str]], seed: int, fraction: float = 0.1) -> tuple[list, list]:
    """The kept and held-out sentences, as `structperc.fitting.fit` splits them for ``dev_split``."""
    order = np.random.default_rng(seed).permutation(len(sents))
    n_dev = max(1, int(round(fraction * len(sents))))
    held, kept = np.sort(order[:n_dev]), np.sort(order[n_dev:])
    return [sents[i] for i in kept], [sents[i] for i in held]


def held_out_run(fit: DevFit, sents: list[list[str]], seed: int, epochs: int, **labels: Any) -> dict:
    """Train with ``fit`` on the kept nine tenths (the held-out tenth as ``dev``: its curve), score the
    held-out tenth: word F1, OOV and IV recall, the best epoch, seconds."""
    kept, held = split(sents, seed)
    history: list = []
    t0 = time.perf_counter()
    seg = fit(kept, held, history)
    seconds = time.perf_counter() - t0
    rep = seg.evaluate(held)
    best = max(history, key=lambda r: r.dev_score)
    return {**labels, "seed": seed, "epochs": epochs, "best_epoch": best.epoch,
            "f1": 100 * rep["f1"], "oov_recall": 100 * rep["oov_recall"], "iv_recall": 100 * rep["iv_recall"],
            "train_seconds": seconds, "epoch_seconds": sum(r.seconds for r in history) / len(history),
            "curve": [round(100 * r.dev_score, 2) for r in history]}


def test_run(fit: Callable[[], Segmenter], test: str, seed: int, **labels: Any) -> dict:
    """The README's protocol: ``fit()`` trains on all of train.txt with ``dev_split=0.1`` choosing the
    epoch; the model is scored once on ``test``."""
    t0 = time.perf_counter()
    seg = fit()
    seconds = time.perf_counter() - t0
    rep = seg.evaluate(test)
    return {**labels, "seed": seed, "test_f1": 100 * rep["f1"], "test_precision": 100 * rep["precision"],
            "test_recall": 100 * rep["recall"], "test_oov_recall": 100 * rep["oov_recall"],
            "test_iv_recall": 100 * rep["iv_recall"],
            "best_epoch": max(seg.dev_history_, key=lambda r: r.dev_score).epoch, "train_seconds": seconds}


def add_common_options(ap: argparse.ArgumentParser, corpora: str, seeds: str) -> None:
    ap.add_argument("--corpora", default=corpora)
    ap.add_argument("--seeds", default=seeds)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--test", metavar="VARIANT", help="also score VARIANT and the default once on test.txt")
    ap.add_argument("--no-dev", action="store_true", help="skip the held-out runs (with --test)")
    ap.add_argument("--jsonl", help="append every result to this file")


def emitter(results: list[dict], jsonl: str | None) -> Callable[[dict], None]:
    """Print each result as a JSON line (and append it to ``jsonl``), keeping it in ``results``."""
    def emit(r: dict) -> None:
        results.append(r)
        print(json.dumps(r), flush=True)
        if jsonl:
            with open(jsonl, "a", encoding="utf-8") as f:
                f.write(json.dumps(r) + "\n")
    return emit
