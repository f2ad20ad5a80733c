"""The `structperc` command: a thin layer that calls one library function per command.

Errors the user can fix (bad input, a damaged model) become a one-line message and exit status 1,
never a traceback.
"""
from __future__ import annotations

import gc

import click

from structperc.cli.errors import one_line_errors, one_line_warnings


class _Group(click.Group):
    #: Commands imported only when used: the binary perceptrons pull in scipy.optimize (seconds of
    #: start-up that `structperc tag` must not pay).
    lazy = {"binary": "structperc.binary.cli:binary_command",
            "compress": "structperc.cli.lifecycle:compress_command",
            "info": "structperc.cli.lifecycle:info_command",
            "models": "structperc.cli.lifecycle:models_command",
            "serve": "structperc.cli.serving:serve_command",
            "clusters": "structperc.cli.clusters:clusters_command"}

    #: What `structperc --help` lists for each lazy command, so that the help imports none of them
    #: (`scipy.optimize` and numba alone cost over 2 s); a test keeps these equal to the commands' own.
    lazy_help = {"binary": "Train a binary perceptron on CSV and print its updates...",
                 "compress": "Shrink a model (tagger or segmenter) by dropping the...",
                 "info": "Describe a model: task, labels, templates, sizes, how it was...",
                 "models": "List the shipped models: name, task, language, corpus and...",
                 "serve": "Serve models over HTTP: a JSON API (POST /tag, POST...",
                 "clusters": "Learn Brown clusters from RAW.txt: one sentence per line,..."}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.lazy))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            if name in self.lazy and name not in self.commands:
                rows.append((name, self.lazy_help[name]))
            else:
                command = self.get_command(ctx, name)
                if command is not None and not command.hidden:
                    rows.append((name, command.get_short_help_str(formatter.width - 6 - len(name))))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

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
    one_line_warnings()


from structperc.cli.tagging import calibrate, evaluate, segment, tag  # noqa: E402
from structperc.cli.training import train  # noqa: E402

for _command in (train, tag, evaluate, segment, calibrate):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    main()
