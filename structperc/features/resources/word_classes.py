"""A language resource read as one class per word: one column of a corpus's word column.

A frequency band (`structperc.features.resources.bands`) and a capitalisation class
(`structperc.features.resources.case_evidence`) are such tables: a `WordClasses` looks each distinct word of a
corpus up once (`structperc.features.dictionary.word_columns`) and is kept inside the model as the arrays of
`structperc.features.resources.storage.pack_classes` (the words grouped by class, deflated) with the
resource's provenance, packed once however often the model is written.
"""
from __future__ import annotations

import abc
import functools
from typing import Any, ClassVar, TypeVar

import numpy as np

from structperc.features.dictionary import with_columns, word_columns
from structperc.io.corpus import Corpus

T = TypeVar("T", bound="WordClasses")


class WordClasses(abc.ABC):
    """Word → class, writing the column `column` of column ``word``; a
    `structperc.features.dictionary.ColumnDictionary`. A subclass names its column, its JSON ``kind``, the
    JSON key of its class list (`key`) and what it is (`what`, for errors), and says how a word finds its
    class (`value`: the table's own lookup rules for words it does not hold)."""

    column: ClassVar[str]
    kind: ClassVar[str]
    key: ClassVar[str]
    what: ClassVar[str]

    def __init__(self, classes: dict[str, str], *, word: str = "word", resource: dict | None = None):
        self.classes = dict(classes)
        self.word = word
        self.resource = dict(resource) if resource else None

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    @abc.abstractmethod
    def value(self, word: str) -> str:
        """The class of ``word``."""

    def values(self, corpus: Corpus) -> dict[str, Any]:
        return word_columns(corpus, self.word, {self.column: self.value})

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    @functools.cached_property
    def _packed(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The table as `pack_classes` stores it (computed once: the JSON and the arrays both need it)."""
        from structperc.features.resources.storage import pack_classes

        return pack_classes(self.classes)

    def _json(self) -> dict:
        """The subclass's own fields of `to_json`."""
        return {}

    def to_json(self) -> dict:
        return {"kind": self.kind, **self._json(), "resource": self.resource, self.key: self._packed[0]}

    def arrays(self) -> dict[str, np.ndarray]:
        return self._packed[1]

    @classmethod
    def from_json(cls: type[T], data: dict, word: str = "word", arrays: dict[str, np.ndarray] | None = None) -> T:
        from structperc.features.resources.storage import unpack_classes

        if not isinstance(data, dict) or data.get("kind") != cls.kind:
            raise ValueError(f"not a table of {cls.what}")
        return cls(unpack_classes(list(data[cls.key]), arrays), word=word, resource=data.get("resource"))
