"""Dictionary features for segmentation: which lexicon words start, end or cover each character.

For every character t three values are computed: the length of the longest lexicon word that starts
at t (``lexb``), ends at t (``lexe``) and covers t strictly inside (``lexm``), "0" when there is none
and capped at `MAX_VALUE`. They become ordinary token columns, so templates use them like any other.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from structperc.errors import InputError
from structperc.features.atomic import KINDS, AtomicStats
from structperc.io.corpus import Corpus

LEX_COLUMNS = ("lexb", "lexe", "lexm")
MAX_VALUE = 5


class Lexicon:
    """A set of words (length ≥ 2) with its prefixes, for fast longest-match lookups.

    Examples
    --------
    >>> lex = Lexicon(["上海", "上海市", "体育局"])
    >>> lex.columns("上海市体育局")
    (['3', '0', '0', '3', '0', '0'], ['0', '2', '3', '0', '0', '3'], ['0', '3', '0', '0', '3', '0'])
    """

    def __init__(self, words: Iterable[str]):
        self.words = {w for w in words if len(w) >= 2}
        self.prefixes = {w[:k] for w in self.words for k in range(2, len(w))}
        self.max_len = max((len(w) for w in self.words), default=0)
        self._values = [str(min(k, MAX_VALUE)) for k in range(self.max_len + 1)]  # length → value

    def __len__(self) -> int:
        return len(self.words)

    def columns(self, text: str) -> tuple[list[str], list[str], list[str]]:
        """``lexb``, ``lexe``, ``lexm`` values for each character of ``text``."""
        n = len(text)
        lb, le, lm = [0] * n, [0] * n, [0] * n
        words, prefixes, max_len = self.words, self.prefixes, self.max_len
        for i in range(n - 1):
            for j in range(i + 2, min(n, i + max_len) + 1):
                piece = text[i:j]
                if piece in words:
                    k = j - i
                    if k > lb[i]:
                        lb[i] = k
                    if k > le[j - 1]:
                        le[j - 1] = k
                    for m in range(i + 1, j - 1):
                        if k > lm[m]:
                            lm[m] = k
                if piece not in prefixes:
                    break
        value = self._values
        return [value[v] for v in lb], [value[v] for v in le], [value[v] for v in lm]


def read_lexicon(path) -> list[str]:
    """One word per line (a second whitespace-separated field, e.g. a frequency, is allowed)."""
    from structperc.io.text import open_text_lines

    words = []
    for number, line in open_text_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) > 2 or (len(fields) == 2 and not fields[1].isdigit()):
            raise InputError("expected one word per line (optionally followed by a count)", str(path),
                             number)
        words.append(fields[0])
    if not words:
        raise InputError("the lexicon is empty", str(path))
    return words


class SegmentationDictionary:
    """The dictionary of a word segmenter (a `structperc.features.dictionary.ColumnDictionary`): its
    training words (for OOV scores), its lexicon (training words plus user words), which writes
    the ``lexb``/``lexe``/``lexm`` columns of every character (column ``char``), and which kinds of
    runs (`structperc.features.atomic.KINDS`) segmentation keeps whole (``atomic``: learnt from the
    training words; kinds not given are atomic)."""

    columns = LEX_COLUMNS

    def __init__(self, lexicon: Iterable[str], train_words: Iterable[str] = (),
                 atomic: dict[str, bool] | None = None):
        self.lexicon = sorted(set(lexicon))
        self.train_words = sorted(set(train_words))
        self.atomic = {kind: bool((atomic or {}).get(kind, True)) for kind in KINDS}
        self._lookup: Lexicon | None = None

    @property
    def lookup(self) -> Lexicon:
        if self._lookup is None:
            self._lookup = Lexicon(self.lexicon)
        return self._lookup

    def values(self, corpus: Corpus) -> dict[str, list[str]]:
        cols: list[list[str]] = [[], [], []]
        lookup = self.lookup
        for chars in corpus.sentences("char"):
            for store, vals in zip(cols, lookup.columns("".join(chars))):
                store.extend(vals)
        return dict(zip(LEX_COLUMNS, cols))

    def annotate(self, corpus: Corpus, values: dict[str, list[str]] | None = None) -> Corpus:
        values = values if values is not None else self.values(corpus)
        for name in LEX_COLUMNS:
            corpus = corpus.with_column(name, values[name])
        return corpus

    def to_json(self) -> dict:
        return {"train_words": self.train_words, "lexicon": self.lexicon, "atomic": self.atomic}

    @classmethod
    def from_json(cls, data: dict) -> "SegmentationDictionary":
        """The dictionary a model file keeps. Files written before runs were learnt have no
        ``atomic``: nothing says whether their training data split runs, so every kind is atomic,
        as in most segmentation standards (and the point of keeping them whole)."""
        atomic = data.get("atomic")
        return cls(list(data["lexicon"]), list(data["train_words"]),
                   dict(atomic) if isinstance(atomic, dict) else None)


class LexiconLearner:
    """Learns segmentation dictionaries from some of the training sentences (word lists), each
    with the user's own ``extra`` words (a `structperc.features.dictionary.DictionaryLearner`)."""

    columns = LEX_COLUMNS

    def __init__(self, sentences: list[list[str]], extra: Iterable[str] = ()):
        self.sentences = sentences
        self.extra = list(extra)
        self._stats: AtomicStats | None = None

    @property
    def stats(self) -> AtomicStats:
        """Run splits per sentence, counted once for every fold."""
        if self._stats is None:
            self._stats = AtomicStats(self.sentences)
        return self._stats

    def learn(self, sentences: np.ndarray) -> SegmentationDictionary:
        words = {w for i in sentences.tolist() for w in self.sentences[i]}
        return SegmentationDictionary(words | set(self.extra), words, self.stats.atomic(sentences))
