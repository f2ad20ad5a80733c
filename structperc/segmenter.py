"""Chinese word segmentation as B/M/E/S character tagging: `Segmenter`, a `Tagger` whose features
include the lexicon columns and whose input and output are words.

Dictionary features come from the training words themselves (the bakeoff's closed track allows it)
plus an optional user lexicon, jackknifed like every learnt dictionary (see
`structperc.features.dictionary`).
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Iterator, Sequence

import numpy as np

from structperc.errors import InputError, ModelFormatError
from structperc.features.lexicon import LexiconLearner, SegmentationDictionary, read_lexicon
from structperc.features.templates import resolve_template
from structperc.io.segmented import char_corpus, read_segmented_corpus
from structperc.labels.bmes import words_to_tags
from structperc import params
from structperc.model import schema
from structperc.model.task import get_task
from structperc.tagger import Callback, Tagger


def _as_word_lists(X: Any) -> tuple[list[list[str]], str]:
    if isinstance(X, (str, os.PathLike)):
        sents, _ = read_segmented_corpus(X)
        return sents, str(X)
    sents = [s.split() if isinstance(s, str) else list(s) for s in X]
    sents = [s for s in sents if s]
    if not sents:
        raise InputError("no sentences to train on")
    return sents, "<memory>"


def _gold_corpus(sents: list[list[str]], source: str):
    return char_corpus(["".join(s) for s in sents], [words_to_tags(s) for s in sents], source)


class Segmenter(Tagger):
    """Chinese word segmenter trained with the averaged structured perceptron.

    Parameters (keyword-only)
    -------------------------
    template : str or list of str
        Template preset or lines (default ``"cws"``: characters, types, reduplication, dictionary).
    epochs, seed, min_count, dev_split, feature_set
        As for `Tagger`.
    lexicon : str, path or iterable of str, optional
        Extra dictionary words (a file with one word per line, or a list).
    folds : int
        Jackknife folds for the training-word dictionary (1 disables jackknifing).

    Attributes
    ----------
    train_words_ : list of str
        The training words (what OOV recall is measured against).
    lexicon_ : list of str
        The dictionary the lexicon columns look words up in: training plus user words.

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
        super().__init__(task="cws", template=template, epochs=epochs, seed=seed, min_count=min_count,
                         dev_split=dev_split, feature_set=feature_set, folds=folds)
        self.lexicon = lexicon

    def get_params(self) -> dict:
        return {k: getattr(self, k) for k in ("template", "epochs", "seed", "min_count", "dev_split",
                                              "lexicon", "folds", "feature_set")}

    def _saved_params(self) -> dict:
        # the lexicon is saved as the dictionary; the model file keeps the `Tagger` parameter names
        return {"task": "cws", **{k: v for k, v in self.get_params().items()
                                  if k not in ("template", "lexicon")}}

    def fit(self, X: Any, y: Any = None, *, dev: Any = None, callback: Callback | None = None,
            checkpoint_dir: str | os.PathLike | None = None, resume: str | os.PathLike | None = None,
            **unused: Any) -> "Segmenter":
        """Train on segmented sentences: a file (one sentence a line, words split by spaces), or a list
        of word lists or of space-separated strings."""
        if not isinstance(self.folds, int) or isinstance(self.folds, bool) or self.folds < 1:
            raise InputError(f"folds must be a positive integer, got {self.folds!r}")
        sents, source = _as_word_lists(X)
        dev_corpus = _gold_corpus(*_as_word_lists(dev)) if dev is not None else None
        task = get_task("cws", epochs=self.epochs)
        params.check(self._saved_params(), task)
        lines = resolve_template(self.template or "cws")
        self._fit_corpus(_gold_corpus(sents, source), dev_corpus, X, task, lines, {},
                         LexiconLearner(sents, self._user_words()), callback, checkpoint_dir, resume)
        return self

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

    @property
    def tagger_(self) -> "Segmenter":
        """The tagger behind the segmenter: itself (kept for code written before it was one)."""
        self._check_fitted()
        return self

    def _dictionary(self) -> SegmentationDictionary:
        self._check_fitted()
        if not isinstance(self.dictionary_, SegmentationDictionary):
            raise ModelFormatError("not a word segmentation model: it has no segmentation dictionary")
        return self.dictionary_

    # ------------------------------------------------------------ segmentation
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
        corpus = char_corpus(chunks)
        ids = self.predict_ids(corpus)
        # A word starts at a B or S and after an E or S; chunk starts are starts too. (Constrained
        # decoding makes the two agree; taking both keeps ill-formed paths segmentable.)
        starts_word = np.array([lab in ("B", "S") for lab in self.labels_])[ids]
        ends_word = np.array([lab in ("E", "S") for lab in self.labels_])[ids]
        n = len(ids)
        cut = np.zeros(n + 1, dtype=bool)
        cut[:n] |= starts_word
        cut[1:] |= ends_word
        cut[corpus.sent_ptr] = True
        bounds = np.flatnonzero(cut).tolist()
        joined = "".join(chunks)
        word_chunk = np.searchsorted(corpus.sent_ptr, bounds[:-1], side="right") - 1
        for a, b, k in zip(bounds, bounds[1:], word_chunk.tolist()):
            out[owner[k]].append(joined[a:b])
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
    def evaluate(self, X: Any, y: Any = None, *, strict: bool = False) -> dict:
        """Bakeoff scores on gold-segmented data: word P/R/F1, OOV rate, OOV and IV recall."""
        from structperc.metrics import word_scores

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
        if model.task.name != "cws" or not isinstance(model.dictionary, SegmentationDictionary):
            raise ModelFormatError(f"{where}: not a word segmentation model (task {model.task.name!r})")
        return super().from_model(model)  # type: ignore[return-value]

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Segmenter":
        return cls.from_model(schema.read(path), str(path))
