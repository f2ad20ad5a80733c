"""Error types users can catch; the CLI turns them into one-line messages without a traceback."""
from __future__ import annotations


class StructpercError(Exception):
    """Base of every error this package raises on purpose."""


class InputError(StructpercError, ValueError):
    """Bad user input: names the file and line so the user can fix the data, not the code."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.reason = message
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class ModelFormatError(StructpercError, ValueError):
    """A model file that is not ours, is damaged, or was written by a newer version."""


class StructpercWarning(UserWarning):
    """Base of the package's warnings; the CLI prints them as one ``Warning: ...`` line."""


class UncalibratedWarning(StructpercWarning):
    """Probabilities (marginals, confidences, k-best or sequence probabilities) asked of a model with
    no fitted temperature: they are over-confident until ``structperc calibrate`` fits one. Said once
    per model (`structperc.predict.confidence_temperature`)."""
