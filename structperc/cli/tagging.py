"""``structperc tag``, ``eval`` and ``segment``: one library call each (`structperc.commands.streaming`,
`structperc.commands`; `structperc.dask.tagging` with ``--dask``)."""
from __future__ import annotations

import click

from structperc.cli.environment import MODEL_HELP, single_threaded_blas


def _output(path: str):
    """What ``-o`` names, for the library call: standard output as a UTF-8 text stream, else the path
    (written atomically: an error half-way leaves no partial file)."""
    return click.open_file("-", "w", encoding="utf-8") if path == "-" else path


_DASK_HELP = ("Run on a Dask cluster: a scheduler address (tcp://host:8786) or local:N (N worker processes "
              "here). Each FILE is cut into parts at sentence breaks that the workers read themselves, so "
              "FILEs must be readable at the same path on every worker; standard input is read here and "
              "sent in parts. The output is the same as without --dask, in input order. Needs "
              "structperc[dask].")


def _threads_option(what: str):
    return click.option("--threads", type=click.IntRange(min=0), default=None, metavar="N",
                        help=f"Threads that featurize and decode {what} (0: every usable CPU) [default: every "
                             "usable CPU]. The output is the same on any number.")


def _local(dask: str | None, threads: int | None) -> dict:
    """The threads option for the library call here; with --dask each worker tags on its own threads."""
    if dask is None:
        return {"threads": threads}
    if threads is not None:
        raise click.UsageError("--threads is for tagging in this process: with --dask each worker uses its own")
    return {}


def _library(dask: str | None):
    """Where the command's one library call lives: this process, or a Dask cluster."""
    if dask is None:
        from structperc.commands import streaming
        return streaming.tag_files, streaming.segment_files, {}
    from structperc.dask import tagging
    return tagging.tag_files, tagging.segment_files, {"dask": dask}


@click.command("tag")
@click.option("--model", "model_path", required=True, metavar="MODEL", help=MODEL_HELP)
@click.option("-o", "--output", default="-", metavar="FILE",
              help="Where to write, replaced only once all is written [default: standard output].")
@click.option("--input-format", type=click.Choice(["auto", "conll", "conllu", "tokens", "lines", "text"]),
              default="auto", show_default=True,
              help="conll: the model's columns; conllu; tokens: one token per line, a blank line between "
                   "sentences; lines: one sentence per line, tokens split at whitespace; text: raw text, "
                   "split into sentences and tokens the way the model's corpus is (a blank line ends a "
                   "document; needs structperc[text]). auto: CoNLL-U, one token per line or lines when "
                   "the file name or the first lines say so, else conll.")
@click.option("--output-format", type=click.Choice(["conll", "conllu", "tokens", "jsonl"]), default=None,
              help="conll: every input line, token lines with the tag appended; conllu: the tag in the "
                   "column the model predicts; tokens: token<TAB>tag lines; jsonl: one "
                   "{\"tokens\", \"tags\"} object a sentence [default: conllu for CoNLL-U input, else conll].")
@click.option("--marginals", is_flag=True,
              help="Add each tag's probability (its marginal at the model's calibrated temperature): a "
                   "column after the tag (conll, tokens) or a \"confidence\" list (jsonl).")
@click.option("--nbest", type=click.IntRange(min=1), default=None, metavar="K",
              help="The K best tag sequences of each sentence with scores and probabilities (jsonl).")
@click.option("--forced-column", metavar="COLUMN",
              help="A column of known tags (its name or 1-based number) the prediction must keep; "
                   "--unknown-tag marks the free ones.")
@click.option("--unknown-tag", default="?", show_default=True, metavar="TAG",
              help="In --forced-column: the tag is not known.")
@_threads_option("a large input")
@click.option("--dask", metavar="ADDRESS", help=_DASK_HELP + " Not with --input-format text.")
@click.argument("inputs", nargs=-1, metavar="[FILE]...")
def tag(model_path, output, input_format, output_format, marginals, nbest, forced_column, unknown_tag,
        threads, dask, inputs):
    """Tag sentences (standard input or FILEs). Every input line comes back in order, each token line
    with the predicted tag appended as a new last column (a gold tag column, if present, is kept:
    conlleval reads it); CoNLL-U comes back as CoNLL-U with the prediction in its column.

    \b
    structperc tag --model ner/ --marginals < test.conll
    structperc tag --model ner/ --nbest 3 --input-format lines < sentences.txt
    echo "I saw Dr. Smith in Madrid. He didn't stay." | structperc tag --model en-upos --input-format text
    structperc tag --model pos/ --forced-column 2 < partly_tagged.conll
    structperc tag --model chunk/ --dask local:2 -o big.tagged big.conll
    """
    single_threaded_blas()
    tag_files, _, cluster = _library(dask)
    tag_files(model_path, inputs, _output(output), input_format=input_format, output_format=output_format,
              marginals=marginals, nbest=nbest or 0, forced_column=forced_column, unknown=unknown_tag,
              **_local(dask, threads), **cluster)


@click.command("calibrate")
@click.option("--model", "model_path", required=True, metavar="MODEL", help=MODEL_HELP)
@click.option("--out", "out_path", metavar="DIR", help="Save the calibrated model here [default: --model].")
@click.option("--plot", metavar="FILE.png",
              help="Write a reliability diagram (accuracy per confidence bin, before and after).")
@click.argument("path", metavar="FILE")
def calibrate(model_path, out_path, plot, path):
    """Refit the temperature of a model's probabilities on gold-tagged FILE (held out from training:
    a dev set), minimising the negative log-likelihood of its tags; the model is saved atomically."""
    single_threaded_blas()
    from structperc import commands

    c = commands.calibrate(model_path, path, out_path=out_path, plot=plot)
    click.echo(f"temperature {c['temperature']:.4g} on {c['tokens']} tokens: token NLL {c['nll'][0]:.4f} at "
               f"temperature 1 -> {c['nll'][1]:.4f}, ECE {c['ece'][0]:.4f} at temperature 1 -> {c['ece'][1]:.4f}")


@click.command("eval")
@click.option("--model", "model_path", required=True, metavar="MODEL", help=MODEL_HELP)
@click.option("--task", help="Optional check: the task the model must have been trained for.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--strict", is_flag=True, help="seqeval strict mode (exact scheme-conformant spans).")
@_threads_option("a large file")
@click.argument("path", metavar="FILE")
def evaluate(model_path, task, as_json, strict, threads, path):
    """Tag a gold-annotated FILE and report scores: span P/R/F1 per type (chunk, ner), token accuracy
    and confusions (pos), word P/R/F1 with OOV and IV recall (cws). The task comes from the model."""
    single_threaded_blas()
    from structperc import commands
    from structperc.metrics import format_report, to_json

    report = commands.evaluate(model_path, path, task=task, strict=strict, threads=threads)
    click.echo(to_json(report) if as_json else format_report(report))


@click.command("segment")
@click.option("--model", "model_path", required=True, metavar="MODEL",
              help="A segmenter saved by 'train --task cws', or a shipped one's name (zh-seg).")
@click.option("-o", "--output", default="-", metavar="FILE",
              help="Where to write, replaced only once all is written [default: standard output].")
@click.option("--sep", default=" ", show_default=True, help="Separator between words.")
@click.option("--user-dict", metavar="FILE",
              help="A user dictionary in jieba's format (one 'word [frequency] [tag]' a line): its words "
                   "come back whole (unless they cross whitespace; overlaps: leftmost, then longest).")
@click.option("--user-dict-mode", type=click.Choice(["hard", "soft"]), default="hard", show_default=True,
              help="hard: force every occurrence as a word; soft: add the words to the lexicon the model "
                   "reads, which makes them likelier words without forcing them.")
@_threads_option("a large input")
@click.option("--dask", metavar="ADDRESS", help=_DASK_HELP.replace("sentence breaks", "line ends"))
@click.argument("inputs", nargs=-1, metavar="[FILE]...")
def segment(model_path, output, sep, user_dict, user_dict_mode, threads, dask, inputs):
    """Segment raw Chinese text (standard input or FILEs), line by line: one output line per input
    line, empty lines kept. Streams in batches, so memory stays flat on large files.

    \b
    structperc segment --model cws/ --user-dict userdict.txt < raw.txt
    """
    single_threaded_blas()
    if dask is not None and user_dict is not None:
        raise click.UsageError("--user-dict is not available with --dask")
    _, segment_files, cluster = _library(dask)
    extra = {} if user_dict is None else {"user_dict": user_dict, "user_dict_mode": user_dict_mode}
    segment_files(model_path, inputs, _output(output), sep=sep, **extra, **_local(dask, threads), **cluster)
