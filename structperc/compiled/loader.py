"""Which compiled kernels run: the ahead-of-time build when it matches the source, else numba's JIT.

`pip install` compiles the kernel modules ahead of time into extension modules (numba's ``pycc``, see
`structperc.compiled.build`): the training epoch (`structperc.train.epoch_kernels`), the tagging
decoder (`structperc.decode.tag_kernels`) and model loading (`structperc.model.weight_kernels`) into
``structperc._aot``; the corpus scanners (`structperc.io.read_kernels`), the segmentation lexicon's
longest matches (`structperc.features.lexicon_kernels`) and the key lookups of the attribute index
(`structperc.features.lookup_kernels`) into ``structperc._aot_read`` (one extension per group, so a
group can be rebuilt without the others). Loading that module costs
what loading any small extension costs: no numba, no LLVM in the process. That is worth ~0.3 s of
start-up and ~90 MiB of resident memory (measured: ``python -c "import numba"`` peaks at 93 MB,
``import numpy`` at 27 MB), which dominate `structperc tag` on a small file and the peak memory of
training.

The build records a digest of the kernel sources; if the sources changed since (an editable install
edited in place), the stale module is ignored and the JIT runs the current code instead, so the two
can never disagree silently. ``STRUCTPERC_KERNELS=jit`` forces the JIT (the tests use it to compare).

This module only finds the build: each kernel's caller keeps its own fallback (the JIT module beside
it, or a numpy twin), so nothing here imports upwards into the rooms that use compiled code.
"""
from __future__ import annotations

import hashlib
import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

#: Ahead-of-time extension modules and the kernel modules (relative to the package) each is built from.
#: A group's digest must cover every module whose code its build compiles in: the kernel modules
#: and what they import. compiled.intrinsics: the compiler intrinsics the epoch and the Viterbi step
#: use; decode.score_kernels: the tagging lattice (token scores, transition tables, Viterbi step)
#: that the four tagging-side kernels share, so that an edit there makes all four builds stale.
GROUPS: dict[str, tuple[str, ...]] = {
    "_aot": ("train.epoch_kernels", "decode.tag_kernels", "model.weight_kernels", "decode.score_kernels",
             "compiled.intrinsics", "train.order2_kernels", "compiled.pair_viterbi"),
    "_aot_read": ("io.read_kernels", "features.lexicon_kernels", "features.lookup_kernels",
                  "features.resources.table_kernels", "features.gazetteer_kernels", "compiled.intrinsics"),
    # inference beyond the best path (issue 16): forward-backward, k-best, constrained decoding
    "_aot_fb": ("decode.fb_kernels", "decode.score_kernels", "compiled.intrinsics"),
    "_aot_nbest": ("decode.nbest_kernels", "decode.score_kernels", "compiled.intrinsics"),
    "_aot_constrained": ("decode.constrained_kernels", "decode.score_kernels", "compiled.intrinsics"),
    # second-order models (issue 20, opt-in ``order=2``): their tagging decoder; their training epoch
    # is in ``_aot``, beside the first-order epoch whose kernels it calls
    "_aot_order2": ("decode.order2_kernels", "compiled.pair_viterbi"),
}


def source_digest(root: str | os.PathLike | None = None, group: str = "_aot") -> int:
    """A 60-bit digest of a group's kernel sources (what its ahead-of-time build was compiled from)."""
    package = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for name in GROUPS[group]:
        h.update((package / (name.replace(".", "/") + ".py")).read_bytes())
    return int(h.hexdigest()[:15], 16)


#: ``STRUCTPERC_KERNELS``: unset (the ahead-of-time build where it is current), ``jit`` (no build: each
#: caller's own JIT module or numpy twin) or ``jit-kernels`` (the very kernels the build is made of,
#: compiled by numba's JIT: with ``NUMBA_BOUNDSCHECK=1`` every index they take is checked, which the
#: ahead-of-time code never does; the tests compare the two byte for byte).
def kernels_setting() -> str:
    return os.environ.get("STRUCTPERC_KERNELS", "").lower()


def _load_aot(group: str = "_aot") -> ModuleType | None:
    if kernels_setting() in ("jit", "jit-kernels"):
        return None
    try:
        module = importlib.import_module(f"structperc.{group}")
    except ImportError:
        return None
    try:
        if module.source_digest() != source_digest(group=group) or module.cpu_digest() != cpu_digest():
            return None
    except (AttributeError, OSError):
        return None
    return module


def cpu_digest() -> int:
    """A 60-bit digest of this processor's instruction set as the kernel sees it: the machine and,
    on Linux, the first CPU's feature flags. The build compiles for the host's features
    (`structperc.compiled.build.host_features`); a build made on another processor (a copied tree,
    a virtual machine moved to other hardware) may use instructions this one lacks and die with
    SIGILL, so it counts as stale and the JIT runs instead. Read from /proc, not from LLVM: loading
    the build must not load numba."""
    import platform

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith(("flags", "Features")):
                    flags = " ".join(sorted(line.split(":", 1)[1].split()))
                    break
    except OSError:
        pass
    h = hashlib.sha256(f"{platform.machine()}|{flags}".encode())
    return int(h.hexdigest()[:15], 16)


_BUILT = {group: _load_aot(group) for group in GROUPS}
_AOT = _BUILT["_aot"]


_GUARDED: dict[str, Callable[..., Any] | None] = {}


def aot(name: str) -> Callable[..., Any] | None:
    """The ahead-of-time build of kernel ``name`` from any current group, or None (no JIT fallback
    here: the caller falls back to its own JIT module or numpy twin). With ``STRUCTPERC_KERNELS=jit-kernels``,
    the same kernel compiled by numba's JIT instead.

    Either comes behind its boundary (`structperc.compiled.boundary.guard`): its exported signature and
    its contract are checked on every call, so a wrong argument raises instead of corrupting memory."""
    if name in _GUARDED:
        return _GUARDED[name]
    kernel = None
    if kernels_setting() == "jit-kernels":
        module_name = _exporter(name)
        if module_name is not None:
            kernel = getattr(importlib.import_module(f"structperc.{module_name}"), name)
    else:
        for module in _BUILT.values():
            if module is not None and hasattr(module, name):
                kernel = getattr(module, name)
                break
    if kernel is not None:
        from structperc.compiled.boundary import guard

        kernel = guard(name, exported_signatures()[name], kernel)
    _GUARDED[name] = kernel
    return kernel


def stale_groups() -> list[str]:
    """The groups whose ahead-of-time build is missing, stale (its sources changed since it was built) or made for
    another processor, so that their kernels run under numba's JIT, compiled at first use in every process; empty
    under ``STRUCTPERC_KERNELS=jit`` or ``jit-kernels``, which ask for the JIT. A benchmark checks this first: a stale
    build makes every run pay the compilation (`structperc tag` 2 s instead of 1 on SXU's test ×5)."""
    if kernels_setting() in ("jit", "jit-kernels"):
        return []
    return [group for group, module in _BUILT.items() if module is None]


def mode() -> str:
    """``"aot"`` when the ahead-of-time build (or, with ``STRUCTPERC_KERNELS=jit-kernels``, its JIT
    twin) is in use, else ``"jit"``."""
    return "aot" if _AOT is not None or kernels_setting() == "jit-kernels" else "jit"


_SIGNATURES: dict[str, str] = {}
_EXPORTERS: dict[str, str] = {}


def exported_signatures() -> dict[str, str]:
    """Every kernel's exported signature (the kernel modules' ``AOT_EXPORTS``), read from their
    sources as literals: importing the modules would load numba, which the build spares."""
    if not _SIGNATURES:
        import ast

        package = Path(__file__).resolve().parent.parent
        signatures, exporters = {}, {}
        for module_name in dict.fromkeys(m for group in GROUPS.values() for m in group):
            source = (package / (module_name.replace(".", "/") + ".py")).read_text(encoding="utf-8")
            at = source.find("\nAOT_EXPORTS")
            if at < 0:
                continue
            start = source.index("{", at)
            depth, end = 0, start
            for end in range(start, len(source)):
                depth += {"{": 1, "}": -1}.get(source[end], 0)
                if depth == 0:
                    break
            for name, signature in ast.literal_eval(source[start:end + 1]).items():
                signatures[name] = signature
                exporters[name] = module_name
        # whole, in one step each (under the GIL): a thread that finds them filled never finds them half filled
        # (a model's word tables are indexed in a thread of their own while the model's reading asks for kernels)
        _EXPORTERS.update(exporters)
        _SIGNATURES.update(signatures)
    return _SIGNATURES


def _exporter(name: str) -> str | None:
    exported_signatures()
    return _EXPORTERS.get(name)
