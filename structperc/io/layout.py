"""What a model reads from a stream it tags (`Layout`), and a chunk of such a stream (`TagChunk`): the
types the streaming readers of the input-format registry (`structperc.io.registry`) give and take.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Sequence

from structperc.io.corpus import Corpus
from structperc.io.scan import RawLines


@dataclass(frozen=True)
class Layout:
    """What a model reads and predicts: its CoNLL columns (``_`` skips one), the optional trailing
    ones (the gold tags), the token column, the column it predicts, the columns to read from CoNLL
    or CoNLL-U input (None: all of them) and the columns it cannot tag without."""

    columns: tuple[str, ...]
    optional: tuple[str, ...]
    token: str
    tag: str
    reads: frozenset[str] | None
    needs: frozenset[str]

    @classmethod
    def of(cls, columns: Sequence[str], tag: str, token: str, reads: Collection[str] | None) -> "Layout":
        """The layout of a model with these CoNLL ``columns`` predicting ``tag`` from ``token``,
        reading ``reads`` from its input (None: every column; what it reads it needs)."""
        optional = (tag,) if list(columns)[-1] == tag else ()
        needs = frozenset(reads or ()) | {token}
        return cls(tuple(columns), optional, token, tag, None if reads is None else frozenset(reads), needs)

    def available(self, fmt: str) -> list[str]:
        """The columns input of format ``fmt`` holds (the registry's entry says)."""
        from structperc.io.registry import input_format

        holds = input_format(fmt).holds
        return holds(self) if holds is not None else [self.token]


@dataclass
class TagChunk:
    """Some sentences of one input: the corpus to tag, and how to write them back — the raw lines
    (CoNLL, CoNLL-U, tokens) or the number of tokens of every input line, empty ones included
    (text)."""

    corpus: Corpus
    fmt: str
    raw: RawLines | None = None
    line_tokens: list[int] | None = None
