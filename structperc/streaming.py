"""Streaming faces of a model: ``structperc tag`` and ``structperc segment`` as library calls —
files or standard input in, the same lines tagged (or segmented) out, a chunk at a time so memory
stays flat on large inputs. Output to a file is written atomically (`structperc.io.output`)."""
from __future__ import annotations

import os
from typing import IO, Iterable, Sequence

from structperc.errors import InputError
from structperc.segmenter import Segmenter
from structperc.workflows import load


def tag_files(model_path: str | os.PathLike, inputs: Sequence[str | IO], output: str | os.PathLike | IO[str],
              *, input_format: str = "auto", output_format: str | None = None,
              sentences: int = 20_000) -> None:
    """Tag input (paths, or ``"-"`` for standard input) and write it to ``output`` (a text stream,
    ``"-"``, or a path, written atomically).

    ``input_format`` is one of `structperc.io.formats.INPUT_FORMATS` (``auto`` tells CoNLL-U and one
    token per line from CoNLL columns by the file name or the first lines); ``output_format`` one of
    `OUTPUT_FORMATS`, by default CoNLL-U for CoNLL-U input (the prediction in the column the model
    predicts) and otherwise every input line with the predicted tag appended to its token lines.
    """
    from structperc.io import formats
    from structperc.io.output import output_stream
    from structperc.io.text import source_name

    if input_format not in formats.INPUT_FORMATS:
        raise InputError(f"unknown input format {input_format!r} (known: {', '.join(formats.INPUT_FORMATS)})")
    if output_format is not None and output_format not in formats.OUTPUT_FORMATS:
        raise InputError(f"unknown output format {output_format!r} "
                         f"(known: {', '.join(formats.OUTPUT_FORMATS)})")
    tagger = load(model_path)
    if isinstance(tagger, Segmenter):
        raise InputError("a word segmentation model: use 'structperc segment'", str(model_path))
    task = tagger.task_
    layout = formats.Layout.of(task.columns, task.tag_column, task.token_column, tagger.reads())
    with output_stream(output) as out:
        for source in inputs or ("-",):
            fmt, source = formats.resolve(source, input_format, layout)
            out_fmt = output_format or formats.default_output(fmt)
            formats.check(fmt, out_fmt, layout, source_name(source))
            for chunk in formats.tagging_chunks(source, fmt, layout, sentences):
                # no name for the tags: a chunk's are gone while the next one is tagged
                formats.write_chunk(out, chunk, tagger.predict_corpus(chunk.corpus) if len(chunk.corpus)
                                    else [], out_fmt, layout)


def segment_files(model_path: str | os.PathLike, inputs: Iterable[str | IO], output: str | os.PathLike | IO[str],
                  sep: str = " ") -> None:
    """Segment raw text line by line (one output line per input line); streams in batches. ``output``
    is a text stream, ``"-"`` or a path (written atomically)."""
    from structperc.io.output import output_stream
    from structperc.io.segmented import iter_raw_lines

    seg = Segmenter.load(model_path)
    with output_stream(output) as out:
        for words in seg.segment_lines(iter_raw_lines(inputs or ("-",))):
            out.write(sep.join(words) + "\n")
