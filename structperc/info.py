"""What is in a model file: task, labels, templates, sizes and provenance (``structperc info``).

`model_info` reads the archive's metadata and array descriptions (never unpickling anything, see
`structperc.model_io`) and returns a JSON-serializable dict; `format_info` turns it into a short
human-readable summary.
"""
from __future__ import annotations

import os
from typing import Any

from structperc.errors import ModelFormatError
from structperc.model_io import archive_path, load_archive

__all__ = ["model_info", "format_info"]


def model_info(path: str | os.PathLike) -> dict:
    """A summary of the model at ``path`` (a model directory or its ``model.zip``).

    Keys: ``path``, ``archive``, ``file_size`` (bytes), ``format``, ``format_version``, ``task``,
    ``labels``, ``n_labels``, ``columns``, ``tag_column``, ``scheme``, ``encoding``, ``constrained``,
    ``metric``, ``templates``, ``n_templates``, ``attributes`` (``state``, ``transition``, ``total``),
    ``nonzero_weights``, ``vocabulary`` (entries per atom), ``params``, ``structperc_version`` (that
    trained it), ``date``, ``epochs``, ``best_epoch``, ``seed``, ``dev_score``, ``n_sentences``,
    ``n_tokens``, ``training_files`` (name and sha256 of each), ``compression`` (None if never
    compressed), ``provenance`` (verbatim) and, for segmenters, ``cws`` (dictionary sizes).

    Raises `ModelFormatError` if there is no model at ``path`` or it is damaged.
    """
    meta, arrays = load_archive(path)
    target = archive_path(path)
    try:
        labels = [str(x) for x in meta["labels"]]
        shapes = meta["shapes"]
        n_state = int(shapes["state"][0])
        n_trans = int(shapes["cond"][0])
        feats = meta["features"]
        atoms = feats.get("atoms", [])
        vocabs = feats.get("vocabs", [])
        vocabulary = {(f"{func}({col})" if func else str(col)): len(v) for (col, func), v in
                      zip(atoms, vocabs)}
        prov = meta.get("provenance") or {}
        if not isinstance(prov, dict):
            raise TypeError("provenance is not a mapping")
        sources = prov.get("sources") or []
        files = [{"name": s.get("name"), "sha256": s.get("sha256")} for s in sources
                 if isinstance(s, dict)]
        nonzero = sum(len(arrays[k]) for k in ("state_values", "cond_values") if k in arrays)
        info: dict[str, Any] = {
            "path": str(path),
            "archive": str(target),
            "file_size": target.stat().st_size,
            "format": meta.get("format"),
            "format_version": meta.get("format_version"),
            "task": meta["task"],
            "labels": labels,
            "n_labels": len(labels),
            "columns": list(meta["columns"]),
            "tag_column": meta.get("tag_column"),
            "scheme": meta.get("scheme"),
            "encoding": meta.get("encoding"),
            "constrained": meta.get("constrained"),
            "metric": meta.get("metric"),
            "templates": list(meta["templates"]),
            "n_templates": len(meta["templates"]),
            "attributes": {"state": n_state, "transition": n_trans, "total": n_state + n_trans},
            "nonzero_weights": int(nonzero),
            "vocabulary": vocabulary,
            "params": meta.get("params", {}),
            "structperc_version": prov.get("structperc_version"),
            "date": prov.get("date"),
            "epochs": prov.get("epochs"),
            "best_epoch": prov.get("best_epoch"),
            "seed": prov.get("seed"),
            "dev_score": prov.get("dev_score"),
            "n_sentences": prov.get("n_sentences"),
            "n_tokens": prov.get("n_tokens"),
            "training_files": files,
            "compression": prov.get("compressed"),
            "provenance": prov,
        }
        cws = (meta.get("extra") or {}).get("cws")
        if isinstance(cws, dict):
            info["cws"] = {"train_words": len(cws.get("train_words", [])),
                           "lexicon": len(cws.get("lexicon", []))}
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise ModelFormatError(f"{target}: damaged structperc model ({type(exc).__name__}: {exc})") \
            from None
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
        f"{d['encoding']}{', constrained' if d['constrained'] else ''})",
        f"columns      {' '.join(d['columns'])} (predicts {d['tag_column']})",
        f"labels       {d['n_labels']}: {_labels(d['labels'])}",
        f"templates    {d['n_templates']}: {_labels(d['templates'], 8)}",
        f"attributes   {a['state']:,} state + {a['transition']:,} transition-conditioned "
        f"({d['nonzero_weights']:,} nonzero weights)",
    ]
    if d.get("vocabulary"):
        lines.append("vocabulary   " + ", ".join(f"{k} {v:,}" for k, v in d["vocabulary"].items()))
    if d.get("cws"):
        lines.append(f"dictionary   {d['cws']['train_words']:,} training words, "
                     f"{d['cws']['lexicon']:,} lexicon entries")
    trained = f"trained      by structperc {d['structperc_version']} on {d['date']}"
    lines.append(trained)
    lines.append(f"epochs       {d['epochs']} (best {d['best_epoch']}), seed {d['seed']}"
                 + (f", dev score {d['dev_score']:.4f}" if isinstance(d.get("dev_score"), (int, float))
                    else ""))
    if d.get("n_sentences") is not None:
        lines.append(f"data         {_n(d['n_sentences'])} sentences, {_n(d.get('n_tokens'))} tokens")
    for f in d.get("training_files") or []:
        lines.append(f"source       {f['name']}" + (f" sha256 {f['sha256']}" if f.get("sha256") else ""))
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
