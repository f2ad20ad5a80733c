"""What the held-out studies share (not a study itself; the scripts of this folder import it).

* The held-out protocol: `split` cuts a training set as ``dev_split=0.1`` does (the same seeded
  permutation as the estimators' own split), so a study's held-out tenth is the one the README's
  commands hold out; nothing here ever reads a test file unless a study asks for its ``--test`` row.
* The four corpora of the training-lever studies (`study_margin.py`, `study_order2.py`) with their
  held-out protocol (`corpora`), the estimator each is trained with (`estimator`), and, for their
  ``--bench``, one corpus's training arrays as the estimator featurizes them (`training_arrays`) with
  fresh trainer states over them (`fresh_state`).
* The segmentation studies' runs (`study_cws.py`, `study_av.py`, `study_tag6.py`): one held-out run
  and one test run with the figures every study reports (`held_out_run`, `test_run`), their common
  command-line options and JSON-lines output (`add_common_options`, `emitter`).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

import numpy as np

from structperc import Segmenter, Tagger

#: ``../shared/corpora`` beside the repository (``--corpora-dir`` points elsewhere).
ROOT = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"

T = TypeVar("T")


def split(items: Sequence[T], seed: int, fraction: float = 0.1) -> tuple[list[T], list[T]]:
    """The kept and held-out items (sentences), as the estimators' ``dev_split=fraction`` splits them
    for ``seed``: a seeded permutation, the first ``round(fraction · n)`` held out, both in file order."""
    order = np.random.default_rng(seed).permutation(len(items))
    n_dev = max(1, int(round(fraction * len(items))))
    held, kept = np.sort(order[:n_dev]), np.sort(order[n_dev:])
    return [items[i] for i in kept], [items[i] for i in held]


# ------------------------------------------------------------------ the training-lever studies
def corpora(root: Path = ROOT) -> dict[str, dict]:
    """The four corpora under ``root``: chunk and sxu hold out a tenth of train (``dev_split``), esp and
    ewt have dev files."""
    return {
        "chunk": {"kind": "tagger", "train": root / "conll2000/train.txt", "test": root / "conll2000/test.txt",
                  "params": {"task": "chunk", "dev_split": 0.1}},
        "sxu": {"kind": "segmenter", "train": root / "sighan2008_sxu/train.txt",
                "test": root / "sighan2008_sxu/test.txt", "params": {"dev_split": 0.1}},
        "esp": {"kind": "tagger", "train": root / "conll2002/esp.train", "dev": root / "conll2002/esp.testa",
                "test": root / "conll2002/esp.testb", "params": {"task": "ner"}},
        "ewt": {"kind": "tagger", "train": root / "ud_en_ewt/en_ewt-ud-train.conllu",
                "dev": root / "ud_en_ewt/en_ewt-ud-dev.conllu", "test": root / "ud_en_ewt/en_ewt-ud-test.conllu",
                "params": {"task": "pos"}},
    }


CORPORA = corpora()


def estimator(spec: dict, *, seed: int, refit: bool = True, order: int = 1, **params: Any) -> Tagger:
    """The corpus's estimator (a `Tagger` or a `Segmenter`) with its protocol's parameters and ``params``.
    ``refit=False`` keeps the model trained on the kept nine tenths (what a held-out figure needs: the
    refit on all of train only matters for a test figure)."""
    params = {**spec["params"], **params}
    if spec["kind"] == "segmenter":
        return StudySegmenter(seed=seed, refit=refit, order=order, **params)
    return Tagger(seed=seed, refit=refit, order=order, **params)


class StudySegmenter(Segmenter):
    """A `Segmenter` that also takes `Tagger`'s ``refit`` and ``order`` (`Segmenter` has neither
    parameter; a training run's parameters are the estimator's ``get_params``)."""

    def __init__(self, *, refit: bool = True, order: int = 1, **params: Any) -> None:
        super().__init__(**params)
        self.refit, self.order = refit, order

    def get_params(self, deep: bool = True) -> dict:
        return {**super().get_params(), "refit": self.refit, "order": self.order}


class _Captured(Exception):
    """Raised by `training_arrays`' stand-in trainer once it holds the training arrays."""


def training_arrays(spec: dict) -> dict:
    """The arrays the trainer receives when the corpus's estimator is fitted (featurized once, as the
    estimator does): features, gold ids, the feature set, the scheme's mask and end, partial labels'
    allowed sets and attribute values (None where absent)."""
    from structperc.train.perceptron import Perceptron

    held: dict = {}

    def capture(self, data, state, options):
        held.update(feats=data.feats, y=data.y, ptr=state.ptr, labels=state.labels, active=state.active,
                    L=state.Wt.shape[1], AT=state.Wc.shape[0], mask=options.mask, end=options.end,
                    allowed=data.allowed, values=data.feats.values)
        raise _Captured
    original = Perceptron.train
    Perceptron.train = capture  # type: ignore[method-assign]
    try:
        estimator(spec, seed=0).fit(str(spec["train"]))
    except _Captured:
        pass
    finally:
        Perceptron.train = original  # type: ignore[method-assign]
    return held


def fresh_state(held: dict):
    """A zero `structperc.train.perceptron.PerceptronState` over ``held``'s feature set."""
    from structperc.train.perceptron import PerceptronState

    return PerceptronState.zeros(len(held["ptr"]) - 1, held["AT"], held["L"],
                                 pairs=(held["ptr"], held["labels"], held["active"]))


def add_lever_options(ap: argparse.ArgumentParser) -> None:
    """``--corpora-dir`` and ``--epochs`` (the studies' budget by default)."""
    ap.add_argument("--corpora-dir", type=Path, default=ROOT,
                    help=f"the folder holding conll2000/, conll2002/, sighan2008_sxu/, ud_en_ewt/ [default: {ROOT}]")
    ap.add_argument("--epochs", type=int, default=None, help="the epoch budget [default: each task's own]")


# ------------------------------------------------------------------ the segmentation studies
#: fit(kept sentences, held-out sentences, epoch reports list) -> the fitted segmenter.
DevFit = Callable[[list, list, list], Any]


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


def test_run(fit: Callable[[], Any], test: str, seed: int, **labels: Any) -> dict:
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
