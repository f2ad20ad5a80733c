"""Where `structperc tag` and `structperc segment` write: standard output (streamed as it is
produced), a stream the caller holds, or a file written atomically — to a temporary file beside it,
renamed over it only once everything is written, so that an error half-way leaves no partial file
(and an existing file untouched)."""
from __future__ import annotations

import contextlib
import os
import stat
import sys
from typing import IO, Iterator

from structperc.errors import InputError


@contextlib.contextmanager
def output_stream(target: "str | os.PathLike | IO[str]", encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text stream for ``target``: the stream itself (left open), standard output for ``-``, or
    `atomic_output` for a path."""
    if hasattr(target, "write"):
        yield target  # type: ignore[misc]
        target.flush()  # type: ignore[union-attr]
    elif str(target) == "-":
        yield sys.stdout
        sys.stdout.flush()
    else:
        with atomic_output(target, encoding) as fh:
            yield fh


@contextlib.contextmanager
def atomic_output(path: "str | os.PathLike", encoding: str = "utf-8") -> Iterator[IO[str]]:
    """Write ``path`` through a temporary file in the same directory, renamed over ``path`` when the
    block ends normally and removed when it raises; the new file keeps the old one's permissions (a
    new one gets the umask's). A path that exists and is not a regular file (``/dev/stdout``, a named
    pipe) is written directly: nothing can be renamed over it."""
    path = os.fspath(path)
    try:
        existing = os.stat(path)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise InputError("cannot write: is a directory", path)
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        with open(path, "w", encoding=encoding) as fh:
            yield fh
        return
    directory, name = os.path.split(os.path.abspath(path))
    fd, tmp = _create_beside(directory, name, path)
    try:
        with open(fd, "w", encoding=encoding) as fh:
            yield fh
        if existing is not None:
            os.chmod(tmp, stat.S_IMODE(existing.st_mode))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_beside(directory: str, name: str, path: str) -> tuple[int, str]:
    """A new file ``.<name>.<n>.tmp`` in ``directory`` (mode 0o666 less the umask, as ``open``)."""
    for n in range(os.getpid(), os.getpid() + 10_000):
        tmp = os.path.join(directory, f".{name}.{n}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), tmp
        except FileExistsError:
            continue
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
    raise InputError("cannot write: no free temporary file name beside it", path)
