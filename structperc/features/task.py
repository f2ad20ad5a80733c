"""Task presets: the columns, template, label scheme and metric each task starts from.

Every field can be overridden; a preset only saves typing the usual choice.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from structperc.errors import InputError
from structperc.io.conll import CONLLU_COLUMNS
from structperc.labels.constraints import transition_mask


@dataclass(frozen=True)
class Task:
    name: str
    columns: tuple[str, ...]
    tag_column: str
    template: str
    scheme: str            # the data's tag scheme
    metric: str            # "span" (seqeval) or "accuracy"
    constrained: bool
    epochs: int = 10
    encoding: str = ""     # the scheme the model is trained in ("" = the data's scheme)
    gazetteer: bool = False  # add a jackknifed training-data gazetteer column (structperc.features.gazetteer)

    @property
    def model_scheme(self) -> str:
        return self.encoding or self.scheme

    @property
    def token_column(self) -> str:
        """The tokens: the first input column (CoNLL-U's second, ``word``: its first is the ID)."""
        inputs = self.inputs
        return inputs[1] if inputs[0] == "id" and len(inputs) > 1 else inputs[0]

    @property
    def inputs(self) -> list[str]:
        """The input columns, tokens first (everything but skipped columns and the tag column)."""
        return [c for c in self.columns if c not in ("_", self.tag_column)]


TASKS: dict[str, Task] = {
    "chunk": Task("chunk", ("word", "pos", "chunk"), "chunk", "chunk", "iob2", "span", True, 10,
                  encoding="iobes"),
    # 8 epochs: the best mean dev F1 of the ner preset over seeds 0-7 on esp.testa (77.64); on ned.testa
    # the curve is flat from 8 to 17 epochs (77.42 at 8, best 77.52 at 13, seeds 0-3)
    "ner": Task("ner", ("word", "pos", "ner"), "ner", "ner", "iob2", "span", True, 8, encoding="iobes",
                gazetteer=True),
    "pos": Task("pos", tuple(CONLLU_COLUMNS), "upos", "pos", "none", "accuracy", False, 20),
    "cws": Task("cws", ("char", "lexb", "lexe", "lexm", "tag"), "tag", "cws", "bmes", "words", True, 10),
}


def get_task(name: str, **overrides) -> Task:
    """The preset called ``name`` with the non-None ``overrides`` applied."""
    if name not in TASKS:
        raise InputError(f"unknown task {name!r} (known: {', '.join(sorted(TASKS))})")
    return replace(TASKS[name], **{k: v for k, v in overrides.items() if v is not None})


def masks(labels: list[str], task: Task) -> tuple[np.ndarray, np.ndarray]:
    """The transition mask and end penalties of ``task``'s scheme over ``labels`` (all zero when the
    task is unconstrained): what training and decoding forbid (`structperc.labels.constraints`)."""
    return transition_mask(labels, task.model_scheme if task.constrained else "none")
