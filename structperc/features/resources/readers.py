"""The language resources as dictionaries, read from the installed packages (never downloaded).

Each call reads and parses the file again (the English tables hold a million words; caching them is
left to the caller, which knows how long it needs them). A missing package is one `InputError` line
naming the package and ``pip install "structperc[resources]"``.

Brown clusters (Brown et al. 1992) as features: Koo, Carreras & Collins (2008) for parsing, Ratinov &
Roth (2009) for NER, Turian, Ratinov & Bengio (2010) for chunking and NER, the usual path prefixes of
4, 6, 10 and 20 bits and the full path (`structperc.features.clusters`).
"""
from __future__ import annotations

from typing import cast

from structperc.features.resources.registry import resource


def cluster_paths(lang: str) -> dict[str, str]:
    """Word -> Brown path (a string of ``0``/``1``) of the words ``spacy-lookups-data`` trusts for ``lang``.

    Words stored with cluster 0 (too rare to place) are left out.
    """
    return cast("dict[str, str]", resource((lang, "clusters")).read())


def word_log_probs(lang: str) -> dict[str, float]:
    """Word -> smoothed log probability of ``spacy-lookups-data`` for ``lang``."""
    return cast("dict[str, float]", resource((lang, "probabilities")).read())


def jieba_words() -> dict[str, int]:
    """Word -> frequency of jieba's Chinese dictionary (``jieba/dict.txt``)."""
    return cast("dict[str, int]", resource(("zh", "words")).read())
