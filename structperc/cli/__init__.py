"""The `structperc` command: a thin layer that calls one library function per command.

Errors the user can fix (bad input, a damaged model) become a one-line message and exit status 1,
never a traceback.
"""
from __future__ import annotations

import gc
import os
import sys

import click

from structperc.cli.errors import one_line_errors


class _Group(click.Group):
    #: Commands imported only when used: the binary perceptrons pull in scipy.optimize (seconds of
    #: start-up that `structperc tag` must not pay).
    lazy = {"binary": "structperc.binary.cli:binary_command",
            "compress": "structperc.cli.lifecycle:compress_command",
            "info": "structperc.cli.lifecycle:info_command"}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def get_command(self, ctx: click.Context, name: str):
        if name in self.lazy and name not in self.commands:
            import importlib

            module, attr = self.lazy[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attr), name)
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        try:
            with one_line_errors():
                return super().invoke(ctx)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="structperc")
def main() -> None:
    """Sequence tagging with the averaged structured perceptron.

    \b
    structperc train --train train.txt --columns word,pos,chunk --model chunker/
    structperc tag   --model chunker/ < sentences.conll > tagged.conll
    structperc eval  --model chunker/ test.txt
    """
    # Reading a corpus makes millions of small str objects and no reference cycles: the cyclic
    # collector would only rescan them again and again (~15% of `tag`'s time on a large file).
    gc.set_threshold(100_000, 50, 100)


def _single_threaded_blas() -> None:
    """OpenBLAS starts a thread per core when numpy is imported (≈50 ms of `structperc tag`'s
    start-up on this machine); training, tagging and scoring do no BLAS work. Only effective before
    numpy's import, which these commands do lazily; a user's own setting wins."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _return_freed_memory() -> None:
    """Make glibc hand freed numpy arrays back to the system while training.

    glibc serves blocks below its mmap threshold from the heap and raises that threshold (up to
    32 MiB) whenever a larger block is freed, so the medium arrays of feature extraction (columns of
    keys and ids, 1-10 MB each) stay resident after use. A fixed 128 KiB threshold returns them:
    peak RSS of `train` on CoNLL-2000 drops by ~9 MB. Other C libraries: nothing to do.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").mallopt(-3, 128 * 1024)  # M_MMAP_THRESHOLD
    except (OSError, AttributeError):
        pass


def _columns(value: str | None) -> list[str] | None:
    return [c.strip() for c in value.split(",")] if value else None


def _progress(epochs: int, quiet: bool):
    """An epoch callback: a progress bar on a terminal, one line per epoch otherwise."""
    if quiet:
        return None, None
    if sys.stderr.isatty():
        bar = click.progressbar(length=epochs, label="training", file=sys.stderr,
                                item_show_func=lambda r: str(r) if r else None, show_pos=True)
        bar.__enter__()

        def cb(report):
            if report.epoch == 1 and bar.length != report.epochs:
                bar.length = report.epochs
            bar.update(1, report)
            if report.epoch == report.epochs:
                bar.render_finish()
                bar.pos = 0
        return cb, bar

    def echo(report):
        click.echo(str(report), err=True)
    return echo, None


@main.command()
@click.option("--train", "train_path", required=True, metavar="FILE",
              help="Training corpus: CoNLL columns (.gz ok) or CoNLL-U (.conllu).")
@click.option("--dev", "dev_path", metavar="FILE", help="Held-out corpus: keep the epoch that scores best on it.")
@click.option("--dev-split", type=float, default=0.0, show_default=True,
              help="Hold out this fraction of --train to pick the number of epochs, then retrain on all "
                   "of it (use instead of --dev to keep the test set unseen).")
@click.option("--model", "model_path", required=True, metavar="DIR", help="Where to save the model.")
@click.option("--task", default="chunk", show_default=True,
              help="Preset of columns, template, label scheme and metric: chunk, ner, pos, cws.")
@click.option("--columns", help="Column names, left to right, e.g. word,pos,chunk ('_' skips one).")
@click.option("--tag-column", help="Column to predict [default: the last named column].")
@click.option("--template", help="Template preset (crfsuite, chunk, …) or a file with one template per line.")
@click.option("--epochs", type=click.IntRange(min=1), help="Passes over the training data [default: task's].")
@click.option("--min-count", type=click.IntRange(min=1), default=1, show_default=True,
              help="Drop attributes seen fewer times in training.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the per-epoch shuffling.")
@click.option("--feature-set", type=click.Choice(["all", "observed"]), default="all", show_default=True,
              help="State weights for every (attribute, label) pair, or only for the pairs seen in "
                   "training (CRFsuite's feature set: far less memory, smaller model).")
@click.option("--scheme", type=click.Choice(["none", "iob1", "iob2", "iobes", "bilou", "bmes"]),
              help="Tag scheme of the data [default: task's].")
@click.option("--constrained/--unconstrained", default=None,
              help="Forbid transitions the scheme does not allow [default: on for span tasks].")
@click.option("--encoding", type=click.Choice(["iob1", "iob2", "iobes"]),
              help="Span scheme the model learns in; output keeps the data's scheme [default: iobes].")
@click.option("--lexicon", metavar="FILE",
              help="cws: extra dictionary words, one per line (training words are always used).")
@click.option("--checkpoint-dir", metavar="DIR",
              help="Save the full trainer state after every epoch (atomically) to DIR.")
@click.option("--resume", metavar="DIR", help="Continue the run whose checkpoints are in DIR.")
@click.option("--init-model", metavar="DIR",
              help="Continue training this saved model on --train (new attributes and labels are added).")
@click.option("--tokens-column", default="tokens", show_default=True,
              help="Token column when --train is a dataset (datasets directory, .jsonl, .parquet, hf:NAME).")
@click.option("--tags-column", help="Tag column of a dataset [default: the task's tag column].")
@click.option("--plot", metavar="FILE.png",
              help="Write the learning curve (dev score and training mistakes per epoch); needs matplotlib.")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
def train(train_path, dev_path, dev_split, model_path, task, columns, tag_column, template, epochs,
          min_count, seed, feature_set, scheme, constrained, encoding, lexicon, checkpoint_dir, resume, init_model,
          tokens_column, tags_column, plot, quiet):
    """Train a tagger (or, with --task cws, a word segmenter) and save it to --model."""
    _single_threaded_blas()
    from structperc import workflows
    from structperc.model.task import get_task

    _return_freed_memory()
    if lexicon and task != "cws":
        raise click.UsageError("--lexicon is for --task cws")
    callback, _ = _progress(epochs or get_task(task).epochs, quiet)
    model, path = workflows.train(
        train_path, model_path, task=task, dev_path=dev_path, init_model=init_model, lexicon=lexicon,
        tokens_column=tokens_column, tags_column=tags_column, callback=callback,
        checkpoint_dir=checkpoint_dir, resume=resume, plot=plot, template=template,
        columns=_columns(columns), tag_column=tag_column, scheme=scheme, constrained=constrained,
        encoding=encoding, epochs=epochs, min_count=min_count, seed=seed, dev_split=dev_split,
        feature_set=feature_set)
    if not quiet:
        extra = f", best epoch {model.best_epoch_}" if (dev_path or dev_split) else ""
        click.echo(f"saved {path} ({len(model.labels_)} labels, "
                   f"{model.features_.n_state_attributes:,} attributes{extra})", err=True)


@main.command()
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train'.")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-",
              help="Where to write [default: standard output].")
@click.argument("inputs", nargs=-1, metavar="[FILE]...")
def tag(model_path, output, inputs):
    """Tag CoNLL sentences (standard input or FILEs): each line comes back with the predicted tag
    appended as a new last column (a gold tag column, if present, is kept: conlleval reads it)."""
    _single_threaded_blas()
    from structperc import workflows

    workflows.tag_files(model_path, inputs, output)


@main.command("eval")
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train'.")
@click.option("--task", help="Optional check: the task the model must have been trained for.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--strict", is_flag=True, help="seqeval strict mode (exact scheme-conformant spans).")
@click.argument("path", metavar="FILE")
def evaluate(model_path, task, as_json, strict, path):
    """Tag a gold-annotated FILE and report scores: span P/R/F1 per type (chunk, ner), token accuracy
    and confusions (pos), word P/R/F1 with OOV and IV recall (cws). The task comes from the model."""
    _single_threaded_blas()
    from structperc import workflows
    from structperc.metrics import format_report, to_json

    report = workflows.evaluate(model_path, path, task=task, strict=strict)
    click.echo(to_json(report) if as_json else format_report(report))


@main.command()
@click.option("--model", "model_path", required=True, metavar="DIR", help="A model saved by 'train --task cws'.")
@click.option("-o", "--output", type=click.File("w", encoding="utf-8"), default="-",
              help="Where to write [default: standard output].")
@click.option("--sep", default=" ", show_default=True, help="Separator between words.")
@click.argument("inputs", nargs=-1, metavar="[FILE]...")
def segment(model_path, output, sep, inputs):
    """Segment raw Chinese text (standard input or FILEs), line by line: one output line per input
    line, empty lines kept. Streams in batches, so memory stays flat on large files."""
    _single_threaded_blas()
    from structperc import workflows

    workflows.segment_files(model_path, inputs, output, sep)


if __name__ == "__main__":  # pragma: no cover
    main()
