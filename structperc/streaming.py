"""Streaming faces of a model: ``structperc tag`` and ``structperc segment`` as library calls —
files or standard input in, the same lines tagged (or segmented) out, a chunk at a time so memory
stays flat on large inputs."""
from __future__ import annotations

import os
from typing import IO, Iterable, Sequence

from structperc.errors import InputError
from structperc.segmenter import Segmenter
from structperc.workflows import load


def tag_files(model_path: str | os.PathLike, inputs: Sequence[str | IO], output: IO[str]) -> None:
    """Tag CoNLL/CoNLL-U input (paths, or ``"-"`` for standard input): each line comes back with the
    predicted tag appended."""
    from structperc.io.conll import iter_tagging_chunks, write_tagged

    tagger = load(model_path)
    if isinstance(tagger, Segmenter):
        raise InputError("a word segmentation model: use 'structperc segment'", str(model_path))
    task = tagger.task_
    optional = (task.tag_column,) if task.columns[-1] == task.tag_column else ()
    for source in inputs or ("-",):
        for corpus, lines in iter_tagging_chunks(source, list(task.columns), optional=optional,
                                                 only=tagger.reads(), sentences=20_000):
            write_tagged(output, lines, tagger.predict_corpus(corpus))


def segment_files(model_path: str | os.PathLike, inputs: Iterable[str | IO], output: IO[str],
                  sep: str = " ") -> None:
    """Segment raw text line by line (one output line per input line); streams in batches."""
    from structperc.io.segmented import iter_raw_lines

    seg = Segmenter.load(model_path)
    for words in seg.segment_lines(iter_raw_lines(inputs or ("-",))):
        output.write(sep.join(words) + "\n")
