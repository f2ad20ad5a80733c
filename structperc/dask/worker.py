"""What a Dask worker keeps: the models it was sent, loaded once per process and cached by a digest of
their bytes (`cached_model`), so a job of many parts — or many epochs — loads its model once."""
from __future__ import annotations

import hashlib
import os
import threading
from collections import Counter, OrderedDict
from typing import Any

_CACHE: "OrderedDict[str, Any]" = OrderedDict()
_LOADS: Counter = Counter()
_LOCK = threading.Lock()
_KEEP = 4  # models a worker keeps loaded


def cached_model(digest: str, blob: bytes) -> Any:
    """The estimator (`Tagger` or `Segmenter`) of model bytes ``blob``, loaded once per worker process
    and kept under ``digest`` (a digest of the bytes: two jobs of one model share it)."""
    with _LOCK:
        hit = _CACHE.get(digest)
        if hit is None:
            _single_threaded_blas()
            hit = _CACHE[digest] = _estimator(blob)
            _LOADS[digest] += 1
            while len(_CACHE) > _KEEP:
                _CACHE.popitem(last=False)
        _CACHE.move_to_end(digest)
        return hit


def load_counts() -> dict[str, int]:
    """How many times this process loaded each model (by digest): 1 each when the cache works. Ask every
    worker with ``client.run(load_counts)``."""
    return dict(_LOADS)


def _estimator(blob: bytes) -> Any:
    from structperc.commands.models import estimator
    from structperc.model.schema import from_bytes

    return estimator(from_bytes(blob), "model bytes")


def _single_threaded_blas() -> None:
    """A worker runs one task per thread; BLAS threads on top would fight them for the cores."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return
    threadpool_limits(1)


def model_bytes(model: Any) -> tuple[bytes, str]:
    """The archive bytes of ``model`` (a model directory, or a fitted `Tagger`) and their digest."""
    from structperc.model.archive import archive_path
    from structperc.model.schema import to_bytes
    from structperc.model.shipped import resolve

    if isinstance(model, (str, os.PathLike)):
        from structperc.commands import load

        load(model)  # damage and foreign files are refused here, in one line
        blob = archive_path(resolve(model)).read_bytes()
    else:
        model._check_fitted()
        blob = to_bytes(model.model_)
    return blob, hashlib.sha256(blob).hexdigest()
