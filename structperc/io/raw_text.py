"""Raw text into sentences of tokens, with character offsets, tokenized the way the corpora are.

Users give untokenized text ("He didn't stay."); the tagger was trained on Penn Treebank / UD style
tokens ("did n't", "stay ."). Writing a tokenizer is a project of its own, so this module *uses*
one: spaCy's rule-based tokenizer of ``spacy.blank(lang)`` (no trained model, no download) and its
rule-based ``sentencizer`` pipe. ``scripts/bench/bench_tokenizer.py`` measured it against the gold
tokens of UD English EWT and against other tokenizers on PyPI (syntok, NLTK); see its output for the
figures and the disagreements that remain.

spaCy is an optional dependency (the ``text`` extra): it is imported only when a pipeline is first
built, and its absence is one `InputError` line saying what to install.

Every token carries ``start``/``end`` offsets into the document it came from, so a caller can put
tags back on the user's own text. Whitespace is never a token; a blank line (two line breaks between
tokens) always ends a sentence, as paragraphs do, besides the sentencizer's punctuation rule.

English gets two adjustments of spaCy's rules, made through spaCy's documented tokenizer API
(``prefix_search``, ``suffix_search``, ``infix_finditer``) and the sentencizer's ``punct_chars``,
each chosen on EWT train and checked on dev (token F1 98.28 -> 98.86 on train, 97.25 -> 98.49 on dev;
sentence F1 unchanged to 0.1 point), never on test:

* a run of one repeated symbol is one token, as in EWT ("wow!!" -> "wow !!", "<<", "***", "$$$");
  spaCy cuts it into single characters. Dots and hyphens keep spaCy's own rules ("...", "--").
  The sentencizer is told that runs of "!" and "?" end sentences ("Great!!!!!! Thanks" is two).
* a hyphen between digits stays inside the token ("713-853-3989", "2005-03-09"): EWT train keeps
  265 such hyphens and splits 73 (ranges such as "5-10", which now stay one token too). Between
  letters spaCy's split stays: EWT splits 605 such hyphens and keeps 312, most of them in URLs.

Spanish and Dutch use spaCy's rules unchanged: their corpora (CoNLL-2002) carry no raw text to
measure an adjustment on.
"""
from __future__ import annotations

import itertools
import re
import sys
from typing import TYPE_CHECKING, Any, Iterable, Iterator, NamedTuple

from structperc.errors import InputError

if TYPE_CHECKING:
    from spacy.language import Language

#: spaCy's language codes are two or three lowercase letters ("en", "es", "nl", "xx"); anything else
#: is refused before it reaches ``importlib`` (``spacy.blank("en.stop_words")`` would import a module).
_LANG_CODE = re.compile(r"[a-z]{2,3}\Z")
#: One pipeline per language: building one reads spaCy's rule tables (tens of milliseconds).
_PIPELINES: dict[str, Language] = {}
_INSTALL = 'splitting raw text into tokens needs spaCy: pip install "structperc[text]"'

#: A run of one repeated symbol (not a dot nor a hyphen: spaCy's rules for "..." and "--" stay).
#: A named group, so the backreference holds wherever spaCy puts the pattern in its alternation.
_SYMBOL_RUN = r"(?P<symbol_run>[^\w\s.\-])(?P=symbol_run)+"
#: spaCy's English infix that splits "713-853" (and "3+4", "3*4"), and the same without the hyphen.
_DIGIT_OPERATORS = r"(?<=[0-9])[+\-\*^](?=[0-9-])"
_DIGIT_OPERATORS_NO_HYPHEN = r"(?<=[0-9])[+\*^](?=[0-9-])"
#: Runs of "!", "?" (and "." among them) that end a sentence, now that they are single tokens: the
#: sentencizer compares whole token texts with its ``punct_chars``.
_END_RUNS = sorted({"".join(c) for n in (2, 3, 4) for c in itertools.product("!?.", repeat=n) if set(c) & {"!", "?"}}
                   | {ch * n for ch in "!?" for n in range(5, 65)})


#: A stretch of text without whitespace longer than this is tokenized in pieces of this many characters
#: (`_pieces`): spaCy's tokenizer takes time quadratic in a stretch's length (it peels affixes one at a time and
#: tries its URL pattern again on what is left: 0.6 s for 87,000 characters of URL-like text, about a minute for
#: 850,000, during which a service answers no one). No token of real text is this long.
LONG_STRETCH = 2000


class Token(NamedTuple):
    """A token of a document: ``text == document[start:end]`` (offsets in characters, not bytes).
    A named tuple: a document's tokens are made by the ten thousand, and a tuple is the cheapest
    immutable record to make."""

    text: str
    start: int
    end: int


def _spacy() -> Any:
    """The spacy module, imported here (not at module import) because it is an optional extra."""
    try:
        import spacy
    except ImportError:  # also `sys.modules["spacy"] = None`
        raise InputError(_INSTALL) from None
    return spacy


def pipeline(lang: str) -> Language:
    """The cached ``spacy.blank(lang)`` + ``sentencizer`` pipeline of ``lang``.

    Nothing else runs: a blank pipeline has no statistical component, and the sentencizer only looks
    at punctuation tokens. ``max_length`` is lifted because the limit guards the memory of parsers
    and NER models, which this pipeline does not have (the tokenizer is linear in the text).
    """
    nlp = _PIPELINES.get(lang)
    if nlp is not None:
        return nlp
    if not isinstance(lang, str) or not _LANG_CODE.match(lang):
        raise InputError(f"unknown language code {lang!r} for splitting raw text (expected e.g. 'en', 'es', 'nl')")
    spacy = _spacy()
    try:
        nlp = spacy.blank(lang)
    except ImportError as err:  # spaCy's own "no language named ..." or a missing tokenizer package
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InputError(f"unsupported language code {lang!r} for splitting raw text: {reason}") from None
    sentencizer_config: dict[str, Any] = {}
    if lang == "en":
        sentencizer_config["punct_chars"] = _adjust_english(nlp, spacy)
    nlp.add_pipe("sentencizer", config=sentencizer_config)
    nlp.max_length = sys.maxsize
    _PIPELINES[lang] = nlp
    return nlp


def _adjust_english(nlp: Language, spacy: Any) -> list[str]:
    """The EWT adjustments of the module's docstring, through spaCy's tokenizer API; returns the
    sentencizer's ``punct_chars`` (its defaults and the runs that end sentences)."""
    from spacy.pipeline.sentencizer import Sentencizer

    util = spacy.util
    defaults: Any = nlp.Defaults
    tokenizer: Any = nlp.tokenizer
    tokenizer.prefix_search = util.compile_prefix_regex([_SYMBOL_RUN, *defaults.prefixes]).search
    tokenizer.suffix_search = util.compile_suffix_regex([_SYMBOL_RUN, *defaults.suffixes]).search
    infixes = [_DIGIT_OPERATORS_NO_HYPHEN if p == _DIGIT_OPERATORS else p for p in defaults.infixes]
    tokenizer.infix_finditer = util.compile_infix_regex(infixes).finditer
    return [*Sentencizer.default_punct_chars, *_END_RUNS]


def tokenizer_name(lang: str) -> str:
    """What splits ``lang``'s text, with versions, for provenance and the README."""
    pipeline(lang)  # the same checks (language, spaCy installed) as splitting
    name = f"spacy {_spacy().__version__} blank({lang!r}) + sentencizer"
    if lang == "en":
        name += " (EWT adjustments: symbol runs one token, digit-digit hyphens kept)"
    return name


def _checked(texts: Iterable[str]) -> Iterator[str]:
    """The texts, refusing a non-string with the document's number (spaCy's own error names neither)."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise InputError(f"document {i + 1} is a {type(text).__name__}, not a str")
        yield text


def _doc_sentences(doc: Any) -> list[list[Token]]:
    """A spaCy Doc's sentences as lists of `Token`, whitespace dropped.

    spaCy keeps runs of whitespace other than one space as tokens of their own ("\\n\\n"): they are
    dropped here, and a gap holding two line breaks starts a new sentence. A token holding both
    whitespace and text (not seen from spaCy's rules, but cheap to guard) is cut at the whitespace.
    The Doc is read as integer columns (`Doc.to_array`: offset, length, sentence start), not token by
    token: a spaCy `Token` object per token costs more than the tokenizer itself.
    """
    from spacy.attrs import IDX, LENGTH, SENT_START

    text = doc.text
    if not len(doc):
        return []
    columns = doc.to_array([IDX, LENGTH, SENT_START]).tolist()
    sentences: list[list[Token]] = []
    current: list[Token] = []
    last_end = 0
    for start, length, sent_start in columns:
        if sent_start == 1 and current:
            sentences.append(current)
            current = []
        word = text[start:start + length]
        split = word.split()
        if not split:  # whitespace (or nothing)
            continue
        pieces = [(word, start)] if len(split) == 1 and len(split[0]) == length else \
            [(m.group(), start + m.start()) for m in re.finditer(r"\S+", word)]
        for piece, begin in pieces:
            # a gap of two characters or more may hold a blank line (one character cannot)
            if current and begin - last_end >= 2 and text.count("\n", last_end, begin) >= 2:
                sentences.append(current)
                current = []
            current.append(Token(piece, begin, begin + len(piece)))
            last_end = begin + len(piece)
    if current:
        sentences.append(current)
    return sentences


def split_texts(texts: Iterable[str], lang: str, *, batch_size: int = 256) -> Iterator[list[list[Token]]]:
    """For each document in `texts`, its sentences, each a list of Tokens with offsets into that document.

    Whitespace is never a token. Lazy over texts (streams): ``nlp.pipe`` reads ``batch_size``
    documents at a time, so a generator over a large file is never held whole. An empty or
    whitespace-only document gives no sentences (an empty list), so the output stays aligned with
    the input, one item per document.
    """
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, not {batch_size}")
    nlp = pipeline(lang)
    for doc in nlp.pipe(_pieces(nlp, _checked(texts)), batch_size=batch_size):
        yield _doc_sentences(doc)


def _pieces(nlp: Language, texts: Iterable[str]) -> Iterator[Any]:
    """The texts for ``nlp.pipe``; one with a stretch longer than `LONG_STRETCH` tokenized here instead: the text
    between such stretches by spaCy's tokenizer as it is (cut next to whitespace, so its tokens are those of the
    whole text), each stretch as tokens of `LONG_STRETCH` characters, in a Doc of the same text whose sentences
    the sentencizer finds."""
    from spacy.tokens import Doc

    long = re.compile(rf"\S{{{LONG_STRETCH + 1},}}")
    for text in texts:
        if len(text) <= LONG_STRETCH or not long.search(text):
            yield text
            continue
        words: list[str] = []
        spaces: list[bool] = []
        at = 0
        for m in [*long.finditer(text), None]:  # None: the text after the last stretch
            for token in nlp.make_doc(text[at:m.start() if m else len(text)]):
                words.append(token.text)
                spaces.append(bool(token.whitespace_))
            if m:
                cuts = range(m.start(), m.end(), LONG_STRETCH)
                words.extend(text[a:min(a + LONG_STRETCH, m.end())] for a in cuts)
                spaces.extend(False for _ in cuts)
                at = m.end()
        yield Doc(nlp.vocab, words=words, spaces=spaces)
