"""The in-memory corpus: one flat list of strings per column plus sentence offsets.

Flat columns (rather than a list of sentence objects) let feature extraction work column by column over
the whole corpus with numpy, which is what makes it fast; sentences are views for the API edges.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from structperc.errors import InputError


@dataclass
class Corpus:
    """Token columns of a corpus.

    Parameters
    ----------
    columns : dict of str to list of str
        Each column holds one string per token, all sentences concatenated.
    sent_ptr : array of int64, shape (n_sentences + 1,)
        Sentence ``i`` spans tokens ``sent_ptr[i]:sent_ptr[i + 1]``.
    source : str
        Where the corpus came from, for messages.
    sent_lines : array of int64, shape (n_sentences,), optional
        First line of each sentence in the source file, for messages.

    Examples
    --------
    >>> c = Corpus.from_sentences([["The", "cat"], ["Hi"]], tags=[["B-NP", "I-NP"], ["O"]])
    >>> len(c), c.n_tokens, c.sentence(0)["word"]
    (2, 3, ['The', 'cat'])
    """

    columns: dict[str, list[str]]
    sent_ptr: np.ndarray
    source: str = "<memory>"
    sent_lines: np.ndarray | None = None
    _factorized: dict = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.sent_ptr) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.sent_ptr[-1])

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def sentence(self, i: int) -> dict[str, list[str]]:
        a, b = int(self.sent_ptr[i]), int(self.sent_ptr[i + 1])
        return {name: col[a:b] for name, col in self.columns.items()}

    def sentences(self, column: str) -> Iterator[list[str]]:
        """Yield one column sentence by sentence (for reports)."""
        col = self.columns[column]
        ptr = self.sent_ptr
        for i in range(len(ptr) - 1):
            yield col[ptr[i]:ptr[i + 1]]

    def factorize(self, column: str) -> tuple[list[str], np.ndarray]:
        """Distinct values of a column and one integer code per token, computed once per column.

        Every per-value function (lowercase, shape, affixes) then runs once per distinct value only.
        """
        hit = self._factorized.get(column)
        if hit is None:
            if column not in self.columns:
                raise InputError(
                    f"unknown column {column!r} (columns: {', '.join(self.columns)})", self.source
                )
            values = self.columns[column]
            # dict.fromkeys and map run in C: no Python bytecode per token
            distinct = list(dict.fromkeys(values))
            index = {v: i for i, v in enumerate(distinct)}
            codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
            hit = (distinct, codes)
            self._factorized[column] = hit
        return hit

    def positions(self) -> tuple[np.ndarray, np.ndarray]:
        """Per token: its index inside its sentence and its sentence's length."""
        hit = self._factorized.get(("__positions__",))
        if hit is None:
            lengths = np.diff(self.sent_ptr)
            length = np.repeat(lengths, lengths)
            pos = np.arange(self.n_tokens, dtype=np.int64) - np.repeat(self.sent_ptr[:-1], lengths)
            hit = (pos, length)
            self._factorized[("__positions__",)] = hit
        return hit

    def select(self, index: Sequence[int] | np.ndarray) -> "Corpus":
        """A corpus holding the chosen sentences, in the given order."""
        index = np.asarray(index, dtype=np.int64)
        lengths = np.diff(self.sent_ptr)[index]
        ptr = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        spans = [range(self.sent_ptr[i], self.sent_ptr[i + 1]) for i in index]
        take = [t for span in spans for t in span]
        cols = {name: [col[t] for t in take] for name, col in self.columns.items()}
        lines = self.sent_lines[index] if self.sent_lines is not None else None
        return Corpus(cols, ptr, self.source, lines)

    def with_column(self, name: str, values: list[str]) -> "Corpus":
        if len(values) != self.n_tokens:
            raise ValueError(f"column {name!r} has {len(values)} values for {self.n_tokens} tokens")
        cols = dict(self.columns)
        cols[name] = values
        return Corpus(cols, self.sent_ptr, self.source, self.sent_lines)

    @classmethod
    def from_sentences(
        cls,
        tokens: Sequence[Sequence[str]],
        tags: Sequence[Sequence[str]] | None = None,
        *,
        extra: dict[str, Sequence[Sequence[str]]] | None = None,
        token_column: str = "word",
        tag_column: str = "tag",
        source: str = "<memory>",
    ) -> "Corpus":
        """Build a corpus from plain Python lists (one list of strings per sentence)."""
        named: dict[str, Sequence[Sequence[str]]] = {token_column: tokens}
        if extra:
            named.update(extra)
        if tags is not None:
            named[tag_column] = tags
        lengths = np.fromiter((len(s) for s in tokens), dtype=np.int64, count=len(tokens))
        for name, sents in named.items():
            if len(sents) != len(tokens):
                raise InputError(f"column {name!r} has {len(sents)} sentences, tokens have {len(tokens)}",
                                 source)
            for i, s in enumerate(sents):
                if len(s) != lengths[i]:
                    raise InputError(f"sentence {i}: column {name!r} has {len(s)} items for "
                                     f"{lengths[i]} tokens", source)
                if isinstance(s, str):
                    raise InputError(f"sentence {i}: column {name!r} must be a list of strings, "
                                     "not a string", source)
        ptr = np.zeros(len(tokens) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        cols = {name: [str(v) for s in sents for v in s] for name, sents in named.items()}
        return cls(cols, ptr, source)
