"""BMES: word segmentation as character tagging, words <-> tags.

B begins a word, M continues it, E ends it, S is a one-character word. The conversion is exact both
ways, so words -> tags -> words is the identity.
"""
from __future__ import annotations

import functools
from typing import Sequence

import numpy as np


def words_to_tags(words: Sequence[str]) -> list[str]:
    """B/M/E/S tags of the characters of ``words``.

    Examples
    --------
    >>> words_to_tags(["上海市", "体育", "局"])
    ['B', 'M', 'E', 'B', 'E', 'S']
    """
    tags: list[str] = []
    for w in words:
        tags.extend(_word_tags(len(w)))
    return tags


def bmes_codes(word_lengths: np.ndarray) -> tuple[list[str], np.ndarray]:
    """`words_to_tags` of a whole corpus from its word lengths (every sentence's words in a row), as
    ``(distinct tags in order of first occurrence, one code per character)``: a few array passes
    instead of a list per sentence (the gold tags of a segmentation corpus).

    >>> distinct, codes = bmes_codes(np.array([3, 2, 1]))
    >>> [distinct[c] for c in codes]
    ['B', 'M', 'E', 'B', 'E', 'S']
    """
    n = np.asarray(word_lengths, dtype=np.int64)
    if (n < 1).any():
        raise ValueError("a word has at least one character")
    ends = np.cumsum(n)
    starts = ends - n
    codes = np.full(int(ends[-1]) if len(n) else 0, 1, dtype=np.int64)  # M, unless set below
    single = n == 1
    codes[starts[~single]] = 0
    codes[ends[~single] - 1] = 2
    codes[starts[single]] = 3
    letters = np.array(["B", "M", "E", "S"])
    used, first = np.unique(codes, return_index=True)
    order = used[np.argsort(first)]
    rank = np.zeros(4, dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return letters[order].tolist(), rank[codes]


@functools.lru_cache(maxsize=256)
def _word_tags(n: int) -> tuple[str, ...]:
    """The tags of one word of ``n`` characters (cached: a corpus has few distinct word lengths, and
    training converts every word of it)."""
    return () if n == 0 else ("S",) if n == 1 else ("B",) + ("M",) * (n - 2) + ("E",)


def tags_to_words(chars: Sequence[str], tags: Sequence[str]) -> list[str]:
    """Words from characters and their tags; a word ends after E or S (or at the end of the line).

    Ill-formed sequences (which constrained decoding never produces) still give a segmentation:
    B or S always start a new word.

    Examples
    --------
    >>> tags_to_words("上海市体育局", ["B", "M", "E", "B", "E", "S"])
    ['上海市', '体育', '局']
    """
    words: list[str] = []
    cur: list[str] = []
    for ch, tag in zip(chars, tags):
        if tag in ("B", "S") and cur:
            words.append("".join(cur))
            cur = []
        cur.append(ch)
        if tag in ("E", "S"):
            words.append("".join(cur))
            cur = []
    if cur:
        words.append("".join(cur))
    return words


def word_spans(words: Sequence[str]) -> list[tuple[int, int]]:
    """Character offsets ``(start, end)`` of each word: what bakeoff scoring compares."""
    spans = []
    pos = 0
    for w in words:
        spans.append((pos, pos + len(w)))
        pos += len(w)
    return spans
