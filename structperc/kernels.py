"""Which compiled kernels run: the ahead-of-time build when it matches the source, else numba's JIT.

`pip install` compiles `structperc.train_kernels` and `structperc.tag_kernels` ahead of time into the
extension module ``structperc._aot`` (numba's ``pycc``, see `structperc._aot_build`). Loading that
module costs what loading any small extension costs: no numba, no LLVM in the process. That is worth
~0.3 s of start-up and ~90 MiB of resident memory (measured: ``python -c "import numba"`` peaks at
93 MB, ``import numpy`` at 27 MB), which dominate `structperc tag` on a small file and the peak
memory of training.

The build records a digest of the kernel sources; if the sources changed since (an editable install
edited in place), the stale module is ignored and the JIT runs the current code instead, so the two
can never disagree silently. ``STRUCTPERC_KERNELS=jit`` forces the JIT (the tests use it to compare).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import ModuleType

_SOURCES = ("train_kernels.py", "tag_kernels.py")


def source_digest(root: str | os.PathLike | None = None) -> int:
    """A 60-bit digest of the kernel sources (what the ahead-of-time build was compiled from)."""
    root = Path(root) if root is not None else Path(__file__).parent
    h = hashlib.sha256()
    for name in _SOURCES:
        h.update((root / name).read_bytes())
    return int(h.hexdigest()[:15], 16)


def _load_aot() -> ModuleType | None:
    if os.environ.get("STRUCTPERC_KERNELS", "").lower() == "jit":
        return None
    try:
        from structperc import _aot  # type: ignore[attr-defined]
    except ImportError:
        return None
    try:
        if _aot.source_digest() != source_digest():
            return None
    except (AttributeError, OSError):
        return None
    return _aot


_AOT = _load_aot()


def mode() -> str:
    """``"aot"`` when the ahead-of-time build is in use, else ``"jit"``."""
    return "aot" if _AOT is not None else "jit"


def train_epoch(*args):
    """`structperc.train_kernels.train_epoch`, from the ahead-of-time build when possible."""
    if _AOT is not None:
        return _AOT.train_epoch(*args)
    from structperc import train_kernels
    return train_kernels.train_epoch(*args)


def warm_up() -> None:
    """Load or compile the JIT kernels before timed work (nothing to do for the ahead-of-time build)."""
    if _AOT is None:
        from structperc import train_kernels
        train_kernels.warm_up()


def decode_corpus(*args) -> bool:
    """`structperc.tag_kernels.decode_corpus` from the ahead-of-time build; False when it is absent.

    Tagging never JIT-compiles: without the build, the caller's vectorized numpy decoder is faster
    than numba's import and cache load on all but very large inputs.
    """
    if _AOT is None:
        return False
    _AOT.decode_corpus(*args)
    return True
