"""Process settings the commands make before numpy loads."""
from __future__ import annotations

import os


def single_threaded_blas() -> None:
    """OpenBLAS starts a thread per core when numpy is imported (≈50 ms of `structperc tag`'s
    start-up on this machine); training, tagging and scoring do no BLAS work. Only effective before
    numpy's import, which these commands do lazily; a user's own setting wins."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")




#: What every ``--model`` that reads a model takes (`structperc.model.shipped.resolve`).
MODEL_HELP = "A model directory saved by 'train', or a shipped model's name ('structperc models')."
