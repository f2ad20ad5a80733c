"""Dictionary features for segmentation: which lexicon words start, end or cover each character.

For every character t three values are computed: the length of the longest lexicon word that starts
at t (``lexb``), ends at t (``lexe``) and covers t strictly inside (``lexm``), "0" when there is none
and capped at `MAX_VALUE`. They become ordinary token columns, so templates use them like any other.

Further columns, opt-in (``extended``; issue #20's study, where none paid on held-out data):

* ``lexbs``/``lexes`` — *every* length (2 … `MAX_VALUE`, capped) of the lexicon words that start/end
  at t, e.g. ``"23"``: the longest match alone hides the shorter words that compete with it;
* ``chpos`` — how often the lexicon's words hold the character at their beginning, inside and at
  their end, and whether it is a word alone (`CHPOS_BUCKETS`): a profile that generalises to characters seen
  too rarely for their own weights, jackknifed like the rest;
* ``trun``/``tpos`` — the length of the run of characters of t's type (``chartype``: digits,
  Latin letters, punctuation, numerals …), capped at `MAX_VALUE`, and t's place in it (B/M/E/S).
  They do not depend on the lexicon, but come with it so that every segmentation column has one
  source.
"""
from __future__ import annotations

import functools
import itertools
from typing import Any, Iterable

import numpy as np

from structperc.errors import InputError
from structperc.features.atomic import KINDS, AtomicStats
from structperc.features.dictionary import parts, with_columns
from structperc.features.lexicon_match import MAX_FOLDS, LexiconMatcher, word_points
from structperc.features.templates import FUNCTIONS
from structperc.io.corpus import Corpus

LEX_COLUMNS = ("lexb", "lexe", "lexm")
#: The columns added by issue #20 (see the module's docstring).
EXTRA_COLUMNS = ("lexbs", "lexes", "chpos", "trun", "tpos")
SEG_COLUMNS = LEX_COLUMNS + EXTRA_COLUMNS
MAX_VALUE = 5
#: ``chpos`` buckets of a count of occurrences: 0, 1, 2–4, 5 or more.
CHPOS_BUCKETS = (0, 1, 2, 5)


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

    def length_sets(self, text: str) -> tuple[list[str], list[str]]:
        """``lexbs`` and ``lexes`` of each character of ``text``: every (capped) length of the words
        that start and end there. (Apart from `columns`, whose loop every model runs.)

        >>> Lexicon(["上海", "上海市", "海市"]).length_sets("上海市")
        (['23', '2', '0'], ['0', '2', '23'])
        """
        n = len(text)
        bs, es = [0] * n, [0] * n          # bit k set: a word of (capped) length k starts/ends here
        words, prefixes, max_len = self.words, self.prefixes, self.max_len
        for i in range(n - 1):
            for j in range(i + 2, min(n, i + max_len) + 1):
                piece = text[i:j]
                if piece in words:
                    bit = 1 << min(j - i, MAX_VALUE)
                    bs[i] |= bit
                    es[j - 1] |= bit
                if piece not in prefixes:
                    break
        return [_length_set(v) for v in bs], [_length_set(v) for v in es]


@functools.lru_cache(maxsize=None)
def _length_set(bits: int) -> str:
    """The lengths whose bits are set, e.g. ``"23"``; ``"0"`` for none."""
    return "".join(str(k) for k in range(2, MAX_VALUE + 1) if bits >> k & 1) or "0"


def _bucket(count: int) -> str:
    return str(sum(count >= b for b in CHPOS_BUCKETS[1:]))


def char_profiles(words: Iterable[str]) -> dict[str, str]:
    """``chpos`` of every character of ``words``: the buckets (`CHPOS_BUCKETS`) of its occurrences
    at the beginning, inside and at the end of the words, and whether it is a word alone.

    >>> char_profiles(["上海", "海", "上海市", "海市"])
    {'上': '2000', '海': '1111', '市': '0020'}
    """
    counts: dict[str, list[int]] = {}
    for w in words:
        if len(w) == 1:
            counts.setdefault(w, [0, 0, 0, 0])[3] = 1
            continue
        for at, ch in enumerate(w):
            c = counts.setdefault(ch, [0, 0, 0, 0])
            c[0 if at == 0 else 2 if at == len(w) - 1 else 1] += 1
    return {ch: _bucket(b) + _bucket(m) + _bucket(e) + str(s) for ch, (b, m, e, s) in counts.items()}


def type_runs(chars: list[str]) -> tuple[list[str], list[str]]:
    """``trun`` and ``tpos`` of each character: its type run's length (capped) and its place in it.

    >>> type_runs(list("第12届ab"))
    (['1', '2', '2', '1', '2', '2'], ['S', 'B', 'E', 'S', 'B', 'E'])
    """
    kind = FUNCTIONS["chartype"]
    types = [kind(ch) for ch in chars]
    n = len(types)
    run, pos = [""] * n, [""] * n
    i = 0
    while i < n:
        j = i + 1
        while j < n and types[j] == types[i]:
            j += 1
        length = str(min(j - i, MAX_VALUE))
        for m in range(i, j):
            run[m] = length
            pos[m] = "S" if j - i == 1 else "B" if m == i else "E" if m == j - 1 else "M"
        i = j
    return run, pos


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
    training words; kinds not given are atomic).

    With ``extended`` it also writes `EXTRA_COLUMNS`. They are opt-in because they double the time
    the columns take and none of them paid on held-out SXU data (``scripts/study_cws.py``); a
    dictionary without them writes, and saves, exactly what it did before they existed."""

    def __init__(self, lexicon: Iterable[str], train_words: Iterable[str] = (),
                 atomic: dict[str, bool] | None = None, extended: bool = False,
                 resource_words: Iterable[str] = (), resource: dict | None = None):
        # sets, sorted only when asked (`to_json`, reports): a jackknife fold's dictionary is looked
        # up, never saved, and ten folds' sorts of every training word cost more than their lookups
        #: a language resource's words (`structperc.features.resources`), in the lexicon and stored apart,
        #: deflated (`arrays`), with the resource's provenance (``resource``)
        self._resource_set = set(resource_words)
        self.resource = dict(resource) if resource else None
        self._lexicon_set = set(lexicon) | self._resource_set
        self._train_set = set(train_words)
        self.atomic = {kind: bool((atomic or {}).get(kind, True)) for kind in KINDS}
        self.extended = bool(extended)
        self._lookup: Lexicon | None = None
        self._profiles: dict[str, str] | None = None

    @functools.cached_property
    def lexicon(self) -> list[str]:
        """The dictionary's words, sorted: the training words and the user's."""
        return sorted(self._lexicon_set)

    @functools.cached_property
    def train_words(self) -> list[str]:
        """The training words, sorted (what OOV recall is measured against)."""
        return sorted(self._train_set)

    @property
    def columns(self) -> tuple[str, ...]:
        return SEG_COLUMNS if self.extended else LEX_COLUMNS

    @property
    def lookup(self) -> Lexicon:
        if self._lookup is None:
            self._lookup = Lexicon(self._lexicon_set)
        return self._lookup

    @functools.cached_property
    def matcher(self) -> LexiconMatcher:
        """The lexicon in compiled form (`structperc.features.lexicon_match`): the columns of a whole
        corpus in one pass."""
        return LexiconMatcher(list(self._lexicon_set))

    def word_source(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The lexicon's words for a table shared with other word lists (`structperc.features.dictionary.Dictionaries`,
        `structperc.features.lexicon_match.LexiconMatcher.of_sources`): their code points and lengths; None with
        the `EXTRA_COLUMNS`, which no table writes."""
        return None if self.extended else word_points(list(self._lexicon_set))

    @property
    def profiles(self) -> dict[str, str]:
        """``chpos`` of the lexicon's characters."""
        if self._profiles is None:
            self._profiles = char_profiles(self.lexicon)  # sorted: the profile counts do not depend on order
        return self._profiles

    def values(self, corpus: Corpus) -> dict[str, Any]:
        """The columns of ``corpus``: coded (``(distinct, codes)``, from the compiled matcher) for the
        three lexicon columns, lists with the `EXTRA_COLUMNS` (or tokens of more than one character)."""
        if not self.extended:
            coded = self.matcher.columns(corpus, max_value=MAX_VALUE)
            if coded is not None:
                return coded
        names = self.columns
        cols: list[list[str]] = [[] for _ in names]
        lookup = self.lookup
        profiles = self.profiles if self.extended else {}
        for chars in corpus.sentences("char"):
            text = "".join(chars)
            vals: tuple[list[str], ...] = lookup.columns(text)
            if self.extended:
                vals += lookup.length_sets(text) + ([profiles.get(ch, "0") for ch in text],) \
                    + type_runs(list(text))
            for store, v in zip(cols, vals):
                store.extend(v)
        return dict(zip(names, cols))

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    def to_json(self) -> dict:
        lexicon = self.lexicon if self.resource is None else sorted(self._lexicon_set - self._resource_set)
        data: dict[str, Any] = {"train_words": self.train_words, "lexicon": lexicon, "atomic": self.atomic}
        if self.extended:
            data["extended"] = True
        if self.resource is not None:
            data["resource"] = self.resource
        return data

    def arrays(self) -> dict[str, np.ndarray]:
        """The resource's words, sorted and deflated (none without a resource): `to_json` leaves them out."""
        if self.resource is None:
            return {}
        from structperc.features.resources.storage import pack_words

        return {"resource_words": pack_words(sorted(self._resource_set))}

    @classmethod
    def from_json(cls, data: dict, arrays: dict[str, np.ndarray] | None = None) -> "SegmentationDictionary":
        """The dictionary a model file keeps. Files written before runs were learnt have no
        ``atomic``: nothing says whether their training data split runs, so every kind is atomic,
        as in most segmentation standards (and the point of keeping them whole). Files without
        ``extended`` write the three original columns."""
        atomic = data.get("atomic")
        resource_words: list[str] = []
        if data.get("resource") is not None:
            from structperc.features.resources.storage import unpack_words

            if not arrays or "resource_words" not in arrays:
                raise ValueError("the lexicon's resource words are missing")
            resource_words = unpack_words(arrays["resource_words"])
        return cls(list(data["lexicon"]), list(data["train_words"]),
                   dict(atomic) if isinstance(atomic, dict) else None, bool(data.get("extended", False)),
                   resource_words, data.get("resource"))


def segmentation_dictionary(dictionary: Any) -> SegmentationDictionary | None:
    """The lexicon among a model's dictionaries (alone, or beside the accessor variety's), or None."""
    return next((p for p in parts(dictionary) if isinstance(p, SegmentationDictionary)), None)


class LexiconLearner:
    """Learns segmentation dictionaries from some of the training sentences (word lists), each
    with the user's own ``extra`` words (a `structperc.features.dictionary.DictionaryLearner`);
    ``extended``: dictionaries that also write `EXTRA_COLUMNS`."""

    def __init__(self, sentences: list[list[str]], extra: Iterable[str] = (), extended: bool = False,
                 resource_words: Iterable[str] = (), resource: dict | None = None):
        self.sentences = sentences
        self.resource_words = list(resource_words)
        self.resource = resource
        #: the words in every fold's lexicon: the user's and the resource's
        self.extra = list(extra) + self.resource_words
        self.extended = bool(extended)
        self._stats: AtomicStats | None = None
        self._word_ids: tuple[list[str], np.ndarray, np.ndarray] | None = None

    @property
    def columns(self) -> tuple[str, ...]:
        return SEG_COLUMNS if self.extended else LEX_COLUMNS

    @property
    def stats(self) -> AtomicStats:
        """Run splits per sentence, counted once for every fold."""
        if self._stats is None:
            self._stats = AtomicStats(self.sentences)
        return self._stats

    def learn(self, sentences: np.ndarray) -> SegmentationDictionary:
        words = self._words(sentences)
        return SegmentationDictionary(words | set(self.extra), words, self.stats.atomic(sentences),
                                      self.extended, self.resource_words, self.resource)

    def jackknife_values(self, corpus: Corpus, fold_of: np.ndarray, folds: int) -> dict[str, Any] | None:
        """Every fold's columns in one compiled pass (`structperc.features.dictionary.jackknifed` asks
        for them before computing fold by fold): the values that ``learn(other folds).values(fold)``
        gives each fold, or None where that pass does not apply (the `EXTRA_COLUMNS`, more folds than
        `~structperc.features.lexicon_match.MAX_FOLDS`). Each word carries the bit set of the folds its
        sentences are in; the user's words are in every fold's lexicon."""
        if self.extended or folds > MAX_FOLDS:
            return None
        distinct, ids, ptr = self._ids()
        token_fold = np.repeat(np.asarray(fold_of, dtype=np.int64), np.diff(ptr))
        masks = np.zeros(len(distinct), dtype=np.int64)
        np.bitwise_or.at(masks, ids, np.left_shift(np.int64(1), token_fold))
        extra = sorted(set(self.extra))
        matcher = LexiconMatcher(distinct + extra,
                                 np.concatenate([masks, np.full(len(extra), -1, dtype=np.int64)]))
        return matcher.columns(corpus, np.asarray(fold_of, dtype=np.int64), MAX_VALUE)

    def _ids(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The distinct words, every word's id, and each sentence's offset into those ids."""
        if self._word_ids is None:
            distinct = list(dict.fromkeys(itertools.chain.from_iterable(self.sentences)))
            code = {w: i for i, w in enumerate(distinct)}
            counts = np.fromiter(map(len, self.sentences), dtype=np.int64, count=len(self.sentences))
            ids = np.fromiter(map(code.__getitem__, itertools.chain.from_iterable(self.sentences)), dtype=np.int64,
                              count=int(counts.sum()))
            self._word_ids = (distinct, ids, np.concatenate([[0], np.cumsum(counts)]))
        return self._word_ids

    def _words(self, sentences: np.ndarray) -> set[str]:
        """The distinct words of ``sentences`` (indices), found on word ids: a fold (in a forked worker)
        reads integer arrays and the distinct words only, not every word object of the corpus (whose
        reference counts would copy the parent's pages)."""
        distinct, ids, ptr = self._ids()
        chosen = np.zeros(len(ptr) - 1, dtype=bool)
        chosen[np.asarray(sentences, dtype=np.int64)] = True
        used = np.zeros(len(distinct), dtype=bool)
        used[ids[np.repeat(chosen, np.diff(ptr))]] = True
        return {distinct[i] for i in np.flatnonzero(used).tolist()}
