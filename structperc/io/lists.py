"""Token lists handed to a tagger (one string per token, or a tuple of column values per token) with
optional tags, as a `Corpus`: the reader of the ``lists`` input format (`structperc.io.registry`).
"""
from __future__ import annotations

from typing import Any, Iterable, Protocol, Sequence

from structperc.errors import InputError
from structperc.io.corpus import Corpus


class Columns(Protocol):
    """What reading user input needs of a task (`structperc.features.task.Task` is one): its columns
    left to right, the token column, the column to predict, and the columns a user hands in."""

    @property
    def columns(self) -> tuple[str, ...]: ...
    @property
    def token_column(self) -> str: ...
    @property
    def tag_column(self) -> str: ...
    @property
    def inputs(self) -> list[str]: ...


def is_dataset(X: Any) -> bool:
    """Whether ``X`` is a `datasets.Dataset` (checked without importing `datasets`)."""
    return type(X).__module__.startswith("datasets.") and hasattr(X, "features")


def token_columns(task: Columns, reads: set[str] | None) -> list[str]:
    """The values a token of a plain list gives, in order: the task's input columns that a fitted
    model reads (``reads``: its templates' columns; the tokens at least), or all of them (None)."""
    inputs = task.inputs
    if reads is None:
        return inputs
    return [c for c in inputs if c in reads] or inputs[:1]


def from_lists(X: Sequence, y: Any, task: Columns, reads: set[str] | None,
                unknown: str | None = "?") -> Corpus:
    """Token lists: strings (one column) or tuples. A tuple holds every input column, or those the
    model reads, or — as a line of a CoNLL file that `structperc tag` reads — every column of the
    task (``_`` columns and the gold tag included), or all but a trailing gold tag column. Gold tags
    in the tuples are the tags when ``y`` is None."""
    inputs = task.inputs
    needed = token_columns(task, reads)
    for si, s in enumerate(X):
        if isinstance(s, str):
            raise InputError(f"sentence {si} is a string: give each sentence as a list of tokens")
    sents = [list(s) for s in X]
    first = next((s[0] for s in sents if s), None)
    if not any(sents):  # no token at all (empty sentences): no shape to check, every column empty
        cols: dict[str, list[list[str]]] = {name: [[] for _ in sents] for name in needed}
    elif not isinstance(first, (tuple, list)):
        inputs = needed
        cols = {inputs[0]: sents}
        if len(inputs) > 1:
            raise InputError(f"this model reads {len(inputs)} columns ({', '.join(inputs)}): "
                             "give each token as a tuple")
        _strings_only(sents)
    else:
        shapes = _tuple_shapes(task, inputs, needed)
        names = shapes.get(len(first), inputs)
        for si, s in enumerate(sents):
            if any(not isinstance(tok, (tuple, list)) or len(tok) != len(names) for tok in s):
                other = [f"{len(n)} ({', '.join(n)})" for n in shapes.values() if n is not names]
                raise InputError(f"sentence {si}: every token needs {len(names)} values "
                                 f"({', '.join(names)})" + (f"; or else {' or '.join(other)}" if other else ""))
        _strings_only(sents, [i for i, name in enumerate(names) if name != "_" and name != task.tag_column])
        cols = {name: [[str(tok[i]) for tok in s] for s in sents] for i, name in enumerate(names)
                if name != "_" and name != task.tag_column}
        if task.tag_column in names:
            i = names.index(task.tag_column)
            gold = [[tok[i] for tok in s] for s in sents]
            if y is None:
                y = gold
    first_column = next(iter(cols))
    if y is not None:
        if not isinstance(y, (Sequence, str, bytes)) and isinstance(y, Iterable):
            y = list(y)  # read twice below: a generator once
        _tags_only(y)
        y = _unknown_tags(y, unknown)
    return Corpus.from_sentences(cols[first_column], y,
                                 extra={k: v for k, v in cols.items() if k != first_column},
                                 token_column=first_column, tag_column=task.tag_column)


def _strings_only(sents: list[list[Any]], fields: list[int] | None = None) -> None:
    """Refuse a token that is not a string (None, a number, bytes: it would be read as the text of its
    ``str()``, ``"None"``); with ``fields``, the values at those places of each token tuple."""
    for si, s in enumerate(sents):
        values = s if fields is None else [tok[i] for tok in s for i in fields]
        if all(isinstance(v, str) for v in values):
            continue
        at = next(k for k, v in enumerate(values) if not isinstance(v, str))
        ti = at if fields is None else at // len(fields)
        raise InputError(f"sentence {si}, token {ti}: {values[at]!r} is not a string (a token is a string, or a "
                         "tuple of strings when the model reads several columns)")


def _tags_only(y: Any) -> None:
    """Refuse a tag that is neither a string nor None (unknown): a number would become the label of its
    ``str()``, as a number token would (`_strings_only`)."""
    if isinstance(y, (str, bytes)) or not isinstance(y, Iterable):
        what = "a string" if isinstance(y, (str, bytes)) else type(y).__name__
        raise InputError(f"the tags must be one list of tags per sentence, not {what}")
    for si, s in enumerate(y):
        if isinstance(s, (str, bytes)) or not isinstance(s, Iterable):
            what = "a string" if isinstance(s, (str, bytes)) else type(s).__name__
            raise InputError(f"sentence {si}: its tags must be a list of tags (one per token), not {what}")
        for ti, t in enumerate(s):
            if t is not None and not isinstance(t, str):
                raise InputError(f"sentence {si}, token {ti}: the tag {t!r} is not a string (or None, unknown)")


def _unknown_tags(y: Any, unknown: str | None) -> Any:
    """Tag lists with ``None`` (an unknown tag) replaced by the ``unknown`` marker; other values
    as strings. Untouched (not copied) when no tag is None."""
    if not isinstance(y, Sequence) or not any(t is None for s in y if isinstance(s, Sequence)
                                              and not isinstance(s, str) for t in s):
        return y
    if unknown is None:
        raise InputError("a tag is None (unknown) but unknown tags are disabled (unknown_tag=None)")
    return [[unknown if t is None else str(t) for t in s] for s in y]


def _tuple_shapes(task: Columns, inputs: list[str], needed: list[str]) -> dict[int, list[str]]:
    """The column names of a token tuple by its length (the first shape of a length wins)."""
    columns = list(task.columns)
    shapes: dict[int, list[str]] = {}
    candidates = [inputs, needed, columns]
    if columns[-1] == task.tag_column:
        candidates.append(columns[:-1])
    for names in candidates:
        shapes.setdefault(len(names), names)
    return shapes
