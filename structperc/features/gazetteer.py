"""Entity gazetteers learnt from the training data itself, jackknifed.

Each token gets a ``gaz`` value: ``B-TYPE``/``I-TYPE`` when a longest match of known entity strings
(lowercased) covers it, ``O`` otherwise. Training sentences are matched against the entities of the
*other* folds: matched against their own entities the feature would always agree with the gold tags
and the model would trust it blindly (the same reason as the segmentation lexicon).

Alongside it comes a ``doc`` column (`doc_roles`): for a capitalised token, the roles the same word
plays at its other occurrences in nearby sentences (first, middle or last word of a run of capitalised
words, a capitalised word alone, or a lowercase word). It reads the input words only, never tags, so
it needs no folds: "Castaño" after "de" looks like a place, but three sentences earlier the text said
"Víctor Castaño". The CoNLL-2002 files have no usable document boundaries (Spanish has none, the reader
drops Dutch ``-DOCSTART-`` lines), so "nearby" is a window of `DOC_WINDOW` sentences either side; a
sentence tagged on its own only sees itself.

Extra columns, written only when the templates read them (`EXTRA_COLUMNS`; the lever study of issue #20,
``scripts/study_ner.py``): ``gazt``/``gazw`` the types/roles a word has inside the known entity strings (a
partial match: "Víctor" of "Víctor Castaño"), ``gazn`` the length of the ``gaz`` match, ``gaza`` every type
of the matched string; ``docp`` earlier/later mentions and ``docs`` capitalised-run relations in the
document window. The jackknife folds are blocks of `FOLD_BLOCK` consecutive sentences (articles stay in
one fold, as test articles are new).
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from typing import Any, Iterable

import numpy as np

from structperc.io.corpus import Corpus
from structperc.labels.schemes import convert

GAZ_COLUMN = "gaz"
DOC_COLUMN = "doc"
CASE_COLUMN = "case"
#: Word-level (partial) gazetteer: the roles (``S``ingle, ``B``egin, ``I``nside, ``E``nd) and types a word
#: has inside the known entity strings, e.g. ``B-PER|S-LOC`` (`Gazetteer.word_roles`); ``gazt`` the
#: types alone; ``gazn`` the length of the ``gaz`` match covering the token.
GAZW_COLUMN = "gazw"
GAZT_COLUMN = "gazt"
GAZN_COLUMN = "gazn"
#: Like ``gaz`` with every type the matched string has had (``B-LOC|ORG``), not the most frequent one.
GAZA_COLUMN = "gaza"
#: Document-level columns beside ``doc`` (same window): earlier/later mentions of the word
#: (`doc_mentions`) and how the token's capitalised run relates to the runs nearby (`doc_runs`).
DOCP_COLUMN = "docp"
DOCS_COLUMN = "docs"
#: The column of a two-stage tagger (`structperc.features.stacking`): the majority type a first-stage
#: tagger gave the other occurrences of the word within `DOC_WINDOW` sentences.
STAGE_COLUMN = "tmd"
#: The columns that read neighbouring sentences (`document_gap`).
DOC_COLUMNS = (DOC_COLUMN, DOCP_COLUMN, DOCS_COLUMN, STAGE_COLUMN)
#: Consecutive training sentences kept in one jackknife fold (`GazetteerLearner.block`; read by
#: `structperc.features.dictionary.jackknifed` once it honours a learner's ``block``).
FOLD_BLOCK = 200
#: Every gazetteer writes these; the extra ones only when asked (``extra``): a model that reads none of
#: them neither computes them nor stores anything for them, and models saved before them tag the same.
BASE_COLUMNS = (GAZ_COLUMN, DOC_COLUMN, CASE_COLUMN)
EXTRA_COLUMNS = (GAZW_COLUMN, GAZT_COLUMN, GAZN_COLUMN, GAZA_COLUMN, DOCP_COLUMN, DOCS_COLUMN)
MAX_ENTITY_TOKENS = 6
#: Sentences either side whose words `doc_roles` looks at (chosen on esp.testa: 5 → 77.51 F1,
#: 20 → 77.64, 50 → 77.45, the whole file → 76.88, means of 4 seeds).
DOC_WINDOW = 20


def entities(words: list[str], tags: list[str], scheme: str) -> list[tuple[tuple[str, ...], str]]:
    """(lowercased token tuple, type) of every entity span of one sentence."""
    iob2 = convert(tags, scheme, "iob2") if scheme != "iob2" else tags
    out, start, kind = [], None, ""
    for i, tag in enumerate(list(iob2) + ["O"]):
        if start is not None and not (tag.startswith("I-") and tag[2:] == kind):
            out.append((tuple(w.lower() for w in words[start:i]), kind))
            start = None
        if tag.startswith("B-") or (tag.startswith("I-") and start is None):
            start, kind = i, tag[2:]
    return out


class Gazetteer:
    """Entity strings with their most frequent type; longest-match lookup. ``case`` holds, per
    lowercased training word, how often it was written in lowercase and capitalised (not sentence-
    initially): the counts behind the ``case`` column (`case_column`). ``word`` names the token
    column it reads; ``extra`` the columns of `EXTRA_COLUMNS` it writes besides `BASE_COLUMNS` (its
    instance's ``columns``). A `structperc.features.dictionary.ColumnDictionary`."""

    columns: tuple[str, ...] = BASE_COLUMNS + EXTRA_COLUMNS   # the class: every column one can write

    def __init__(self, items: list[tuple[tuple[str, ...], str]],
                 case: dict[str, tuple[int, int]] | None = None, word: str = "word", extra: Iterable[str] = ()):
        self.word = word
        wanted = set(extra)
        self.extra = tuple(c for c in EXTRA_COLUMNS if c in wanted)
        self.columns = BASE_COLUMNS + self.extra
        counts: dict[tuple[str, ...], Counter] = {}
        for toks, kind in items:
            if 0 < len(toks) <= MAX_ENTITY_TOKENS:
                counts.setdefault(toks, Counter())[kind] += 1
        self.types = {toks: c.most_common(1)[0][0] for toks, c in counts.items()}
        self.ambiguous = {toks: "|".join(sorted(c)) for toks, c in counts.items() if len(c) > 1}
        self.max_len = max((len(t) for t in self.types), default=0)
        self.case = dict(case or {})

    def to_json(self) -> dict:
        data: dict[str, Any] = {"entities": [[list(t), k] for t, k in sorted(self.types.items())],
                                "case": [[w, nl, nc] for w, (nl, nc) in sorted(self.case.items())]}
        if self.extra:
            data["extra_columns"] = list(self.extra)
        if GAZA_COLUMN in self.extra:
            data["ambiguous"] = [[list(t), k] for t, k in sorted(self.ambiguous.items())]
        return data

    @classmethod
    def from_json(cls, data: list | dict, word: str = "word") -> "Gazetteer":
        """Read `to_json` output (or the entity list alone that models saved before ``case``)."""
        g = cls([], word=word, extra=data.get("extra_columns", []) if isinstance(data, dict) else ())
        items = data["entities"] if isinstance(data, dict) else data
        g.types = {tuple(t): k for t, k in items}
        g.max_len = max((len(t) for t in g.types), default=0)
        if isinstance(data, dict):
            g.case = {w: (int(nl), int(nc)) for w, nl, nc in data.get("case", [])}
            g.ambiguous = {tuple(t): k for t, k in data.get("ambiguous", [])}
        return g

    def values(self, corpus: Corpus) -> dict[str, list[str]]:
        """The columns that depend on the entries: ``gaz``, ``case`` and the extra ``gazw``, ``gazt``,
        ``gazn``, ``gaza`` (the ``doc`` columns do not, see `annotate`)."""
        gaz: list[str] = []
        gazn: list[str] = []
        gaza: list[str] = []
        if GAZN_COLUMN in self.extra or GAZA_COLUMN in self.extra:
            for sent in corpus.sentences(self.word):
                tags, lengths, every = self.matches(sent)
                gaz.extend(tags)
                gazn.extend(lengths)
                gaza.extend(every)
        else:
            for sent in corpus.sentences(self.word):
                gaz.extend(self.column(sent))
        out = {GAZ_COLUMN: gaz, CASE_COLUMN: case_column(corpus, self.word, self.case)}
        if GAZN_COLUMN in self.extra:
            out[GAZN_COLUMN] = gazn
        if GAZA_COLUMN in self.extra:
            out[GAZA_COLUMN] = gaza
        if GAZW_COLUMN in self.extra or GAZT_COLUMN in self.extra:
            roles, kinds = self.word_roles()
            distinct, codes = corpus.factorize(self.word)
            low = [w.lower() for w in distinct]
            for name, table in ((GAZW_COLUMN, roles), (GAZT_COLUMN, kinds)):
                if name in self.extra:
                    out[name] = np.asarray([table.get(w, "O") for w in low], dtype=object)[codes].tolist()
        return out

    def word_roles(self) -> tuple[dict[str, str], dict[str, str]]:
        """Per lowercased word of a known entity string: its roles there (``S-LOC`` alone, ``B-PER``
        first, ``I-ORG`` inside, ``E-PER`` last; sorted, ``|``-joined) and its types (``LOC|PER``). A
        word seen once as "Víctor" in "Víctor Castaño" is evidence even where the whole string is
        not (the ``gaz`` column needs the exact string). Derived from the entity strings, so models
        saved before these columns existed get them too."""
        roles: dict[str, set[str]] = {}
        for toks, kind in self.types.items():
            n = len(toks)
            for i, w in enumerate(toks):
                role = "S" if n == 1 else "B" if i == 0 else "E" if i == n - 1 else "I"
                roles.setdefault(w, set()).add(f"{role}-{kind}")
        return ({w: "|".join(sorted(r)) for w, r in roles.items()},
                {w: "|".join(sorted({r[2:] for r in rs})) for w, rs in roles.items()})

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        """``corpus`` with the ``gaz``, ``doc`` and ``case`` columns and the extra ones (``values``:
        jackknifed ``gaz``, ``case`` …; the ``doc`` columns read only words, so they always come from
        the whole corpus)."""
        values = values if values is not None else self.values(corpus)
        out = corpus.with_column(GAZ_COLUMN, values[GAZ_COLUMN]) \
            .with_column(DOC_COLUMN, doc_roles(corpus, self.word)) \
            .with_column(CASE_COLUMN, values[CASE_COLUMN])
        for name in self.extra:
            if name == DOCP_COLUMN:
                out = out.with_column(name, doc_mentions(corpus, self.word))
            elif name == DOCS_COLUMN:
                out = out.with_column(name, doc_runs(corpus, self.word))
            else:
                out = out.with_column(name, values[name])
        return out

    def column(self, words: list[str]) -> list[str]:
        """The ``gaz`` values of one sentence (longest matches, left to right)."""
        return self.matches(words)[0]

    def matches(self, words: list[str]) -> tuple[list[str], list[str], list[str]]:
        """The ``gaz`` values of one sentence, the ``gazn`` ones (the length of the match covering each
        token, ``0`` outside any) and the ``gaza`` ones (``gaz`` with all the string's types)."""
        low = [w.lower() for w in words]
        out = ["O"] * len(words)
        length = ["0"] * len(words)
        every = ["O"] * len(words)
        i = 0
        while i < len(words):
            for n in range(min(self.max_len, len(words) - i), 0, -1):
                toks = tuple(low[i:i + n])
                kind = self.types.get(toks)
                if kind is not None:
                    out[i] = "B-" + kind
                    for j in range(i + 1, i + n):
                        out[j] = "I-" + kind
                    length[i:i + n] = [str(n)] * n
                    kinds = self.ambiguous.get(toks, kind)
                    every[i:i + n] = ["B-" + kinds] + ["I-" + kinds] * (n - 1)
                    i += n
                    break
            else:
                i += 1
        return out, length, every



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
    """Per token: ``-`` unless it starts with a capital; else the roles (letters of ``FLMSl``, sorted;
    ``0`` for none) that its lowercased form has at its *other* occurrences within ``window``
    sentences either side: ``F``/``M``/``L`` first, middle or last word of a run of two or more
    capitalised words, ``S`` a capitalised word alone, ``l`` a word starting in lowercase. Sentence-
    initial occurrences (capitalised whatever they are) are not evidence.

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
        return []
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
    out = np.full(n, "-", dtype=object)
    out[where] = np.asarray(_ROLE_NAMES, dtype=object)[bits]
    return out.tolist()


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


def _case_values(corpus: Corpus, word: str, nl: np.ndarray, nc: np.ndarray) -> list[str]:
    """The ``case`` column from per-token counts (see `case_column`)."""
    distinct, codes = corpus.factorize(word)
    cap = np.fromiter((w[:1].isupper() for w in distinct), bool, len(distinct))[codes]
    kind = np.select([(nl == 0) & (nc == 0), nl == 0, nc == 0, nc >= nl], ["U", "C", "L", "M"], "m")
    pos, _ = corpus.positions()
    out = np.where(pos == 0, np.char.add(kind.astype(str), "^"), kind).astype(object)
    out[~cap] = "-"
    return out.tolist()


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
    distinct, codes = corpus.factorize(word)
    seen = [counts.get(w.lower(), (0, 0)) for w in distinct]
    nl = np.fromiter((a for a, _ in seen), np.int64, len(seen))
    nc = np.fromiter((b for _, b in seen), np.int64, len(seen))
    return _case_values(corpus, word, nl[codes], nc[codes])


class GazetteerLearner:
    """Learns gazetteers from sentences of one training corpus (a
    `structperc.features.dictionary.DictionaryLearner`): their entities and their case counts, plus
    those of ``base``, the gazetteer of an earlier training when training continues. ``columns``: the
    columns the templates read, to write only the extra ones among them (None: every extra column;
    continued training keeps ``base``'s). ``block``: consecutive sentences per jackknife fold unit
    (`structperc.features.dictionary.fold_assignment`)."""

    columns = Gazetteer.columns
    block = FOLD_BLOCK

    def __init__(self, corpus: Corpus, word: str, tag: str, scheme: str, base: Gazetteer | None = None,
                 columns: Iterable[str] | None = None):
        self.word = word
        self.extra = set(EXTRA_COLUMNS if columns is None else columns) & set(EXTRA_COLUMNS)
        self.extra |= set(base.extra) if base is not None else set()
        self.per_sentence = [entities(w, t, scheme)
                             for w, t in zip(corpus.sentences(word), corpus.sentences(tag))]
        self.old = list(base.types.items()) if base is not None else []
        self.old_case = dict(base.case) if base is not None else {}
        self.vocab, self.low, self.is_lower, self.is_cap = _case_observations(corpus, word)
        self.sentence_of = np.repeat(np.arange(len(corpus), dtype=np.int64), np.diff(corpus.sent_ptr))

    def learn(self, sentences: np.ndarray) -> Gazetteer:
        chosen = np.zeros(len(self.per_sentence), dtype=bool)
        chosen[sentences] = True
        items = self.old + [e for i in np.flatnonzero(chosen).tolist() for e in self.per_sentence[i]]
        tok = chosen[self.sentence_of]
        nl = np.bincount(self.low[self.is_lower & tok], minlength=len(self.vocab))
        nc = np.bincount(self.low[self.is_cap & tok], minlength=len(self.vocab))
        counts = dict(self.old_case)
        for w, a, b in zip(self.vocab, nl.tolist(), nc.tolist()):
            if a or b:
                prev = counts.get(w, (0, 0))
                counts[w] = (prev[0] + a, prev[1] + b)
        return Gazetteer(items, counts, word=self.word, extra=self.extra)


def jackknifed_gazetteer(corpus: Corpus, word: str, tag: str, scheme: str, folds: int, seed: int,
                         base: Gazetteer | None = None,
                         columns: Iterable[str] | None = None) -> tuple[Corpus, Gazetteer]:
    """Training corpus with fold-wise ``gaz`` and ``case`` values, and the gazetteer of all of it (plus
    ``base``): `structperc.features.dictionary.jackknifed` with a `GazetteerLearner`."""
    from structperc.features.dictionary import jackknifed

    out, full = jackknifed(corpus, GazetteerLearner(corpus, word, tag, scheme, base, columns), folds, seed)
    return out, full  # type: ignore[return-value]
