"""Word tables as model arrays: a resource a model carries is stored compactly, as data.

A model trained with a language resource keeps every word of the resource it reads (words the
training data never saw are the point of the resource), so tagging needs no package. A million-word
table as a JSON list would be most of the model file (the archive stores its members uncompressed:
`structperc.model.archive`); here the words, sorted so that neighbours share prefixes, are joined by
newlines and deflated (zlib, RFC 1950) into one ``uint8`` array: the English clusters' 190,129 words
take under 1 MB.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import itertools
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, NamedTuple

import numpy as np

from structperc.compiled import loader
from structperc.compiled.boundary import freeze
from structperc.io.corpus import Corpus

_SEP = "\n"
_SEP_BYTE = _SEP.encode()


def pack_words(words: Iterable[str]) -> np.ndarray:
    """``words`` (in the order given) as one deflated ``uint8`` array; a word may not hold a newline.

    Examples
    --------
    >>> unpack_words(pack_words(["a", "b c", "汉字"]))
    ['a', 'b c', '汉字']
    """
    return pack_text(words_text(words))


def words_text(words: Iterable[str]) -> str:
    """The text `pack_words` stores: every word ended by the separator (a newline), so that no words and one
    empty word differ; a word holding a newline raises ValueError."""
    words = list(words)
    if any(_SEP in w for w in words):
        raise ValueError("a stored word cannot hold a newline")
    return "".join(w + _SEP for w in words)


def pack_text(text: str) -> np.ndarray:
    """A `words_text` deflated, as `pack_words` stores it."""
    return np.frombuffer(zlib.compress(text.encode("utf-8"), 9), dtype=np.uint8).copy()


def count_words(text: str) -> int:
    """How many words a `words_text` holds, without splitting it."""
    return text.count(_SEP)


def unpack_words(array: np.ndarray) -> list[str]:
    """The words `pack_words` stored; damage raises ValueError."""
    return text_words(unpack_text(array))


def unpack_text(array: np.ndarray) -> str:
    """The text `pack_words` deflated, checked to be UTF-8 ending with the separator, not split (a caller that
    reads the words from the text's code points makes no string per word); damage raises ValueError."""
    return _decoded(_inflate_bytes(array))


def _decoded(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"damaged word table ({e})") from None


def _inflate_bytes(array: np.ndarray) -> bytes:
    """The bytes `pack_words` deflated, checked to end with the separator (not decoded: a lookup compares
    bytes, `probe_words`)."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim != 1:
        raise ValueError("a word table is a one-dimensional uint8 array")
    try:
        data = zlib.decompress(array.tobytes())
    except zlib.error as e:
        raise ValueError(f"damaged word table ({e})") from None
    if data and not data.endswith(_SEP_BYTE):
        raise ValueError("damaged word table (no final separator)")
    return data


def text_words(text: str) -> list[str]:
    """The words of a `words_text`, in order."""
    return text.split(_SEP)[:-1]


def pack_classes(word_class: dict[str, str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """A word → class table (a Brown path, a frequency band) as its sorted distinct classes (for the
    JSON) and two arrays: the words grouped by class, sorted within it, deflated (``words``), and how
    many words each class has (``counts``, int32)."""
    groups: dict[str, list[str]] = {}
    for w, c in word_class.items():  # grouped first, then each group sorted: no sort key per word
        group = groups.get(c)
        if group is None:
            group = groups[c] = []
        group.append(w)
    classes = sorted(groups)
    counts = np.array([len(groups[c]) for c in classes], dtype=np.int32)
    return classes, {"words": pack_words(itertools.chain.from_iterable(sorted(groups[c]) for c in classes)),
                     "counts": counts}


def _checked(classes: list[str], arrays: dict[str, np.ndarray]) -> tuple[bytes, np.ndarray]:
    """The inflated words of `pack_classes`'s arrays (both present: `StoredClasses` checks) and the class counts,
    checked to agree."""
    data, counts = _inflate_bytes(arrays["words"]), np.asarray(arrays["counts"])
    if counts.ndim != 1 or counts.dtype.kind not in "iu" or len(counts) != len(classes) or (counts < 0).any() \
            or int(counts.sum()) != data.count(_SEP_BYTE):
        raise ValueError("the word table's class counts do not match its words")
    return data, counts


class WordQuery:
    """Distinct words to find in stored tables, encoded once (UTF-8, ``surrogatepass``) for every table they are
    looked up in (`probe_words`, `StoredClasses.class_ids`)."""

    def __init__(self, words: list[str]):
        self.words = words
        encoded = [w.encode("utf-8", "surrogatepass") for w in words]
        self.ptr = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)), out=self.ptr[1:])
        self.data = np.frombuffer(b"".join(encoded), dtype=np.uint8)

    def __len__(self) -> int:
        return len(self.words)


#: Slots per stored word at least in a table's index (linear probing stays short below 0.7 full).
_LOAD = 0.7


class WordIndex(NamedTuple):
    """A stored table's words in a hash table (`structperc.features.resources.table_kernels.index_words`): the
    inflated words (``data``, and ``text``, its bytes as an array), the first byte of each word and the slots."""

    data: bytes
    text: np.ndarray
    starts: np.ndarray
    slots: np.ndarray


def index_words(data: bytes, n_words: int) -> WordIndex | None:
    """The `WordIndex` of ``data`` (``n_words`` words, each ending with a newline: the caller has counted them),
    made by the compiled kernel; None without the ahead-of-time build (the caller splits the words instead). A word
    listed twice raises ValueError."""
    kernel = loader.aot("index_words")
    if kernel is None or len(data) >= 1 << 31:  # the starts are int32
        return None
    bits = max(1, int(np.ceil(np.log2((n_words + 1) / _LOAD))))
    starts = np.empty(n_words + 1, dtype=np.int32)
    slots = np.full(1 << bits, -1, dtype=np.int32)
    text = np.frombuffer(data, dtype=np.uint8)
    if kernel(text, starts, slots):
        raise ValueError("the word table lists a word twice")
    freeze(starts, slots)
    index = WordIndex(data, text, starts, slots)
    # the probes' contract checks a frozen index once: here, by a probe for no word (in the thread that indexes a
    # model's tables), not at the first lookup
    probe_words(index, [])
    return index


def probe_words(index: WordIndex, words: list[str] | WordQuery) -> np.ndarray:
    """The number of the stored word (its line, from 0) equal to each of ``words`` (distinct), -1 where none is."""
    query = words if isinstance(words, WordQuery) else WordQuery(words)
    out = np.empty(len(query), dtype=np.int64)
    kernel = loader.aot("probe_words")
    assert kernel is not None  # an index was made: the build is there
    kernel(index.text, index.starts, index.slots, query.data, query.ptr, out)
    return out


@dataclass(frozen=True)
class Spellings:
    """The distinct words of a token column and their lowercase forms, as one `WordQuery`: a table that finds a
    word as written, else lowercased (Brown clusters, capitalisation classes, frequency bands) looks both up at
    once (`StoredClasses.class_ids`), and every such table of a model shares the query (`spellings`)."""

    #: the column's distinct words (``factorize`` order), then the lowercase forms that are none of them
    query: WordQuery
    #: per distinct word, the position in ``query`` of its lowercase form
    lower: np.ndarray

    @property
    def n_words(self) -> int:
        """The column's distinct words: the first entries of the query."""
        return len(self.lower)

    def as_written_else_lower(self, ids: np.ndarray) -> np.ndarray:
        """Per distinct word, its entry of ``ids`` (one per query word, -1 absent), else its lowercase form's."""
        written = ids[:self.n_words]
        return np.where(written >= 0, written, ids[self.lower])


def extended(words: list[str], more: Iterable[str]) -> tuple[list[str], dict[str, int]]:
    """``words`` (distinct) followed by the words of ``more`` that are none of them (each once, in order), and the
    position of each: one query for words and the words derived from them (lowercase forms, rule lemmas)."""
    position = {w: i for i, w in enumerate(words)}
    out = list(words)
    for w in more:
        if w not in position:
            position[w] = len(out)
            out.append(w)
    return out, position


def spellings(corpus: Corpus, word: str) -> Spellings:
    """The `Spellings` of column ``word`` of ``corpus``, made once per corpus (`Corpus.derived`)."""
    def make() -> Spellings:
        distinct = corpus.factorize(word)[0]
        lowered = [w.lower() for w in distinct]
        words, position = extended(distinct, lowered)
        lower = np.fromiter(map(position.__getitem__, lowered), dtype=np.int64, count=len(lowered))
        return Spellings(WordQuery(words), lower)
    return corpus.derived(word, "spellings", make)


def _index_checked(checked: Future) -> WordIndex | None:
    """The `WordIndex` of the words and counts ``checked`` gives (`_checked`, in the same thread, just before)."""
    data, counts = checked.result()
    return index_words(data, int(counts.sum()))


def unpack_classes(classes: list[str], arrays: dict[str, np.ndarray] | None) -> dict[str, str]:
    """The table `pack_classes` stored; missing or inconsistent arrays, or a word listed twice, raise
    ValueError."""
    return StoredClasses(classes, arrays).table()


#: The tables being read inside `read_together` (None outside it) and the thread that inflates them.
_READING: contextvars.ContextVar[tuple[list["StoredClasses"], ThreadPoolExecutor] | None] = \
    contextvars.ContextVar("structperc_word_tables", default=None)


@contextlib.contextmanager
def read_together() -> Iterator[None]:
    """Tables made inside (`StoredClasses` of stored arrays) inflate and check their words in a thread while the
    caller goes on reading the rest of a model: ``zlib`` lets go of the interpreter while it inflates (0.02 s
    for the four tables of an English POS model, otherwise spent before the weights are read), and so does the
    compiled kernel that then indexes their words (`index_words`: 0.016 s more). On leaving, every table is inflated
    and checked: damage raises here, as it would have where the table was made. The indexes may still be in the
    making (the caller goes on to read its input meanwhile): a table's first lookup waits for its own, and a word
    listed twice, which the index finds, raises there. Other work of the model's may follow them in that thread
    (`beside_reading`: the key lookups of its feature tables)."""
    tables: list[StoredClasses] = []
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="structperc-read")
    token = _READING.set((tables, pool))
    try:
        yield
    finally:
        _READING.reset(token)
        pool.shutdown(wait=False)  # the tables' indexes may still be in the making: the first lookup waits for them
    for table in tables:
        table._settle()


def beside_reading(job: Callable[[], Any]) -> Future | None:
    """``job`` submitted to the thread of the `read_together` block around the caller (after the word tables'
    own jobs), or None outside one (the caller runs it when needed)."""
    reading = _READING.get()
    if reading is None:
        return None
    try:
        return reading[1].submit(job)
    except RuntimeError:  # no new threads (the interpreter is shutting down)
        return None


#: Without the ahead-of-time build: lookups a table answers by splitting its stored words before it builds its
#: dictionary. A training run looks each table up a few times (the training data, the dev data or held-out part, a
#: refit on the whole): the dictionary of the English capitalisation table (320,153 words) with its word strings is
#: about 40 MB, held through the whole run, where its arrays are 1 MB; a tagger answering many requests (the HTTP
#: service, a loop over sentences) builds it after this many.
PASSES_BEFORE_TABLE = 4


class StoredClasses:
    """A word → class table (a Brown path, a capitalisation class) kept as `pack_classes` stores it, looked
    up without building its dictionary.

    Tagging a file once needs the classes of its few thousand distinct words; a dictionary of the English
    capitalisation table (320,153 words) took 0.06 s of a model's load and 40 MB. Instead the stored words are
    numbered in a compiled hash table over their bytes (`index_words`: 10 ms for that table, made while the model
    is read, in the thread that inflates it) and each wanted word is found with a probe or two (`probe_words`); no
    stored word becomes a Python string, and a tagger answering many requests (the HTTP service, a loop over
    sentences) keeps probing. A table made in memory (training, `of`) is packed at once and its dictionary let go,
    so that a training run does not hold a million-word resource as Python strings through its epochs; its index is
    made at its first lookup. Without the ahead-of-time build a lookup splits the stored words instead, and builds
    the dictionary (`table`) after `PASSES_BEFORE_TABLE` of them. The stored arrays are checked when read (their
    words inflate, their counts agree, no word is listed twice); without the build, a word listed twice is refused
    when the dictionary is built, and by a pass that meets it. Threads may share one (the HTTP service): a race
    makes the index or the dictionary twice, never a partial one.
    """

    def __init__(self, classes: list[str], arrays: dict[str, np.ndarray] | None):
        self._classes = list(classes)
        if not arrays or "words" not in arrays or "counts" not in arrays:
            raise ValueError("the word table's arrays are missing")
        self._arrays: dict[str, np.ndarray] = {"words": arrays["words"], "counts": arrays["counts"]}
        self._counts = np.asarray(arrays["counts"])
        #: inflated once to check it; kept by the index, else read by the first pass and let go (`_bytes`)
        self._data: bytes | None = None
        self._index: WordIndex | None = None
        self._inflating: Future | None = None
        self._indexing: Future | None = None
        # inflated and indexed beside the rest of the model (`read_together`, which settles it), else here
        self._inflating = beside_reading(functools.partial(_checked, self._classes, self._arrays))
        if self._inflating is not None:
            self._indexing = beside_reading(functools.partial(_index_checked, self._inflating))
            reading = _READING.get()
            assert reading is not None  # the job above went to its thread
            reading[0].append(self)
        else:
            self._data, self._counts = _checked(self._classes, self._arrays)
        self._table: dict[str, str] | None = None
        self._passes = 0

    def __getstate__(self) -> dict:
        """A copy (``copy.deepcopy``, as `structperc.model.compress` makes; pickle) waits for the words being
        inflated and indexed, and copies them as made."""
        if self._inflating is not None or self._indexing is not None:
            self._indexed()
        return self.__dict__.copy()

    def _settle(self) -> None:
        """Wait for the words `read_together` inflates (raising what their check raised)."""
        if self._inflating is not None:
            inflating, self._inflating = self._inflating, None
            self._data, self._counts = inflating.result()

    @classmethod
    def of(cls, table: dict[str, str]) -> "StoredClasses":
        """A table made in memory, packed at once (its index is made at the first lookup)."""
        made = cls.__new__(cls)
        made._classes, made._arrays = pack_classes(table)
        made._counts, made._data, made._table, made._passes = made._arrays["counts"], None, None, 0
        made._index, made._inflating, made._indexing = None, None, None
        return made

    def __len__(self) -> int:
        """The number of words the table holds."""
        self._settle()
        return int(self._counts.sum())

    def _bytes(self) -> bytes:
        self._settle()
        if self._index is not None:
            return self._index.data
        data, self._data = self._data, None
        return data if data is not None else _inflate_bytes(self._arrays["words"])

    def _indexed(self) -> WordIndex | None:
        """The table's `WordIndex` (the one `read_together` makes, or made here on first use); None without the
        build."""
        self._settle()
        if self._indexing is not None:
            indexing, self._indexing = self._indexing, None
            self._index = indexing.result()
        if self._index is None and loader.aot("index_words") is not None:
            self._index = index_words(self._bytes(), len(self))
        return self._index

    def _words(self, data: bytes | None = None) -> list[str]:
        """The stored words, in order, from the inflated ``data`` (by default inflated here)."""
        return text_words(_decoded(self._bytes() if data is None else data))

    def table(self) -> dict[str, str]:
        """Word → class, the whole table (built on first use from the stored arrays)."""
        if self._table is None:
            words = self._words()
            table = dict(zip(words, itertools.chain.from_iterable(
                map(itertools.repeat, self._classes, self._counts.tolist()))))
            if len(table) != len(words):
                raise ValueError("the word table lists a word twice")
            self._table = table
        return self._table

    def _line_classes(self, lines: np.ndarray) -> np.ndarray:
        """The class (index into `class_names`) of each stored word numbered in ``lines`` (-1 stays -1): the words
        are stored grouped by class, in the order of the classes."""
        ids = np.full(len(lines), -1, dtype=np.int64)
        hit = lines >= 0
        ids[hit] = np.searchsorted(np.cumsum(self._counts), lines[hit], side="right")
        return ids

    def lookup(self, words: Iterable[str]) -> dict[str, str]:
        """The class of each of ``words`` the table holds."""
        needed = set(words)
        index = self._indexed()
        if index is not None:
            wanted = list(needed)
            ids = self._line_classes(probe_words(index, wanted))
            return {wanted[i]: self._classes[c] for i, c in enumerate(ids.tolist()) if c >= 0}
        if self._table is None and self._passes < PASSES_BEFORE_TABLE:  # without the build: the words split
            self._passes += 1
            stored = self._words()
            found: dict[str, str] = {}
            start, n_hits = 0, 0
            for c, n in zip(self._classes, self._counts.tolist()):
                hits = needed.intersection(stored[start:start + n])
                found.update(dict.fromkeys(hits, c))
                start, n_hits = start + n, n_hits + len(hits)
            if n_hits != len(found):
                raise ValueError("the word table lists a word twice")
            return found
        table = self.table()
        # over the few words wanted, not the table: set.intersection(dict) walks the dictionary's keys (3 ms per
        # call for the capitalisation table's 320,153 words, on every sentence a service tags)
        return {w: table[w] for w in needed if w in table}

    @property
    def class_names(self) -> list[str]:
        """The table's distinct classes, sorted: what `class_ids` numbers."""
        return self._classes

    def class_ids(self, query: WordQuery) -> np.ndarray:
        """The class of each word of ``query`` as its index in `class_names` (int64; -1: a word the table does not
        hold): `lookup` without a dictionary of the words found."""
        index = self._indexed()
        if index is not None:
            return self._line_classes(probe_words(index, query))
        found = self.lookup(query.words)
        number = {c: i for i, c in enumerate(self._classes)}
        return np.fromiter((number.get(c, -1) if (c := found.get(w)) is not None else -1 for w in query.words),
                           dtype=np.int64, count=len(query))

    def packed(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The table as `pack_classes` gives it: the stored arrays as read or as packed when made."""
        return self._classes, self._arrays
