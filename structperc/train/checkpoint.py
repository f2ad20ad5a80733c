"""Training checkpoints: the full trainer state after an epoch, so a killed run can resume exactly.

A checkpoint holds the feature set (state pairs), the raw weights and averaging sums, the instance
counter, the epoch, the RNG state and the best dev epoch so far. Features are not stored: they are
rebuilt deterministically from the same data and templates, and a fingerprint (templates, labels,
attribute counts, data hashes, seed)
makes sure a checkpoint is only resumed with the run it came from.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from structperc.errors import InputError, ModelFormatError
from structperc.model.weights import Weights
from structperc.model.archive import load_archive, save_archive
from structperc.train.perceptron import PerceptronState

CHECKPOINT = "checkpoint.zip"
_RAW = ("W", "U", "Wt", "Ut", "Wc", "Uc")


def save_checkpoint(directory: str | os.PathLike, state: PerceptronState, fingerprint: dict) -> Path:
    """Write ``state`` atomically to ``directory/checkpoint.zip``."""
    arrays = {name: getattr(state, name) for name in _RAW}
    arrays.update(ptr=state.ptr, labels=state.labels, active=state.active)
    best = state.best_weights()
    if best is not None:
        arrays.update(best_state=best.sparse.values, best_trans=best.trans, best_cond=best.cond)
    meta = {"kind": "checkpoint", "c": state.c, "epoch": state.epoch,
            "rng_state": state.rng_state, "best_score": state.best_score,
            "best_epoch": state.best_epoch, "fingerprint": fingerprint}
    return save_archive(Path(directory) / CHECKPOINT, meta, arrays)


def load_checkpoint(directory: str | os.PathLike, fingerprint: dict, mask: np.ndarray,
                    end: np.ndarray) -> PerceptronState:
    """The state saved in ``directory``; refuses a checkpoint of a different run."""
    path = Path(directory) / CHECKPOINT
    if not path.exists():
        raise InputError(f"no checkpoint to resume from (expected {path})")
    meta, arrays = load_archive(path)
    if meta.get("kind") != "checkpoint":
        raise ModelFormatError(f"{path}: not a training checkpoint")
    if meta.get("fingerprint") != fingerprint:
        theirs = meta.get("fingerprint") or {}
        diff = sorted(k for k in set(theirs) | set(fingerprint) if theirs.get(k) != fingerprint.get(k))
        raise InputError(f"{path}: checkpoint of a different training run (differs in: "
                         f"{', '.join(diff)}); use the same data, templates and options")
    try:
        state = PerceptronState(*(arrays[name] for name in _RAW), c=int(meta["c"]),
                                epoch=int(meta["epoch"]), rng_state=meta["rng_state"],
                                best_score=meta["best_score"], best_epoch=int(meta["best_epoch"]),
                                ptr=arrays["ptr"], labels=arrays["labels"], active=arrays["active"])
        if "best_state" in arrays:
            state.best = Weights(state.pairs.with_values(arrays["best_state"]), arrays["best_trans"],
                                 arrays["best_cond"], mask, end)
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFormatError(f"{path}: damaged checkpoint ({exc})") from None
    return state
