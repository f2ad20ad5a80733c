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
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

import numpy as np

from structperc.io.corpus import Corpus
from structperc.labels.schemes import convert

GAZ_COLUMN = "gaz"
DOC_COLUMN = "doc"
CASE_COLUMN = "case"
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
    column it reads. A `structperc.features.dictionary.ColumnDictionary`."""

    columns = (GAZ_COLUMN, DOC_COLUMN, CASE_COLUMN)

    def __init__(self, items: list[tuple[tuple[str, ...], str]],
                 case: dict[str, tuple[int, int]] | None = None, word: str = "word"):
        self.word = word
        counts: dict[tuple[str, ...], Counter] = {}
        for toks, kind in items:
            if 0 < len(toks) <= MAX_ENTITY_TOKENS:
                counts.setdefault(toks, Counter())[kind] += 1
        self.types = {toks: c.most_common(1)[0][0] for toks, c in counts.items()}
        self.max_len = max((len(t) for t in self.types), default=0)
        self.case = dict(case or {})

    def to_json(self) -> dict:
        return {"entities": [[list(t), k] for t, k in sorted(self.types.items())],
                "case": [[w, nl, nc] for w, (nl, nc) in sorted(self.case.items())]}

    @classmethod
    def from_json(cls, data: list | dict, word: str = "word") -> "Gazetteer":
        """Read `to_json` output (or the entity list alone that models saved before ``case``)."""
        g = cls([], word=word)
        items = data["entities"] if isinstance(data, dict) else data
        g.types = {tuple(t): k for t, k in items}
        g.max_len = max((len(t) for t in g.types), default=0)
        if isinstance(data, dict):
            g.case = {w: (int(nl), int(nc)) for w, nl, nc in data.get("case", [])}
        return g

    def values(self, corpus: Corpus) -> dict[str, list[str]]:
        """The ``gaz`` and ``case`` columns: what depends on the entries (the ``doc`` column does
        not, see `annotate`)."""
        gaz: list[str] = []
        for sent in corpus.sentences(self.word):
            gaz.extend(self.column(sent))
        return {GAZ_COLUMN: gaz, CASE_COLUMN: case_column(corpus, self.word, self.case)}

    def annotate(self, corpus: Corpus, values: dict[str, list[str]] | None = None) -> Corpus:
        """``corpus`` with the ``gaz``, ``doc`` and ``case`` columns (``values``: jackknifed ``gaz``
        and ``case``; ``doc`` reads only words, so it always comes from the whole corpus)."""
        values = values if values is not None else self.values(corpus)
        return corpus.with_column(GAZ_COLUMN, values[GAZ_COLUMN]) \
            .with_column(DOC_COLUMN, doc_roles(corpus, self.word)) \
            .with_column(CASE_COLUMN, values[CASE_COLUMN])

    def column(self, words: list[str]) -> list[str]:
        low = [w.lower() for w in words]
        out = ["O"] * len(words)
        i = 0
        while i < len(words):
            for n in range(min(self.max_len, len(words) - i), 0, -1):
                kind = self.types.get(tuple(low[i:i + n]))
                if kind is not None:
                    out[i] = "B-" + kind
                    for j in range(i + 1, i + n):
                        out[j] = "I-" + kind
                    i += n
                    break
            else:
                i += 1
        return out



def document_gap(columns: Iterable[str]) -> int:
    """How many empty sentences keep two documents tagged in one corpus out of each other's `doc`
    window, for a model reading ``columns``: `DOC_WINDOW` when it reads the ``doc`` column, else 0.
    The spaCy component and the HTTP service batch several documents into one call with it, so each
    gets the tags it would get alone."""
    return DOC_WINDOW if DOC_COLUMN in columns else 0


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
    those of ``base``, the gazetteer of an earlier training when training continues."""

    columns = Gazetteer.columns

    def __init__(self, corpus: Corpus, word: str, tag: str, scheme: str, base: Gazetteer | None = None):
        self.word = word
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
        return Gazetteer(items, counts, word=self.word)


def jackknifed_gazetteer(corpus: Corpus, word: str, tag: str, scheme: str, folds: int, seed: int,
                         base: Gazetteer | None = None) -> tuple[Corpus, Gazetteer]:
    """Training corpus with fold-wise ``gaz`` and ``case`` values, and the gazetteer of all of it (plus
    ``base``): `structperc.features.dictionary.jackknifed` with a `GazetteerLearner`."""
    from structperc.features.dictionary import jackknifed

    out, full = jackknifed(corpus, GazetteerLearner(corpus, word, tag, scheme, base), folds, seed)
    return out, full  # type: ignore[return-value]
