"""What ``--lang CODE`` adds to a training run: the resource columns of the language, by task.

A tagger (chunking, POS, NER) gets the tables of its language it reads, each a column family of its own
(`TAGGER_TABLES`): the Brown clusters (`structperc.features.clusters.ClusterMap`: the ``clu4``, ``clu6``,
``clu10``, ``clu20`` and ``clu`` columns; Koo, Carreras & Collins 2008, Turian, Ratinov & Bengio 2010),
two tables of the word probabilities — frequency bands (`structperc.features.resources.bands`, ``frq``) and
capitalisation evidence (`structperc.features.resources.case_evidence`, ``cap``) — and the parts of speech a
lexicon allows (`structperc.features.resources.lemmas`, ``lpos``). Each holds every word the resource knows,
not only the training words: the words the training data never saw are what the resources are for. A word segmenter
gets the language's word list in its lexicon columns (`structperc.features.lexicon`), as the open tracks of
the Chinese segmentation bakeoffs used dictionaries. A language with no resource a trainer reads is refused
with one line saying what it has.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from structperc.errors import InputError
from structperc.features.clusters import DEFAULT_COLUMNS as CLUSTER_COLUMNS
from structperc.features.clusters import ClusterMap
from structperc.features.resources.bands import BAND_COLUMN, WordBands
from structperc.features.resources.bands import MIN_LOG_PROB as BAND_MIN_LOG_PROB
from structperc.features.resources.case_evidence import CASE_COLUMN, MIN_LOG_PROB, CaseEvidence
from structperc.features.resources.lemmas import LEMMA_COLUMN, LemmaClasses
from structperc.features.resources.registry import RESOURCES, Resource, languages, provenance, resource

#: The kind of resource the segmenter reads (a word list).
SEGMENTER_KIND = "words"


def _clusters(r: Resource, word: str) -> ClusterMap:
    """The language's cluster map; a cased word whose lowercased form has its path is left out (the map looks
    a word up lowercased when it is missing: the same paths for every word, a third fewer English entries)."""
    paths = r.read()
    kept = {w: bits for w, bits in paths.items() if w == w.lower() or paths.get(w.lower()) != bits}
    return ClusterMap(kept, word=word, resource={**provenance(r.name), "words": len(paths)})


def _bands(r: Resource, word: str) -> WordBands:
    bands = WordBands.from_log_probs(r.read(min_log_prob=BAND_MIN_LOG_PROB), word=word)  # the rest is below MIN_BAND
    bands.resource = {**provenance(r.name), "words": bands.n_words}
    return bands


def _case(r: Resource, word: str) -> CaseEvidence:
    table = CaseEvidence.from_log_probs(r.read(min_log_prob=MIN_LOG_PROB), word=word)
    table.resource = {**provenance(r.name), "words": table.n_words}
    return table


def _lemmas(r: Resource, word: str) -> LemmaClasses:
    t = r.read()
    return LemmaClasses.from_tables(t["index"], t["exc"], t["rules"], word=word,
                                    resource={**provenance(r.name), "words": len(set().union(*t["index"].values()))})


@dataclass(frozen=True)
class TaggerTable:
    """How a resource reaches a tagger: the columns a table of it writes and how that table is built."""

    columns: tuple[str, ...]
    build: Callable[[Resource, str], Any]


#: The kinds of resource a tagger reads, in the order their columns are added, each with the tables made of
#: it (a table is built only when the templates read one of its columns).
TAGGER_TABLES: dict[str, tuple[TaggerTable, ...]] = {
    "clusters": (TaggerTable(tuple(CLUSTER_COLUMNS), _clusters),),
    "probabilities": (TaggerTable((BAND_COLUMN,), _bands), TaggerTable((CASE_COLUMN,), _case)),
    "lemmas": (TaggerTable((LEMMA_COLUMN,), _lemmas),),
}


def code(lang: str) -> str:
    return lang.strip().lower()


def _has(lang: Any, kinds: tuple[str, ...] | list[str]) -> list[str]:
    have = {r.kind for r in RESOURCES.values() if r.language == lang}
    return [k for k in kinds if k in have]


def usable(segmenter: bool) -> list[str]:
    """The languages with a resource this trainer reads, sorted."""
    kinds = [SEGMENTER_KIND] if segmenter else list(TAGGER_TABLES)
    return sorted({r.language for r in RESOURCES.values() if r.kind in kinds})


def lang_problem(lang: object, segmenter: bool) -> str | None:
    """Why ``lang`` cannot be used by this trainer (None: it can): one line for `structperc.train.options`."""
    name = code(lang) if isinstance(lang, str) else lang
    trainer = "word segmentation (--task cws)" if segmenter else "tagging (chunk, pos, ner)"
    if name in usable(segmenter):
        return None
    if not isinstance(name, str) or name not in languages():
        return (f"lang (--lang) {lang!r}: no language resources; {trainer} has resources for "
                f"{', '.join(usable(segmenter))}")
    has = sorted(r.kind for r in RESOURCES.values() if r.language == name)
    wanted = SEGMENTER_KIND if segmenter else ", ".join(TAGGER_TABLES)
    return (f"lang (--lang) {name!r} has {', '.join(has)} but nothing {trainer} reads ({wanted}): its "
            f"languages are {', '.join(usable(segmenter))}")


def tagger_kinds(lang: str) -> list[str]:
    """The kinds of `TAGGER_TABLES` that ``lang`` has."""
    return _has(code(lang), list(TAGGER_TABLES))


def language_dictionaries(lang: str, reads: set[str], word: str = "word") -> tuple[ClusterMap | None, list]:
    """The resource dictionaries of ``lang`` whose columns the templates (reading ``reads``) use: the cluster
    map (or None: it travels as ``--clusters`` does) and the other tables; one `InputError` line when the
    templates read none of the language's columns."""
    kinds = tagger_kinds(lang)
    built = [(k, t.build(resource((code(lang), k)), word)) for k in kinds for t in TAGGER_TABLES[k]
             if set(t.columns) & reads]
    if not built:
        columns = ", ".join(c for k in kinds for t in TAGGER_TABLES[k] for c in t.columns)
        raise InputError(f"lang (--lang) {code(lang)!r}: the templates read none of its columns ({columns})")
    clusters = next((table for k, table in built if k == "clusters"), None)
    return clusters, [table for k, table in built if k != "clusters"]


def language_clusters(lang: str, word: str = "word") -> ClusterMap:
    """The Brown clusters of ``lang`` as a `ClusterMap` reading column ``word``, carrying its provenance."""
    return _clusters(resource((code(lang), "clusters")), word)


#: Whether the language's words join the segmenter's training lexicon (its ``lex*`` columns); the templates
#: decide apart whether they also get columns of their own (``dic*``, `structperc.features.resources.wordlist`):
#: both chosen on a held-out tenth of SXU's training data (``scripts/studies/study_lang.py cws``): own columns
#: +0.75 F1, the training lexicon +0.15, both +0.06.
WORDS_IN_LEXICON = False
#: jieba's words kept for the segmenter: those with at least this frequency in jieba's dictionary (chosen on a
#: held-out tenth of SXU's training data, ``scripts/studies/study_lang.py cws``: ≥ 5 +0.21 F1 over all words,
#: ≥ 20 +0.10).
MIN_WORD_FREQUENCY = 5


def language_words(lang: str, min_frequency: int | None = None) -> tuple[list[str], dict]:
    """The dictionary words of ``lang`` (frequency ≥ ``min_frequency``, default `MIN_WORD_FREQUENCY`),
    sorted, and the resource's provenance (with the frequency threshold)."""
    r = resource((code(lang), SEGMENTER_KIND))
    floor = MIN_WORD_FREQUENCY if min_frequency is None else int(min_frequency)
    if floor < 0:
        raise InputError(f"a minimum word frequency must be >= 0, not {floor}")
    words = sorted(w for w in r.read(min_frequency=floor) if "\n" not in w)
    return words, {**provenance(r.name), "min_frequency": floor, "words": len(words)}
