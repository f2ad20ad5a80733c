"""Parts of an input for the workers: files cut at sentence breaks (blank lines; line ends for text and
for segmentation) by seeking near each cut and scanning to the next break — the driver never reads a
whole file, and each worker reads its own byte range — or standard input read by the driver and sent
in parts. A part can also read the sentences around it (context for models whose features look at
neighbouring sentences)."""
from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import IO, Any, Iterable, Iterator

from structperc.errors import InputError

#: The largest part a file is cut into (bytes): bounds a worker's memory per task.
PART_BYTES = 4 << 20
#: Parts smaller than this are not worth a task when the number of parts is chosen automatically.
MIN_PART_BYTES = 64 << 10
_SCAN = 1 << 16


@dataclass
class ByteRange:
    """One task's share of an input: a byte range of a file the worker reads (``end`` None: the whole
    file, e.g. gzip), or bytes the driver read (standard input) with its neighbours as context."""

    name: str
    lines: bool  # sentences end at line ends (text, segmentation), else at blank lines
    path: str | None = None
    start: int = 0
    end: int | None = None
    size: int = 0
    data: bytes | None = None
    first_line: int = 1  # of ``data``
    before: bytes | None = None  # of ``data``: the part before it ...
    after: bytes | None = None  # ... and after it
    before_is_start: bool = True  # ``before`` begins at the start of the input

    def source(self) -> Any:
        """What the readers take: the bytes of the part as a named stream, or the path."""
        if self.data is not None:
            return named_stream(self.data, self.name)
        if self.end is None:
            return self.path
        return named_stream(_read_range(self.path, self.start, self.end), self.name)

    def lines_before(self) -> int:
        """Lines of the input before this part (for messages only: counted when an error needs it)."""
        if self.data is not None:
            return self.first_line - 1
        if not self.start:
            return 0
        count, pos = 0, 0
        with open(self.path, "rb") as fh:  # type: ignore[arg-type]
            while pos < self.start:
                piece = fh.read(min(1 << 22, self.start - pos))
                if not piece:
                    break
                count += piece.count(b"\n")
                pos += len(piece)
        return count

    def context_before(self, parse, gap: int) -> Any:
        """The corpus of (at least) ``gap`` sentences before the part, as ``parse`` reads bytes; None
        when the part starts the input."""
        if self.data is not None:
            if self.before is None:
                return None
            corpus = parse(self.before)
            if (corpus is None or len(corpus) < gap) and not self.before_is_start:
                raise ShortContext(f"the part of standard input before line {self.first_line} holds fewer "
                                    f"than {gap} sentences, the model's document window: give the input as a file",
                                    self.name)
            return corpus
        if self.end is None or self.start == 0:
            return None
        width = _SCAN
        with open(self.path, "rb") as fh:  # type: ignore[arg-type]
            while True:
                low = max(0, self.start - width)
                if low > 0:
                    low = _next_break(fh, low, self.size, self.lines)
                if low < self.start:
                    corpus = parse(_read_at(fh, low, self.start))
                    if low == 0 or (corpus is not None and len(corpus) >= gap):
                        return corpus
                width *= 4

    def context_after(self, parse, gap: int) -> Any:
        """The corpus of (at least) ``gap`` sentences after the part; None when it ends the input."""
        if self.data is not None:
            return None if self.after is None else parse(self.after)
        if self.end is None or self.end >= self.size:
            return None
        width = _SCAN
        with open(self.path, "rb") as fh:  # type: ignore[arg-type]
            while True:
                high = min(self.size, self.end + width)
                if high < self.size:
                    high = _next_break(fh, high, self.size, self.lines)
                corpus = parse(_read_at(fh, self.end, high))
                if high >= self.size or (corpus is not None and len(corpus) >= gap):
                    return corpus
                width *= 4


class ShortContext(InputError):
    """Standard input sent in parts too small to hold a model's document window."""


def named_stream(data: bytes, name: str) -> IO[bytes]:
    stream = io.BytesIO(data)
    stream.name = name  # type: ignore[misc]  # what messages call the input
    return stream


def _read_at(fh, start: int, end: int) -> bytes:
    fh.seek(start)
    return fh.read(end - start)


def _read_range(path: str | None, start: int, end: int) -> bytes:
    try:
        with open(path, "rb") as fh:  # type: ignore[arg-type]
            return _read_at(fh, start, end)
    except OSError as exc:
        raise InputError(f"cannot read on the worker: {exc.strerror or exc} (the files must be readable "
                         "at the same path on every Dask worker)", path) from None


def _first_cut(data: bytes, at: int, lines: bool) -> int:
    """The first cut in ``data`` at or after index ``at``, or -1: just after a line end (``lines``), or
    just after a blank line — a part then ends its last sentence with the blank line that closes it, as
    the whole input does (a last sentence without one would get one when written)."""
    if lines:
        found = data.find(b"\n", max(0, at - 1))
        return -1 if found < 0 else found + 1
    best = -1
    for pattern in (b"\n\n", b"\n\r\n"):
        found = data.find(pattern, max(0, at - len(pattern)))
        if found >= 0 and (best < 0 or found + len(pattern) < best):
            best = found + len(pattern)
    return best


def _next_break(fh, pos: int, size: int, lines: bool) -> int:
    """The first cut (`_first_cut`) at or after byte ``pos`` of a file; ``size`` if none."""
    offset = max(0, pos - 3)
    while True:
        fh.seek(offset)
        data = fh.read(_SCAN + 3)
        if not data:
            return size
        cut = _first_cut(data, pos - offset, lines)
        if cut >= 0:
            return min(offset + cut, size)
        if len(data) < _SCAN + 3:
            return size
        offset += _SCAN


def _last_break(data: bytes, lines: bool) -> int:
    """Where a buffer of standard input is cut (the bytes after go to the next part); 0 if nowhere."""
    if lines:
        return data.rfind(b"\n") + 1
    lf, crlf = data.rfind(b"\n\n"), data.rfind(b"\n\r\n")
    return max(lf + 2 if lf >= 0 else 0, crlf + 3 if crlf >= 0 else 0)


def file_parts(path: str, lines: bool, parts: int, part_bytes: int = PART_BYTES, smallest: int = 0) -> list[ByteRange]:
    """The parts of a file the workers read themselves: ``parts`` byte ranges (fewer where a part would
    be under ``smallest`` bytes, more where one would exceed ``part_bytes``) cut at sentence breaks; a
    compressed file is one part."""
    name = str(path)
    if name.endswith(".gz"):
        return [ByteRange(name, lines, path=name, end=None)]
    try:
        size = os.path.getsize(name)
        fh = open(name, "rb")
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), name) from None
    with fh:
        n = max(1, min(parts, size // smallest) if smallest else parts, -(-size // part_bytes))
        cuts = [0]
        for k in range(1, n):
            cut = _next_break(fh, max(size * k // n, cuts[-1] + 1), size, lines)
            if cut >= size:
                break
            cuts.append(cut)
    cuts.append(size)
    return [ByteRange(name, lines, path=name, start=a, end=b, size=size) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]


def stream_parts(source: Any, lines: bool, part_bytes: int = PART_BYTES) -> Iterator[ByteRange]:
    """Parts of a stream (standard input) read here, each with its neighbours' bytes (context for a
    model with document features), cut at sentence breaks about ``part_bytes`` apart."""
    from structperc.io.text import open_binary

    name, stream, owned = open_binary(source)

    def pieces() -> Iterator[bytes]:
        rest = b""
        while True:
            got = stream.read(part_bytes)
            if isinstance(got, str):
                got = got.encode("utf-8")
            if not got:
                break
            rest += got
            cut = _last_break(rest, lines)
            if cut > 0 and len(rest) >= part_bytes:
                yield rest[:cut]
                rest = rest[cut:]
        if rest:
            yield rest

    try:
        previous: bytes | None = None
        current: bytes | None = None
        first_line, index = 1, 0
        for piece in pieces():
            if current is not None:
                yield ByteRange(name, lines, data=current, first_line=first_line, before=previous, after=piece,
                           before_is_start=index <= 1)
                first_line += current.count(b"\n")
                index += 1
            previous, current = current, piece
        if current is not None:
            yield ByteRange(name, lines, data=current, first_line=first_line, before=previous, after=None,
                       before_is_start=index <= 1)
    finally:
        if owned:
            stream.close()


def input_parts(source: Any, lines: bool, parts: int | None, threads: int, part_bytes: int) -> Iterable[ByteRange]:
    """Parts of a file (``parts`` of them; None: two per worker thread, none under `MIN_PART_BYTES`) or of
    a stream."""
    if not hasattr(source, "read") and str(source) != "-" and (os.path.isfile(source) or str(source).endswith(".gz")):
        if parts is None:
            return file_parts(source, lines, 2 * threads, part_bytes, MIN_PART_BYTES)
        return file_parts(source, lines, parts, part_bytes)
    return stream_parts(source, lines, part_bytes)


@dataclass
class PartFailure:
    """An `InputError` on the worker that read a part, returned rather than raised (a task that raises has Dask
    log a traceback beside the one line the user is owed), as the driver raises it: file and line of the whole
    input, not of the part the worker read."""

    reason: str
    path: str | None
    line: int | None

    @classmethod
    def of(cls, exc: InputError, part: ByteRange) -> "PartFailure":
        line = exc.line
        if line is not None and exc.path == part.name:
            line += part.lines_before()
        return cls(exc.reason, exc.path, line)

    def error(self) -> InputError:
        return InputError(self.reason, self.path, self.line)
