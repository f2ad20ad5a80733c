"""The compiled readers' Python side: pieces of bytes in, integer codes, distinct values and raw line
spans out (the kernels are in `structperc.io.read_kernels`).

Nothing here reports a bad line: where a kernel finds a piece irregular, these functions return None,
undo what the piece entered, and `structperc.io.conll` parses that piece with the line-by-line
reader, whose errors are the project's reference. Pieces parsed that way are entered into the same
tables (`Interner.add_strings`, `RawPiece.from_rows`), so a file can mix both.
"""
from __future__ import annotations

import codecs
import itertools
import os
import sys
from collections import defaultdict
from typing import IO, Sequence

import numpy as np

from structperc.compiled import loader as kernels

#: Kernel return values (`structperc.io.read_kernels`).
_DONE, _GROW, _IRREGULAR = 0, 1, 2


def _kernel(name: str):
    """The compiled kernel ``name`` or None (looked up on every call, so tests can switch it off)."""
    return kernels.aot(name)


def available() -> bool:
    """Whether the compiled reader can run (the ahead-of-time build ``structperc._aot_read`` is
    current); without it the readers keep their numpy and line-by-line paths."""
    return _kernel("scan_columns") is not None


class Interner:
    """Distinct values of some columns, shared by every piece of one file, each value decoded once.

    ``distinct[k]`` lists column ``k``'s values in order of first occurrence; a value's code is its
    index there. Backed by the compiled hash table of `structperc.io.read_kernels` when it is built,
    else by one dict per column.
    """

    def __init__(self, n_columns: int):
        self.n_columns = n_columns
        self.distinct: list[list[str]] = [[] for _ in range(n_columns)]
        self.compiled = available()
        if self.compiled:
            self.table = np.full(1 << 12, -1, dtype=np.int64)
            self.ent = np.empty((1 << 11, 6), dtype=np.int64)
            self.arena = np.empty(1 << 16, dtype=np.uint8)
            self.state = np.zeros(2 + n_columns, dtype=np.int64)
        else:
            self.index: list[defaultdict[str, int]] = [defaultdict(itertools.count().__next__)
                                                       for _ in range(n_columns)]

    # ------------------------------------------------------------ compiled table
    def reserve(self, n_bytes: int) -> None:
        """Room in the arena for ``n_bytes`` more bytes of values (each piece reserves its size)."""
        need = int(self.state[1]) + n_bytes + 1
        if need > len(self.arena):
            arena = np.empty(max(need, 2 * len(self.arena)), dtype=np.uint8)
            arena[:self.state[1]] = self.arena[:self.state[1]]
            self.arena = arena

    def grow(self) -> None:
        """Double the table (and the entry arrays), re-entering every entry."""
        n = int(self.state[0])
        table = np.full(2 * len(self.table), -1, dtype=np.int64)
        ent = np.empty((len(table) // 2, 6), dtype=np.int64)
        ent[:n] = self.ent[:n]
        _kernel("rehash")(table, ent, self.arena, n)
        self.table, self.ent = table, ent

    def snapshot(self) -> np.ndarray:
        """The counters to `rollback` to, or to `absorb` the values entered since."""
        return self.state.copy()

    def rollback(self, snap: np.ndarray) -> None:
        """Forget every entry made since ``snap`` (entries are appended, never moved or removed, so
        clearing the slots of the newer ones restores the table as it was)."""
        self.table[self.table >= snap[0]] = -1
        self.state[:] = snap

    def absorb(self, snap: np.ndarray) -> None:
        """Decode the values entered since ``snap`` (one decode and split for all of them)."""
        first, last = int(snap[0]), int(self.state[0])
        if first == last:
            return
        values = self.arena[snap[1]:self.state[1]].tobytes().decode("utf-8", "surrogatepass").split("\t")
        values.pop()  # after the last value's tab
        if len(values) != last - first:  # a value holds a tab: cut at the entries' own offsets
            arena = self.arena.tobytes()
            values = [arena[o:o + m].decode("utf-8", "surrogatepass") for o, m in self.ent[first:last, :2].tolist()]
        if self.n_columns == 1:
            self.distinct[0].extend(values)
            return
        cols = self.ent[first:last, 2]
        for k in range(self.n_columns):
            mask = cols == k
            if mask.all():
                self.distinct[k].extend(values)
            elif mask.any():
                self.distinct[k].extend(itertools.compress(values, mask.tolist()))

    # ------------------------------------------------------------ strings
    def add_strings(self, k: int, values: list[str]) -> np.ndarray:
        """Codes of Python strings (a piece the line-by-line reader parsed) in column ``k``."""
        n = len(values)
        if not self.compiled:
            index = self.index[k]
            before = len(index)
            codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=n)
            if len(index) > before:
                self.distinct[k].extend(itertools.islice(index, before, None))
            return codes
        codes = np.empty(n, dtype=np.int64)
        if not n:
            return codes
        # The spans come from each value's own length, not from the separators: a value may hold a
        # tab (a whole line read as one token), and spans found by splitting at tabs then outnumbered
        # the codes (the ahead-of-time kernel wrote past them: heap corruption).
        encoded = [v.encode("utf-8", "surrogatepass") for v in values]
        data = b"\t".join(encoded) + b"\t"
        sizes = np.fromiter(map(len, encoded), dtype=np.int64, count=n)
        end = np.cumsum(sizes + 1) - 1
        beg = end - sizes
        self.reserve(len(data))
        snap = self.snapshot()
        insert = _kernel("insert_spans")
        done = 0
        while done < n:
            done += insert(np.frombuffer(data, dtype=np.uint8), beg[done:], end[done:], k, codes[done:],
                           self.table, self.ent, self.arena, self.state)
            if done < n:
                self.grow()
        self.absorb(snap)
        return codes


class RawPiece:
    """The bytes ``data[start:stop]`` of some sentences (``data`` may be a memoryview of a memory-mapped
    file) and the spans of their token lines (``beg``/``end``, line ends excluded), ``lengths`` token
    lines per sentence, ``sep`` the byte written before an appended tag per sentence.

    Every byte of ``[start, stop)`` is written back (`RawLines.write`): the lines between token lines
    (blank lines, ``-DOCSTART-``, comments, multi-word tokens) come back where they were. ``tail`` is
    written after them: the line end a file lacks at its end, and the blank line that closes a last
    sentence the file leaves open (set by the reader on the last piece of a file)."""

    __slots__ = ("data", "start", "stop", "beg", "end", "lengths", "sep", "tail")

    def __init__(self, data: bytes | memoryview, start: int, stop: int, beg: np.ndarray, end: np.ndarray,
                 lengths: np.ndarray, sep: np.ndarray, tail: bytes = b""):
        self.data, self.start, self.stop = data, start, stop
        self.beg, self.end, self.lengths, self.sep, self.tail = beg, end, lengths, sep, tail

    @classmethod
    def from_rows(cls, data: bytes | memoryview, first: int, rows: np.ndarray, lengths, tab: bool) -> "RawPiece":
        """The piece ``data`` whose first line is line ``first`` of its file, with the token lines
        numbered ``rows`` (what the line-by-line parsers return) in sentences of ``lengths``; ``tab``:
        always a tab before an appended tag (CoNLL-U), else one where a sentence's first line holds a
        tab. The spans are found as the compiled scanner finds them: after a BOM at the start of the
        file, without the CR of a CRLF."""
        arr = np.frombuffer(data, dtype=np.uint8)
        start = 3 if first == 1 and bytes(arr[:3]) == b"\xef\xbb\xbf" else 0
        newlines = np.flatnonzero(arr == 10)
        rel = np.asarray(rows, dtype=np.int64) - first
        beg = np.r_[start, newlines + 1][rel] if len(rel) else np.zeros(0, dtype=np.int64)
        end = np.r_[newlines, len(arr)][rel] if len(rel) else np.zeros(0, dtype=np.int64)
        if len(rel):
            end = end - ((end > beg) & (arr[np.maximum(end - 1, 0)] == 13))
        lengths = np.asarray(lengths, dtype=np.int64)
        if tab:
            sep = np.full(len(lengths), 9, dtype=np.uint8)
        else:
            firsts = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64) if len(lengths) else lengths
            tabs = np.flatnonzero(arr == 9)
            has = np.searchsorted(tabs, beg[firsts]) < np.searchsorted(tabs, end[firsts])
            sep = np.where(has, 9, 32).astype(np.uint8)
        return cls(data, start, len(arr), beg.astype(np.int64), end.astype(np.int64), lengths, sep)

    def split(self, n_sentences: int) -> tuple["RawPiece", "RawPiece"]:
        """The first ``n_sentences`` sentences with the bytes up to the next sentence's first token
        line, and the rest (views of the same bytes)."""
        t = int(self.lengths[:n_sentences].sum())
        cut = int(self.beg[t]) if t < len(self.beg) else self.stop
        a = RawPiece(self.data, self.start, cut, self.beg[:t], self.end[:t], self.lengths[:n_sentences],
                     self.sep[:n_sentences])
        b = RawPiece(self.data, cut, self.stop, self.beg[t:], self.end[t:], self.lengths[n_sentences:],
                     self.sep[n_sentences:], self.tail)
        return a, b

    def tolist(self) -> list[list[str]]:
        """The token lines as str, one list per sentence."""
        data = self.data
        lines = [str(data[b:e], "utf-8") for b, e in zip(self.beg.tolist(), self.end.tolist())]
        ends = np.cumsum(self.lengths).tolist()
        return [lines[a:b] for a, b in zip([0] + ends[:-1], ends)]

    def closed(self, blank) -> bool:
        """Whether a line after the last token line is blank (``blank(line)``), i.e. the piece's last
        sentence is closed; true for a piece without token lines."""
        if not len(self.end):
            return True
        gap = bytes(self.data[int(self.end[-1]):self.stop]).decode("utf-8", "surrogateescape")
        lines = gap.split("\n")[1:]  # the lines after the last token line
        if lines and lines[-1] == "":
            lines.pop()  # after the final line end: no line
        return any(blank(line) for line in lines)


class RawLines:
    """The raw lines of a corpus, sentence by sentence, kept as bytes (no str per line): what
    `write_tagged` puts the predicted tags into."""

    def __init__(self, pieces: Sequence[RawPiece] = ()):
        self.pieces = list(pieces)

    def __len__(self) -> int:
        return sum(len(p.lengths) for p in self.pieces)

    def n_bytes(self) -> int:
        """Bytes of input these lines cover (zero: nothing to write back)."""
        return sum(p.stop - p.start + len(p.tail) for p in self.pieces)

    def tolist(self) -> list[list[str]]:
        """The token lines as the line-by-line reader returns them (one list of str per sentence)."""
        return [block for p in self.pieces for block in p.tolist()]

    def take(self, n: int) -> "RawLines":
        """Split off the first ``n`` sentences (returned) with the bytes up to the next sentence;
        ``self`` keeps the rest."""
        head = []
        while n > 0 and self.pieces:
            p = self.pieces[0]
            if len(p.lengths) <= n:
                head.append(self.pieces.pop(0))
                n -= len(p.lengths)
            else:
                a, self.pieces[0] = p.split(n)
                head.append(a)
                n = 0
        return RawLines(head)

    def write(self, out: IO[str], tags: Sequence[str], field: int = -1) -> None:
        """Write the lines back with the tags (``tags`` flat, in order) put into the token lines:
        appended after the sentence's separator, or in place of tab-separated field ``field`` (see
        `structperc.io.read_kernels.write_tagged`, whose Python twin is `_join_python`)."""
        n_lines = sum(len(p.beg) for p in self.pieces)
        if len(tags) != n_lines:  # checked before any kernel writes: sizes below come from both
            raise ValueError(f"{len(tags)} tags for {n_lines} lines")
        # one pass over the tags: each new tag gets the next code
        index: defaultdict[str, int] = defaultdict(itertools.count().__next__)
        codes = np.fromiter(map(index.__getitem__, tags), dtype=np.int64, count=len(tags))
        labels = list(index)
        encoded = [t.encode("utf-8", "surrogatepass") for t in labels]
        lab_len = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        lab_off = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(lab_len, out=lab_off[1:])
        lab = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8)
        writer = _kernel("write_tagged")
        sizes, t = [], 0
        for p in self.pieces:
            c = codes[t:t + len(p.beg)]
            t += len(p.beg)
            _check_spans(p)
            sizes.append(p.stop - p.start + len(c) + int(lab_len[c].sum()))
        buf = np.empty(max(sizes, default=0), dtype=np.uint8)  # one buffer: its pages fault in once
        t = 0
        for p in self.pieces:
            c = codes[t:t + len(p.beg)]
            t += len(p.beg)
            if writer is not None:
                used = writer(np.frombuffer(p.data or b"\0", dtype=np.uint8), p.start, p.stop, p.beg, p.end,
                              p.lengths, p.sep, field, c, lab, lab_off, buf)
                _write_bytes(out, buf[:used])
            else:
                _write_bytes(out, _join_python(p, [encoded[i] for i in c.tolist()], field))
            if p.tail:
                _write_bytes(out, p.tail)


def _check_spans(p: RawPiece) -> None:
    """What `write_tagged` relies on: spans in order inside ``[start, stop)`` of the data, one
    separator per sentence, as many spans as the sentences hold (the kernel does not check)."""
    n = len(p.beg)
    ok = (0 <= p.start <= p.stop <= len(p.data) and len(p.end) == n and len(p.sep) == len(p.lengths)
          and int(p.lengths.sum()) == n and (n == 0 or int(p.lengths.min()) >= 0))
    if ok and n:
        ok = bool(p.beg[0] >= p.start and p.end[-1] <= p.stop and (p.beg <= p.end).all()
                  and (p.end[:-1] <= p.beg[1:]).all())
    if not ok:
        raise ValueError("raw line spans out of order or outside their piece")


def _gap_python(data, a: int, b: int) -> bytes:
    """`read_kernels._copy_gap`: ``data[a:b]`` with CRLF as LF (and a CR that ends ``data`` dropped)."""
    gap = bytes(data[a:b]).replace(b"\r\n", b"\n")
    if b == len(data) and gap.endswith(b"\r"):
        gap = gap[:-1]
    return gap


def _join_python(p: RawPiece, tags: list[bytes], field: int = -1) -> bytes:
    """`read_kernels.write_tagged` in Python (without the compiled build)."""
    parts = []
    data = p.data
    pos, t = p.start, 0
    for n, sep in zip(p.lengths.tolist(), p.sep.tolist()):
        s = bytes([sep if field < 0 else 9])
        for b, e, tag in zip(p.beg[t:t + n].tolist(), p.end[t:t + n].tolist(), tags[t:t + n]):
            parts.append(_gap_python(data, pos, b))
            line = bytes(data[b:e])
            fields = line.split(b"\t")
            if 0 <= field < len(fields):
                fields[field] = tag
                parts.append(b"\t".join(fields))
            else:
                parts.append(line + s + tag)
            pos = e
        t += n
    parts.append(_gap_python(data, pos, p.stop))
    return b"".join(parts)


def _write_bytes(out: IO[str], data) -> None:
    """Write UTF-8 bytes to a text stream: straight to its byte buffer when that writes the same
    bytes (UTF-8, no newline translation), else decoded."""
    buffer = getattr(out, "buffer", None)
    encoding = getattr(out, "encoding", None)
    if buffer is not None and encoding and os.linesep == "\n" and \
            codecs.lookup(encoding).name == "utf-8":
        out.flush()
        buffer.write(data)
    else:
        out.write(bytes(data).decode("utf-8", "surrogatepass"))


def _aligned_words(arr: np.ndarray) -> tuple[np.ndarray, int]:
    """``arr[lead:]`` viewed as aligned uint64 words, and ``lead`` (< 8); no words on a big-endian
    machine (the kernel then assembles every word from bytes)."""
    if sys.byteorder != "little":
        return np.zeros(0, dtype=np.uint64), 0
    lead = -arr.__array_interface__["data"][0] % 8
    count = max(len(arr) - lead, 0) // 8
    return arr[lead:lead + 8 * count].view(np.uint64), lead


class Scanned:
    """What a kernel made of one piece: codes per wanted column, sentences, raw line spans."""

    __slots__ = ("codes", "lengths", "lines", "raw", "width", "n_lines")

    def __init__(self, codes, lengths, lines, raw, width, n_lines):
        self.codes, self.lengths, self.lines, self.raw = codes, lengths, lines, raw
        self.width, self.n_lines = width, n_lines


def scan_piece(fmt: str, first: int, data: bytes | memoryview, want: Sequence[int], interner: Interner,
               keep_lines: bool, width: int = -1) -> Scanned | None:
    """Scan one piece (``fmt`` "conllu" or "columns"; ``first``: number of its first line) with the
    compiled kernels; None if it is irregular (nothing of it stays in ``interner``).

    ``width`` is the number of fields per line of the file's earlier pieces (-1: none seen yet).
    """
    arr = np.frombuffer(data, dtype=np.uint8)
    begin = 3 if first == 1 and bytes(data[:3]) == b"\xef\xbb\xbf" else 0
    # a token per line at most; an exact bound, not len(data) / 2: numpy asks for transparent huge
    # pages on large arrays, so touching the start of a loosely sized array makes 2 MiB resident
    newlines = _kernel("count_byte")(arr, 10)
    cap = newlines + 1
    nw = len(want)
    codes = np.empty((nw, cap), dtype=np.int64)
    sent_len = np.empty(cap, dtype=np.int64)
    sent_line = np.empty(cap, dtype=np.int64)
    sent_tab = np.empty(cap, dtype=np.uint8)
    beg = np.empty(cap if keep_lines else 0, dtype=np.int64)
    end = np.empty(cap if keep_lines else 0, dtype=np.int64)
    scan = np.zeros(16, dtype=np.int64)
    scan[0] = begin
    scan[4] = -1
    scan[6] = int(keep_lines)
    scan[7] = width
    want_arr = np.asarray(want, dtype=np.int64)
    if fmt == "conllu":
        words, lead = _aligned_words(arr)
    interner.reserve(len(data))
    snap = interner.snapshot()
    while True:
        if fmt == "conllu":
            status = _kernel("scan_conllu")(arr, words, lead, want_arr, codes, beg, end, sent_len,
                                           sent_line, scan, interner.table, interner.ent,
                                           interner.arena, interner.state, newlines=newlines)
        else:
            status = _kernel("scan_columns")(arr, want_arr, codes, beg, end, sent_len, sent_line,
                                            sent_tab, scan, interner.table, interner.ent,
                                            interner.arena, interner.state, newlines=newlines)
        if status != _GROW:
            break
        interner.grow()
    if status != _DONE:
        interner.rollback(snap)
        return None
    interner.absorb(snap)
    ntok, nsent = int(scan[2]), int(scan[3])
    lengths = sent_len[:nsent]
    raw = None
    if keep_lines:
        sep = np.full(nsent, 9, dtype=np.uint8) if fmt == "conllu" else sent_tab[:nsent].copy()
        sep[sep == 1] = 9
        sep[sep == 0] = 32
        raw = RawPiece(data, begin, len(arr), beg[:ntok], end[:ntok], lengths, sep)
    return Scanned([codes[k, :ntok] for k in range(nw)], lengths, first + sent_line[:nsent], raw,
                   int(scan[7]), int(scan[1]))
