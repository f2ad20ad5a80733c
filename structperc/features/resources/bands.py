"""Word frequency bands: a coarse class of how common a word is in a large unlabelled text.

The band is the word's frequency on the Zipf scale (Brysbaert & New 2009; wordfreq's
``zipf_frequency``): log10 of its occurrences per billion words, rounded — 7 for "the", 3 for a word
met once in ten million, 0 for a word met once in a billion. A tagger sees the band of every word,
seen in training or not, so an unknown word that the language uses often is told apart from a rare
name or typo. The column is ``frq``; words below `MIN_BAND` (and unknown words) read ``<unk>``.

`WordBands` is a `structperc.features.resources.word_classes.WordClasses`: kept inside the model as arrays,
with the resource's provenance.
"""
from __future__ import annotations

import math

from structperc.features.resources.word_classes import WordClasses

BAND_COLUMN = "frq"
UNKNOWN = "<unk>"
#: Words of a lower band are not stored (the English table would hold 800,000 more words of band 1)
#: and read `UNKNOWN`, as words the resource does not know do.
MIN_BAND = 2
#: The lowest natural-log probability of a word of band `MIN_BAND` (rounding half to even, as `zipf_band`
#: does, and a hair lower for the float error): the words below it can be left out while reading.
MIN_LOG_PROB = (MIN_BAND - 0.5 - 9) * math.log(10) - 1e-9


def zipf_band(log_prob: float) -> int:
    """The rounded Zipf frequency of a word of natural-log probability ``log_prob``.

    Examples
    --------
    >>> zipf_band(math.log(1e-3)), zipf_band(math.log(1e-7)), zipf_band(-3.53)
    (6, 2, 7)
    """
    return int(round(log_prob / math.log(10) + 9))


class WordBands(WordClasses):
    """Word → frequency band (a string), writing the ``frq`` column of column ``word``; looked up as
    written, then lowercased."""

    column, kind, key, what = BAND_COLUMN, "zipf-bands", "bands", "frequency bands"

    @classmethod
    def from_log_probs(cls, log_probs: dict[str, float], *, word: str = "word",
                       resource: dict | None = None) -> "WordBands":
        bands = {w: str(b) for w, p in log_probs.items() if (b := zipf_band(p)) >= MIN_BAND and "\n" not in w}
        return cls(bands, word=word, resource=resource)

    @property
    def bands(self) -> dict[str, str]:
        """Word → band (the table)."""
        return self.classes

    def value_of(self, word: str, written: str | None, lower: str | None) -> str:
        return written if written is not None else lower if lower is not None else UNKNOWN

    def band(self, word: str) -> str:
        """The band of ``word`` (`value`)."""
        return self.value(word)

    def _json(self) -> dict:
        return {"min_band": MIN_BAND}
