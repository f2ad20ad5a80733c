"""CoNLL column files and CoNLL-U: the readers every tagging task starts from.

Errors name the file and line: a user with a 200,000-line corpus needs to know where the bad line is.
"""
from __future__ import annotations

import gzip
import zlib
import itertools
import os
import sys
from typing import IO, Iterable, Iterator, Sequence

import numpy as np

from structperc.corpus.columns import Corpus
from structperc.errors import InputError

#: Column names of CoNLL-U, with FORM called ``word`` so templates read the same across formats.
CONLLU_COLUMNS = ["id", "word", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc"]


def open_text_lines(path: str | os.PathLike | IO) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` with line ends (LF or CRLF) removed.

    ``.gz`` files are decompressed; ``-`` is standard input. Undecodable bytes raise `InputError`
    naming the line, instead of a UnicodeDecodeError deep inside a loop.
    """
    for first, lines in read_pieces(path):
        yield from enumerate(lines, first)


def read_pieces(path: str | os.PathLike | IO) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(number_of_first_line, lines)`` for successive pieces of a text file.

    Bytes are read and decoded a few MiB at a time: decoding and splitting whole pieces in C is
    several times faster than a Python loop over lines, and memory stays bounded.
    """
    if hasattr(path, "read"):
        name = getattr(path, "name", "<stream>")
        stream = path.buffer if hasattr(path, "buffer") else path
    elif str(path) == "-":
        name, stream = "<stdin>", sys.stdin.buffer
    else:
        name = str(path)
        try:
            stream = gzip.open(name, "rb") if name.endswith(".gz") else open(name, "rb")
        except OSError as exc:
            raise InputError(exc.strerror or str(exc), name) from None
    number = 0
    rest = b""
    try:
        while True:
            piece = stream.read(_PIECE)
            if isinstance(piece, str):
                piece = piece.encode("utf-8")
            if not piece:
                break
            piece = rest + piece
            cut = piece.rfind(b"\n") + 1
            if cut == 0:
                rest = piece
                continue
            piece, rest = piece[:cut], piece[cut:]
            lines = _lines(piece, name, number)
            yield number + 1, lines
            number += len(lines)
        if rest:
            yield number + 1, _lines(rest + b"\n", name, number)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"cannot read: {exc}", name) from None
    finally:
        if not hasattr(path, "read") and str(path) != "-":
            stream.close()


_PIECE = 1 << 22


def _lines(piece: bytes, name: str, lines_before: int) -> list[str]:
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


def iter_blocks(path, *, skip_comments: bool = False) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(first_line_number, lines)`` per blank-line separated block, skipping ``-DOCSTART-``."""
    block: list[str] = []
    first = 0
    for start, lines in read_pieces(path):
        for number, line in enumerate(lines, start):
            if not line or line.isspace():
                if block:
                    yield first, block
                    block = []
                continue
            if line.startswith("-DOCSTART-") or (skip_comments and line[0] == "#"):
                continue
            if not block:
                first = number
            block.append(line)
    if block:
        yield first, block


def _source_name(path) -> str:
    if hasattr(path, "read"):
        return getattr(path, "name", "<stream>")
    return "<stdin>" if str(path) == "-" else str(path)


class _ColumnParser:
    """Turns blank-line blocks into a `Corpus`, checking that every line has the same width."""

    def __init__(self, name: str, columns: Sequence[str], optional: Sequence[str]):
        self.name = name
        self.columns = list(columns)
        if not self.columns:
            raise InputError("no column names given", name)
        self.n_opt = len(list(optional))
        if self.n_opt and self.columns[-self.n_opt:] != list(optional):
            raise InputError(f"optional columns {list(optional)} must be the last ones of {self.columns}",
                             name)
        self.width: int | None = None

    def parse(self, blocks: Iterable[tuple[int, list[str]]], keep_lines: bool):
        values: list[list[str]] = [[] for _ in self.columns]
        lengths: list[int] = []
        starts: list[int] = []
        raw: list[list[str]] = []
        for first, block in blocks:
            rows = [line.split() for line in block]
            widths = set(map(len, rows))
            if self.width is None:
                lo = len(self.columns) - self.n_opt
                if not lo <= len(rows[0]) <= len(self.columns):
                    expect = f"{lo} to {len(self.columns)}" if self.n_opt else f"{lo}"
                    raise InputError(f"expected {expect} columns ({' '.join(self.columns)}), found "
                                     f"{len(rows[0])}", self.name, first)
                self.width = len(rows[0])
            if widths != {self.width}:
                bad = next(i for i, r in enumerate(rows) if len(r) != self.width)
                raise InputError(f"expected {self.width} columns like the lines before, found "
                                 f"{len(rows[bad])}", self.name, first + bad)
            for store, column in zip(values, zip(*rows)):
                store.extend(column)
            lengths.append(len(block))
            starts.append(first)
            if keep_lines:
                raw.append(block)
        present = self.columns[:self.width or len(self.columns)]
        cols = {c: v for c, v in zip(present, values) if c != "_"}
        return _corpus(cols, lengths, starts, self.name), raw


def _corpus(cols: dict[str, list[str]], lengths: list[int], starts: list[int], name: str) -> Corpus:
    ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    return Corpus(cols, ptr, name, np.asarray(starts, dtype=np.int64))


def read_conll(
    path,
    columns: Sequence[str],
    *,
    optional: Sequence[str] = (),
    keep_lines: bool = False,
) -> Corpus | tuple[Corpus, list[list[str]]]:
    """Read a whitespace-separated CoNLL column file.

    Parameters
    ----------
    path : str, path or text/binary stream
        ``.gz`` is read transparently; ``-`` is standard input.
    columns : sequence of str
        Name of each column, left to right; ``_`` ignores a column.
    optional : sequence of str
        Trailing columns that may be absent from the whole file (e.g. the gold tags when tagging).
    keep_lines : bool
        Also return the raw lines, so predictions can be written back beside them.

    Examples
    --------
    >>> import io
    >>> c = read_conll(io.BytesIO(b"He PRP B-NP\\nran VBD B-VP\\n\\n"), ["word", "pos", "chunk"])
    >>> c.columns["chunk"]
    ['B-NP', 'B-VP']
    """
    parser = _ColumnParser(_source_name(path), columns, optional)
    corpus, raw = parser.parse(iter_blocks(path), keep_lines)
    if len(corpus) == 0:
        raise InputError("no sentences (the file is empty)", parser.name)
    return (corpus, raw) if keep_lines else corpus


def iter_conll_chunks(path, columns: Sequence[str], *, optional: Sequence[str] = (),
                      sentences: int = 2000) -> Iterator[tuple[Corpus, list[list[str]]]]:
    """Read a CoNLL file in pieces of ``sentences`` sentences (with raw lines): constant memory."""
    parser = _ColumnParser(_source_name(path), columns, optional)
    blocks = iter_blocks(path)
    while True:
        piece = list(itertools.islice(blocks, sentences))
        if not piece:
            return
        yield parser.parse(piece, True)


def read_conllu(path, *, keep_lines: bool = False) -> Corpus | tuple[Corpus, list[list[str]]]:
    """Read CoNLL-U words (FORM, UPOS, XPOS, …), skipping comments, multi-word tokens and empty nodes.

    Columns are named as in `CONLLU_COLUMNS` (``word`` for FORM).
    """
    name = _source_name(path)
    values: list[list[str]] = [[] for _ in CONLLU_COLUMNS]
    lengths: list[int] = []
    starts: list[int] = []
    raw: list[list[str]] = []
    for first, block in iter_blocks(path, skip_comments=True):
        rows = [line.split("\t") for line in block]
        keep = [r[0].isdigit() for r in rows]
        for offset, (fields, word) in enumerate(zip(rows, keep)):
            if len(fields) != 10:
                raise InputError(f"CoNLL-U needs 10 tab-separated columns, found {len(fields)}", name,
                                 first + offset)
            if not word and "-" not in fields[0] and "." not in fields[0]:
                raise InputError(f"bad token id {fields[0]!r}", name, first + offset)
        if not all(keep):  # multi-word tokens (1-2) and empty nodes (8.1) are not words
            rows = [r for r, k in zip(rows, keep) if k]
            block = [line for line, k in zip(block, keep) if k]
        words = block
        for store, column in zip(values, zip(*rows)):
            store.extend(column)
        if words:
            lengths.append(len(words))
            starts.append(first)
            if keep_lines:
                raw.append(words)
    if not lengths:
        raise InputError("no sentences (the file is empty)", name)
    corpus = _corpus(dict(zip(CONLLU_COLUMNS, values)), lengths, starts, name)
    return (corpus, raw) if keep_lines else corpus


def is_conllu(path) -> bool:
    """Whether a file name says CoNLL-U (``.conllu`` or ``.conllu.gz``)."""
    return str(path).endswith((".conllu", ".conllu.gz"))


def read_corpus(path, columns: Sequence[str] | None, *, optional: Sequence[str] = (),
                keep_lines: bool = False):
    """Read CoNLL-U when the file name says so, else CoNLL columns named by ``columns``."""
    if is_conllu(path):
        return read_conllu(path, keep_lines=keep_lines)
    if not columns:
        raise InputError("name the columns (e.g. --columns word,pos,chunk)", _source_name(path))
    return read_conll(path, columns, optional=optional, keep_lines=keep_lines)


def write_conll(out: IO[str], lines: Iterable[Sequence[str]], predictions: Iterable[Sequence[str]],
                sep: str | None = None) -> None:
    """Write each input line with its predicted tag appended as a new last column."""
    parts = []
    for block, tags in zip(lines, predictions):
        s = sep if sep is not None else ("\t" if "\t" in block[0] else " ")
        parts.append("".join(f"{line}{s}{tag}\n" for line, tag in zip(block, tags)))
    out.write("\n".join(parts) + "\n" if parts else "")

