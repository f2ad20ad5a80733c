"""The model file: a zip archive of ``.npy`` arrays and JSON metadata, never pickle.

A model path is a directory holding ``model.zip``, so users can write ``--model chunker/``. The archive
is written to a temporary file in the same directory and renamed over the old one (atomic on POSIX): a
crash mid-save leaves the previous model intact. Arrays are read with ``allow_pickle=False``; the JSON
names the format and its version, and a newer version is refused with a message saying so.
"""
from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import re
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import numpy as np

from structperc.compiled.boundary import rising
from structperc.errors import InputError, ModelFormatError
from structperc.model.shipped import resolve

if TYPE_CHECKING:
    from structperc.model.state_weights import StateWeights

FORMAT_NAME = "structperc-model"
#: The newest model format this code reads and writes. 2: second-order transitions (the ``trans2``
#: array); 3: a two-stage model (a first-stage model nested in it); 4: arrays shared between names; 5: a voting
#: model (its other members nested in it). A file is written at the oldest
#: version that holds it (`structperc.model.schema.write`), so older structperc releases keep reading
#: first-order models and refuse the others ("written by a newer structperc").
FORMAT_VERSION = 5
#: The version whose arrays may be stored once for two names (``"same_as"``): a two-stage model's first
#: stage reads the same language-resource tables as the model itself.
SHARED_ARRAYS_VERSION = 4
#: The format version of a voting model (`structperc.labels.voting`: its other members nested in it, their arrays
#: named ``voter<i>.<name>``), where every array a nested model repeats is stored once (`_shared`).
VOTE_VERSION = 5
#: A prefix of a nested model's arrays: a first stage's (`structperc.model.schema.STAGE_KEY` and a dot) or a
#: voting model's member's (``voter<i>.``); a member's first stage has both.
_PREFIX = re.compile(r"stage1\.|voter\d+\.")
#: Below version 5, only a nested model's language tables at least this large are shared: sharing smaller arrays
#: would change the bytes (and the version) of every two-stage model.
_SHARED_MIN_BYTES = 1 << 20
ARCHIVE_NAME = "model.zip"
_META = "metadata.json"
_ALLOWED_DTYPES = {"float32", "float64", "int16", "int32", "int64", "uint8", "uint16", "bool"}


def archive_path(path: str | os.PathLike) -> Path:
    """The archive inside a model directory (or the path itself if it names a ``.zip`` file)."""
    p = Path(path)
    return p if p.suffix == ".zip" else p / ARCHIVE_NAME


def check_target(path: str | os.PathLike) -> None:
    """Refuse a model path that names an existing file other than a ``.zip`` archive (a model is a directory or
    an archive; such a file is the user's, never replaced): callers check before training, so that a run does not
    fail after its last epoch."""
    target = Path(path)
    if target.exists() and not target.is_dir() and target.suffix != ".zip":
        raise InputError("exists and is not a model directory", str(path))


def save_archive(path: str | os.PathLike, meta: dict, arrays: dict[str, np.ndarray],
                 version: int = FORMAT_VERSION, *, deflate: bool = False) -> Path:
    """Write metadata and arrays atomically, as format ``version``; returns the archive path.
    ``deflate`` compresses the members (the shipped models: smaller files, slower to read)."""
    check_target(path)
    target = archive_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    blobs = {name: _npy_bytes(arr) for name, arr in arrays.items()}
    shared = _shared(blobs, version)
    described = {k: {"dtype": str(v.dtype), "shape": list(v.shape)} for k, v in arrays.items()}
    for name, same in shared.items():
        described[name]["same_as"] = same
    meta = dict(meta, format=FORMAT_NAME, format_version=max(version, SHARED_ARRAYS_VERSION) if shared else version,
                arrays=described)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
                _write_member(zf, _META, json.dumps(meta, ensure_ascii=False, sort_keys=True).encode(), deflate)
                for name, blob in blobs.items():
                    if name not in shared:
                        _write_member(zf, f"{name}.npy", blob, deflate)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a model is an ordinary file
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return target


def _shared(blobs: dict[str, bytes], version: int) -> dict[str, str]:
    """Nested arrays stored once: name → the stored array of the same bytes it is read from.

    A nested model's array equal to the one of the same name in a model it is nested in (``voter0.stage1.keys_3``
    and ``stage1.keys_3`` or ``keys_3``) is stored once. A voting model's members are trained alike on the same
    data, so most of their tables are equal (the attribute keys of every stage and member: 7.3 MB each of
    Spanish NER's six), and every such array is shared. Other models are older formats: there only a first
    stage's language tables of `_SHARED_MIN_BYTES` or more are (3.8 MB of German clusters in each stage), and
    only then is the file of version 4, so every other model keeps its bytes and stays readable by earlier
    releases."""
    every = version >= VOTE_VERSION
    shared: dict[str, str] = {}
    for name in sorted(blobs, key=lambda n: len(_PREFIX.findall(n))):  # the outer models' arrays first
        prefixes = []
        rest = name
        while (m := _PREFIX.match(rest)) is not None:
            prefixes.append(m.group())
            rest = rest[m.end():]
        if not prefixes or not (every or (rest.startswith("extra.") and len(blobs[name]) >= _SHARED_MIN_BYTES)):
            continue
        for k in range(len(prefixes)):  # the outermost model's array first: ``keys_3``, then ``stage1.keys_3``
            base = "".join(prefixes[len(prefixes) - k:]) + rest if k else rest
            if base != name and blobs.get(base) == blobs[name]:
                shared[name] = shared.get(base, base)
                break
    return shared


def _npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def _write_member(zf: zipfile.ZipFile, name: str, data: bytes, deflate: bool = False) -> None:
    # A fixed timestamp and mode: the same model gives the same bytes (reproducible files).
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    if deflate:
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data, compresslevel=9)
    else:
        zf.writestr(info, data)


def _read_meta(zf: zipfile.ZipFile) -> object:
    """The parsed ``metadata.json`` of an open archive, unchecked (any JSON value)."""
    return json.loads(zf.read(_META).decode("utf-8"))


def read_metadata(path: str | os.PathLike) -> object:
    """The metadata of the archive at ``path`` (a model directory or a ``.zip`` file), alone: no array
    is read and nothing is checked, so it is cheap (the shipped models' cards). Errors are left as
    raised (`OSError`, `KeyError` with no metadata, `ValueError` for bad JSON or UTF-8,
    `zipfile.BadZipFile`) for the caller to word; `load_archive` is the checked reader."""
    with zipfile.ZipFile(archive_path(path)) as zf:
        return _read_meta(zf)


def load_archive(path: str | os.PathLike) -> tuple[dict, dict[str, np.ndarray]]:
    """Read and check an archive (a model directory, a ``.zip`` file or a shipped model's name: see
    `structperc.model.shipped.resolve`); any damage raises `ModelFormatError` naming the file."""
    target = archive_path(resolve(path))
    if not target.exists():
        raise ModelFormatError(f"{path}: no model here (expected {target})")
    try:
        with zipfile.ZipFile(target) as zf:
            names = set(zf.namelist())
            if _META not in names:
                raise ModelFormatError(f"{target}: not a structperc model (no {_META})")
            meta = _read_meta(zf)
            if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
                raise ModelFormatError(f"{target}: not a structperc model (format "
                                       f"{meta.get('format') if isinstance(meta, dict) else None!r})")
            version = meta.get("format_version")
            if not isinstance(version, int) or version < 1:
                raise ModelFormatError(f"{target}: bad format version {version!r}")
            if version > FORMAT_VERSION:
                raise ModelFormatError(
                    f"{target}: written by a newer structperc (model format {version}; this version "
                    f"reads up to {FORMAT_VERSION}): upgrade structperc to load it")
            arrays = {}
            specs = meta.get("arrays", {})
            for name, spec in specs.items():
                if isinstance(spec, dict) and "same_as" in spec:
                    continue  # read below, from the array it shares
                if f"{name}.npy" not in names:
                    raise ModelFormatError(f"{target}: array {name!r} is missing")
                arr = np.lib.format.read_array(io.BytesIO(zf.read(f"{name}.npy")), allow_pickle=False)
                if str(arr.dtype) not in _ALLOWED_DTYPES or str(arr.dtype) != spec.get("dtype") \
                        or list(arr.shape) != spec.get("shape"):
                    raise ModelFormatError(f"{target}: array {name!r} does not match its description")
                arrays[name] = arr
            for name, spec in specs.items():
                if isinstance(spec, dict) and "same_as" in spec:
                    same = arrays.get(spec["same_as"]) if isinstance(spec["same_as"], str) else None
                    if same is None or str(same.dtype) != spec.get("dtype") or list(same.shape) != spec.get("shape"):
                        raise ModelFormatError(f"{target}: array {name!r} shares a missing or different array")
                    arrays[name] = same
    except ModelFormatError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, json.JSONDecodeError, UnicodeDecodeError,
            ValueError, KeyError, TypeError, AttributeError, OSError, EOFError, RuntimeError) as exc:
        raise ModelFormatError(f"{target}: damaged or not a structperc model ({type(exc).__name__}: "
                               f"{exc})") from None
    return meta, arrays


def sparse_rows(dense: np.ndarray) -> dict[str, np.ndarray]:
    """Row-compressed storage of a weight matrix: most (attribute, label) weights stay zero."""
    flat = dense.reshape(dense.shape[0], int(np.prod(dense.shape[1:])))
    rows, cols = np.nonzero(flat)
    indptr = np.zeros(flat.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=flat.shape[0]), out=indptr[1:])
    col_dtype = np.uint8 if flat.shape[1] <= 256 else (np.uint16 if flat.shape[1] <= 65536 else np.int64)
    return {"indptr": indptr, "indices": cols.astype(col_dtype),
            "values": flat[rows, cols].astype(np.float32)}


def dense_rows(parts: dict[str, np.ndarray], shape: tuple[int, ...], zero_rows: int = 0) -> np.ndarray:
    """Inverse of `sparse_rows`, validating every index; ``zero_rows`` extra all-zero rows at the end
    (`structperc.model.weights.Weights` wants one: allocating it here saves copying the whole table)."""
    indptr, indices, values = parts["indptr"], parts["indices"], parts["values"]
    n_rows = shape[0]
    width = int(np.prod(shape[1:])) if len(shape) > 1 else 1
    if len(indptr) != n_rows + 1 or indptr[0] != 0 or not rising(indptr) \
            or indptr[-1] != len(indices) or len(indices) != len(values) \
            or (len(indices) and int(indices.max()) >= width):
        raise ValueError("inconsistent sparse weight arrays")
    out = np.zeros((n_rows + zero_rows, width), dtype=np.float32)
    rows = np.repeat(np.arange(n_rows), np.diff(indptr))
    out[rows, indices.astype(np.int64)] = values
    return out.reshape((n_rows + zero_rows,) + tuple(shape[1:]))


def pair_arrays(weights: "StateWeights") -> dict[str, np.ndarray]:
    """Storage of state weights: the pairs with a non-zero weight, in `sparse_rows`' layout (row
    pointers over every attribute, label per pair, weight per pair), so files written before feature
    sets existed read the same way."""
    sw = weights.nonzero()
    L = sw.n_labels
    col_dtype = np.uint8 if L <= 256 else (np.uint16 if L <= 65536 else np.int64)
    return {"indptr": sw.ptr, "indices": sw.labels.astype(col_dtype), "values": sw.values}


def state_from_arrays(parts: dict[str, np.ndarray], shape: tuple[int, ...]) -> "StateWeights":
    """Inverse of `pair_arrays`, validating every index (labels ascending within each attribute)."""
    from structperc.model.state_weights import StateWeights

    indptr, indices, values = parts["indptr"], parts["indices"], parts["values"]
    if len(shape) != 2:
        raise ValueError("state weights must be attributes × labels")
    n_rows, L = shape
    if L > 32767 or len(indptr) != n_rows + 1 or indptr[0] != 0 or not rising(indptr) \
            or indptr[-1] != len(indices) or len(indices) != len(values) \
            or (len(indices) and int(indices.max()) >= L):
        raise ValueError("inconsistent sparse weight arrays")
    sw = StateWeights(indptr, indices.astype(np.int16), values, L)
    if not sw.rows_ascending():
        raise ValueError("sparse weight labels are not ascending within each attribute")
    return sw


@contextlib.contextmanager
def writing_lock(path: str | os.PathLike) -> Iterator[Path]:
    """Hold an advisory lock (``flock``) on the model's folder while a run trains and saves it.

    Two trainings writing one model would both say "saved" and the last would win silently; the
    second now stops at once. The lock is taken on the folder itself (a model directory, or the
    folder of a ``.zip`` model), so nothing is left behind in it.
    """
    folder = archive_path(path).parent
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError("another structperc run is writing this model", str(path)) from None
        yield folder
    finally:
        os.close(fd)  # closing releases the lock
