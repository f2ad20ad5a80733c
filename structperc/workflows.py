"""One library call per command: what ``structperc train/eval/info/compress`` do (``tag`` and
``segment``: `structperc.streaming`), for the
command line and any other face (an HTTP service, a notebook) to call the same way.

The faces parse their own options and print; everything else — which estimator a task needs, which
columns a model reads, how a model is loaded once — is decided here or below.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from structperc.errors import InputError
from structperc.model import schema
from structperc.segmenter import Segmenter
from structperc.tagger import Callback, Tagger


def load(path: str | os.PathLike) -> Tagger:
    """The model at ``path`` as the estimator its task needs: a `Segmenter` for word segmentation,
    else a `Tagger` (read once)."""
    model = schema.read(path)
    if model.task.name == "cws":
        return Segmenter.from_model(model, str(path))
    return Tagger.from_model(model)


def train(train_path: str, model_path: str | os.PathLike, *, task: str = "chunk",
          dev_path: str | None = None, init_model: str | None = None, lexicon: str | None = None,
          tokens_column: str = "tokens", tags_column: str | None = None,
          callback: Callback | None = None, checkpoint_dir: str | None = None,
          resume: str | None = None, plot: str | None = None, **params: Any) -> tuple[Tagger, Path]:
    """Train a tagger (a `Segmenter` for ``task="cws"``; continued training from ``init_model``),
    save it to ``model_path`` and return it with the archive's path.

    ``params`` are the estimator's parameters (``template``, ``epochs``, ``seed`` …; None keeps the
    default). ``train_path`` may be a corpus file or a `datasets` spec (see `structperc.io.hf`).
    ``plot`` writes the learning curve (needs matplotlib, checked before training).
    """
    target = Path(model_path)
    if target.exists() and not target.is_dir() and target.suffix != ".zip":
        raise InputError("exists and is not a model directory", str(model_path))
    if plot:
        from structperc.plot import require_matplotlib

        require_matplotlib()  # fail before training, not after
    if lexicon and task != "cws":
        raise InputError("--lexicon is for --task cws")
    given = {k: v for k, v in params.items() if v is not None}
    model: Tagger
    if task == "cws":
        names = set(Segmenter._param_names())
        model = Segmenter(lexicon=lexicon, **{k: v for k, v in given.items() if k in names})
        model.template = given.get("template") or "cws"
        model.fit(train_path, dev=dev_path, callback=callback, checkpoint_dir=checkpoint_dir,
                  resume=resume)
    elif init_model:
        model = Tagger.load(init_model)
        model.partial_fit(train_path, epochs=given.get("epochs"), dev=dev_path, callback=callback)
    else:
        from structperc.io.hf import is_dataset_spec, load as load_dataset

        model = Tagger(task=task, **given)
        data, dev = (load_dataset(train_path), load_dataset(dev_path) if dev_path else None) \
            if is_dataset_spec(train_path) else (train_path, dev_path)
        model.fit(data, dev=dev, callback=callback, checkpoint_dir=checkpoint_dir, resume=resume,
                  tokens=tokens_column, tags=tags_column)
    path = model.save(model_path)
    if plot:
        from structperc.plot import plot_history

        # with --dev-split the curve worth seeing is the held-out one that picked the epochs
        plot_history(getattr(model, "dev_history_", None) or model.history_, plot,
                     title=f"{Path(train_path).name}: {task}")
    return model, path


def evaluate(model_path: str | os.PathLike, path: str, *, task: str | None = None,
             strict: bool = False) -> dict:
    """The report of the model at ``model_path`` on gold data ``path`` (its task's metric); ``task``
    optionally checks which task the model was trained for."""
    model = load(model_path)
    if task is not None and task != model.task_.name:
        raise InputError(f"a {model.task_.name!r} model, not {task!r}", str(model_path))
    return model.evaluate(path, strict=strict)


def info(model_path: str | os.PathLike) -> dict:
    """What `structperc.model.info.model_info` says of the model."""
    from structperc.model.info import model_info

    return model_info(model_path)


def compress(model_path: str | os.PathLike, out_path: str | os.PathLike, *, keep: float | None = None,
             threshold: float | None = None) -> tuple[Path, dict, int, int]:
    """Compress the model at ``model_path`` into ``out_path`` (may be the same: saving is atomic).

    Returns the new archive's path, the compression record, and the file sizes before and after.
    """
    from structperc.model.compress import compress as compress_model

    model = schema.read(model_path)
    size_before = schema.file_size(model_path)
    small = compress_model(model, keep=keep, threshold=threshold)
    path = schema.write(out_path, small)
    return path, small.provenance["compressed"], size_before, path.stat().st_size
