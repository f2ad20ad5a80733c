"""The transitions a tagging scheme allows, as a mask.

Constraints are a mask, not special cases in the decoder: the decoder adds -inf to the scores of
forbidden transitions, so BMES word segmentation and IOB2/IOBES chunking share one mechanism.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from structperc.errors import InputError

SCHEMES = ("none", "iob1", "iob2", "iobes", "bmes", "bmes6")

#: bmes6 (`structperc.labels.bmes6`): the label each 6-tag label must follow (None: sentence start);
#: B, S and any other label follow a word's end.
_BMES6_AFTER = {"B2": ("B",), "B3": ("B2",), "M": ("B3", "M"), "E": ("B", "B2", "B3", "M")}
#: Labels a sentence may not end in, per scheme (their word or span is still open).
_OPEN = {"bmes": ("B", "M", "I"), "bmes6": ("B", "B2", "B3", "M"), "iobes": ("B", "I")}


def _split(label: str) -> tuple[str, str]:
    """('B', 'NP') for 'B-NP'; ('O', '') for 'O'; a bare 'B' (BMES) gives ('B', '')."""
    if label == "O":
        return "O", ""
    if len(label) >= 2 and label[1] in "-_":
        return label[0], label[2:]
    return label, ""


def _allowed(prev: str | None, cur: str, scheme: str) -> bool:
    """Whether ``cur`` may follow ``prev`` (None: sentence start) under ``scheme``."""
    cp, ct = _split(cur)
    if scheme == "bmes6":
        return prev in _BMES6_AFTER.get(cur, (None, "E", "S"))
    if scheme == "bmes":
        pp = _split(prev)[0] if prev is not None else None
        if cp in ("M", "E", "I"):
            return pp in ("B", "M", "I")
        return pp in (None, "E", "S")
    pp, pt = _split(prev) if prev is not None else ("O", "")
    inside_same = pp != "O" and pt == ct
    if scheme == "iob2":
        return cp != "I" or (pp in ("B", "I") and inside_same)
    if scheme == "iob1":
        return cp != "B" or (pp in ("B", "I") and inside_same)
    if scheme == "iobes":
        open_chunk = pp in ("B", "I")
        if cp in ("I", "E"):
            return open_chunk and inside_same
        return not open_chunk
    return True


def transition_mask(labels: Sequence[str], scheme: str) -> tuple[np.ndarray, np.ndarray]:
    """Penalties for forbidden moves.

    Returns
    -------
    trans : array of float64, shape (L + 1, L)
        0 where label j may follow label i (row L is the ``<bos>`` start), -inf elsewhere.
    end : array of float64, shape (L,)
        0 where a sentence may end in label j, -inf elsewhere.
    """
    if scheme not in SCHEMES:
        raise InputError(f"unknown label scheme {scheme!r} (known: {', '.join(SCHEMES)})")
    n = len(labels)
    trans = np.zeros((n + 1, n))
    end = np.zeros(n)
    if scheme == "none":
        return trans, end
    prevs: list[str | None] = list(labels) + [None]
    for i, p in enumerate(prevs):
        for j, c in enumerate(labels):
            if not _allowed(p, c, scheme):
                trans[i, j] = -np.inf
    for j, c in enumerate(labels):
        if (c if scheme == "bmes6" else _split(c)[0]) in _OPEN.get(scheme, ()):
            end[j] = -np.inf
    return trans, end


def valid_sequence(tags: Sequence[str], scheme: str) -> bool:
    """Whether a tag sequence obeys ``scheme`` (used by tests and input checks)."""
    prev = None
    for t in tags:
        if not _allowed(prev, t, scheme):
            return False
        prev = t
    if prev is not None and (prev if scheme == "bmes6" else _split(prev)[0]) in _OPEN.get(scheme, ()):
        return False
    return True
