"""The command line's one error handler: errors a user can fix (bad input, a damaged model, a file
that cannot be opened) become a one-line message and exit status 1, never a traceback."""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterator

import click

from structperc.errors import StructpercError


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """Turn the package's errors and `OSError` into `click.ClickException` (one line, exit 1)."""
    try:
        yield
    except StructpercError as exc:
        raise click.ClickException(" ".join(str(exc).split())) from None
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        raise click.ClickException(f"{where}{exc.strerror or exc}") from None


def with_one_line_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """`one_line_errors` around a command, for commands that also run outside the main group."""
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with one_line_errors():
            return func(*args, **kwargs)
    return wrapper
