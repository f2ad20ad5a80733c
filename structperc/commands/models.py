"""What ``structperc eval/calibrate/info/compress`` do, as library calls, and how a model directory is
loaded (`load`: a `Tagger` or a `Segmenter`, by the model's task)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from structperc.compiled.threads import threads as using_threads
from structperc.errors import InputError
from structperc.model import schema
from structperc.model.archive import check_target, writing_lock
from structperc.model.shipped import is_shipped
from structperc.segmenter import Segmenter
from structperc.tagger import Tagger

Progress = Callable[[int, int], None]


def load(path: str | os.PathLike) -> Tagger:
    """The model at ``path`` as the estimator its task needs: a `Segmenter` for word segmentation,
    else a `Tagger` (read once)."""
    return estimator(schema.read(path), str(path))


def estimator(model: schema.Model, where: str) -> Tagger:
    """``model`` as the estimator its task needs: a `Segmenter` for word segmentation (``where`` names
    it in errors), else a `Tagger`."""
    if model.task.name == "cws":
        return Segmenter.from_model(model, where)
    return Tagger.from_model(model)


def load_tagger(path: str | os.PathLike) -> Tagger:
    """`load`, refusing a word segmentation model (the faces that tag columns take a tagger)."""
    tagger = load(path)
    if isinstance(tagger, Segmenter):
        raise InputError("a word segmentation model: use 'structperc segment'", str(path))
    return tagger


def writable_outputs(model_path: str | os.PathLike, checkpoint_dir: str | os.PathLike | None = None,
                     plot: str | os.PathLike | None = None) -> list[Path]:
    """Check, before any training, that the model, the checkpoints and the plot can be written (by
    writing a probe file), so that a run does not fail after its last epoch. Returns the folders it
    had to create (a failed run removes them again)."""
    check_target(model_path)
    target = Path(model_path)
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
                remove_empty(directory)
            raise InputError(f"cannot write there ({exc.strerror or exc})", str(folder)) from None
    if plot and Path(plot).exists() and not os.access(plot, os.W_OK):
        raise InputError("cannot write the plot there (read-only file)", str(plot))
    return created


def remove_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:
        pass


def evaluate(model_path: str | os.PathLike, path: str, *, task: str | None = None,
             strict: bool = False, threads: int | None = 1) -> dict:
    """The report of the model at ``model_path`` on gold data ``path`` (its task's metric); ``task``
    optionally checks which task the model was trained for. ``threads``: how many threads featurize and
    decode a large file (None or 0: every usable CPU; `structperc.compiled.threads`); the report is the same."""
    model = load(model_path)
    if task is not None and task != model.task_.name:
        raise InputError(f"a {model.task_.name!r} model, not {task!r}", str(model_path))
    with using_threads(threads):
        return model.evaluate(path, strict=strict)  # a segmenter refuses CoNLL columns (`refuse_columns`)


def calibrate(model_path: str | os.PathLike, path: str, *, out_path: str | os.PathLike | None = None,
              plot: str | os.PathLike | None = None) -> dict:
    """Refit the temperature of the model at ``model_path`` on gold data ``path`` (held out from its
    training) and save the model again (to ``out_path``, by default in place, atomically). With
    ``plot``, a reliability diagram before and after. Returns the calibration record."""
    from structperc import predict

    if plot:
        from structperc.train.plot import check_plot_path

        check_plot_path(plot)
    if out_path is None and is_shipped(model_path):
        raise InputError("a shipped model is not changed in place: give --out DIR", str(model_path))
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
        from structperc.train.plot import plot_reliability

        before = predict.calibration_report(model.model_, corpus, temperature=1.0)
        after = predict.calibration_report(model.model_, corpus)
        plot_reliability({"before (τ = 1)": before, f"after (τ = {record['temperature']:.3g})": after}, plot,
                         title=f"{Path(path).name}: {model.task_.name}")
    return record


def shipped_models() -> list[dict]:
    """The cards of the shipped models (`structperc.model.shipped.cards`), by name."""
    from structperc.model.shipped import cards

    return cards()


def info(model_path: str | os.PathLike) -> dict:
    """What `structperc.model.info.model_info` says of the model."""
    from structperc.model.info import model_info

    return model_info(model_path)


def compress(model_path: str | os.PathLike, out_path: str | os.PathLike, *, keep: float | None = None,
             threshold: float | None = None) -> tuple[Path, dict, int, int]:
    """Compress the model at ``model_path`` into ``out_path`` (may be the same: saving is atomic), its members
    deflated when the source's are (a shipped model's).

    Returns the new archive's path, the compression record, and the file sizes before and after.
    """
    from structperc.model.compress import compress as compress_model

    model = schema.read(model_path)
    size_before = schema.file_size(model_path)
    small = compress_model(model, keep=keep, threshold=threshold)
    path = schema.write(out_path, small, deflate=schema.is_deflated(model_path))
    return path, small.provenance["compressed"], size_before, path.stat().st_size
