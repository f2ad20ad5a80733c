"""One library call per command, for the command line and any other face (the HTTP service, a
notebook, a Dask cluster) to call the same way: ``train`` (`training`), ``eval``/``calibrate``/``info``/
``compress`` and loading a model (`models`), ``tag`` and ``segment`` on files and streams (`streaming`).
The faces parse their own options and print; everything else is decided here or below."""
from __future__ import annotations

from structperc.commands.models import calibrate, compress, evaluate, info, load, load_tagger, shipped_models
from structperc.commands.streaming import segment_files, tag_files
from structperc.commands.training import fit_on_workers, train, writable_outputs

__all__ = ["calibrate", "compress", "evaluate", "fit_on_workers", "info", "load", "load_tagger", "segment_files",
           "shipped_models", "tag_files", "train", "writable_outputs"]
