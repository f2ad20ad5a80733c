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

import itertools
import re
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
_WHOLE = re.compile(f"{_URL}|{_EMAIL}")


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` as a uint32 array (astral characters count one each, as in `str`;
    a lone surrogate, as from undecodable bytes, is its own code point)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _in_ranges(points: np.ndarray, ranges: Iterable[tuple[int, int]]) -> np.ndarray:
    out = np.zeros(len(points), dtype=bool)
    for lo, hi in ranges:
        out |= (points >= lo) & (points <= hi)
    return out


def inside(points: np.ndarray, kind: str, breaks: Sequence[int] | np.ndarray = ()) -> np.ndarray:
    """Boundaries (``n + 1`` of them) strictly inside a span of ``kind`` (`LATIN` or `DIGIT`).

    Inside a Latin run is every boundary between two letters. Inside a number is every boundary between
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
    while (m := _WHOLE.search(text, pos)) is not None:
        k = int(np.searchsorted(ends, m.start(), side="right"))
        limit = int(ends[k]) if k < len(ends) else n
        if m.end() > limit:  # found across a piece end: search again within the piece
            m = _WHOLE.search(text, m.start(), limit)
            if m is None:
                pos = limit
                continue
        out.append(m.span())
        pos = m.end()
    return out


def constrain(cut: np.ndarray, text: str, kinds: Iterable[str],
              ends: Sequence[int] | np.ndarray = ()) -> np.ndarray:
    """``cut`` (word starts at the ``len(text) + 1`` boundaries of ``text``) with no cut inside a run
    of the given kinds or inside a URL or e-mail address, and cuts at the edges of the latter;
    ``ends`` as in `whole_spans`. Modifies ``cut`` in place and returns it."""
    kinds = list(kinds)
    if kinds:
        points = code_points(text)
        for kind in kinds:
            cut[inside(points, kind, ends)] = False
    for a, b in whole_spans(text, ends):
        cut[a + 1:b] = False
        cut[a] = cut[b] = True
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
