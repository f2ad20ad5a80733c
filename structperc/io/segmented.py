"""Segmented Chinese text: one sentence a line, words split by whitespace (the bakeoff format), and
raw text lines to segment. Words become B/M/E/S tags in `structperc.labels.bmes`."""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Iterator, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.io.corpus import Corpus
from structperc.io.text import open_text_lines


def read_segmented(path) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, words)`` for every line, empty lines as empty lists.

    Words are split on any whitespace (ASCII, full-width U+3000, tabs); CRLF is tolerated.
    """
    for number, line in open_text_lines(path):
        yield number, line.split()


def refuse_columns(path) -> None:
    """Refuse a file that reads like CoNLL columns where segmented text is expected (a segmenter's
    training, dev or gold data): it would train or score on its words as one sentence a line."""
    if looks_like_columns(path):
        raise InputError("looks like a CoNLL column file, but a word segmentation model is trained and scored "
                         "on segmented text (one sentence a line, words split by spaces)", str(path))


def looks_like_columns(path) -> bool:
    """Whether a file reads like CoNLL columns rather than segmented text: sentences of short lines
    separated by blank lines, nearly all lines with the same number (2-12) of fields."""
    widths: Counter = Counter()
    blank = 0
    for number, line in open_text_lines(path):
        fields = line.split()
        if not fields:
            blank += 1
        else:
            widths[len(fields)] += 1
        if number >= 400:
            break
    if not widths or not blank:
        return False
    width, count = widths.most_common(1)[0]
    return 2 <= width <= 12 and count >= 0.9 * sum(widths.values())


def read_segmented_corpus(path) -> tuple[list[list[str]], list[int]]:
    """All non-empty lines of a segmented file as word lists, with their line numbers."""
    sents, lines = [], []
    n_lines = 0
    for number, words in read_segmented(path):
        n_lines = number
        if words:
            sents.append(words)
            lines.append(number)
    if not sents:
        if not n_lines:
            raise InputError("no sentences (the file is empty)", str(path))
        raise InputError(f"no sentences: {n_lines} line{'s' if n_lines != 1 else ''}, all blank", str(path))
    return sents, lines


def iter_raw_lines(paths: Iterable) -> Iterator[str]:
    """Lines of raw text from files (or ``-``), line ends removed, read in large decoded pieces."""
    for path in paths:
        for _, line in open_text_lines(path):
            yield line


def char_corpus(texts: Sequence[str], tags: Sequence[Sequence[str]] | tuple[list[str], np.ndarray] | None = None,
                source: str = "<memory>") -> Corpus:
    """A corpus of the characters of ``texts`` (column ``char``, one sentence per text) and their
    ``tag`` column when ``tags`` are given: one list per text, or ``(distinct, codes)`` for every
    character of all texts in a row (`structperc.labels.bmes.bmes_codes`).

    Characters are factorized by code point in numpy: the generic per-token dict is the slow part of
    segmenting large files.
    """
    joined = "".join(texts)
    cols: dict[str, list[str]] = {"char": list(joined)}
    coded = isinstance(tags, tuple)
    if tags is not None:
        if not coded:
            cols["tag"] = [t for sent in tags for t in sent]
        if len(tags[1] if coded else cols["tag"]) != len(joined):
            raise InputError("tags and characters differ in number", source)
    ptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=ptr[1:])
    corpus = Corpus(cols, ptr, source)
    # a lone surrogate (text decoded with ``surrogateescape``) is a code point like any other, as for taggers
    points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    distinct, codes = np.unique(points, return_inverse=True)
    corpus.use_codes("char", [chr(c) for c in distinct.tolist()], codes.astype(np.int64).ravel())
    return corpus.with_column("tag", tags) if coded else corpus  # type: ignore[arg-type]
