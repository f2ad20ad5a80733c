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
import itertools
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Iterable, Iterator

import numpy as np

from structperc.compiled import loader

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
    bytes, `find_words`)."""
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


def find_words(data: bytes, words: list[str]) -> np.ndarray | None:
    """The line of ``data`` (stored words, each ending with a newline) holding each of ``words`` (distinct), -1
    where none does, by the compiled pass of `structperc.features.resources.table_kernels`; None without the
    ahead-of-time build (the caller splits the words instead). A word listed twice raises ValueError."""
    kernel = loader.aot("find_words")
    if kernel is None:
        return None
    encoded = [w.encode("utf-8", "surrogatepass") for w in words]
    qptr = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=qptr[1:])
    slots = np.full(1 << max(1, (2 * len(encoded)).bit_length()), -1, dtype=np.int32)
    out = np.empty(len(encoded), dtype=np.int64)
    repeated = kernel(np.frombuffer(data, dtype=np.uint8), np.frombuffer(b"".join(encoded), dtype=np.uint8), qptr,
                      slots, np.empty(len(encoded), dtype=np.int64), out)
    if repeated:
        raise ValueError("the word table lists a word twice")
    return out


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
    for the four tables of an English POS model, otherwise spent before the weights are read). On leaving,
    every table is inflated and checked: damage raises here, as it would have where the table was made."""
    tables: list[StoredClasses] = []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="structperc-inflate") as pool:
        token = _READING.set((tables, pool))
        try:
            yield
        finally:
            _READING.reset(token)
    for table in tables:
        table._settle()


#: Lookups a table answers by a pass over its stored words before it builds its dictionary. A training run
#: looks each table up a few times (the training data, the dev data or held-out part, a refit on the whole):
#: the dictionary of the English capitalisation table (320,153 words) with its word strings is about 40 MB,
#: held through the whole run, where its arrays are 1 MB; a tagger answering many requests (the HTTP
#: service, a loop over sentences) builds it after this many.
PASSES_BEFORE_TABLE = 4


class StoredClasses:
    """A word → class table (a Brown path, a capitalisation class) kept as `pack_classes` stores it, looked
    up without building its dictionary while few lookups come.

    Tagging a file once needs the classes of its few thousand distinct words: one pass over the stored words finds
    them (`lookup`; compiled, `find_words`: 0.012 s for the English capitalisation table's 320,153 words), where a
    dictionary of that table took 0.06 s of a model's load. After `PASSES_BEFORE_TABLE` passes the dictionary is
    built (`table`) and used from then on. A table made in memory (training, `of`) is packed at once and its
    dictionary let go, so that a training run does not hold a million-word resource as Python strings through its
    epochs. The stored arrays are checked when read (their words inflate and their counts agree; the text is decoded
    only when the dictionary is built, or by a pass without the compiled build); a word listed twice is refused when
    the dictionary is built, and by a pass that meets it. Threads may share one (the HTTP service): a race builds
    the dictionary twice, never a partial one.
    """

    def __init__(self, classes: list[str], arrays: dict[str, np.ndarray] | None):
        self._classes = list(classes)
        if not arrays or "words" not in arrays or "counts" not in arrays:
            raise ValueError("the word table's arrays are missing")
        self._arrays: dict[str, np.ndarray] = {"words": arrays["words"], "counts": arrays["counts"]}
        self._counts = np.asarray(arrays["counts"])
        #: inflated once to check it: the first pass reads it, then lets it go (`_bytes`)
        self._data: bytes | None = None
        self._inflating: Future | None = None
        reading = _READING.get()
        if reading is not None:  # inflated beside the rest of the model (`read_together`), which settles it
            try:
                self._inflating = reading[1].submit(_checked, self._classes, self._arrays)
                reading[0].append(self)
            except RuntimeError:  # no new threads (the interpreter is shutting down): inflated here
                pass
        if self._inflating is None:
            self._data, self._counts = _checked(self._classes, self._arrays)
        self._table: dict[str, str] | None = None
        self._passes = 0

    def _settle(self) -> None:
        """Wait for the words `read_together` inflates (raising what their check raised)."""
        if self._inflating is not None:
            inflating, self._inflating = self._inflating, None
            self._data, self._counts = inflating.result()

    @classmethod
    def of(cls, table: dict[str, str]) -> "StoredClasses":
        """A table made in memory, packed at once (its dictionary is built again only if lookups need it)."""
        made = cls.__new__(cls)
        made._classes, made._arrays = pack_classes(table)
        made._counts, made._data, made._table, made._passes = made._arrays["counts"], None, None, 0
        made._inflating = None
        return made

    def __len__(self) -> int:
        """The number of words the table holds."""
        self._settle()
        return int(self._counts.sum())

    def _bytes(self) -> bytes:
        self._settle()
        data, self._data = self._data, None
        return data if data is not None else _inflate_bytes(self._arrays["words"])

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

    def lookup(self, words: Iterable[str]) -> dict[str, str]:
        """The class of each of ``words`` the table holds."""
        needed = set(words)
        if self._table is None and self._passes < PASSES_BEFORE_TABLE:
            self._passes += 1
            wanted = list(needed)
            data = self._bytes()
            lines = find_words(data, wanted)
            if lines is not None:  # the compiled pass: no stored word becomes a string
                hit = np.flatnonzero(lines >= 0)
                of_class = np.searchsorted(np.cumsum(self._counts), lines[hit], side="right").tolist()
                return {wanted[i]: self._classes[c] for i, c in zip(hit.tolist(), of_class)}
            stored = self._words(data)
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

    def packed(self) -> tuple[list[str], dict[str, np.ndarray]]:
        """The table as `pack_classes` gives it: the stored arrays as read or as packed when made."""
        return self._classes, self._arrays
