"""The parts of speech a lexicon allows a word: a tag dictionary that covers words training never saw.

A lemmatizer's lookup tables list each lemma under the parts of speech it has (``{lang}_lemma_index``:
for English, WordNet 3.0's adjectives, adverbs, nouns and verbs; Miller 1995), the inflection rules
that map a form to its lemma per part of speech (``{lang}_lemma_rules``: "-ies" → "-y" for verbs …) and
the irregular forms (``{lang}_lemma_exc``: "mice" → "mouse"). Read backwards, they say which parts of
speech a form can have, as spaCy's rule lemmatizer does: a form is a noun if it is a noun lemma, an
irregular noun form, or becomes a noun lemma by one of the noun rules. The ``lpos`` column holds those
classes joined (``noun|verb`` for "runs"), ``-`` for a word the lexicon does not know: an ambiguity
class (Cutting et al. 1992) for every word of the lexicon, not only the training words.

`LemmaClasses` is a `structperc.features.dictionary.ColumnDictionary` kept inside the model: the
lemmas and irregular forms as arrays (`structperc.features.resources.storage.pack_classes`), the rules
as JSON, with the resource's provenance. Tagging a file looks its words, and the lemmas the rules lead
them to, up in the stored tables (`structperc.features.resources.storage.StoredClasses.lookup`) instead of
building the tables' dictionaries at load.
"""
from __future__ import annotations

import functools
from typing import Any, Mapping

import numpy as np

from structperc.features.dictionary import with_columns
from structperc.features.resources.storage import StoredClasses, WordQuery, extended
from structperc.io.corpus import Corpus, coded

LEMMA_COLUMN = "lpos"
NONE = "-"
#: Words whose classes `LemmaClasses.values` remembers (≈ 100 bytes each): an English tagger's steady
#: vocabulary fits, an endless stream of new words stops adding at this many.
MEMO_WORDS = 1 << 18


def _class_bits(table: StoredClasses, bit: dict[str, int]) -> np.ndarray:
    """The bits of each class string of ``table`` (``"noun|verb"``), then a 0 for words it does not hold (index -1)."""
    return np.array([sum(bit[n] for n in set(joined.split("|"))) if joined else 0 for joined in table.class_names]
                    + [0], dtype=np.int64)


class LemmaClasses:
    """Word → the parts of speech the lexicon allows it (column ``lpos`` of column ``word``)."""

    columns = (LEMMA_COLUMN,)

    def __init__(self, lemmas: dict[str, str] | StoredClasses, forms: dict[str, str] | StoredClasses,
                 rules: dict[str, list[list[str]]], *, word: str = "word", resource: dict | None = None):
        # lemma → its classes ("noun|verb"); irregular form → its classes: kept as stored
        self._lemmas, self._forms = (t if isinstance(t, StoredClasses) else StoredClasses.of(dict(t))
                                     for t in (lemmas, forms))
        #: class → [[suffix, replacement]]
        self.rules = {k: [[str(a), str(b)] for a, b in v] for k, v in rules.items()}
        self.word = word
        self.resource = dict(resource) if resource else None
        #: lowercased word → its classes, for the words `values` has met
        self._memo: dict[str, str] = {}

    @property
    def lemmas(self) -> dict[str, str]:
        """Lemma → its classes ("noun|verb"), the whole table."""
        return self._lemmas.table()

    @property
    def forms(self) -> dict[str, str]:
        """Irregular form → its classes, the whole table."""
        return self._forms.table()

    @classmethod
    def from_tables(cls, index: dict[str, list[str]], exc: dict[str, dict[str, Any]],
                    rules: dict[str, list[list[str]]], *, word: str = "word",
                    resource: dict | None = None) -> "LemmaClasses":
        """From spaCy's lookup tables (index: class → lemmas; exc: class → {form: lemmas}; rules:
        class → [[suffix, replacement]]); rules of classes the index does not have are dropped."""
        def joined(table: dict[str, set[str]]) -> dict[str, str]:
            return {w: "|".join(sorted(c)) for w, c in table.items() if w and "\n" not in w}

        lemmas: dict[str, set[str]] = {}
        for pos, words in index.items():
            for w in words:
                lemmas.setdefault(w, set()).add(pos)
        forms: dict[str, set[str]] = {}
        for pos, table in exc.items():
            for w in table:
                forms.setdefault(w, set()).add(pos)
        return cls(joined(lemmas), joined(forms), {k: v for k, v in rules.items() if k in index},
                   word=word, resource=resource)

    @functools.cached_property
    def _by_length(self) -> list[tuple[int, dict[str, list[tuple[str, str]]]]]:
        """Per suffix length (ascending), suffix → (class, replacement) of every rule that changes a word: a
        word's rules in one lookup per length. A rule that leaves the word as it is (English adverbs' ``"" → ""``)
        is left out: the lemma it leads to is the word, whose classes `_classes` reads from the lemma table
        anyway; every word met it, and it was a third of the rules' time."""
        by_length: dict[int, dict[str, list[tuple[str, str]]]] = {}
        for pos, rules in self.rules.items():
            for old, new in rules:
                if old != new:
                    by_length.setdefault(len(old), {}).setdefault(old, []).append((pos, new))
        return sorted(by_length.items())

    @functools.cached_property
    def _suffixes(self) -> tuple[str, ...]:
        """The suffixes of `_by_length`'s rules (a word ending with none of them has no rule lemma)."""
        return tuple(suffix for _, table in self._by_length for suffix in table)

    def classes(self, word: str) -> str:
        """The parts of speech the lexicon allows ``word`` (lowercased): the classes it is a lemma or
        an exception form of, and those a suffix rule of a class leads from it to a lemma of."""
        w = word.lower()
        return self._classes(w, self._rule_lemmas(w), self.lemmas, self.forms)

    def _rule_lemmas(self, w: str) -> list[tuple[str, str]]:
        """(class, lemma) of each rule whose suffix ends the lowercased ``w`` (a word longer than the suffix):
        the lemmas the rules could lead ``w`` to."""
        size = len(w)
        out: list[tuple[str, str]] = []
        for n, table in self._by_length:
            if size <= n:
                break
            hits = table.get(w[size - n:])
            if hits:
                stem = w[:size - n]
                out.extend((pos, stem + new) for pos, new in hits)
        return out

    @staticmethod
    def _classes(w: str, rule_lemmas: list[tuple[str, str]], lemmas: Mapping[str, str],
                 forms: Mapping[str, str]) -> str:
        """`classes` of the lowercased ``w`` and its `_rule_lemmas`, with tables that hold at least ``w`` and
        those lemmas."""
        lemma, form = lemmas.get(w), forms.get(w)
        found = set(lemma.split("|")) if lemma else set()
        if form:
            found.update(form.split("|"))
        for pos, candidate in rule_lemmas:
            if pos not in found:
                classes = lemmas.get(candidate)
                if classes and pos in classes.split("|"):
                    found.add(pos)
        return "|".join(sorted(found)) or NONE

    def values(self, corpus: Corpus) -> dict[str, Any]:
        """The ``lpos`` column: the classes of the distinct words, lowercased (`classes_of`); the classes of the
        words of earlier calls are remembered (`MEMO_WORDS`), so a tagger that reads text after text (a service, a
        loop over documents) finds most of a text's words there."""
        distinct, codes = corpus.factorize(self.word)
        lowered = [w.lower() for w in distinct]
        memo = self._memo
        words = [w for w in dict.fromkeys(lowered) if w not in memo]
        found = self.classes_of(words) if words else {}
        if len(memo) + len(found) <= MEMO_WORDS:
            memo.update(found)
        values, of_word = coded([found.get(w) or memo[w] for w in lowered])  # in order of first occurrence
        return {LEMMA_COLUMN: (values, of_word[codes])}

    def classes_of(self, words: list[str]) -> dict[str, str]:
        """`classes` of each of ``words`` (distinct, lowercased), as sets of bits: the words and the lemmas their
        rules lead to are found by probes of each stored table's index (`StoredClasses.class_ids`, one query for
        both), a word's bits are those of its lemma and form classes, and a rule adds its class's bit when the
        lemma it leads to has that class."""
        suffixes = self._suffixes  # only a word ending with a rule's suffix has rule lemmas (one C call)
        owners: list[int] = []
        rule_classes: list[str] = []
        candidates: list[str] = []
        for i, w in enumerate(words):
            if w.endswith(suffixes):
                for pos, candidate in self._rule_lemmas(w):
                    owners.append(i)
                    rule_classes.append(pos)
                    candidates.append(candidate)
        wanted, position = extended(words, candidates)
        query = WordQuery(wanted)
        bit = self._bits
        lemma_bits, form_bits = (_class_bits(table, bit)[table.class_ids(query)]
                                 for table in (self._lemmas, self._forms))
        bits = lemma_bits[:len(words)] | form_bits[:len(words)]
        if owners:
            rule_bit = np.fromiter(map(bit.__getitem__, rule_classes), dtype=np.int64, count=len(rule_classes))
            lemma_of = lemma_bits[np.fromiter(map(position.__getitem__, candidates), dtype=np.int64,
                                              count=len(candidates))]
            hit = (lemma_of & rule_bit) != 0
            np.bitwise_or.at(bits, np.asarray(owners, dtype=np.int64)[hit], rule_bit[hit])
        names = sorted(bit, key=bit.__getitem__)
        joined: dict[int, str] = {}
        out = {}
        for w, b in zip(words, bits.tolist()):
            name = joined.get(b)
            if name is None:
                name = joined[b] = "|".join(sorted(n for k, n in enumerate(names) if b >> k & 1)) or NONE
            out[w] = name
        return out

    @functools.cached_property
    def _bits(self) -> dict[str, int]:
        """A bit per class name (the names of the rules' classes and of the tables' class strings), as a power of
        two: the classes of a word are an integer. More than 62 names are refused."""
        names = set(self.rules)
        for table in (self._lemmas, self._forms):
            for joined in table.class_names:
                if joined:
                    names.update(joined.split("|"))
        if len(names) > 62:
            raise ValueError(f"the lemma tables name {len(names)} classes: at most 62 are supported")
        return {n: 1 << k for k, n in enumerate(sorted(names))}

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    @property
    def _packed(self) -> tuple[tuple[list[str], dict[str, np.ndarray]], tuple[list[str], dict[str, np.ndarray]]]:
        """The lemmas' and the forms' tables as `pack_classes` stores them (packed once, when made)."""
        return self._lemmas.packed(), self._forms.packed()

    def to_json(self) -> dict:
        (lemma_classes, _), (form_classes, _) = self._packed
        return {"kind": "lemma-classes", "resource": self.resource, "rules": self.rules,
                "lemma_classes": lemma_classes, "form_classes": form_classes}

    def arrays(self) -> dict[str, np.ndarray]:
        (_, lemmas), (_, forms) = self._packed
        return {**{f"lemmas_{k}": a for k, a in lemmas.items()}, **{f"forms_{k}": a for k, a in forms.items()}}

    @classmethod
    def from_json(cls, data: dict, word: str = "word", arrays: dict[str, np.ndarray] | None = None) \
            -> "LemmaClasses":
        if not isinstance(data, dict) or data.get("kind") != "lemma-classes":
            raise ValueError("not a table of lemma classes")
        arrays = arrays or {}
        part = {p: {k[len(p) + 1:]: a for k, a in arrays.items() if k.startswith(p + "_")} for p in ("lemmas", "forms")}
        return cls(StoredClasses(list(data["lemma_classes"]), part["lemmas"]),
                   StoredClasses(list(data["form_classes"]), part["forms"]), dict(data["rules"]), word=word,
                   resource=data.get("resource"))
