"""Span tag schemes (IOB1, IOB2/BIO, IOBES/BILOU) and conversion between them.

Span tasks train on IOBES internally even when the data is IOB2: the extra E/S labels tell the model
where a span ends, which first-order transitions cannot see from B/I alone (on CoNLL-2000 this is
worth ~0.2 F1). Predictions are converted back to the data's scheme, so users never see the change.
Conversion goes through IOB2 and reads ill-formed input the way conlleval does (an I-X that cannot
continue a span starts one).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

SPAN_SCHEMES = ("iob1", "iob2", "iobes", "bilou")


def _parts(tag: str) -> tuple[str, str]:
    if tag == "O" or len(tag) < 2 or tag[1] not in "-_":
        return "O" if tag == "O" else tag, ""
    return tag[0], tag[2:]


def _to_iob2(tags: Sequence[str], scheme: str) -> list[str]:
    out = []
    prev_p, prev_t = "O", ""
    for tag in tags:
        p, t = _parts(tag)
        if tag == "O" or not t:
            out.append(tag)
            prev_p, prev_t = "O", ""
            continue
        if scheme == "bilou":
            p = {"L": "E", "U": "S"}.get(p, p)
        if scheme in ("iobes", "bilou"):
            begins = p in ("B", "S") or prev_p in ("O", "E", "S") or prev_t != t
        elif scheme == "iob1":
            begins = (p == "B") or prev_p == "O" or prev_t != t
        else:
            begins = p == "B" or prev_p == "O" or prev_t != t
        out.append(("B-" if begins else "I-") + t)
        prev_p, prev_t = p, t
    return out


def _from_iob2(tags: list[str], scheme: str) -> list[str]:
    if scheme == "iob2":
        return tags
    out = []
    n = len(tags)
    for i, tag in enumerate(tags):
        p, t = _parts(tag)
        if tag == "O" or not t:
            out.append(tag)
            continue
        nxt = tags[i + 1] if i + 1 < n else "O"
        continues = nxt == "I-" + t
        if scheme == "iob1":
            prev = tags[i - 1] if i else "O"
            after_same = _parts(prev)[1] == t and prev != "O"
            out.append(("B-" if p == "B" and after_same else "I-") + t)
        else:
            e, s = ("E", "S") if scheme == "iobes" else ("L", "U")
            if p == "B":
                out.append(("B-" if continues else f"{s}-") + t)
            else:
                out.append(("I-" if continues else f"{e}-") + t)
    return out


def convert(tags: Sequence[str], source: str, target: str) -> list[str]:
    """Convert one sentence's tags between span schemes.

    Examples
    --------
    >>> convert(["B-NP", "I-NP", "O", "B-VP"], "iob2", "iobes")
    ['B-NP', 'E-NP', 'O', 'S-VP']
    >>> convert(["I-PER", "I-PER", "B-PER"], "iob1", "iob2")
    ['B-PER', 'I-PER', 'B-PER']
    """
    for s in (source, target):
        if s not in SPAN_SCHEMES:
            raise ValueError(f"unknown span scheme {s!r} (known: {', '.join(SPAN_SCHEMES)})")
    if source == target:
        return list(tags)
    return _from_iob2(_to_iob2(tags, source), target)


def convert_flat(tags: list[str], sent_ptr: np.ndarray, source: str, target: str) -> list[str]:
    """`convert` applied sentence by sentence to a flat tag column."""
    if source == target:
        return list(tags)
    out: list[str] = []
    p = sent_ptr.tolist()
    for i in range(len(p) - 1):
        out.extend(convert(tags[p[i]:p[i + 1]], source, target))
    return out
