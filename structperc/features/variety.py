"""Accessor variety columns for word segmentation: how freely each character n-gram of unsegmented text
combines with its neighbours (Feng et al. 2004; as character features, Zhao & Kit 2008).

The accessor variety of an n-gram ``s`` is ``AV(s) = min(L(s), R(s))``: ``L`` counts the distinct
characters that precede ``s`` in the text, ``R`` those that follow it, and the start and the end of a
sentence count as a new distinct accessor *each time* (Feng et al.). A word combines with many
neighbours; the inside of a word, or a piece across a word boundary, with few. AV needs no segmentation,
so it is learnt from the training sentences with their spaces removed, plus any raw text the user has
(``raw``): the one word-level signal here that reaches words the training data never segmented.

Scores are log-bucketed as in Zhao & Kit: ``t = floor(log2 AV)`` (capped at `CAP`), kept only for
n-grams with ``AV ≥ min_av`` (default 2: below it an n-gram carries no evidence, and dropping them keeps
the model file small); an n-gram not kept has ``t = 0``. Columns, for ``n`` in 2 … 5 (`NS`), one value
per character ``t``:

* ``av{n}b`` / ``av{n}e`` — the bucket of the n-gram that starts / ends at ``t`` (``"0"`` when none);
* ``av{n}`` — the n-gram of length n covering ``t`` with the highest bucket (the leftmost among equals),
  written as its bucket and ``t``'s place in it (``B``, ``M``, ``E``), ``"0"`` when no covering n-gram
  is kept: Zhao & Kit's per-character feature as far as we can reconstruct it (the paper scores, for
  each character and each n, the best n-gram containing it and its position there).
* ``avseg`` — ``t``'s tag (B/M/E/S) in the unsupervised segmentation of its sentence that maximises
  the summed ``n · t`` of its words (Feng et al.'s optimisation, on the buckets; `segmentation_tags`).

A dictionary writes only the columns its templates read (``columns``).

N-grams are identified by a 64-bit hash of their code points (`_hashes`; splitmix64 steps): the
statistics are a few sorts of integer arrays, no Python object per n-gram (SXU's 0.85 M characters:
well under a second). Two distinct n-grams of one length sharing a hash is a ~1e-8 event on corpora of
this size; it would merge their counts, nothing worse.
"""
from __future__ import annotations

import functools
import re
import zlib
from typing import Any, Iterable, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.atomic import code_points
from structperc.features.dictionary import with_columns
from structperc.io.corpus import Corpus, compact

#: The n-gram lengths.
NS = (2, 3, 4, 5)
#: Every column a dictionary can write.
COLUMNS = tuple(f"av{n}{kind}" for n in NS for kind in ("b", "e", "")) + ("avseg",)
#: The highest bucket (``floor(log2 AV)``): one digit.
CAP = 9
_COLUMN = re.compile(r"^(av[2-5][be]?|avseg)$")
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _hashes(points: np.ndarray, n: int) -> np.ndarray:
    """The hash of ``points[i:i + n]`` at every ``i`` (positions past the end wrap around: callers
    keep only n-grams inside a sentence)."""
    h = np.zeros(len(points), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(n):
            h = _mix(h * np.uint64(0x9E3779B97F4A7C15) + np.roll(points, -k) + np.uint64(1))
    return h


def _points(chars: Sequence[str]) -> np.ndarray:
    """Code points of one-character tokens (longer tokens, which char corpora do not have, get a
    number above Unicode's from their CRC)."""
    return np.fromiter((ord(c) if len(c) == 1 else 0x110000 + zlib.crc32(c.encode("utf-8")) for c in chars),
                       dtype=np.uint64, count=len(chars))


def _text_points(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Code points of the texts one after another, and the texts' boundaries."""
    points = code_points("".join(texts)).astype(np.uint64)
    ptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=ptr[1:])
    return points, ptr


def _sentence_ends(ptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each position's sentence start and end (exclusive)."""
    lengths = np.diff(ptr)
    return np.repeat(ptr[:-1], lengths), np.repeat(ptr[1:], lengths)


def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of ``x``, sorted (a sort: numpy 2's hashing `np.unique` is several times slower
    on these arrays)."""
    x = np.sort(x)
    return x[np.concatenate([[True], x[1:] != x[:-1]])] if len(x) else x


def bucket(av: np.ndarray) -> np.ndarray:
    """``floor(log2 AV)`` capped at `CAP` (AV ≥ 1)."""
    av = np.maximum(np.asarray(av, dtype=np.int64), 1)
    return np.minimum(np.floor(np.log2(av)).astype(np.int64), CAP)


def accessor_variety(points: np.ndarray, ptr: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct n-grams of the sentences (``points`` cut at ``ptr``): their hashes (sorted), the
    position of the first occurrence of each, and their AV."""
    start, end = _sentence_ends(ptr)
    pos = np.flatnonzero(np.arange(len(points)) + n <= end)
    if not len(pos):
        empty = np.zeros(0, dtype=np.int64)
        return np.zeros(0, dtype=np.uint64), empty, empty
    h = _hashes(points, n)[pos]
    grams, first, ids = np.unique(h, return_index=True, return_inverse=True)
    ids = ids.reshape(-1).astype(np.int64)
    counts = []
    for has, neighbour in ((pos > start[pos], pos - 1), (pos + n < end[pos], pos + n)):
        # distinct (n-gram, accessor) pairs: ids < 2^31, accessors below 2^32 (code points, CRC'd tokens)
        pairs = _distinct((ids[has] << np.int64(32)) | points[neighbour[has]].astype(np.int64))
        counts.append(np.bincount(pairs >> np.int64(32), minlength=len(grams))
                      + np.bincount(ids[~has], minlength=len(grams)))    # a sentence edge: new each time
    return grams, pos[first], np.minimum(counts[0], counts[1])


class AccessorVariety:
    """The bucketed AV of the character n-grams of some text (n in `NS`, those with ``AV ≥ min_av``),
    writing the ``av*`` columns of `COLUMNS` that ``columns`` names (a `structperc.features.dictionary.
    ColumnDictionary`). ``grams[n]``: the kept n-grams one after another (n characters each), ``buckets[n]``:
    their buckets, one digit each (what the model file keeps)."""

    def __init__(self, grams: dict[int, str], buckets: dict[int, str], columns: Iterable[str],
                 min_av: int = 2):
        self.grams = {int(n): str(grams.get(n, "")) for n in NS}
        self.buckets = {int(n): str(buckets.get(n, "")) for n in NS}
        for n in NS:
            if len(self.grams[n]) != n * len(self.buckets[n]):
                raise ValueError(f"accessor variety: {n}-grams and their buckets differ in number")
        self.min_av = int(min_av)
        wanted = set(columns)
        unknown = sorted(wanted - set(COLUMNS))
        if unknown:
            raise InputError(f"unknown accessor variety columns {', '.join(unknown)} (known: {', '.join(COLUMNS)})")
        self._columns = tuple(c for c in COLUMNS if c in wanted)

    @classmethod
    def from_texts(cls, texts: Sequence[str], columns: Iterable[str], min_av: int = 2) -> "AccessorVariety":
        """The AV of ``texts`` (sentences, no spaces)."""
        points, ptr = _text_points(texts)
        joined = "".join(texts)
        grams, buckets = {}, {}
        for n in NS:
            _, first, av = accessor_variety(points, ptr, n)
            keep = av >= min_av
            at = first[keep].tolist()
            grams[n] = "".join([joined[i:i + n] for i in at])
            buckets[n] = "".join(map(str, bucket(av[keep]).tolist()))
        return cls(grams, buckets, columns, min_av)

    @property
    def columns(self) -> tuple[str, ...]:
        return self._columns

    def __len__(self) -> int:
        return sum(len(b) for b in self.buckets.values())

    @functools.cached_property
    def _tables(self) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per n: the kept n-grams' hashes (sorted) and their buckets."""
        out = {}
        for n in NS:
            count = len(self.buckets[n])
            points = _text_points([self.grams[n]])[0]
            h = _hashes(points, n)[::n][:count] if count else np.zeros(0, dtype=np.uint64)
            order = np.argsort(h, kind="stable")
            b = np.frombuffer(self.buckets[n].encode("ascii"), dtype=np.uint8).astype(np.int64) - ord("0")
            out[n] = (h[order], b[order])
        return out

    def scores(self, points: np.ndarray, ptr: np.ndarray, n: int) -> np.ndarray:
        """The bucket of the n-gram starting at each position (0: none, or not kept)."""
        _, end = _sentence_ends(ptr)
        out = np.zeros(len(points), dtype=np.int64)
        pos = np.flatnonzero(np.arange(len(points)) + n <= end)
        table, buckets = self._tables[n]
        if not len(pos) or not len(table):
            return out
        h = _hashes(points, n)[pos]
        at = np.minimum(np.searchsorted(table, h), len(table) - 1)
        found = table[at] == h
        out[pos[found]] = buckets[at[found]]
        return out

    def coded(self, corpus: Corpus) -> dict[str, tuple[list[str], np.ndarray]]:
        """Each column as ``(distinct, codes)``."""
        distinct, codes = corpus.factorize("char")
        points = _points(distinct)[codes] if len(codes) else np.zeros(0, dtype=np.uint64)
        ptr = np.asarray(corpus.sent_ptr, dtype=np.int64)
        start, _ = _sentence_ends(ptr)
        out: dict[str, tuple[list[str], np.ndarray]] = {}
        starting = {n: self.scores(points, ptr, n) for n in NS
                    if "avseg" in self._columns or {f"av{n}b", f"av{n}e", f"av{n}"} & set(self._columns)}
        if "avseg" in self._columns:
            out["avseg"] = (list("BMES"), segmentation_tags(starting, ptr))
        for n in NS:
            wanted = [c for c in (f"av{n}b", f"av{n}e", f"av{n}") if c in self._columns]
            if not wanted:
                continue
            b = starting[n]                             # n-gram starting at t
            idx = np.arange(len(points))
            values = np.arange(CAP + 1)
            if f"av{n}b" in wanted:
                out[f"av{n}b"] = ([str(v) for v in values], b)
            if f"av{n}e" in wanted:
                e = np.zeros(len(points), dtype=np.int64)   # n-gram ending at t starts at t - n + 1
                ok = idx - (n - 1) >= start
                e[ok] = b[idx[ok] - (n - 1)]
                out[f"av{n}e"] = ([str(v) for v in values], e)
            if f"av{n}" in wanted:
                # covering n-grams start at t - k, k = 0 … n-1; keep the best (leftmost among equals: largest k)
                best = np.zeros(len(points), dtype=np.int64)
                place = np.zeros(len(points), dtype=np.int64)
                for k in range(n):
                    ok = idx - k >= start
                    cand = np.zeros(len(points), dtype=np.int64)
                    cand[ok] = b[idx[ok] - k]
                    better = cand >= best
                    better &= cand > 0
                    best[better] = cand[better]
                    place[better] = k
                # place k: t is the first (k = 0: B), last (k = n - 1: E) or an inner character (M)
                where = np.where(place == 0, 0, np.where(place == n - 1, 2, 1))
                labels = ["0"] + [f"{v}{p}" for v in range(1, CAP + 1) for p in "BME"]
                code = np.where(best > 0, 1 + (best - 1) * 3 + where, 0)
                out[f"av{n}"] = (labels, code)
        return out

    def values(self, corpus: Corpus) -> dict[str, list[str]]:
        out = {}
        for name, (distinct, codes) in self.coded(corpus).items():
            out[name] = np.asarray(distinct, dtype=object)[codes].tolist()
        return out

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        if values is None:
            values = {name: compact(distinct, codes) for name, (distinct, codes) in self.coded(corpus).items()}
        return with_columns(corpus, values, self.columns)

    def to_json(self) -> dict:
        return {"min_av": self.min_av, "columns": list(self.columns),
                "grams": {str(n): self.grams[n] for n in NS}, "buckets": {str(n): self.buckets[n] for n in NS}}

    @classmethod
    def from_json(cls, data: dict) -> "AccessorVariety":
        return cls({int(n): g for n, g in data["grams"].items()}, {int(n): b for n, b in data["buckets"].items()},
                   data["columns"], int(data.get("min_av", 2)))


def segmentation_tags(starting: dict[int, np.ndarray], ptr: np.ndarray) -> np.ndarray:
    """The unsupervised segmentation of every sentence, as B/M/E/S codes (0–3): the one maximising the sum,
    over its words, of ``n · t`` (n-grams of length ``n`` ≥ 2 kept with bucket ``t``; single characters 0;
    n-grams not kept are no words), Feng et al.'s optimisation with a log-bucketed AV. ``starting[n]``: the
    bucket of the n-gram starting at each position. A dynamic programme over sentence offsets, every
    sentence at once; ties go to the shorter last word."""
    total = int(ptr[-1])
    lengths = np.diff(ptr)
    firsts = ptr[:-1]
    best = np.zeros(total + len(lengths), dtype=np.int64)      # best[ptr[s] + s + j]: the first j characters
    back = np.ones(total, dtype=np.int64)                       # the last word's length, ending at position
    base = firsts + np.arange(len(lengths))                    # best's index of offset 0 of each sentence
    for j in range(1, int(lengths.max(initial=0)) + 1):
        live = np.flatnonzero(lengths >= j)
        end = firsts[live] + j                                  # exclusive end of the last word
        score = best[base[live] + j - 1]                        # a single character
        size = np.ones(len(live), dtype=np.int64)
        for n, t in starting.items():
            if n > j:
                continue
            cand_t = t[end - n]
            cand = np.where(cand_t > 0, best[base[live] + j - n] + n * cand_t, -1)
            better = cand > score
            score = np.where(better, cand, score)
            size = np.where(better, n, size)
        best[base[live] + j] = score
        back[end - 1] = size
    tags = np.full(total, 3, dtype=np.int64)                    # S
    pos = ptr[1:] - 1                                           # the last character of each sentence
    live = np.flatnonzero(lengths > 0)
    pos, stop = pos[live], firsts[live]
    while len(pos):
        size = back[pos]
        first = pos - size + 1
        multi = size > 1
        tags[first[multi]] = 0                                  # B
        tags[pos[multi]] = 2                                    # E
        inner = size > 2
        if inner.any():
            reps = size[inner] - 2
            tags[np.repeat(first[inner] + 1, reps) + np.arange(int(reps.sum()))
                 - np.repeat(np.cumsum(reps) - reps, reps)] = 1  # M
        pos = first - 1
        keep = pos >= stop
        pos, stop = pos[keep], stop[keep]
    return tags


def variety_columns(columns: Iterable[str]) -> list[str]:
    """The accessor variety columns among ``columns`` (e.g. those a template reads)."""
    return [c for c in columns if _COLUMN.match(c)]


def read_raw(path: Any) -> list[str]:
    """Raw text for the statistics: one sentence per line, whitespace removed (segmented text works too)."""
    from structperc.io.text import open_text_lines

    texts = ["".join(line.split()) for _, line in open_text_lines(path)]
    texts = [t for t in texts if t]
    if not texts:
        raise InputError("the raw text is empty", str(path))
    return texts


class VarietyLearner:
    """Learns `AccessorVariety` from the training sentences (texts, one per sentence) and the user's
    ``raw`` texts (a `structperc.features.dictionary.DictionaryLearner`).

    ``jackknife``: a fold's statistics leave out the fold's own sentences (raw text is always in), so
    that training sentences see the scores test sentences will; without it every fold gets the statistics
    of all the text (learnt once), as when the text to segment is part of the statistics (raw = test text).
    """

    def __init__(self, texts: Sequence[str], columns: Iterable[str], raw: Sequence[str] = (),
                 jackknife: bool = True, min_av: int = 2):
        self.texts = list(texts)
        self.raw = list(raw)
        self._columns = tuple(c for c in COLUMNS if c in set(columns))
        self.jackknife = bool(jackknife)
        self.min_av = int(min_av)

    @property
    def columns(self) -> tuple[str, ...]:
        return self._columns

    @functools.cached_property
    def _full(self) -> AccessorVariety:
        return AccessorVariety.from_texts(self.texts + self.raw, self._columns, self.min_av)

    def learn(self, sentences: np.ndarray) -> AccessorVariety:
        if not self.jackknife or len(sentences) == len(self.texts):
            return self._full
        chosen = [self.texts[i] for i in np.asarray(sentences, dtype=np.int64).tolist()]
        return AccessorVariety.from_texts(chosen + self.raw, self._columns, self.min_av)
