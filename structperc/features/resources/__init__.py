"""Language resources read from installed packages: word clusters, word probabilities, word lists.

A tagger trained on a few thousand sentences has seen few of the words it will meet. Word classes
learnt from much more unlabelled text close part of that gap: Brown clusters (Brown et al. 1992,
class-based n-gram models) gave large gains as features for dependency parsing (Koo, Carreras &
Collins 2008) and named-entity recognition (Ratinov & Roth 2009), and Turian, Ratinov & Bengio (2010)
found them as good as word embeddings for chunking and NER at a fraction of the cost. Rather than
learning them again (``structperc clusters``), this room reads ones already made and published under
permissive licences: the clusters and smoothed word log probabilities spaCy's English, Spanish,
German (and, probabilities only, Greek) models were built with (``spacy-lookups-data``, MIT), and
jieba's Chinese dictionary of words and their frequencies (``jieba``, MIT).

`registry` is the table of what exists for which language; `readers` reads it. Reading is always
local, from the installed package (``pip install "structperc[resources]"``); nothing is downloaded.
"""
from __future__ import annotations

from structperc.features.resources.formats import decode_cluster
from structperc.features.resources.readers import cluster_paths, jieba_words, word_log_probs
from structperc.features.resources.registry import (
    EXTRA,
    KINDS,
    RESOURCES,
    Resource,
    languages,
    provenance,
    resource,
    resources_for,
)

__all__ = [
    "EXTRA", "KINDS", "RESOURCES", "Resource", "cluster_paths", "decode_cluster", "jieba_words",
    "languages", "provenance", "resource", "resources_for", "word_log_probs",
]
