"""User dictionaries applied when segmenting (`structperc.segmenter.Segmenter.segment`): reading
jieba's file format, and finding where the user's words occur in text.

Users of jieba, pkuseg and THULAC expect the words they add to come back whole, without retraining.
The segmenter does it by constrained decoding: this module says *where* the words are (`WordMatcher.spans`),
as boundaries that must and must not be word starts (`forced_boundaries`); the segmenter turns those into
allowed labels, so the rest of the sentence is still decoded optimally around them.

**Overlaps** are resolved left to right: the scan takes, at the leftmost position not yet covered, the
longest user word starting there, and continues after it (as jieba's and pkuseg's maximum matching do).
So with the words ``上海市`` and ``海市长`` the text ``上海市长`` gives ``上海市`` (and ``长`` is the
model's), and with ``上海`` and ``海市长`` it gives ``上海``: a longer word starting later does not win.
"""
from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from structperc.errors import InputError
from structperc.features.atomic import code_points
from structperc.features.lexicon_match import LexiconMatcher

#: What a ``user_dict`` argument may be: a path to a file in jieba's format, or the words themselves.
UserDictSource = Union[str, os.PathLike, Iterable[str]]

_TAG = re.compile(r"[A-Za-z][A-Za-z0-9_\-]*")


@dataclass(frozen=True)
class Entry:
    """One line of a user dictionary: the word, and jieba's optional frequency and part-of-speech tag
    (kept for the user: segmentation forces the word whatever they are)."""

    word: str
    freq: int | None = None
    tag: str | None = None


def parse_entry(line: str, path: str = "<user dictionary>", number: int | None = None) -> Entry | None:
    """The entry of one line of jieba's user-dictionary format — ``word [freq] [tag]``, separated by
    whitespace — or None for a blank line; anything else is an `InputError` naming ``path:number``.

    >>> parse_entry("云计算 5 n")
    Entry(word='云计算', freq=5, tag='n')
    >>> parse_entry("凯特琳 nz")
    Entry(word='凯特琳', freq=None, tag='nz')
    """
    fields = line.split()
    if not fields:
        return None
    word, rest = fields[0], fields[1:]
    freq: int | None = None
    tag: str | None = None
    if rest and rest[0].isdecimal():  # not isdigit: "²" is a digit int() refuses
        freq = int(rest.pop(0))
    if rest and _TAG.fullmatch(rest[0]):
        tag = rest.pop(0)
    if rest:
        raise InputError("expected 'word [frequency] [tag]' (a frequency is a whole number, a tag letters), "
                         f"found {line.strip()!r}", path, number)
    return Entry(word, freq, tag)


def read_user_dict(path: str | os.PathLike) -> list[Entry]:
    """The entries of a user-dictionary file in jieba's format (`parse_entry`; blank lines skipped, a
    byte-order mark ignored, ``.gz`` decompressed). An empty file is an empty dictionary."""
    from structperc.io.text import open_text_lines

    entries = []
    for number, line in open_text_lines(path):
        entry = parse_entry(line.lstrip("\ufeff") if number == 1 else line, str(path), number)
        if entry is not None:
            entries.append(entry)
    return entries


def user_words(source: UserDictSource | None) -> list[str]:
    """The words of ``source``: a file path (`read_user_dict`), or an iterable of words (a bare
    string is a path, never a word list). Words with whitespace can never be a word of the output
    (whitespace is a boundary) and are dropped, as are empty ones; order is kept, repeats dropped."""
    if source is None:
        return []
    if isinstance(source, (str, os.PathLike)):
        words = [e.word for e in read_user_dict(source)]
    else:
        words = []
        for w in source:
            if not isinstance(w, str):
                raise InputError(f"a user dictionary holds words (strings), not {type(w).__name__}")
            words.append(w)
    return list(dict.fromkeys(w for w in words if w and not any(c.isspace() for c in w)))


class WordMatcher:
    """A set of words, for the left-to-right longest-match scan (`spans`)."""

    def __init__(self, words: Iterable[str]):
        self.words = {w for w in words if w}

    @functools.cached_property
    def _compiled(self) -> tuple[LexiconMatcher, np.ndarray]:
        """The words of two characters or more in the compiled hash table of the segmenter's lexicon
        (`structperc.features.lexicon_match`), and the code points of the one-character words."""
        return (LexiconMatcher(sorted(w for w in self.words if len(w) > 1)),
                np.array(sorted(ord(w) for w in self.words if len(w) == 1), dtype=np.int64))

    def spans(self, pieces: Sequence[str], piece_ptr: np.ndarray) -> list[tuple[int, int]]:
        """The spans ``(start, end)`` the user's words take in the joined ``pieces`` (no whitespace in them;
        ``piece_ptr``: where each starts; no word crosses a piece): leftmost first, the longest word at a
        position, no overlaps (see the module's docstring). The longest word starting at each character
        comes from one compiled pass, and only the characters where a word starts are visited (segmenting
        SXU's test text with its 3,428 OOV words as the user dictionary: 0.18 s of matching in Python, a
        few hundredths this way).

        >>> WordMatcher(["上海市", "海市长", "长江"]).spans(["上海市长江"], np.array([0, 5]))
        [(0, 3), (3, 5)]
        """
        matcher, singles = self._compiled
        points = code_points("".join(pieces)).astype(np.int64)
        longest = matcher.lengths(points, np.asarray(piece_ptr, dtype=np.int64))[0]
        if len(singles):
            longest = np.where((longest == 0) & np.isin(points, singles), 1, longest)
        out: list[tuple[int, int]] = []
        end = 0
        for i, n in zip(np.flatnonzero(longest).tolist(), longest[longest > 0].tolist()):
            if i >= end:
                out.append((i, i + n))
                end = i + n
        return out

    def __bool__(self) -> bool:
        return bool(self.words)


def greedy_matches(words: Iterable[str], text: str) -> list[tuple[int, int]]:
    """Where ``words`` are forced in ``text``: `WordMatcher.spans` of its whitespace-free pieces (an
    occurrence across whitespace is ignored), as spans of ``text``.

    >>> greedy_matches(["北京", "京天"], "北京天 京天")
    [(0, 2), (4, 6)]
    """
    matcher = WordMatcher(words)
    if not matcher:
        return []
    found = list(re.finditer(r"\S+", text))
    pieces = [m.group() for m in found]
    ptr = np.concatenate([[0], np.cumsum([len(p) for p in pieces], dtype=np.int64)]).astype(np.int64)
    starts = [m.start() for m in found]
    spans = matcher.spans(pieces, ptr)
    # a span of the joined pieces lies in one piece: shift it to where that piece is in ``text``
    piece_of = np.searchsorted(ptr, [a for a, _ in spans], side="right") - 1
    return [(starts[k] + a - int(ptr[k]), starts[k] + b - int(ptr[k])) for k, (a, b) in zip(piece_of.tolist(), spans)]


def forced_boundaries(matcher: WordMatcher, pieces: Sequence[str], piece_ptr: np.ndarray,
                      longest: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The boundaries (``n + 1`` of the joined ``pieces``) where a word must start (the edges of each
    match) and must not (inside one), or None when no user word occurs; third, the boundaries
    decoding must not cut: those inside matches of at most ``longest`` characters (None: all). A
    model whose labels cannot spell a longer word (a 6-tag model that never saw a word of four
    characters has no B3) decodes such a word's inside freely, and the segmenter joins it after."""
    n = int(piece_ptr[-1])
    must = np.zeros(n + 1, dtype=bool)
    never = np.zeros(n + 1, dtype=bool)
    decode_never = never if longest is None else np.zeros(n + 1, dtype=bool)
    found = False
    for a, b in matcher.spans(pieces, piece_ptr):
        found = True
        must[a] = must[b] = True
        never[a + 1:b] = True
        if longest is not None and b - a <= longest:
            decode_never[a + 1:b] = True
    return (must, never, decode_never) if found else None


def longest_word(labels: Sequence[str]) -> int | None:
    """The longest word a model's labels can spell (None: any), BMES or 6-tag: a word needs B and E
    for two characters, and M for more in BMES; B2 for three, B3 for four and M beyond in the 6-tag set.

    >>> longest_word(["B", "B2", "E", "S"]), longest_word(["B", "E", "M", "S"]), longest_word(["S"])
    (3, None, 1)
    """
    have = set(labels)
    if not {"B", "E"} <= have:
        return 1
    if "B2" not in have:
        return None if "M" in have else 2
    return None if {"B3", "M"} <= have else 4 if "B3" in have else 3


def label_mask(labels: Sequence[str], must: np.ndarray, never: np.ndarray) -> np.ndarray:
    """The labels (bool, (n, L)) each of ``n`` characters may take, given the ``n + 1`` boundaries
    around them that must (``must``) and must not (``never``) start a word. A label's reading is
    taken from its name, so BMES and the 6-tag set (`structperc.labels.bmes6`: B2 and B3 read as M)
    both work: B and S start a word, E and S end one.

    >>> label_mask(["B", "E", "M", "S"], np.array([1, 0, 1], bool), np.array([0, 1, 0], bool)).astype(int)
    array([[1, 0, 0, 0],
           [0, 1, 0, 0]])
    """
    return char_mask(labels, must[:-1], never[:-1], must[1:], never[1:])


def char_mask(labels: Sequence[str], start_must: np.ndarray, start_never: np.ndarray, end_must: np.ndarray,
              end_never: np.ndarray) -> np.ndarray:
    """`label_mask` from the boundaries before (``start_*``) and after (``end_*``) each character: the
    windows of a batch concatenated, one call (a call per window cost more than the matching)."""
    from structperc.labels.bmes6 import TO_BMES

    reads = [TO_BMES.get(lab, lab) for lab in labels]
    starts = np.array([r in ("B", "S") for r in reads], dtype=bool)
    ends = np.array([r in ("E", "S") for r in reads], dtype=bool)
    ok = ~(start_must[:, None] & ~starts) & ~(start_never[:, None] & starts)
    ok &= ~(end_must[:, None] & ~ends) & ~(end_never[:, None] & ends)
    return ok
