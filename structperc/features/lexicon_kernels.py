"""Compiled longest-match lookups of a segmentation lexicon (built ahead of time into
``structperc._aot_read``; `structperc.features.lexicon_match` calls them and checks their inputs).

`structperc.features.lexicon.Lexicon.columns` walks every character in Python: for a start ``i`` it
extends the piece ``text[i:j]`` while the piece is a prefix of some lexicon word, and records the
words it meets (``lexb``/``lexe``/``lexm``: the longest word starting at, ending at, and covering each
character). That loop was most of the time of the jackknife of a segmenter (ten folds, each with
its own lexicon) and of the dictionary columns of every text segmented. These kernels run the same
walk on code points, with the lexicon in an open-addressing hash table, and answer every jackknife
fold in one pass: each entry carries a bit mask of the folds whose sentences hold the word, and a
sentence of fold ``f`` matches the words whose mask has a bit other than ``f``'s (the lexicon of the
other folds). The table's prefixes are those of all the folds' words together: a superset of one
fold's, which can only make the walk go on further, never change what it finds (a piece that is no
prefix of the fold's words cannot extend into one of its words). The same holds for several word lists in one
table, a mask bit per list (a segmenter's training lexicon and a language's dictionary, matched at tagging time
in one walk: `structperc.features.lexicon_match.LexiconMatcher.of_sources`), each with three rows of its own.

The table (built by `build_table`) is one array of slots, int64 (2**k, 2), at most half full (three quarters for
several word lists; linear probing). A piece is known by its last code point and the slot of the piece one shorter,
so a walk that has found ``text[i:j-1]`` in slot ``s`` looks ``text[i:j]`` up by ``(s, text[j-1])`` and compares
two integers, never a word's code points: one cache line per step instead of three (slot, entry, code points), and
the slot where the walk of the character `_AHEAD` places on starts is prefetched. SXU's test text ×5 against
jieba's words (136,547, 169,068 pieces), best of 7 in one process: 46 ms with the entries and code points apart, 34
ms with this layout, 28 ms with the prefetch. A piece of two code points is known by both of them. Per slot:

``[0]``
    The piece's key, -1 where the slot is empty: ``(first << 21) | last`` for two code points, else
    ``((ROOT + parent slot) << 21) | last`` (code points are below ``ROOT`` = 0x110000 < 2**21, so the
    two kinds never meet), with the bit `PREFIX` set when the piece is a proper prefix of some word.
``[1]``
    The fold mask of the words the piece is (0: only a prefix; -1: every fold, a user's word).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from structperc.compiled.intrinsics import prefetch

#: Code points are below this (Unicode's 0x10FFFF + 1): a key's high part above it is a parent slot.
ROOT = 0x110000
#: The key bit marking a piece that is a proper prefix of some word (the walk goes on past it).
PREFIX = np.int64(1) << np.int64(62)
#: Fibonacci hashing of a key to its first slot (Knuth's multiplier, as int64).
_MIX = np.int64(-7046029254386353131)  # 0x9E3779B97F4A7C15
#: How many characters ahead the walk prefetches the slot of the two code points starting there: every walk
#: begins with that lookup, and the slots are spread over a table larger than the caches.
_AHEAD = 16


@njit(cache=True, nogil=True, inline="always")
def first_slot(key, mask):
    """The slot a probe for ``key`` starts at."""
    h = key * _MIX
    return (h ^ (h >> np.int64(31))) & mask


@njit(cache=True, nogil=True, inline="always")
def piece_key(parent, first, last):
    """The key of a piece: by its two code points (``parent`` < 0) or by its parent's slot and last one."""
    if parent < 0:
        return (np.int64(first) << np.int64(21)) | np.int64(last)
    return ((np.int64(ROOT) + parent) << np.int64(21)) | np.int64(last)


@njit(cache=True, nogil=True)
def _probe(table, key):
    """The slot of the piece ``key``, or the empty slot (key column -1) where it would be entered: one probe
    answers both the lookup and the insertion."""
    mask = len(table) - 1
    slot = first_slot(key, mask)
    while True:
        k = table[slot, 0]
        if k < 0 or k & ~PREFIX == key:
            return slot
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True)
def build_table(codes, ptr, masks, table):
    """Enter every word ``codes[ptr[w]:ptr[w + 1]]`` (length ≥ 2; shorter ones are skipped) with the
    fold mask ``masks[w]``, and each of its proper prefixes of length ≥ 2 as a prefix; ``table`` must
    be all -1 (its key column), hold at least twice as many slots as the words have prefixes of length ≥ 2
    (a word of length m has m - 1) and every code point must be in [0, `ROOT`). Returns the number of
    pieces entered."""
    n = 0
    for w in range(len(ptr) - 1):
        a = ptr[w]
        b = ptr[w + 1]
        if b - a < 2:
            continue
        parent = np.int64(-1)
        for j in range(a + 2, b + 1):
            key = piece_key(parent, codes[a], codes[j - 1])
            slot = _probe(table, key)
            if table[slot, 0] < 0:
                table[slot, 0] = key
                table[slot, 1] = 0
                n += 1
            if j == b:
                table[slot, 1] |= masks[w]
            else:
                table[slot, 0] |= PREFIX
            parent = slot
    return n


@njit(cache=True, nogil=True, inline="always")
def _mark(out, row, i, j, k):
    """A word of length ``k`` at ``i:j``: the longest starting at ``i`` (row ``row``), ending at ``j - 1``
    (``row + 1``) and covering the characters strictly inside (``row + 2``) are at least ``k`` long."""
    if k > out[row, i]:
        out[row, i] = k
    if k > out[row + 1, j - 1]:
        out[row + 1, j - 1] = k
    for m in range(i + 1, j - 1):
        if k > out[row + 2, m]:
            out[row + 2, m] = k


@njit(cache=True, nogil=True)
def longest_matches(text, sent_ptr, fold, table, max_len, out):
    """``out[0]``, ``out[1]``, ``out[2]`` (int64, one per character of ``text``, zeroed by the caller):
    the length of the longest word starting at, ending at and strictly covering each character,
    where the words of sentence ``s`` are those whose mask has a bit other than ``fold[s]``'s (any
    bit where ``fold[s]`` < 0: the whole lexicon).

    With ``out`` of 3·S rows, S > 1 (every ``fold`` < 0), the table holds S word lists at once, bit ``s`` of a
    word's mask saying it is in list ``s`` (`LexiconMatcher.of_sources`): rows ``3s``, ``3s + 1``, ``3s + 2``
    are list ``s``'s three lengths, all found by one walk over the pieces of every list."""
    flat = table.reshape(table.size)
    mask = len(table) - 1
    n = len(text)
    sources = out.shape[0] // 3
    for s in range(len(sent_ptr) - 1):
        a = sent_ptr[s]
        b = sent_ptr[s + 1]
        other = ~(np.int64(1) << fold[s]) if fold[s] >= 0 else np.int64(-1)
        for i in range(a, b - 1):
            if i + _AHEAD + 1 < n:  # a hint only: it never changes what is found
                prefetch(flat, 2 * first_slot(piece_key(-1, text[i + _AHEAD], text[i + _AHEAD + 1]), mask))
            parent = np.int64(-1)
            stop = min(b, i + max_len)
            for j in range(i + 2, stop + 1):
                slot = _probe(table, piece_key(parent, text[i], text[j - 1]))
                if table[slot, 0] < 0:
                    break
                hits = table[slot, 1] & other
                if hits != 0:
                    if sources == 1:
                        _mark(out, 0, i, j, j - i)
                    else:
                        for w in range(sources):
                            if (hits >> np.int64(w)) & np.int64(1):
                                _mark(out, 3 * w, i, j, j - i)
                if table[slot, 0] & PREFIX == 0:
                    break
                parent = slot


AOT_EXPORTS: dict[str, str] = {
    "build_table": "i8(i8[::1], i8[::1], i8[::1], i8[:, ::1])",
    "longest_matches": "void(i8[::1], i8[::1], i8[::1], i8[:, ::1], i8, i8[:, ::1])",
}
