"""Files and streams tagged a chunk at a time: how one input is read, tagged and written
(`TaggingSetup`), decided once per input by `tagging_setup` for ``structperc tag``
(`structperc.commands.streaming`) and its Dask twin (`structperc.dask.tagging`), and the chunks of
one document written with their context (`write_tagged`, over `structperc.predict.documents`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator

from structperc.features.instances import columns_to_read
from structperc.io.corpus import Corpus
from structperc.model.schema import Model
from structperc.predict import documents

if TYPE_CHECKING:
    from structperc.io.formats import Layout, TagChunk


@dataclass(frozen=True)
class TaggingSetup:
    """How one input is read, tagged and written (`tagging_setup`)."""

    fmt: str            # its format, one of `structperc.io.formats.INPUT_FORMATS` (not ``auto``)
    out_fmt: str        # the output format
    layout: Layout      # the model's columns in it (`structperc.io.formats.Layout`)
    known: str | None   # the column of known tags, if any
    confidence: bool = False  # each tag's probability beside it
    k: int = 0                # the k best paths of each sentence (0: none)
    unknown: str = "?"        # a free tag in the column of known tags
    sentences: int = 20_000   # sentences a chunk (`tagging_options`)
    guessed: bool = False     # ``auto`` chose the format: an error about columns says what else it may be

    def chunks(self, source: Any, sentences: int | None = None) -> Iterator[TagChunk]:
        """``source`` read in chunks of ``sentences`` (default: the setup's) sentences."""
        from structperc.io.formats import tagging_chunks

        chunks = tagging_chunks(source, self.fmt, self.layout, self.sentences if sentences is None else sentences)
        return _hinted(chunks) if self.guessed else chunks


def _hinted(chunks: Iterator[TagChunk]) -> Iterator[TagChunk]:
    """``chunks``, where a column error of a guessed format also names the formats it may be instead
    (`structperc.io.formats.AUTO_HINT`: plain text read as columns fails on its first line)."""
    from structperc.errors import InputError
    from structperc.io.formats import AUTO_HINT
    from structperc.io.parse import ColumnCountError

    try:
        yield from chunks
    except ColumnCountError as exc:
        raise InputError(f"{exc.reason} {AUTO_HINT}", exc.path, exc.line) from None


def tagging_options(input_format: str, output_format: str | None, nbest: int, sentences: int) -> int:
    """Refuse, before any model is read, options that cannot go together (`formats.check_options`);
    the sentences a chunk holds with ``nbest`` paths a sentence (fewer for a large ``nbest``,
    `structperc.decode.nbest.nbest_chunk`)."""
    from structperc.decode.nbest import nbest_chunk
    from structperc.io import formats

    formats.check_options(input_format, output_format, nbest)
    return nbest_chunk(nbest, sentences)  # K ≤ MAX_K; fewer sentences a chunk for large K


def tagging_setup(model: Model, source: Any, input_format: str = "auto", output_format: str | None = None,
                  *, nbest: int = 0, forced_column: str | int | None = None, marginals: bool = False,
                  unknown: str = "?", sentences: int = 20_000) -> tuple[TaggingSetup, Any]:
    """The `TaggingSetup` of tagging ``source`` with ``model`` (the arguments of
    `structperc.commands.streaming.tag_files`; ``sentences`` as `tagging_options` gives them), and the
    source to read (``auto`` on a stream gives one that gives back what was looked at). Refuses,
    before reading, what cannot work (`formats.check`)."""
    from structperc.io import formats
    from structperc.io.text import source_name

    task = model.task
    reads = columns_to_read(task, model.templates, gold=False, dictionary=model.dictionary)
    layout = formats.Layout.of(task.columns, task.tag_column, task.token_column, reads)
    fmt, source = formats.resolve(source, input_format, layout)
    known = formats.column_name(forced_column, fmt, layout) if forced_column is not None else None
    if known is not None and reads is not None:
        layout = formats.Layout.of(task.columns, task.tag_column, task.token_column, reads | {known})
    out_fmt = output_format or ("jsonl" if nbest else formats.default_output(fmt))
    formats.check(fmt, out_fmt, layout, source_name(source), confidence=marginals)
    return TaggingSetup(fmt, out_fmt, layout, known, marginals, nbest, unknown, sentences,
                        guessed=input_format == "auto"), source


def write_tagged(out: IO[str], model: Model, chunks: Iterable[Any], setup: TaggingSetup, *,
                 before: Corpus | None = None, after: Corpus | None = None) -> None:
    """Tag the ``chunks`` of one document (`structperc.io.formats.tagging_chunks`), each in its context
    (`documents.in_context`; ``before`` and ``after`` the chunks), and write them as ``setup`` says, a
    chunk at a time."""
    from structperc.io.formats import write_chunk

    for left, chunk, right in documents.in_context(chunks, documents.document_window(model), before, after):
        # looked up at each call (`documents.tag_in_context`), so that a test may watch the chunks
        tagged = documents.tag_in_context(model, chunk.corpus, left, right, confidence=setup.confidence,
                                          k=setup.k, known_column=setup.known, unknown=setup.unknown)
        write_chunk(out, chunk, tagged.tags, setup.out_fmt, setup.layout, tagged.confidence, tagged.nbest)
        del tagged  # a chunk's results are gone while the next one is tagged
