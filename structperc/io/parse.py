"""The line-by-line CoNLL and CoNLL-U parsers: the Python twin of the compiled scanners
(`structperc.io.read_kernels`), used for irregular pieces (bad UTF-8, other widths), without the
compiled build, and to name a bad line.

CoNLL columns are separated by ASCII whitespace only (``bytes.split``): a token may hold a no-break
space, U+3000 or \x1c-\x1f, at which ``str.split`` would cut it. CoNLL-U fields are separated by tabs.
"""
from __future__ import annotations

import itertools
import operator
import re
from typing import Iterable, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.io.text import ASCII_WS, decode_lines, line_blocks

#: Column names of CoNLL-U, with FORM called ``word`` so templates read the same across formats.
CONLLU_COLUMNS = ["id", "word", "lemma", "upos", "xpos", "feats", "head", "deprel", "deps", "misc"]

_WS_BYTES = np.zeros(256, dtype=bool)
_WS_BYTES[[9, 10, 11, 12, 13, 32]] = True
#: What ``str.split()`` splits at besides ASCII whitespace (and ``bytes.split()`` does not).
_OTHER_WS = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
#: A field of a CoNLL column line: a run of anything but ASCII whitespace.
_FIELD = re.compile("[^" + re.escape(ASCII_WS) + "]+")
_DOCSTART = re.compile(rb"^-DOCSTART-", re.M)


def split_fields(text: str) -> list[str]:
    """The fields of CoNLL column text, split at ASCII whitespace only (``str.split()`` where that is
    the same: no character of `_OTHER_WS`)."""
    return _FIELD.findall(text) if _OTHER_WS.search(text) else text.split()



def _decoded_piece(first: int, data: bytes) -> tuple[bytes, str] | None:
    """A piece as both fast parsers read it: BOM (file start only) and CR of CRLF removed, ending
    with a newline, and its text; None if it is not UTF-8 (the line-by-line path names the line)."""
    if first == 1 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n")
    if not data.endswith(b"\n"):
        data += b"\n"
    try:
        return data, data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _pick(lines: list[str], rows: np.ndarray) -> list[str]:
    """``[lines[i] for i in rows]`` in C (``itemgetter``), for one row as for many."""
    picked = operator.itemgetter(*rows.tolist())(lines)
    return [picked] if len(rows) == 1 else list(picked)


class ColumnCountError(InputError):
    """The first token line of a column file does not have the model's columns: perhaps no column
    file at all (plain text, one token per line), which a guessed input format says."""


class ColumnParser:
    """Parses pieces of a CoNLL column file, checking that every line has the same width (the
    fallback of the compiled scanner, see `_LeanReader`).

    Pieces are parsed whole where they are regular (the usual case): one split over the piece for
    the fields and numpy over its bytes for the fields per line, blank lines and ``-DOCSTART-``
    lines, so no Python code runs per token. Anything irregular (bad UTF-8, a line of another width)
    goes through the line-by-line parser instead, which names the bad line.

    With ``tokens`` the file holds one token per line (``structperc tag --input-format tokens``): a
    line is one field, the line without the ASCII whitespace around it, spaces inside included.
    """

    def __init__(self, name: str, columns: Sequence[str], optional: Sequence[str], *, tokens: bool = False):
        self.name = name
        self.columns = list(columns)
        if not self.columns:
            raise InputError("no column names given", name)
        self.n_opt = len(list(optional))
        if self.n_opt and self.columns[-self.n_opt:] != list(optional):
            raise InputError(f"optional columns {list(optional)} must be the last ones of {self.columns}",
                             name)
        self.tokens = tokens
        if tokens and (len(self.columns) != 1 or self.n_opt):
            raise InputError("one token per line: one column", name)
        self.width: int | None = 1 if tokens else None

    def _first_width(self, width: int, line: int) -> None:
        lo = len(self.columns) - self.n_opt
        if not lo <= width <= len(self.columns):
            expect = f"{lo} to {len(self.columns)}" if self.n_opt else f"{lo}"
            raise ColumnCountError(f"expected {expect} columns ({' '.join(self.columns)}), found "
                                   f"{width}", self.name, line)
        self.width = width

    def parse_piece(self, first: int, data: bytes, keep_lines: bool) -> "Parsed":
        """Parse one piece that ends at a sentence break; ``first`` is its first line's number."""
        fast = self._parse_fast(first, data, keep_lines)
        if fast is not None:
            return fast
        lines = decode_lines(data, self.name, first - 1)
        return self.parse_blocks(line_blocks(enumerate(lines, first), False, True), keep_lines)

    def _parse_fast(self, first: int, data: bytes, keep_lines: bool) -> "Parsed | None":
        decoded = _decoded_piece(first, data)
        if decoded is None:
            return None
        data, text = decoded
        arr = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(arr == 10)
        ws = _WS_BYTES[arr]
        starts = ~ws
        starts[1:] &= ws[:-1]
        counts = np.bincount(np.searchsorted(newlines, np.flatnonzero(starts)), minlength=len(newlines))
        blank = counts == 0
        token = ~blank
        skipped = [int(np.searchsorted(newlines, m.start())) for m in _DOCSTART.finditer(data)] \
            if b"-DOCSTART-" in data else []
        if skipped:
            token[skipped] = False
        rows = np.flatnonzero(token)
        if not len(rows):
            return Parsed.empty(len(self.columns))
        widths = counts[rows]
        if self.width is None:
            self._first_width(int(widths[0]), first + int(rows[0]))
        width = self.width
        assert width is not None  # `_first_width` set it (or raised)
        if (widths != width).any():
            return None
        # \x1c-\x1f and non-ASCII spaces are part of a field: a slower split where the piece has any
        exotic = bool(((arr - np.uint8(0x1c)) < 4).any()) or (not data.isascii() and
                                                              _OTHER_WS.search(text) is not None)
        fields = _FIELD.findall(text) if exotic else text.split()
        if skipped:
            fields = list(itertools.compress(fields, np.repeat(token, counts).tolist()))
        values = [fields[i::width] for i in range(width)]
        sentence = np.cumsum(blank)[rows]
        begin = np.flatnonzero(np.r_[True, sentence[1:] != sentence[:-1]])
        lengths = np.diff(np.r_[begin, len(rows)]).tolist()
        return Parsed(values, lengths, (first + rows[begin]).tolist(), first + rows if keep_lines else None)

    def parse_blocks(self, blocks: Iterable[tuple[list[int], list[str]]], keep_lines: bool) -> "Parsed":
        """The line-by-line parser over blank-line separated blocks (`line_blocks`)."""
        values: list[list[str]] = [[] for _ in self.columns]
        lengths: list[int] = []
        starts: list[int] = []
        numbers: list[int] = []
        for lines, block in blocks:
            if self.tokens:
                values[0].extend(line.strip(ASCII_WS) for line in block)
            else:
                rows = [split_fields(line) for line in block]
                widths = set(map(len, rows))
                if self.width is None:
                    self._first_width(len(rows[0]), lines[0])
                if widths != {self.width}:
                    bad = next(i for i, r in enumerate(rows) if len(r) != self.width)
                    raise InputError(f"expected {self.width} columns like the lines before, found "
                                     f"{len(rows[bad])}", self.name, lines[bad])
                for store, column in zip(values, zip(*rows)):
                    store.extend(column)
            lengths.append(len(block))
            starts.append(lines[0])
            if keep_lines:
                numbers.extend(lines)
        return Parsed(values, lengths, starts, np.asarray(numbers, dtype=np.int64) if keep_lines else None)


class Parsed:
    """Columns, sentence lengths, first line numbers and (optionally) the line numbers of the token
    lines (``rows``, flat, in order: where `structperc.io.scan.RawPiece.from_rows` finds the lines)
    of some sentences."""

    __slots__ = ("values", "lengths", "starts", "rows")

    def __init__(self, values, lengths, starts, rows):
        self.values, self.lengths, self.starts, self.rows = values, lengths, starts, rows

    @classmethod
    def empty(cls, n_columns: int) -> "Parsed":
        return cls([[] for _ in range(n_columns)], [], [], np.zeros(0, dtype=np.int64))


class ReadPart:
    """Sentences of one or more pieces: codes of the wanted columns, lengths, first lines, raw lines
    (a `RawLines`, None when not kept)."""

    __slots__ = ("codes", "lengths", "starts", "raw")

    def __init__(self, codes: list[np.ndarray], lengths: np.ndarray, starts: np.ndarray, raw):
        self.codes, self.lengths, self.starts, self.raw = codes, lengths, starts, raw

    def __len__(self) -> int:
        return len(self.lengths)


def conllu_blocks(blocks: Iterable[tuple[list[int], list[str]]], name: str, keep_lines: bool) -> "Parsed":
    out = Parsed.empty(len(CONLLU_COLUMNS))
    numbers: list[int] = []
    for lines, block in blocks:
        rows = [line.split("\t") for line in block]
        keep = [r[0].isdigit() for r in rows]
        for offset, (fields, word) in enumerate(zip(rows, keep)):
            if len(fields) != 10:
                raise InputError(f"CoNLL-U needs 10 tab-separated columns, found {len(fields)}", name,
                                 lines[offset])
            if not word and "-" not in fields[0] and "." not in fields[0]:
                raise InputError(f"bad token id {fields[0]!r}", name, lines[offset])
        if not all(keep):  # multi-word tokens (1-2) and empty nodes (8.1) are not words
            rows = [r for r, k in zip(rows, keep) if k]
            words = [n for n, k in zip(lines, keep) if k]
        else:
            words = lines
        for store, column in zip(out.values, zip(*rows)):
            store.extend(column)
        if words:
            out.lengths.append(len(words))
            out.starts.append(lines[0])
            numbers.extend(words)
    out.rows = np.asarray(numbers, dtype=np.int64) if keep_lines else None
    return out


def conllu_fast(first: int, data: bytes, keep_lines: bool) -> "Parsed | None":
    """`conllu_blocks` for a regular piece: one C-level pass per question over the piece's lines
    (``map`` of str methods) instead of Python code per line; None where anything needs a closer
    look, which the line-by-line parser then reports."""
    decoded = _decoded_piece(first, data)
    if decoded is None:
        return None
    text = decoded[1]
    lines = text.split("\n")
    lines.pop()  # the empty string after the final newline
    n = len(lines)
    if not n:
        return Parsed.empty(len(CONLLU_COLUMNS))
    blank = np.fromiter(map(operator.not_, lines), dtype=bool, count=n)
    blank |= np.fromiter(map(str.isspace, lines), dtype=bool, count=n)
    token = ~blank
    token &= ~np.fromiter(map(str.startswith, lines, itertools.repeat("#")), dtype=bool, count=n)
    if "-DOCSTART-" in text:
        token &= ~np.fromiter(map(str.startswith, lines, itertools.repeat("-DOCSTART-")), dtype=bool,
                              count=n)
    rows = np.flatnonzero(token)
    if not len(rows):
        return Parsed.empty(len(CONLLU_COLUMNS))
    kept = _pick(lines, rows)
    tabs = np.fromiter(map(str.count, kept, itertools.repeat("\t")), dtype=np.int64, count=len(kept))
    if (tabs != 9).any():
        return None
    fields = "\t".join(kept).split("\t")
    ids = fields[0::10]
    word = np.fromiter(map(str.isdigit, ids), dtype=bool, count=len(ids))
    if not word.all():  # multi-word tokens (1-2) and empty nodes (8.1); any other ID: a closer look
        if not all("-" in i or "." in i for i in itertools.compress(ids, (~word).tolist())):
            return None
    if not word.any():  # only multi-word tokens and empty nodes: no sentence here
        return Parsed.empty(len(CONLLU_COLUMNS))
    block = np.cumsum(blank)[rows]                        # block id of every token line
    block_begin = np.r_[True, block[1:] != block[:-1]]
    first_of_block = rows[np.maximum.accumulate(np.where(block_begin, np.arange(len(rows)), 0))]
    wblock = block[word]
    begin = np.flatnonzero(np.r_[True, wblock[1:] != wblock[:-1]])
    lengths = np.diff(np.r_[begin, len(wblock)]).tolist()
    if not word.all():
        fields = list(itertools.compress(fields, np.repeat(word, 10).tolist()))
    values = [fields[i::10] for i in range(10)]
    starts_out = (first + first_of_block[word][begin]).tolist()
    return Parsed(values, lengths, starts_out, first + rows[word] if keep_lines else None)


