"""The date a model's provenance records (training, compression, a shipped model's card).

UTC now, or ``SOURCE_DATE_EPOCH`` when set: the reproducible-builds convention
(https://reproducible-builds.org/specs/source-date-epoch/), under which the same command gives a
byte-identical model file. Every date a model file holds comes from here, so that no part of a model
(a two-stage model's first stage, a vote's member) keeps the wall clock when the variable is set.
"""
from __future__ import annotations

import datetime
import os


def record_date() -> str:
    """UTC time as ISO 8601 to the second, or ``SOURCE_DATE_EPOCH`` (seconds since 1970) when set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch and \
        epoch.isdigit() else datetime.datetime.now(datetime.timezone.utc)
    return when.isoformat(timespec="seconds")
