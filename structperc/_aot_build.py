"""Build step: compile the numba kernels ahead of time into ``structperc._aot`` (numba's ``pycc``).

Run by `pip install` through the ``build_py`` command named in ``pyproject.toml``; also runnable by
hand after editing a kernel in an editable install: ``python -m structperc._aot_build``. A failed build
(no C compiler, a numba without ``pycc``) only warns: `structperc.kernels` then uses the JIT.
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

from setuptools.command.build_py import build_py as _build_py

_PACKAGE = Path(__file__).resolve().parent


def compile_kernels(output_dir: str | Path) -> Path:
    """Compile every function in the kernel modules' ``AOT_EXPORTS`` into ``output_dir/_aot*.so``."""
    root = str(_PACKAGE.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from numba.pycc import CC

    from structperc import kernels, tag_kernels, train_kernels

    cc = CC("_aot")
    cc.output_dir = str(output_dir)
    cc.verbose = False
    # Built at install time on the machine that runs it: use its instruction set (AVX and all).
    cc.target_cpu = "host"
    for module in (train_kernels, tag_kernels):
        for name, signature in module.AOT_EXPORTS.items():
            cc.export(name, signature)(getattr(module, name).py_func)
    namespace: dict = {}
    exec(f"def source_digest():\n    return {kernels.source_digest(_PACKAGE)}", namespace)
    cc.export("source_digest", "i8()")(namespace["source_digest"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc's deprecation notice
        cc.compile()
    return Path(cc.output_file) if hasattr(cc, "output_file") else Path(output_dir)


class build_py(_build_py):
    """setuptools' ``build_py`` plus the ahead-of-time kernels (in place for editable installs)."""

    def run(self) -> None:
        super().run()
        target = _PACKAGE if self.editable_mode else Path(self.build_lib) / "structperc"
        try:
            compile_kernels(target)
        except Exception as exc:  # noqa: BLE001 - any failure falls back to the JIT
            warnings.warn(f"structperc: ahead-of-time kernels not built ({exc}); numba's JIT will be used")


if __name__ == "__main__":
    print(compile_kernels(_PACKAGE))
