"""What a model has learnt, by name: its weights as tables (``structperc info --weights``) and as
mappings (`Tagger.state_features_`, `Tagger.transition_features_`).

An attribute is named as its template reads (``suffix3(w[0])=ing``, ``w[-1]|w[0]=the|cat``, ``bias``;
`FeatureIndex.attribute_name`), a label by the model's own labels (``model.labels``: IOBES when a span
task learns in IOBES), and the sentence start as `BOS`.

`weights_report` returns a JSON-serializable dict that validates against ``weights.schema.json`` (beside
this module; `SCHEMA_PATH`); `format_weights` lays it out in aligned columns for a terminal.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from structperc.errors import InputError
from structperc.features.attributes import AttributeIndex
from structperc.features.index import FeatureIndex
from structperc.features.keys import digits
from structperc.model.schema import Model, read

__all__ = ["BOS", "SCHEMA_PATH", "FeatureWeights", "attribute_names", "format_weights", "select_labels",
           "state_features", "transition_features", "weights_report"]

#: The name of the sentence-start state (the last row of the transition matrix).
BOS = "<bos>"
#: The JSON Schema of `weights_report`'s dict (``structperc info --weights --json``).
SCHEMA_PATH = Path(__file__).with_name("weights.schema.json")
#: Rows of `weights_report` per label and per summary, unless told.
DEFAULT_TOP = 10


# ---------------------------------------------------------------------------------------------- names
def attribute_names(features: FeatureIndex | AttributeIndex, transition: bool = False,
                    ids: np.ndarray | None = None) -> list[str]:
    """The names of attribute ids ``ids`` (by default every attribute, in id order) of the state
    (or, ``transition``, the transition-conditioned) group, as `FeatureIndex.attribute_name` writes
    them; the keys of a template are decoded together (one name a microsecond or so)."""
    if isinstance(features, AttributeIndex):
        if transition:  # an attribute vocabulary has no transition-conditioned attributes
            if ids is not None and len(ids):
                raise IndexError("an attribute index has no transition attributes")
            return []
        names = features.names
        return list(names) if ids is None else [names[int(a)] for a in np.asarray(ids).tolist()]
    group = [i for i, t in enumerate(features.templates) if t.transition == transition]
    offsets = features.offsets(transition)
    total = int(offsets[-1])
    want = np.arange(total, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64).ravel()
    if len(want) and (int(want.min()) < 0 or int(want.max()) >= total):
        raise IndexError(f"attribute ids must lie in [0, {total})")
    out: list[str] = [""] * len(want)
    column = np.searchsorted(offsets, want, side="right") - 1
    for col, ti in enumerate(group):
        where = np.flatnonzero(column == col)
        if not len(where):
            continue
        t = features.templates[ti]
        if t.is_bias:
            for i in where.tolist():
                out[i] = "bias"
            continue
        keys = features.keys[ti][want[where] - offsets[col]]
        parts = []
        for part, codes in zip(t.parts, digits(keys, features.radix[ti])):
            table = ["no", "yes", "none"] if part.other is not None \
                else features.vocabs[features.atom_position(part.atom)]
            parts.append(np.asarray(table, dtype=object)[codes].tolist())
        prefix = f"{t.name}="
        for i, values in zip(where.tolist(), zip(*parts)):
            out[i] = prefix + "|".join(values)
    return out


# ----------------------------------------------------------------------------------------- mappings
class FeatureWeights(Mapping):
    """A read-only mapping built on first use from a model's arrays (``len`` is known before).

    `state_features` and `transition_features` return one; keep it in a variable to look up many
    keys (each call of those functions builds its own)."""

    def __init__(self, build: Callable[[], dict], size: int):
        self._build: Callable[[], dict] | None = build
        self._size = int(size)
        self._data: dict | None = None

    def _dict(self) -> dict:
        if self._data is None:
            assert self._build is not None
            self._data, self._build = self._build(), None
        return self._data

    def __getitem__(self, key: Any) -> float:
        return self._dict()[key]

    def __iter__(self) -> Iterator:
        return iter(self._dict())

    def __len__(self) -> int:
        return self._size if self._data is None else len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._dict()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} weights)"


def state_features(model: Model) -> FeatureWeights:
    """``{(attribute name, label): weight}`` of every non-zero state weight (labels: ``model.labels``)."""
    sw = model.weights.sparse
    nonzero = np.flatnonzero(sw.values != 0)

    def build() -> dict[tuple[str, str], float]:
        rows = np.searchsorted(sw.ptr, nonzero, side="right") - 1
        names = attribute_names(model.features, False, np.unique(rows))
        by_row = dict(zip(np.unique(rows).tolist(), names))
        labels = model.labels
        return {(by_row[a], labels[b]): v for a, b, v in
                zip(rows.tolist(), sw.labels[nonzero].tolist(), sw.values[nonzero].astype(np.float64).tolist())}
    return FeatureWeights(build, len(nonzero))


def transition_features(model: Model) -> FeatureWeights:
    """``{(label_from, label_to): weight}`` of every transition weight, the sentence start (`BOS`) among
    the from-labels: the (L + 1) × L matrix ``model.weights.trans``, zeros and the transitions the scheme
    forbids included (their learnt weight; the decoder never takes them)."""
    labels = model.labels
    trans = model.weights.trans

    def build() -> dict[tuple[str, str], float]:
        rows = trans.astype(np.float64).tolist()
        return {(a, b): rows[i][j] for i, a in enumerate([*labels, BOS]) for j, b in enumerate(labels)}
    return FeatureWeights(build, (len(labels) + 1) * len(labels))


# ------------------------------------------------------------------------------------------- report
def select_labels(labels: list[str], wanted: list[str] | tuple[str, ...] | None) -> list[int]:
    """The ids of the labels ``wanted`` names: a label exactly, or a span type (``LOC``: every label of
    that type, B-LOC, I-LOC, E-LOC, S-LOC …); all labels when ``wanted`` is empty. `InputError` for a
    name that is neither."""
    if not wanted:
        return list(range(len(labels)))
    out: list[int] = []
    for name in wanted:
        found = [i for i, lab in enumerate(labels) if lab == name] or \
            [i for i, lab in enumerate(labels) if len(lab) > 2 and lab[1] in "-_" and lab[2:] == name]
        if not found:
            shown = ", ".join(labels[:20]) + (", …" if len(labels) > 20 else "")
            raise InputError(f"--label {name!r} is none of this model's labels ({shown}) nor a type of them")
        out += [i for i in found if i not in out]
    return sorted(out)


def _number(x: float) -> float | None:
    """A weight for JSON: None for an infinity (a forbidden transition's score)."""
    return float(x) if math.isfinite(x) else None


def _extremes(values: np.ndarray, top: int) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the ``top`` largest positive and the ``top`` most negative of ``values``,
    strongest first (ties: lower position first)."""
    out = []
    for sign in (1.0, -1.0):
        signed = values.astype(np.float64) * sign
        candidates = np.flatnonzero(signed > 0)
        if len(candidates) > top:
            keep = np.argpartition(-signed[candidates], top - 1)[:top] if top else np.zeros(0, np.int64)
            candidates = np.sort(candidates[keep])
        order = np.lexsort((candidates, -signed[candidates]))
        out.append(candidates[order])
    return out[0], out[1]


def _state_tables(model: Model, label_ids: list[int], top: int) -> list[dict]:
    sw = model.weights.sparse
    tables = []
    for lab in label_ids:
        slots = np.flatnonzero(sw.labels == lab)
        values = sw.values[slots]
        pos, neg = _extremes(values, top)
        picked = slots[np.concatenate([pos, neg])]
        rows = np.searchsorted(sw.ptr, picked, side="right") - 1
        names = attribute_names(model.features, False, rows)
        weights = sw.values[picked].astype(np.float64).tolist()
        entries = [{"feature": n, "weight": w} for n, w in zip(names, weights)]
        tables.append({"label": model.labels[lab], "nonzero": int(np.count_nonzero(values)),
                       "largest": entries[:len(pos)], "most_negative": entries[len(pos):]})
    return tables


def _conditioned(model: Model, top: int) -> dict:
    """The transition-conditioned weights in summary: per template its attributes and non-zero
    weights, and the ``top`` weights of the largest magnitude over all (attribute, from, to)."""
    cond = model.weights.cond[:-1]
    fi = model.features
    labels = [*model.labels, BOS]
    templates = []
    if isinstance(fi, FeatureIndex):
        offsets = fi.offsets(True)
        for col, t in enumerate(fi.transition_templates):
            block = cond[int(offsets[col]):int(offsets[col + 1])]
            templates.append({"template": t.name, "attributes": int(len(block)),
                              "nonzero": int(np.count_nonzero(block)),
                              "max_abs": float(np.abs(block).max()) if block.size else 0.0})
    flat = cond.reshape(-1)
    strongest: list[dict] = []
    if flat.size and top:
        nz = np.flatnonzero(flat)
        if len(nz):
            mags = np.abs(flat[nz]).astype(np.float64)
            keep = nz if len(nz) <= top else nz[np.argpartition(-mags, top - 1)[:top]]
            keep = keep[np.lexsort((keep, -np.abs(flat[keep]).astype(np.float64)))]
            a, p, y = np.unravel_index(keep, cond.shape)
            names = attribute_names(fi, True, a)
            strongest = [{"feature": n, "from": labels[int(i)], "to": labels[int(j)], "weight": float(flat[k])}
                         for n, i, j, k in zip(names, p.tolist(), y.tolist(), keep.tolist())]
    return {"attributes": int(cond.shape[0]), "nonzero": int(np.count_nonzero(cond)),
            "templates": templates, "strongest": strongest}


def _second_order(model: Model, top: int) -> dict | None:
    T2 = model.weights.order2
    if T2 is None:
        return None
    labels = [*model.labels, BOS]
    flat = np.asarray(T2, dtype=np.float64).reshape(-1)
    nz = np.flatnonzero(flat)
    keep = nz if len(nz) <= top else nz[np.argpartition(-np.abs(flat[nz]), top - 1)[:top]] if top else nz[:0]
    keep = keep[np.lexsort((keep, -np.abs(flat[keep])))]
    q, p, y = np.unravel_index(keep, np.shape(T2))
    return {"nonzero": int(len(nz)),
            "strongest": [{"labels": [labels[int(a)], labels[int(b)], labels[int(c)]], "weight": float(flat[k])}
                          for a, b, c, k in zip(q.tolist(), p.tolist(), y.tolist(), keep.tolist())]}


def weights_report(model: Model | str | os.PathLike, *, top: int = DEFAULT_TOP,
                   labels: list[str] | tuple[str, ...] | None = None) -> dict:
    """What the model's weights say, by name (``structperc info --weights``).

    ``model``: a `Model` or a model path (or a shipped model's name). ``top``: rows per label and per
    summary. ``labels``: only these labels (or span types) in the state tables and the transition
    matrix (`select_labels`).

    Keys: ``model`` (the path, or None), ``task``, ``scheme`` (the labels' scheme, the model's),
    ``labels`` (all), ``top``, ``state`` (per label shown: ``label``, ``nonzero``, ``largest`` and
    ``most_negative``, each a list of ``{feature, weight}`` strongest first), ``transitions``
    (``from``: the labels shown and `BOS` last, ``to``: the labels shown, ``weights``: the matrix of
    learnt weights, ``forbidden``: [from, to] pairs the scheme forbids), ``end`` ({label: the score of
    ending a sentence there, null where forbidden}), ``conditioned`` (``attributes``, ``nonzero``,
    ``templates``: per template its attributes, non-zero weights and largest magnitude,
    ``strongest``: the ``top`` weights of the largest magnitude, each ``{feature, from, to, weight}``)
    and ``second_order`` (null for a first-order model, else ``nonzero`` and ``strongest``: each
    ``{labels: [y_{t-2}, y_{t-1}, y_t], weight}``). A two-stage model reports its second stage.
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise InputError(f"top must be a whole number >= 0, not {top!r}")
    path = None if isinstance(model, Model) else str(model)
    m = model if isinstance(model, Model) else read(model)
    ids = select_labels(m.labels, labels)
    w = m.weights
    names = [m.labels[i] for i in ids]
    rows = [*ids, len(m.labels)]
    trans = np.asarray(w.trans, dtype=np.float64)[np.ix_(rows, ids)]
    mask = np.asarray(w.mask, dtype=np.float64)[np.ix_(rows, ids)]
    row_names = [*names, BOS]
    return {
        "model": path,
        "task": m.task.name,
        "scheme": m.task.model_scheme,
        "labels": list(m.labels),
        "top": top,
        "state": _state_tables(m, ids, top),
        "transitions": {
            "from": row_names, "to": names, "weights": trans.tolist(),
            "forbidden": [[row_names[i], names[j]] for i, j in zip(*np.nonzero(np.isneginf(mask)))],
        },
        "end": {m.labels[i]: _number(float(w.end[i])) for i in ids},
        "conditioned": _conditioned(m, top),
        "second_order": _second_order(m, top),
    }


# --------------------------------------------------------------------------------------------- text
def _w(x: float) -> str:
    return f"{x:+.4f}"


def _table(rows: list[list[str]], right: frozenset[int] | set[int] = frozenset()) -> list[str]:
    """Rows of cells in aligned columns (those in ``right`` right-aligned), two spaces apart."""
    if not rows:
        return []
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return ["  ".join(cell.rjust(widths[c]) if c in right else cell.ljust(widths[c])
                      for c, cell in enumerate(r)).rstrip() for r in rows]


def format_weights(d: dict) -> str:
    """`weights_report`'s dict for a terminal: the state features per label (largest weights, then the
    most negative), the transition matrix with its `BOS` row, the end scores, the conditioned
    transitions and second-order weights in summary."""
    lines = [f"model {d['model'] or '(in memory)'}: task {d['task']}, {len(d['labels'])} labels "
             f"(scheme {d['scheme']})", ""]
    lines.append(f"state features: the {d['top']} largest and {d['top']} most negative weights per label")
    rows = [["label", "nonzero", "weight", "feature"]]
    for s in d["state"]:
        first = [s["label"], f"{s['nonzero']:,}"]
        entries = s["largest"] + s["most_negative"]
        if not entries:
            rows.append(first + ["", "" if s["nonzero"] else "(no non-zero weight)"])
        for k, e in enumerate(entries):
            rows.append((first if k == 0 else ["", ""]) + [_w(e["weight"]), e["feature"]])
    lines += _table(rows, right={1, 2})
    t = d["transitions"]
    lines += ["", f"transitions: the weight from the row's label to the column's ({BOS}: the sentence start; "
                  "end: ending a sentence with the column's label"
                  + ("; x: forbidden by the scheme" if t["forbidden"] or None in d["end"].values() else "") + ")"]
    forbidden = {tuple(p) for p in t["forbidden"]}
    matrix = [["from \\ to", *t["to"]]]
    for name, row in zip(t["from"], t["weights"]):
        matrix.append([name, *("x" if (name, to) in forbidden else _w(v) for to, v in zip(t["to"], row))])
    matrix.append(["end", *("x" if d["end"].get(to) is None else _w(d["end"][to]) for to in t["to"])])
    lines += _table(matrix, right=set(range(1, len(t["to"]) + 1)))
    c = d["conditioned"]
    lines += ["", f"conditioned transitions: {c['attributes']:,} attributes, {c['nonzero']:,} non-zero weights"]
    if c["templates"]:
        lines += _table([["template", "attributes", "nonzero", "max |weight|"]]
                        + [[x["template"], f"{x['attributes']:,}", f"{x['nonzero']:,}", f"{x['max_abs']:.4f}"]
                           for x in c["templates"]], right={1, 2, 3})
    if c["strongest"]:
        lines.append(f"the {len(c['strongest'])} strongest:")
        lines += _table([["weight", "from", "to", "feature"]]
                        + [[_w(x["weight"]), x["from"], x["to"], x["feature"]] for x in c["strongest"]],
                        right={0})
    s2 = d["second_order"]
    if s2 is not None:
        lines += ["", f"second-order transitions: {s2['nonzero']:,} non-zero weights"]
        lines += _table([["weight", "y[-2]", "y[-1]", "y[0]"]]
                        + [[_w(x["weight"]), *x["labels"]] for x in s2["strongest"]], right={0})
    return "\n".join(lines)
