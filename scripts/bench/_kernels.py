"""What every benchmark checks before it times anything: that the compiled kernels are the ahead-of-time build.

A group whose build is missing or stale (its sources edited since ``python -m structperc.compiled.build`` or
``pip install -e .`` built it) runs under numba's JIT, compiled again in every process a benchmark starts: the
timings would measure the compiler (SXU's test ×5 segmented in 2.0 s instead of 1.05) and the peak memory LLVM's.

The same holds for Python's own compiler: a module whose bytecode (``__pycache__``) is missing or older than its
source is compiled again at every import where bytecode is not written (``PYTHONDONTWRITEBYTECODE``, set on these
machines; an editable install writes none ahead). Installing a wheel writes it, so the package is byte-compiled
first: without it, ``structperc tag`` on EWT test ×5 (one thread, medians of 9) took 1.07 s instead of 0.86 with a
``--lang`` POS model and 0.84 instead of 0.72 without: the model that imports more modules pays more.
"""
from __future__ import annotations

import sys


def require_current_build() -> None:
    """Byte-compile the package (as installing it does), then exit with a one-line message naming the stale
    kernel groups and the command that rebuilds them, unless the JIT was asked for (``STRUCTPERC_KERNELS=jit``)."""
    import compileall
    from pathlib import Path

    import structperc
    from structperc.compiled import loader

    compileall.compile_dir(str(Path(structperc.__file__).parent), quiet=1)

    stale = loader.stale_groups()
    if stale:
        sys.exit(f"the ahead-of-time kernels {', '.join(stale)} are missing or stale, so every process would compile "
                 f"them first: rebuild them (python -m structperc.compiled.build {' '.join(stale)}), or time the JIT "
                 "on purpose with STRUCTPERC_KERNELS=jit")
