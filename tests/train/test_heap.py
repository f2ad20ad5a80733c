"""`structperc.train.heap`: the heap's free pages go back to the system before the epochs (glibc's malloc_trim)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from structperc.train import heap

_PROBE = r"""
import sys
from structperc.train.heap import release_free_memory

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

# 64 MB of 1 KiB buffers (malloc's heap, below its mmap threshold), every 64th kept: the free pages between
# the survivors cannot be handed back by shrinking the heap's top, only by a trim
blocks = [bytes(1024) for _ in range(65536)]
kept = blocks[::64]
del blocks
before = rss_mb()
ok = release_free_memory()
print(ok, before, rss_mb(), len(kept))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or heap._trim() is None,
                    reason="malloc_trim is glibc's (Linux)")
def test_free_pages_between_live_buffers_go_back_to_the_system():
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True).stdout.split()
    ok, before, after = out[0] == "True", float(out[1]), float(out[2])
    assert ok
    assert before - after > 32, (before, after)  # most of the 63 MB freed was still resident before


def test_without_glibc_nothing_is_done(monkeypatch):
    monkeypatch.setattr(heap, "_trim", lambda: None)
    assert heap.release_free_memory() is False
