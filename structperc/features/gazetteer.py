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

from collections import Counter
from typing import Any, Callable, Iterable, TypeVar

import numpy as np

from structperc.features.dictionary import word_columns
from structperc.features.word_columns import (
    DOC_COLUMN,
    DOC_COLUMNS,
    DOC_WINDOW,
    DOCP_COLUMN,
    DOCS_COLUMN,
    MAX_RUN,
    STAGE_COLUMN,
    _case_observations,
    case_column,
    case_counts,
    case_values,
    doc_mentions,
    doc_role_codes,
    doc_roles,
    doc_runs,
    document_gap,
)
from structperc.io.corpus import Corpus, coded, compact, expand
from structperc.labels.schemes import convert

#: The names other modules import from here (the columns read from the words alone live in
#: `structperc.features.word_columns`).
__all__ = ["BASE_COLUMNS", "CASE_COLUMN", "DOC_COLUMN", "DOC_COLUMNS", "DOC_WINDOW", "DOCP_COLUMN",
           "DOCS_COLUMN", "EXTRA_COLUMNS", "FOLD_BLOCK", "GAZ_COLUMN", "GAZA_COLUMN", "GAZN_COLUMN",
           "GAZT_COLUMN", "GAZW_COLUMN", "MAX_ENTITY_TOKENS", "MAX_RUN", "STAGE_COLUMN", "Gazetteer",
           "GazetteerLearner", "case_column", "case_counts", "doc_mentions", "doc_roles", "doc_runs",
           "document_gap", "entities", "jackknifed_gazetteer"]

GAZ_COLUMN = "gaz"
CASE_COLUMN = "case"
#: Word-level (partial) gazetteer: the roles (``S``ingle, ``B``egin, ``I``nside, ``E``nd) and types a word
#: has inside the known entity strings, e.g. ``B-PER|S-LOC`` (`Gazetteer.word_roles`); ``gazt`` the
#: types alone; ``gazn`` the length of the ``gaz`` match covering the token.
GAZW_COLUMN = "gazw"
GAZT_COLUMN = "gazt"
GAZN_COLUMN = "gazn"
#: Like ``gaz`` with every type the matched string has had (``B-LOC|ORG``), not the most frequent one.
GAZA_COLUMN = "gaza"
#: Consecutive training sentences kept in one jackknife fold (`GazetteerLearner.block`; read by
#: `structperc.features.dictionary.jackknifed` once it honours a learner's ``block``).
FOLD_BLOCK = 200
#: Every gazetteer writes these; the extra ones only when asked (``extra``): a model that reads none of
#: them neither computes them nor stores anything for them, and models saved before them tag the same.
BASE_COLUMNS = (GAZ_COLUMN, DOC_COLUMN, CASE_COLUMN)
EXTRA_COLUMNS = (GAZW_COLUMN, GAZT_COLUMN, GAZN_COLUMN, GAZA_COLUMN, DOCP_COLUMN, DOCS_COLUMN)
MAX_ENTITY_TOKENS = 6
T = TypeVar("T")


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

    def values(self, corpus: Corpus) -> dict[str, Any]:
        """The columns that depend on the entries: ``gaz``, ``case`` and the extra ``gazw``, ``gazt``,
        ``gazn``, ``gaza`` (the ``doc`` columns do not, see `annotate`), each as ``(distinct, codes)``
        (`structperc.io.corpus.expand` gives one value per token)."""
        distinct, codes = corpus.factorize(self.word)
        low = [w.lower() for w in distinct]
        root = self._trie()
        opens = np.fromiter((w in root for w in low), dtype=bool, count=len(low))  # per distinct word
        codes = np.asarray(codes, dtype=np.int64)
        # only the tokens some entity string starts with are walked (two fifths of esp.testb's); the rest stay "O"
        candidates = np.flatnonzero(opens[codes]) if len(codes) else np.zeros(0, dtype=np.int64)
        ends = corpus.sent_ptr[1:][np.searchsorted(corpus.sent_ptr[1:], candidates, side="right")]
        compiled = self._compiled_columns(low, codes, candidates, np.asarray(ends, dtype=np.int64))
        if compiled is not None:
            gaz, gazn, gaza = compiled
        else:
            tokens = np.asarray(low, dtype=object)[codes].tolist() if len(codes) else []
            gaz, gazn, gaza = (coded(c) for c in self._columns(tokens, candidates.tolist(), ends.tolist()))
        out = {GAZ_COLUMN: gaz, CASE_COLUMN: case_values(corpus, self.word, self.case)}
        if GAZN_COLUMN in self.extra:
            out[GAZN_COLUMN] = gazn
        if GAZA_COLUMN in self.extra:
            out[GAZA_COLUMN] = gaza
        if GAZW_COLUMN in self.extra or GAZT_COLUMN in self.extra:
            roles, kinds = self.word_roles()
            out.update(word_columns(corpus, self.word, {
                name: lambda w, table=table: table.get(w.lower(), "O")
                for name, table in ((GAZW_COLUMN, roles), (GAZT_COLUMN, kinds)) if name in self.extra}))
        return out

    def word_roles(self) -> tuple[dict[str, str], dict[str, str]]:
        """Per lowercased word of a known entity string: its roles there (``S-LOC`` alone, ``B-PER``
        first, ``I-ORG`` inside, ``E-PER`` last; sorted, ``|``-joined) and its types (``LOC|PER``). A
        word seen once as "Víctor" in "Víctor Castaño" is evidence even where the whole string is
        not (the ``gaz`` column needs the exact string). Derived from the entity strings, so models
        saved before these columns existed get them too; once per gazetteer (again if `types` is replaced), not
        at every call (13 ms of a one-sentence call of the shipped ``es-ner``)."""
        return self._of_types("_roles_of", self._word_roles)

    def _word_roles(self) -> tuple[dict[str, str], dict[str, str]]:
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
            .with_column(DOC_COLUMN, doc_role_codes(corpus, self.word)) \
            .with_column(CASE_COLUMN, values[CASE_COLUMN])
        for name in self.extra:
            if name == DOCP_COLUMN:
                out = out.with_column(name, doc_mentions(corpus, self.word))
            elif name == DOCS_COLUMN:
                out = out.with_column(name, doc_runs(corpus, self.word))
            else:
                out = out.with_column(name, values[name])
        return out

    def _of_types(self, name: str, build: Callable[[], T]) -> T:
        """What ``build`` derives from `types`, kept under ``name`` and built again if `types` is replaced."""
        cached = self.__dict__.get(name)
        if cached is None or cached[0] is not self.types:
            cached = self.__dict__[name] = (self.types, build())
        return cached[1]

    def _trie(self) -> dict[str, list]:
        """The entity strings as a trie of lowercased words: a node is ``[type or None, {next word: node}]``
        (built on first use from `types`, again if `types` is replaced)."""
        return self._of_types("_trie_of", self._build_trie)

    def _build_trie(self) -> dict[str, list]:
        root: dict[str, list] = {}
        for toks, kind in self.types.items():
            children, node = root, None
            for w in toks:
                node = children.get(w)
                if node is None:
                    node = children[w] = [None, {}]
                children = node[1]
            if node is not None:
                node[0] = kind
        return root

    def _arrays(self) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """The trie as the compiled walk reads it (`structperc.features.gazetteer_kernels`): the entity words' ids,
        the sorted edge keys ``parent · n_words + word`` and their child nodes, each node's type id (-1: no string
        ends there; node 0 is the root) and the type names (built on first use, again if `types` is replaced)."""
        return self._of_types("_arrays_of", self._build_arrays)

    def _build_arrays(self) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray, list[str]]:
        vocab: dict[str, int] = {}
        kind_ids: dict[str, int] = {}
        edges: dict[tuple[int, int], int] = {}
        node_kind = [-1]
        for toks, kind in self.types.items():
            node = 0
            for w in toks:
                step = (node, vocab.setdefault(w, len(vocab)))
                child = edges.get(step)
                if child is None:
                    child = edges[step] = len(node_kind)
                    node_kind.append(-1)
                node = child
            if node:
                node_kind[node] = kind_ids.setdefault(kind, len(kind_ids))
        n_words = max(len(vocab), 1)
        keys = np.fromiter((p * n_words + w for p, w in edges), dtype=np.int64, count=len(edges))
        order = np.argsort(keys, kind="stable")
        children = np.fromiter(edges.values(), dtype=np.int32, count=len(edges))[order]
        return vocab, keys[order], children, np.asarray(node_kind, dtype=np.int32), list(kind_ids)

    def _compiled_columns(self, low: list[str], codes: np.ndarray, starts: np.ndarray, ends: np.ndarray) \
            -> tuple[tuple[list[str], np.ndarray], ...] | None:
        """`_columns` of the tokens (``low``: the lowercased distinct words, ``codes``: each token's) by the compiled
        walk (`structperc.features.gazetteer_kernels`): the matches' lengths and types, made into the columns by
        numpy; None without the ahead-of-time build (`_columns` walks in Python)."""
        from structperc.compiled import loader

        kernel = loader.aot("gazetteer_matches")
        if kernel is None:
            return None
        vocab, keys, children, node_kind, kinds = self._arrays()
        n = len(codes)
        of_word = np.fromiter((vocab.get(w, -1) for w in low), dtype=np.int32, count=len(low))
        words = of_word[codes] if n else np.zeros(0, dtype=np.int32)
        length = np.empty(len(starts), dtype=np.int32)
        kind = np.empty(len(starts), dtype=np.int32)
        kernel(np.ascontiguousarray(words), np.ascontiguousarray(starts, dtype=np.int64),
               np.ascontiguousarray(ends, dtype=np.int64), keys, children, node_kind, np.int64(max(len(vocab), 1)),
               length, kind)
        matched = length > 0
        first, size, of_kind = starts[matched], length[matched].astype(np.int64), kind[matched].astype(np.int64)
        covered = np.repeat(first, size) + (np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size))
        # a token's value: 0 "O", else 1 + 2·type (+1 inside the match, not at its first token)
        value = np.zeros(n, dtype=np.int64)
        value[covered] = 2 + 2 * np.repeat(of_kind, size)
        value[first] -= 1
        gaz = compact(["O"] + [f"{bi}-{k}" for k in kinds for bi in ("B", "I")], value)
        span = np.zeros(n, dtype=np.int64)
        span[covered] = np.repeat(size, size)
        gazn = compact([str(i) for i in range(int(span.max(initial=0)) + 1)], span)
        gaza = gaz
        if GAZA_COLUMN in self.extra and self.ambiguous:  # a match's every type: a few matches, in Python
            every = expand(*gaz)
            tokens = np.asarray(low, dtype=object)[codes]
            for i, m, k in zip(first.tolist(), size.tolist(), of_kind.tolist()):
                kinds_of = self.ambiguous.get(tuple(tokens[i:i + m].tolist()), kinds[k])
                every[i:i + m] = ["B-" + kinds_of] + ["I-" + kinds_of] * (m - 1)
            gaza = coded(every)
        return gaz, gazn, gaza

    def column(self, words: list[str]) -> list[str]:
        """The ``gaz`` values of one sentence (longest matches, left to right)."""
        return self.matches(words)[0]

    def matches(self, words: list[str]) -> tuple[list[str], list[str], list[str]]:
        """The ``gaz`` values of one sentence, the ``gazn`` ones (the length of the match covering each
        token, ``0`` outside any) and the ``gaza`` ones (``gaz`` with all the string's types)."""
        low = [w.lower() for w in words]
        return self._columns(low, range(len(low)), [len(low)] * len(low))

    def _columns(self, low: list[str], starts: Iterable[int], ends: Iterable[int]) \
            -> tuple[list[str], list[str], list[str]]:
        """`matches` over the lowercased tokens ``low`` (sentences one after the other), trying matches only
        at ``starts`` (ascending; every token that can start one among them), each within its sentence, which
        ends before ``ends`` (one per start): longest matches, left to right."""
        size = len(low)
        out = ["O"] * size
        length = ["0"] * size
        every = ["O"] * size
        root = self._trie()
        free = 0  # the first token after the last match
        for i, end in zip(starts, ends):
            if i < free:
                continue
            # walk the entity strings from word i while some string goes on: the longest one ending on the way is
            # the match (a few steps, where a start tried every length down from the longest entity's)
            node, n, kind, j = root.get(low[i]), 0, "", i
            while node is not None:
                j += 1
                if node[0] is not None:
                    n, kind = j - i, node[0]
                node = node[1].get(low[j]) if j < end else None
            if not n:
                continue
            out[i] = "B-" + kind
            for k in range(i + 1, i + n):
                out[k] = "I-" + kind
            length[i:i + n] = [str(n)] * n
            kinds = self.ambiguous.get(tuple(low[i:i + n]), kind)
            every[i:i + n] = ["B-" + kinds] + ["I-" + kinds] * (n - 1)
            free = i + n
        return out, length, every


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
