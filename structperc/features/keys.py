"""Mixed-radix attribute keys: a template's parts (one code per part) combined into one int64.

A template with parts of radixes ``(r0, r1, …, rk)`` maps the codes ``(c0, c1, …, ck)`` to the key
``((c0·r1 + c1)·r2 + …)·rk + ck`` (the last part least significant), so a conjunction is arithmetic,
not string concatenation, and sorting keys sorts by the first part, then the next. Encoding lives in
`structperc.features.index`; this module decodes and re-encodes (continued training, compression,
readable attribute names all need it) and shifts codes to a template's offsets.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

#: Codes every atom vocabulary starts with: the values past either end of a sentence.
BOS, EOS = 0, 1


def digits(keys: np.ndarray, radix: Sequence[int]) -> list[np.ndarray]:
    """The part codes of ``keys`` (one int64 array per part, first part first).

    Examples
    --------
    >>> [d.tolist() for d in digits(np.array([7, 11]), [3, 4])]
    [[1, 2], [3, 3]]
    """
    rest = np.asarray(keys, dtype=np.int64).copy()
    out: list[np.ndarray] = []
    for r in reversed(list(radix)[1:]):
        rest, d = np.divmod(rest, int(r))
        out.append(d)
    out.append(rest)
    return out[::-1]


def combine(codes: Sequence[np.ndarray], radix: Sequence[int]) -> np.ndarray:
    """Inverse of `digits`: the keys of part codes under ``radix``."""
    key = np.asarray(codes[0], dtype=np.int64).copy()
    for c, r in zip(codes[1:], list(radix)[1:]):
        key = key * int(r) + c
    return key


def recode(keys: np.ndarray, old: list[int], new: list[int]) -> np.ndarray:
    """Keys re-encoded from radixes ``old`` to ``new`` (each new radix >= the old one: the order of
    keys, and so the sortedness of a table, is kept)."""
    if old == new or not len(old):
        return keys.copy()
    return combine(digits(keys, old), new)


class Shifts:
    """Codes moved to a template's offsets within each sentence of one corpus (``pos``: each token's place
    in its sentence, ``length``: its sentence's length), for every template of a featurization.

    A shift is a slice copy (the corpus is one array, so ``codes[t + offset]`` is ``codes`` moved by
    ``offset``) and the tokens whose neighbour lies past a sentence's end are a few fixed positions,
    found once per offset: no index array, no per-call comparisons over the corpus."""

    def __init__(self, pos: np.ndarray, length: np.ndarray):
        self.pos, self.length, self.n = pos, length, len(pos)
        self._outside: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def outside(self, offset: int) -> tuple[np.ndarray, np.ndarray]:
        """The tokens whose neighbour at ``offset`` is before the sentence start, and after its end."""
        if offset not in self._outside:
            target = self.pos + offset
            self._outside[offset] = (np.flatnonzero(target < 0), np.flatnonzero(target >= self.length))
        return self._outside[offset]

    def __call__(self, codes: np.ndarray, offset: int, fill_unknown: bool = False) -> np.ndarray:
        """codes[t + offset] within each sentence; BOS/EOS (or -1 for ``same``) outside it."""
        if offset == 0:
            return codes
        n = self.n
        out = np.empty_like(codes)
        k = min(abs(offset), n)
        if offset > 0:
            out[:n - k] = codes[k:]
        else:
            out[k:] = codes[:n - k]
        before, after = self.outside(offset)  # every token whose neighbour falls off the corpus is here
        out[before] = BOS if fill_unknown else -1
        out[after] = EOS if fill_unknown else -1
        return out

