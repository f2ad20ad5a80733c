"""CoNLL column files and CoNLL-U: the readers every tagging task starts from.

Errors name the file and line: a user with a 200,000-line corpus needs to know where the bad line is.
"""
from __future__ import annotations

from typing import IO, Any, Collection, Iterable, Iterator, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.io.corpus import Corpus, compact
from structperc.io.parse import CONLLU_COLUMNS, ColumnParser, ReadPart, conllu_blocks, conllu_fast, split_fields
from structperc.io.scan import Interner, RawLines, RawPiece, scan_piece
from structperc.io.text import (
    ASCII_WS,
    count_lines,
    decode_lines,
    line_blocks,
    mapped_pieces,
    open_text_lines,
    piece_bytes,
    source_name,
)


class _LeanReader:
    """Reads a file piece by piece into integer codes of the wanted columns and their distinct values
    (`Interner`), so no str per token is ever kept.

    Each piece goes through the compiled scanner of `structperc.io.scan` when it is built and the
    piece is regular; otherwise through the fast numpy path or the line-by-line parser (which raise
    the errors), whose values are then entered into the same tables. With ``keep_lines`` the raw
    lines are kept as spans of the pieces' bytes (`RawLines`), whichever path read them.
    """

    def __init__(self, path, fmt: str, names: list[str], want: list[int], keep_lines: bool,
                 parser: "ColumnParser | None" = None):
        self.path, self.fmt, self.names, self.want = path, fmt, names, want
        self.keep_lines, self.parser = keep_lines, parser
        self.name = parser.name if parser is not None else source_name(path)
        self.interner = Interner(len(want))
        self.chunks_made = 0
        self.n_lines = 0

    def parts(self) -> Iterator[ReadPart]:
        counted: list[int] = []
        for first, data in mapped_pieces(self.path, counted):
            yield self._piece(first, data, counted)

    def _piece(self, first: int, data: bytes | memoryview, counted: list[int]) -> ReadPart:
        parser = self.parser
        if self.interner.compiled:
            width = parser.width if parser is not None and parser.width is not None else -1
            got = scan_piece(self.fmt, first, data, self.want, self.interner, self.keep_lines, width)
            if got is not None:
                counted.append(got.n_lines)
                self.n_lines += got.n_lines
                if parser is not None and parser.width is None and got.width >= 0:
                    parser._first_width(got.width, int(got.lines[0]))
                raw = RawLines([got.raw]) if self.keep_lines else None
                return ReadPart(got.codes, got.lengths, got.lines, raw)
        original = data
        data = piece_bytes(data)
        self.n_lines += count_lines(first, original)
        if self.fmt == "conllu":
            parsed = conllu_fast(first, data, self.keep_lines)
            if parsed is None:  # irregular: line by line, naming the bad line
                lines = decode_lines(data, self.name, first - 1)
                parsed = conllu_blocks(line_blocks(enumerate(lines, first), True), self.name,
                                       self.keep_lines)
        else:
            assert parser is not None  # column files always come with their parser (`_column_reader`)
            parsed = parser.parse_piece(first, data, self.keep_lines)
        # past the file's width (an absent optional column) the numpy path has no list at all
        codes = [self.interner.add_strings(k, parsed.values[j] if j < len(parsed.values) else [])
                 for k, j in enumerate(self.want)]
        raw = None
        if self.keep_lines:
            raw = RawLines([RawPiece.from_rows(original, first, parsed.rows, parsed.lengths,
                                               self.fmt == "conllu")])
        return ReadPart(codes, np.asarray(parsed.lengths, dtype=np.int64),
                        np.asarray(parsed.starts, dtype=np.int64), raw)

    # ------------------------------------------------------------ assembling
    def empty(self) -> ReadPart:
        # an accumulator for `extend`: its fields are lists of arrays until `merge`
        codes: list[Any] = [[] for _ in self.want]
        lengths: Any = []
        starts: Any = []
        return ReadPart(codes, lengths, starts, RawLines() if self.keep_lines else None)

    @staticmethod
    def extend(into: ReadPart, part: ReadPart) -> None:
        """Append ``part`` to ``into`` (whose fields are lists of arrays until `merge`)."""
        acc: Any = into  # typed as the merged part it becomes; its fields are lists until then
        for store, codes in zip(acc.codes, part.codes):
            store.append(codes)
        acc.lengths.append(part.lengths)
        acc.starts.append(part.starts)
        if part.raw is not None:
            acc.raw.pieces.extend(part.raw.pieces)

    @staticmethod
    def merge(part: ReadPart) -> ReadPart:
        def cat(arrays):
            if not arrays:
                return np.zeros(0, dtype=np.int64)
            return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
        return ReadPart([cat(c) for c in part.codes], cat(part.lengths), cat(part.starts), part.raw)

    @staticmethod
    def take(part: ReadPart, n: int) -> ReadPart:
        """Split the first ``n`` sentences off a merged part (returned); ``part`` keeps the rest."""
        t = int(part.lengths[:n].sum())
        raw = part.raw.take(n) if part.raw is not None else None
        head = ReadPart([c[:t] for c in part.codes], part.lengths[:n], part.starts[:n], raw)
        part.codes = [c[t:] for c in part.codes]
        part.lengths, part.starts = part.lengths[n:], part.starts[n:]
        return head

    def corpus(self, part: ReadPart) -> Corpus:
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

    def no_sentences(self) -> InputError:
        """The error for a file without a sentence, saying what it holds instead."""
        n = self.n_lines
        if not n:
            return InputError("no sentences (the file is empty)", self.name)
        what = "blank, # comments, -DOCSTART-, multi-word tokens or empty nodes" if self.fmt == "conllu" \
            else "blank or -DOCSTART-"
        return InputError(f"no sentences: {n} line{'s' if n != 1 else ''}, all {what}", self.name)

    def read_all(self) -> tuple[Corpus, Any]:
        whole = self.empty()
        for part in self.parts():
            self.extend(whole, part)
        whole = self.merge(whole)
        if not len(whole.lengths):
            raise self.no_sentences()
        return self.corpus(whole), whole.raw

    def chunks(self, sentences: int, every_line: bool = False) -> Iterator[tuple[Corpus, Any]]:
        """The sentences ``sentences`` at a time. With ``every_line`` the last chunk's raw lines end
        the file as `RawPiece.tail` says, and a file without sentences still gives one chunk (of
        none) if it holds any byte, so that every line is written back."""
        pending = self.merge(self.empty())
        pending.raw = self.empty().raw
        for part in self.parts():
            acc = self.empty()
            self.extend(acc, pending)
            self.extend(acc, part)
            pending = self.merge(acc)
            while len(pending) > sentences:  # keep the last sentence: the file's end is not known yet
                head = self.take(pending, sentences)
                yield self.corpus(head), head.raw
        if every_line and pending.raw is not None and pending.raw.pieces:
            self._end_of_file(pending.raw.pieces[-1])
        if len(pending) or (every_line and pending.raw is not None and pending.raw.n_bytes()):
            yield self.corpus(pending), pending.raw

    def _end_of_file(self, last: RawPiece) -> None:
        """The file's last piece: a line end if the file lacks one. Nothing more: the output has
        exactly the input's lines (a blank line that keeps the next file's first sentence apart is
        the writer's, `structperc.commands.streaming.tag_files`, and only between files)."""
        if last.stop > last.start and last.data[last.stop - 1] != 10:
            last.tail += b"\n"


def _column_reader(path, columns: Sequence[str], optional: Sequence[str], keep_lines: bool,
                   only: Collection[str] | None, tokens: bool = False) -> _LeanReader:
    parser = ColumnParser(source_name(path), columns, optional, tokens=tokens)
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
                        only: Collection[str] | None = None, sentences: int = 20_000,
                        fmt: str | None = None) -> Iterator[tuple[Corpus, RawLines]]:
    """What `structperc tag` reads: ``(corpus, raw lines)``, ``sentences`` at a time, with only the
    columns in ``only`` and the raw lines kept as spans of the file's bytes (see `write_tagged`).

    ``fmt`` is ``"conllu"``, ``"conll"`` (columns named by ``columns``) or ``"tokens"`` (one token per
    line, read as column ``columns[0]``); None tells CoNLL-U by the file name. Every byte of the input
    is covered by some chunk's raw lines, so that every line is written back: a file without a sentence
    gives one chunk of no sentences (none if it is empty)."""
    if fmt is None:
        fmt = "conllu" if is_conllu(getattr(path, "name", path)) else "conll"
    if fmt == "conllu":
        reader = _conllu_reader(path, True, only)
    elif fmt == "tokens":
        reader = _column_reader(path, list(columns)[:1], (), True, None, tokens=True)
    else:
        reader = _column_reader(path, columns, optional, True, only)
    yield from reader.chunks(sentences, every_line=True)


def is_conllu(path) -> bool:
    """Whether a file name says CoNLL-U (``.conllu`` or ``.conllu.gz``)."""
    return str(path).endswith((".conllu", ".conllu.gz"))


def first_width(path) -> int | None:
    """The number of fields of the first token line of a CoNLL column (or CoNLL-U) file, None when it
    has none: for messages about the columns a user named, so it reads only up to that line."""
    conllu = is_conllu(path)
    for _, line in open_text_lines(path):
        if not line.strip(ASCII_WS) or (conllu and line.startswith("#")) or line.startswith("-DOCSTART-"):
            continue
        return len(line.split("\t") if conllu else split_fields(line))
    return None


def read_corpus(path, columns: Sequence[str] | None, *, optional: Sequence[str] = (),
                keep_lines: bool = False, only: Collection[str] | None = None):
    """Read CoNLL-U when the file name says so, else CoNLL columns named by ``columns``; with
    ``only``, just those columns (a model that reads two of CoNLL-U's ten holds codes for two)."""
    if is_conllu(path):
        return read_conllu(path, keep_lines=keep_lines, columns=only)
    if not columns:
        raise InputError("name the columns (e.g. --columns word,pos,chunk)", source_name(path))
    return read_conll(path, columns, optional=optional, keep_lines=keep_lines, only=only)


def write_tagged(out: IO[str], lines: "RawLines | Sequence[Sequence[str]]", tags: Sequence[str],
                 field: int = -1) -> None:
    """The raw lines of `iter_tagging_chunks` written back with the tags (flat, corpus order) put into
    their token lines: appended as a new last column, or (``field`` >= 0) in place of that
    tab-separated field (CoNLL-U). Lines between sentences come back as they were. Lists of lines
    (one per sentence) are written by `write_conll`."""
    if isinstance(lines, RawLines):
        lines.write(out, tags, field)
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

