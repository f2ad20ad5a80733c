"""Streaming faces of a model: ``structperc tag`` and ``structperc segment`` as library calls —
files or standard input in, the same lines tagged (or segmented) out, a chunk at a time so memory
stays flat on large inputs. Output to a file is written atomically (`structperc.io.output`)."""
from __future__ import annotations

import itertools
import os
from typing import IO, Any, Iterable, Iterator, Sequence, cast

from structperc.commands.models import load_tagger
from structperc.compiled.threads import threads as using_threads
from structperc.errors import InputError
from structperc.segmenter import Segmenter
from structperc.tagger import Tagger


def tag_files(model_path: str | os.PathLike, inputs: Sequence[str | IO], output: str | os.PathLike | IO[str],
              *, input_format: str = "auto", output_format: str | None = None,
              sentences: int = 20_000, marginals: bool = False, nbest: int = 0,
              forced_column: str | int | None = None, unknown: str = "?", threads: int | None = 1) -> None:
    """Tag input (paths, or ``"-"`` for standard input) and write it to ``output`` (a text stream,
    ``"-"``, or a path, written atomically).

    ``input_format`` is one of `structperc.io.formats.INPUT_FORMATS` (``auto`` tells CoNLL-U and one
    token per line from CoNLL columns by the file name or the first lines); ``output_format`` one of
    `OUTPUT_FORMATS`, by default CoNLL-U for CoNLL-U input (the prediction in the column the model
    predicts), JSON lines with ``nbest``, and otherwise every input line with the predicted tag
    appended to its token lines.

    ``marginals`` adds each tag's probability, ``nbest`` the k best paths (JSON lines), and
    ``forced_column`` (a column name, or its 1-based number in the input) holds known tags that
    the prediction keeps (``unknown`` where the tag is free); see `structperc.predict`.

    ``threads``: how many threads featurize and decode a large chunk (None or 0: every usable CPU;
    `structperc.compiled.threads`); the output is the same.
    """
    with using_threads(threads):
        _tag_files(model_path, inputs, output, input_format=input_format, output_format=output_format,
                   sentences=sentences, marginals=marginals, nbest=nbest, forced_column=forced_column,
                   unknown=unknown)


def _tag_files(model_path: str | os.PathLike, inputs: Sequence[str | IO], output: str | os.PathLike | IO[str],
               *, input_format: str, output_format: str | None, sentences: int, marginals: bool, nbest: int,
               forced_column: str | int | None, unknown: str) -> None:
    from structperc import predict
    from structperc.io.output import output_stream

    if input_format == "text":
        if nbest or marginals or forced_column is not None:
            raise InputError("--input-format text takes no --nbest, --marginals or --forced-column: tokenize "
                             "first (--output-format tokens) and tag that")
        return tag_raw_text(load_tagger(model_path), inputs, output, output_format=output_format)
    sentences = predict.tagging_options(input_format, output_format, nbest, sentences)
    model = load_tagger(model_path).model_
    with output_stream(output) as raw_out:
        out = cast(IO[str], _EndTracking(raw_out))
        for source in inputs or ("-",):
            if cast(_EndTracking, out).open_sentence() and (output_format or "") != "jsonl":
                out.write("\n")  # the previous file's last sentence stays apart from this file's first
            setup, source = predict.tagging_setup(model, source, input_format, output_format, nbest=nbest,
                                                  forced_column=forced_column, marginals=marginals,
                                                  unknown=unknown, sentences=sentences)
            predict.write_tagged(out, model, setup.chunks(source), setup)


#: Raw-text documents tagged per call (`tag_raw_text`): memory stays flat on large inputs.
TEXT_BATCH = 2_000


def raw_documents(inputs: Iterable[str | IO]) -> Iterator[str]:
    """Documents of raw text: runs of lines between blank lines (a paragraph each), lines joined by
    newlines, from files (or ``-``) in order."""
    from structperc.io.segmented import iter_raw_lines

    lines: list[str] = []
    for line in iter_raw_lines(inputs):
        if line.strip():
            lines.append(line)
        elif lines:
            yield "\n".join(lines)
            lines = []
    if lines:
        yield "\n".join(lines)


def tag_raw_text(tagger: Tagger, inputs: Sequence[str | IO], output: str | os.PathLike | IO[str], *,
                 output_format: str | None = None, batch: int = TEXT_BATCH) -> None:
    """``structperc tag --input-format text``: raw text (paths, or ``"-"``) split into documents at blank
    lines, each split into sentences and tokens and tagged (`Tagger.tag_texts`), written as
    ``token<TAB>tag`` lines with a blank line after each sentence (``tokens``, ``conll``: the default),
    or one JSON object a sentence with the tokens' character ``offsets`` in their document (``jsonl``)."""
    import json

    from structperc.io.output import output_stream

    fmt = output_format or "tokens"
    if fmt not in ("tokens", "conll", "jsonl"):
        raise InputError(f"--input-format text writes tokens, conll or jsonl, not {fmt}")
    documents = raw_documents(inputs or ("-",))
    with output_stream(output) as out:
        while True:
            docs = list(itertools.islice(documents, batch))
            if not docs:
                break
            for doc in tagger.tag_texts(docs):
                for sent in doc:
                    if fmt == "jsonl":
                        out.write(json.dumps({"tokens": [t.text for t in sent], "tags": [t.tag for t in sent],
                                              "offsets": [[t.start, t.end] for t in sent]},
                                             ensure_ascii=False) + "\n")
                    else:
                        out.write("".join(f"{t.text}\t{t.tag}\n" for t in sent) + "\n")


class _EndTracking:
    """A text stream that remembers how its output ends: whether a sentence is still open (the last
    line written is not blank), so that the next input file starts after a blank line."""

    def __init__(self, stream: IO[str]):
        self.stream = stream
        self.tail = ""
        inner = getattr(stream, "buffer", None)
        if inner is not None:  # the raw lines' writer writes bytes to the buffer (`structperc.io.scan`)
            self.buffer = _BytesEndTracking(inner, self)

    def write(self, text: str) -> int:
        if text:
            self.tail = (self.tail + text[-2:])[-2:]
        return self.stream.write(text)

    def open_sentence(self) -> bool:
        """Output was written and its last line is not blank."""
        return self.tail not in ("", "\n", "\n\n")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _BytesEndTracking:
    def __init__(self, buffer: Any, owner: _EndTracking):
        self.raw, self.owner = buffer, owner

    def write(self, data: Any) -> int:
        tail = bytes(data[-2:]).decode("utf-8", "replace") if len(data) else ""
        self.owner.tail = (self.owner.tail + tail)[-2:]
        return self.raw.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw, name)


def segment_files(model_path: str | os.PathLike, inputs: Iterable[str | IO], output: str | os.PathLike | IO[str],
                  sep: str = " ", user_dict: str | os.PathLike | None = None, user_dict_mode: str = "hard",
                  threads: int | None = 1) -> None:
    """Segment raw text line by line (one output line per input line); streams in batches. ``output``
    is a text stream, ``"-"`` or a path (written atomically). ``user_dict`` is a file in jieba's
    user-dictionary format applied as `Segmenter.segment_texts` says (``user_dict_mode``); it is read
    before any output is written, so a bad line leaves no partial output. ``threads``: as `tag_files`."""
    from structperc.io.output import output_stream
    from structperc.io.segmented import iter_raw_lines

    inputs = list(inputs) or ["-"]
    if user_dict is not None and os.fspath(user_dict) == "-" and any(i == "-" for i in inputs):
        raise InputError("the user dictionary and the text cannot both be standard input: give one of them as a file")
    with using_threads(threads):
        seg = Segmenter.load(model_path)
        lines = seg.segment_lines(iter_raw_lines(inputs), user_dict=user_dict,
                                  user_dict_mode=user_dict_mode)
        first = next(lines, None)  # the generator reads the dictionary before its first line
        with output_stream(output) as out:
            if first is not None:
                out.write(sep.join(first) + "\n")
            for words in lines:
                out.write(sep.join(words) + "\n")
