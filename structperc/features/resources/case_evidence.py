"""Capitalisation evidence: how a word's spelling compares with its other case in a large unlabelled text.

A tagger learns from its training data whether a capitalised word is a name; a word the data never saw
leaves it guessing, and on web text (lowercase "ipod", title-case headlines) capitals say little. A
word-probability table learnt from far more text knows how each spelling is used: "Gulf" is written
capitalised more often than "gulf" (natural-log probabilities −12.9 against −13.5), "Housing" far less
often than "housing" (−13.8 against −11.1). The ``cap`` column puts a word's difference into a class:

* a capitalised word (any capital: "Gulf", "CPA", "iPod") is compared with its lowercase form,
  ``c`` + the class; a lowercase word with its first letter capitalised, ``l`` + the class;
* the classes of log P(capitalised) − log P(lowercase): ``L3`` below −3, ``L2`` below −1.5, ``L1`` below
  −0.5, ``eq`` up to 0.5, ``T1`` up to 1.5, ``T2`` up to 3, ``T3`` above (L: mostly lowercase, T: mostly
  capitalised); ``lowonly``/``caponly`` when the table has one spelling only, ``unk`` when it has
  neither; ``na`` for a word whose first character has no case (numbers, punctuation).

Chosen on EWT dev (``scripts/studies/study_lang.py pos``): PROPN/NOUN confusions are the largest share of a
POS tagger's errors there. The table holds the words of log probability at least `MIN_LOG_PROB`
(spaCy's ``lexeme_prob`` tables smooth every word to at least −19.5). `CaseEvidence` is a
`structperc.features.resources.word_classes.WordClasses`: kept inside the model as arrays, with the
resource's provenance.
"""
from __future__ import annotations

from structperc.features.resources.word_classes import WordClasses

CASE_COLUMN = "cap"
#: Words of a lower log probability are left out (chosen on EWT dev: −18 keeps 290,593 of spaCy's
#: 1,000,001 English words and scores as all of them do; −16.1 loses the gain).
MIN_LOG_PROB = -18.0
#: The upper bounds (natural-log units) of the classes of log P(capitalised) − log P(lowercase).
BOUNDS = ((-3.0, "L3"), (-1.5, "L2"), (-0.5, "L1"), (0.5, "eq"), (1.5, "T1"), (3.0, "T2"))
TOP = "T3"
CASELESS = "na"


def case_class(word: str, log_probs: dict[str, float]) -> str:
    """The ``cap`` value of ``word`` from a word → natural-log probability table (see the module docstring).

    Examples
    --------
    >>> lp = {"Gulf": -12.9, "gulf": -13.5, "Housing": -13.8, "housing": -11.1, "ipod": -13.1}
    >>> [case_class(w, lp) for w in ("Gulf", "gulf", "Housing", "housing", "iPod", "ipod", "x", "42")]
    ['cT1', 'lT1', 'cL2', 'lL2', 'clowonly', 'llowonly', 'lunk', 'na']
    """
    low = word.lower()
    if word == low:
        other = word[:1].upper() + word[1:]
        if other == word:
            return CASELESS
        cap, lower, mark = log_probs.get(other), log_probs.get(low), "l"
    else:
        cap, lower, mark = log_probs.get(word), log_probs.get(low), "c"
    if cap is None or lower is None:
        return mark + ("unk" if cap is None and lower is None else "lowonly" if cap is None else "caponly")
    diff = cap - lower
    return mark + next((name for bound, name in BOUNDS if diff < bound), TOP)


class CaseEvidence(WordClasses):
    """Word → its ``cap`` class (`case_class`), writing the ``cap`` column of column ``word``.

    The table stores the class of every word of the probability table and of the lowercase forms of its
    capitalised words; every other word's class follows from it: a lowercase word's is ``lunk`` (``na``
    without case), a capitalised word's ``clowonly`` when its lowercase form is a word of the table, else
    ``cunk`` — the classes `case_class` gives on the whole probability table."""

    column, kind, key, what = CASE_COLUMN, "case-evidence", "classes", "capitalisation evidence"

    @classmethod
    def from_log_probs(cls, log_probs: dict[str, float], *, min_log_prob: float = MIN_LOG_PROB,
                       word: str = "word", resource: dict | None = None) -> "CaseEvidence":
        kept = {w: p for w, p in log_probs.items() if p >= min_log_prob and "\n" not in w}
        one: dict[str, str] = {}  # one string per class, not one per word (a third of the table's memory)
        classes = {w: one.setdefault(c, c) for w in kept for c in (case_class(w, kept),)}
        for w in kept:  # a lowercase form known only capitalised ("ipod" of "iPod"): its own class
            low = w.lower()
            if low not in classes and (c := case_class(low, kept)) not in ("lunk", CASELESS):
                classes[low] = one.setdefault(c, c)
        return cls(classes, word=word, resource=resource)

    def value_of(self, word: str, written: str | None, lower: str | None) -> str:
        """The ``cap`` class of ``word``."""
        if written is not None:
            return written
        low = word.lower()
        if word == low:
            return CASELESS if word[:1].upper() + word[1:] == word else "lunk"
        # its lowercase form: a word of the table, unless stored for its capitalised form only
        return "clowonly" if lower is not None and lower != "lcaponly" else "cunk"
