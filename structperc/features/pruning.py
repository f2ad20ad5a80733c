"""Shrinking a fitted `FeatureIndex` after compression: vocabulary entries no kept attribute uses go.

The attribute tables themselves are pruned by `FeatureIndex.prune`; this drops the atom-vocabulary
entries (words, POS tags, affixes …) that no kept key refers to any more and re-encodes the keys.
The renumbering is monotone, so the sorted key tables stay sorted and the weights need no
permutation.
"""
from __future__ import annotations

import numpy as np

from structperc.features.index import FeatureIndex
from structperc.features.keys import digits


def prune_vocabularies(fi: FeatureIndex) -> tuple[int, int]:
    """Drop vocabulary entries no kept key uses; re-encode the keys. Returns (entries before, after)."""
    before = sum(len(v) for v in fi.vocabs)
    used = [np.zeros(len(v), dtype=bool) for v in fi.vocabs]
    for u in used:
        u[:2] = True  # __BOS__ / __EOS__ are codes the extractor writes itself: keep them in place
    if any(len(k) and int(k.min()) < 0 for k in fi.keys):
        return before, before  # not produced by fitting; leave such tables alone
    decoded = [digits(fi.keys[ti], fi.radix[ti]) if t.parts else [] for ti, t in enumerate(fi.templates)]
    for t, codes in zip(fi.templates, decoded):
        for part, c in zip(t.parts, codes):
            if part.other is None:
                used[fi.atom_position(part.atom)][c] = True
    if all(u.all() for u in used):
        return before, before
    remap = [np.cumsum(u) - 1 for u in used]  # monotone: sorted key tables stay sorted
    vocabs = [[w for w, keep in zip(v, u.tolist()) if keep] for v, u in zip(fi.vocabs, used)]
    keys, radixes = [], []
    for ti, t in enumerate(fi.templates):
        radix = [len(vocabs[fi.atom_position(p.atom)]) if p.other is None else int(r)
                 for p, r in zip(t.parts, fi.radix[ti])]
        key = np.zeros(len(fi.keys[ti]), dtype=np.int64)
        for part, c, r in zip(t.parts, decoded[ti], radix):
            key = key * r + (remap[fi.atom_position(part.atom)][c] if part.other is None else c)
        if len(key) > 1 and not np.all(key[1:] > key[:-1]):  # cannot happen: the remap is monotone
            raise AssertionError("re-encoded attribute keys are not strictly increasing")
        keys.append(key)
        radixes.append(radix)
    fi.replace_tables(vocabs, radixes, keys)
    return before, sum(len(v) for v in fi.vocabs)
