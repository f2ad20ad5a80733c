"""``structperc tag`` and ``structperc segment`` on a Dask cluster, and tagging of a `dask.bag` or a Dask
DataFrame of sentences.

Files are cut into parts at sentence breaks (blank lines; line ends for text and for segmentation),
a few MiB each and at least two per worker thread: the driver only seeks near each cut and scans to
the next break, and every worker reads its own byte range from the file system — so the files must
be readable at the same path on the workers. Compressed files (``.gz``) cannot be cut: each is one
part. Standard input is read by the driver and sent in parts. The driver writes the parts' output
in input order as they complete (a bounded number in flight), atomically to a file as
`structperc.commands.streaming` does, and the output is the same, byte for byte.

A model whose features look at neighbouring sentences (`structperc.predict.document_window`
> 0) gets that many sentences on each side of a part as context — tagged, not written — so its
tags are a single pass's.

The model's bytes travel to each worker once and are loaded there once (`cached_model`, keyed by a
digest of the bytes), not once per part.
"""
from __future__ import annotations

import io
import os
from collections import deque
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from structperc.dask.client import require_workers, using, worker_threads
from structperc.dask.worker import cached_model, model_bytes
from structperc.errors import InputError
from structperc.io.corpus import concat
from structperc.io.parts import PART_BYTES, ByteRange, PartFailure, ShortContext, input_parts, named_stream

if TYPE_CHECKING:
    from structperc.predict import TaggingSetup

_ALL = 1 << 62  # sentences per chunk: a part (bounded in bytes) is one chunk


# ---------------------------------------------------------------------------- worker: tagging a part
def _tag_part(blob: bytes, digest: str, part: ByteRange, setup: TaggingSetup) -> "str | PartFailure":
    """The output of ``part`` as `structperc.predict.write_tagged` writes it with ``setup`` (the same
    for all parts of one input), or the failure to raise in its turn."""
    from structperc import predict

    try:
        model = cached_model(digest, blob).model_
        predict.told_elsewhere(model)  # the client says once that it is uncalibrated, not every worker
        return _tag(model, part, setup)
    except InputError as exc:
        return PartFailure.of(exc, part)


def _tag(model: Any, part: ByteRange, setup: TaggingSetup) -> str:
    from structperc import predict

    gap = predict.document_window(model)

    def parse(data: bytes) -> Any:
        return concat([c.corpus for c in setup.chunks(named_stream(data, part.name), _ALL)])

    def context(side) -> Any:
        """Context sentences; none where they hold an error: the part they belong to reports it with its
        line, and the run stops there."""
        try:
            return side(parse, gap)
        except ShortContext:
            raise
        except InputError:
            return None

    chunks: Iterable[Any] = setup.chunks(part.source(), _ALL if gap else None)
    before = after = None
    if gap:  # the part's own errors come first, then its neighbours'
        chunks = list(chunks)
        before, after = context(part.context_before), context(part.context_after)
    out = io.StringIO()
    predict.write_tagged(out, model, chunks, setup, before=before, after=after)
    return out.getvalue()


def _segment_part(blob: bytes, digest: str, part: ByteRange, sep: str) -> "str | PartFailure":
    from structperc.io.segmented import iter_raw_lines

    try:
        seg = cached_model(digest, blob)
        return "".join(sep.join(words) + "\n" for words in seg.segment_lines(iter_raw_lines([part.source()])))
    except InputError as exc:
        return PartFailure.of(exc, part)


# ---------------------------------------------------------------------------- driver
def _run(client: Any, items: Iterable[Any], func: Any, blob: bytes, digest: str, out: IO[str]) -> None:
    """Submit ``func(model, digest, part, arg)`` for each ``(part, arg)`` of ``items`` and write the results
    in order as they complete, with at most two tasks per worker thread in flight (a result waits on its
    worker until its turn). An item that is an exception is raised in its turn (errors keep input order)."""
    require_workers(client, "work on")
    shipped = client.scatter(blob, broadcast=True, hash=False)
    window = 2 * worker_threads(client)
    pending: deque = deque()
    items = iter(items)
    try:
        while True:
            while len(pending) < window:
                item = next(items, None)
                if item is None:
                    break
                if isinstance(item, BaseException):
                    pending.append(item)
                else:
                    part, arg = item
                    pending.append(client.submit(func, shipped, digest, part, arg, pure=False))
            if not pending:
                return
            head = pending.popleft()
            if isinstance(head, BaseException):
                raise head
            result = head.result()
            if isinstance(result, PartFailure):
                raise result.error()
            out.write(result)
    finally:
        futures = [f for f in pending if not isinstance(f, BaseException)]
        if futures:
            client.cancel(futures)
        client.cancel([shipped])


def _tag_items(tagger: Any, inputs: Sequence[Any], job: dict, parts: int | None, threads: int,
               part_bytes: int) -> Iterator[Any]:
    """``(part, TaggingSetup)`` for every part of every input, in order (an error ends them, in its
    turn); ``job`` holds the arguments of `structperc.predict.tagging_setup` but the source."""
    from structperc.predict import tagging_setup

    model = tagger.model_
    try:
        for source in inputs or ("-",):
            setup, source = tagging_setup(model, source, **job)
            for part in input_parts(source, setup.fmt == "lines", parts, threads, part_bytes):
                yield part, setup
    except InputError as exc:
        yield exc


def tag_files(model_path: str | os.PathLike, inputs: Sequence[str | IO], output: str | os.PathLike | IO[str],
              *, dask: Any, input_format: str = "auto", output_format: str | None = None,
              sentences: int = 20_000, marginals: bool = False, nbest: int = 0,
              forced_column: str | int | None = None, unknown: str = "?", parts: int | None = None,
              part_bytes: int = PART_BYTES) -> None:
    """`structperc.commands.streaming.tag_files` on a Dask cluster: the same output, byte for byte.

    ``dask`` is a scheduler address, ``local:N`` or a `distributed.Client`. Each file is cut into
    ``parts`` parts (default: two per worker thread, none under `MIN_PART_BYTES`; more where a part would
    exceed ``part_bytes``) that the workers read themselves — the paths must be readable on the
    workers. Standard input (``"-"``) and streams are read here and sent in parts."""
    from structperc import predict
    from structperc.commands import load_tagger
    from structperc.io.output import output_stream

    if input_format == "text":  # raw text is tagged a document at a time by `commands.streaming.tag_raw_text`
        raise InputError("--input-format text is not available with --dask: tag raw text without --dask, or give "
                         "tokens (--input-format tokens or lines)")
    sentences = predict.tagging_options(input_format, output_format, nbest, sentences)
    tagger = load_tagger(model_path)
    if marginals or nbest:  # said here, once (the workers' copies keep quiet)
        predict.confidence_temperature(tagger.model_)
    blob, digest = model_bytes(model_path)
    job = {"input_format": input_format, "output_format": output_format, "marginals": marginals,
           "nbest": nbest, "forced_column": forced_column, "unknown": unknown, "sentences": sentences}
    with using(dask) as client, output_stream(output) as out:
        items = _tag_items(tagger, inputs, job, parts, worker_threads(client), part_bytes)
        _run(client, items, _tag_part, blob, digest, out)


def segment_files(model_path: str | os.PathLike, inputs: Iterable[str | IO], output: str | os.PathLike | IO[str],
                  *, dask: Any, sep: str = " ", parts: int | None = None, part_bytes: int = PART_BYTES) -> None:
    """`structperc.commands.streaming.segment_files` on a Dask cluster (the same output, byte for byte): files are
    cut at line ends into parts the workers read themselves; standard input is sent in parts."""
    from structperc.io.output import output_stream
    from structperc.segmenter import Segmenter

    Segmenter.load(model_path)  # a model of another task is refused here, in one line
    blob, digest = model_bytes(model_path)

    def items(threads: int) -> Iterator[Any]:
        try:
            for source in list(inputs) or ["-"]:
                for part in input_parts(source, True, parts, threads, part_bytes):
                    yield part, sep
        except InputError as exc:
            yield exc

    with using(dask) as client, output_stream(output) as out:
        _run(client, items(worker_threads(client)), _segment_part, blob, digest, out)


# ---------------------------------------------------------------------------- bags and data frames
def _shipped(model: Any) -> tuple[Any, str]:
    import dask

    blob, digest = model_bytes(model)
    return dask.delayed(blob, name=f"structperc-model-{digest[:20]}", pure=True), digest


def _predict_partition(sentences: Iterable[Any], blob: bytes, digest: str) -> list[list[str]]:
    sentences = [list(s) for s in sentences]
    return cached_model(digest, blob).predict(sentences) if sentences else []


def tag_bag(bag: Any, model: Any) -> Any:
    """A `dask.bag.Bag` of the tag lists of a bag of sentences (token lists, or per token a tuple of the
    model's columns), in the bag's order: one ``predict`` per partition, the model (a model directory or
    a fitted `Tagger`) loaded once per worker. Each partition is a document of its own: a model that reads the
    sentences around one (the NER preset's document columns, two stages) reads those of its partition only, so
    sentences near a partition's edge may be tagged otherwise than by ``predict`` on the whole list
    (`tag_files` gives each part its neighbours' sentences)."""
    shipped, digest = _shipped(model)
    return bag.map_partitions(_predict_partition, shipped, digest)


def _predict_frame(frame: Any, blob: bytes, digest: str, tokens: str, out: str) -> Any:
    import pandas as pd

    sentences = [list(s) for s in frame[tokens]]
    tags = cached_model(digest, blob).predict(sentences) if sentences else []
    result = frame.copy()
    result[out] = pd.Series(tags, index=frame.index, dtype=object)
    return result


def tag_dataframe(df: Any, model: Any, tokens: str = "tokens", out: str = "tags") -> Any:
    """The Dask DataFrame ``df`` with a column ``out`` of tag lists for its column ``tokens`` of token
    lists, rows in order; the model (a model directory or a fitted `Tagger`) loaded once per worker. Each
    partition is a document of its own, as in `tag_bag`.

    The token lists must stay lists: an Arrow ``list<string>`` column
    (``pd.ArrowDtype(pa.list_(pa.string()))``), or an object column made with Dask's
    ``dataframe.convert-string`` off (by default `dask.dataframe.from_pandas` turns an object column
    into strings — lists included — which is refused here)."""
    import pandas as pd

    if tokens not in df.columns:
        raise InputError(f"no column {tokens!r} (columns: {', '.join(map(str, df.columns))})")
    dtype = df[tokens].dtype
    if not pd.api.types.is_object_dtype(dtype) and pd.api.types.is_string_dtype(dtype):
        raise InputError(f"column {tokens!r} holds strings ({dtype}), not token lists: give it an Arrow list "
                         "type, pd.ArrowDtype(pa.list_(pa.string())), or make the frame with "
                         "dask.config.set({'dataframe.convert-string': False})")
    shipped, digest = _shipped(model)
    meta = df._meta.copy()
    meta[out] = pd.Series([], index=meta.index, dtype=object)
    return df.map_partitions(_predict_frame, shipped, digest, tokens, out, meta=meta)
