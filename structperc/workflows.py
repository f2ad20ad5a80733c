"""One library call per command: what ``structperc train/eval/info/compress`` do (``tag`` and
``segment``: `structperc.streaming`), for the
command line and any other face (an HTTP service, a notebook) to call the same way.

The faces parse their own options and print; everything else — which estimator a task needs, which
columns a model reads, how a model is loaded once — is decided here or below.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Callable

from structperc.errors import InputError
from structperc.model import schema
from structperc.model.archive import writing_lock
from structperc.segmenter import Segmenter
from structperc.tagger import Callback, Tagger

Progress = Callable[[int, int], None]


def load(path: str | os.PathLike) -> Tagger:
    """The model at ``path`` as the estimator its task needs: a `Segmenter` for word segmentation,
    else a `Tagger` (read once)."""
    model = schema.read(path)
    if model.task.name == "cws":
        return Segmenter.from_model(model, str(path))
    return Tagger.from_model(model)


def load_tagger(path: str | os.PathLike) -> Tagger:
    """`load`, refusing a word segmentation model (the faces that tag columns take a tagger)."""
    tagger = load(path)
    if isinstance(tagger, Segmenter):
        raise InputError("a word segmentation model: use 'structperc segment'", str(path))
    return tagger


def train(train_path: str, model_path: str | os.PathLike, *, task: str | None = None,
          dev_path: str | None = None, init_model: str | None = None, lexicon: str | None = None,
          tokens_column: str = "tokens", tags_column: str | None = None,
          callback: Callback | None = None, progress: Progress | None = None,
          checkpoint_dir: str | None = None, resume: str | None = None, plot: str | None = None,
          keep_checkpoint: bool = False,
          workers: int = 1, mixing: str | None = None, clusters: str | None = None, dask: str | None = None,
          read_on_workers: bool = False, add_labels: bool = False, **params: Any) -> tuple[Tagger, Path]:
    """Train a tagger (a `Segmenter` for ``task="cws"``; continued training from ``init_model``, where
    tags the model does not know are refused unless ``add_labels``: `Tagger.partial_fit`), save it to
    ``model_path`` and return it with the archive's path.

    ``task`` defaults to ``"chunk"`` (or, with ``init_model``, to the model's own task: another task
    is refused). ``params`` are the estimator's parameters (``template``, ``epochs``, ``seed`` …;
    None keeps the default). ``train_path`` may be a corpus file or a `datasets` spec (see
    `structperc.io.hf`). Every output path (model, checkpoints, ``plot``) is checked before the first
    epoch, and the model is locked against a second run writing it at the same time; a failed run
    leaves what was there before. The checkpoint in ``checkpoint_dir`` (the latest epoch's, see
    `structperc.train.checkpoint`) is removed once the model is saved, unless ``keep_checkpoint``.

    ``workers`` > 1 trains on that many shards at once, one process each, by iterative parameter
    mixing (``mixing``: see `structperc.train.mixing`): a different model from one worker's, the
    same bytes again for the same seed and workers. ``clusters``: a word clusters file for templates
    reading ``clu*`` columns (`structperc.features.clusters`; saved in the model). ``dask`` (a scheduler
    address or ``local:N``) runs the ``workers`` shards' epochs on that Dask cluster: the same model;
    with ``read_on_workers`` the cluster's workers also read and featurize the training file themselves,
    ``workers`` byte ranges of it (`fit_on_workers`).
    """
    if lexicon and task != "cws":
        raise InputError("--lexicon is for --task cws")
    if keep_checkpoint and not checkpoint_dir:
        raise InputError("--keep-checkpoint keeps the checkpoint of --checkpoint-dir: give --checkpoint-dir")
    if add_labels and not init_model:
        raise InputError("--add-labels is for continued training (--init-model): a new model learns every "
                         "tag of its data")
    if plot:
        from structperc.plot import require_matplotlib

        require_matplotlib()  # fail before training, not after
    created = writable_outputs(model_path, checkpoint_dir, plot)
    try:
        with writing_lock(model_path):
            if read_on_workers:
                if dask is None or workers < 2 or init_model or task == "cws" or lexicon or clusters:
                    raise InputError("--read-on-workers trains a new tagger on a Dask cluster: give --dask and "
                                     "--workers N (N > 1), and no --init-model, --task cws, --lexicon or --clusters")
                given = {k: v for k, v in params.items() if v is not None}
                model = fit_on_workers(Tagger(task=task or "chunk", **given), [train_path], dask=dask,
                                       workers=workers, dev=dev_path, mixing=mixing, callback=callback,
                                       progress=progress, checkpoint_dir=checkpoint_dir, resume=resume)
            else:
                model = _fit(train_path, task, dev_path, init_model, lexicon, tokens_column, tags_column,
                             callback, progress, checkpoint_dir, resume, params, workers, mixing, clusters, dask,
                             add_labels)
            path = model.save(model_path)
    except BaseException:
        for directory in reversed(created):  # only the folders this run made, and left empty
            _remove_empty(directory)
        raise
    if plot:
        from structperc.plot import plot_history

        # with --dev-split the curve worth seeing is the held-out one that picked the epochs
        plot_history(getattr(model, "dev_history_", None) or model.history_, plot,
                     title=f"{Path(train_path).name}: {model.task_.name}")
    if checkpoint_dir and not keep_checkpoint:
        from structperc.train.checkpoint import remove_checkpoint

        remove_checkpoint(checkpoint_dir)
        for directory in reversed(created):  # the checkpoint folder too, if this run made it
            _remove_empty(directory)
    return model, path


def fit_on_workers(tagger: Tagger, paths: list[str | os.PathLike], *, dask: Any, workers: int,
                   dev: Any = None, mixing: str | None = None, callback: Callback | None = None,
                   progress: Any = None, checkpoint_dir: str | os.PathLike | None = None,
                   resume: str | os.PathLike | None = None) -> Tagger:
    """Fit ``tagger`` (its parameters as set) on ``paths``, read by the workers of the Dask cluster
    ``dask`` (an address, ``local:N`` or a `distributed.Client`): ``workers`` byte ranges of one file,
    or one part per file of several, each the shard of iterative parameter mixing that its worker read
    and featurized (`structperc.parallel.dask_parts`). ``dev`` (a path) is read here and picks the best
    epoch. The files must be readable at the same path on every worker. Returns ``tagger``, fitted."""
    from structperc import fitting
    from structperc import params as parameters
    from structperc.features.templates import resolve_template
    from structperc.inputs import to_corpus
    from structperc.pipeline import columns_to_read

    task = parameters.task_for(settings := tagger.get_params())
    parameters.check(settings, task, dev=dev is not None, data=paths[0] if len(paths) == 1 else None)
    lines = resolve_template(tagger.template if tagger.template is not None else task.template)
    dev_corpus = to_corpus(dev, None, task, need_tags=True, reads=columns_to_read(task, lines, gold=True),
                           unknown=tagger.unknown_tag) if dev is not None else None
    result = fitting.train_on_workers([str(p) for p in paths], dev_corpus, lines, task.epochs, task=task,
                                      params=tagger._saved_params(), dask=dask, workers=workers, mixing=mixing,
                                      callback=callback, progress=progress, checkpoint_dir=checkpoint_dir,
                                      resume=resume)
    tagger._keep(result)
    tagger.provenance_["sources"] = [{"name": os.path.basename(str(p)), "sha256": fitting.file_sha256(p)}
                                     for p in paths]
    return tagger


def _fit(train_path: str, task: str | None, dev_path: str | None, init_model: str | None,
         lexicon: str | None, tokens_column: str, tags_column: str | None, callback: Callback | None,
         progress: Progress | None, checkpoint_dir: str | None, resume: str | None,
         params: dict[str, Any], workers: int = 1, mixing: str | None = None,
         clusters: str | None = None, dask: str | None = None, add_labels: bool = False) -> Tagger:
    given = {k: v for k, v in params.items() if v is not None}
    model: Tagger
    if clusters is not None and (init_model or task == "cws"):
        raise InputError("--clusters is for training a new tagger (not --init-model, not --task cws)")
    if init_model:
        if workers != 1 or dask is not None:
            raise InputError("continued training (--init-model) runs on one worker: leave out --workers/--dask",
                             str(init_model))
        model = load(init_model)
        if task is not None and task != model.task_.name:
            raise InputError(f"a {model.task_.name!r} model cannot continue training as {task!r} "
                             "(leave out --task, or train a new model)", str(init_model))
        if isinstance(model, Segmenter):
            raise InputError("continued training of a word segmentation model is not supported",
                             str(init_model))
        return model.partial_fit(train_path, epochs=given.get("epochs"), dev=dev_path,
                                 callback=callback, progress=progress, add_labels=add_labels)
    if task == "cws":
        names = set(Segmenter._param_names())
        model = Segmenter(lexicon=lexicon, **{k: v for k, v in given.items() if k in names})
        model.template = given.get("template") or "cws"
        return model.fit(train_path, dev=dev_path, callback=callback, progress=progress,
                         checkpoint_dir=checkpoint_dir, resume=resume, workers=workers, mixing=mixing, dask=dask)
    from structperc.io.hf import is_dataset_spec
    from structperc.io.hf import load as load_dataset

    model = Tagger(task=task or "chunk", **given)
    data, dev = (load_dataset(train_path), load_dataset(dev_path) if dev_path else None) \
        if is_dataset_spec(train_path) else (train_path, dev_path)
    return model.fit(data, dev=dev, callback=callback, progress=progress, checkpoint_dir=checkpoint_dir,
                     resume=resume, tokens=tokens_column, tags=tags_column, workers=workers, mixing=mixing,
                     clusters=clusters, dask=dask)


def writable_outputs(model_path: str | os.PathLike, checkpoint_dir: str | os.PathLike | None = None,
                     plot: str | os.PathLike | None = None) -> list[Path]:
    """Check, before any training, that the model, the checkpoints and the plot can be written (by
    writing a probe file), so that a run does not fail after its last epoch. Returns the folders it
    had to create (a failed run removes them again)."""
    target = Path(model_path)
    if target.exists() and not target.is_dir() and target.suffix != ".zip":
        raise InputError("exists and is not a model directory", str(model_path))
    created: list[Path] = []
    folders = [target.parent if target.suffix == ".zip" else target]
    folders += [Path(checkpoint_dir)] if checkpoint_dir else []
    folders += [Path(plot).parent] if plot else []
    for folder in folders:
        missing = [p for p in [folder, *folder.parents] if not p.exists()]
        try:
            folder.mkdir(parents=True, exist_ok=True)
            created += [p for p in reversed(missing) if p.is_dir()]
            with tempfile.TemporaryFile(dir=folder):
                pass
        except OSError as exc:
            for directory in reversed(created):
                _remove_empty(directory)
            raise InputError(f"cannot write there ({exc.strerror or exc})", str(folder)) from None
    if plot and Path(plot).exists() and not os.access(plot, os.W_OK):
        raise InputError("cannot write the plot there (read-only file)", str(plot))
    return created


def _remove_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass


def evaluate(model_path: str | os.PathLike, path: str, *, task: str | None = None,
             strict: bool = False) -> dict:
    """The report of the model at ``model_path`` on gold data ``path`` (its task's metric); ``task``
    optionally checks which task the model was trained for."""
    model = load(model_path)
    if task is not None and task != model.task_.name:
        raise InputError(f"a {model.task_.name!r} model, not {task!r}", str(model_path))
    return model.evaluate(path, strict=strict)  # a segmenter refuses CoNLL columns (`refuse_columns`)


def calibrate(model_path: str | os.PathLike, path: str, *, out_path: str | os.PathLike | None = None,
              plot: str | os.PathLike | None = None) -> dict:
    """Refit the temperature of the model at ``model_path`` on gold data ``path`` (held out from its
    training) and save the model again (to ``out_path``, by default in place, atomically). With
    ``plot``, a reliability diagram before and after. Returns the calibration record."""
    from structperc import inference

    if plot:
        from structperc.plot import require_matplotlib

        require_matplotlib()
    target = out_path or model_path
    writable_outputs(target, plot=plot)
    with writing_lock(target):
        model = load(model_path)
        if isinstance(model, Segmenter):
            raise InputError("'calibrate' takes tagging models; a segmenter's temperature is fitted "
                             "when it is trained with --dev or --dev-split", str(model_path))
        corpus = model.gold_corpus(path)
        record = model.calibrate(corpus)
        model.save(target)
    if plot:  # the diagram's points: the confidences at τ = 1 and at the fitted τ
        from structperc.plot import plot_reliability

        before = inference.calibration_report(model.model_, corpus, temperature=1.0)
        after = inference.calibration_report(model.model_, corpus)
        plot_reliability({"before (τ = 1)": before, f"after (τ = {record['temperature']:.3g})": after}, plot,
                         title=f"{Path(path).name}: {model.task_.name}")
    return record


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
