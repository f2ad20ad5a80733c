"""The compiled longest-match walk of an NER gazetteer (built ahead of time into ``structperc._aot_read``;
`structperc.features.gazetteer.Gazetteer` calls it and checks its inputs).

`Gazetteer` finds, left to right, the longest known entity string starting at each token that is not inside
an earlier match, within its sentence. The walk in Python took 0.11 s of the 0.17 s an NER model's dictionary
columns took on esp.testb ×5 (104,615 of its 257,665 tokens start some entity string: a dictionary step each, or
more). Here the entity strings are a trie over integer word ids (`Gazetteer`'s ``_arrays``): node 0 is the root,
an edge is known by ``parent · n_words + word`` in a sorted array (a binary search a step), and a node's kind is
the type of the entity string ending there (-1: none).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, inline="always")
def _child(keys, children, node, word, n_words):
    """The child of ``node`` along ``word`` (-1: none): a binary search of the sorted edge keys."""
    key = np.int64(node) * n_words + word
    lo = 0
    hi = keys.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    if lo < keys.shape[0] and keys[lo] == key:
        return np.int64(children[lo])
    return np.int64(-1)


@njit(cache=True, nogil=True)
def gazetteer_matches(words, starts, ends, keys, children, kinds, n_words, length, kind):
    """For each start ``starts[s]`` (ascending token indices; ``ends[s]``: the end of its sentence) that no
    earlier match covers: ``length[s]``, the tokens of the longest entity string from it (0: none), and
    ``kind[s]``, that string's type (-1: none). ``words``: each token's word id (-1: in no entity string);
    ``keys``/``children``: the trie's edges (sorted keys ``parent · n_words + word``); ``kinds``: each node's type.
    Returns the number of matches."""
    free = np.int64(0)  # the first token after the last match
    found = 0
    for s in range(starts.shape[0]):
        i = starts[s]
        length[s] = 0
        kind[s] = -1
        if i < free:
            continue
        end = ends[s]
        node = np.int64(0)
        n = np.int64(0)
        k = np.int64(-1)
        j = i
        while j < end:
            w = words[j]
            if w < 0:
                break
            node = _child(keys, children, node, w, n_words)
            if node < 0:
                break
            j += 1
            if kinds[node] >= 0:
                n = j - i
                k = kinds[node]
        if n > 0:
            length[s] = n
            kind[s] = k
            free = i + n
            found += 1
    return found


AOT_EXPORTS: dict[str, str] = {
    "gazetteer_matches": "i8(i4[::1], i8[::1], i8[::1], i8[::1], i4[::1], i4[::1], i8, i4[::1], i4[::1])",
}
