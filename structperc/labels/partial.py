"""Partially known tags: which of a model's labels a data tag (or an unknown one) may stand for.

A span model learns in its own scheme (IOBES by default) while the data is written in another
(IOB2). With every tag of a sentence known, `structperc.labels.schemes.convert` gives the model's
labels exactly. With some tags unknown (the marker ``?`` in a file, ``None`` in a list) it cannot:
an IOB2 ``B-NP`` followed by an unknown tag is an IOBES ``B-NP`` if the chunk goes on and an
``S-NP`` if it stops there. Partial-label training (latent structured perceptron) and decoding with
forced tags both need the *set* of model labels a known tag allows; this module computes it, token
by token (`label_projection`) and, inside a partially known sentence, with the known neighbours
narrowing the set (`sentence_allowed`).

Every span tag is read as (type, begins a span?, ends a span?), each of the two flags true, false
or unknown in its scheme: IOBES/BILOU give both (B: begins, not ends; I: neither; E/L: ends;
S/U: both), IOB2 gives only *begins* (B yes, I no), IOB1 gives *begins* for B only (its I begins
a span unless the previous token is in a span of the same type: unknown token by token, so IOB1
``I-X`` projects onto every model label of type X, and IOB1 ``B-X`` onto those that begin a span).
A data tag stands for the model labels of its type whose flags agree wherever both are known; tags
that are not span tags (``O``, or any tag of the ``none``/``bmes`` schemes) stand for themselves.
A segmentation model in the 6-tag set (``bmes6``, `structperc.labels.bmes6`) reads BMES data: a BMES
``M`` stands for B2, B3 and M, the other tags for themselves, and the transitions settle which.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from structperc.labels import bmes6
from structperc.labels.schemes import SPAN_SCHEMES, _parse, _to_iob2, convert

#: The default marker of an unknown tag in the tag column of a file.
UNKNOWN = "?"

_LETTERS = "BIESLU"
_PREFIXES = {"iob1": "BI", "iob2": "BI", "iobes": "BIES", "bilou": "BILU"}
Reading = tuple[str, bool | None, bool | None]  # (type, begins, ends); None: not known


def _span(tag: str) -> tuple[str, str] | None:
    """(prefix, type) of a span tag, None for anything else (as `structperc.labels.schemes`)."""
    if len(tag) >= 2 and tag[0] in _LETTERS and tag[1] in "-_":
        return tag[0], tag[2:]
    if len(tag) == 1 and tag in _LETTERS:
        return tag, ""
    return None


def _reading(tag: str, scheme: str) -> Reading | None:
    """What ``tag`` alone says in ``scheme`` (see the module docstring); None: not a span tag."""
    sp = _span(tag)
    if sp is None:
        return None
    p, t = sp
    if scheme in ("iobes", "bilou"):
        p = {"L": "E", "U": "S"}.get(p, p) if scheme == "bilou" else p
        return t, {"B": True, "S": True, "I": False, "E": False}.get(p), \
            {"E": True, "S": True, "B": False, "I": False}.get(p)
    if scheme == "iob1":
        return t, (True if p == "B" else None), None
    return t, (p == "B"), None  # iob2: an I continues a span token by token


def _agrees(model: Reading, data: Reading) -> bool:
    return model[0] == data[0] and all(m is None or d is None or m == d
                                       for m, d in zip(model[1:], data[1:]))


def _check(model_scheme: str, data_scheme: str) -> None:
    if model_scheme != data_scheme and not (model_scheme in SPAN_SCHEMES and data_scheme in SPAN_SCHEMES) \
            and (model_scheme, data_scheme) != (bmes6.BMES6, "bmes"):
        raise ValueError(f"no conversion between the {data_scheme!r} and {model_scheme!r} schemes "
                         f"(span schemes: {', '.join(SPAN_SCHEMES)})")


def _separator(labels: Sequence[str]) -> str:
    return next((t[1] for t in labels if _span(t) is not None and len(t) >= 2), "-")


def data_scheme_tags(labels: Sequence[str], model_scheme: str, data_scheme: str) -> list[str]:
    """Every tag of ``data_scheme`` that ``labels`` (the model's, in ``model_scheme``) can express:
    each span type with each of the data scheme's prefixes, and the labels that are not span tags."""
    _check(model_scheme, data_scheme)
    if model_scheme == data_scheme:
        return list(labels)
    if model_scheme == bmes6.BMES6:
        return sorted(set(bmes6.to_bmes_table(labels)))
    sep = _separator(labels)
    types = sorted({sp[1] for sp in map(_span, labels) if sp is not None})
    other = [lab for lab in labels if _span(lab) is None]
    return sorted(other + [p + (sep + t if t else "") for t in types for p in _PREFIXES[data_scheme]])


def label_projection(labels: Sequence[str], model_scheme: str, data_scheme: str) -> dict[str, np.ndarray]:
    """For every tag of the data's scheme, the ids (into ``labels``, the model's labels in
    ``model_scheme``) of the model labels that read as that tag token by token.

    Same scheme: the identity (each label stands for itself). IOB2 data, IOBES model: ``B-NP`` ->
    {B-NP, S-NP}, ``I-NP`` -> {I-NP, E-NP}, ``O`` -> {O}. IOB1 data is context-dependent: its
    ``I-X`` may begin a span, so it projects onto every model label of type X; its ``B-X`` onto the
    labels that begin one (the extra fact that a span of the same type precedes is not a property of
    one model label and is left to the transitions). Ids ascend; a data tag whose type the model
    lacks is absent from the dict.

    Examples
    --------
    >>> p = label_projection(["B-NP", "E-NP", "I-NP", "O", "S-NP"], "iobes", "iob2")
    >>> {tag: ids.tolist() for tag, ids in p.items()}
    {'B-NP': [0, 4], 'I-NP': [1, 2], 'O': [3]}
    """
    _check(model_scheme, data_scheme)
    if model_scheme == data_scheme:
        return {lab: np.array([i], dtype=np.int64) for i, lab in enumerate(labels)}
    if model_scheme == bmes6.BMES6:  # BMES data, 6-tag model: M stands for B2, B3 and M
        return bmes6.projection(labels)
    model = [_reading(lab, model_scheme) for lab in labels]
    out: dict[str, np.ndarray] = {}
    for tag in data_scheme_tags(labels, model_scheme, data_scheme):
        ids = _matching(tag, _reading(tag, data_scheme), labels, model)
        if len(ids):
            out[tag] = ids
    return out


def _matching(tag: str, reading: Reading | None, labels: Sequence[str],
              model: list[Reading | None]) -> np.ndarray:
    if reading is None:
        return np.array([i for i, lab in enumerate(labels) if lab == tag], dtype=np.int64)
    return np.array([i for i, m in enumerate(model) if m is not None and _agrees(m, reading)],
                    dtype=np.int64)


def _normalized(tags: list[str], scheme: str) -> list:
    """``tags`` read into IOB2 (prefix, type) pairs the way `convert` reads them (None: no span)."""
    return _to_iob2([_parse(t) for t in tags], scheme)


def _context_reading(tags: Sequence[str | None], t: int, scheme: str) -> Reading | None:
    """`_reading` of the known tag ``tags[t]`` with its known neighbours settling the flags the
    way `convert` reads them (an I that cannot continue the previous span begins one; a span ends
    where the next tag does not continue it). An unknown neighbour leaves the tag's own reading."""
    tag = tags[t]
    assert tag is not None
    own = _reading(tag, scheme)
    if own is None:
        return None
    typ, begins, ends = own
    prev = tags[t - 1] if t > 0 else ""
    nxt = tags[t + 1] if t + 1 < len(tags) else ""
    if prev is not None:  # known (or the sentence start): read as `convert` does
        begins = _normalized(([prev] if prev else []) + [tag], scheme)[-1] == ("B", typ)
    if nxt is not None:
        ends = not nxt or _normalized([tag, nxt], scheme)[1] != ("I", typ)
    return typ, begins, ends


def sentence_allowed(tags: Sequence[str | None], labels: Sequence[str], model_scheme: str,
                     data_scheme: str) -> np.ndarray:
    """The model labels each token of a sentence allows, bool (T, L); ``None`` marks an unknown tag.

    A sentence with every tag known gives one label per token, those of `convert` (exact). In a
    partially known one, an unknown token allows every label and a known token the labels of its
    type whose begins/ends flags agree with what the tag and its *known* neighbours say (see
    `_context_reading`): IOB2 ``B-NP`` before an unknown tag allows IOBES {B-NP, S-NP}, before
    ``I-NP`` only B-NP. A tag the model has no label for allows none.
    """
    _check(model_scheme, data_scheme)
    T, L = len(tags), len(labels)
    out = np.zeros((T, L), dtype=bool)
    index = {lab: i for i, lab in enumerate(labels)}
    if all(t is not None for t in tags):
        known = [t for t in tags if t is not None]
        exact = known if model_scheme == data_scheme else bmes6.from_bmes(known, np.arange(T), np.array([0, T])) \
            if model_scheme == bmes6.BMES6 else convert(known, data_scheme, model_scheme)
        for t, lab in enumerate(exact):
            if lab in index:
                out[t, index[lab]] = True
        return out
    if model_scheme == bmes6.BMES6:  # each known tag's 6-tag labels; the transitions settle the rest
        projected = bmes6.projection(labels)
        for t, tag in enumerate(tags):
            if tag is None:
                out[t] = True
            elif tag in projected:
                out[t, projected[tag]] = True
        return out
    model = [_reading(lab, model_scheme) for lab in labels]
    for t, tag in enumerate(tags):
        if tag is None:
            out[t] = True
        elif model_scheme == data_scheme:
            if tag in index:
                out[t, index[tag]] = True
        else:
            out[t, _matching(tag, _context_reading(tags, t, data_scheme), labels, model)] = True
    return out


def partial_labels(model_tags: Sequence[str], model_scheme: str, data_scheme: str) -> list[str]:
    """The label set of a partially labelled corpus, sorted, from its known tags in the model's
    scheme: with a conversion between the schemes every model-scheme label of every span type seen
    (an unknown or ambiguous tag may stand for any prefix: a type seen only as IOB2 ``B-NP`` before
    unknown tags still needs IOBES E-NP and S-NP), plus the other tags seen; without one, the tags
    seen."""
    _check(model_scheme, data_scheme)
    seen = set(model_tags)
    if model_scheme == data_scheme:
        return sorted(seen)
    if model_scheme == bmes6.BMES6:  # a known M may be any of B2, B3, M: all six labels
        return sorted(seen | set(bmes6.TAGS))
    sep = _separator(sorted(seen))
    types = {sp[1] for sp in map(_span, seen) if sp is not None}
    other = {t for t in seen if _span(t) is None}
    return sorted(other | {p + (sep + t if t else "") for t in types for p in _PREFIXES[model_scheme]})


def corpus_allowed(tags: Sequence[str], sent_ptr: np.ndarray, labels: Sequence[str], model_scheme: str,
                   data_scheme: str, unknown: str, exact: np.ndarray) -> np.ndarray:
    """`sentence_allowed` over a flat tag column (data scheme, ``unknown`` marking unknown tags),
    bool (n_tokens, L): the rows of a sentence with every tag known are the one-hot rows of
    ``exact`` (its label ids by `convert`), the others come from `sentence_allowed`, memoized on
    (previous, tag, next) since a known token's set depends on nothing else."""
    n, L = len(tags), len(labels)
    allowed = np.zeros((n, L), dtype=bool)
    allowed[np.arange(n), exact] = True
    ptr = np.asarray(sent_ptr, dtype=np.int64).tolist()
    hidden = np.fromiter((t == unknown for t in tags), dtype=bool, count=n)
    sent_of = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    memo: dict[tuple, np.ndarray] = {}
    for s in np.unique(sent_of[hidden]).tolist():
        a, b = ptr[s], ptr[s + 1]
        sent: list[str | None] = [None if t == unknown else t for t in tags[a:b]]
        if model_scheme == bmes6.BMES6:  # a token's set is its own tag's: no window to memoize
            allowed[a:b] = sentence_allowed(sent, labels, model_scheme, data_scheme)
            continue
        allowed[a:b] = True  # unknown tokens: every label
        for t in range(b - a):
            if sent[t] is None:
                continue
            key = (sent[t - 1] if t else "", sent[t], sent[t + 1] if t + 1 < b - a else "")
            row = memo.get(key)
            if row is None:
                window: list[str | None] = [k for k in key if k != ""]
                row = memo[key] = sentence_allowed(window, labels, model_scheme, data_scheme)[
                    0 if not t else 1]
            allowed[a + t] = row
    return allowed
