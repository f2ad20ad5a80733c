"""A language resource read as one class per word: one column of a corpus's word column.

A frequency band (`structperc.features.resources.bands`) and a capitalisation class
(`structperc.features.resources.case_evidence`) are such tables: a `WordClasses` looks each distinct word of a
corpus up once (`structperc.features.dictionary.word_columns`) and is kept inside the model as the arrays of
`structperc.features.resources.storage.pack_classes` (the words grouped by class, deflated) with the
resource's provenance, packed once however often the model is written.
"""
from __future__ import annotations

import abc
from typing import Any, ClassVar, Mapping, TypeVar

import numpy as np

from structperc.features.dictionary import with_columns
from structperc.features.resources.storage import StoredClasses, spellings
from structperc.io.corpus import Corpus, compact

T = TypeVar("T", bound="WordClasses")


class WordClasses(abc.ABC):
    """Word → class, writing the column `column` of column ``word``; a
    `structperc.features.dictionary.ColumnDictionary`. A subclass names its column, its JSON ``kind``, the
    JSON key of its class list (`key`) and what it is (`what`, for errors), and says how a word finds its
    class (`value`: the table's own lookup rules for words it does not hold, which read the word as written
    and lowercased). A model's table stays as stored until a lookup needs it (`StoredClasses`)."""

    column: ClassVar[str]
    kind: ClassVar[str]
    key: ClassVar[str]
    what: ClassVar[str]

    def __init__(self, classes: dict[str, str] | StoredClasses, *, word: str = "word",
                 resource: dict | None = None):
        self._stored = classes if isinstance(classes, StoredClasses) else StoredClasses.of(classes)
        self.word = word
        self.resource = dict(resource) if resource else None

    @property
    def classes(self) -> dict[str, str]:
        """Word → class, the whole table."""
        return self._stored.table()

    @property
    def n_words(self) -> int:
        """The number of words the table holds (without building its dictionary)."""
        return len(self._stored)

    @property
    def columns(self) -> tuple[str, ...]:
        return (self.column,)

    @abc.abstractmethod
    def value_of(self, word: str, written: str | None, lower: str | None) -> str:
        """The class of ``word``, given the table's class of it as written and of its lowercase form (None: the
        table does not hold that spelling)."""

    def value(self, word: str, table: Mapping[str, str] | None = None) -> str:
        """The class of ``word`` (``table``: the part of `classes` holding ``word`` and its lowercase form)."""
        classes = self.classes if table is None else table
        return self.value_of(word, classes.get(word), classes.get(word.lower()))

    def values(self, corpus: Corpus) -> dict[str, Any]:
        """The column as ``(distinct, codes)``: the distinct words, as written and lowercased, found at once
        in the table's index (`spellings`, shared with the model's other tables); `value_of` runs for the words not
        found as written only."""
        distinct, codes = corpus.factorize(self.word)
        found = spellings(corpus, self.word)
        names = self._stored.class_names
        ids = self._stored.class_ids(found.query)
        of_word = ids[:found.n_words].copy()
        lower = ids[found.lower]
        number = {c: i for i, c in enumerate(names)}
        values = list(names)
        for i in np.flatnonzero(of_word < 0).tolist():
            low = lower[i]
            value = self.value_of(distinct[i], None, names[low] if low >= 0 else None)
            k = number.get(value)
            if k is None:
                k = number[value] = len(values)
                values.append(value)
            of_word[i] = k
        kept, of_word = compact(values, of_word)  # in order of first occurrence
        return {self.column: (kept, of_word[codes])}

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    @property
    def _packed(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The table as `pack_classes` stores it (packed once: the JSON and the arrays both need it)."""
        return self._stored.packed()

    def _json(self) -> dict:
        """The subclass's own fields of `to_json`."""
        return {}

    def to_json(self) -> dict:
        return {"kind": self.kind, **self._json(), "resource": self.resource, self.key: self._packed[0]}

    def arrays(self) -> dict[str, np.ndarray]:
        return self._packed[1]

    @classmethod
    def from_json(cls: type[T], data: dict, word: str = "word", arrays: dict[str, np.ndarray] | None = None) -> T:
        if not isinstance(data, dict) or data.get("kind") != cls.kind:
            raise ValueError(f"not a table of {cls.what}")
        return cls(StoredClasses(list(data[cls.key]), arrays), word=word, resource=data.get("resource"))
