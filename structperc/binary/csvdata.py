"""Reading a labelled CSV file for the ``structperc binary`` command.

Why a module of its own: the CLI must turn every kind of bad file into one
line that names the file and the line, and that is easier to get right (and
to test) in one small reader than spread over the command.

Format: comma-separated numbers, one point per line, the last column the
label (+1 or -1).  An optional first line without any numeric cell is taken
as a header.  Blank lines are skipped.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from os import PathLike

import numpy as np
from numpy.typing import NDArray


class DataFileError(ValueError):
    """A CSV file that cannot be used; the message is one line: ``FILE:LINE: what``."""


@dataclass(frozen=True)
class LabelledData:
    """Points ``X`` (n, d), labels ``y`` in {+1, -1}, and the header if there was one."""

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    header: list[str] | None


def _number(cell: str) -> float | None:
    try:
        return float(cell)
    except ValueError:
        return None


def read_labelled_csv(path: str | PathLike[str]) -> LabelledData:
    """Read ``path``; raise :class:`DataFileError` naming the file and line on bad input.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "d.csv"
    >>> _ = p.write_text("x1,x2,label\\n1,2,+1\\n-1,0.5,-1\\n")
    >>> data = read_labelled_csv(p)
    >>> data.X.shape, data.y.tolist(), data.header
    ((2, 2), [1.0, -1.0], ['x1', 'x2', 'label'])
    """
    name = str(path)
    try:
        with open(path, "rb") as handle:
            raw_bytes = handle.read()
    except OSError as exc:
        raise DataFileError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad_line = raw_bytes[: exc.start].count(b"\n") + 1
        raise DataFileError(f"{name}:{bad_line}: not UTF-8 text ({exc.reason})") from None
    header: list[str] | None = None
    rows: list[list[float]] = []
    width: int | None = None
    reader = csv.reader(io.StringIO(text, newline=""))
    line = 0
    try:
        for raw in reader:
            line = reader.line_num
            cells = [cell.strip() for cell in raw]
            if not any(cells):
                continue
            values = [_number(cell) for cell in cells]
            if header is None and not rows and all(v is None for v in values):
                header = cells
                width = len(cells)
                continue
            if width is None:
                width = len(cells)
            if width < 2:
                raise DataFileError(f"{name}:{line}: need at least one feature column "
                                    f"and a label column, found {len(cells)} column(s)")
            if len(cells) != width:
                raise DataFileError(f"{name}:{line}: expected {width} columns, found {len(cells)}")
            for col, (cell, value) in enumerate(zip(cells, values), start=1):
                if value is None:
                    what = "empty cell" if cell == "" else f"non-numeric value {cell!r}"
                    raise DataFileError(f"{name}:{line}: column {col}: {what}")
                if not math.isfinite(value):
                    raise DataFileError(f"{name}:{line}: column {col}: non-finite value {cell!r}")
            if values[-1] not in (1.0, -1.0):
                raise DataFileError(f"{name}:{line}: label {cells[-1]!r} is not +1 or -1")
            rows.append(values)  # type: ignore[arg-type]
    except csv.Error as exc:
        raise DataFileError(f"{name}:{reader.line_num}: malformed CSV ({exc})") from None
    if not rows:
        raise DataFileError(f"{name}:{max(line, 1)}: no data rows")
    table = np.asarray(rows, dtype=np.float64)
    return LabelledData(np.ascontiguousarray(table[:, :-1]), table[:, -1].copy(), header)
