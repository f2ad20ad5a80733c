"""Compiled corpus reading over raw bytes (built ahead of time into ``structperc._aot_read``).

Empty for now: the readers in `structperc.corpus` use their Python paths when a kernel is absent.
"""
from __future__ import annotations

#: Exported signatures of the ahead-of-time build (see `structperc._aot_build`).
AOT_EXPORTS: dict[str, str] = {}
