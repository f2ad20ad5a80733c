"""Columns of a gazetteer model read from the input words alone, never from tags, so they need no
jackknife folds (`structperc.features.gazetteer` writes them beside its ``gaz`` columns): the document
columns (``doc`` `doc_roles`, ``docp`` `doc_mentions`, ``docs`` `doc_runs`: what the same word does in
nearby sentences, `DOC_WINDOW` either side) and the ``case`` column (`case_column`: how a capitalised
word is written elsewhere in the training data).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Iterable

import numpy as np

from structperc.io.corpus import Corpus, compact, expand

DOC_COLUMN = "doc"
#: Document-level columns beside ``doc`` (same window): earlier/later mentions of the word
#: (`doc_mentions`) and how the token's capitalised run relates to the runs nearby (`doc_runs`).
DOCP_COLUMN = "docp"
DOCS_COLUMN = "docs"
#: The column of a two-stage tagger (`structperc.features.stacking`): the majority type a first-stage
#: tagger gave the other occurrences of the word within `DOC_WINDOW` sentences.
STAGE_COLUMN = "tmd"
#: The columns that read neighbouring sentences (`document_gap`).
DOC_COLUMNS = (DOC_COLUMN, DOCP_COLUMN, DOCS_COLUMN, STAGE_COLUMN)
#: Sentences either side whose words `doc_roles` looks at (chosen on esp.testa: 5 → 77.51 F1,
#: 20 → 77.64, 50 → 77.45, the whole file → 76.88, means of 4 seeds).
DOC_WINDOW = 20


def document_gap(columns: Iterable[str]) -> int:
    """How many empty sentences keep two documents tagged in one corpus out of each other's `doc`
    window, for a model reading ``columns``: `DOC_WINDOW` when it reads a column of `DOC_COLUMNS`
    (``doc``, ``docp``, ``docs``, ``tmd``: all look `DOC_WINDOW` sentences either side), twice that
    when it reads ``tmd`` and another of them: a two-stage model's column then summarises first-stage
    tags that themselves looked `DOC_WINDOW` sentences further. Else 0.
    The spaCy component and the HTTP service batch several documents into one call with it, so each
    gets the tags it would get alone; chunked tagging reads that many sentences around each chunk."""
    columns = set(columns)
    return DOC_WINDOW * ((STAGE_COLUMN in columns) + bool(set(DOC_COLUMNS) - {STAGE_COLUMN} & columns))


_ROLES = "FLMSl"  # bits 1, 2, 4, 8, 16: first, last, middle, single (capitalised runs), lowercase
_ROLE_NAMES = ["".join(ch for b, ch in enumerate(_ROLES) if v >> b & 1) or "0" for v in range(32)]


def doc_roles(corpus: Corpus, word: str, window: int = DOC_WINDOW) -> list[str]:
    """`doc_role_codes` as one value per token."""
    return expand(*doc_role_codes(corpus, word, window))


def doc_role_codes(corpus: Corpus, word: str, window: int = DOC_WINDOW) -> tuple[list[str], np.ndarray]:
    """Per token, as ``(distinct, codes)`` (`structperc.io.corpus.compact`: no string per token): ``-`` unless it
    starts with a capital; else the roles (letters of ``FLMSl``, sorted; ``0`` for none) that its lowercased form
    has at its *other* occurrences within ``window`` sentences either side: ``F``/``M``/``L`` first, middle or
    last word of a run of two or more capitalised words, ``S`` a capitalised word alone, ``l`` a word starting in
    lowercase. Sentence-initial occurrences (capitalised whatever they are) are not evidence.

    Vectorized: string tests run once per distinct word; the window counts are binary searches in
    one sorted table of (word, sentence) keys per role.

    Examples
    --------
    >>> c = Corpus.from_sentences([["Ayer", "habló", "Víctor", "Castaño", "."],
    ...                            ["Lo", "de", "Castaño", "fue", "grande"]])
    >>> doc_roles(c, "word")
    ['0', '-', '0', 'S', '-', '0', '-', 'L', '-', '-']
    """
    distinct, codes = corpus.factorize(word)
    n = len(codes)
    if n == 0:
        return [], np.zeros(0, np.int64)
    cap_d = np.fromiter((w[:1].isupper() for w in distinct), bool, len(distinct))
    low_d = np.fromiter((w[:1].islower() for w in distinct), bool, len(distinct))
    ids: dict[str, int] = {}
    key_d = np.fromiter((ids.setdefault(w.lower(), len(ids)) for w in distinct), np.int64,
                        len(distinct))
    cap, key = cap_d[codes], key_d[codes]
    pos, length = corpus.positions()
    prev = np.zeros(n, bool)
    prev[1:] = cap[:-1]
    prev &= pos > 0
    nxt = np.zeros(n, bool)
    nxt[:-1] = cap[1:]
    nxt &= pos < length - 1
    role = np.select([cap & prev & nxt, cap & prev, cap & nxt, cap, low_d[codes]], [4, 2, 1, 8, 16], 0)
    lengths = np.diff(corpus.sent_ptr)
    sent = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths) + window
    span = len(lengths) + 2 * window + 1          # key = word · span + sentence: one sorted axis
    where = np.flatnonzero(cap)
    probe = key[where] * span + sent[where]
    bits = np.zeros(len(where), np.int64)
    for b in range(len(_ROLES)):
        evidence = (role == 1 << b) & (pos > 0)
        table = np.sort(key[evidence] * span + sent[evidence])
        count = np.searchsorted(table, probe + window, "right") - np.searchsorted(table, probe - window)
        count -= evidence[where]                  # not the token itself
        bits |= np.where(count > 0, 1 << b, 0)
    value = np.zeros(n, np.int64)  # "-", else 1 + the role bits
    value[where] = bits + 1
    return compact(["-"] + _ROLE_NAMES, value)


def _cap_keys(corpus: Corpus, word: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per token: whether it starts with a capital, its lowercased form's id, its sentence, its
    position in the sentence."""
    distinct, codes = corpus.factorize(word)
    cap_d = np.fromiter((w[:1].isupper() for w in distinct), bool, len(distinct))
    ids: dict[str, int] = {}
    key_d = np.fromiter((ids.setdefault(w.lower(), len(ids)) for w in distinct), np.int64,
                        len(distinct))
    lengths = np.diff(corpus.sent_ptr)
    sent = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    pos, _ = corpus.positions()
    return cap_d[codes], key_d[codes], sent, pos


def doc_mentions(corpus: Corpus, word: str, window: int = DOC_WINDOW) -> list[str]:
    """Per token: ``-`` unless it starts with a capital; else whether its lowercased form is written
    capitalised (not sentence-initially) in the ``window`` sentences before (``P``) and after (``N``)
    its own: ``0``, ``P``, ``N`` or ``PN``. A first mention tends to be the full name ("Víctor
    Castaño"), a later one the short form ("Castaño") whose type the earlier one settles.

    Examples
    --------
    >>> c = Corpus.from_sentences([["Habló", "Castaño"], ["Y", "Castaño", "y", "Pi"], ["Con", "Castaño"]])
    >>> doc_mentions(c, "word")
    ['0', 'N', '0', 'PN', '-', '0', '0', 'P']
    """
    cap, key, sent, pos = _cap_keys(corpus, word)
    if len(key) == 0:
        return []
    sent = sent + window
    span = len(corpus) + 2 * window + 1
    where = np.flatnonzero(cap)
    probe = key[where] * span + sent[where]
    evidence = cap & (pos > 0)
    table = np.sort(key[evidence] * span + sent[evidence])
    before = np.searchsorted(table, probe) - np.searchsorted(table, probe - window)
    after = np.searchsorted(table, probe + window, "right") - np.searchsorted(table, probe, "right")
    names = np.asarray(["0", "P", "N", "PN"], dtype=object)
    out = np.full(len(key), "-", dtype=object)
    out[where] = names[(before > 0).astype(np.int64) + 2 * (after > 0)]
    return out.tolist()


#: Runs longer than this are cut into pieces of this length for `doc_runs` (titles in capitals).
MAX_RUN = 8


def doc_runs(corpus: Corpus, word: str, window: int = DOC_WINDOW) -> list[str]:
    """Per token: ``-`` unless it starts with a capital; else how its run (the maximal sequence of
    capitalised words it is in, lowercased) relates to the other runs of the ``window`` sentences
    either side: ``X`` the same run occurs, ``S`` it occurs inside a longer run ("Castaño" after
    "Víctor Castaño": a short form), ``L`` a shorter run occurs inside it (the long form); letters
    in that order, ``0`` for none. Sequences, where the ``doc`` column sees single words. A
    sentence-initial word is capitalised whatever it is: it is looked up with the run it starts, but
    the runs of the other tokens leave it out and it is no evidence for them.

    Examples
    --------
    >>> c = Corpus.from_sentences([["Habló", "Víctor", "Castaño"], ["Lo", "de", "Castaño"],
    ...                            ["Con", "Castaño", "."]])
    >>> doc_runs(c, "word")
    ['L', 'L', 'L', '0', '-', 'XS', 'L', 'XS', '-']
    """
    cap, key, sent, pos = _cap_keys(corpus, word)
    n = len(key)
    out = np.full(n, "-", dtype=object)
    if n == 0:
        return out.tolist()
    starts = np.flatnonzero(cap & ~(np.concatenate([[False], cap[:-1]]) & (pos > 0)))
    runs: list[tuple[int, int, int, tuple[int, ...]]] = []   # start, end, sentence, lowercased ids
    initial: list[tuple[int, int, tuple[int, ...]]] = []     # sentence-initial token, sentence, its run
    keys, sents, first = key.tolist(), sent.tolist(), (pos == 0).tolist()
    capl, sent_ptr = cap.tolist(), corpus.sent_ptr
    for s in starts.tolist():
        end = int(sent_ptr[sents[s] + 1])
        e = s + 1
        while e < end and capl[e]:
            e += 1
        if first[s]:   # capitalised anyway: looked up with its run, but not evidence for the others
            initial.append((s, sents[s], tuple(keys[s:min(e, s + MAX_RUN)])))
            s += 1
        for a in range(s, e, MAX_RUN):
            b = min(e, a + MAX_RUN)
            runs.append((a, b, sents[a], tuple(keys[a:b])))
    exact: dict[tuple[int, ...], list[int]] = {}
    inside: dict[tuple[int, ...], list[int]] = {}
    for _, _, s, t in runs:
        exact.setdefault(t, []).append(s)
        for i in range(len(t)):
            for j in range(i + 1, len(t) + 1):
                if j - i < len(t):
                    inside.setdefault(t[i:j], []).append(s)
    for table in (*exact.values(), *inside.values()):
        table.sort()

    def near(table: list[int] | None, s: int) -> int:
        return 0 if not table else bisect_right(table, s + window) - bisect_left(table, s - window)

    def relation(t: tuple[int, ...], s: int, itself: int) -> str:
        value = "X" if near(exact.get(t), s) > itself else ""
        if near(inside.get(t), s) > 0:
            value += "S"
        if any(near(exact.get(t[i:j]), s) > 0 for i in range(len(t)) for j in range(i + 1, len(t) + 1)
               if j - i < len(t)):
            value += "L"
        return value or "0"

    for a, b, s, t in runs:
        out[a:b] = relation(t, s, 1)
    for a, s, t in initial:
        out[a] = relation(t, s, 0)
    return out.tolist()


def _case_observations(corpus: Corpus, word: str) -> tuple[list[str], np.ndarray, np.ndarray,
                                                             np.ndarray]:
    """Lowercased vocabulary, and per token: its index there, whether the token is a lowercase word,
    whether it is capitalised and not sentence-initial."""
    distinct, codes = corpus.factorize(word)
    ids: dict[str, int] = {}
    low_d = np.fromiter((ids.setdefault(w.lower(), len(ids)) for w in distinct), np.int64,
                        len(distinct))
    lower_d = np.fromiter((w == w.lower() and w != w.upper() for w in distinct), bool, len(distinct))
    cap_d = np.fromiter((w[:1].isupper() for w in distinct), bool, len(distinct))
    pos, _ = corpus.positions()
    return list(ids), low_d[codes], lower_d[codes], cap_d[codes] & (pos > 0)


def case_counts(corpus: Corpus, word: str) -> dict[str, tuple[int, int]]:
    """Per lowercased word of ``corpus``: (times written in lowercase, times capitalised and not
    sentence-initial); words never seen either way are left out."""
    vocab, low, is_lower, is_cap = _case_observations(corpus, word)
    nl = np.bincount(low[is_lower], minlength=len(vocab))
    nc = np.bincount(low[is_cap], minlength=len(vocab))
    return {w: (int(a), int(b)) for w, a, b in zip(vocab, nl.tolist(), nc.tolist()) if a or b}


#: The ``case`` column's values: ``-``, then each kind and each kind sentence-initially (`case_column`).
_CASE_KINDS = ["U", "C", "L", "M", "m"]
_CASE_VALUES = ["-"] + _CASE_KINDS + [k + "^" for k in _CASE_KINDS]


def _case_values(corpus: Corpus, word: str, nl: np.ndarray, nc: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The ``case`` column from per-token counts (see `case_column`), as ``(distinct, codes)``
    (`structperc.io.corpus.compact`: no string per token)."""
    distinct, codes = corpus.factorize(word)
    cap = np.fromiter((w[:1].isupper() for w in distinct), bool, len(distinct))[codes]
    kind = np.select([(nl == 0) & (nc == 0), nl == 0, nc == 0, nc >= nl], [1, 2, 3, 4], 5)
    pos, _ = corpus.positions()
    value = np.where(pos == 0, kind + len(_CASE_KINDS), kind)
    value[~cap] = 0
    return compact(_CASE_VALUES, value)


def case_values(corpus: Corpus, word: str, counts: dict[str, tuple[int, int]]) -> tuple[list[str], np.ndarray]:
    """`case_column` as ``(distinct, codes)``, what a gazetteer writes."""
    distinct, codes = corpus.factorize(word)
    seen = [counts.get(w.lower(), (0, 0)) for w in distinct]
    nl = np.fromiter((a for a, _ in seen), np.int64, len(seen))
    nc = np.fromiter((b for _, b in seen), np.int64, len(seen))
    return _case_values(corpus, word, nl[codes], nc[codes])


def case_column(corpus: Corpus, word: str, counts: dict[str, tuple[int, int]]) -> list[str]:
    """Per token: ``-`` unless it starts with a capital; else how its lowercased form is written in
    the training data (``counts``, see `case_counts`): ``U`` unseen, ``C`` only capitalised, ``L``
    only in lowercase (a common word capitalised here), ``M`` mostly capitalised, ``m`` mostly
    lowercase; ``^`` marks a sentence-initial token, whose capital says nothing.

    Examples
    --------
    >>> c = Corpus.from_sentences([["El", "presidente", "de", "El", "Salvador"]])
    >>> case_column(c, "word", {"el": (9, 1), "presidente": (5, 0), "salvador": (0, 3)})
    ['m^', '-', '-', 'm', 'C']
    """
    return expand(*case_values(corpus, word, counts))
