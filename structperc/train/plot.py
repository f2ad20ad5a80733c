"""Learning curves (dev score and training mistakes per epoch) and reliability diagrams (accuracy
against confidence), drawn with matplotlib if installed."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from structperc.errors import StructpercError
from structperc.train.reports import EpochReport


def require_matplotlib():
    """matplotlib.pyplot on a display-less backend, or a clear error (checked before training)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise StructpercError("--plot needs matplotlib: pip install 'structperc[plot]'") from None
    return plt


def check_plot_path(path: str | os.PathLike) -> None:
    """Refuse, before any work, a plot path matplotlib would not write as given: a folder, no suffix (it would
    write ``PATH.png`` beside it) or a format it does not know (after training, that was a traceback)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    known = FigureCanvasAgg.get_supported_filetypes()
    target = Path(path)
    suffix = target.suffix.lower().lstrip(".")
    if target.is_dir():
        raise StructpercError(f"{path}: --plot takes a file name (such as curve.png), not a folder")
    if suffix not in known:
        raise StructpercError(f"{path}: --plot writes {', '.join('.' + k for k in sorted(known))}: "
                              f"{'no suffix' if not suffix else repr('.' + suffix)} is none of them")


def plot_history(history: Sequence[EpochReport], path: str | os.PathLike, title: str = "") -> None:
    """Write a PNG (or any format matplotlib infers from ``path``) of the epochs in ``history``."""
    plt = require_matplotlib()
    if not history:
        raise StructpercError("nothing to plot: no epochs were recorded")
    epochs = [r.epoch for r in history]
    fig, ax = plt.subplots(figsize=(6, 4))
    scores = [r.dev_score for r in history]
    if any(s is not None for s in scores):
        ax.plot(epochs, [100 * s if s is not None else float("nan") for s in scores], "o-",
                label="dev score")
        ax.set_ylabel("dev score (%)")
    twin = ax.twinx()
    twin.plot(epochs, [r.mistakes / r.n_sentences for r in history], "s--", color="tab:gray",
              label="training sentences with a mistake")
    twin.set_ylabel("fraction of training sentences wrong")
    ax.set_xlabel("epoch")
    ax.set_title(title or "learning curve")
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(handles, [h.get_label() for h in handles], loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_reliability(reports: Mapping[str, Mapping[str, Any]], path: str | os.PathLike, title: str = "") -> None:
    """A reliability diagram (DeGroot & Fienberg 1983; Guo et al. 2017): per confidence bin, the
    accuracy of the tokens in it, one line per report (``confidence`` and ``correct`` arrays, as
    `structperc.predict.calibration_report` gives), the diagonal being perfect calibration."""
    from structperc.metrics import ECE_BINS, expected_calibration_error, reliability

    plt = require_matplotlib()
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], ":", color="tab:gray", label="perfect calibration")
    for name, r in reports.items():
        bins = [b for b in reliability(r["confidence"], r["correct"]) if b["count"]]
        ece = expected_calibration_error(r["confidence"], r["correct"])
        ax.plot([b["confidence"] for b in bins], [b["accuracy"] for b in bins], "o-",
                label=f"{name}: ECE {ece:.4f}")
    ax.set_xlabel(f"confidence (mean in each of {ECE_BINS} bins)")
    ax.set_ylabel("accuracy")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title or "reliability")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
