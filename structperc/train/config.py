"""Estimator parameters -> the `Task` a run trains for, validated before any data is read."""
from __future__ import annotations

import os
from typing import Any

import numpy as np

from structperc.errors import InputError
from structperc.features.task import Task, get_task
from structperc.io.conll import first_width
from structperc.labels.bmes6 import BMES6
from structperc.labels.schemes import SPAN_SCHEMES
from structperc.model.state_weights import FEATURE_SETS
from structperc.train.perceptron import margin_hyperparameters

#: The schemes a segmentation model (BMES data) may learn in: BMES itself or the 6-tag set.
WORD_ENCODINGS = ("bmes", BMES6)


def task_for(params: dict[str, Any]) -> Task:
    """The task preset named by ``params["task"]`` with the parameters that override it."""
    cols = tuple(params["columns"]) if params.get("columns") is not None else None
    tag = params.get("tag_column")
    if cols is not None and tag is None:  # the last named column (none named: `check` refuses the preset's)
        tag = next((c for c in reversed(cols) if c != "_"), None)
    return get_task(params["task"], columns=cols, tag_column=tag, scheme=params.get("scheme"),
                    constrained=params.get("constrained"), epochs=params.get("epochs"),
                    encoding=params.get("encoding"))


def check(params: dict[str, Any], task: Task, *, dev: bool = False, data: Any = None) -> None:
    """Refuse parameters no run could use, with a message naming the parameter. ``dev``: a dev set is
    given as well; ``data``: the training input, named (a file) where a rule is about it."""
    epochs = params.get("epochs")
    if not isinstance(epochs if epochs is not None else task.epochs, int) or task.epochs < 1:
        raise InputError(f"epochs must be a positive integer, got {task.epochs!r}")
    for name in ("min_count", "folds"):
        value = params.get(name, 1)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")
    seed = params.get("seed", 0)
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    if params["feature_set"] not in FEATURE_SETS:
        raise InputError(f"feature_set must be one of {', '.join(FEATURE_SETS)}, got "
                         f"{params['feature_set']!r}")
    margin_hyperparameters(params.get("margin", 0.0), params.get("step", "perceptron"), params.get("C", 1.0))
    order = params.get("order", 1)
    if isinstance(order, bool) or order not in (1, 2):
        raise InputError(f"order must be 1 or 2 (the Markov order of the transitions), got {order!r}")
    if order == 2 and (float(params.get("margin", 0.0)) != 0.0 or params.get("step", "perceptron") != "perceptron"):
        raise InputError("second-order transitions (order=2) train with the default update only: leave out "
                         "margin and step")
    if not 0.0 <= float(params["dev_split"]) < 1.0:
        raise InputError(f"dev_split must be in [0, 1), got {params['dev_split']!r}")
    if task.metric == "span" and (task.scheme not in SPAN_SCHEMES
                                  or task.model_scheme not in ("iob1", "iob2", "iobes")):
        raise InputError(f"span tasks need a span scheme (data: {task.scheme!r}, model: "
                         f"{task.model_scheme!r}; known: {', '.join(SPAN_SCHEMES)})")
    if task.scheme == "bmes" and task.model_scheme not in WORD_ENCODINGS:
        raise InputError(f"a segmentation model (scheme 'bmes') learns in one of the encodings "
                         f"{', '.join(WORD_ENCODINGS)}, not {task.model_scheme!r} (data: {task.scheme!r})")
    if task.model_scheme in WORD_ENCODINGS and task.scheme != "bmes":
        raise InputError(f"encoding {task.model_scheme!r} is for segmentation data in the 'bmes' scheme, "
                         f"not {task.scheme!r}")
    named = [c for c in task.columns if c != "_"]
    twice = sorted({c for c in named if named.count(c) > 1})
    if twice:
        raise InputError(f"columns name {', '.join(map(repr, twice))} twice ({','.join(task.columns)}): give "
                         "each column a name of its own ('_' skips one)")
    if task.tag_column not in task.columns:
        raise InputError(f"tag column {task.tag_column!r} is not among the columns "
                         f"{list(task.columns)}")
    if not task.inputs:
        raise _no_input_column(task, data)
    if dev and params.get("dev_split"):
        raise InputError("--dev (dev=) and --dev-split (dev_split=) both choose the number of epochs: give one "
                         "of them, not both")


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

def check_order(params: dict, mixing: bool, checkpoints: bool) -> None:
    """Refuse what second-order training (`structperc.train.order2`) does not do, in one line each."""
    if order_of(params) == 1:
        return
    if mixing:
        raise InputError("second-order transitions (order=2) train on one worker: leave out --workers/--dask")
    if checkpoints:
        raise InputError("second-order transitions (order=2) do not save or resume checkpoints: leave out "
                         "--checkpoint-dir/--resume")

def mixing_scale(workers: int, mixing: str | None) -> dict:
    """``{"workers": N, "mixing": ...}`` for iterative parameter mixing (checked), or ``{}`` for one
    worker: what the checkpoint fingerprint and the model's provenance record of it."""
    from structperc.train.mixing import DEFAULT_MIXING, MIXINGS

    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise InputError(f"workers must be a positive integer (got {workers!r})")
    if mixing is not None and mixing not in MIXINGS:
        raise InputError(f"unknown mixing {mixing!r} (one of {', '.join(MIXINGS)})")
    return {"workers": int(workers), "mixing": mixing or DEFAULT_MIXING} if workers > 1 else {}
