"""The command line's one error handler: errors a user can fix (bad input, a damaged model, a file
that cannot be opened) become a one-line message and exit status 1, never a traceback."""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
from typing import Any, Callable, Iterator, NoReturn

import click

from structperc.errors import StructpercError, StructpercWarning


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn the package's errors and `OSError` into `click.ClickException` (one line, exit 1)."""
    try:
        yield
    except StructpercError as exc:
        raise click.ClickException(" ".join(str(exc).split())) from None
    except BrokenPipeError:
        quiet_broken_pipe()
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        raise click.ClickException(f"{where}{exc.strerror or exc}") from None


def quiet_broken_pipe() -> NoReturn:
    """The reader of standard output went away (``structperc tag … | head -1``): stop without a word,
    as Unix tools do, with the status a shell gives a tool that SIGPIPE ended (128 + 13). Standard
    output is pointed at /dev/null first, so that flushing it at exit does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    raise SystemExit(141)


def with_one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """`one_line_errors` around a command, for commands that also run outside the main group."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return func(*args, **kwargs)
    return wrapper


def one_line_warnings() -> None:
    """Print the package's warnings (`StructpercWarning`: e.g. probabilities of an uncalibrated model)
    as one ``Warning: ...`` line on standard error; other warnings as Python shows them."""
    shown = warnings.showwarning
    if getattr(shown, "structperc", False):
        return

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        if issubclass(category, StructpercWarning):
            click.echo("Warning: " + " ".join(str(message).split()), err=True)
        else:
            shown(message, category, filename, lineno, file, line)

    show.structperc = True  # type: ignore[attr-defined]
    warnings.showwarning = show
