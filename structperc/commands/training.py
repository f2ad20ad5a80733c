"""What ``structperc train`` does, as one library call (`train`), and its Dask form (`fit_on_workers`):
which estimator a task needs, how --dev and --init-model are read, and that the outputs are writable
before any work starts."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from structperc.commands.models import load, remove_empty, writable_outputs
from structperc.errors import InputError
from structperc.model.archive import writing_lock
from structperc.segmenter import Segmenter
from structperc.tagger import Callback, Tagger
from structperc.train.config import validate

Progress = Callable[[int, int], None]


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
    validate({**{k: v for k, v in params.items() if v is not None}, "task": task, "dev": dev_path is not None,
              "init_model": init_model, "lexicon": lexicon, "checkpoint_dir": checkpoint_dir, "resume": resume,
              "keep_checkpoint": keep_checkpoint, "workers": workers, "mixing": mixing, "clusters": clusters,
              "dask": dask, "read_on_workers": read_on_workers, "add_labels": add_labels,
              "cws_command": task == "cws" and not init_model})
    if plot:
        from structperc.train.plot import check_plot_path

        check_plot_path(plot)  # fail before training, not after
    created = writable_outputs(model_path, checkpoint_dir, plot)
    try:
        with writing_lock(model_path):
            if read_on_workers:
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
            remove_empty(directory)
        raise
    if plot:
        from structperc.train.plot import plot_history

        # with --dev-split the curve worth seeing is the held-out one that picked the epochs
        plot_history(getattr(model, "dev_history_", None) or model.history_, plot,
                     title=f"{Path(train_path).name}: {model.task_.name}")
    if checkpoint_dir and not keep_checkpoint:
        from structperc.train.checkpoint import remove_checkpoint

        remove_checkpoint(checkpoint_dir)
        for directory in reversed(created):  # the checkpoint folder too, if this run made it
            remove_empty(directory)
    return model, path


def fit_on_workers(tagger: Tagger, paths: list[str | os.PathLike], *, dask: Any, workers: int,
                   dev: Any = None, mixing: str | None = None, callback: Callback | None = None,
                   progress: Any = None, checkpoint_dir: str | os.PathLike | None = None,
                   resume: str | os.PathLike | None = None) -> Tagger:
    """Fit ``tagger`` (its parameters as set) on ``paths``, read by the workers of the Dask cluster
    ``dask`` (an address, ``local:N`` or a `distributed.Client`): ``workers`` byte ranges of one file,
    or one part per file of several, each the shard of iterative parameter mixing that its worker read
    and featurized (`structperc.dask.parts`). ``dev`` (a path) is read here and picks the best
    epoch. The files must be readable at the same path on every worker. Returns ``tagger``, fitted."""
    from structperc.features.instances import columns_to_read
    from structperc.features.templates import resolve_template
    from structperc.io.inputs import to_corpus
    from structperc.train import config as parameters
    from structperc.train import run as fitting

    task = parameters.task_for(settings := tagger.get_params())
    run = dict(dev=dev is not None, dask=dask, workers=workers, mixing=mixing, checkpoint_dir=checkpoint_dir,
               resume=resume, read_on_workers=True)
    parameters.check(settings, task, data=paths[0] if len(paths) == 1 else None, **run)
    lines = resolve_template(tagger.template if tagger.template is not None else task.template)
    parameters.validate({**settings, **run}, task=task, lines=lines)
    dev_corpus = to_corpus(dev, None, task, need_tags=True, reads=columns_to_read(task, lines, gold=True),
                           unknown=tagger.unknown_tag) if dev is not None else None
    from structperc.dask.parts import train_on_workers

    result = train_on_workers([str(p) for p in paths], dev_corpus, lines, task.epochs, task=task,
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
    if init_model:
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

    data, dev = (load_dataset(train_path), load_dataset(dev_path) if dev_path else None) \
        if is_dataset_spec(train_path) else (train_path, dev_path)
    if given.get("seeds") is not None:  # seed averaging: its first seed stands for --seed (0 unless refused)
        from structperc.ensemble import train_seed_average

        given.pop("seed", None)
        return train_seed_average(data, task=task or "chunk", fit_params=dict(
            callback=callback, progress=progress, tokens=tokens_column, tags=tags_column, clusters=clusters), **given)
    model = Tagger(task=task or "chunk", **given)
    return model.fit(data, dev=dev, callback=callback, progress=progress, checkpoint_dir=checkpoint_dir,
                     resume=resume, tokens=tokens_column, tags=tags_column, workers=workers, mixing=mixing,
                     clusters=clusters, dask=dask)
