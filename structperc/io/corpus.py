"""The in-memory corpus: one flat list of strings per column plus sentence offsets.

Flat columns (rather than a list of sentence objects) let feature extraction work column by column over
the whole corpus with numpy, which is what makes it fast; sentences are views for the API edges.

The readers hand a column over factorized (its distinct values and one integer code per token,
`ColumnMap`): a corpus of 200,000 tokens then holds a few thousand strings instead of 200,000 per
column, and feature extraction, which only asks for `Corpus.factorize`, never needs more. The list of
strings is built (once, sharing those few thousand objects) only if someone asks for it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence, TypeVar

import numpy as np

from structperc.errors import InputError

T = TypeVar("T")


class ColumnMap(Mapping):
    """Columns by name (a mapping of str to list of str, like a dict), some held as codes.

    A coded column is ``(distinct, codes)``: ``distinct[codes[i]]`` is token ``i``'s value, with
    ``distinct`` in order of first occurrence (exactly what `Corpus.factorize` would compute). Its
    list is built on first access and kept.
    """

    __slots__ = ("_names", "_lists", "_coded")

    def __init__(self, lists: Mapping[str, list[str]] | None = None,
                 coded: Mapping[str, tuple[list[str], np.ndarray]] | None = None,
                 names: Sequence[str] | None = None):
        self._lists: dict[str, list[str]] = dict(lists or {})
        self._coded: dict[str, tuple[list[str], np.ndarray]] = dict(coded or {})
        if names is None:
            names = list(self._lists) + [n for n in self._coded if n not in self._lists]
        self._names = list(names)

    def __getitem__(self, name: str) -> list[str]:
        hit = self._lists.get(name)
        if hit is None:
            distinct, codes = self._coded[name]
            hit = self._lists[name] = expand(distinct, codes)
        return hit

    def __contains__(self, name: object) -> bool:
        return name in self._lists or name in self._coded

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"ColumnMap({', '.join(self._names)})"

    def coded(self, name: str) -> tuple[list[str], np.ndarray] | None:
        """``(distinct, codes)`` of a column held as codes, else None."""
        return self._coded.get(name)

    def with_column(self, name: str, values: list[str] | tuple[list[str], np.ndarray]) -> "ColumnMap":
        """A new map that also holds (or replaces) ``name`` (a list, or ``(distinct, codes)``); shares
        every other column."""
        coded = {k: v for k, v in self._coded.items() if k != name}
        lists = {k: v for k, v in self._lists.items() if k != name}
        if isinstance(values, tuple):
            coded[name] = values
        else:
            lists[name] = values
        names = self._names + ([name] if name not in self else [])
        return ColumnMap(lists, coded, names)


def expand(distinct: list[str], codes: np.ndarray) -> list[str]:
    """``[distinct[c] for c in codes]`` in C: every equal value is the same str object."""
    if not len(codes):
        return []
    table = np.empty(len(distinct), dtype=object)
    table[:] = distinct
    return table[codes].tolist()


def compact(distinct: list[str], codes: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The values that ``codes`` use, renumbered in order of first occurrence (as
    `Corpus.factorize` numbers them), for a subset of a corpus's tokens."""
    if not len(codes):
        return [], np.zeros(0, dtype=np.int64)
    n = len(codes)
    # each value's first token, by one unbuffered pass (no sort: 1-4 ms for 257,665 tokens, where np.unique's
    # sorts took 17-30)
    first = np.full(len(distinct), n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n, dtype=np.int64))
    used = np.flatnonzero(first < n)
    order = used[np.argsort(first[used], kind="stable")]
    rank = np.empty(len(distinct), dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return [distinct[i] for i in order.tolist()], rank[codes]


def coded(values: list[str]) -> tuple[list[str], np.ndarray]:
    """One value per token as ``(distinct, codes)``, the values numbered in order of first occurrence (as
    `Corpus.factorize` numbers them)."""
    # dict.fromkeys and map run in C: no Python bytecode per token
    distinct = list(dict.fromkeys(values))
    code = {v: i for i, v in enumerate(distinct)}
    return distinct, np.fromiter(map(code.__getitem__, values), dtype=np.int64, count=len(values))


@dataclass
class Corpus:
    """Token columns of a corpus.

    Parameters
    ----------
    columns : mapping of str to list of str
        Each column holds one string per token, all sentences concatenated (a dict, or a `ColumnMap`
        whose columns are built from codes on first access; see `Corpus.from_codes`).
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

    columns: Mapping[str, list[str]]
    sent_ptr: np.ndarray
    source: str = "<memory>"
    sent_lines: np.ndarray | None = None
    _factorized: dict = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_codes(cls, coded: dict[str, tuple[list[str], np.ndarray]], sent_ptr: np.ndarray,
                   source: str = "<memory>", sent_lines: np.ndarray | None = None) -> "Corpus":
        """A corpus whose columns are given factorized: ``(distinct, codes)`` per column, ``distinct``
        in order of first occurrence and ``codes`` int64, as `factorize` returns them."""
        corpus = cls(ColumnMap(coded=coded), sent_ptr, source, sent_lines)
        corpus._factorized.update(coded)
        return corpus

    def __len__(self) -> int:
        return len(self.sent_ptr) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.sent_ptr[-1])

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def where(self, token: int) -> str:
        """``source:line`` of token ``token`` for messages, when the sentences' lines are known (its sentence's
        first line plus its place: a sentence's tokens stand on consecutive lines, as in CoNLL columns; a
        CoNLL-U multi-word token line shifts it); else the source alone."""
        if self.sent_lines is None:
            return self.source
        s = int(np.searchsorted(self.sent_ptr, token, side="right")) - 1
        return f"{self.source}:{int(self.sent_lines[s]) + token - int(self.sent_ptr[s])}"

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
        if hit is None and isinstance(self.columns, ColumnMap):
            hit = self.columns.coded(column)
            if hit is not None:
                self._factorized[column] = hit
        if hit is None:
            if column not in self.columns:
                raise InputError(
                    f"unknown column {column!r} (columns: {', '.join(self.columns)})", self.source
                )
            hit = self._factorized[column] = coded(self.columns[column])
        return hit

    def derived(self, column: str, what: str, make: Callable[[], T]) -> T:
        """``make()``, a value computed from column ``column`` alone (its words' lowercase forms, say), once per
        corpus: kept beside the column's codes, carried to the corpora `with_column` makes while the column is
        unchanged, and dropped with it."""
        key = (column, what)
        if key not in self._factorized:
            self._factorized[key] = make()
        return self._factorized[key]

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
        take = np.repeat(self.sent_ptr[index] - ptr[:-1], lengths) + np.arange(int(ptr[-1]),
                                                                              dtype=np.int64)
        lines = self.sent_lines[index] if self.sent_lines is not None else None
        coded = self.columns.coded if isinstance(self.columns, ColumnMap) else (lambda name: None)
        lists, codes = {}, {}
        for name in self.columns:
            hit = coded(name)
            if hit is not None:  # stay factorized: no list of strings for the subset either
                codes[name] = compact(hit[0], hit[1][take])
            else:
                col = self.columns[name]
                lists[name] = [col[t] for t in take.tolist()]
        if not codes:
            return Corpus(lists, ptr, self.source, lines)
        out = Corpus(ColumnMap(lists, codes, list(self.columns)), ptr, self.source, lines)
        out._factorized.update(codes)
        return out

    def use_codes(self, column: str, distinct: list[str], codes: np.ndarray) -> None:
        """Take ``(distinct, codes)`` as `factorize`'s answer for ``column`` (a caller that can
        factorize faster than the generic per-token dict, e.g. characters by code point)."""
        self._factorized[column] = (distinct, codes)

    def release_columns(self) -> None:
        """Drop every token column (and the codes of them): for a corpus whose features are built and
        whose strings are needed no more (training sees integer arrays only)."""
        self.columns = {}
        self._factorized.clear()

    def with_column(self, name: str, values: list[str] | tuple[list[str], np.ndarray]) -> "Corpus":
        """This corpus with the column ``name`` added (or replaced): a list of one value per token, or
        ``(distinct, codes)`` as `factorize` returns them (``distinct`` in order of first occurrence),
        kept as codes: no string per token is made unless the column is read as a list."""
        coded = isinstance(values, tuple)
        n = len(values[1]) if coded else len(values)
        if n != self.n_tokens:
            raise ValueError(f"column {name!r} has {n} values for {self.n_tokens} tokens")
        if coded or isinstance(self.columns, ColumnMap):
            base = self.columns if isinstance(self.columns, ColumnMap) else ColumnMap(dict(self.columns))
            out = Corpus(base.with_column(name, values), self.sent_ptr, self.source, self.sent_lines)
        else:
            cols = dict(self.columns)
            cols[name] = values  # type: ignore[assignment]
            out = Corpus(cols, self.sent_ptr, self.source, self.sent_lines)
        # the other columns are unchanged: their codes (and the positions) still hold
        out._factorized.update({k: v for k, v in self._factorized.items()
                                if k != name and not (isinstance(k, tuple) and k[0] == name)})
        if coded:
            out._factorized[name] = values
        return out

    @classmethod
    def from_sentences(
        cls,
        tokens: Sequence[Sequence[str]],
        tags: Sequence[Sequence[str]] | None = None,
        *,
        extra: Mapping[str, Sequence[Sequence[str]]] | None = None,
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


def concat(corpora: Sequence["Corpus | None"]) -> "Corpus | None":
    """One corpus of these corpora's sentences in order (None for none; Nones and empty ones are left
    out; a single one is returned as it is). The columns are the first corpus's."""
    kept = [c for c in corpora if c is not None and len(c)]
    if len(kept) <= 1:
        return kept[0] if kept else None
    names = list(kept[0].columns)
    columns = {name: [v for c in kept for v in c.columns[name]] for name in names}
    offsets = np.cumsum([0] + [c.n_tokens for c in kept[:-1]])
    ptr = np.concatenate([[0], *[c.sent_ptr[1:] + off for c, off in zip(kept, offsets)]])
    return Corpus(columns, ptr.astype(np.int64), kept[0].source)


def edge(corpora: Sequence["Corpus | None"], n: int, *, last: bool) -> "Corpus | None":
    """The last (``last``) or first ``n`` sentences of the corpora taken together; None when none.
    What a model reading neighbouring sentences needs around a chunk of its input."""
    picked: list[Corpus] = []
    need = n
    for corpus in (reversed(corpora) if last else corpora):
        if corpus is None or not need:
            continue
        k = min(need, len(corpus))
        if k:
            picked.append(corpus.select(range(len(corpus) - k, len(corpus)) if last else range(k)))
            need -= k
    return concat(picked[::-1] if last else picked)

