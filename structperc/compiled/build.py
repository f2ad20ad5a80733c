"""Build step: compile the numba kernels ahead of time into ``structperc._aot`` (numba's ``pycc``).

Run by `pip install` through the ``build_py`` command named in ``pyproject.toml``; also runnable by
hand after editing a kernel in an editable install: ``python -m structperc.compiled.build [GROUP...]``
(groups: `structperc.compiled.loader.GROUPS`). A failed build
(no C compiler, a numba without ``pycc``) only warns: `structperc.compiled.loader` then uses the JIT.
"""
from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from pathlib import Path
from typing import Iterator, Sequence

from setuptools.command.build_py import build_py as _build_py

_PACKAGE = Path(__file__).resolve().parent.parent


def compile_kernels(output_dir: str | Path, groups: Sequence[str] | None = None) -> list[Path]:
    """Compile every function in each group's kernel modules' ``AOT_EXPORTS`` into
    ``output_dir/<group>*.so`` (all groups of `structperc.compiled.loader.GROUPS` by default)."""
    root = str(_PACKAGE.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from numba.pycc import CC

    from structperc.compiled import loader

    built = []
    for group in groups or loader.GROUPS:
        cc = CC(group)
        cc.output_dir = str(output_dir)
        cc.verbose = False
        # Built at install time on the machine that runs it: use its instruction set (AVX and all).
        cc.target_cpu = "host"
        for module_name in loader.GROUPS[group]:
            module = importlib.import_module(f"structperc.{module_name}")
            for name, signature in getattr(module, "AOT_EXPORTS", {}).items():
                cc.export(name, signature)(getattr(module, name).py_func)
        namespace: dict = {}
        exec(f"def source_digest():\n    return {loader.source_digest(_PACKAGE, group)}", namespace)
        cc.export("source_digest", "i8()")(namespace["source_digest"])
        with warnings.catch_warnings(), host_features():
            warnings.simplefilter("ignore")  # pycc's deprecation notice
            cc.compile()
        built.append(Path(output_dir) / group)
    return built


@contextlib.contextmanager
def host_features() -> Iterator[None]:
    """Compile ahead of time for the features this processor really has, as numba's JIT does.

    pycc names the CPU model (``target_cpu = "host"``) but passes no feature string, so LLVM assumes
    every feature the model implies. A virtual machine may mask some of them: on a ``znver4`` whose
    hypervisor hides AVX-512, the build used AVX-512 and every kernel died with ``SIGILL``. The JIT
    asks LLVM for the host's feature list (``llvmlite.binding.get_host_cpu_features``); this gives
    the ahead-of-time code generator the same list for the duration of a build.
    """
    from numba.core import codegen

    features = codegen.get_host_cpu_features()
    original = codegen.AOTCPUCodegen._customize_tm_features
    codegen.AOTCPUCodegen._customize_tm_features = lambda self: features  # type: ignore[method-assign]
    try:
        yield
    finally:
        codegen.AOTCPUCodegen._customize_tm_features = original  # type: ignore[method-assign]


class build_py(_build_py):
    """setuptools' ``build_py`` plus the ahead-of-time kernels (in place for editable installs)."""

    def run(self) -> None:
        super().run()
        target = _PACKAGE if self.editable_mode else Path(self.build_lib) / "structperc"
        try:
            compile_kernels(target)
        except Exception as exc:  # noqa: BLE001 - any failure falls back to the JIT
            warnings.warn(f"structperc: ahead-of-time kernels not built ({exc}); numba's JIT will be used")
        if self.editable_mode:
            byte_compile_sources(target)


def byte_compile_sources(package: Path) -> None:
    """Write the package's ``.pyc`` files next to its sources (an editable install).

    pip byte-compiles what it installs, but an editable install leaves the sources in place
    uncompiled; where ``PYTHONDONTWRITEBYTECODE`` is set (as on the machines here) Python then
    compiles every module again in every process: ~60 ms of each `structperc` command's start-up
    (`tag` of 125,000 tokens: 0.41 → 0.35 s). An edited source is still recompiled (its ``.pyc``
    records the source's mtime and size).
    """
    import compileall

    compileall.compile_dir(str(package), quiet=1)


if __name__ == "__main__":
    for path in compile_kernels(_PACKAGE, sys.argv[1:] or None):
        print(path)
