"""Model compression: keep the attributes whose weights matter, drop the rest (issue 6).

An attribute's importance is the L2 norm of its weights: its state pairs (a weight per label it has)
for a state attribute, the slice ``cond[a]`` ((L + 1) · L transition weights) for an attribute of a
``y[-1]|y[0]|…`` template. Compression keeps either the top fraction ``keep`` of each kind, or those
with norm > ``threshold``, then:

* prunes the feature tables with `FeatureIndex.prune` (ids are renumbered densely, in the old order)
  and moves the kept weight rows with the *same* boolean masks, so attribute ``i`` of the new model is
  the ``i``-th kept attribute of the old one in both the key tables and the weights (the bug of HanLP
  issue #1031 was ids drifting out of step with weights after compression);
* drops atom-vocabulary entries (words, POS tags, affixes …) that no kept attribute uses any more,
  re-encoding the kept keys. The renumbering is monotone, so the sorted key tables stay sorted and
  the weights need no permutation.

Rule for ``keep``: of the ``A`` attributes of each kind, the ``n = ceil(keep · A)`` with the largest
norms are kept (``keep · A`` is rounded to 9 decimals first so that e.g. ``0.3 · 10`` counts as 3, not
3.0000000000000004 → 4; equal norms: the lower id first) — except that attributes whose weights are
all zero are always dropped: they add nothing to any score (a perceptron never updates the attributes
of sentences it already tags right, so a third to a half of them can be dead). So ``keep=1.0`` (or
``threshold=0``) is lossless: predictions are unchanged, only dead attributes go.
"""
from __future__ import annotations

import copy
import dataclasses
import math
from typing import Any

import numpy as np

from structperc.errors import InputError
from structperc.features.index import FeatureIndex
from structperc.features.pruning import prune_vocabularies
from structperc.model.dates import record_date
from structperc.model.schema import Model, same_arrays
from structperc.model.weights import Weights, with_zero_row

__all__ = ["compress", "attribute_norms", "n_kept", "keep_masks", "index_groups"]


def n_kept(keep: float, n: int) -> int:
    """How many of ``n`` attributes a ``keep`` fraction keeps: ``ceil(keep · n)``."""
    return min(n, int(math.ceil(round(keep * n, 9))))


def attribute_norms(weights: Weights) -> tuple[np.ndarray, np.ndarray]:
    """L2 norms (float64) of the state rows and of the conditioned-transition slices, without the
    trailing zero row/slice."""
    cond = weights.cond[:-1].astype(np.float64)
    cond = cond.reshape(len(cond), int(np.prod(cond.shape[1:])))
    return weights.sparse.row_norms(), np.sqrt((cond * cond).sum(axis=1))


def _top(norms: np.ndarray, keep: float) -> np.ndarray:
    mask = np.zeros(len(norms), dtype=bool)
    k = min(n_kept(keep, len(norms)), int(np.count_nonzero(norms > 0)))
    if k:
        order = np.argsort(-norms, kind="stable")  # largest first; equal norms: lower id first
        mask[order[:k]] = True
    return mask


def keep_masks(weights: Weights, *, keep: float | None = None,
               threshold: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (state attributes, transition attributes) of the attributes to keep."""
    _check_args(keep, threshold)
    return _masks(attribute_norms(weights), keep, threshold)


def _masks(norms: tuple[np.ndarray, np.ndarray], keep: float | None,
           threshold: float | None) -> tuple[np.ndarray, np.ndarray]:
    """`keep_masks` of the weights whose `attribute_norms` are ``norms``."""
    s_norm, c_norm = norms
    if keep is not None:
        return _top(s_norm, keep), _top(c_norm, keep)
    return s_norm > threshold, c_norm > threshold


def _check_args(keep: Any, threshold: Any) -> None:
    if (keep is None) == (threshold is None):
        raise InputError("give exactly one of keep (a fraction of attributes) and threshold "
                         "(a minimum weight norm)")
    value = keep if keep is not None else threshold
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{'keep' if keep is not None else 'threshold'} must be a finite number, "
                         f"got {value!r}")
    if keep is not None and not 0.0 < keep <= 1.0:
        raise InputError(f"keep must be a fraction in (0, 1], got {keep!r}")
    if threshold is not None and threshold < 0:
        raise InputError(f"threshold must be >= 0, got {threshold!r}")


def compress(model: Model, *, keep: float | None = None, threshold: float | None = None,
             prune_vocabulary: bool = True) -> Model:
    """A compressed copy of a trained model; the input is left untouched.

    Parameters
    ----------
    model : Model
        As `structperc.model.schema.read` gives it (`Tagger.compress` wraps this for estimators).
    keep : float in (0, 1], optional
        Keep the ``ceil(keep · A)`` state attributes with the largest weight-row norms (and likewise
        for the transition-conditioned attributes); all-zero attributes are dropped regardless.
    threshold : float >= 0, optional
        Keep the attributes whose weight norm is greater than ``threshold``. Give exactly one of
        ``keep`` and ``threshold``.
    prune_vocabulary : bool
        Also drop atom-vocabulary entries that no kept attribute uses.

    Returns
    -------
    Model
        ``provenance["compressed"]`` records the settings and the attribute counts before and after
        (and, under ``"previous"``, an earlier compression's record). Its first stage and a vote's members are
        compressed alike; the parts that read one feature index (a vote's members, stage for stage) keep every
        attribute one of them keeps, so they still read one index, stored once.
    """
    _check_args(keep, threshold)
    compressed: dict[int, Model] = {}
    memo: dict[int, Any] = {}  # one deep copy for all parts: a table the parts share stays one table
    for group in index_groups(model.parts()):
        for part, pruned in zip(group, _compress_group(group, keep, threshold, prune_vocabulary, memo)):
            compressed[id(part)] = pruned

    def assembled(part: Model) -> Model:
        return dataclasses.replace(compressed[id(part)],
                                   stage1=None if part.stage1 is None else compressed[id(part.stage1)],
                                   voters=[assembled(v) for v in part.voters])
    return assembled(model)


def index_groups(parts: list[Model]) -> list[list[Model]]:
    """``parts`` (`Model.parts`) grouped by the feature index they read: the same table, or an equal one (a
    vote's members, stage for stage, are trained on the same data with the same template)."""
    groups: list[list[Model]] = []
    for part in parts:
        for group in groups:
            if _same_index(group[0].features, part.features):
                group.append(part)
                break
        else:
            groups.append([part])
    return groups


def _same_index(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if not (isinstance(a, FeatureIndex) and isinstance(b, FeatureIndex)):
        return False
    (meta_a, arrays_a), (meta_b, arrays_b) = a.state_dict(), b.state_dict()
    return meta_a == meta_b and same_arrays(arrays_a, arrays_b)


def _compress_group(group: list[Model], keep: float | None, threshold: float | None,
                    prune_vocabulary: bool, memo: dict[int, Any]) -> list[Model]:
    """The parts of ``group`` (they read one feature index) compressed, each without its first stage and
    members (`compress` puts them back). They keep every attribute one of them keeps and read one pruned
    index: a vote's members stay one table, stored once and featurized once when tagging, and an attribute a
    member keeps only for the others (all zero in its own weights, or below its own cut) scores as before."""
    norms = [attribute_norms(part.weights) for part in group]
    masks = [_masks(n, keep, threshold) for n in norms]
    keep_state = np.logical_or.reduce([m[0] for m in masks])
    keep_trans = np.logical_or.reduce([m[1] for m in masks])
    fi = copy.deepcopy(group[0].features)
    fi.prune(keep_state, keep_trans)
    vocab_before = vocab_after = sum(len(v) for v in fi.vocabs)
    if prune_vocabulary and isinstance(fi, FeatureIndex):
        # an `AttributeIndex` (a model of the sklearn face) has no template key tables to re-encode:
        # its attributes are whole strings, and pruning them above is all there is
        vocab_before, vocab_after = prune_vocabularies(fi)
    if fi.n_state_attributes != int(keep_state.sum()) or \
            fi.n_transition_attributes != int(keep_trans.sum()):  # pragma: no cover - guards prune()
        raise AssertionError("pruned feature tables and weights disagree in size")
    out = []
    for part, (own_state, own_trans), (s_norm, c_norm) in zip(group, masks, norms):
        w = part.weights
        weights = Weights(w.sparse.select(keep_state), w.trans.copy(),
                          with_zero_row(w.cond[:-1][keep_trans]), w.mask.copy(), w.end.copy(),
                          None if w.order2 is None else w.order2.copy())  # label-indexed: kept whole
        record = {
            "keep": keep, "threshold": threshold,
            "state_attributes_before": int(len(keep_state)),
            "state_attributes_after": int(keep_state.sum()),
            "transition_attributes_before": int(len(keep_trans)),
            "transition_attributes_after": int(keep_trans.sum()),
            "vocabulary_before": int(vocab_before), "vocabulary_after": int(vocab_after),
            "min_kept_norm": float(min(s_norm[own_state].min(initial=np.inf),
                                       c_norm[own_trans].min(initial=np.inf)))
            if own_state.any() or own_trans.any() else None,
            **({"parts_sharing_the_index": len(group)} if len(group) > 1 else {}),
            "date": record_date(),
        }
        provenance = copy.deepcopy(part.provenance)
        if "compressed" in provenance:
            record["previous"] = provenance["compressed"]
        provenance["compressed"] = record
        # The deep copy is of a shell without the large tables (None for a moment), refilled at once.
        shell = dataclasses.replace(part, features=None, weights=None, stage1=None,  # type: ignore[arg-type]
                                    voters=[])
        out.append(dataclasses.replace(copy.deepcopy(shell, memo), features=fi, weights=weights, provenance=provenance))
    return out
