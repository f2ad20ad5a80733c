"""What every benchmark checks before it times anything: that the compiled kernels are the ahead-of-time build.

A group whose build is missing or stale (its sources edited since ``python -m structperc.compiled.build`` or
``pip install -e .`` built it) runs under numba's JIT, compiled again in every process a benchmark starts: the
timings would measure the compiler (SXU's test ×5 segmented in 2.0 s instead of 1.05) and the peak memory LLVM's.
"""
from __future__ import annotations

import sys


def require_current_build() -> None:
    """Exit with a one-line message naming the stale groups and the command that rebuilds them, unless the JIT was
    asked for (``STRUCTPERC_KERNELS=jit``)."""
    from structperc.compiled import loader

    stale = loader.stale_groups()
    if stale:
        sys.exit(f"the ahead-of-time kernels {', '.join(stale)} are missing or stale, so every process would compile "
                 f"them first: rebuild them (python -m structperc.compiled.build {' '.join(stale)}), or time the JIT "
                 "on purpose with STRUCTPERC_KERNELS=jit")
