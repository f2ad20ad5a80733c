"""CoNLL column files and CoNLL-U: the readers every tagging task starts from.

Errors name the file and line: a user with a 200,000-line corpus needs to know where the bad line is.
"""
from __future__ import annotations

import gzip
import zlib
import io
import itertools
import mmap
import operator
import os
import re
import sys
from typing import IO, Any, Collection, Iterable, Iterator, Sequence

import numpy as np

from structperc.corpus.columns import Corpus, compact
from structperc.corpus.scan import Interner, RawLines, RawPiece, scan_piece
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


def _open_binary(path) -> tuple[str, IO[bytes], bool]:
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


def _read_bytes(stream, name: str) -> bytes:
    try:
        piece = stream.read(_PIECE)
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise InputError(f"cannot read: {exc}", name) from None
    return piece.encode("utf-8") if isinstance(piece, str) else piece


def read_pieces(path: str | os.PathLike | IO) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(number_of_first_line, lines)`` for successive pieces of a text file.

    Bytes are read and decoded a few MiB at a time: decoding and splitting whole pieces in C is
    several times faster than a Python loop over lines, and memory stays bounded.
    """
    name, stream, owned = _open_binary(path)
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
            lines = _lines(piece, name, number)
            yield number + 1, lines
            number += len(lines)
        if rest:
            yield number + 1, _lines(rest + b"\n", name, number)
    finally:
        if owned:
            stream.close()


def read_sentence_pieces(path: str | os.PathLike | IO, counted: list[int] | None = None) \
        -> Iterator[tuple[int, bytes]]:
    """Yield ``(number_of_first_line, bytes)`` pieces of a few MiB that each end at a blank line.

    Cut between sentences, every piece can be parsed on its own (`_ColumnParser.parse_piece`).
    A consumer that counted a piece's lines anyway (the compiled scanner does) may append that
    number to ``counted`` before asking for the next piece, which saves counting them again.
    """
    name, stream, owned = _open_binary(path)
    number = 0
    try:
        piece = _read_bytes(stream, name)
        searched = 0  # no blank line before this offset of piece
        while piece:
            ahead = _read_bytes(stream, name)
            if not ahead:  # the last piece, whole: no copy of it to cut a few bytes off
                yield number + 1, piece if piece.endswith(b"\n") else piece + b"\n"
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


def _mapped_pieces(path, counted: list[int]) -> Iterator[tuple[int, bytes | memoryview]]:
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


def _piece_bytes(data: bytes | memoryview) -> bytes:
    """A piece as the line-by-line parsers take it: bytes ending with a newline."""
    data = bytes(data)
    return data if data.endswith(b"\n") else data + b"\n"


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
    numbered = (item for start, lines in read_pieces(path) for item in enumerate(lines, start))
    return _blocks(numbered, skip_comments)


def _blocks(numbered: Iterable[tuple[int, str]], skip_comments: bool) -> Iterator[tuple[int, list[str]]]:
    block: list[str] = []
    first = 0
    for number, line in numbered:
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


#: ASCII whitespace as ``bytes.split()`` sees it; ``str.split()`` also splits at these others, so a
#: piece holding any of them takes the line-by-line path (same fields as before, just slower).
_WS_BYTES = np.zeros(256, dtype=bool)
_WS_BYTES[[9, 10, 11, 12, 13, 32]] = True
_OTHER_WS = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_DOCSTART = re.compile(rb"^-DOCSTART-", re.M)


def _source_name(path) -> str:
    if hasattr(path, "read"):
        return getattr(path, "name", "<stream>")
    return "<stdin>" if str(path) == "-" else str(path)


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


def _split_by_lengths(items: list, lengths: list[int]) -> list[list]:
    """Consecutive slices of ``items`` with the given lengths (raw lines per sentence)."""
    ends = np.cumsum(lengths).tolist()
    return [items[a:b] for a, b in zip([0] + ends[:-1], ends)]


class _ColumnParser:
    """Parses pieces of a CoNLL column file, checking that every line has the same width (the
    fallback of the compiled scanner, see `_LeanReader`).

    Pieces are parsed whole where they are regular (the usual case): one ``str.split`` over the piece
    for the fields and numpy over its bytes for the fields per line, blank lines and ``-DOCSTART-``
    lines, so no Python code runs per token. Anything irregular (bad UTF-8, a line of another width,
    exotic whitespace) goes through the line-by-line parser instead, which names the bad line.
    """

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

    def _first_width(self, width: int, line: int) -> None:
        lo = len(self.columns) - self.n_opt
        if not lo <= width <= len(self.columns):
            expect = f"{lo} to {len(self.columns)}" if self.n_opt else f"{lo}"
            raise InputError(f"expected {expect} columns ({' '.join(self.columns)}), found "
                             f"{width}", self.name, line)
        self.width = width

    def parse_piece(self, first: int, data: bytes, keep_lines: bool) -> "_Parsed":
        """Parse one piece that ends at a sentence break; ``first`` is its first line's number."""
        fast = self._parse_fast(first, data, keep_lines)
        if fast is not None:
            return fast
        lines = _lines(data, self.name, first - 1)
        return self.parse_blocks(_blocks(enumerate(lines, first), False), keep_lines)

    def _parse_fast(self, first: int, data: bytes, keep_lines: bool) -> "_Parsed | None":
        decoded = _decoded_piece(first, data)
        if decoded is None:
            return None
        data, text = decoded
        if not data.isascii() and _OTHER_WS.search(text):
            return None
        arr = np.frombuffer(data, dtype=np.uint8)
        if ((arr - np.uint8(0x1c)) < 4).any():  # \x1c-\x1f: whitespace to str.split, not to bytes
            return None
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
            return _Parsed.empty(len(self.columns))
        widths = counts[rows]
        if self.width is None:
            self._first_width(int(widths[0]), first + int(rows[0]))
        width = self.width
        if (widths != width).any():
            return None
        fields = text.split()
        if skipped:
            fields = list(itertools.compress(fields, np.repeat(token, counts).tolist()))
        values = [fields[i::width] for i in range(width)]
        sentence = np.cumsum(blank)[rows]
        begin = np.flatnonzero(np.r_[True, sentence[1:] != sentence[:-1]])
        lengths = np.diff(np.r_[begin, len(rows)]).tolist()
        raw = None
        if keep_lines:
            raw = _split_by_lengths(_pick(text.split("\n"), rows), lengths)
        return _Parsed(values, lengths, (first + rows[begin]).tolist(), raw)

    def parse_blocks(self, blocks: Iterable[tuple[int, list[str]]], keep_lines: bool) -> "_Parsed":
        """The line-by-line parser over blank-line separated blocks."""
        values: list[list[str]] = [[] for _ in self.columns]
        lengths: list[int] = []
        starts: list[int] = []
        raw: list[list[str]] = []
        for first, block in blocks:
            rows = [line.split() for line in block]
            widths = set(map(len, rows))
            if self.width is None:
                self._first_width(len(rows[0]), first)
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
        return _Parsed(values, lengths, starts, raw if keep_lines else None)


class _Parsed:
    """Columns, sentence lengths, first line numbers and (optionally) raw lines of some sentences."""

    __slots__ = ("values", "lengths", "starts", "raw")

    def __init__(self, values, lengths, starts, raw):
        self.values, self.lengths, self.starts, self.raw = values, lengths, starts, raw

    @classmethod
    def empty(cls, n_columns: int) -> "_Parsed":
        return cls([[] for _ in range(n_columns)], [], [], [])


class _Part:
    """Sentences of one or more pieces: codes of the wanted columns, lengths, first lines, raw lines
    (a `RawLines` when kept as bytes, a list of lists of str otherwise, None when not kept)."""

    __slots__ = ("codes", "lengths", "starts", "raw")

    def __init__(self, codes: list[np.ndarray], lengths: np.ndarray, starts: np.ndarray, raw):
        self.codes, self.lengths, self.starts, self.raw = codes, lengths, starts, raw

    def __len__(self) -> int:
        return len(self.lengths)


class _LeanReader:
    """Reads a file piece by piece into integer codes of the wanted columns and their distinct values
    (`Interner`), so no str per token is ever kept.

    Each piece goes through the compiled scanner of `structperc.corpus.scan` when it is built and the
    piece is regular; otherwise through the fast numpy path or the line-by-line parser (which raise
    the errors), whose values are then entered into the same tables.
    """

    def __init__(self, path, fmt: str, names: list[str], want: list[int], keep_lines: bool,
                 parser: "_ColumnParser | None" = None):
        self.path, self.fmt, self.names, self.want = path, fmt, names, want
        self.keep_lines, self.parser = keep_lines, parser
        self.name = parser.name if parser is not None else _source_name(path)
        self.interner = Interner(len(want))
        self.raw_as_bytes = keep_lines and self.interner.compiled
        self.chunks_made = 0

    def parts(self) -> Iterator[_Part]:
        counted: list[int] = []
        for first, data in _mapped_pieces(self.path, counted):
            yield self._piece(first, data, counted)

    def _piece(self, first: int, data: bytes | memoryview, counted: list[int]) -> _Part:
        parser = self.parser
        if self.interner.compiled:
            width = parser.width if parser is not None and parser.width is not None else -1
            got = scan_piece(self.fmt, first, data, self.want, self.interner, self.keep_lines, width)
            if got is not None:
                counted.append(got.n_lines)
                if parser is not None and parser.width is None and got.width >= 0:
                    parser._first_width(got.width, int(got.lines[0]))
                raw = RawLines([got.raw]) if self.keep_lines else None
                return _Part(got.codes, got.lengths, got.lines, raw)
        data = _piece_bytes(data)
        if self.fmt == "conllu":
            parsed = _conllu_fast(first, data, self.keep_lines)
            if parsed is None:  # irregular: line by line, naming the bad line
                lines = _lines(data, self.name, first - 1)
                parsed = _conllu_blocks(_blocks(enumerate(lines, first), True), self.name,
                                        self.keep_lines)
        else:
            parsed = parser.parse_piece(first, data, self.keep_lines)
        # past the file's width (an absent optional column) the numpy path has no list at all
        codes = [self.interner.add_strings(k, parsed.values[j] if j < len(parsed.values) else [])
                 for k, j in enumerate(self.want)]
        raw = None
        if self.keep_lines:
            raw = RawLines([RawPiece.from_lists(parsed.raw or [])]) if self.raw_as_bytes \
                else (parsed.raw or [])
        return _Part(codes, np.asarray(parsed.lengths, dtype=np.int64),
                     np.asarray(parsed.starts, dtype=np.int64), raw)

    # ------------------------------------------------------------ assembling
    def empty(self) -> _Part:
        raw = (RawLines() if self.raw_as_bytes else []) if self.keep_lines else None
        return _Part([[] for _ in self.want], [], [], raw)

    @staticmethod
    def extend(into: _Part, part: _Part) -> None:
        """Append ``part`` to ``into`` (whose fields are lists of arrays until `merge`)."""
        for store, codes in zip(into.codes, part.codes):
            store.append(codes)
        into.lengths.append(part.lengths)
        into.starts.append(part.starts)
        if part.raw is not None:
            if isinstance(into.raw, RawLines):
                into.raw.pieces.extend(part.raw.pieces)
            else:
                into.raw.extend(part.raw)

    @staticmethod
    def merge(part: _Part) -> _Part:
        def cat(arrays):
            if not arrays:
                return np.zeros(0, dtype=np.int64)
            return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        return _Part([cat(c) for c in part.codes], cat(part.lengths), cat(part.starts), part.raw)

    @staticmethod
    def take(part: _Part, n: int) -> _Part:
        """Split the first ``n`` sentences off a merged part (returned); ``part`` keeps the rest."""
        t = int(part.lengths[:n].sum())
        if isinstance(part.raw, RawLines):
            raw = part.raw.take(n)
        elif part.raw is not None:
            raw, part.raw = part.raw[:n], part.raw[n:]
        else:
            raw = None
        head = _Part([c[:t] for c in part.codes], part.lengths[:n], part.starts[:n], raw)
        part.codes = [c[t:] for c in part.codes]
        part.lengths, part.starts = part.lengths[n:], part.starts[n:]
        return head

    def corpus(self, part: _Part) -> Corpus:
        """A `Corpus` of a merged part, its columns handed over as codes (`Corpus.from_codes`)."""
        width = self.parser.width if self.parser is not None else None
        coded: dict[str, tuple[list[str], np.ndarray]] = {}
        for k, (name, j) in enumerate(zip(self.names, self.want)):
            if width is not None and j >= width:
                continue  # an optional column the file does not have
            distinct, codes = self.interner.distinct[k], part.codes[k]
            if self.chunks_made:  # later chunks use some of the values: number them afresh
                distinct, codes = compact(distinct, codes)
            elif len(distinct) != (int(codes.max()) + 1 if len(codes) else 0):
                # the first chunk uses a prefix of the values, in order of first occurrence
                distinct = distinct[:int(codes.max()) + 1 if len(codes) else 0]
            coded[name] = (distinct, codes)
        self.chunks_made += 1
        ptr = np.zeros(len(part.lengths) + 1, dtype=np.int64)
        np.cumsum(part.lengths, out=ptr[1:])
        return Corpus.from_codes(coded, ptr, self.name, np.asarray(part.starts, dtype=np.int64))

    def read_all(self) -> tuple[Corpus, Any]:
        whole = self.empty()
        for part in self.parts():
            self.extend(whole, part)
        whole = self.merge(whole)
        if not len(whole.lengths):
            raise InputError("no sentences (the file is empty)", self.name)
        return self.corpus(whole), whole.raw

    def chunks(self, sentences: int) -> Iterator[tuple[Corpus, Any]]:
        pending = self.merge(self.empty())
        pending.raw = self.empty().raw
        for part in self.parts():
            acc = self.empty()
            self.extend(acc, pending)
            self.extend(acc, part)
            pending = self.merge(acc)
            while len(pending) >= sentences:
                head = self.take(pending, sentences)
                yield self.corpus(head), head.raw
        if len(pending):
            yield self.corpus(pending), pending.raw


def _column_reader(path, columns: Sequence[str], optional: Sequence[str], keep_lines: bool,
                   only: Collection[str] | None) -> _LeanReader:
    parser = _ColumnParser(_source_name(path), columns, optional)
    want = [j for j, c in enumerate(parser.columns) if c != "_" and (only is None or c in only)]
    return _LeanReader(path, "columns", [parser.columns[j] for j in want], want, keep_lines, parser)


def _as_lists(raw) -> list[list[str]]:
    return raw.tolist() if isinstance(raw, RawLines) else (raw or [])


def read_conll(
    path,
    columns: Sequence[str],
    *,
    optional: Sequence[str] = (),
    keep_lines: bool = False,
    only: Collection[str] | None = None,
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
    only : collection of str, optional
        Read just these columns (the others are checked, as any column is, but hold no values).

    Examples
    --------
    >>> import io
    >>> c = read_conll(io.BytesIO(b"He PRP B-NP\\nran VBD B-VP\\n\\n"), ["word", "pos", "chunk"])
    >>> c.columns["chunk"]
    ['B-NP', 'B-VP']
    """
    corpus, raw = _column_reader(path, columns, optional, keep_lines, only).read_all()
    return (corpus, _as_lists(raw)) if keep_lines else corpus


def iter_conll_chunks(path, columns: Sequence[str], *, optional: Sequence[str] = (),
                      sentences: int = 2000) -> Iterator[tuple[Corpus, list[list[str]]]]:
    """Read a CoNLL file in pieces of ``sentences`` sentences (with raw lines): bounded memory."""
    for corpus, raw in _column_reader(path, columns, optional, True, None).chunks(sentences):
        yield corpus, _as_lists(raw)


def read_conllu(path, *, keep_lines: bool = False, columns: Collection[str] | None = None) \
        -> Corpus | tuple[Corpus, list[list[str]]]:
    """Read CoNLL-U words (FORM, UPOS, XPOS, …), skipping comments, multi-word tokens and empty nodes.

    Columns are named as in `CONLLU_COLUMNS` (``word`` for FORM); ``columns`` keeps only those (the
    others are never turned into strings).
    """
    corpus, raw = _conllu_reader(path, keep_lines, columns).read_all()
    return (corpus, _as_lists(raw)) if keep_lines else corpus


def _conllu_reader(path, keep_lines: bool, columns: Collection[str] | None) -> _LeanReader:
    want = [j for j, c in enumerate(CONLLU_COLUMNS) if columns is None or c in columns]
    return _LeanReader(path, "conllu", [CONLLU_COLUMNS[j] for j in want], want, keep_lines)


def iter_tagging_chunks(path, columns: Sequence[str], *, optional: Sequence[str] = (),
                        only: Collection[str] | None = None, sentences: int = 20_000) \
        -> Iterator[tuple[Corpus, "RawLines | list[list[str]]"]]:
    """What `structperc tag` reads: ``(corpus, raw lines)`` of CoNLL-U (all of it at once) or of CoNLL
    columns (``sentences`` at a time), with only the columns in ``only`` and the raw lines kept as
    bytes where the compiled reader runs (see `write_tagged`)."""
    if is_conllu(getattr(path, "name", path)):  # a stream is told by its name, as a path is
        yield _conllu_reader(path, True, only).read_all()
    else:
        yield from _column_reader(path, columns, optional, True, only).chunks(sentences)


def _conllu_blocks(blocks: Iterable[tuple[int, list[str]]], name: str, keep_lines: bool) -> "_Parsed":
    out = _Parsed.empty(len(CONLLU_COLUMNS))
    for first, block in blocks:
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
        for store, column in zip(out.values, zip(*rows)):
            store.extend(column)
        if block:
            out.lengths.append(len(block))
            out.starts.append(first)
            if keep_lines:
                out.raw.append(block)
    return out


def _conllu_fast(first: int, data: bytes, keep_lines: bool) -> "_Parsed | None":
    """`_conllu_blocks` for a regular piece: one C-level pass per question over the piece's lines
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
        return _Parsed.empty(len(CONLLU_COLUMNS))
    blank = np.fromiter(map(operator.not_, lines), dtype=bool, count=n)
    blank |= np.fromiter(map(str.isspace, lines), dtype=bool, count=n)
    token = ~blank
    token &= ~np.fromiter(map(str.startswith, lines, itertools.repeat("#")), dtype=bool, count=n)
    if "-DOCSTART-" in text:
        token &= ~np.fromiter(map(str.startswith, lines, itertools.repeat("-DOCSTART-")), dtype=bool,
                              count=n)
    rows = np.flatnonzero(token)
    if not len(rows):
        return _Parsed.empty(len(CONLLU_COLUMNS))
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
        return _Parsed.empty(len(CONLLU_COLUMNS))
    block = np.cumsum(blank)[rows]                        # block id of every token line
    block_begin = np.r_[True, block[1:] != block[:-1]]
    first_of_block = rows[np.maximum.accumulate(np.where(block_begin, np.arange(len(rows)), 0))]
    wblock = block[word]
    begin = np.flatnonzero(np.r_[True, wblock[1:] != wblock[:-1]])
    lengths = np.diff(np.r_[begin, len(wblock)]).tolist()
    if not word.all():
        keep = word.tolist()
        kept = list(itertools.compress(kept, keep))
        fields = list(itertools.compress(fields, np.repeat(word, 10).tolist()))
    values = [fields[i::10] for i in range(10)]
    raw = None
    if keep_lines:
        raw = _split_by_lengths(kept, lengths)
    starts_out = (first + first_of_block[word][begin]).tolist()
    return _Parsed(values, lengths, starts_out, raw)


def is_conllu(path) -> bool:
    """Whether a file name says CoNLL-U (``.conllu`` or ``.conllu.gz``)."""
    return str(path).endswith((".conllu", ".conllu.gz"))


def read_corpus(path, columns: Sequence[str] | None, *, optional: Sequence[str] = (),
                keep_lines: bool = False, only: Collection[str] | None = None):
    """Read CoNLL-U when the file name says so, else CoNLL columns named by ``columns``; with
    ``only``, just those columns (a model that reads two of CoNLL-U's ten holds codes for two)."""
    if is_conllu(path):
        return read_conllu(path, keep_lines=keep_lines, columns=only)
    if not columns:
        raise InputError("name the columns (e.g. --columns word,pos,chunk)", _source_name(path))
    return read_conll(path, columns, optional=optional, keep_lines=keep_lines, only=only)


def write_tagged(out: IO[str], lines: "RawLines | Sequence[Sequence[str]]", tags: Sequence[str]) -> None:
    """`write_conll` with the tags flat (corpus order), for the raw lines of `iter_tagging_chunks`:
    bytes kept by the compiled reader are written with the tags appended by a kernel, no str per line."""
    if isinstance(lines, RawLines):
        lines.write(out, tags)
        return
    ends = np.cumsum([len(block) for block in lines]).tolist()
    write_conll(out, lines, (tags[a:b] for a, b in zip([0] + ends[:-1], ends)))


def write_conll(out: IO[str], lines: Iterable[Sequence[str]], predictions: Iterable[Sequence[str]],
                sep: str | None = None) -> None:
    """Write each input line with its predicted tag appended as a new last column."""
    if isinstance(lines, RawLines):
        lines = lines.tolist()
    parts = []
    for block, tags in zip(lines, predictions):
        s = sep if sep is not None else ("\t" if "\t" in block[0] else " ")
        parts.append("".join(f"{line}{s}{tag}\n" for line, tag in zip(block, tags)))
    out.write("\n".join(parts) + "\n" if parts else "")

