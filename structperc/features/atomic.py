"""Atomic spans of raw text for word segmentation: stretches no word boundary may cut.

A character tagger sees Latin letters and digits one at a time, and with no training evidence for a
character (half-width ``abc`` in a corpus written in full-width forms) it cuts anywhere: ``abc def``
came out as ``ab c de f``. As HanLP, pkuseg and jieba do, the segmenter therefore keeps whole

* runs of Latin letters (ASCII, full-width, Latin-1 and Latin Extended-A/B letters),
* runs of digits (ASCII and full-width), including ``.``, ``,`` and ``．`` between two digits
  (``1,234.5``, ``３．５``; the full-width comma ``，`` is left out: between digits it separates
  list items, ``１，２``), and
* URLs (``http(s)://``, ``ftp://``, ``www.``) and e-mail addresses,

unless the training data splits runs of that kind (see `AtomicStats`). Only the *inside* of a span is
protected: whether its edges are word boundaries stays the model's decision (``２００８年`` is one word
in the SXU standard, so the digit run must be free to join the ``年`` after it). URLs and e-mail
addresses are words of their own: their edges are cut too.

Boundaries are indexed by position: boundary ``i`` (``0 ≤ i ≤ n``) lies before character ``i`` of an
``n``-character text; ``cut[i]`` says a word starts there. Character classes are computed in numpy
on code points, so long texts cost no per-character Python work.
"""
from __future__ import annotations

import functools
import itertools
import re
import unicodedata
from typing import Iterable, Sequence

import numpy as np

LATIN, DIGIT = "latin", "digit"
#: The kinds of runs whose atomicity is learnt from the training data.
KINDS = (LATIN, DIGIT)

#: A kind stops being atomic when at least this fraction of its multi-character runs in the training
#: words has a word boundary inside. SIGHAN 2008 SXU splits 14.5 % (136 of 937) of its Latin runs (English names
#: whose spaces the raw text lost: ``ＪｏｎａｔｈａｎＡｎｄｅｒｓｏｎ``) and 3.2 % (318 of 9,892) of its digit runs (a
#: date's day run into the time after it): slips of a raw text without spaces, which a user's text,
#: where whitespace is kept and is a boundary, does not have. A standard that cuts such runs as a rule
#: (digit by digit, say) splits most of them.
SPLIT_THRESHOLD = 0.25
#: Fewer multi-character runs than this are no evidence either way: the kind stays atomic.
MIN_RUNS = 10

_LATIN_RANGES = ((0x41, 0x5A), (0x61, 0x7A), (0xC0, 0xD6), (0xD8, 0xF6), (0xF8, 0x24F),
                 (0xFF21, 0xFF3A), (0xFF41, 0xFF5A))
_DIGIT_RANGES = ((0x30, 0x39), (0xFF10, 0xFF19))
_NUMBER_SEPARATORS = (ord("."), ord(","), 0xFF0E)

_URL_CHARS = r"A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%"
# the last character excludes punctuation that ends a sentence more often than a URL
_URL = (r"(?:(?:https?|ftp)://|www\.)[" + _URL_CHARS + r"]*[A-Za-z0-9\-_~/#@$&*+=%]")
_EMAIL = r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"
_URL_RE = re.compile(_URL)
_EMAIL_AT = re.compile(_EMAIL.split("@", 1)[1])  # an address's domain, matched at its "@"
_LOCAL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")  # an address's user part


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as a uint32 array (astral characters count one each, as in `str`;
    a lone surrogate, as from undecodable bytes, is its own code point)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


#: Blocks with no combining marks that Chinese text is mostly made of (CJK ideographs, their punctuation,
#: full-width forms): skipped before the per-character look-up of `combining`.
_NO_MARKS = ((0x3000, 0x303F), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xFF00, 0xFFEF))
#: Characters that join the character before them into what displays as one (Unicode's extended grapheme
#: clusters, UAX #29, in the part a segmenter meets): the zero-width joiner, variation selectors, emoji skin
#: tones and tag characters; the combining marks come from their category (`combining`).
_JOINER_RANGES = ((0x200D, 0x200D), (0xFE00, 0xFE0F), (0x1F3FB, 0x1F3FF), (0xE0020, 0xE007F), (0xE0100, 0xE01EF))
_ZWJ = 0x200D


@functools.lru_cache(maxsize=1 << 16)
def _is_mark(point: int) -> bool:
    return unicodedata.category(chr(point)).startswith("M")


def combining(points: np.ndarray) -> np.ndarray:
    """Whether each character is a combining mark (Unicode category M: the accent of a decomposed ``é``, a
    vowel sign of an Indic script), which belongs to the character before it.

    >>> combining(code_points("cafe\u0301中")).tolist()
    [False, False, False, False, True, False]
    """
    out = np.zeros(len(points), dtype=bool)
    maybe = np.flatnonzero((points >= 0x300) & ~_in_ranges(points, _NO_MARKS))
    if len(maybe):
        distinct, at = np.unique(points[maybe], return_inverse=True)
        out[maybe] = np.fromiter(map(_is_mark, distinct.tolist()), dtype=bool, count=len(distinct))[at]
    return out


def joins_previous(points: np.ndarray) -> np.ndarray:
    """Whether each character belongs with the one before it, so that no word may start with it: a combining
    mark, a joiner, variation selector, skin tone or tag character (`_JOINER_RANGES`), and the character after a
    zero-width joiner (the members of an emoji sequence such as 👨‍👩‍👧).

    >>> joins_previous(code_points("a\u0301👍\U0001F3FD👨\u200d👩")).tolist()
    [False, True, False, True, False, True, True]
    """
    out = combining(points) | _in_ranges(points, _JOINER_RANGES)
    out[1:] |= points[:-1] == _ZWJ
    return out


def _in_ranges(points: np.ndarray, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
    out = np.zeros(len(points), dtype=bool)
    for lo, hi in ranges:
        out |= (points >= lo) & (points <= hi)
    return out


def inside(points: np.ndarray, kind: str, breaks: Sequence[int] | np.ndarray = ()) -> np.ndarray:
    """Boundaries (``n + 1`` of them) strictly inside a span of ``kind`` (`LATIN` or `DIGIT`).

    Inside a Latin run is every boundary between two letters, a combining mark after a letter counting as one
    (a decomposed ``é`` is ``e`` and U+0301). Inside a number is every boundary between
    two digits, and either side of a separator that has a digit on both sides. No span reaches over a
    boundary of ``breaks`` (where pieces split at whitespace were joined again).

    >>> inside(code_points("ab1.5x"), LATIN).tolist()
    [False, True, False, False, False, False, False]
    >>> inside(code_points("ab1.5x"), DIGIT).tolist()
    [False, False, False, True, True, False, False]
    >>> inside(code_points("1.5"), DIGIT, breaks=[2]).tolist()
    [False, False, False, False]
    """
    n = len(points)
    brk = np.zeros(n + 1, dtype=bool)
    brk[np.asarray(breaks, dtype=np.int64)] = True
    out = np.zeros(n + 1, dtype=bool)
    if kind == LATIN:
        letter = _in_ranges(points, _LATIN_RANGES)
        mark = combining(points)
        if mark.any():  # a mark takes the kind of the last character before it that is not one
            last = np.maximum.accumulate(np.where(mark, 0, np.arange(n)))
            letter = np.where(mark, letter[last] & ~mark[last], letter)
        out[1:n] = letter[:-1] & letter[1:]
    elif kind == DIGIT:
        digit = _in_ranges(points, _DIGIT_RANGES)
        out[1:n] = digit[:-1] & digit[1:]
        # sep[j]: a separator at j with a digit at j - 1 and at j + 1 and no break at its boundaries
        # j and j + 1, both of which are then inside
        sep = np.zeros(n, dtype=bool)
        sep[1:-1] = (np.isin(points[1:-1], _NUMBER_SEPARATORS) & digit[:-2] & digit[2:]
                     & ~brk[1:n - 1] & ~brk[2:n])
        out[:n] |= sep
        out[1:] |= sep
    else:
        raise ValueError(f"unknown kind of atomic run {kind!r} (known: {', '.join(KINDS)})")
    out &= ~brk
    return out


def whole_spans(text: str, ends: Sequence[int] | np.ndarray = ()) -> list[tuple[int, int]]:
    """``(start, end)`` of every URL and e-mail address in ``text``, none crossing a position of
    ``ends`` (ascending: the ends of pieces that were joined without a separator).

    >>> whole_spans("见https://a.cn/x。邮件a.b@c.org")
    [(1, 15), (18, 27)]
    """
    ends = np.asarray(ends, dtype=np.int64)
    out: list[tuple[int, int]] = []
    pos, n = 0, len(text)
    url = _URL_RE.search(text)
    while True:
        if url is not None and url.start() < pos:  # passed: the next one (a URL's start does not depend on pos)
            url = _URL_RE.search(text, pos)
        span = _first_whole(text, pos, n, url)
        if span is None:
            break
        k = int(np.searchsorted(ends, span[0], side="right"))
        limit = int(ends[k]) if k < len(ends) else n
        if span[1] > limit:  # found across a piece end: search again within the piece
            span = _first_whole(text, span[0], limit, _URL_RE.search(text, span[0], limit))
            if span is None:
                pos = limit
                continue
        out.append(span)
        pos = span[1]
    return out


def _first_whole(text: str, pos: int, endpos: int, url: re.Match | None) -> tuple[int, int] | None:
    """The span that ``re.search(f"{_URL}|{_EMAIL}", …)`` from ``pos`` to ``endpos`` finds, in time linear in the
    text: the first URL or e-mail address (a URL where both start at one place). That pattern tries every start
    of a run of letters and digits as an address's user part and reads on to the run's end looking for its
    "@": 28 s on a line of 100,000 letters, and a batch of English lines, its spaces taken out, is one such
    run. An address's user part is the whole run of user-part characters before an "@" (from ``pos`` on), so
    only the "@"s are tried: the run before each is found by a step back, its domain matched from there.
    ``url``: the first URL from ``pos`` to ``endpos`` (None: there is none), which the caller keeps between calls."""
    first = url.start() if url else endpos  # an address starting at or after the URL is not the first
    at = text.find("@", pos, endpos)
    while at >= 0:
        start = at
        while start > pos and text[start - 1] in _LOCAL:
            start -= 1
        if start >= first:  # the runs before later "@"s start later still
            break
        if start < at:
            domain = _EMAIL_AT.match(text, at + 1, endpos)
            if domain:
                return start, domain.end()
        at = text.find("@", at + 1, endpos)
    return url.span() if url else None


def constrain(cut: np.ndarray, text: str, kinds: Iterable[str],
              ends: Sequence[int] | np.ndarray = ()) -> np.ndarray:
    """``cut`` (word starts at the ``len(text) + 1`` boundaries of ``text``) with no cut inside a run
    of the given kinds or inside a URL or e-mail address, and cuts at the edges of the latter;
    ``ends`` as in `whole_spans`; and no word starts with a character that belongs to the one before it
    (`joins_previous`: a decomposed accent, an emoji's skin tone), whatever the kinds. Modifies ``cut`` in place
    and returns it."""
    points = code_points(text)
    for kind in kinds:
        cut[inside(points, kind, ends)] = False
    for a, b in whole_spans(text, ends):
        cut[a + 1:b] = False
        cut[a] = cut[b] = True
    cut[1:len(points)] &= ~joins_previous(points)[1:]
    return cut


class AtomicStats:
    """How often the training words split each kind of run, per sentence, so that the dictionary of
    any subset of sentences (a jackknife fold) gets its own figures without looking at text again."""

    def __init__(self, sentences: Sequence[Sequence[str]]):
        # one text, sentences separated by a newline (no run crosses it), and the word starts in it
        per_sentence = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        # map and chain run in C: no Python frame per word
        flat = np.fromiter(map(len, itertools.chain.from_iterable(sentences)), dtype=np.int64,
                           count=int(per_sentence.sum()))
        sentence_of_word = np.repeat(np.arange(len(sentences)), per_sentence)
        starts = np.cumsum(flat) - flat + sentence_of_word         # + one newline per earlier sentence
        text = "\n".join("".join(s) for s in sentences)
        boundary = np.zeros(len(text) + 1, dtype=bool)
        boundary[starts] = True
        first = np.cumsum(per_sentence) - per_sentence
        sentence_start = starts[first[per_sentence > 0]]
        owners = np.flatnonzero(per_sentence > 0)
        points = code_points(text)
        self.n_sentences = len(sentences)
        self.runs: dict[str, np.ndarray] = {}
        self.split: dict[str, np.ndarray] = {}
        for kind in KINDS:
            ins = inside(points, kind)[:-1]                         # boundary i ↔ character i
            run = np.cumsum(~ins)                                   # run id of every character
            multi = np.unique(run[ins])                             # runs of two or more characters
            cut = np.unique(run[ins & boundary[:-1]])
            self.runs[kind] = self._per_sentence(run, multi, sentence_start, owners)
            self.split[kind] = self._per_sentence(run, cut, sentence_start, owners)

    def _per_sentence(self, run: np.ndarray, ids: np.ndarray, sentence_start: np.ndarray,
                      owners: np.ndarray) -> np.ndarray:
        """How many of the runs ``ids`` each sentence holds (a run belongs to its first character's
        sentence)."""
        first_char = np.searchsorted(run, ids)                     # run ids ascend along the text
        which = owners[np.searchsorted(sentence_start, first_char, side="right") - 1]
        return np.bincount(which, minlength=self.n_sentences)

    def atomic(self, sentences: np.ndarray | None = None) -> dict[str, bool]:
        """Whether each kind is atomic by the given sentences (indices; default all): yes unless
        `MIN_RUNS` runs or more were seen and at least `SPLIT_THRESHOLD` of them were split."""
        out = {}
        for kind in KINDS:
            runs, split = self.runs[kind], self.split[kind]
            if sentences is not None:
                runs, split = runs[sentences], split[sentences]
            n, k = int(runs.sum()), int(split.sum())
            out[kind] = not (n >= MIN_RUNS and k >= SPLIT_THRESHOLD * n)
        return out
