"""Which compiled kernels run: the ahead-of-time build when it matches the source, else numba's JIT.

`pip install` compiles the kernel modules ahead of time into extension modules (numba's ``pycc``, see
`structperc._aot_build`): `structperc.train_kernels`, `structperc.tag_kernels` and
`structperc.weight_kernels` into ``structperc._aot``,
`structperc.read_kernels` into ``structperc._aot_read`` (one extension per group, so a group can be
rebuilt without the other). Loading that
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
import importlib
import os
from pathlib import Path
from types import ModuleType

#: Ahead-of-time extension modules and the kernel modules each is compiled from.
GROUPS: dict[str, tuple[str, ...]] = {
    # intrinsics: the compiler intrinsics train_kernels and tag_kernels use
    "_aot": ("train_kernels", "tag_kernels", "weight_kernels", "intrinsics"),
    "_aot_read": ("read_kernels",),
}


def source_digest(root: str | os.PathLike | None = None, group: str = "_aot") -> int:
    """A 60-bit digest of a group's kernel sources (what its ahead-of-time build was compiled from)."""
    root = Path(root) if root is not None else Path(__file__).parent
    h = hashlib.sha256()
    for name in GROUPS[group]:
        h.update((root / f"{name}.py").read_bytes())
    return int(h.hexdigest()[:15], 16)


def _load_aot(group: str = "_aot") -> ModuleType | None:
    if os.environ.get("STRUCTPERC_KERNELS", "").lower() == "jit":
        return None
    try:
        module = importlib.import_module(f"structperc.{group}")
    except ImportError:
        return None
    try:
        if module.source_digest() != source_digest(group=group):
            return None
    except (AttributeError, OSError):
        return None
    return module


_AOT = _load_aot("_aot")
_AOT_READ = _load_aot("_aot_read")


def aot(name: str):
    """The ahead-of-time build of kernel ``name`` from any current group, or None (no JIT fallback:
    callers that must not pay numba's start-up keep a numpy or Python path of their own)."""
    for module in (_AOT, _AOT_READ):
        if module is not None and hasattr(module, name):
            return getattr(module, name)
    return None


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
