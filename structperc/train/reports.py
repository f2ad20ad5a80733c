"""What one epoch of training did (`EpochReport`): the one record every trainer hands its callback.

Its own module so that the readers of reports (progress bars, logs, learning curves in
`structperc.train.plot`) need not import a trainer, and every trainer of
`structperc.train.trainer` reports in the same shape whatever its update rule.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EpochReport:
    """What one epoch did, for progress bars and logs."""

    epoch: int
    epochs: int
    mistakes: int
    token_errors: int
    n_sentences: int
    n_tokens: int
    seconds: float
    dev_score: float | None = None
    best: bool = False
    skipped: int = 0  # partially labelled sentences no path through their known tags could fill
    stage: int = 0  # 1: an epoch of a two-stage model's first stage (`structperc.train.run`); 0: the model's own

    @property
    def tokens_per_second(self) -> float:
        return self.n_tokens / self.seconds if self.seconds > 0 else float("inf")

    def __str__(self) -> str:
        dev = f"  dev {100 * self.dev_score:.2f}{' *' if self.best else ''}" \
            if self.dev_score is not None else ""
        skipped = f" ({self.skipped} partial with no agreeing path)" if self.skipped else ""
        stage = "first stage: " if self.stage == 1 else ""
        return (f"{stage}epoch {self.epoch}/{self.epochs}  mistakes {self.mistakes}/{self.n_sentences} "
                f"sentences{skipped}  {self.token_errors} tokens{dev}  {self.seconds:.2f} s  "
                f"{self.tokens_per_second:,.0f} tokens/s")
