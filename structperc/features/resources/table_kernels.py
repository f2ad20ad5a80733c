"""Compiled lookups of words in a stored word table (built ahead of time into ``structperc._aot_read``;
`structperc.features.resources.storage.StoredClasses` checks the inputs and calls them).

A model carries a language resource's words as one deflated text, one word per line
(`structperc.features.resources.storage.pack_words`). Tagging a file needs the classes of its few thousand
distinct words; splitting the English capitalisation table's 320,153 words into Python strings and building their
dictionary took 0.06 s of each ``structperc tag`` run, more than the rest of the table's use. Here no stored word
becomes a Python object: `index_words` numbers the stored words in an open-addressing hash table over their UTF-8
bytes (linear probing, at most 0.7 full) while the model is read (in the thread that inflates the table), and
`probe_words` finds each wanted word with a probe or two. A pass over the whole table at every lookup (hashing each
stored word and comparing it with the wanted ones, the way before) took 5.9 ms of the capitalisation table against
EWT test ×5's words and their lowercase forms; the probes take 0.7 ms, the index 10 ms once, beside the model's
other reading.

The hash is latency-bound: each byte extends it, so the step is a rotate and an exclusive or (two cycles) rather
than FNV-1a's multiply (Fowler–Noll–Vo; four), with MurmurHash3's finalizer before a slot is picked. It only places
words: every match is compared byte for byte.
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: MurmurHash3's 64-bit finalizer multiplier (as int64, wrapping).
_FMIX = -49064778989728563  # 0xff51afd7ed558ccd
_NEWLINE = 10


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
def _slot(h, mask):
    """The first slot of hash ``h``: MurmurHash3's finalizer first, so that the low bits depend on every byte."""
    h ^= (h >> np.int64(33)) & np.int64(0x7FFFFFFF)
    h *= np.int64(_FMIX)
    h ^= (h >> np.int64(33)) & np.int64(0x7FFFFFFF)
    return h & mask


@njit(cache=True, nogil=True)
def index_words(text, starts, slots):
    """Number the stored words of ``text`` (each ending with a newline) in the order they come: ``starts[k]``
    gets word k's first byte (and ``starts[n]``, one past the words, the text's length), ``slots`` (int32, all
    -1, a power of two larger than the words) the number of each word at its hash's slot. Returns how many
    words equal one before them (a damaged table, which lists a word twice: the later one is not entered)."""
    mask = slots.shape[0] - 1
    word = 0
    start = 0
    repeated = 0
    h = np.int64(0)
    for i in range(text.shape[0]):
        if text[i] != _NEWLINE:  # the hash is made as the bytes go by: each is read once
            h = _step(h, text[i])
            continue
        starts[word] = start
        length = i - start
        s = _slot(h, mask)
        while True:
            k = slots[s]
            if k < 0:
                slots[s] = word
                break
            # an earlier word (k < word): it ends before ``starts[k + 1]``, written already (starts[word] above)
            if starts[k + 1] - 1 - starts[k] == length and same_run(text, starts[k], text, start, length):
                repeated += 1
                break
            s = (s + 1) & mask
        word += 1
        start = i + 1
        h = np.int64(0)
    starts[word] = start
    return repeated


@njit(cache=True, nogil=True)
def probe_words(text, starts, slots, query, qptr, out):
    """``out[q]``: the number of the stored word of ``text`` equal to wanted word ``q`` (the bytes
    ``query[qptr[q]:qptr[q + 1]]``), -1 where none is; ``starts`` and ``slots`` as `index_words` made them."""
    mask = slots.shape[0] - 1
    for q in range(qptr.shape[0] - 1):
        h = np.int64(0)
        for i in range(qptr[q], qptr[q + 1]):
            h = _step(h, query[i])
        length = qptr[q + 1] - qptr[q]
        found = -1
        s = _slot(h, mask)
        while True:
            k = slots[s]
            if k < 0:
                break
            if starts[k + 1] - 1 - starts[k] == length and same_run(text, starts[k], query, qptr[q], length):
                found = k
                break
            s = (s + 1) & mask
        out[q] = found


AOT_EXPORTS: dict[str, str] = {
    "index_words": "i8(u1[::1], i4[::1], i4[::1])",
    "probe_words": "void(u1[::1], i4[::1], i4[::1], u1[::1], i8[::1], i8[::1])",
}
