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
from typing import Any, Iterable

import numpy as np

from structperc.features.dictionary import with_columns
from structperc.features.lexicon import MAX_VALUE, SegmentationDictionary
from structperc.features.lexicon_match import LexiconMatcher, line_points
from structperc.features.resources.storage import count_words, pack_text, text_words, unpack_text, words_text
from structperc.io.corpus import Corpus

DICTIONARY_COLUMNS = ("dicb", "dice", "dicm")


class DictionaryWords:
    """Writes `DICTIONARY_COLUMNS` of the character column from a fixed word list.

    The words are held as the text `structperc.features.resources.storage.pack_words` stores (`words_text`: each
    ended by a newline): a model's dictionary (jieba's: 136,547 words) is matched from that text's code points
    (`structperc.features.lexicon_match.LexiconMatcher.of_lines`), so a load makes no string per word; the
    list of words is made only when asked (`words`), or for tokens of more than one character."""

    columns = DICTIONARY_COLUMNS

    def __init__(self, words: Iterable[str], *, resource: dict | None = None):
        # kept as given (a resource's words come sorted and unique; sorting them again at every load of a
        # model cost a tenth of a second)
        self._text = words_text(words)
        self._packed: np.ndarray | None = None
        self.resource = dict(resource) if resource else None

    @functools.cached_property
    def words(self) -> list[str]:
        """The words, in the order given."""
        return text_words(self._text)

    @property
    def n_words(self) -> int:
        return count_words(self._text)

    @functools.cached_property
    def _matcher(self) -> LexiconMatcher:
        return LexiconMatcher.of_lines(self._text)

    def word_source(self) -> tuple[np.ndarray, np.ndarray]:
        """The words for a table shared with the segmenter's lexicon (`structperc.features.dictionary.Dictionaries`):
        their code points and lengths, cut from the stored text."""
        return line_points(self._text)

    @functools.cached_property
    def _lexicon(self) -> SegmentationDictionary:
        """The words as a segmentation lexicon, for tokens of more than one character (which the compiled
        matcher does not take): its three columns are these columns under other names."""
        return SegmentationDictionary(self.words)

    def values(self, corpus: Corpus) -> dict[str, Any]:
        coded = self._matcher.columns(corpus, max_value=MAX_VALUE)
        return dict(zip(DICTIONARY_COLUMNS, (coded if coded is not None else self._lexicon.values(corpus)).values()))

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    def to_json(self) -> dict:
        return {"kind": "dictionary-words", "resource": self.resource, "words": self.n_words}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"words": self._packed if self._packed is not None else pack_text(self._text)}

    @classmethod
    def from_json(cls, data: dict, arrays: dict[str, np.ndarray] | None = None) -> "DictionaryWords":
        if not isinstance(data, dict) or data.get("kind") != "dictionary-words":
            raise ValueError("not a dictionary's word list")
        if not arrays or "words" not in arrays:
            raise ValueError("the dictionary's words are missing")
        out = cls((), resource=data.get("resource"))
        out._text, out._packed = unpack_text(arrays["words"]), arrays["words"]
        if out.n_words != data.get("words"):
            raise ValueError("the dictionary's word count does not match its words")
        return out
