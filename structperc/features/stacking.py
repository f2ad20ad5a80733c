"""The column of a two-stage tagger: what a first-stage tagger said about the *other* occurrences of a word.

Krishnan & Manning (2006), "An effective two-stage model for exploiting non-local dependencies in named
entity recognition" (ACL): a first tagger labels the whole document; a second one reads, as features,
the majority label the first one gave to the other occurrences of the same token. A name is usually
written the same way and keeps its type within an article ("Castaño" is PER in every sentence that
says so clearly), which a first-order tagger cannot see past its sentence.

``tmd`` (`STAGE_COLUMN`): per token, the majority type (the entity type of a span tag, else the tag)
of the other occurrences of the same word form within `DOC_WINDOW` sentences either side; ties go to
the first type in sorted order with ``O`` last; ``none`` when the word occurs nowhere else in the window.
Chosen on the development sets (``scripts/study_ner_twopass.py``): the window beats the whole file,
the token majority beats entity-string majorities and the token's own first-stage label.

Training sentences take the column from their *gold* tags, tagging sentences from the first-stage
model's predictions (`structperc.train.run`, `structperc.predict`): on the development files that paid
more than jackknifed first-stage predictions on the training side (esp.testa +0.66 against +0.50 F1,
ned.testa +0.16 against +0.12; ``scripts/bench_two_stage.py --stage-folds``), at less cost.
"""
from __future__ import annotations

import numpy as np

from structperc.features.gazetteer import DOC_WINDOW, STAGE_COLUMN
from structperc.features.templates import parse_templates
from structperc.io.corpus import Corpus

NONE = "none"
#: The line `structperc.Tagger`'s ``two_stage=True`` adds to a template that does not read the column.
STAGE_LINES = (f"{STAGE_COLUMN}[0]",)


def reads_stage_column(template_lines: list[str]) -> bool:
    """Whether a template reads the first stage's column (so training needs a first stage)."""
    return any(p.atom.column == STAGE_COLUMN for t in parse_templates([line.strip().lstrip("?")
                                                                       for line in template_lines])
               for p in t.parts)


def first_stage_lines(template_lines: list[str]) -> list[str]:
    """The template of the first stage: the lines that do not read its column."""
    return [line for line in template_lines if not reads_stage_column([line])]


def tag_types(tags: list[str], span: bool) -> list[str]:
    """The type of each tag: ``PER`` of ``B-PER``/``I-PER``/… and ``O`` of ``O`` for span tags,
    the tag itself otherwise."""
    if not span:
        return list(tags)
    distinct = {t: (t[2:] if len(t) > 2 and t[1] == "-" else t) for t in set(tags)}
    return [distinct[t] for t in tags]


def majority_types(corpus: Corpus, word: str, types: list[str], window: int = DOC_WINDOW,
                   ignore: str | None = None) -> list[str]:
    """The ``tmd`` column of ``corpus`` from a type per token (``types``; tokens of type ``ignore``
    are no evidence): see the module docstring.

    Vectorized: per type, one sorted table of (word, sentence) keys; a token's count of that type is
    two binary searches over its window.

    Examples
    --------
    >>> c = Corpus.from_sentences([["Castaño", "habló"], ["Castaño", "ganó"], ["Lo", "dijo", "Castaño"]])
    >>> majority_types(c, "word", ["PER", "O", "PER", "O", "O", "O", "O"])
    ['PER', 'none', 'PER', 'none', 'none', 'none', 'PER']
    """
    _, codes = corpus.factorize(word)
    n = len(codes)
    if n == 0:
        return []
    kinds = sorted(set(types) - {ignore}, key=lambda t: (t == "O", t))
    type_id = {t: i for i, t in enumerate(kinds)}
    tid = np.fromiter((type_id.get(t, -1) for t in types), np.int64, n)
    lengths = np.diff(corpus.sent_ptr)
    sent = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths) + window
    span = len(lengths) + 2 * window + 1  # key = word · span + sentence: one sorted axis
    probe = codes.astype(np.int64) * span + sent
    counts = np.zeros((n, max(1, len(kinds))), np.int64)
    for k in range(len(kinds)):
        mine = tid == k
        table = np.sort(probe[mine])
        counts[:, k] = np.searchsorted(table, probe + window, "right") - np.searchsorted(table, probe - window)
        counts[:, k] -= mine  # not the token itself
    names = np.asarray(kinds + [NONE], dtype=object)
    best = np.where(counts.max(axis=1) > 0, counts.argmax(axis=1), len(kinds))
    return names[best].tolist()
