"""The formats `structperc tag` reads and writes.

Input (``--input-format``):

``conll``
    Whitespace-separated columns, the model's columns left to right (the gold tag column, when
    last, may be absent); columns are separated by ASCII whitespace only.
``conllu``
    CoNLL-U: ten tab-separated columns, ``#`` comments, multi-word tokens and empty nodes.
``tokens``
    One token per line (the line without the whitespace around it), a blank line between sentences.
``text``
    One sentence per line, tokens separated by ASCII whitespace.
``auto``
    CoNLL-U for a ``.conllu`` name or first lines that are CoNLL-U; else CoNLL columns when the first
    token line has as many columns as the model reads, one token per line when it has one; else
    CoNLL columns (whose reader then says which line does not fit).

Output (``--output-format``; by default CoNLL-U for CoNLL-U input, else ``conll``):

``conll``
    Every input line comes back, in order, and every token line gets the predicted tag as a new last
    column (text input: one ``token tag`` line per token, a blank line after every input line).
``conllu``
    CoNLL-U input comes back with the prediction in the column the model predicts (UPOS or XPOS);
    other input becomes CoNLL-U with the tokens as FORM and the prediction in that column.
``tokens``
    ``token<TAB>tag`` lines, a blank line after every sentence.
``jsonl``
    One JSON object a sentence, ``{"tokens": [...], "tags": [...]}`` (text input: one an input line,
    empty ones included).
"""
from __future__ import annotations

import io
import json
import os
import zlib
from typing import IO, Any, Iterator, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.io.conll import is_conllu
from structperc.io.layout import Layout, TagChunk
from structperc.io.parse import CONLLU_COLUMNS
from structperc.io.registry import STREAM_FORMATS, format_of_line, input_format, stream_format
from structperc.io.text import ASCII_WS, open_binary, source_name

__all__ = ["INPUT_FORMATS", "OUTPUT_FORMATS", "Layout", "TagChunk", "resolve", "check", "check_options",
           "column_name", "default_output", "tagging_chunks", "write_chunk", "AUTO_HINT"]

#: The input formats of a stream (the registry's, `structperc.io.registry`), ``auto`` first.
INPUT_FORMATS = STREAM_FORMATS
OUTPUT_FORMATS = ("conll", "conllu", "tokens", "jsonl")
#: How much of an input `auto` looks at before it decides, and at most when its first token line is longer.
_SNIFF_BYTES = 1 << 16
_SNIFF_MAX = 1 << 24
#: Token lines of as many fields each (and a blank line) that make input CoNLL columns, not text (`_columnar`).
_COLUMNAR_LINES = 3


# ------------------------------------------------------------------------------------ choosing
def resolve(source: Any, fmt: str, layout: Layout) -> tuple[str, Any]:
    """The input format of ``source`` (``fmt``, or what `auto` finds) and the source to read: for
    `auto` on a stream (standard input), one that gives back what was looked at."""
    if fmt != "auto":
        return stream_format(fmt).name, source
    if is_conllu(getattr(source, "name", source)):
        return "conllu", source
    if hasattr(source, "read") or str(source) == "-" or not os.path.isfile(source):
        # a stream, or a path that cannot be read twice (a named pipe, /dev/stdin): read it once
        peeked = _Peeked(source)
        return _decide(peeked.head, layout), peeked
    name, stream, owned = open_binary(source)
    try:
        head = _read_head(stream, name)
    finally:
        if owned:
            stream.close()
    return _decide(head, layout), source


def _read_head(stream, name: str) -> bytes:
    """The first bytes of a stream, enough to decide its format: up to `_SNIFF_BYTES`, or fewer once they show
    whether it is CoNLL columns (`_settled`); more only while no token line (a line that is not blank, a comment or
    ``-DOCSTART-``) is whole."""
    head = b""
    read = getattr(stream, "read1", stream.read)
    try:
        # up to _SNIFF_BYTES, or fewer once they hold the token lines `_columnar` reads; past them only until a
        # first token line is whole (a line of 70,000 characters), up to _SNIFF_MAX
        while len(head) < _SNIFF_MAX:
            got = read(_SNIFF_BYTES - len(head) if len(head) < _SNIFF_BYTES else _SNIFF_BYTES)
            if isinstance(got, str):
                got = got.encode("utf-8")
            if not got:
                break
            head += got
            if len(head) < _SNIFF_BYTES:
                if _settled(head):
                    break
            elif b"\n" in got and _decide_lines(head, None) is not None:
                break
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise InputError(f"cannot read: {exc}", name) from None
    return head


class _Peeked(io.RawIOBase):
    """A stream (standard input) whose first bytes were read to tell its format, read again from the
    start: those bytes, then the rest of the stream."""

    def __init__(self, source: Any):
        super().__init__()
        self.name = source_name(source)
        _, self.stream, self.owned = open_binary(source)
        self.head = _read_head(self.stream, self.name)
        self.pos = 0

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if getattr(self, "owned", False) and not self.closed:
            self.stream.close()
        super().close()

    def read(self, size: int = -1) -> bytes:  # type: ignore[override]
        if self.pos < len(self.head):
            end = len(self.head) if size is None or size < 0 else min(len(self.head), self.pos + size)
            got = self.head[self.pos:end]
            self.pos = end
            return got
        got = self.stream.read(size if size is not None and size >= 0 else -1)
        return got.encode("utf-8") if isinstance(got, str) else got

    def readinto(self, b) -> int:  # type: ignore[override]
        got = self.read(len(b))
        b[:len(got)] = got
        return len(got)


def _decide(head: bytes, layout: Layout) -> str:
    found = _decide_lines(head, layout)
    if found is None:  # the end of the input, or a first line longer than what was read
        found = _decide_lines(head + b"\n", layout)
    if found == "lines" and _columnar(head):
        # a model that reads words alone takes a line of words as a sentence; but blocks of lines of as many
        # fields each are CoNLL columns (a chunking file given to a POS model), which the CoNLL reader then
        # refuses in one line naming the columns it found, not a sentence of "Rockwell NNP B-NP"
        return "conll"
    return found if found is not None else "conll"


def _shape(head: bytes) -> tuple[int, set[int], bool]:
    """Of the complete lines of ``head``: how many token lines (not blank, a comment or ``-DOCSTART-``), their
    numbers of fields, and whether a blank line stands between two of them."""
    widths: set[int] = set()
    tokens, blank_between = 0, False
    for line in head.decode("utf-8", "replace").split("\n")[:-1]:
        if not line.strip(ASCII_WS):
            blank_between = blank_between or tokens > 0
        elif not line.startswith(("-DOCSTART-", "#")):
            widths.add(len(line.split()))
            tokens += 1
    return tokens, widths, blank_between


def _settled(head: bytes) -> bool:
    """Whether ``head`` says enough for `_columnar`: token lines of different widths (text), or a blank line
    after some of the same width, or many lines."""
    tokens, widths, blank_between = _shape(head)
    return tokens >= _COLUMNAR_LINES and (blank_between or len(widths) > 1 or tokens >= 200)


def _columnar(head: bytes) -> bool:
    """Whether the complete lines of ``head`` are CoNLL columns: at least `_COLUMNAR_LINES` token lines, each of
    the same number (2 or more) of fields, and a blank line between two of them (a sentence's end)."""
    tokens, widths, blank_between = _shape(head)
    return tokens >= _COLUMNAR_LINES and blank_between and len(widths) == 1 and min(widths) >= 2


def _decide_lines(head: bytes, layout: Layout | None) -> str | None:
    """The format the first token line of ``head`` says (None: no complete token line yet; with
    ``layout`` None only whether there is one, as "found")."""
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    lines = head.decode("utf-8", "replace").split("\n")
    lines.pop()  # incomplete (or empty after the last line end)
    for line in lines:
        line = line.rstrip("\r")
        if not line.strip(ASCII_WS) or line.startswith(("-DOCSTART-", "#")):
            continue  # a '#' line may be a comment of CoNLL-U or a token: the next line decides
        if layout is None:
            return "found"
        return format_of_line(line, layout)  # the registry's entries, in order
    return None


#: Appended to an error about columns when `auto` chose the format: what else the input may be.
AUTO_HINT = "(the input format was guessed: for raw text give --input-format text, for one sentence a line " \
            "--input-format lines, for one token per line --input-format tokens)"


def default_output(fmt: str) -> str:
    """The output format for input format ``fmt``: CoNLL-U for CoNLL-U, else CoNLL columns."""
    return "conllu" if fmt == "conllu" else "conll"


def check_options(input_format: str, output_format: str | None, nbest: int) -> None:
    """Refuse ``structperc tag`` options that cannot go together, before any work: an unknown input or
    output format, a negative ``nbest``, k-best lists in a format other than JSON lines."""
    if input_format != "auto":
        stream_format(input_format)
    if output_format is not None and output_format not in OUTPUT_FORMATS:
        raise InputError(f"unknown output format {output_format!r} (known: {', '.join(OUTPUT_FORMATS)})")
    if nbest < 0:
        raise InputError(f"--nbest must be a positive number of paths, not {nbest}")
    if nbest and output_format not in (None, "jsonl"):
        raise InputError("the k best paths are written as JSON lines: use --output-format jsonl")


#: The output formats that can carry each tag's probability (``--marginals``).
CONFIDENCE_FORMATS = ("conll", "tokens", "jsonl")


def check_confidence(out_fmt: str) -> None:
    """Refuse probabilities in an output format that has no place for them."""
    if out_fmt not in CONFIDENCE_FORMATS:
        raise InputError(f"probabilities are written as a column of conll or tokens output, or in jsonl, not in "
                         f"{out_fmt}: give --output-format tokens, conll or jsonl")


def check(fmt: str, out_fmt: str, layout: Layout, name: str, confidence: bool = False) -> None:
    """Refuse, before reading, what cannot work: a model that reads columns input of ``fmt`` lacks
    (naming them), CoNLL-U out of a model that predicts no CoNLL-U column, probabilities (``confidence``)
    in an output format without a place for them (`check_confidence`)."""
    if out_fmt not in OUTPUT_FORMATS:
        raise InputError(f"unknown output format {out_fmt!r} (known: {', '.join(OUTPUT_FORMATS)})")
    if confidence:
        check_confidence(out_fmt)
    if out_fmt == "conllu" and layout.tag not in CONLLU_COLUMNS:
        raise InputError(f"--output-format conllu: the model predicts {layout.tag!r}, which is not a "
                         f"CoNLL-U column ({', '.join(CONLLU_COLUMNS)})", name)
    have = layout.available(fmt)
    missing = sorted(layout.needs - set(have))
    if missing:
        several = len(missing) > 1
        raise InputError(f"the model reads column{'s' if several else ''} {', '.join(missing)}, which "
                         f"{input_format(fmt).described} input lacks (it holds {', '.join(have)}): give "
                         f"{'them' if several else 'it'} as CoNLL columns "
                         f"({' '.join(layout.columns)})", name)


def column_name(spec: str | int, fmt: str, layout: Layout) -> str:
    """The column ``spec`` names in input of ``fmt``: a name, or a 1-based column number (CoNLL:
    the model's columns, ``_`` ones included; CoNLL-U: its ten)."""
    if fmt not in ("conll", "conllu"):
        raise InputError("a column of known tags needs CoNLL or CoNLL-U input, not "
                         f"{input_format(fmt).described} input")
    columns = list(layout.columns) if fmt == "conll" else list(CONLLU_COLUMNS)
    text = str(spec)
    if text.isdigit():
        number = int(text)
        if not 1 <= number <= len(columns) or columns[number - 1] == "_":
            raise InputError(f"column {number}: the {fmt} columns are "
                             f"{', '.join(f'{i + 1} {c}' for i, c in enumerate(columns) if c != '_')}")
        return columns[number - 1]
    if text not in columns or text == "_":
        raise InputError(f"no column {text!r}: the {fmt} columns are {', '.join(c for c in columns if c != '_')}")
    return text


# ------------------------------------------------------------------------------------ reading
def tagging_chunks(source: Any, fmt: str, layout: Layout, sentences: int = 20_000) -> Iterator[TagChunk]:
    """``source`` in chunks of ``sentences`` sentences, read as ``fmt`` (not `auto`: see `resolve`) by
    the registry's reader (`structperc.io.registry`)."""
    chunks = stream_format(fmt).chunks
    assert chunks is not None
    yield from chunks(source, layout, sentences)


# ------------------------------------------------------------------------------------ writing
def write_chunk(out: IO[str], chunk: TagChunk, tags: Sequence[str], out_fmt: str, layout: Layout,
                confidence: Sequence[float] | np.ndarray | None = None,
                nbest: Sequence[Sequence[tuple[Sequence[str], float, float]]] | None = None) -> None:
    """Write ``chunk`` with its predicted ``tags`` (flat, corpus order) as ``out_fmt``; with
    ``confidence`` (flat) each tag's probability as one more column (``conll``, ``tokens``) or a
    ``"confidence"`` list (``jsonl``); with ``nbest`` (per sentence) an ``"nbest"`` list (``jsonl``)."""
    if out_fmt == "jsonl":
        _write_jsonl(out, chunk, tags, layout, confidence, nbest)
        return
    if confidence is not None:
        check_confidence(out_fmt)
        sep = " " if out_fmt == "conll" else "\t"
        tags = [f"{t}{sep}{p:.4f}" for t, p in zip(tags, confidence)]
    if chunk.raw is not None and (out_fmt == "conll" or (out_fmt == "conllu" and chunk.fmt == "conllu")):
        field = CONLLU_COLUMNS.index(layout.tag) if out_fmt == "conllu" else -1
        chunk.raw.write(out, tags, field)
        return
    corpus = chunk.corpus
    tokens = corpus.columns[layout.token] if len(corpus) else []
    ptr = corpus.sent_ptr.tolist()
    sents = [(tokens[a:b], tags[a:b]) for a, b in zip(ptr[:-1], ptr[1:])]
    if chunk.line_tokens is not None:  # text: one entry per input line, empty lines included
        it = iter(sents)
        sents = [next(it) if n else ([], []) for n in chunk.line_tokens]
    if out_fmt == "conllu":
        field = CONLLU_COLUMNS.index(layout.tag)
        out.write("".join(_conllu_sentence(w, t, field) for w, t in sents if w))
    else:
        sep = " " if out_fmt == "conll" else "\t"
        keep_empty = out_fmt == "conll"  # text as CoNLL: a blank line for every input line
        out.write("".join("".join(f"{w}{sep}{t}\n" for w, t in zip(ws, ts)) + "\n"
                          for ws, ts in sents if ws or keep_empty))


def _write_jsonl(out: IO[str], chunk: TagChunk, tags: Sequence[str], layout: Layout,
                 confidence: Sequence[float] | np.ndarray | None,
                 nbest: Sequence[Sequence[tuple[Sequence[str], float, float]]] | None) -> None:
    """One JSON object a sentence (``text`` input: a line), as ``tagged.schema.json`` describes:
    ``tokens``, ``tags``, and ``confidence`` and ``nbest`` when asked for."""
    corpus = chunk.corpus
    tokens = corpus.columns[layout.token] if len(corpus) else []
    ptr = corpus.sent_ptr.tolist()
    objects = []
    for s, (a, b) in enumerate(zip(ptr[:-1], ptr[1:])):
        obj: dict = {"tokens": list(tokens[a:b]), "tags": list(tags[a:b])}
        if confidence is not None:
            obj["confidence"] = [round(float(p), 6) for p in confidence[a:b]]
        if nbest is not None:
            # six significant digits: a path's probability falls geometrically with the sentence's length
            # (a 500-token sentence's best path ~1e-10), where six decimal places would print 0.0
            obj["nbest"] = [{"tags": list(t), "score": round(float(score), 6), "probability": float(f"{p:.6g}")}
                            for t, score, p in nbest[s]]
        objects.append(obj)
    if chunk.line_tokens is not None:  # text: one object for every input line, empty lines included
        it = iter(objects)
        empty = {"tokens": [], "tags": [], **({"confidence": []} if confidence is not None else {}),
                 **({"nbest": [{"tags": [], "score": 0.0, "probability": 1.0}]} if nbest is not None else {})}
        objects = [next(it) if n else empty for n in chunk.line_tokens]
    out.write("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects))


def _conllu_sentence(words: Sequence[str], tags: Sequence[str], field: int) -> str:
    lines = []
    for i, (w, t) in enumerate(zip(words, tags), 1):
        row = [str(i), _conllu_value(w)] + ["_"] * 8
        row[field] = _conllu_value(t)
        lines.append("\t".join(row) + "\n")
    return "".join(lines) + "\n"


def _conllu_value(value: str) -> str:
    """A CoNLL-U field: no tab or line end, not empty."""
    value = value.replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return value if value else "_"
