"""``structperc compress`` and ``structperc info``: model lifecycle commands.

Registered in the main group by `structperc.cli`; they also work standalone (errors the user can fix
become a one-line `click.ClickException`, never a traceback).
"""
from __future__ import annotations

import json

import click

from structperc.cli.errors import with_one_line_errors


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


@click.command("compress")
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train'.")
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
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train'.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@with_one_line_errors
def info_command(model_path, as_json):
    """Describe a model: task, labels, templates, sizes, how it was trained and compressed."""
    from structperc import commands
    from structperc.model.info import format_info

    d = commands.info(model_path)
    click.echo(json.dumps(d, ensure_ascii=False, indent=2, sort_keys=True) if as_json
               else format_info(d))
