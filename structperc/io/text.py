"""Opening corpus text: paths, gzip, standard input and file objects, the UTF-8 BOM, memory-mapped
pieces cut at sentence breaks, and numbered lines; errors name the file and line."""
from __future__ import annotations

import gzip
import mmap
import os
import sys
import zlib
from typing import IO, Iterable, Iterator

from structperc.errors import InputError

#: ASCII whitespace as ``bytes.split()`` sees it: what separates CoNLL columns (``str.split()`` also
#: splits at \x1c-\x1f and at non-ASCII spaces such as U+00A0 and U+3000, which a token may hold).
ASCII_WS = " \t\n\r\x0b\x0c"


def open_text_lines(path: str | os.PathLike | IO) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` with line ends (LF or CRLF) removed.

    ``.gz`` files are decompressed; ``-`` is standard input. Undecodable bytes raise `InputError`
    naming the line, instead of a UnicodeDecodeError deep inside a loop.
    """
    for first, lines in read_pieces(path):
        yield from enumerate(lines, first)


def head_lines(path: str | os.PathLike, limit: int = 1 << 16) -> list[str]:
    """The complete lines among the first ``limit`` bytes of a file (all its lines when it is shorter;
    decompressed for ``.gz``; undecodable bytes replaced): what a look at a file's kind needs, without
    reading the `_PIECE` of `read_pieces`."""
    name, stream, owned = open_binary(path)
    try:
        head = _read_bytes(stream, name, limit)
    finally:
        if owned:
            stream.close()
    lines = head.decode("utf-8", "replace").split("\n")
    if len(head) == limit:
        lines.pop()  # cut by the limit
    return [line.rstrip("\r") for line in lines]


def open_binary(path) -> tuple[str, IO[bytes] | gzip.GzipFile, bool]:
    """(name for messages, binary stream, whether we opened it and must close it)."""
    if hasattr(path, "read"):
        name = getattr(path, "name", "<stream>")
        return name, (path.buffer if hasattr(path, "buffer") else path), False
    if str(path) == "-":
        return "<stdin>", sys.stdin.buffer, False
    name = str(path)
    try:
        return name, (gzip.open(name, "rb") if name.endswith(".gz") else open(name, "rb")), True
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), name) from None


def _read_bytes(stream, name: str, limit: int | None = None) -> bytes:
    try:
        piece = stream.read(_PIECE if limit is None else limit)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"cannot read: {exc}", name) from None
    return piece.encode("utf-8") if isinstance(piece, str) else piece


def read_pieces(path: str | os.PathLike | IO) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(number_of_first_line, lines)`` for successive pieces of a text file.

    Bytes are read and decoded a few MiB at a time: decoding and splitting whole pieces in C is
    several times faster than a Python loop over lines, and memory stays bounded.
    """
    name, stream, owned = open_binary(path)
    number = 0
    rest = b""
    try:
        while True:
            piece = _read_bytes(stream, name)
            if not piece:
                break
            piece = rest + piece
            cut = piece.rfind(b"\n") + 1
            if cut == 0:
                rest = piece
                continue
            piece, rest = piece[:cut], piece[cut:]
            lines = decode_lines(piece, name, number)
            yield number + 1, lines
            number += len(lines)
        if rest:
            yield number + 1, decode_lines(rest + b"\n", name, number)
    finally:
        if owned:
            stream.close()


def read_sentence_pieces(path: str | os.PathLike | IO, counted: list[int] | None = None) \
        -> Iterator[tuple[int, bytes]]:
    """Yield ``(number_of_first_line, bytes)`` pieces of a few MiB that each end at a blank line.

    Cut between sentences, every piece can be parsed on its own (`ColumnParser.parse_piece`). The
    last piece ends where the file ends, with or without a line end (as `mapped_pieces`).
    A consumer that counted a piece's lines anyway (the compiled scanner does) may append that
    number to ``counted`` before asking for the next piece, which saves counting them again.
    """
    name, stream, owned = open_binary(path)
    number = 0
    try:
        piece = _read_bytes(stream, name)
        searched = 0  # no blank line before this offset of piece
        while piece:
            ahead = _read_bytes(stream, name)
            if not ahead:  # the last piece, whole: no copy of it to cut a few bytes off
                yield number + 1, piece
                break
            last = piece.rfind(b"\n\n", searched)
            cut = max(last, piece.rfind(b"\n\r\n", max(last, searched))) + 1
            if cut == 0:
                searched = max(len(piece) - 2, 0)
                piece += ahead
                continue
            piece, rest = piece[:cut], piece[cut:]
            yield number + 1, piece
            number += counted.pop() if counted else piece.count(b"\n")
            piece, searched = rest + ahead, 0
    finally:
        if owned:
            stream.close()


_PIECE = 1 << 22


def mapped_pieces(path, counted: list[int]) -> Iterator[tuple[int, bytes | memoryview]]:
    """`read_sentence_pieces` without copies for a plain file: pieces are views of the memory-mapped
    file (the page cache itself), cut at blank lines the same way. Streams, standard input, ``.gz``
    and anything that cannot be mapped go through `read_sentence_pieces`.

    The last piece may lack a final newline (the compiled scanner does not need one; the line-by-line
    fallback adds it to its copy)."""
    name = None if hasattr(path, "read") or str(path) == "-" or str(path).endswith(".gz") \
        else str(path)
    mapped = None
    if name is not None and os.path.isfile(name):
        try:
            with open(name, "rb") as fh:
                if os.fstat(fh.fileno()).st_size:
                    mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            mapped = None
    if mapped is None:
        yield from read_sentence_pieces(path, counted)
        return
    view = memoryview(mapped)
    size = len(mapped)
    number, start = 0, 0
    while start < size:
        end = min(start + _PIECE, size)
        searched = start
        while end < size:
            last = mapped.rfind(b"\n\n", searched, end)
            cut = max(last, mapped.rfind(b"\n\r\n", max(last, searched), end)) + 1
            if cut > 0:
                end = cut
                break
            # no blank line yet: a longer piece, searching only what is new (and the 2 bytes before)
            searched = max(start, end - 2)
            end = min(end + _PIECE, size)
        yield number + 1, view[start:end]
        if end < size:
            number += counted.pop() if counted else mapped[start:end].count(b"\n")
        start = end


def count_lines(first: int, data: bytes | memoryview) -> int:
    """Lines of a piece (whose first line is line ``first`` of its file) as the compiled scanners
    count them: a last line without a line end counts, a BOM at the start of the file does not."""
    data = bytes(data)
    if first == 1 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def piece_bytes(data: bytes | memoryview) -> bytes:
    """A piece as the line-by-line parsers take it: bytes ending with a newline."""
    data = bytes(data)
    return data if data.endswith(b"\n") else data + b"\n"


def decode_lines(piece: bytes, name: str, lines_before: int) -> list[str]:
    """Decoded lines of a piece that ends with a newline (CR of CRLF removed, BOM dropped)."""
    try:
        text = piece.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = lines_before + piece.count(b"\n", 0, exc.start) + 1
        column = exc.start - (piece.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(f"bytes that are not UTF-8 at byte {column} of the line", name, line) from None
    if lines_before == 0 and text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte order mark is not part of the first token
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    lines.pop()  # the empty string after the final newline
    return lines



def line_blocks(numbered: Iterable[tuple[int, str]], skip_comments: bool, ascii_blank: bool = False) \
        -> Iterator[tuple[list[int], list[str]]]:
    """Blank-line separated blocks of ``(line_number, line)``: ``(numbers, lines)`` of each block's
    token lines (``-DOCSTART-`` lines, and ``#`` comments with ``skip_comments``, are left out).

    A line is blank when it holds only whitespace: ASCII whitespace with ``ascii_blank`` (CoNLL
    columns, whose separators are ASCII), any whitespace to ``str.isspace`` otherwise (CoNLL-U)."""
    block: list[str] = []
    numbers: list[int] = []
    for number, line in numbered:
        if not line or (line.strip(ASCII_WS) == "" if ascii_blank else line.isspace()):
            if block:
                yield numbers, block
                block, numbers = [], []
            continue
        if line.startswith("-DOCSTART-") or (skip_comments and line[0] == "#"):
            continue
        numbers.append(number)
        block.append(line)
    if block:
        yield numbers, block


def source_name(path) -> str:
    if hasattr(path, "read"):
        return getattr(path, "name", "<stream>")
    return "<stdin>" if str(path) == "-" else str(path)


