"""Chinese word segmentation as B/M/E/S character tagging: `Segmenter`, a `Tagger` whose features
include the lexicon columns and whose input and output are words. The model may learn in the 6-tag
set instead (``encoding="bmes6"``, `structperc.labels.bmes6`); everything outside it stays BMES.

Dictionary features come from the training words themselves (the bakeoff's closed track allows it)
plus an optional user lexicon, jackknifed like every learnt dictionary (see
`structperc.features.dictionary`).
"""
from __future__ import annotations

import dataclasses
import itertools
import os
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from structperc import predict
from structperc.errors import InputError, ModelFormatError
from structperc.features.atomic import code_points, constrain
from structperc.features.dictionary import Dictionaries, DictionaryLearner, FixedLearner, Learners
from structperc.features.instances import template_columns
from structperc.features.lexicon import (
    SEG_COLUMNS,
    LexiconLearner,
    SegmentationDictionary,
    read_lexicon,
    segmentation_dictionary,
)
from structperc.features.resources import language
from structperc.features.resources.wordlist import DICTIONARY_COLUMNS, DictionaryWords
from structperc.features.task import get_task
from structperc.features.templates import language_lines, resolve_template
from structperc.features.user_dict import (
    Entry,
    UserDictSource,
    WordMatcher,
    char_mask,
    forced_boundaries,
    longest_word,
    parse_entry,
    user_words,
)
from structperc.features.variety import VarietyLearner, read_raw, variety_columns
from structperc.io.segmented import char_corpus, read_segmented_corpus, refuse_columns
from structperc.labels.bmes import bmes_codes
from structperc.model import schema
from structperc.tagger import Tagger
from structperc.train import config as params
from structperc.train.run import Callback, Progress

#: Whitespace-free pieces longer than this many characters are decoded in windows of at most this
#: many: decoding a piece costs memory in proportion to its length (hundreds of bytes a character),
#: and a window bounds it. Longer than any line of the SIGHAN bakeoff corpora (SXU: 790), so that
#: sentence-sized text is decoded whole, exactly as before windows.
WINDOW = 4096
#: Characters of context decoded on either side of a window and dropped: a character's features read
#: two characters around it and dictionary words up to the lexicon's longest (SXU: 24 characters), and
#: the Viterbi path forgets its start within a few words, so the decisions kept are those of the whole
#: piece.
OVERLAP = 64
#: Characters decoded per call (pieces and windows together): bounds the memory of one call.
BATCH_CHARS = 1 << 16
#: A window ends after sentence-final punctuation when there is some in its second half, else at
#: `WINDOW` characters.
SENTENCE_END = "。！？!?…"
_SENTENCE_END_POINTS = [ord(c) for c in SENTENCE_END]

Window = tuple[int, int, int, int, int]   # piece, decoded from, kept from, kept to, decoded to
#: How a per-call user dictionary is applied (`Segmenter.segment_texts`).
USER_DICT_MODES = ("hard", "soft")


@dataclasses.dataclass
class _UserDict:
    """A call's user dictionary, resolved once (a file read, a matcher built) for all its batches:
    the words forced (hard) and the model whose lexicon holds the soft words (None: the segmenter's)."""

    hard: WordMatcher | None = None
    model: schema.Model | None = None


def window_bounds(text: str, size: int = WINDOW) -> list[int]:
    """Where the windows of ``text`` start and end: ``[0, …, len(text)]``, each window at most
    ``size`` characters, ending after sentence-final punctuation in its second half if there is any.

    >>> window_bounds("一二。三四五六。七", 4)
    [0, 3, 7, 9]
    >>> window_bounds("一二三四五六七", 3)
    [0, 3, 6, 7]
    """
    n = len(text)
    if n <= size:
        return [0, n]
    ends = np.flatnonzero(np.isin(code_points(text), _SENTENCE_END_POINTS)) + 1
    bounds = [0]
    while n - bounds[-1] > size:
        start = bounds[-1]
        k = int(np.searchsorted(ends, start + size, side="right")) - 1
        bounds.append(int(ends[k]) if k >= 0 and ends[k] > start + size // 2 else start + size)
    bounds.append(n)
    return bounds


def _windows(pieces: Sequence[str], size: int, overlap: int) -> Iterator[Window]:
    """The windows of every piece, in text order, with ``overlap`` characters of context each side."""
    for p, piece in enumerate(pieces):
        bounds = window_bounds(piece, size)
        n = len(piece)
        for a, z in zip(bounds, bounds[1:]):
            yield p, max(0, a - overlap), a, z, min(n, z + overlap)


def _batches(windows: Iterable[Window], chars: int) -> Iterator[list[Window]]:
    """Consecutive windows in groups of about ``chars`` decoded characters."""
    batch: list[Window] = []
    size = 0
    for w in windows:
        batch.append(w)
        size += w[4] - w[1]
        if size >= chars:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _words(text: str, cut: np.ndarray, text_ptr: np.ndarray) -> list[list[str]]:
    """The words of each text ``text[text_ptr[i]:text_ptr[i + 1]]`` by the word starts ``cut`` (boundaries of
    ``text``, true at every ``text_ptr``): the boundaries found and made Python integers once for all the texts,
    not once per text (18,270 lines of SXU test x5: three numpy calls each)."""
    bounds = np.flatnonzero(cut)
    first = np.searchsorted(bounds, text_ptr).tolist()
    at = bounds.tolist()
    out = []
    for i, j in zip(first, first[1:]):
        ends = at[i:j + 1]
        out.append([text[x:y] for x, y in zip(ends, ends[1:])])
    return out


def _as_word_lists(X: Any) -> tuple[list[list[str]], str]:
    if isinstance(X, (str, os.PathLike)):
        if os.path.isfile(X):  # not standard input: it is read once
            refuse_columns(X)
        sents, _ = read_segmented_corpus(X)
        return sents, str(X)
    sents = [s.split() if isinstance(s, str) else list(s) for s in X]
    sents = [s for s in sents if s]
    if not sents:
        raise InputError("no sentences (every text is empty)")
    return sents, "<memory>"


def _gold_corpus(sents: list[list[str]], source: str):
    lengths = np.fromiter(map(len, itertools.chain.from_iterable(sents)), dtype=np.int64)
    return char_corpus(["".join(s) for s in sents], bmes_codes(lengths), source)


#: Why lexicon words would change nothing: the templates read none of the lexicon's columns (`SEG_COLUMNS`).
_NO_LEXICON_COLUMNS = ("{what} the lexicon columns (lexb, lexe, lexm, …), which the model's templates do not read: "
                       "they would change nothing (the cws preset reads them)")
#: Why a `Segmenter` refuses a tagger's calls on sentences of tokens.
_NOT_A_TAGGER = ("a Segmenter segments text: segment(text), segment_texts(texts) or segment_lines(lines); it does "
                 "not tag sentences of tokens")


class Segmenter(Tagger):
    """Chinese word segmenter trained with the averaged structured perceptron.

    Parameters (keyword-only)
    -------------------------
    template : str or list of str
        Template preset or lines (default ``"cws"``: characters, types, reduplication, dictionary).
    epochs, seed, min_count, dev_split, feature_set, step, margin, C
        As for `Tagger`.
    lexicon : str, path or iterable of str, optional
        Extra dictionary words (a file with one word per line, or a list).
    folds : int
        Jackknife folds for the training-word dictionary (1 disables jackknifing).
    raw : str, path or iterable of str, optional
        Unsegmented text (a file, one sentence a line, or a list of texts) added to the training text's
        accessor variety statistics, when the templates read ``av*`` columns
        (`structperc.features.variety`).
    encoding : {"bmes", "bmes6"}
        The tags the model learns and decodes in: B/M/E/S, or the 6-tag set B, B2, B3, M, E, S of
        Zhao et al. (2006), which tells the transitions how far into a word a character is
        (`structperc.labels.bmes6`). Input, output and scores are words either way.
    lang : str, optional
        A language whose dictionary enters the lexicon columns (``"zh"``: jieba's words;
        `structperc.features.resources.language`); the model carries the words, so segmenting
        needs no extra package. A language without a word list is refused.

    Attributes
    ----------
    train_words_ : list of str
        The training words (what OOV recall is measured against).
    lexicon_ : list of str
        The dictionary the lexicon columns look words up in: training plus user words.
    atomic_ : dict of str to bool
        Whether segmentation keeps runs of Latin letters (``"latin"``) and of digits (``"digit"``)
        whole: yes unless the training data splits them (`structperc.features.atomic`).

    Examples
    --------
    >>> seg = Segmenter.train(["上海 体育局 召开 会议", "体育局 召开 会议"] * 3, epochs=3)
    >>> seg.segment("上海体育局召开会议")
    ['上海', '体育局', '召开', '会议']
    """

    def __init__(self, *, template: str | Sequence[str] = "cws", epochs: int | None = None,
                 seed: int = 0, min_count: int = 1, dev_split: float = 0.0,
                 lexicon: str | os.PathLike | Iterable[str] | None = None, folds: int = 10,
                 feature_set: str = "all", step: str = "perceptron", margin: float = 0.0, C: float = 1.0,
                 raw: str | os.PathLike | Iterable[str] | None = None, encoding: str = "bmes",
                 lang: str | None = None):
        super().__init__(task="cws", template=template, epochs=epochs, seed=seed, min_count=min_count,
                         dev_split=dev_split, feature_set=feature_set, folds=folds, step=step, margin=margin, C=C,
                         encoding=encoding)
        self.lexicon = lexicon
        self.raw = raw
        self.lang = lang
        self._added_words: dict[str, Entry] = {}
        self._added_matcher: WordMatcher | None = None
        self._soft_cache: tuple[Any, schema.Model] | None = None

    def _saved_params(self) -> dict:
        # the lexicon and the raw text are saved as the dictionaries; the model file keeps the `Tagger`
        # parameter names; the encoding is the model's own (`Task.encoding`), and a BMES model's
        # parameters stay as they were before there was a choice
        return {"task": "cws", **{k: v for k, v in self.get_params().items()
                                  if k not in ("template", "lexicon", "raw")
                                  and not (k == "encoding" and v in (None, "bmes"))
                                  and not (k == "lang" and v is None)}}

    def fit(self, X: Any, y: Any = None, *, dev: Any = None, callback: Callback | None = None,
            progress: Progress | None = None, checkpoint_dir: str | os.PathLike | None = None,
            resume: str | os.PathLike | None = None, workers: int = 1, mixing: str | None = None,
            dask: Any = None, **tagger_only: Any) -> "Segmenter":
        """Train on segmented sentences: a file (one sentence a line, words split by spaces), or a list
        of word lists or of space-separated strings. (`Tagger.fit`'s column and dataset arguments
        have no meaning here and are refused; ``workers``, ``mixing`` and ``dask`` are as there.)"""
        given = sorted(k for k, v in tagger_only.items() if v is not None and k != "tokens")
        if y is not None or given:
            raise TypeError(f"Segmenter.fit takes segmented text, not {', '.join(given) or 'y'}")
        task = get_task("cws", epochs=self.epochs, encoding=self.encoding)
        params.check(self._saved_params(), task, data=X, dev=dev is not None, checkpoint_dir=checkpoint_dir,
                     resume=resume, workers=workers, mixing=mixing, dask=dask, segmenter=True)
        sents, source = _as_word_lists(X)
        dev_corpus = _gold_corpus(*_as_word_lists(dev)) if dev is not None else None
        lines = resolve_template(self.template or "cws")
        if self.lang is not None:
            lines = lines + [x for x in language_lines(self.template or "cws", "cws", [language.SEGMENTER_KIND])
                             if x not in lines]
        self._fit_corpus(_gold_corpus(sents, source), dev_corpus, X, task, lines, {},
                         self._learner(sents, lines), callback, checkpoint_dir, resume,
                         progress, dict(workers=workers, mixing=mixing, dask=dask))
        self._record_resources()
        return self

    def _learner(self, sents: list[list[str]], lines: list[str]) -> DictionaryLearner:
        """The lexicon's learner, with the accessor variety's when the templates read ``av*`` columns."""
        words, resource = language.language_words(self.lang) if self.lang is not None else ([], None)
        into = language.WORDS_IN_LEXICON
        lexicon = LexiconLearner(sents, self._user_words(), resource_words=words if into else [],
                                 resource=resource if into else None)
        learners: list[DictionaryLearner] = [lexicon]
        reads = template_columns(lines)
        if self.lexicon is not None and not set(SEG_COLUMNS) & reads:
            raise InputError(_NO_LEXICON_COLUMNS.format(what="the words of lexicon (--lexicon) go into"))
        if self.lang is not None and set(DICTIONARY_COLUMNS) & reads:
            learners.append(FixedLearner(DictionaryWords(words, resource=resource)))
        av = variety_columns(reads)
        if av:
            learners.append(VarietyLearner(["".join(s) for s in sents], av, self._raw_texts()))
        return learners[0] if len(learners) == 1 else Learners(learners)

    def _raw_texts(self) -> list[str]:
        if self.raw is None:
            return []
        if isinstance(self.raw, (str, os.PathLike)):
            return read_raw(self.raw)
        return ["".join(str(t).split()) for t in self.raw if str(t).strip()]

    def _user_words(self) -> list[str]:
        if self.lexicon is None:
            return []
        if isinstance(self.lexicon, (str, os.PathLike)):
            return read_lexicon(self.lexicon)
        return [str(w) for w in self.lexicon]

    def _set_model(self, model: schema.Model) -> None:
        super()._set_model(model)
        self.train_words_ = self._dictionary().train_words
        self.lexicon_ = self._dictionary().lexicon
        self.atomic_ = dict(self._dictionary().atomic)

    @property
    def tagger_(self) -> "Segmenter":
        """The tagger behind the segmenter: itself (kept for code written before it was one)."""
        self._check_fitted()
        return self

    def _dictionary(self) -> SegmentationDictionary:
        self._check_fitted()
        found = segmentation_dictionary(self.dictionary_)
        if found is None:
            raise ModelFormatError("not a word segmentation model: it has no segmentation dictionary")
        return found

    # ------------------------------------------------------------ segmentation
    def segment_texts(self, texts: Sequence[str], user_dict: UserDictSource | None = None,
                      user_dict_mode: str = "hard") -> list[list[str]]:
        """Words of each text.

        Whitespace is a sure word boundary and is dropped; no word boundary falls inside a run of
        Latin letters or of digits (unless the training data splits such runs: `atomic_`) nor inside a
        URL or e-mail address (see `structperc.features.atomic`). Pieces longer than `WINDOW`
        characters are decoded in windows, and pieces are decoded `BATCH_CHARS` characters at a time,
        so memory beyond the words returned stays flat however long a text is.

        ``user_dict`` (words, or a path to a file in jieba's format, `structperc.features.user_dict`)
        applies the user's words to this call, so that a word the model does not know comes back
        whole without retraining:

        - ``user_dict_mode="hard"`` (default): every occurrence is exactly one word, unless it crosses
          whitespace (then it is ignored). Overlapping occurrences: leftmost first, the longest word at
          a position (`structperc.features.user_dict`). The words are forced by constrained decoding, so
          the rest of the sentence is decoded at its best around them; a forced word beats the atomic
          runs (a user word ``AB`` cuts ``ABC`` into ``AB`` and ``C``).
        - ``"soft"``: the words join the lexicon columns the model reads (for this call only), which
          makes them likelier words without forcing them.

        The words of `add_word` are forced in every call, whatever the mode.
        """
        self._check_fitted()
        return self._segment(texts, self._resolve(user_dict, user_dict_mode))

    def _resolve(self, user_dict: UserDictSource | None, mode: str) -> _UserDict:
        """A call's user dictionary with the words of `add_word`, read and compiled once."""
        if mode not in USER_DICT_MODES:
            raise InputError(f"user_dict_mode must be one of {', '.join(USER_DICT_MODES)}, not {mode!r}")
        words = user_words(user_dict)
        if mode == "soft":
            if words and not set(SEG_COLUMNS) & template_columns(self.model_.templates):
                raise InputError(_NO_LEXICON_COLUMNS.format(what="soft user words (user_dict_mode 'soft') go into")
                                 + "; hard mode (the default) forces the words")
            return _UserDict(self._added(), self._soft_model(words) if words else None)
        if not words:
            return _UserDict(self._added())
        return _UserDict(WordMatcher([*self._added_words, *words]))

    def _soft_model(self, words: list[str]) -> schema.Model:
        """The model with ``words`` added to its lexicon (a copy: the loaded model is left alone); the
        last one is kept, since compiling a large lexicon costs more than segmenting a batch."""
        key = (id(self._model), frozenset(words))
        if self._soft_cache is not None and self._soft_cache[0] == key:
            return self._soft_cache[1]
        model = self.model_
        d = self._dictionary()
        wider = SegmentationDictionary([*d.lexicon, *words], d.train_words, d.atomic, d.extended)
        # a copy for this word set: its parts match apart, jieba's words through the table the model's part keeps
        dictionary: Any = wider if model.dictionary is d else \
            Dictionaries([wider if p is d else p for p in model.dictionary.parts],  # type: ignore[union-attr]
                         together=False)
        soft = dataclasses.replace(model, dictionary=dictionary)
        self._soft_cache = (key, soft)
        return soft

    def _segment(self, texts: Sequence[str], user: _UserDict) -> list[list[str]]:
        pieces: list[str] = []
        n_pieces = np.zeros(len(texts) + 1, dtype=np.int64)
        if isinstance(texts, str):
            raise InputError("segment_texts() takes a list of strings, not one string (segment() takes one)")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputError(f"texts[{i}] is {type(text).__name__}, not a string")
            split = text.split()
            pieces.extend(split)
            n_pieces[i + 1] = len(split)
        piece_ptr = np.zeros(len(pieces) + 1, dtype=np.int64)
        np.cumsum([len(p) for p in pieces], out=piece_ptr[1:])
        joined = "".join(pieces)
        forced = forced_boundaries(user.hard, pieces, piece_ptr, longest_word(self.labels_)) \
            if user.hard else None
        cut = self._model_cuts(pieces, piece_ptr, forced[::2] if forced else None, user.model)
        kinds = [kind for kind, whole in self.atomic_.items() if whole]
        constrain(cut, joined, kinds, piece_ptr[1:-1])
        if forced is not None:                     # the user's words beat the atomic runs
            must, never, _ = forced
            cut[must] = True
            cut[never] = False
        cut[piece_ptr] = True                      # after `constrain`: whitespace beats everything
        text_ptr = piece_ptr[np.cumsum(n_pieces)]
        return _words(joined, cut, text_ptr)

    def _model_cuts(self, pieces: list[str], piece_ptr: np.ndarray,
                    forced: tuple[np.ndarray, np.ndarray] | None = None,
                    model: schema.Model | None = None) -> np.ndarray:
        """Where the model starts words in the joined pieces (``n + 1`` boundaries), decoded in
        batches of about `BATCH_CHARS` characters; each window of a long piece is decoded with
        `OVERLAP` characters of context on either side, and only its own characters are kept.

        ``forced`` (boundaries that must and must not start a word, `forced_boundaries`) restricts
        the labels of the characters around them; a window's own edges are left free (the decoder
        starts and ends a word there anyway, and a forced word cut by a window edge is in the
        context, whose decisions are dropped). ``model``: decode with it instead (soft words)."""
        cut = np.zeros(int(piece_ptr[-1]) + 1, dtype=bool)
        for batch in _batches(_windows(pieces, WINDOW, OVERLAP), BATCH_CHARS):
            allowed = self._batch_mask(batch, piece_ptr, forced) if forced is not None else None
            starts = self._word_starts([pieces[p][lo:hi] for p, lo, _, _, hi in batch], allowed, model)
            keep = np.ones(len(starts), dtype=bool)
            at = 0
            for _, lo, a, z, hi in batch:
                keep[at:at + a - lo] = False
                keep[at + z - lo:at + hi - lo] = False
                at += hi - lo
            first = int(piece_ptr[batch[0][0]]) + batch[0][2]   # the windows' cores tile the text
            cut[first:first + int(keep.sum())] = starts[keep]
        return cut

    def _batch_mask(self, batch: list[Window], piece_ptr: np.ndarray,
                    forced: tuple[np.ndarray, np.ndarray]) -> np.ndarray | None:
        """The allowed labels (n_chars, L) of a batch's windows under ``forced``, or None when no
        forced word touches the batch."""
        must, never = forced
        parts: list[list[np.ndarray]] = [[], [], [], []]
        touched = False
        for p, lo, _, _, hi in batch:
            g0, g1 = int(piece_ptr[p]) + lo, int(piece_ptr[p]) + hi
            m, v = must[g0:g1 + 1].copy(), never[g0:g1 + 1].copy()
            m[[0, -1]] = v[[0, -1]] = False           # the window's edges stay free
            touched = touched or bool(m.any() or v.any())
            for store, row in zip(parts, (m[:-1], v[:-1], m[1:], v[1:])):
                store.append(row)
        if not touched:
            return None
        return char_mask(self.labels_, *(np.concatenate(rows) for rows in parts))

    def _word_starts(self, texts: list[str], allowed: np.ndarray | None = None,
                     model: schema.Model | None = None) -> np.ndarray:
        """Whether a word starts at each character of ``texts`` (one after the other), as decoded: at
        a B or S, after an E or S, and at the start of every text. (Constrained decoding makes the
        first two agree; taking both keeps ill-formed paths segmentable. In the 6-tag set B2, B3 and
        M, like BMES's M, neither start nor end a word.) ``allowed`` restricts the labels of the
        characters it constrains (elsewhere the model's tag dictionary applies, if it has one);
        ``model`` replaces the segmenter's (soft user words)."""
        corpus = char_corpus(texts)
        ids: np.ndarray
        if allowed is None and model is None:
            ids = self.predict_ids(corpus)
        else:
            model = model if model is not None else self.model_
            if allowed is not None and model.tag_dictionary is not None:
                base = predict.constraint_mask(model, corpus)
                if base is not None:
                    free = np.asarray(allowed.all(axis=1), dtype=bool).reshape(-1, 1)
                    allowed = np.where(free, base, allowed)
            ids = predict.best_ids(model, corpus, allowed)
        starts = np.array([lab in ("B", "S") for lab in self.labels_])[ids]
        starts[1:] |= np.array([lab in ("E", "S") for lab in self.labels_])[ids[:-1]]
        starts[corpus.sent_ptr[:-1]] = True
        return starts

    def segment(self, text: str, user_dict: UserDictSource | None = None,
                user_dict_mode: str = "hard") -> list[str]:
        """Words of one text (``user_dict``, ``user_dict_mode``: as for `segment_texts`)."""
        if not isinstance(text, str):
            raise InputError("segment() takes a string")
        return self.segment_texts([text], user_dict, user_dict_mode)[0]

    def segment_lines(self, lines: Iterable[str], batch: int = 2000, user_dict: UserDictSource | None = None,
                      user_dict_mode: str = "hard") -> Iterator[list[str]]:
        """Segment a stream of lines in batches of ``batch`` lines or `BATCH_CHARS` characters, whichever
        comes first: memory stays flat however long the input is. ``user_dict`` and ``user_dict_mode``
        are as for `segment_texts`; a dictionary file is read once, before the first line."""
        self._check_fitted()
        user = self._resolve(user_dict, user_dict_mode)
        buf: list[str] = []
        size = 0
        for number, line in enumerate(lines, 1):
            if not isinstance(line, str):
                raise InputError(f"line {number} is {type(line).__name__}, not a string")
            buf.append(line)
            size += len(line)
            if len(buf) >= batch or size >= BATCH_CHARS:
                yield from self._segment(buf, user)
                buf, size = [], 0
        if buf:
            yield from self._segment(buf, user)

    # ------------------------------------------------------------ the user's words
    def add_word(self, word: str, freq: int | None = None, tag: str | None = None) -> None:
        """Force ``word`` in every later ``segment*`` call (hard mode, beside a call's ``user_dict``),
        as jieba's ``add_word`` does: a word that is not in the training data comes back whole with no
        retraining. ``freq`` and ``tag`` are kept for the user (jieba's columns) and do not change
        segmentation. The words live in this object only: `save` does not write them (the model file
        is the training's), so add them again after `load`."""
        if not isinstance(word, str):
            raise InputError(f"add_word() takes a word (a string), not {type(word).__name__}")
        line = " ".join([word, *([] if freq is None else [str(freq)]), *([] if tag is None else [tag])])
        try:
            entry = parse_entry(line)
        except InputError:
            entry = None
        if entry is None or entry.word != word or (freq is not None and entry.freq != freq) \
                or (tag is not None and entry.tag != tag):
            raise InputError(f"add_word(): {word!r} (frequency {freq!r}, tag {tag!r}) is not a word of "
                             "a user dictionary: a word has no whitespace, a frequency is a whole number "
                             "and a tag letters")
        self._added_words[word] = entry
        self._added_matcher = None

    def del_word(self, word: str) -> None:
        """Stop forcing a word of `add_word` (a word never added: nothing happens). It does not remove
        a word the model learnt: only what `add_word` added."""
        if self._added_words.pop(word, None) is not None:
            self._added_matcher = None

    @property
    def added_words(self) -> dict[str, Entry]:
        """The words of `add_word` (a copy), each with its frequency and tag."""
        return dict(self._added_words)

    def _added(self) -> WordMatcher | None:
        if not self._added_words:
            return None
        if self._added_matcher is None:
            self._added_matcher = WordMatcher(self._added_words)
        return self._added_matcher

    # --------------------------------------------------------------- what a tagger has and a segmenter has not
    # (the message of `predict` and `tag_texts`: `_NOT_A_TAGGER`)
    def partial_fit(self, *args: Any, **kwargs: Any) -> "Segmenter":  # type: ignore[override]
        """Refused: continued training of a segmenter is not supported (`Tagger.partial_fit` would ask for the
        columns a segmenter makes for itself)."""
        raise InputError("continued training of a word segmentation model is not supported: train a new one "
                         "(Segmenter.fit)")

    def predict(self, X: Any, **kwargs: Any) -> list[list[str]]:  # type: ignore[override]
        """Refused: a segmenter segments text (`segment`, `segment_texts`, `segment_lines`); `Tagger.predict`
        (and ``tag``, ``tag_texts``, ``tag_dataset`` through it) would ask for the columns it makes for itself."""
        raise InputError(_NOT_A_TAGGER)

    def tag_texts(self, texts: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Refused, as `predict`."""
        raise InputError(_NOT_A_TAGGER)

    # --------------------------------------------------------------- evaluation
    def evaluate(self, X: Any, y: Any = None, *, strict: bool = False, calibration: bool = False) -> dict:
        """Bakeoff scores on gold-segmented data: word P/R/F1, OOV rate, OOV and IV recall
        (``calibration`` is a tagger's: words have no token confidence here; ``strict``, seqeval's span mode, is
        refused: words have one way to be right)."""
        from structperc.metrics import word_scores

        if strict:
            raise InputError("--strict (strict) is seqeval's mode for spans: a segmenter's word F1 has none")

        gold, _ = _as_word_lists(X)
        pred = self.segment_texts(["".join(s) for s in gold])
        report = word_scores(gold, pred, set(self.train_words_))
        report["sentences"] = len(gold)
        return report

    def score(self, X: Any, y: Any = None) -> float:
        """Word F1."""
        return self.evaluate(X)["f1"]

    @classmethod
    def from_model(cls, model: schema.Model, where: str = "this model") -> "Segmenter":
        if model.task.name != "cws" or segmentation_dictionary(model.dictionary) is None:
            raise ModelFormatError(f"{where}: not a word segmentation model (task {model.task.name!r})")
        segmenter = super().from_model(model)
        segmenter.encoding = model.task.model_scheme  # models from before the choice: BMES
        return segmenter  # type: ignore[return-value]

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Segmenter":
        return cls.from_model(schema.read(path), str(path))

    def explain(self, text: str, *, forced: Mapping[int, str] | None = None,
                allowed: Mapping[int, Iterable[str]] | None = None) -> dict:
        """Why the characters of ``text`` (one piece, no whitespace) get their B/M/E/S tags, as
        `Tagger.explain` says it of tokens (the model's decisions, before the atomic runs and the user's
        words: `structperc.predict.explain`); ``forced``/``allowed`` constrain characters' tags
        ({position: "B"}) as `Tagger.explain`'s constrain tokens'."""
        from structperc.predict.explain import explain_text

        return explain_text(self.model_, text, forced=forced, allowed=allowed)
