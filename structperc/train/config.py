"""Estimator parameters -> the `Task` a run trains for, validated before any data is read (the rules
themselves: `structperc.train.options`, declared once for every face)."""
from __future__ import annotations

import os
from typing import Any

from structperc.errors import InputError
from structperc.features.task import Task, get_task
from structperc.io.conll import first_width
from structperc.train.options import OPTIONS, RULES, WORD_ENCODINGS, OptionError, label, validate

__all__ = ["OPTIONS", "RULES", "WORD_ENCODINGS", "OptionError", "check", "label", "mixing_scale",
           "order_of", "task_for", "validate"]


def task_for(params: dict[str, Any]) -> Task:
    """The task preset named by ``params["task"]`` with the parameters that override it."""
    cols = tuple(params["columns"]) if params.get("columns") is not None else None
    tag = params.get("tag_column")
    if cols is not None and tag is None:  # the last named column (none named: `check` refuses the preset's)
        tag = next((c for c in reversed(cols) if c != "_"), None)
    return get_task(params["task"], columns=cols, tag_column=tag, scheme=params.get("scheme"),
                    constrained=params.get("constrained"), epochs=params.get("epochs"),
                    encoding=params.get("encoding"))


def check(params: dict[str, Any], task: Task, *, data: Any = None, lines: list[str] | None = None,
          **run: Any) -> None:
    """Refuse parameters no run could use (`validate`), and columns that leave nothing to tag from.
    ``run``: the options of the run beside the estimator's parameters (``dev`` given or not, ``workers``,
    ``checkpoint_dir`` …); ``data``: the training input, named (a file) where a rule is about it."""
    validate({**params, **run}, task=task, lines=lines, data=data)
    if not task.inputs:
        raise _no_input_column(task, data)


def _no_input_column(task: Task, data: Any) -> InputError:
    """The error of columns that name the tag column alone: with the width of the file when ``data``
    is one (the usual cause: --columns names fewer columns than the file has)."""
    names = ",".join(task.columns)
    width = first_width(data) if isinstance(data, (str, os.PathLike)) and os.path.isfile(data) else None
    if width is not None:
        return InputError(f"has {width} column{'s' if width != 1 else ''} but --columns names "
                          f"{len(task.columns)} ({names}): only the tag column {task.tag_column!r}, nothing to tag "
                          "from; name every column, left to right (e.g. --columns word,pos,chunk)", str(data))
    return InputError(f"the columns ({names}) name only the tag column {task.tag_column!r}, nothing to tag "
                      "from: name the input columns too, left to right (e.g. word,pos,chunk)")


def order_of(params: dict) -> int:
    """The Markov order of the transitions a run trains (``params["order"]``; models saved before it: 1)."""
    return int(params.get("order", 1))


def mixing_scale(workers: int, mixing: str | None) -> dict:
    """``{"workers": N, "mixing": ...}`` for iterative parameter mixing (checked by `validate`), or ``{}`` for one
    worker: what the checkpoint fingerprint and the model's provenance record of it."""
    from structperc.train.mixing import DEFAULT_MIXING

    return {"workers": int(workers), "mixing": mixing or DEFAULT_MIXING} if workers > 1 else {}
