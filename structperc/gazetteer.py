"""Entity gazetteers learnt from the training data itself, jackknifed.

Each token gets a ``gaz`` value: ``B-TYPE``/``I-TYPE`` when a longest match of known entity strings
(lowercased) covers it, ``O`` otherwise. Training sentences are matched against the entities of the
*other* folds: matched against their own entities the feature would always agree with the gold tags
and the model would trust it blindly (the same reason as the segmentation lexicon).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from structperc.corpus.columns import Corpus
from structperc.schemes import convert

GAZ_COLUMN = "gaz"
MAX_ENTITY_TOKENS = 6


def entities(words: list[str], tags: list[str], scheme: str) -> list[tuple[tuple[str, ...], str]]:
    """(lowercased token tuple, type) of every entity span of one sentence."""
    iob2 = convert(tags, scheme, "iob2") if scheme != "iob2" else tags
    out, start, kind = [], None, ""
    for i, tag in enumerate(list(iob2) + ["O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind):
            out.append((tuple(w.lower() for w in words[start:i]), kind))
            start = None
        if tag.startswith("B-") or (tag.startswith("I-") and start is None):
            start, kind = i, tag[2:]
    return out


class Gazetteer:
    """Entity strings with their most frequent type; longest-match lookup."""

    def __init__(self, items: list[tuple[tuple[str, ...], str]]):
        counts: dict[tuple[str, ...], Counter] = {}
        for toks, kind in items:
            if 0 < len(toks) <= MAX_ENTITY_TOKENS:
                counts.setdefault(toks, Counter())[kind] += 1
        self.types = {toks: c.most_common(1)[0][0] for toks, c in counts.items()}
        self.max_len = max((len(t) for t in self.types), default=0)

    def to_json(self) -> list:
        return [[list(t), k] for t, k in sorted(self.types.items())]

    @classmethod
    def from_json(cls, data: list) -> "Gazetteer":
        g = cls([])
        g.types = {tuple(t): k for t, k in data}
        g.max_len = max((len(t) for t in g.types), default=0)
        return g

    def column(self, words: list[str]) -> list[str]:
        low = [w.lower() for w in words]
        out = ["O"] * len(words)
        i = 0
        while i < len(words):
            for n in range(min(self.max_len, len(words) - i), 0, -1):
                kind = self.types.get(tuple(low[i:i + n]))
                if kind is not None:
                    out[i] = "B-" + kind
                    for j in range(i + 1, i + n):
                        out[j] = "I-" + kind
                    i += n
                    break
            else:
                i += 1
        return out


def add_column(corpus: Corpus, gazetteer: Gazetteer | list[Gazetteer], word: str,
               fold_of: np.ndarray | None = None) -> Corpus:
    """``corpus`` with a ``gaz`` column (one gazetteer per fold when ``fold_of`` is given)."""
    values: list[str] = []
    for i, sent in enumerate(corpus.sentences(word)):
        g = gazetteer[int(fold_of[i])] if fold_of is not None else gazetteer
        values.extend(g.column(sent))
    return corpus.with_column(GAZ_COLUMN, values)


def jackknifed(corpus: Corpus, word: str, tag: str, scheme: str, folds: int, seed: int,
               base: Gazetteer | None = None) -> tuple[Corpus, Gazetteer]:
    """Training corpus with fold-wise ``gaz`` values, and the gazetteer of all of it (plus ``base``,
    the gazetteer of an earlier training when training continues)."""
    sents = list(zip(corpus.sentences(word), corpus.sentences(tag)))
    per_sentence = [entities(w, t, scheme) for w, t in sents]
    old = list(base.types.items()) if base is not None else []
    folds = max(1, min(folds, len(sents)))
    fold_of = np.random.default_rng(seed).permutation(len(sents)) % folds
    gazetteers = [Gazetteer(old + [e for i, es in enumerate(per_sentence) if fold_of[i] != k for e in es])
                  for k in range(folds)] if folds > 1 else None
    full = Gazetteer(old + [e for es in per_sentence for e in es])
    return add_column(corpus, gazetteers or full, word, fold_of if folds > 1 else None), full
