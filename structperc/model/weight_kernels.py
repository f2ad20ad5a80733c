"""Compiled loading of state weights: check a saved model's pairs and lay them out for scoring.

Why: a model stores its state weights as row-compressed non-zero pairs (`structperc.model.archive`), and
tagging wants the rows that `structperc.model.state_weights.pads_row` picks stored full. In numpy the check
(labels ascending within every row) and the new layout take a dozen passes over arrays as long as
the pairs, each allocating: ~30 ms for CoNLL-2000's chunker (570,000 pairs), a tenth of
`structperc tag` on its test file. Here each is one pass. `structperc.model.state_weights` keeps the numpy
versions for installs without the ahead-of-time build (tagging never starts numba's JIT).
"""
from __future__ import annotations

from numba import njit

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS = {
    "rows_ascending": "b1(i8[::1], i2[::1])",
    "pad_rows": "void(i8[::1], i2[::1], f4[::1], b1[::1], i8, i8[::1], i2[::1], f4[::1])",
}


@njit(cache=True, nogil=True)
def rows_ascending(ptr, labels):
    """Whether the labels of every row ``ptr[a]:ptr[a + 1]`` strictly ascend (no repeats)."""
    for a in range(ptr.shape[0] - 1):
        for j in range(ptr[a] + 1, ptr[a + 1]):
            if labels[j] <= labels[j - 1]:
                return False
    return True


@njit(cache=True, nogil=True)
def pad_rows(ptr, labels, values, pad, L, new_ptr, out_labels, out_values):
    """The pairs of ``ptr, labels, values`` in the layout ``new_ptr``: rows where ``pad`` is True
    hold every label (label l at offset l, weight 0 where the pair is absent), the others keep their
    pairs in order. ``out_values`` must be zero; both outputs have ``new_ptr[-1]`` slots."""
    for a in range(ptr.shape[0] - 1):
        start = new_ptr[a]
        if pad[a]:
            for y in range(L):
                out_labels[start + y] = y
            for j in range(ptr[a], ptr[a + 1]):
                out_values[start + labels[j]] = values[j]
        else:
            for j in range(ptr[a], ptr[a + 1]):
                out_labels[start + j - ptr[a]] = labels[j]
                out_values[start + j - ptr[a]] = values[j]
