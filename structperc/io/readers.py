"""The readers of the input formats (`structperc.io.registry` says which reads what): each format has a
detector, and a reader of a whole input (training, `Tagger.predict`), of a stream in chunks
(`structperc tag`, `structperc segment`), or both.

Why all here: a reader is the one place that knows how its format becomes a `Corpus`; the registry
only lists them, so adding a format is one reader here and one line there.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Iterator, Sequence, cast

import numpy as np

from structperc.errors import InputError
from structperc.io.conll import is_conllu, iter_tagging_chunks, read_conllu, read_corpus
from structperc.io.corpus import Corpus
from structperc.io.layout import Layout, TagChunk
from structperc.io.lists import Columns, from_lists
from structperc.io.parse import CONLLU_COLUMNS, split_fields
from structperc.io.text import ASCII_WS, head_lines, read_pieces, source_name

_CONLLU_ID = re.compile(r"[0-9]+(?:[-.][0-9]+)?")


@dataclass(frozen=True)
class Request:
    """What a caller of `structperc.io.inputs.to_corpus` asks of a whole input: whether it needs the
    gold tags, the columns a file is read for (None: all), the columns a token tuple may hold
    (``token_columns``), a dataset's column names, and the marker of an unknown tag."""

    need_tags: bool
    reads: set[str] | None
    token_columns: set[str] | None = None
    dataset_columns: dict | None = None
    unknown: str | None = "?"


# ------------------------------------------------------------------ detecting what a user hands in
def is_corpus(X: Any) -> bool:
    return isinstance(X, Corpus)


def is_file(X: Any) -> bool:
    """A path, or a binary stream of a file."""
    return isinstance(X, (str, os.PathLike)) or hasattr(X, "read")


def is_conllu_file(X: Any) -> bool:
    """A file whose name says CoNLL-U (`structperc.io.conll.is_conllu`), or whose first token line is a CoNLL-U
    line (`conllu_line`): ``train`` and ``eval`` read such a file as ``tag``'s ``auto`` does, whatever its name."""
    if not is_file(X):
        return False
    if is_conllu(X):
        return True
    if not isinstance(X, (str, os.PathLike)) or not os.path.isfile(X):  # a stream is read once, by its reader
        return False
    try:
        lines = head_lines(X)  # a look at its head, not a piece of the file decoded twice
    except InputError:  # unreadable: the reader of CoNLL columns names the file and the line
        return False
    return next((conllu_line(line, None) for line in lines
                 if line.strip(ASCII_WS) and not line.startswith(("#", "-DOCSTART-"))), False)


def is_token_lists(X: Any) -> bool:
    return isinstance(X, Sequence) and not isinstance(X, str)


# ------------------------------------------------- detecting a stream by its first token line (auto)
def conllu_line(line: str, layout: Layout | None) -> bool:
    """Ten tab-separated fields, the first a CoNLL-U ID."""
    fields = line.split("\t")
    return len(fields) == 10 and _CONLLU_ID.fullmatch(fields[0]) is not None


def conll_line(line: str, layout: Layout) -> bool:
    """As many columns as the model reads (its trailing gold tag column may be absent)."""
    return len(layout.columns) - len(layout.optional) <= len(split_fields(line)) <= len(layout.columns)


def token_line(line: str, layout: Layout) -> bool:
    """One field."""
    return len(split_fields(line)) == 1


def text_line(line: str, layout: Layout) -> bool:
    """Words that are not the model's columns, with no tab between them, for a model that reads the
    words alone: a sentence of plain text (a model reading more columns cannot tag text)."""
    return "\t" not in line and layout.needs == {layout.token}


# ---------------------------------------------------------------- the columns a format's input holds
def conll_columns(layout: Layout) -> list[str]:
    return [c for c in layout.columns if c != "_"]


def conllu_columns(layout: Layout) -> list[str]:
    return list(CONLLU_COLUMNS)


def token_column(layout: Layout) -> list[str]:
    return [layout.token]


# ------------------------------------------------------------------------------ whole inputs
def given_corpus(X: Corpus, y: Any, task: Columns, request: Request) -> Corpus:
    return X


def _file_columns(task: Columns, request: Request) -> tuple[tuple[str, ...], list[str] | None]:
    """The optional trailing tag column of a file, and the columns to read (None: all)."""
    tag = task.tag_column
    optional = () if request.need_tags or task.columns[-1] != tag else (tag,)
    only = None
    if request.reads is not None:
        only = [c for c in task.columns if c in request.reads or c in (tag, task.token_column)]
    return optional, only


def read_conll_file(X: Any, y: Any, task: Columns, request: Request) -> Corpus:
    optional, only = _file_columns(task, request)
    return cast(Corpus, read_corpus(X, task.columns, optional=optional, only=only))


def read_conllu_file(X: Any, y: Any, task: Columns, request: Request) -> Corpus:
    _, only = _file_columns(task, request)
    return cast(Corpus, read_conllu(X, columns=only))


def read_dataset(X: Any, y: Any, task: Columns, request: Request) -> Corpus:
    from structperc.io.hf import corpus_from_dataset

    m = request.dataset_columns or {}
    tokens, tags, features = m.get("tokens", "tokens"), m.get("tags"), m.get("features")
    if not features:  # the task's other input columns, where the dataset has a column of that name ("pos")
        features = {c: c for c in task.inputs if c not in (task.token_column, task.tag_column, tokens, tags)
                    and c in X.column_names}
    return corpus_from_dataset(X, token_column=task.token_column, tokens=tokens,
                               tags=tags if request.need_tags or tags in X.column_names else None,
                               tag_column=task.tag_column, features=features)


def read_token_lists(X: Any, y: Any, task: Columns, request: Request) -> Corpus:
    return from_lists(X, y, task, request.token_columns, request.unknown)


# ------------------------------------------------------------------------------ streams, in chunks
def _line_chunks(source: Any, fmt: str, layout: Layout, sentences: int) -> Iterator[TagChunk]:
    """CoNLL, CoNLL-U or one-token-per-line input in chunks, with their raw lines to write back."""
    if fmt == "tokens":
        columns, only = [layout.token], None
    else:
        columns, only = list(layout.columns), layout.reads
    for corpus, raw in iter_tagging_chunks(source, columns, optional=layout.optional, only=only,
                                           sentences=sentences, fmt=fmt):
        yield TagChunk(corpus, fmt, raw=raw)


def conll_chunks(source: Any, layout: Layout, sentences: int) -> Iterator[TagChunk]:
    return _line_chunks(source, "conll", layout, sentences)


def conllu_chunks(source: Any, layout: Layout, sentences: int) -> Iterator[TagChunk]:
    return _line_chunks(source, "conllu", layout, sentences)


def token_chunks(source: Any, layout: Layout, sentences: int) -> Iterator[TagChunk]:
    return _line_chunks(source, "tokens", layout, sentences)


def text_chunks(source: Any, layout: Layout, sentences: int) -> Iterator[TagChunk]:
    """One sentence per line; each chunk knows how many tokens every input line had (empty lines
    included), so that the output has a line for every input line."""
    name = source_name(source)
    sents: list[list[str]] = []
    numbers: list[int] = []
    per_line: list[int] = []
    for first, lines in read_pieces(source):
        for number, line in enumerate(lines, first):
            words = split_fields(line)
            per_line.append(len(words))
            if words:
                sents.append(words)
                numbers.append(number)
                if len(sents) == sentences:
                    yield _text_chunk(sents, numbers, per_line, layout.token, name)
                    sents, numbers, per_line = [], [], []
    if per_line:
        yield _text_chunk(sents, numbers, per_line, layout.token, name)


def _text_chunk(sents, numbers, per_line, token, name) -> TagChunk:
    corpus = Corpus.from_sentences(sents, token_column=token, source=name)
    corpus.sent_lines = np.asarray(numbers, dtype=np.int64)
    return TagChunk(corpus, "lines", line_tokens=per_line)

