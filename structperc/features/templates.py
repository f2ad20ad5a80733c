"""The feature-template language: readable names in, parsed templates out.

A template is a conjunction of parts joined by ``|``:

* ``w[-1]`` — column ``w`` at offset -1 (``__BOS__``/``__EOS__`` past the sentence ends);
* ``lower(w[0])``, ``shape(w[0])``, ``prefix3(w[0])``, ``suffix2(w[1])``, ``isdigit(w[0])`` … — a
  function of one column value (see `FUNCTIONS`);
* ``same(c[0],c[-1])`` — whether two positions hold the same value (reduplication);
* ``bias`` — always on.

A template may end in ``@N``: its attributes seen fewer than N times in the training data are left out
(``lower(w[0])|clu6[1]@2``), a cutoff of its own on top of the run's ``--min-count``.

A template that contains ``y[-1]|y[0]`` conditions the *transition* on the other parts: e.g.
``y[-1]|y[0]|pos[0]`` is a weight per (previous label, label, POS tag). Decoding stays first order; the
transition matrix is just rebuilt per token.

Column names are aliases resolved against the corpus: ``w`` means ``word``, ``c`` the character column.
"""
from __future__ import annotations

import functools
import itertools
import os
import re
import string
import unicodedata
from dataclasses import dataclass
from typing import Callable, Sequence

from structperc.errors import InputError

COLUMN_ALIASES = {"w": "word", "c": "char", "p": "pos"}


#: `_shape` of ASCII text as one `str.translate` (A-Z -> X, a-z -> x, 0-9 -> d): most words are ASCII,
#: and the per-character loop below was the costliest value function of tagging.
_ASCII_SHAPE = str.maketrans({**{c: "X" for c in string.ascii_uppercase}, **{c: "x" for c in string.ascii_lowercase},
                              **{c: "d" for c in string.digits}})


def _shape(s: str) -> str:
    if s.isascii():
        return s.translate(_ASCII_SHAPE)
    out = []
    for ch in s:
        if ch.isupper():
            out.append("X")
        elif ch.islower():
            out.append("x")
        elif ch.isdigit():
            out.append("d")
        else:
            out.append(ch)
    return "".join(out)


def _short_shape(s: str) -> str:
    """`_shape` with each run of one character kept once ("Xxxxx" -> "Xx")."""
    return "".join(ch for ch, _ in itertools.groupby(_shape(s)))


def _char_type(s: str) -> str:
    """Han, Latin letter, digit (ASCII or full-width), punctuation or other — for segmentation."""
    if not s:
        return "E"
    ch = s[0]
    if ch.isdigit():
        return "D"
    if ch in "〇零一二三四五六七八九十百千万亿":  # numerals before the Han range that contains them
        return "N"
    if "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" or "\U00020000" <= ch <= "\U0002ebef":
        return "H"
    cat = unicodedata.category(ch)
    if cat.startswith("L"):
        return "L"
    if cat.startswith("P") or cat.startswith("S"):
        return "P"
    return "O"


def _flag(pred: Callable[[str], bool]) -> Callable[[str], str]:
    return lambda s: "1" if pred(s) else "0"


#: Functions usable in templates; each maps one column value to a string.
FUNCTIONS: dict[str, Callable[[str], str]] = {
    "lower": str.lower,
    "shape": _shape,
    "shortshape": _short_shape,
    "chartype": _char_type,
    "isdigit": _flag(lambda s: s.isdigit()),
    "istitle": _flag(str.istitle),
    "isupper": _flag(str.isupper),
    "islower": _flag(str.islower),
    "hasdigit": _flag(lambda s: any(ch.isdigit() for ch in s)),
    "hashyphen": _flag(lambda s: "-" in s),
    "hasupper": _flag(lambda s: any(ch.isupper() for ch in s)),
    "length": lambda s: str(min(len(s), 10)),
}
_AFFIX = re.compile(r"^(prefix|suffix)([1-9])$")
_REF = re.compile(r"^([A-Za-z_][\w]*)\[\s*([+-]?\d{1,4})\s*\]$")  # offsets up to ±9999
_CALL = re.compile(r"^([a-z]+\d?)\(\s*(.*?)\s*\)$")


#: Functions whose value depends on training counts (computed in `structperc.features.index`).
COUNTED = {"rare"}


def value_function(name: str) -> Callable[[str], str]:
    """The function named in a template part (``lower``, ``prefix3``, …)."""
    if name in COUNTED:
        return str
    if name in FUNCTIONS:
        return FUNCTIONS[name]
    m = _AFFIX.match(name)
    if m:
        n = int(m.group(2))
        return (lambda s: s[:n]) if m.group(1) == "prefix" else (lambda s: s[-n:])
    raise KeyError(name)


@dataclass(frozen=True)
class Atom:
    """A value per token: ``func(column)`` (``func`` empty for the raw value)."""

    column: str
    func: str = ""

    @property
    def name(self) -> str:
        return f"{self.func}({self.column})" if self.func else self.column


@dataclass(frozen=True)
class Part:
    """One conjunct: an atom read at an offset, or a comparison of two offsets (``same``)."""

    atom: Atom
    offset: int
    other: int | None = None  # for same(x[a], x[b]): the second offset

    def __str__(self) -> str:
        c = self.atom.column
        if self.other is not None:
            return f"same({c}[{self.offset}],{c}[{self.other}])"
        ref = f"{c}[{self.offset}]"
        return f"{self.atom.func}({ref})" if self.atom.func else ref


@dataclass(frozen=True)
class Template:
    """A parsed template; ``transition`` marks ``y[-1]|y[0]|…`` templates."""

    name: str
    parts: tuple[Part, ...]
    transition: bool = False
    #: ``@N`` after a template: its attributes seen fewer than N times in training are left out (on top of the
    #: run's ``--min-count``): a conjunction of the word with a class (thousands of words × dozens of classes)
    #: is mostly attributes seen once, which cost a weight slot per label each and rarely recur.
    min_count: int = 1

    @property
    def is_bias(self) -> bool:
        return not self.parts


def _parse_part(text: str, source: str) -> Part | None:
    text = text.strip()
    if text == "bias":
        return None
    m = _CALL.match(text)
    if m:
        func, inner = m.group(1), m.group(2)
        if func == "same":
            refs = [r.strip() for r in inner.split(",")]
            parsed = [m for m in (_REF.match(r) for r in refs) if m is not None]
            if len(refs) != 2 or len(parsed) != len(refs) or parsed[0].group(1) != parsed[1].group(1):
                raise InputError(f"same() takes two offsets of one column, e.g. same(c[0],c[-1]): "
                                 f"{text!r}", source)
            column = COLUMN_ALIASES.get(parsed[0].group(1), parsed[0].group(1))
            return Part(Atom(column), int(parsed[0].group(2)), int(parsed[1].group(2)))
        try:
            value_function(func)
        except KeyError:
            known = ", ".join(sorted(FUNCTIONS) + ["prefixN", "suffixN", "same", "rare"])
            raise InputError(f"unknown function {func!r} in {text!r} (known: {known})", source) from None
        ref = _REF.match(inner)
        if not ref:
            raise InputError(f"expected a column reference like w[0] inside {text!r}", source)
        column = COLUMN_ALIASES.get(ref.group(1), ref.group(1))
        return Part(Atom(column, func), int(ref.group(2)))
    ref = _REF.match(text)
    if not ref:
        raise InputError(f"cannot parse template part {text!r} (expected e.g. w[0], lower(w[-1]), bias)",
                         source)
    column = COLUMN_ALIASES.get(ref.group(1), ref.group(1))
    return Part(Atom(column), int(ref.group(2)))


@functools.lru_cache(maxsize=4096)
def parse_template(text: str, source: str = "<template>") -> Template:
    """Parse one template such as ``"w[-1]|w[0]"`` or ``"y[-1]|y[0]|pos[0]"``. Templates are frozen,
    so parses are cached: a model parses its templates on every `predict` call (the service's
    single-sentence requests paid a third of their time for it).

    Examples
    --------
    >>> t = parse_template("lower(w[-1])|pos[0]")
    >>> [str(p) for p in t.parts]
    ['lower(word[-1])', 'pos[0]']
    """
    body, at, count = text.rpartition("@")
    min_count = 1
    if at:
        if not count.strip().isdigit() or int(count) < 1:
            raise InputError(f"@ after a template takes a count of at least 1, e.g. lower(w[0])|clu6[1]@2: "
                             f"{text!r}", source)
        text, min_count = body, int(count)
    pieces = [p.strip() for p in text.split("|")]
    if not text.strip() or any(not p for p in pieces):
        raise InputError(f"empty template part in {text!r}", source)
    transition = False
    labels = [p for p in pieces if p.replace(" ", "") in ("y[-1]", "y[0]")]
    if labels:
        if sorted(p.replace(" ", "") for p in labels) != ["y[-1]", "y[0]"]:
            raise InputError(f"a transition template needs both y[-1] and y[0]: {text!r}", source)
        transition = True
        if min_count > 1:
            raise InputError(f"a transition template takes no @ count: {text}@{count}", source)
        pieces = [p for p in pieces if p not in labels]
        if not pieces:
            raise InputError("y[-1]|y[0] alone is the built-in transition; add an observation, e.g. "
                             "y[-1]|y[0]|pos[0]", source)
    parts = [_parse_part(p, source) for p in pieces]
    if None in parts and len(parts) > 1:
        raise InputError(f"bias cannot be combined with other parts: {text!r}", source)
    kept = tuple(p for p in parts if p is not None)
    name = text.replace(" ", "") + (f"@{min_count}" if min_count > 1 else "")
    return Template(name, kept, transition, min_count)


def optional_columns_dropped(lines: list[str], columns: set[str]) -> list[str]:
    """Template lines without the optional ones (``?`` prefix) that read a column not in ``columns``;
    the ``?`` is removed from the optional lines kept."""
    out = []
    for line in lines:
        line = line.strip()
        if line.startswith("?"):
            t = parse_template(line[1:])
            if not all(p.atom.column in columns for p in t.parts):
                continue
            line = line[1:]
        out.append(line)
    return out


def parse_templates(lines: list[str], source: str = "<template>") -> list[Template]:
    """Parse a list of templates, rejecting duplicates (they would double-count a feature)."""
    out: list[Template] = []
    seen: dict[tuple[bool, tuple[str, ...]], str] = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("?"):
            line = line[1:]
        where = (source, number) if source != "<template>" else (source, None)
        try:
            t = parse_template(line, source)
        except InputError as exc:
            raise InputError(exc.reason, *where) from None
        canonical = (t.transition, tuple(map(str, t.parts)))  # "w[0]" and "word[+0]" are one template
        if canonical in seen:
            raise InputError(f"duplicate template {t.name!r} (same as {seen[canonical]!r})", *where)
        seen[canonical] = t.name
        out.append(t)
    if not out:
        raise InputError("no templates given", source)
    return out


def _window(fmt: str, lo: int, hi: int) -> list[str]:
    return [fmt.format(i) for i in range(lo, hi + 1)]


#: CRFsuite's classic chunking template (example/chunking.py) plus a bias.
CRFSUITE_CHUNK = (
    _window("w[{}]", -2, 2) + ["w[-1]|w[0]", "w[0]|w[1]"] + _window("pos[{}]", -2, 2)
    + ["pos[-2]|pos[-1]", "pos[-1]|pos[0]", "pos[0]|pos[1]", "pos[1]|pos[2]",
       "pos[-2]|pos[-1]|pos[0]", "pos[-1]|pos[0]|pos[1]", "pos[0]|pos[1]|pos[2]", "bias"]
)

#: The default for chunking: the classic set, transitions conditioned on the POS tags, word/POS
#: conjunctions and affixes. Trained in IOBES (see `structperc.labels.schemes`) it reaches 94.1 F1 on
#: CoNLL-2000; richer sets (POS 4-grams, shape|POS) scored higher on held-out train data but not on test.
CHUNK_RICH = CRFSUITE_CHUNK + [
    "y[-1]|y[0]|pos[0]", "y[-1]|y[0]|pos[-1]|pos[0]",
    "w[0]|pos[0]", "w[-1]|pos[0]", "w[1]|pos[0]", "w[0]|pos[-1]", "w[0]|pos[1]",
    "w[-1]|pos[-1]", "w[1]|pos[1]", "pos[-1]|pos[1]", "w[-2]|w[-1]", "w[1]|w[2]",
    "lower(w[0])", "suffix2(w[0])", "suffix3(w[0])", "prefix2(w[0])", "shortshape(w[0])",
    "suffix3(w[-1])", "suffix3(w[1])",
]

#: Character templates for Chinese word segmentation: unigrams and bigrams in a ±2 window, character
#: types, reduplication, and the dictionary columns of `structperc.features.lexicon` (present when training
#: builds them; see `structperc.segmenter`).
CWS_CHARS = (
    _window("c[{}]", -2, 2)
    + ["c[-2]|c[-1]", "c[-1]|c[0]", "c[0]|c[1]", "c[1]|c[2]", "c[-1]|c[1]",
       "chartype(c[-1])", "chartype(c[0])", "chartype(c[1])",
       "chartype(c[-1])|chartype(c[0])|chartype(c[1])", "same(c[0],c[-1])", "same(c[0],c[-2])", "bias"]
)
CWS = CWS_CHARS + [
    "lexb[0]", "lexe[0]", "lexm[0]", "lexb[0]|lexe[0]|lexm[0]", "lexe[-1]|lexb[0]",
    "c[0]|lexb[0]", "c[0]|lexe[0]", "c[0]|lexm[0]",
]
#: HanLP 1.x's seven CWS templates (C−1, C0, C+1, C−2C−1, C−1C0, C0C+1, C+1C+2): the benchmark preset.
HANLP_CWS = ["c[-1]", "c[0]", "c[1]", "c[-2]|c[-1]", "c[-1]|c[0]", "c[0]|c[1]", "c[1]|c[2]"]

#: Named entities: word identity and shape in a ±2 window, affixes, capitalisation and digit flags,
#: word bigrams; POS templates are optional (``?``: dropped when the data has no ``pos`` column), and so
#: are those reading the columns that NER training adds (``gaz``, ``case``, ``doc``: see
#: `structperc.features.gazetteer`). Additions to the first set, each chosen on esp.testa only (entity F1, mean
#: of the 4 seeds 0–3, epochs 6–10): wider word bigrams +0.5, gazetteer context +0.55, neighbour affixes
#: +0.3, the training-data capitalisation of the word (``case``) +0.2–0.3, the roles of the word at its
#: other occurrences in nearby sentences (``doc``) +1.0; together 76.0 → 77.7. Then (#20, ``scripts/study_ner.py``,
#: 8 seeds): the gazetteer's folds as 200-sentence blocks +0.72, the types a word has inside training entity
#: strings (``gazt``, a partial match) +0.20 more; together 77.64 → 78.56.
NER = (
    _window("w[{}]", -2, 2) + _window("lower(w[{}])", -2, 2)
    + ["shape(w[0])"] + _window("shortshape(w[{}])", -2, 2)
    + [f"{f}{n}(w[0])" for f in ("prefix", "suffix") for n in range(1, 5)]
    + ["suffix3(w[-1])", "suffix3(w[1])"]
    + _window("istitle(w[{}])", -1, 1)
    + ["isupper(w[0])", "isdigit(w[0])", "hasdigit(w[0])", "hashyphen(w[0])", "length(w[0])",
       "istitle(w[-1])|istitle(w[0])|istitle(w[1])", "shortshape(w[-1])|shortshape(w[0])",
       "shortshape(w[0])|shortshape(w[1])",
       "lower(w[-1])|lower(w[0])", "lower(w[0])|lower(w[1])",
       "?pos[-1]", "?pos[0]", "?pos[1]", "?pos[-1]|pos[0]", "?pos[0]|pos[1]", "?lower(w[0])|pos[0]",
       "?gaz[-1]", "?gaz[0]", "?gaz[1]", "?gaz[-1]|gaz[0]", "?gaz[0]|shortshape(w[0])",
       "y[-1]|y[0]|shortshape(w[0])", "bias"]
    + ["lower(w[-2])|lower(w[-1])", "lower(w[1])|lower(w[2])", "lower(w[-1])|lower(w[1])"]
    + ["?gaz[-2]", "?gaz[2]", "?gaz[0]|gaz[1]", "?gaz[0]|lower(w[0])"]
    + ["?case[0]", "?case[-1]", "?case[1]", "?case[0]|shortshape(w[0])", "?y[-1]|y[0]|case[0]"]
    + ["suffix3(w[-2])", "suffix3(w[2])", "prefix3(w[-1])", "prefix3(w[1])", "suffix2(w[-1])",
       "suffix2(w[1])"]
    + ["?doc[0]", "?doc[0]|shortshape(w[0])", "?doc[-1]", "?doc[1]"]
    + ["?gazt[0]", "?gazt[-1]", "?gazt[1]"]
)

#: Part of speech: word identity in a ±2 window, affixes 1–4, shape and flags, neighbour suffixes,
#: and ``rare(w[0])`` (words seen at most once in training behave like unknown words).
POS = (
    _window("lower(w[{}])", -2, 2) + ["w[0]", "shape(w[0])", "shortshape(w[0])"]
    + [f"{f}{n}(w[0])" for f in ("prefix", "suffix") for n in range(1, 5)]
    + ["suffix2(w[-1])", "suffix3(w[-1])", "suffix2(w[1])", "suffix3(w[1])",
       "hashyphen(w[0])", "hasdigit(w[0])", "isupper(w[0])", "istitle(w[0])", "length(w[0])",
       "lower(w[-1])|lower(w[0])", "lower(w[0])|lower(w[1])", "lower(w[-1])|lower(w[1])",
       "rare(w[0])", "rare(w[0])|suffix3(w[0])", "rare(w[0])|shape(w[0])",
       "y[-1]|y[0]|suffix2(w[0])", "bias",
       "istitle(w[0])|lower(w[-1])", "suffix3(w[0])|lower(w[-1])", "suffix3(w[0])|lower(w[1])",
       "lower(w[-2])|lower(w[-1])", "lower(w[1])|lower(w[2])", "shape(w[-1])", "shape(w[1])",
       "prefix1(w[0])|suffix3(w[0])"]
    # ambiguity classes (`structperc.features.ambiguity`), chosen on the EWT dev file (#20,
    # scripts/study_pos.py, 5 seeds): UPOS 95.07 -> 95.38
    + ["amb[-2]", "amb[-1]", "amb[0]", "amb[1]", "amb[2]", "amb[-1]|amb[0]", "amb[0]|amb[1]", "amb[-1]|amb[1]",
       "lamb[0]", "lamb[0]|shortshape(w[0])", "lamb[-1]", "lamb[1]"]
)

def _pos_optional(lines: list[str]) -> list[str]:
    """Mark templates that read ``pos`` optional, so a preset also works on data without POS tags."""
    return [f"?{line}" if "pos[" in line and not line.startswith("?") else line for line in lines]


PRESETS: dict[str, list[str]] = {
    "ner": NER,
    "pos": POS,
    "crfsuite": CRFSUITE_CHUNK,
    "chunk": _pos_optional(CHUNK_RICH),
    "cws": CWS,
    "cws-chars": CWS_CHARS,
    "hanlp-cws": HANLP_CWS,
}


#: Brown-cluster path prefixes at the word and its neighbours, the generic set of Turian et al. (2010):
#: what ``--lang`` adds to a tagger's preset whose task has no study of its own (`LANGUAGE_LINES`).
CLUSTER_WINDOW = [f"clu{n}[{i}]" for i in (-1, 0, 1) for n in (4, 6, 10, 20)]
#: The word's frequency band (`structperc.features.resources.bands`): measured, read by no preset.
BAND_LINES = ["frq[0]", "frq[0]|shortshape(w[0])"]
#: The parts of speech a lexicon allows the word and its neighbours (`structperc.features.resources.lemmas`).
LEMMA_LINES = ["lpos[-1]", "lpos[0]", "lpos[1]", "lpos[0]|suffix2(w[0])"]
#: How the word's capitalisation compares with its other case in the word probabilities, at the word and its
#: neighbours (`structperc.features.resources.case_evidence`).
CASE_LINES = ["cap[0]", "cap[0]|istitle(w[0])", "cap[-1]", "cap[1]"]
#: The word with its neighbours' classes (cluster prefixes, the lexicon's parts of speech): "about" before a
#: noun is a preposition, before a full stop an adverb.
WORD_CONTEXT_CLUSTER_LINES = ["lower(w[0])|clu6[1]", "lower(w[0])|clu6[-1]", "lower(w[0])|clu6[2]"]
WORD_CONTEXT_LEMMA_LINES = ["lower(w[0])|lpos[1]", "lower(w[0])|lpos[-1]"]
#: The ``pos`` preset's word-context lines keep the attributes seen this many times (``@N``): two thirds of
#: their 234,000 attributes on EWT are seen once and each holds a weight per label; cut at 2 or 3 they score as
#: all of them do on EWT dev (``scripts/studies/study_lang.py pos``: 95.91, 95.92, 95.91, 3 seeds).
WORD_CONTEXT_MIN_COUNT = 3


def with_min_count(lines: Sequence[str], n: int) -> list[str]:
    """``lines`` each with the count of its own ``@n`` (`Template.min_count`)."""
    return [f"{line}@{n}" for line in lines]


_GENERIC = {"clusters": CLUSTER_WINDOW}
#: An external dictionary's own lexicon columns (`structperc.features.resources.wordlist`), as the ``cws``
#: preset reads the training lexicon's.
DICTIONARY_LINES = ["dicb[0]", "dice[0]", "dicm[0]", "dicb[0]|dice[0]|dicm[0]", "dice[-1]|dicb[0]",
                    "c[0]|dicb[0]", "c[0]|dice[0]"]
#: The templates ``--lang`` adds to each preset, by the kind of resource whose columns they read
#: (`structperc.features.resources.language`), each chosen on held-out data by the study of its task family
#: (``scripts/studies/study_lang.py``, 3 seeds): the cluster window paid on every task (CoNLL-2000 held-out
#: +0.34, EWT dev +0.25, esp.testa +1.86) and more cluster lines did not; the lexicon's parts of speech paid on
#: EWT (+0.14 more, every seed) but not on chunking (+0.07) or Dutch NER (+0.16, one seed −0.94); on EWT the
#: capitalisation evidence and the word with its neighbours' classes paid together (+0.13 more, every seed);
#: frequency bands paid nowhere (EWT −0.03, chunking ±0, esp.testa −0.26); jieba's words paid most in columns
#: of their own (SXU held-out +0.96, with frequency ≥ 5) rather than in the training lexicon (+0.15). A tagger's
#: preset not named here gets the cluster window; a template file or list reads the
#: ``clu*``/``frq``/``cap``/``lpos``/``dic*`` columns itself.
LANGUAGE_LINES: dict[str, dict[str, list[str]]] = {
    "chunk": {"clusters": CLUSTER_WINDOW},
    "pos": {"clusters": CLUSTER_WINDOW + with_min_count(WORD_CONTEXT_CLUSTER_LINES, WORD_CONTEXT_MIN_COUNT),
            "probabilities": CASE_LINES,
            "lemmas": LEMMA_LINES + with_min_count(WORD_CONTEXT_LEMMA_LINES, WORD_CONTEXT_MIN_COUNT)},
    "ner": {"clusters": CLUSTER_WINDOW},
    "cws": {"words": DICTIONARY_LINES},
}
_SEGMENTER_PRESETS = ("cws", "cws-chars", "hanlp-cws")


def language_lines(template: str | Sequence[str] | None, task_template: str, kinds: Sequence[str]) -> list[str]:
    """The lines ``--lang`` adds to ``template`` (None: the task's preset ``task_template``) for a language
    with resources of ``kinds``."""
    name = task_template if template is None else template
    if not isinstance(name, str) or name not in PRESETS:
        return []
    chosen = LANGUAGE_LINES.get(name, {} if name in _SEGMENTER_PRESETS else _GENERIC)
    return [line for kind in kinds for line in chosen.get(kind, [])]


def preset(name: str) -> list[str]:
    """Template lines of a named preset."""
    try:
        return list(PRESETS[name])
    except KeyError:
        raise InputError(f"unknown template preset {name!r} (known: {', '.join(sorted(PRESETS))})") \
            from None


def resolve_template(template: str | Sequence[str]) -> list[str]:
    """Template lines from a preset name, a file of one template per line, or a list of lines."""
    if isinstance(template, str):
        if template in PRESETS:
            return preset(template)
        if os.path.exists(template):
            from structperc.io.text import open_text_lines

            lines = [line for _, line in open_text_lines(template)]
            parse_templates(lines, template)  # errors name the file and line
            return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        raise InputError(f"{template!r} is neither a template preset ({', '.join(sorted(PRESETS))}) "
                         "nor a template file")
    return list(template)
