"""Training checkpoints: the trainer state after an epoch, so a killed run can resume exactly.

A checkpoint holds what an exact resume needs and nothing more: the weights and averaging sums that
are not zero, the instance counter, the epoch, the RNG state and the best dev epoch so far (its
averaged weights, also only where not zero). Features are not stored: they are rebuilt
deterministically from the same data and templates, and a fingerprint (templates, labels, attribute
counts, data hashes, seed) makes sure a checkpoint is only resumed with the run it came from.

Sparse storage (layout 2). Training touches a few per cent of the (attribute, label) pairs of the
default ``"all"`` feature set: on CoNLL-2000 after 10 epochs 689,790 of 32,862,520. A group of
arrays of one shape (the weights ``W`` and their sums ``U``; ``Wc`` and ``Uc``; the best epoch's
average) is stored as the positions where any of them is not zero — as the low 16 bits of each
position plus a count per block of 65,536 (2 bytes a position), or as a bitmap when that is
smaller — and each array's values there, in the narrowest dtype that gives back the very same bits
(the perceptron's weights and sums are integers, stored as int16 and int32; with attribute values,
PA steps or mixing they are not, and take float32, or float64 where float32 would round them; -0.0
counts as not zero). The feature set itself is a flag for ``"all"`` (every label of every attribute), else its
counts, labels and active slots. CoNLL-2000 (default template, 10 epochs): 490 MB → 5.6 MB, written
in a tenth of an epoch's time (a scan of the weights and sums for the ones not zero, and a small write).

The file is written atomically (`structperc.model.archive.save_archive`: a temporary file renamed
over the last one), so the directory holds the latest complete checkpoint only; a temporary file
left by a killed write is removed by the next run's first checkpoint and by `remove_checkpoint`.
Checkpoints written before layout 2 (every array dense, the feature set in full) still resume.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from structperc.compiled.boundary import rising
from structperc.errors import InputError, ModelFormatError
from structperc.features.index import FeatureIndex
from structperc.features.task import Task
from structperc.model.archive import load_archive, save_archive
from structperc.model.state_weights import FeatureSet, all_pairs
from structperc.model.weights import Weights
from structperc.train.state import PerceptronState
from structperc.train.trainer import UPDATE_DEFAULTS

CHECKPOINT = "checkpoint.zip"
#: The sparse layout's number in a checkpoint's metadata (`load_checkpoint` reads layout 1, dense, too).
LAYOUT = 2
_RAW = ("W", "U", "Wt", "Ut", "Wc", "Uc")
_BLOCK = 1 << 16     # positions are stored as their low 16 bits and a count per block of 2^16
_SCAN = 1 << 20      # elements scanned at a time for non-zero values (small temporaries)
_BITS = {4: np.uint32, 8: np.uint64}


class Checkpointer:
    """The trainer's ``on_epoch_end`` hook: `save_checkpoint` to ``directory`` after every epoch,
    remembering across epochs what does not change (the encoded feature set) or changes rarely (the
    best dev epoch's sparse average), so a checkpoint costs a scan of the weights and a small write.
    """

    def __init__(self, directory: str | os.PathLike, fingerprint: dict):
        self.directory, self.fingerprint = Path(directory), fingerprint
        self.cache: dict = {}
        self.written: Path | None = None

    def __call__(self, state: PerceptronState) -> None:
        if self.written is None:
            _remove_temporaries(self.directory)
        self.written = save_checkpoint(self.directory, state, self.fingerprint, cache=self.cache)


def checkpoint_fingerprint(template_lines: list[str], labels: list[str], index: FeatureIndex, task: Task,
                           params: dict, data: str, scale: dict, *, parts: int | None = None,
                           partial: bool = False) -> dict:
    """What a checkpoint records of its run, and a resumed run must match (`load_checkpoint`): the
    templates, labels, seed, attribute counts and tag scheme, the digest ``data`` of the training
    data (read by the workers: in ``parts`` parts), the options that change training where they
    differ from their defaults (the feature set, the update rule's `UPDATE_DEFAULTS`), the unknown
    tag of ``partial``ly labelled data, and the parameter mixing's ``scale`` (workers, mixing)."""
    return {"templates": template_lines, "labels": labels, "seed": params["seed"],
            "attributes": [index.n_state_attributes, index.n_transition_attributes],
            "scheme": [task.model_scheme, task.constrained], "data": data,
            **({"parts": parts} if parts is not None else {}),
            **({"feature_set": params["feature_set"]} if params.get("feature_set", "all") != "all" else {}),
            **{k: params[k] for k, d in UPDATE_DEFAULTS.items() if params.get(k, d) != d},
            **({"unknown_tag": params.get("unknown_tag", "?")} if partial else {}), **scale}


def save_checkpoint(directory: str | os.PathLike, state: PerceptronState, fingerprint: dict,
                    cache: dict | None = None) -> Path:
    """Write ``state`` atomically to ``directory/checkpoint.zip`` (sparse: see the module docstring).
    ``cache`` (a dict kept between the calls of one run, as `Checkpointer` does) saves recomputing
    the encoded feature set and the best epoch's average."""
    cache = {} if cache is None else cache
    arrays: dict[str, np.ndarray] = {}
    meta = {"kind": "checkpoint", "layout": LAYOUT, "c": state.c, "epoch": state.epoch,
            "rng_state": state.rng_state, "best_score": state.best_score, "best_epoch": state.best_epoch,
            "fingerprint": fingerprint, "n_pairs": len(state.W), "cond_shape": list(state.Wc.shape)}
    meta["pairs"] = _pairs(state, cache, arrays)
    arrays.update(Wt=state.Wt, Ut=state.Ut)
    at = _nonzero_positions([state.W, state.U])
    w, u = state.W[at], state.U[at]
    _put(arrays, meta, "state", at, len(state.W), W=w, U=u)
    cond = _nonzero_positions([state.Wc.reshape(-1), state.Uc.reshape(-1)])
    _put(arrays, meta, "cond", cond, state.Wc.size, Wc=state.Wc.reshape(-1)[cond], Uc=state.Uc.reshape(-1)[cond])
    best = _best(state, cache, at, w, u)
    if best is not None:
        best_at, best_values, best_trans, best_cond = best
        arrays["best_trans"] = best_trans
        _put(arrays, meta, "best", best_at, len(state.W), best_state=best_values)
        meta["best_cond_shape"] = list(best_cond.shape)
        flat = best_cond.reshape(-1)
        best_cond_at = _nonzero_positions([flat])
        _put(arrays, meta, "best_cond", best_cond_at, flat.size, best_cond=flat[best_cond_at])
    return save_archive(Path(directory) / CHECKPOINT, meta, arrays)


def load_checkpoint(directory: str | os.PathLike, fingerprint: dict, mask: np.ndarray,
                    end: np.ndarray, epochs: int | None = None) -> PerceptronState:
    """The state saved in ``directory``; refuses a checkpoint of a different run, and (``epochs``:
    the epochs the run asks for) one that already has more epochs than that. One with exactly as
    many resumes to no further epoch: the run just makes its model."""
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
        done = int(meta["epoch"])
    except (KeyError, TypeError, ValueError):
        raise ModelFormatError(f"{path}: damaged checkpoint (no epoch)") from None
    if epochs is not None and done > epochs:
        raise InputError(f"the checkpoint already has {done} epochs and --epochs asks for {epochs}: "
                         f"give --epochs {done} or more to resume it", str(path))
    try:
        if meta.get("layout", 1) == 1:
            raw, pairs, best_parts = _dense_layout(arrays)
        else:
            raw, pairs, best_parts = _sparse_layout(meta, arrays)
        W, U, Wt, Ut, Wc, Uc = raw
        state = PerceptronState(W, U, Wt, Ut, Wc, Uc, c=int(meta["c"]), epoch=done, rng_state=meta["rng_state"],
                                best_score=meta["best_score"], best_epoch=int(meta["best_epoch"]),
                                ptr=pairs[0], labels=pairs[1], active=pairs[2])
        if best_parts is not None:
            values, trans, cond = best_parts
            state.best = Weights(state.pairs.with_values(values), trans, cond, mask, end)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ModelFormatError(f"{path}: damaged checkpoint ({exc})") from None
    return state


def remove_checkpoint(directory: str | os.PathLike) -> bool:
    """Delete the checkpoint in ``directory`` (and any temporary file a killed write left there), once
    the run's model is saved. True if there was one."""
    folder = Path(directory)
    path = folder / CHECKPOINT
    found = path.exists()
    if found:
        path.unlink()
    _remove_temporaries(folder)
    return found


def _remove_temporaries(folder: Path) -> None:
    """The temporary files `save_archive` names ``.checkpoint.zip.*.tmp``, left by a killed write."""
    for stale in folder.glob(f".{CHECKPOINT}.*.tmp"):
        try:
            stale.unlink()
        except FileNotFoundError:
            pass


def _nonzero_positions(arrays: list[np.ndarray]) -> np.ndarray:
    """Sorted positions (int64) where any of ``arrays`` (flat, one length) has a bit set: -0.0 counts,
    so that zeros are given back bit for bit. A block at a time: no array-sized temporaries."""
    n = len(arrays[0])
    bits = [a.view(_BITS[a.itemsize]) for a in arrays]
    found = []
    for a in range(0, n, _SCAN):
        b = min(a + _SCAN, n)
        hit = bits[0][a:b] != 0
        for other in bits[1:]:
            hit |= other[a:b] != 0
        found.append(np.flatnonzero(hit) + a)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def _put(arrays: dict[str, np.ndarray], meta: dict, group: str, at: np.ndarray, n: int,
         **values: np.ndarray) -> None:
    """Store ``values`` at positions ``at`` (of ``n``) as the group ``group``: the positions as a
    bitmap or as low bits and block counts, whichever is smaller; each array narrowed (`_narrow`)."""
    n_blocks = -(-n // _BLOCK)
    if (n + 7) // 8 < 2 * len(at) + 4 * n_blocks:
        flags = np.zeros(n, dtype=bool)
        flags[at] = True
        arrays[f"{group}_bits"] = np.packbits(flags)
    else:
        arrays[f"{group}_low"] = (at & (_BLOCK - 1)).astype(np.uint16)
        arrays[f"{group}_blocks"] = np.bincount(at >> 16, minlength=n_blocks).astype(np.int32)
    for name, v in values.items():
        arrays[name] = _narrow(v)
    meta.setdefault("groups", {})[group] = n


def _positions(arrays: dict[str, np.ndarray], meta: dict, group: str) -> tuple[np.ndarray, int]:
    """The positions `_put` stored for ``group``, checked (strictly ascending, in range), and ``n``."""
    n = int(meta["groups"][group])
    if f"{group}_bits" in arrays:
        bits = arrays[f"{group}_bits"]
        if bits.dtype != np.uint8 or len(bits) != (n + 7) // 8:
            raise ValueError(f"bad {group} bitmap")
        at = np.flatnonzero(np.unpackbits(bits, count=n))
    else:
        low, blocks = arrays[f"{group}_low"], arrays[f"{group}_blocks"]
        if low.dtype != np.uint16 or len(blocks) != -(-n // _BLOCK) or int(blocks.sum()) != len(low) \
                or (len(blocks) and int(blocks.min()) < 0):
            raise ValueError(f"bad {group} positions")
        at = np.repeat(np.arange(len(blocks), dtype=np.int64) << 16, blocks) + low
        if len(at) and (int(at[-1]) >= n or not rising(at, strict=True)):
            raise ValueError(f"bad {group} positions")
    return at, n


def _scatter(arrays: dict[str, np.ndarray], at: np.ndarray, n: int, name: str, dtype: type) -> np.ndarray:
    values = arrays[name]
    if len(values) != len(at):
        raise ValueError(f"{name}: {len(values)} values for {len(at)} positions")
    out: np.ndarray = np.zeros(n, dtype=dtype)
    out[at] = values
    return out


def _narrow(values: np.ndarray) -> np.ndarray:
    """``values`` (float32 or float64) in the narrowest dtype the archive holds that gives back the
    same bits: int16 or int32 for integers (-0.0 is not one), float32 for float64 that fit, else as is."""
    if not len(values) or values.dtype not in (np.float32, np.float64):
        return values
    bits = _BITS[values.itemsize]
    lo, hi = float(values.min()), float(values.max())  # NaN: no integer dtype fits
    candidates: list[type[np.generic]] = [dt for dt in (np.int16, np.int32)
                              if np.dtype(dt).itemsize < values.itemsize
                              and np.iinfo(dt).min <= lo and hi <= np.iinfo(dt).max][:1]
    if values.dtype == np.float64:
        candidates.append(np.float32)
    with np.errstate(all="ignore"):
        for dtype in candidates:
            narrow: np.ndarray = values.astype(dtype)
            if np.array_equal(narrow.astype(values.dtype).view(bits), values.view(bits)):
                return narrow
    return values


def _pairs(state: PerceptronState, cache: dict, arrays: dict[str, np.ndarray]) -> dict:
    """The feature set: ``{"all": [A, L]}`` for every label of every attribute, else its counts per
    attribute, labels and active slots in ``arrays``. Cached: a run's feature set does not change."""
    ptr, labels, active = state.ptr, state.labels, state.active
    assert ptr is not None and labels is not None and active is not None  # `PerceptronState` makes them
    key = (ptr, labels, active)
    hit = cache.get("pairs")
    if hit is None or any(x is not y for x, y in zip(hit[0], key)):
        L, A = state.Wt.shape[1], len(ptr) - 1
        stored: dict[str, np.ndarray] = {}
        if not len(active) and len(labels) == A * L and np.array_equal(ptr, np.arange(A + 1, dtype=np.int64) * L) \
                and (A == 0 or bool((labels.reshape(A, L) == np.arange(L, dtype=np.int16)).all())):
            meta: dict = {"all": [A, L]}
        else:
            stored["pair_counts"] = np.diff(ptr).astype(np.uint8 if L <= 255 else np.uint16 if L <= 65535 else np.int64)
            stored["pair_labels"] = labels.astype(np.uint8) if L <= 256 else labels
            if len(active):
                stored["pair_active"] = np.packbits(active != 0)
            meta = {"n_attributes": A, "n_labels": L}
        hit = cache["pairs"] = (key, meta, stored)
    arrays.update(hit[2])
    return hit[1]


def _best(state: PerceptronState, cache: dict, at: np.ndarray, w: np.ndarray, u: np.ndarray) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The best dev epoch's average: (positions of its non-zero state weights, their values, the
    transitions, the conditioned transitions), or None without a dev set. Taken from the cache while
    the best epoch stays the same; for an epoch that just became the best, computed at the touched
    positions from ``w``, ``u`` (the state's values there) with the very arithmetic of
    `PerceptronState.remember_best`; else read back from the state (its spill file)."""
    if state.best_score is None:
        return None
    key = (state.best_epoch, state.best_score)
    hit = cache.get("best")
    if hit is not None and hit[0] == key:
        return hit[1]
    if state.spill is not None and state.spilled is not None and state.best_epoch == state.epoch:
        inv = 1.0 / state.c if state.c else 0.0
        values = np.empty(len(w), dtype=np.float32)
        values[:] = w - u * inv  # as `_average`: float64 arithmetic, rounded once to float32
        keep = values.view(np.uint32) != 0
        trans, cond = state.spilled[0], state.spilled[1]
        best = (at[keep], values[keep], trans, cond)
    else:
        weights = state.best_weights()
        if weights is None:
            return None
        dense = weights.sparse.values
        best_at = _nonzero_positions([dense])
        best = (best_at, dense[best_at], weights.trans, weights.cond)
    cache["best"] = (key, best)
    return best


def _dense_layout(arrays: dict[str, np.ndarray]) -> tuple[list[np.ndarray], FeatureSet, tuple | None]:
    """A layout-1 checkpoint (before sparse storage): every array in full."""
    raw = [arrays[name] for name in _RAW]
    pairs = FeatureSet(arrays["ptr"], arrays["labels"], arrays["active"])
    best = None
    if "best_state" in arrays:
        best = (arrays["best_state"], arrays["best_trans"], arrays["best_cond"])
    return raw, pairs, best


def _sparse_layout(meta: dict, arrays: dict[str, np.ndarray]) -> tuple[list[np.ndarray], FeatureSet, tuple | None]:
    """A layout-2 checkpoint: the feature set and the full arrays rebuilt from their sparse storage."""
    spec = meta["pairs"]
    if "all" in spec:
        A, L = (int(x) for x in spec["all"])
        pairs = all_pairs(A, L)
    else:
        A, L = int(spec["n_attributes"]), int(spec["n_labels"])
        counts = arrays["pair_counts"].astype(np.int64)
        if len(counts) != A:
            raise ValueError("the feature set's counts do not match its attributes")
        ptr = np.zeros(A + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        labels = arrays["pair_labels"].astype(np.int16)
        active = np.zeros(0, np.uint8)
        if "pair_active" in arrays:
            active = np.unpackbits(arrays["pair_active"], count=len(labels))
        pairs = FeatureSet(ptr, labels, active)
    n_pairs = int(meta["n_pairs"])
    if int(pairs.ptr[-1]) != n_pairs:
        raise ValueError("the feature set does not match the weights")
    at, n = _positions(arrays, meta, "state")
    if n != n_pairs:
        raise ValueError("the weights do not match the feature set")
    W, U = _scatter(arrays, at, n, "W", np.float32), _scatter(arrays, at, n, "U", np.float64)
    cond_shape = tuple(int(x) for x in meta["cond_shape"])
    at, n = _positions(arrays, meta, "cond")
    if n != int(np.prod(cond_shape)):
        raise ValueError("the conditioned transitions do not match their shape")
    Wc = _scatter(arrays, at, n, "Wc", np.float32).reshape(cond_shape)
    Uc = _scatter(arrays, at, n, "Uc", np.float64).reshape(cond_shape)
    raw = [W, U, arrays["Wt"], arrays["Ut"], Wc, Uc]
    best = None
    if "best" in meta["groups"]:
        at, n = _positions(arrays, meta, "best")
        values = _scatter(arrays, at, n, "best_state", np.float32)
        shape = tuple(int(x) for x in meta["best_cond_shape"])
        at, n = _positions(arrays, meta, "best_cond")
        if n != int(np.prod(shape)):
            raise ValueError("the best epoch's conditioned transitions do not match their shape")
        best = (values, arrays["best_trans"], _scatter(arrays, at, n, "best_cond", np.float32).reshape(shape))
    return raw, pairs, best
