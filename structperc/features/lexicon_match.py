"""The segmentation lexicon's ``lexb``/``lexe``/``lexm`` columns in compiled code, for a whole corpus at
once, and for every jackknife fold in the same pass (`structperc.features.lexicon_kernels`).

`structperc.features.lexicon.Lexicon.columns` is the reference (and the path without compiled
kernels); `LexiconMatcher` gives the same values, as ``(distinct, codes)`` columns (no string per
character). The inputs are checked here, so a kernel can never read out of bounds.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from structperc.compiled.boundary import freeze, rising
from structperc.features.atomic import code_points
from structperc.io.corpus import Corpus

#: Longest-match values are capped (`structperc.features.lexicon.MAX_VALUE`) and written as strings.
_NAMES = ("lexb", "lexe", "lexm")
#: Fold masks are int64 bit sets: at most this many jackknife folds go through the compiled pass...
MAX_FOLDS = 62
#: ... or word lists through one table (`LexiconMatcher.of_sources`).
MAX_SOURCES = 62


def _kernels() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``build_table`` and ``longest_matches``: the ahead-of-time build, else numba's JIT."""
    from structperc.compiled import loader

    build, match = loader.aot("build_table"), loader.aot("longest_matches")
    if build is None or match is None:
        from structperc.features import lexicon_kernels

        build, match = lexicon_kernels.build_table, lexicon_kernels.longest_matches
    return build, match


def word_points(words: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The code points of ``words`` one after the other, and each word's length."""
    words = list(words)
    return (code_points("".join(words)).astype(np.int64),
            np.fromiter(map(len, words), dtype=np.int64, count=len(words)))


def line_points(text: str) -> tuple[np.ndarray, np.ndarray]:
    """`word_points` of the words of ``text``, each ended by a newline, cut from the text's code points (no
    string per word)."""
    if text and not text.endswith("\n"):
        raise ValueError("every word must end with a newline")
    points = code_points(text).astype(np.int64)
    newline = points == ord("\n")
    return points[~newline], np.diff(np.flatnonzero(newline), prepend=-1) - 1


def corpus_points(corpus: Corpus, column: str = "char") -> np.ndarray | None:
    """One code point per token of ``column``, or None when some token is not one character."""
    distinct, codes = corpus.factorize(column)
    joined = "".join(distinct)
    if len(joined) != len(distinct) or "" in distinct:  # without an empty token, one character each
        return None
    points = code_points(joined).astype(np.int64)
    return points[np.asarray(codes, dtype=np.int64)] if len(codes) else np.zeros(0, dtype=np.int64)


class LexiconMatcher:
    """Words (those of length ≥ 2 count) with a fold mask each (bit ``f``: the word occurs in jackknife
    fold ``f``'s sentences; -1: in every fold's lexicon, e.g. a user's word) in a compiled hash table.

    >>> m = LexiconMatcher(["上海", "上海市", "体育局"])
    >>> from structperc.io.segmented import char_corpus
    >>> distinct, codes = m.columns(char_corpus(["上海市体育局"]), max_value=5)["lexb"]
    >>> [distinct[c] for c in codes]
    ['3', '0', '0', '3', '0', '0']
    """

    def __init__(self, words: Sequence[str], masks: np.ndarray | None = None):
        self._build(*word_points(words), masks)

    @classmethod
    def of_lines(cls, text: str) -> "LexiconMatcher":
        """The matcher of the words of ``text``, each ended by a newline (the layout
        `structperc.features.resources.storage.pack_words` stores), every word in every fold: the words
        are cut from the text's code points, so no string is made per word (a dictionary of 10^5 words
        is read at every load of a model)."""
        matcher = cls.__new__(cls)
        matcher._build(*line_points(text), None)
        return matcher

    @classmethod
    def of_sources(cls, sources: Sequence[tuple[np.ndarray, np.ndarray]]) -> "LexiconMatcher":
        """One table of several word lists (each as `word_points` gives it: code points one word after the
        other, and the words' lengths), a word's mask bit ``s`` saying it is in list ``s``: `columns` with
        ``names`` for each list then finds every list's longest words in one walk over the text. A segmenter
        that reads its training lexicon and a language's dictionary (jieba's words: ``lex*`` and ``dic*``)
        walked the text twice; the walks share most pieces (SXU test ×5, best of 9: 56 ms for the two, 29 ms for one).

        The lists' words often repeat (most training words are jieba's too) and share prefixes, so their
        summed lengths overstate the pieces: the table is sized to be at most three quarters full even if
        none repeats (SXU's and jieba's: 183,746 pieces of at most 267,230, a table a third full)."""
        if not 1 <= len(sources) <= MAX_SOURCES:
            raise ValueError(f"1 to {MAX_SOURCES} word lists, not {len(sources)}")
        masks = np.concatenate([np.full(len(lengths), 1 << s, dtype=np.int64)
                                for s, (_, lengths) in enumerate(sources)])
        matcher = cls.__new__(cls)
        matcher._build(np.concatenate([points for points, _ in sources]),
                       np.concatenate([lengths for _, lengths in sources]), masks,
                       fill=0.75 if len(sources) > 1 else 0.5)
        matcher.sources = len(sources)
        return matcher

    #: How many word lists the table holds (`of_sources`); one unless made there.
    sources = 1

    def _build(self, codes: np.ndarray, lengths: np.ndarray, masks: np.ndarray | None, fill: float = 0.5) -> None:
        """The hash table of the words ``codes`` holds one after the other (``lengths`` code points each);
        the words themselves are not kept (a piece is known by its parent's slot and its last code point,
        `structperc.features.lexicon_kernels`). The table has at least ``1 / fill`` slots per piece the words
        could enter (a word of length m enters at most m - 1)."""
        masks = (np.full(len(lengths), -1, dtype=np.int64) if masks is None
                 else np.ascontiguousarray(masks, dtype=np.int64))
        if len(masks) != len(lengths):
            raise ValueError(f"{len(lengths)} words but {len(masks)} masks")
        ptr = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        long = lengths >= 2
        self.max_len = int(lengths[long].max()) if long.any() else 0
        capacity = int((lengths[long] - 1).sum())  # a word and its proper prefixes of length ≥ 2
        slots = int(np.ceil(capacity / fill)) + 1  # one slot stays empty even at a fill of 1
        self.table = np.full((1 << max(3, (slots - 1).bit_length()), 2), -1, dtype=np.int64)  # (key, mask)
        build, self._match = _kernels()
        self.n_entries = int(build(codes, ptr, masks, self.table))
        freeze(self.table)  # checked once by the matching's contract, not at every batch

    def lengths(self, points: np.ndarray, sent_ptr: np.ndarray, fold: np.ndarray | None = None) -> np.ndarray:
        """int64 (3, n): the longest word starting at, ending at and covering each of the code points
        ``points`` (sentences cut at ``sent_ptr``), with sentence ``s`` seeing the words of the folds
        other than ``fold[s]`` (all of them where ``fold`` is None or -1). A table of several word lists
        (`of_sources`) gives (3·S, n), list ``s``'s in rows ``3s:3s + 3``, and takes no folds."""
        points = np.ascontiguousarray(points, dtype=np.int64)
        sent_ptr = np.ascontiguousarray(sent_ptr, dtype=np.int64)
        n_sent = len(sent_ptr) - 1
        fold = (np.full(n_sent, -1, dtype=np.int64) if fold is None
                else np.ascontiguousarray(fold, dtype=np.int64))
        if (n_sent < 0 or len(fold) != n_sent or (n_sent and (sent_ptr[0] != 0 or sent_ptr[-1] != len(points)
                                                              or not rising(sent_ptr)))
                or (fold >= MAX_FOLDS).any() or (self.sources > 1 and (fold >= 0).any())):
            raise ValueError("sentence offsets or folds do not fit the text")
        out = np.zeros((3 * self.sources, len(points)), dtype=np.int64)
        self._match(points, sent_ptr, fold, self.table, self.max_len, out)
        return out

    def columns(self, corpus: Corpus, fold: np.ndarray | None = None, max_value: int = 5,
                column: str = "char", names: Sequence[str] = _NAMES) -> dict[str, tuple[list[str], np.ndarray]] | None:
        """``lexb``, ``lexe``, ``lexm`` of ``corpus`` as ``(distinct, codes)`` (values as
        `~structperc.features.lexicon.Lexicon.columns` writes them: the capped length, "0" for none),
        or None when its tokens are not single characters. ``names``: the three columns' names, three for
        each word list of the table (`of_sources`)."""
        if len(names) != 3 * self.sources:
            raise ValueError(f"{len(names)} column names for {self.sources} word list(s): three each")
        points = corpus_points(corpus, column)
        if points is None:
            return None
        found = np.minimum(self.lengths(points, corpus.sent_ptr, fold), max_value)
        if max_value < 128:  # the passes of `_first_occurrence_codes` read a byte per character, not eight
            found = found.astype(np.int8)
        return {name: _first_occurrence_codes(found[k], max_value) for k, name in enumerate(names)}


def _first_occurrence_codes(row: np.ndarray, max_value: int) -> tuple[list[str], np.ndarray]:
    """``compact([str(v) for v in range(max_value + 1)], row)`` for a row of small values, in a few
    passes instead of a sort: the values in order of first occurrence and their codes."""
    first = []
    for v in range(max_value + 1):
        hits = row == v
        if hits.any():
            first.append((int(hits.argmax()), v))
    order = [v for _, v in sorted(first)]
    rank = np.zeros(max_value + 1, dtype=np.int64)
    rank[order] = np.arange(len(order), dtype=np.int64)
    return [str(v) for v in order], rank[row]
