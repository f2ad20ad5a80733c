"""What is in a model file: task, labels, templates, sizes and provenance (``structperc info``).

`model_info` reads the model through `structperc.model.schema` (never unpickling anything) and
returns a JSON-serializable dict; `format_info` turns it into a short human-readable summary.
"""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from structperc.features.lexicon import segmentation_dictionary
from structperc.model.archive import FORMAT_NAME, archive_path
from structperc.model.schema import file_size, read
from structperc.model.shipped import resolve

__all__ = ["model_info", "format_info"]


def model_info(path: str | os.PathLike) -> dict:
    """A summary of the model at ``path`` (a model directory or its ``model.zip``).

    Keys: ``path``, ``archive``, ``file_size`` (bytes), ``format``, ``format_version``, ``task``,
    ``labels``, ``n_labels``, ``columns``, ``tag_column``, ``scheme``, ``encoding``, ``constrained``,
    ``metric``, ``order`` (1, or 2 with second-order transitions), ``templates``, ``n_templates``,
    ``attributes`` (``state``, ``transition``, ``total``),
    ``nonzero_weights``, ``vocabulary`` (entries per atom), ``params``, ``structperc_version`` (that
    trained it), ``date``, ``epochs``, ``best_epoch``, ``seed``, ``dev_score``, ``n_sentences``,
    ``n_tokens``, ``stage1`` (a two-stage model's first stage: templates, epochs, attributes), ``voters`` (a
    voting model's other members: encoding, epochs, attributes),
    ``training_files`` (name and sha256 of each), ``resources`` (the language resources the model
    carries, each's name, package, version, file and licence: ``--lang``), ``compression`` (None if never
    compressed), ``calibration`` (the temperature's record or None), ``tag_dictionary`` (words, or
    None), ``provenance`` (verbatim) and, for segmenters, ``cws`` (dictionary sizes).

    Raises `ModelFormatError` if there is no model at ``path`` or it is damaged.
    """
    model = read(path)
    labels = list(model.labels)
    fi = model.features
    prov = model.provenance
    sources = prov.get("sources") or []
    info: dict[str, Any] = {
        "path": str(path),
        "archive": str(archive_path(resolve(path))),
        "file_size": file_size(path),
        "format": FORMAT_NAME,
        "format_version": model.format_version,
        "task": model.task.name,
        "labels": labels,
        "n_labels": len(labels),
        "columns": list(model.task.columns),
        "tag_column": model.task.tag_column,
        "scheme": model.task.scheme,
        "encoding": model.task.model_scheme,
        "constrained": model.task.constrained,
        "metric": model.task.metric,
        "order": model.weights.order,
        "templates": list(model.templates),
        "n_templates": len(model.templates),
        "attributes": {"state": fi.n_state_attributes, "transition": fi.n_transition_attributes,
                       "total": fi.n_state_attributes + fi.n_transition_attributes},
        "nonzero_weights": model.weights.sparse.nonzero().nnz
        + int(np.count_nonzero(model.weights.cond[:-1])),
        "vocabulary": {(f"{a.func}({a.column})" if a.func else a.column): len(v)
                       for a, v in zip(fi.atoms, fi.vocabs)},
        "params": model.params,
        "structperc_version": prov.get("structperc_version"),
        "date": prov.get("date"),
        "epochs": prov.get("epochs"),
        "best_epoch": prov.get("best_epoch"),
        "seed": prov.get("seed"),
        "seeds": prov.get("seeds"),
        "dev_score": prov.get("dev_score"),
        "n_sentences": prov.get("n_sentences"),
        "n_tokens": prov.get("n_tokens"),
        "training_files": [{"name": s.get("name"), "sha256": s.get("sha256")} for s in sources
                           if isinstance(s, dict)],
        "compression": prov.get("compressed"),
        "calibration": model.calibration,
        "tag_dictionary": None if model.tag_dictionary is None else len(model.tag_dictionary),
        "resources": [dict(r) for r in prov.get("resources") or [] if isinstance(r, dict)],
        "provenance": prov,
    }
    if model.stage1 is not None:  # two-stage: the first stage's size
        s1 = model.stage1.features
        info["stage1"] = {"templates": len(model.stage1.templates), "epochs": model.stage1.provenance.get("epochs"),
                          "attributes": s1.n_state_attributes + s1.n_transition_attributes}
    if model.voters:  # a vote: its other members' encodings and sizes
        info["voters"] = [{"encoding": v.task.model_scheme, "epochs": v.provenance.get("epochs"),
                           "attributes": v.features.n_state_attributes + v.features.n_transition_attributes}
                          for v in model.voters]
    lexicon = segmentation_dictionary(model.dictionary)
    if lexicon is not None:  # alone, or beside the accessor variety
        info["cws"] = {"train_words": len(lexicon.train_words), "lexicon": len(lexicon.lexicon)}
    return info


def _size(n: int) -> str:
    """Decimal units, as `structperc compress` prints them."""
    if n < 1000:
        return f"{n:,} bytes"
    for unit, scale in (("kB", 1e3), ("MB", 1e6), ("GB", 1e9)):
        if n < scale * 1000 or unit == "GB":
            return f"{n / scale:.2f} {unit}"
    return str(n)  # pragma: no cover


def _n(x: Any) -> str:
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else str(x)


def _labels(labels: list[str], limit: int = 12) -> str:
    shown = ", ".join(labels[:limit])
    return shown + (f", … (+{len(labels) - limit})" if len(labels) > limit else "")


def format_info(d: dict) -> str:
    """A human-readable summary of `model_info`'s dict."""
    a = d["attributes"]
    lines = [
        f"model        {d['archive']} ({_size(d['file_size'])}, {d['format']} v{d['format_version']})",
        f"task         {d['task']} (metric {d['metric']}, scheme {d['scheme']}, trained in "
        f"{d['encoding']}{', constrained' if d['constrained'] else ''}"
        f"{', second-order transitions' if d.get('order') == 2 else ''})",
        f"columns      {' '.join(d['columns'])} (predicts {d['tag_column']})",
        f"labels       {d['n_labels']}: {_labels(d['labels'])}",
        f"templates    {d['n_templates']}: {_labels(d['templates'], 8)}",
        f"attributes   {a['state']:,} state + {a['transition']:,} transition-conditioned "
        f"({d['nonzero_weights']:,} nonzero weights)",
    ]
    if d.get("stage1"):
        s1 = d["stage1"]
        lines.append(f"two-stage    its first stage: {s1['templates']} templates, {s1['attributes']:,} attributes, "
                     f"{s1['epochs']} epochs")
    if d.get("voters"):
        lines.append(f"vote         {len(d['voters']) + 1} members' spans, more than half needed; the others learnt "
                     + ", ".join(f"{v['encoding']} ({v['attributes']:,} attributes, {v['epochs']} epochs)"
                                 for v in d["voters"]))
    if d.get("vocabulary"):
        lines.append("vocabulary   " + ", ".join(f"{k} {v:,}" for k, v in d["vocabulary"].items()))
    if d.get("cws"):
        lines.append(f"dictionary   {d['cws']['train_words']:,} training words, "
                     f"{d['cws']['lexicon']:,} lexicon entries")
    trained = f"trained      by structperc {d['structperc_version']} on {d['date']}"
    lines.append(trained)
    seeds = d.get("seeds")
    seed = f"the mean weights of seeds {', '.join(map(str, seeds))}" if isinstance(seeds, list) and len(seeds) > 1 \
        else f"seed {d['seed']}"
    lines.append(f"epochs       {d['epochs']} (best {d['best_epoch']}), {seed}"
                 + (f", dev score {d['dev_score']:.4f}" if isinstance(d.get("dev_score"), (int, float))
                    else ""))
    if d.get("n_sentences") is not None:
        lines.append(f"data         {_n(d['n_sentences'])} sentences, {_n(d.get('n_tokens'))} tokens")
    for f in d.get("training_files") or []:
        lines.append(f"source       {f['name']}" + (f" sha256 {f['sha256']}" if f.get("sha256") else ""))
    for r in d.get("resources") or []:
        lines.append(f"resource     {r.get('name')}: {r.get('package')} {r.get('version')}, {r.get('file')}; "
                     f"licence: {r.get('licence')}"
                     + (f", {r['words']:,} words" if isinstance(r.get("words"), int) else "")
                     + (f" of frequency >= {r['min_frequency']}" if "min_frequency" in r else ""))
    cal = d.get("calibration")
    lines.append(f"calibration  temperature {cal['temperature']:.4g} fitted on {cal.get('source')} "
                 f"(ECE {cal['ece'][0]:.4f} -> {cal['ece'][1]:.4f})" if cal else "calibration  none (temperature 1)")
    if d.get("tag_dictionary"):
        lines.append(f"tag dictionary {d['tag_dictionary']:,} words")
    c = d.get("compression")
    if isinstance(c, dict):
        how = f"keep {c.get('keep')}" if c.get("keep") is not None else f"threshold {c.get('threshold')}"
        lines.append(f"compressed   {how}: {_n(c.get('state_attributes_before'))} → "
                     f"{_n(c.get('state_attributes_after'))} state attributes, "
                     f"{_n(c.get('transition_attributes_before'))} → "
                     f"{_n(c.get('transition_attributes_after'))} transition-conditioned"
                     + (f" ({c['date']})" if c.get("date") else ""))
    else:
        lines.append("compressed   no")
    return "\n".join(lines)
