"""Chinese word segmentation as B/M/E/S character tagging: `Segmenter`.

Dictionary features come from the training words themselves (the bakeoff's closed track allows it)
plus an optional user lexicon. Training sentences see a dictionary built from the *other* folds
(jackknifing): with their own words in the dictionary the features would always agree with the gold
segmentation and the model would trust them blindly, then fail on unknown words at test time.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from structperc.corpus.columns import Corpus
from structperc.corpus.segmented import read_segmented_corpus, words_to_tags
from structperc.errors import InputError
from structperc.lexicon import LEX_COLUMNS, Lexicon, read_lexicon
from structperc.tagger import Tagger, resolve_template
from structperc.trainer import EpochReport


def _corpus(texts: Sequence[str], lexicon: Lexicon | Sequence[Lexicon] | None,
            tags: Sequence[Sequence[str]] | None, fold_of: np.ndarray | None = None,
            source: str = "<memory>") -> Corpus:
    """Character columns (and lexicon columns unless ``lexicon`` is None, and tags) of ``texts``.

    ``lexicon`` may be one lexicon per fold, with ``fold_of`` giving each sentence's fold.
    """
    joined = "".join(texts)
    cols: dict[str, list[str]] = {"char": list(joined)}
    if lexicon is not None:
        lex_cols: list[list[str]] = [[], [], []]
        for i, text in enumerate(texts):
            lex = lexicon[int(fold_of[i])] if fold_of is not None else lexicon
            for store, values in zip(lex_cols, lex.columns(text)):
                store.extend(values)
        cols.update(zip(LEX_COLUMNS, lex_cols))
    if tags is not None:
        cols["tag"] = [t for sent in tags for t in sent]
        if len(cols["tag"]) != len(joined):
            raise InputError("tags and characters differ in number", source)
    ptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=ptr[1:])
    corpus = Corpus(cols, ptr, source)
    # Characters are factorized by code point in numpy (the generic per-token dict is the slow part
    # of segmenting large files).
    points = np.frombuffer(joined.encode("utf-32-le"), dtype=np.uint32)
    distinct, codes = np.unique(points, return_inverse=True)
    corpus._factorized["char"] = ([chr(c) for c in distinct.tolist()], codes.astype(np.int64).ravel())
    return corpus


def _reads_lexicon(template_lines: Sequence[str]) -> bool:
    """Whether templates read the dictionary columns (building them is most of the feature work)."""
    return any(col in line for line in template_lines for col in LEX_COLUMNS)


def _as_word_lists(X: Any) -> tuple[list[list[str]], str]:
    if isinstance(X, (str, os.PathLike)):
        sents, _ = read_segmented_corpus(X)
        return sents, str(X)
    sents = [s.split() if isinstance(s, str) else list(s) for s in X]
    sents = [s for s in sents if s]
    if not sents:
        raise InputError("no sentences to train on")
    return sents, "<memory>"


class Segmenter:
    """Chinese word segmenter trained with the averaged structured perceptron.

    Parameters (keyword-only)
    -------------------------
    template : str or list of str
        Template preset or lines (default ``"cws"``: characters, types, reduplication, dictionary).
    epochs, seed, min_count, dev_split
        As for `Tagger`.
    lexicon : str, path or iterable of str, optional
        Extra dictionary words (a file with one word per line, or a list).
    folds : int
        Jackknife folds for the training-word dictionary (1 disables jackknifing).
    feature_set : {"all", "observed"}
        State weights for every (attribute, label) pair or only for those seen in training (see
        `structperc.tagger.Tagger`).

    Examples
    --------
    >>> seg = Segmenter.train(["上海 体育局 召开 会议", "体育局 召开 会议"] * 3, epochs=3)
    >>> seg.segment("上海体育局召开会议")
    ['上海', '体育局', '召开', '会议']
    """

    def __init__(self, *, template: str | Sequence[str] = "cws", epochs: int | None = None,
                 seed: int = 0, min_count: int = 1, dev_split: float = 0.0,
                 lexicon: str | os.PathLike | Iterable[str] | None = None, folds: int = 10,
                 feature_set: str = "all"):
        self.template = template
        self.epochs = epochs
        self.seed = seed
        self.min_count = min_count
        self.dev_split = dev_split
        self.lexicon = lexicon
        self.folds = folds
        self.feature_set = feature_set

    def fit(self, X: Any, *, dev: Any = None, callback: Callable[[EpochReport], None] | None = None,
            checkpoint_dir: str | os.PathLike | None = None,
            resume: str | os.PathLike | None = None) -> "Segmenter":
        """Train on segmented sentences: a file (one sentence a line, words split by spaces), or a list
        of word lists or of space-separated strings."""
        if not isinstance(self.folds, int) or self.folds < 1:
            raise InputError(f"folds must be a positive integer, got {self.folds!r}")
        sents, source = _as_word_lists(X)
        user = self._user_words()
        lines = resolve_template(self.template)
        self._uses_lexicon = _reads_lexicon(lines)
        texts = ["".join(s) for s in sents]
        tags = [words_to_tags(s) for s in sents]
        folds = min(self.folds, len(sents))
        fold_of = np.random.default_rng(self.seed).permutation(len(sents)) % folds
        if not self._uses_lexicon:  # e.g. the hanlp-cws preset: no dictionary columns to build
            lexicons = None
        elif folds > 1:
            lexicons = [Lexicon([w for i, s in enumerate(sents) if fold_of[i] != k for w in s] + user)
                        for k in range(folds)]
        else:
            lexicons = [Lexicon([w for s in sents for w in s] + user)]
        corpus = _corpus(texts, lexicons, tags, fold_of, source)
        self.train_words_ = sorted({w for s in sents for w in s})
        self.lexicon_ = sorted(set(self.train_words_) | set(user))
        self._lex = Lexicon(self.lexicon_) if self._uses_lexicon else None
        dev_corpus = None
        if dev is not None:
            dev_sents, dev_source = _as_word_lists(dev)
            dev_corpus = _corpus(["".join(s) for s in dev_sents], self._lex,
                                 [words_to_tags(s) for s in dev_sents], source=dev_source)
        self.tagger_ = Tagger(task="cws", template=self.template, epochs=self.epochs, seed=self.seed,
                              min_count=self.min_count, dev_split=self.dev_split,
                              feature_set=self.feature_set)
        self.tagger_.fit(corpus, dev=dev_corpus, callback=callback, checkpoint_dir=checkpoint_dir,
                         resume=resume)
        self.tagger_.extra_ = {"cws": {"train_words": self.train_words_, "lexicon": self.lexicon_}}
        if isinstance(X, (str, os.PathLike)):
            from structperc.tagger import _sources
            self.tagger_.provenance_["sources"] = _sources(X, corpus)
        return self

    def _user_words(self) -> list[str]:
        if self.lexicon is None:
            return []
        if isinstance(self.lexicon, (str, os.PathLike)):
            return read_lexicon(self.lexicon)
        return [str(w) for w in self.lexicon]

    @classmethod
    def train(cls, X: Any, *, dev: Any = None, callback: Callable[[EpochReport], None] | None = None,
              **params) -> "Segmenter":
        """Construct with ``params`` and fit."""
        return cls(**params).fit(X, dev=dev, callback=callback)

    # ------------------------------------------------------------ segmentation
    def _check_fitted(self) -> None:
        if not hasattr(self, "tagger_"):
            raise RuntimeError("this Segmenter is not trained yet: call fit() or Segmenter.load()")

    def segment_texts(self, texts: Sequence[str]) -> list[list[str]]:
        """Words of each text; whitespace inside a text is a sure word boundary and is dropped."""
        self._check_fitted()
        chunks: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(texts):
            for piece in text.split():
                chunks.append(piece)
                owner.append(i)
        out: list[list[str]] = [[] for _ in texts]
        if not chunks:
            return out
        corpus = _corpus(chunks, self._lex, None)
        tagger = self.tagger_
        ids = tagger.weights_.predict(tagger.features_.transform(corpus))
        # A word starts at a B or S and after an E or S; chunk starts are starts too. (Constrained
        # decoding makes the two agree; taking both keeps ill-formed paths segmentable.)
        labels = tagger.labels_
        starts_word = np.array([lab in ("B", "S") for lab in labels])[ids]
        ends_word = np.array([lab in ("E", "S") for lab in labels])[ids]
        n = len(ids)
        cut = np.zeros(n + 1, dtype=bool)
        cut[:n] |= starts_word
        cut[1:] |= ends_word
        cut[corpus.sent_ptr] = True
        bounds = np.flatnonzero(cut).tolist()
        joined = "".join(chunks)
        words = [joined[a:b] for a, b in zip(bounds, bounds[1:])]
        word_chunk = np.searchsorted(corpus.sent_ptr, bounds[:-1], side="right") - 1
        for w, k in zip(words, word_chunk.tolist()):
            out[owner[k]].append(w)
        return out

    def segment(self, text: str) -> list[str]:
        """Words of one text."""
        if not isinstance(text, str):
            raise InputError("segment() takes a string")
        return self.segment_texts([text])[0]

    def segment_lines(self, lines: Iterable[str], batch: int = 2000) -> Iterator[list[str]]:
        """Segment a stream of lines in batches: memory stays flat however long the input is."""
        buf: list[str] = []
        for line in lines:
            buf.append(line)
            if len(buf) >= batch:
                yield from self.segment_texts(buf)
                buf = []
        if buf:
            yield from self.segment_texts(buf)

    # --------------------------------------------------------------- evaluation
    def evaluate(self, X: Any) -> dict:
        """Bakeoff scores on gold-segmented data: word P/R/F1, OOV rate, OOV and IV recall."""
        from structperc.metrics import word_scores

        gold, _ = _as_word_lists(X)
        pred = self.segment_texts(["".join(s) for s in gold])
        report = word_scores(gold, pred, set(self.train_words_))
        report["sentences"] = len(gold)
        return report

    # ---------------------------------------------------------- saving/loading
    def save(self, path: str | os.PathLike) -> Path:
        self._check_fitted()
        return self.tagger_.save(path)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Segmenter":
        from structperc.errors import ModelFormatError

        tagger = Tagger.load(path)
        extra = tagger.extra_.get("cws")
        if tagger.task_.name != "cws" or not isinstance(extra, dict):
            raise ModelFormatError(f"{path}: not a word segmentation model (task {tagger.task_.name!r})")
        seg = cls(template=tagger.template_lines_, seed=tagger.seed)
        seg.tagger_ = tagger
        seg.train_words_ = list(extra["train_words"])
        seg.lexicon_ = list(extra["lexicon"])
        seg._uses_lexicon = _reads_lexicon(tagger.template_lines_)
        seg._lex = Lexicon(seg.lexicon_) if seg._uses_lexicon else None
        return seg
