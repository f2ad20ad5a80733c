"""Learning curves: dev score (and training mistakes) per epoch, drawn with matplotlib if installed."""
from __future__ import annotations

import os
from typing import Sequence

from structperc.errors import StructpercError
from structperc.train.perceptron import EpochReport


def require_matplotlib():
    """matplotlib.pyplot on a display-less backend, or a clear error (checked before training)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise StructpercError("--plot needs matplotlib: pip install 'structperc[plot]'") from None
    return plt


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
