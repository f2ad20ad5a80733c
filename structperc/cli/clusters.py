"""``structperc clusters``: Brown word clusters learnt from raw text, written in Liang's ``paths``
format for templates that read cluster-path prefixes (`structperc.features.clusters`)."""
from __future__ import annotations

import os
import time

import click

from structperc.cli.errors import with_one_line_errors
from structperc.errors import InputError


@click.command("clusters")
@click.argument("raw", metavar="RAW.txt")
@click.option("-o", "--out", "out_path", required=True, metavar="FILE",
              help="Where to write the clusters ('bitstring<TAB>word<TAB>count' lines; '-' for stdout).")
@click.option("--clusters", "n_clusters", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Number of leaf clusters (time grows with its square).")
@click.option("--min-count", type=click.IntRange(min=1), default=2, show_default=True,
              help="Cluster only the words seen at least this often.")
@click.option("--lowercase", is_flag=True, help="Lowercase the text first.")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary on standard error.")
@with_one_line_errors
def clusters_command(raw, out_path, n_clusters, min_count, lowercase, quiet):
    """Learn Brown clusters from RAW.txt: one sentence per line, tokens split on whitespace
    ('-' reads standard input; .gz is decompressed).

    \b
    structperc clusters raw.txt -o clusters.txt --clusters 1000 --min-count 2
    """
    from structperc.features.clusters import learn_clusters, raw_sentences, write_paths
    from structperc.io.output import output_stream

    if "-" not in (raw, out_path) and os.path.exists(out_path) and os.path.exists(raw) \
            and os.path.samefile(raw, out_path):
        raise InputError("-o names the raw text itself, which the clusters would replace: give another file",
                         out_path)
    start = time.perf_counter()
    with output_stream(out_path) as out:  # opened first: a path that cannot be written fails before the work
        clusters = learn_clusters(raw_sentences(raw, lowercase=lowercase), n_clusters, min_count,
                                  progress=not quiet, source=raw)
        write_paths(clusters, out)
    if not quiet:
        click.echo(f"wrote {out_path}: {len(clusters.paths):,} words in {clusters.n_clusters:,} clusters "
                   f"({time.perf_counter() - start:.1f} s)", err=True)
