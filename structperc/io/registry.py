"""The input formats, in one table: how each is detected and how it is read, for training and for
tagging.

Two kinds of input reach the package. What a user hands a tagger or a trainer (`Tagger.fit`,
`Tagger.predict`, `structperc train`): a `Corpus`, a CoNLL or CoNLL-U path (or binary stream), a
`datasets.Dataset`, token lists; `structperc.io.inputs.to_corpus` takes the first entry whose
``given`` accepts the object and reads it whole with its ``read``. And what `structperc tag` and
`structperc segment` stream (``--input-format``): CoNLL, CoNLL-U, one token per line, plain text;
`structperc.io.formats` reads the entry ``--input-format`` names in chunks with its ``chunks``, and
``auto`` takes the first entry whose ``line`` accepts the input's first token line (CoNLL-U also by
a ``.conllu`` name), else CoNLL columns.

The table's order is the order of detection. Adding a format is one reader in `structperc.io.readers`
and one line here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from structperc.errors import InputError
from structperc.io import readers as r
from structperc.io.corpus import Corpus
from structperc.io.layout import Layout, TagChunk
from structperc.io.lists import Columns, is_dataset


@dataclass(frozen=True)
class InputFormat:
    """One input format.

    ``given``: whether an object a user hands in is of this format; ``read``: it, whole, as a corpus
    (`structperc.io.inputs.to_corpus`). ``line``: whether the first token line of a stream says this
    format (``auto``); ``chunks``: a stream of it, in chunks of sentences; ``holds``: the columns its
    input holds, of a model's layout. A format lacking one of them is not read that way.
    """

    name: str
    described: str
    given: Callable[[Any], bool] | None = None
    read: Callable[[Any, Any, Columns, r.Request], Corpus] | None = None
    line: Callable[[str, Layout], bool] | None = None
    chunks: Callable[[Any, Layout, int], Iterator[TagChunk]] | None = None
    holds: Callable[[Layout], list[str]] | None = None


REGISTRY: tuple[InputFormat, ...] = (
    InputFormat("corpus", "Corpus", given=r.is_corpus, read=r.given_corpus),
    InputFormat("conllu", "CoNLL-U", given=r.is_conllu_file, read=r.read_conllu_file, line=r.conllu_line,
                chunks=r.conllu_chunks, holds=r.conllu_columns),
    InputFormat("conll", "CoNLL column", given=r.is_file, read=r.read_conll_file, line=r.conll_line,
                chunks=r.conll_chunks, holds=r.conll_columns),
    InputFormat("tokens", "one-token-per-line", line=r.token_line, chunks=r.token_chunks,
                holds=r.token_column),
    InputFormat("lines", "one sentence per line, tokens split at whitespace", line=r.text_line, chunks=r.text_chunks,
                holds=r.token_column),
    InputFormat("dataset", "datasets.Dataset", given=is_dataset, read=r.read_dataset),
    InputFormat("lists", "token lists", given=r.is_token_lists, read=r.read_token_lists),
)

#: What ``auto`` finds when no entry's ``line`` accepts the first token line (its reader then says
#: which line does not fit).
FALLBACK = "conll"

#: The formats a stream may be read as (``--input-format``), ``auto`` first.
STREAM_FORMATS: tuple[str, ...] = ("auto",) + tuple(f.name for f in REGISTRY if f.chunks is not None)


def input_format(name: str) -> InputFormat:
    """The entry named ``name`` (`InputError` if there is none)."""
    for f in REGISTRY:
        if f.name == name:
            return f
    raise InputError(f"unknown input format {name!r} (known: {', '.join(STREAM_FORMATS)})")


def stream_format(name: str) -> InputFormat:
    """The entry ``--input-format name`` reads (not ``auto``: see `structperc.io.formats.resolve`)."""
    f = input_format(name)
    if f.chunks is None:
        raise InputError(f"unknown input format {name!r} (known: {', '.join(STREAM_FORMATS)})")
    return f


def format_given(X: Any) -> InputFormat:
    """The entry of an object a user hands in (`InputError` when none reads it)."""
    for f in REGISTRY:
        if f.given is not None and f.read is not None and f.given(X):
            return f
    raise InputError(f"cannot read sentences from {type(X).__name__}: give token lists, a CoNLL or CoNLL-U path, a "
                     "Corpus or a datasets.Dataset")


def format_of_line(line: str, layout: Layout) -> str:
    """The format a stream's first token line says (``auto``)."""
    for f in REGISTRY:
        if f.line is not None and f.line(line, layout):
            return f.name
    return FALLBACK
