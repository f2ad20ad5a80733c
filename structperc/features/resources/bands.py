"""Word frequency bands: a coarse class of how common a word is in a large unlabelled text.

The band is the word's frequency on the Zipf scale (Brysbaert & New 2009; wordfreq's
``zipf_frequency``): log10 of its occurrences per billion words, rounded — 7 for "the", 3 for a word
met once in ten million, 0 for a word met once in a billion. A tagger sees the band of every word,
seen in training or not, so an unknown word that the language uses often is told apart from a rare
name or typo. The column is ``frq``; words below `MIN_BAND` (and unknown words) read ``<unk>``.

`WordBands` is a `structperc.features.dictionary.ColumnDictionary` kept inside the model as arrays
(`structperc.features.resources.storage.pack_classes`), with the resource's provenance.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from structperc.features.dictionary import with_columns, word_columns
from structperc.io.corpus import Corpus

BAND_COLUMN = "frq"
UNKNOWN = "<unk>"
#: Words of a lower band are not stored (the English table would hold 800,000 more words of band 1)
#: and read `UNKNOWN`, as words the resource does not know do.
MIN_BAND = 2


def zipf_band(log_prob: float) -> int:
    """The rounded Zipf frequency of a word of natural-log probability ``log_prob``.

    Examples
    --------
    >>> zipf_band(math.log(1e-3)), zipf_band(math.log(1e-7)), zipf_band(-3.53)
    (6, 2, 7)
    """
    return int(round(log_prob / math.log(10) + 9))


class WordBands:
    """Word → frequency band (a string), writing the ``frq`` column of column ``word``; looked up as
    written, then lowercased."""

    columns = (BAND_COLUMN,)

    def __init__(self, bands: dict[str, str], *, word: str = "word", resource: dict | None = None):
        self.bands = dict(bands)
        self.word = word
        self.resource = dict(resource) if resource else None

    @classmethod
    def from_log_probs(cls, log_probs: dict[str, float], *, word: str = "word",
                       resource: dict | None = None) -> "WordBands":
        bands = {w: str(b) for w, p in log_probs.items() if (b := zipf_band(p)) >= MIN_BAND and "\n" not in w}
        return cls(bands, word=word, resource=resource)

    def band(self, word: str) -> str:
        hit = self.bands.get(word)
        return hit if hit is not None else self.bands.get(word.lower(), UNKNOWN)

    def values(self, corpus: Corpus) -> dict[str, Any]:
        return word_columns(corpus, self.word, {BAND_COLUMN: self.band})

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    def to_json(self) -> dict:
        from structperc.features.resources.storage import pack_classes

        return {"kind": "zipf-bands", "min_band": MIN_BAND, "resource": self.resource,
                "bands": pack_classes(self.bands)[0]}

    def arrays(self) -> dict[str, np.ndarray]:
        from structperc.features.resources.storage import pack_classes

        return pack_classes(self.bands)[1]

    @classmethod
    def from_json(cls, data: dict, word: str = "word", arrays: dict[str, np.ndarray] | None = None) -> "WordBands":
        from structperc.features.resources.storage import unpack_classes

        if not isinstance(data, dict) or data.get("kind") != "zipf-bands":
            raise ValueError("not a table of frequency bands")
        return cls(unpack_classes(list(data["bands"]), arrays), word=word, resource=data.get("resource"))
