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


_LETTERS = frozenset("BIESLU")
Span = tuple[str, str]  # (prefix letter, type); the type is "" for untyped tags such as a bare "B"


def _parse(tag: str) -> Span | None:
    """(prefix, type) of a span tag; None for ``O`` and for anything that is not a span tag."""
    if len(tag) >= 2 and tag[0] in _LETTERS and tag[1] in "-_":
        return tag[0], tag[2:]
    if tag in _LETTERS:
        return tag, ""
    return None


#: The prefix letters each span scheme writes.
SCHEME_LETTERS = {"iob1": "BI", "iob2": "BI", "iobes": "BIES", "bilou": "BILU"}


def foreign_tags(tags: Sequence[str], scheme: str, unknown: str | None = None) -> list[str]:
    """The tags of ``tags`` (distinct ones, say) that ``scheme`` does not write: neither ``O``, nor ``unknown``
    (partial labels' marker), nor a prefix letter of the scheme with a type (``B-NP``, or a bare ``B``). A model
    would learn such a tag as a label of its own, read by nothing as a span."""
    letters = SCHEME_LETTERS[scheme]
    return [t for t in tags if t != "O" and t != unknown and ((p := _parse(t)) is None or p[0] not in letters)]


def _to_iob2(parsed: list[Span | None], scheme: str) -> list[Span | None]:
    out: list[Span | None] = []
    prev_p, prev_t = "O", None
    for item in parsed:
        if item is None:
            out.append(None)
            prev_p, prev_t = "O", None
            continue
        p, t = item
        if scheme == "bilou":
            p = {"L": "E", "U": "S"}.get(p, p)
        if scheme in ("iobes", "bilou"):
            begins = p in ("B", "S") or prev_p in ("O", "E", "S") or prev_t != t
        else:  # iob1 and iob2 alike: B, or an I that cannot continue the previous span
            begins = p == "B" or prev_p == "O" or prev_t != t
        out.append(("B" if begins else "I", t))
        prev_p, prev_t = p, t
    return out


def _from_iob2(iob2: list[Span | None], scheme: str) -> list[Span | None]:
    if scheme == "iob2":
        return iob2
    out: list[Span | None] = []
    n = len(iob2)
    for i, item in enumerate(iob2):
        if item is None:
            out.append(None)
            continue
        p, t = item
        continues = i + 1 < n and iob2[i + 1] == ("I", t)
        if scheme == "iob1":  # B only where a span starts right after one of the same type
            prev = iob2[i - 1] if i else None
            out.append(("B" if p == "B" and prev is not None and prev[1] == t else "I", t))
        else:
            e, s = ("E", "S") if scheme == "iobes" else ("L", "U")
            if p == "B":
                out.append(("B" if continues else s, t))
            else:
                out.append(("I" if continues else e, t))
    return out


def convert(tags: Sequence[str], source: str, target: str) -> list[str]:
    """Convert one sentence's tags between span schemes.

    Examples
    --------
    >>> convert(["B-NP", "I-NP", "O", "B-VP"], "iob2", "iobes")
    ['B-NP', 'E-NP', 'O', 'S-VP']
    >>> convert(["I-PER", "I-PER", "B-PER"], "iob1", "iob2")
    ['B-PER', 'I-PER', 'B-PER']
    >>> convert(["B", "I", "O", "B"], "iob2", "iobes")   # untyped tags, as in base-NP chunking
    ['B', 'E', 'O', 'S']
    """
    for s in (source, target):
        if s not in SPAN_SCHEMES:
            raise ValueError(f"unknown span scheme {s!r} (known: {', '.join(SPAN_SCHEMES)})")
    if source == target:
        return list(tags)
    sep = next((t[1] for t in tags if len(t) >= 2 and t[0] in _LETTERS and t[1] in "-_"), "-")
    spans = _from_iob2(_to_iob2([_parse(t) for t in tags], source), target)
    return [tag if sp is None else sp[0] + (sep + sp[1] if sp[1] else "") for tag, sp in zip(tags, spans)]


def convert_flat(tags: list[str], sent_ptr: np.ndarray, source: str, target: str) -> list[str]:
    """`convert` applied sentence by sentence to a flat tag column."""
    if source == target:
        return list(tags)
    out: list[str] = []
    p = sent_ptr.tolist()
    for i in range(len(p) - 1):
        out.extend(convert(tags[p[i]:p[i + 1]], source, target))
    return out


_PREFIX_CODE = {"B": 1, "I": 2, "E": 3, "S": 4, "L": 2, "U": 2}  # L/U outside BILOU: as `convert`
_BILOU_CODE = {**_PREFIX_CODE, "L": 3, "U": 4}                     # BILOU's L/U read as E/S


def ids_to_iob2(ids: np.ndarray, sent_ptr: np.ndarray, labels: Sequence[str], source: str) \
        -> list[str] | None:
    """`convert_flat` to IOB2 on predicted label ids, vectorized over the whole corpus.

    The decoder's output is ids; reading each span tag's prefix and type once per *label* and
    comparing neighbours with numpy avoids a Python loop per token (which cost as much as decoding).
    Same rules as `convert` (an I that cannot continue a span begins one). Returns None where the
    fast path does not apply (labels mixing ``-`` and ``_``, or another source scheme).
    """
    if source not in SPAN_SCHEMES:
        return None
    parsed = [_parse(t) for t in labels]
    seps = {t[1] for t in labels if len(t) >= 2 and t[0] in _LETTERS and t[1] in "-_"}
    if len(seps) > 1:
        return None
    sep = seps.pop() if seps else "-"
    types = sorted({p[1] for p in parsed if p is not None})
    type_of = {t: i for i, t in enumerate(types)}
    codes = _BILOU_CODE if source == "bilou" else _PREFIX_CODE
    prefix = np.array([0 if p is None else codes[p[0]] for p in parsed] + [0], dtype=np.int8)
    typ = np.array([-1 if p is None else type_of[p[1]] for p in parsed] + [-1], dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    n = len(ids)
    P, Ty = prefix[ids], typ[ids]
    prev = np.full(n, len(labels), dtype=np.int64)  # the appended "O" entry
    if n:
        prev[1:] = ids[:-1]
        starts = np.asarray(sent_ptr[:-1], dtype=np.int64)
        prev[starts[starts < n]] = len(labels)
    pP, pTy = prefix[prev], typ[prev]
    if source in ("iobes", "bilou"):
        begins = (P == 1) | (P == 4) | (pP == 0) | (pP == 3) | (pP == 4) | (pTy != Ty)
    else:
        begins = (P == 1) | (pP == 0) | (pTy != Ty)
    # target strings: labels as they are for non-span tags, else B-type / I-type
    table = list(labels) + [f"{b}{sep}{t}" if t else b for t in types for b in ("B", "I")]
    pick = np.where(Ty < 0, ids, len(labels) + 2 * Ty + np.where(begins, 0, 1))
    return np.array(table, dtype=object)[pick].tolist()


def spans(tags: Sequence[str], scheme: str) -> list[tuple[int, int, str]]:
    """(start, end, type) of every span of one sentence's tags in span ``scheme`` (end exclusive);
    an ``I`` that cannot continue the open span starts one (conlleval's reading). What the spaCy
    component and the HTTP service show as entities and chunks.

    Examples
    --------
    >>> spans(["B-PER", "I-PER", "O", "I-LOC"], "iob2")
    [(0, 2, 'PER'), (3, 4, 'LOC')]
    """
    iob2 = convert(tags, scheme, "iob2") if scheme != "iob2" else list(tags)
    out: list[tuple[int, int, str]] = []
    start, kind = -1, ""
    for i, tag in enumerate(iob2):
        if len(tag) >= 2 and tag[0] in "BI" and tag[1] in "-_":
            prefix, t = tag[0], tag[2:]
        elif tag in ("B", "I"):
            prefix, t = tag, ""
        else:  # O, or not a span tag
            if start >= 0:
                out.append((start, i, kind))
            start = -1
            continue
        if prefix == "B" or start < 0 or t != kind:
            if start >= 0:
                out.append((start, i, kind))
            start, kind = i, t
    if start >= 0:
        out.append((start, len(iob2), kind))
    return out
