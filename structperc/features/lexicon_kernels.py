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
prefix of the fold's words cannot extend into one of its words).

The table (built by `build_table`):

``table`` : int64 (2**k,)
    Entry number per slot, -1 where empty (linear probing, at most half full).
``ent`` : int64 (capacity, 4)
    Per entry: offset of its code points in ``codes`` (those of the word it was made from), its
    length, its fold mask (0: only a prefix; -1: every fold, a user's word) and 1 if it is a proper
    prefix (length ≥ 2) of some word.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: FNV-1a over code points (int64, wrapping): the hash of a piece extends by one character at a time.
_OFFSET = -3750763034362895579  # 14695981039346656037 as int64
_PRIME = 1099511628211


@njit(cache=True, nogil=True, inline="always")
def same_run(a, a_start, b, b_start, length):
    """Whether ``a[a_start:a_start + length]`` and ``b[b_start:b_start + length]`` hold the same values."""
    for k in range(length):
        if a[a_start + k] != b[b_start + k]:
            return False
    return True


@njit(cache=True, nogil=True)
def _find(table, ent, codes, text, start, length, h):
    """Entry of ``text[start:start + length]`` (hash ``h``), or -1."""
    mask = len(table) - 1
    slot = h & mask
    while True:
        e = table[slot]
        if e < 0:
            return -1
        if ent[e, 1] == length and same_run(codes, ent[e, 0], text, start, length):
            return e
        slot = (slot + 1) & mask


@njit(cache=True, nogil=True)
def build_table(codes, ptr, masks, table, ent):
    """Enter every word ``codes[ptr[w]:ptr[w + 1]]`` (length ≥ 2; shorter ones are skipped) with the
    fold mask ``masks[w]``, and each of its proper prefixes of length ≥ 2 as a prefix; ``table`` must
    be all -1 and hold at least twice ``ent``'s rows, which must be at least the number of words and
    prefixes. Returns the number of entries."""
    n = 0
    mask = len(table) - 1
    for w in range(len(ptr) - 1):
        a = ptr[w]
        b = ptr[w + 1]
        if b - a < 2:
            continue
        h = np.int64(_OFFSET)
        h = (h ^ codes[a]) * _PRIME
        for j in range(a + 2, b + 1):
            h = (h ^ codes[j - 1]) * _PRIME
            length = j - a
            e = _find(table, ent, codes, codes, a, length, h)
            if e < 0:
                slot = h & mask
                while table[slot] >= 0:
                    slot = (slot + 1) & mask
                table[slot] = n
                ent[n, 0] = a
                ent[n, 1] = length
                ent[n, 2] = 0
                ent[n, 3] = 0
                e = n
                n += 1
            if j == b:
                ent[e, 2] |= masks[w]
            else:
                ent[e, 3] = 1
    return n


@njit(cache=True, nogil=True)
def longest_matches(text, sent_ptr, fold, table, ent, codes, max_len, out):
    """``out[0]``, ``out[1]``, ``out[2]`` (int64, one per character of ``text``, zeroed by the caller):
    the length of the longest word starting at, ending at and strictly covering each character,
    where the words of sentence ``s`` are those whose mask has a bit other than ``fold[s]``'s (any
    bit where ``fold[s]`` < 0: the whole lexicon)."""
    for s in range(len(sent_ptr) - 1):
        a = sent_ptr[s]
        b = sent_ptr[s + 1]
        other = ~(np.int64(1) << fold[s]) if fold[s] >= 0 else np.int64(-1)
        for i in range(a, b - 1):
            h = np.int64(_OFFSET)
            h = (h ^ text[i]) * _PRIME
            stop = min(b, i + max_len)
            for j in range(i + 2, stop + 1):
                h = (h ^ text[j - 1]) * _PRIME
                k = j - i
                e = _find(table, ent, codes, text, i, k, h)
                if e < 0:
                    break
                if ent[e, 2] & other != 0:
                    if k > out[0, i]:
                        out[0, i] = k
                    if k > out[1, j - 1]:
                        out[1, j - 1] = k
                    for m in range(i + 1, j - 1):
                        if k > out[2, m]:
                            out[2, m] = k
                if ent[e, 3] == 0:
                    break


AOT_EXPORTS: dict[str, str] = {
    "build_table": "i8(i8[::1], i8[::1], i8[::1], i8[::1], i8[:, ::1])",
    "longest_matches": "void(i8[::1], i8[::1], i8[::1], i8[::1], i8[:, ::1], i8[::1], i8, i8[:, ::1])",
}
