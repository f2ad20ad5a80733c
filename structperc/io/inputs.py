"""What users hand a tagger, as a `Corpus`: a CoNLL/CoNLL-U path, a `Corpus`, a `datasets.Dataset`,
or token lists (one string per token, or a tuple of column values per token) with optional tags.

Which of them an object is, and how it is read, is the input-format registry's
(`structperc.io.registry`); this module asks it and checks what every input must give.
"""
from __future__ import annotations

from typing import Any

from structperc.errors import InputError
from structperc.io.corpus import Corpus
from structperc.io.lists import Columns, is_dataset, token_columns
from structperc.io.readers import Request
from structperc.io.registry import format_given

__all__ = ["Columns", "is_dataset", "to_corpus", "token_columns"]


def to_corpus(X: Any, y: Any, task: Columns, *, need_tags: bool, reads: set[str] | None,
              token_columns: set[str] | None = None, dataset_columns: dict | None = None,
              unknown: str | None = "?") -> Corpus:
    """``X`` (and tags ``y`` for token lists) as a corpus with the task's columns, read by the
    registry's entry for ``X`` (`structperc.io.registry.format_given`).

    ``reads`` names the columns a file is read for (None: all), so its other columns never become
    strings; token tuples may hold every input column or just ``token_columns`` (a fitted model's:
    the columns its templates read); ``need_tags`` requires the
    gold tag column; ``dataset_columns`` maps a dataset's ``tokens``/``tags``/``features`` columns.
    A ``None`` tag in token lists is an unknown tag: it becomes the ``unknown`` marker (``?``, what
    a file writes; partial-label training), and is refused when ``unknown`` is None.
    """
    fmt = format_given(X)
    assert fmt.read is not None
    corpus = fmt.read(X, y, task, Request(need_tags, reads, token_columns, dataset_columns, unknown))
    tag = task.tag_column
    if need_tags and tag not in corpus.columns:
        raise InputError(f"no {tag!r} column with gold tags", corpus.source)
    if len(corpus) == 0:
        raise InputError("no sentences", corpus.source)
    return corpus
