"""``structperc compress`` and ``structperc info``: model lifecycle commands.

Registered in the main group by `structperc.cli`; they also work standalone (errors the user can fix
become a one-line `click.ClickException`, never a traceback).
"""
from __future__ import annotations

import json

import click

from structperc.cli.environment import MODEL_HELP
from structperc.cli.errors import with_one_line_errors


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


@click.command("compress")
@click.option("--model", "model_path", required=True, metavar="MODEL", help=MODEL_HELP)
@click.option("--keep", type=click.FloatRange(0.0, 1.0, min_open=True), metavar="RATIO",
              help="Keep this fraction of the attributes: those with the largest weight norms.")
@click.option("--threshold", type=click.FloatRange(min=0.0), metavar="T",
              help="Keep the attributes whose weight norm is greater than T (0: drop only dead ones).")
@click.option("--out", "out_path", required=True, metavar="DIR",
              help="Where to save the compressed model (may be --model itself: saving is atomic).")
@click.option("-q", "--quiet", is_flag=True, help="No summary on standard error.")
@with_one_line_errors
def compress_command(model_path, keep, threshold, out_path, quiet):
    """Shrink a model (tagger or segmenter) by dropping the attributes with the smallest weights.

    \b
    structperc compress --model chunker/ --keep 0.3 --out chunker-small/
    """
    from structperc import commands

    if (keep is None) == (threshold is None):
        raise click.UsageError("give exactly one of --keep and --threshold")
    path, c, size_before, size_after = commands.compress(model_path, out_path, keep=keep,
                                                          threshold=threshold)
    if not quiet:
        a0, a1 = c["state_attributes_before"], c["state_attributes_after"]
        t0, t1 = c["transition_attributes_before"], c["transition_attributes_after"]
        click.echo(f"saved {path}: {a1:,} of {a0:,} state attributes"
                   + (f", {t1:,} of {t0:,} transition-conditioned" if t0 else "")
                   + f"; {_mb(size_before)} -> {_mb(size_after)}", err=True)


@click.command("info")
@click.option("--model", "model_path", required=True, metavar="MODEL", help=MODEL_HELP)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--weights", "weights", is_flag=True,
              help="What the weights say instead: per label the state features with the largest and the most "
                   "negative weights, the transition matrix with its <bos> row, conditioned transitions in summary.")
@click.option("--top", type=click.IntRange(min=0), default=None, metavar="N",
              help="With --weights: N features per label and per summary (default 10).")
@click.option("--label", "labels", multiple=True, metavar="L",
              help="With --weights: only this label, or every label of this span type (LOC); repeatable.")
@with_one_line_errors
def info_command(model_path, as_json, weights, top, labels):
    """Describe a model: task, labels, templates, sizes, how it was trained and compressed;
    with --weights, what it has learnt.

    \b
    structperc info --model ner/ --weights --top 5 --label PER
    """
    if not weights:
        if top is not None or labels:
            raise click.UsageError("--top and --label go with --weights")
        from structperc import commands
        from structperc.model.info import format_info

        d = commands.info(model_path)
        click.echo(json.dumps(d, ensure_ascii=False, indent=2, sort_keys=True) if as_json
                   else format_info(d))
        return
    from structperc.model.inspection import DEFAULT_TOP, format_weights, weights_report

    w = weights_report(model_path, top=DEFAULT_TOP if top is None else top, labels=list(labels))
    click.echo(json.dumps(w, ensure_ascii=False, indent=2) if as_json else format_weights(w))


@click.command("models")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output: every card whole.")
@with_one_line_errors
def models_command(as_json):
    """List the shipped models: name, task, language, corpus and its licence, test score, size.

    \b
    structperc models
    structperc tag --model en-upos --input-format text < raw.txt
    """
    from structperc import commands

    cards = commands.shipped_models()
    if as_json:
        click.echo(json.dumps(cards, ensure_ascii=False, indent=2, sort_keys=True))
        return
    if not cards:
        click.echo("no shipped models are installed")
        return
    for c in cards:
        tests = "; ".join(f"{where} {t['metric']} {t['score']:.2f}" for where, t in c.get("test", {}).items())
        reads = "".join(f", reads {col} from {up}" for col, up in c.get("reads", {}).items())
        click.echo(f"{c['name']:<9} {c.get('task', '?'):<6} {c.get('language', '?'):<3} {_mb(c['bytes']):>8}  "
                   f"{c.get('description', '')}{reads}")
        click.echo(f"{'':<29}corpus: {c.get('corpus', '?')}")
        click.echo(f"{'':<29}licence: {c.get('licence', '?')}")
        click.echo(f"{'':<29}test: {tests or '?'}; built {c.get('date', '?')[:10]}")
