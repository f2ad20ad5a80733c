"""Word tables as model arrays: a resource a model carries is stored compactly, as data.

A model trained with a language resource keeps every word of the resource it reads (words the
training data never saw are the point of the resource), so tagging needs no package. A million-word
table as a JSON list would be most of the model file (the archive stores its members uncompressed:
`structperc.model.archive`); here the words, sorted so that neighbours share prefixes, are joined by
newlines and deflated (zlib, RFC 1950) into one ``uint8`` array: the English clusters' 190,129 words
take under 1 MB.
"""
from __future__ import annotations

import itertools
import zlib
from typing import Iterable

import numpy as np

_SEP = "\n"


def pack_words(words: Iterable[str]) -> np.ndarray:
    """``words`` (in the order given) as one deflated ``uint8`` array; a word may not hold a newline.

    Examples
    --------
    >>> unpack_words(pack_words(["a", "b c", "汉字"]))
    ['a', 'b c', '汉字']
    """
    words = list(words)
    if any(_SEP in w for w in words):
        raise ValueError("a stored word cannot hold a newline")
    # every word ends with the separator, so that no words and one empty word differ
    data = zlib.compress("".join(w + _SEP for w in words).encode("utf-8"), 9)
    return np.frombuffer(data, dtype=np.uint8).copy()


def unpack_words(array: np.ndarray) -> list[str]:
    """The words `pack_words` stored; damage raises ValueError."""
    if not isinstance(array, np.ndarray) or array.dtype != np.uint8 or array.ndim != 1:
        raise ValueError("a word table is a one-dimensional uint8 array")
    try:
        text = zlib.decompress(array.tobytes()).decode("utf-8")
    except (zlib.error, UnicodeDecodeError) as e:
        raise ValueError(f"damaged word table ({e})") from None
    if text and not text.endswith(_SEP):
        raise ValueError("damaged word table (no final separator)")
    return text.split(_SEP)[:-1]


def pack_classes(word_class: dict[str, str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """A word → class table (a Brown path, a frequency band) as its sorted distinct classes (for the
    JSON) and two arrays: the words grouped by class, sorted within it, deflated (``words``), and how
    many words each class has (``counts``, int32)."""
    classes = sorted(set(word_class.values()))
    rank = {c: i for i, c in enumerate(classes)}
    ordered = sorted(word_class.items(), key=lambda kv: (rank[kv[1]], kv[0]))
    counts = np.bincount([rank[c] for _, c in ordered], minlength=len(classes)).astype(np.int32)
    return classes, {"words": pack_words(w for w, _ in ordered), "counts": counts}


def unpack_class_lists(classes: list[str], arrays: dict[str, np.ndarray] | None) -> tuple[list[str], list[str]]:
    """The words `pack_classes` stored and the class of each (two lists, in the stored order); missing or
    inconsistent arrays raise ValueError."""
    if not arrays or "words" not in arrays or "counts" not in arrays:
        raise ValueError("the word table's arrays are missing")
    words, counts = unpack_words(arrays["words"]), np.asarray(arrays["counts"])
    if counts.ndim != 1 or counts.dtype.kind not in "iu" or len(counts) != len(classes) or (counts < 0).any() \
            or int(counts.sum()) != len(words):
        raise ValueError("the word table's class counts do not match its words")
    return words, list(itertools.chain.from_iterable(map(itertools.repeat, classes, counts.tolist())))


def unpack_classes(classes: list[str], arrays: dict[str, np.ndarray] | None) -> dict[str, str]:
    """The table `pack_classes` stored; missing or inconsistent arrays, or a word listed twice, raise
    ValueError."""
    words, of = unpack_class_lists(classes, arrays)
    table = dict(zip(words, of))
    if len(table) != len(words):
        raise ValueError("the word table lists a word twice")
    return table
