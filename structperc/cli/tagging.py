"""``structperc tag``, ``eval`` and ``segment``: one library call each (`structperc.streaming`,
`structperc.workflows`)."""
from __future__ import annotations

import click

from structperc.cli.environment import single_threaded_blas


@click.command("tag")
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train'.")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-",
              help="Where to write [default: standard output].")
@click.argument("inputs", nargs=-1, metavar="[FILE]...")
def tag(model_path, output, inputs):
    """Tag CoNLL sentences (standard input or FILEs): each line comes back with the predicted tag
    appended as a new last column (a gold tag column, if present, is kept: conlleval reads it)."""
    single_threaded_blas()
    from structperc import streaming

    streaming.tag_files(model_path, inputs, output)


@click.command("eval")
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train'.")
@click.option("--task", help="Optional check: the task the model must have been trained for.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--strict", is_flag=True, help="seqeval strict mode (exact scheme-conformant spans).")
@click.argument("path", metavar="FILE")
def evaluate(model_path, task, as_json, strict, path):
    """Tag a gold-annotated FILE and report scores: span P/R/F1 per type (chunk, ner), token accuracy
    and confusions (pos), word P/R/F1 with OOV and IV recall (cws). The task comes from the model."""
    single_threaded_blas()
    from structperc import workflows
    from structperc.metrics import format_report, to_json

    report = workflows.evaluate(model_path, path, task=task, strict=strict)
    click.echo(to_json(report) if as_json else format_report(report))


@click.command("segment")
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train --task cws'.")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-",
              help="Where to write [default: standard output].")
@click.option("--sep", default=" ", show_default=True, help="Separator between words.")
@click.argument("inputs", nargs=-1, metavar="[FILE]...")
def segment(model_path, output, sep, inputs):
    """Segment raw Chinese text (standard input or FILEs), line by line: one output line per input
    line, empty lines kept. Streams in batches, so memory stays flat on large files."""
    single_threaded_blas()
    from structperc import streaming

    streaming.segment_files(model_path, inputs, output, sep)


