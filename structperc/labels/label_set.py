"""Label sets: string labels <-> integer ids, sorted so the same data always gives the same ids."""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from structperc.errors import InputError


class LabelSet:
    """String labels ↔ ids (sorted, so the same data always gives the same ids).

    Examples
    --------
    >>> ls = LabelSet(["B-NP", "O", "I-NP", "O"])
    >>> ls.labels, ls.encode(["O", "B-NP"]).tolist()
    (['B-NP', 'I-NP', 'O'], [2, 0])
    """

    def __init__(self, labels: Sequence[str]):
        self.labels = sorted(set(labels))
        self.index = {lab: i for i, lab in enumerate(self.labels)}

    def __len__(self) -> int:
        return len(self.labels)

    def encode(self, tags: Sequence[str], unknown: int | None = None) -> np.ndarray:
        """Ids of ``tags``; an unseen tag becomes ``unknown`` or raises if it is None."""
        index = self.index
        try:
            # map runs in C: no Python frame per token
            if unknown is None:
                return np.fromiter(map(index.__getitem__, tags), dtype=np.int32, count=len(tags))
            return np.fromiter(map(index.get, tags, itertools.repeat(unknown)), dtype=np.int32, count=len(tags))
        except KeyError as exc:
            raise InputError(f"label {exc.args[0]!r} was not seen in training") from None

    def decode(self, ids: np.ndarray) -> list[str]:
        labels = self.labels
        return [labels[i] for i in ids.tolist()]
