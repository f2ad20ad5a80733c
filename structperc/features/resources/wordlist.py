"""A language's dictionary words as lexicon columns of their own, beside the training lexicon's.

The segmenter's lexicon columns (`structperc.features.lexicon`: the longest lexicon word starting at,
ending at and covering each character) mix the training words, jackknifed so that training sees them as
noisily as tagging does, with any words the user adds. An external dictionary's words may instead get
columns of their own, ``dicb``/``dice``/``dicm``, the same three lengths over its words only: the model
then weighs the two sources apart, e.g. trusts a dictionary whose segmentation standard differs from the
corpus's (jieba's words against SXU's) less than the training words. Which way pays is chosen on held-out
data (``scripts/studies/study_lang.py cws``).

`DictionaryWords` is a `structperc.features.dictionary.ColumnDictionary` kept inside the model: its words
deflated in one array (`structperc.features.resources.storage.pack_words`), with the resource's
provenance.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from structperc.features.dictionary import with_columns
from structperc.features.lexicon import SegmentationDictionary
from structperc.io.corpus import Corpus

DICTIONARY_COLUMNS = ("dicb", "dice", "dicm")


class DictionaryWords:
    """Writes `DICTIONARY_COLUMNS` of the character column from a fixed word list."""

    columns = DICTIONARY_COLUMNS

    def __init__(self, words: list[str], *, resource: dict | None = None):
        # kept as given (a resource's words come sorted and unique; sorting them again at every load of a
        # model cost a tenth of a second)
        self.words = list(words)
        self.resource = dict(resource) if resource else None

    @functools.cached_property
    def _lexicon(self) -> SegmentationDictionary:
        """The words as a segmentation lexicon: its three columns (compiled, with the slow path for tokens
        of more than one character) are these columns under other names."""
        return SegmentationDictionary(self.words)

    def values(self, corpus: Corpus) -> dict[str, Any]:
        return dict(zip(DICTIONARY_COLUMNS, self._lexicon.values(corpus).values()))

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    def to_json(self) -> dict:
        return {"kind": "dictionary-words", "resource": self.resource, "words": len(self.words)}

    def arrays(self) -> dict[str, np.ndarray]:
        from structperc.features.resources.storage import pack_words

        return {"words": pack_words(self.words)}

    @classmethod
    def from_json(cls, data: dict, arrays: dict[str, np.ndarray] | None = None) -> "DictionaryWords":
        from structperc.features.resources.storage import unpack_words

        if not isinstance(data, dict) or data.get("kind") != "dictionary-words":
            raise ValueError("not a dictionary's word list")
        if not arrays or "words" not in arrays:
            raise ValueError("the dictionary's words are missing")
        words = unpack_words(arrays["words"])
        if len(words) != data.get("words"):
            raise ValueError("the dictionary's word count does not match its words")
        return cls(words, resource=data.get("resource"))
