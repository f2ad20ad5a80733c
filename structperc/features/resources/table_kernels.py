"""Compiled lookup of a few words in a stored word table (built ahead of time into ``structperc._aot_read``;
`structperc.features.resources.storage.StoredClasses` checks the inputs and calls it).

A model carries a language resource's words as one deflated text, one word per line
(`structperc.features.resources.storage.pack_words`). Tagging a file needs the classes of its few thousand
distinct words; splitting the English capitalisation table's 320,153 words into Python strings and
intersecting them with the file's words took 0.045 s of each ``structperc tag`` run, more than the rest of
the table's use. `find_words` answers the same question on the inflated bytes: the wanted words go into an
open-addressing hash table (over their UTF-8 bytes; linear probing, at most half full), and one pass over the
text hashes each stored word and compares it byte for byte with the wanted words of its slot. No stored word
becomes a Python object.

The pass is latency-bound: each byte extends the word's hash, so the hash step is a rotate and an exclusive or
(two cycles) rather than FNV-1a's multiply (Fowler–Noll–Vo; four), and most stored words are no wanted word, so a
bitmap of the wanted words' hashes (Bloom 1970, one bit per word, at most a sixteenth of its bits set) turns them
away before the finalizer and the probe. On the English capitalisation table (2.7 MB, 290,000 words) against EWT
test ×5's 6,782 distinct words: 7.6 → 5.0 ms. The hash only places words; every match is compared byte for byte.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: MurmurHash3's 64-bit finalizer multiplier (as int64, wrapping).
_FMIX = -49064778989728563  # 0xff51afd7ed558ccd
_NEWLINE = 10
#: Bits of the prefilter's bitmap per wanted word (a power of two), and its least and most bits.
_BITS_PER_WORD = 16
_MIN_BITS = 1 << 12
_MAX_BITS = 1 << 22


@njit(cache=True, nogil=True, inline="always")
def same_run(a, a_start, b, b_start, length):
    """Whether ``a[a_start:a_start + length]`` and ``b[b_start:b_start + length]`` hold the same values."""
    for k in range(length):
        if a[a_start + k] != b[b_start + k]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _step(h, byte):
    """The hash of the bytes so far extended by ``byte``: rotated left by 5 bits, then ``byte`` mixed in (from 0)."""
    return ((h << np.int64(5)) | ((h >> np.int64(59)) & np.int64(31))) ^ np.int64(byte)


@njit(cache=True, nogil=True, inline="always")
def _bit(h, mask):
    """The prefilter's bit of hash ``h`` (shifts and exclusive ors: no multiply before a word is turned away)."""
    return (h ^ (h >> np.int64(13)) ^ (h >> np.int64(29)) ^ (h >> np.int64(47))) & mask


@njit(cache=True, nogil=True, inline="always")
def _slot(h, mask):
    """The first slot of hash ``h``: MurmurHash3's finalizer first, so that the low bits depend on every byte."""
    h ^= (h >> np.int64(33)) & np.int64(0x7FFFFFFF)
    h *= np.int64(_FMIX)
    h ^= (h >> np.int64(33)) & np.int64(0x7FFFFFFF)
    return h & mask


@njit(cache=True, nogil=True)
def find_words(text, query, qptr, slots, hashes, out):
    """``out[q]``: the number of the stored word (its line in ``text``, counted from 0) equal to wanted word
    ``q`` (the bytes ``query[qptr[q]:qptr[q + 1]]``; the wanted words are distinct), or -1 where no stored word
    is. ``text``: words each ending with a newline; ``slots``: int32, all -1, a power of two larger than twice
    the wanted words; ``hashes``: room for each wanted word's hash. Returns how many stored words met a wanted
    word already found (a word the table lists twice)."""
    n_query = qptr.shape[0] - 1
    mask = slots.shape[0] - 1
    bits = np.int64(_MIN_BITS)
    while bits < _BITS_PER_WORD * n_query and bits < _MAX_BITS:
        bits *= 2
    wanted = np.zeros(bits // 64, dtype=np.int64)
    bit_mask = np.int64(bits - 1)
    for q in range(n_query):
        h = np.int64(0)
        for i in range(qptr[q], qptr[q + 1]):
            h = _step(h, query[i])
        hashes[q] = h
        out[q] = -1
        b = _bit(h, bit_mask)
        wanted[b >> np.int64(6)] |= np.int64(1) << (b & np.int64(63))
        s = _slot(h, mask)
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = q
    repeated = 0
    start = 0
    word = 0
    h = np.int64(0)
    for i in range(text.shape[0]):
        if text[i] != _NEWLINE:  # the hash is made as the bytes go by: each is read once
            h = _step(h, text[i])
            continue
        b = _bit(h, bit_mask)
        if (wanted[b >> np.int64(6)] >> (b & np.int64(63))) & np.int64(1):
            length = i - start
            s = _slot(h, mask)
            while slots[s] >= 0:
                q = slots[s]
                if hashes[q] == h and qptr[q + 1] - qptr[q] == length and \
                        same_run(query, qptr[q], text, start, length):
                    if out[q] >= 0:
                        repeated += 1
                    else:
                        out[q] = word
                    break
                s = (s + 1) & mask
        start = i + 1
        word += 1
        h = np.int64(0)
    return repeated


AOT_EXPORTS: dict[str, str] = {
    "find_words": "i8(u1[::1], u1[::1], i8[::1], i4[::1], i8[::1], i8[::1])",
}
