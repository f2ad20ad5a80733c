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


def shift(codes: np.ndarray, pos: np.ndarray, length: np.ndarray, offset: int, n: int,
           fill_unknown: bool = False) -> np.ndarray:
    """codes[t + offset] within each sentence; BOS/EOS (or -1 for ``same``) outside it."""
    if offset == 0:
        return codes
    idx = np.arange(n, dtype=np.int64) + offset
    np.clip(idx, 0, max(n - 1, 0), out=idx)
    out = codes[idx] if n else codes.copy()
    target = pos + offset
    if fill_unknown:
        out[target < 0] = BOS
        out[target >= length] = EOS
    else:
        out[(target < 0) | (target >= length)] = -1
    return out
