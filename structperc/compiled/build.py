"""Build step: compile the numba kernels ahead of time into ``structperc._aot`` (numba's ``pycc``).

Run by `pip install` through the ``build_py`` command named in ``pyproject.toml``; also runnable by
hand after editing a kernel in an editable install: ``python -m structperc.compiled.build [GROUP...]``
(groups: `structperc.compiled.loader.GROUPS`). A failed build
(no C compiler, a numba without ``pycc``) only warns: `structperc.compiled.loader` then uses the JIT.

Finished builds are kept in a cache outside the source tree (`cache_root`: ``$STRUCTPERC_AOT_CACHE``,
else ``$XDG_CACHE_HOME/structperc/aot`` or ``~/.cache/structperc/aot``; ``STRUCTPERC_AOT_CACHE=off``
for none), one entry per group keyed by everything the machine code depends on (`build_key`: the
group's source digest, this recipe, Python and its extension ABI, numpy, numba and llvmlite, the C
compiler, the CPU model and its features). A second install (another extra, ``pip install -e .``
again) copies the builds whose key matches instead of compiling them again: every group took 40-49 s
to compile, copying takes milliseconds. An entry is written into a temporary folder and renamed into
place whole, and is used only if its manifest names the same key and its file has the recorded size
and SHA-256; a build reaches the package the same way (a temporary file renamed over the old one), so
a running process never sees half a module.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import warnings
from pathlib import Path
from typing import Callable, Iterator, Sequence

from setuptools.command.build_py import build_py as _build_py

_PACKAGE = Path(__file__).resolve().parent.parent


#: The environment variable that names the build cache (``off``, ``0`` or ``none``: no cache).
CACHE_ENV = "STRUCTPERC_AOT_CACHE"
#: The layout of a cache entry (a folder: the module and ``entry.json``); bumped when it changes.
CACHE_FORMAT = 1
#: Entries kept per group, the most recently used (each edit of a kernel makes a new one: ~0.8 MB).
CACHE_KEEP = 6
_OFF = ("0", "off", "none", "no", "false")

#: A group's compiler: (group, folder) -> the extension module it wrote there.
Compiler = Callable[[str, Path], Path]


def compile_kernels(output_dir: str | Path, groups: Sequence[str] | None = None, *,
                    cache: str | Path | None | bool = True, compiler: Compiler | None = None,
                    key: Callable[[str, int], dict[str, str]] | None = None) -> list[Path]:
    """Compile every function in each group's kernel modules' ``AOT_EXPORTS`` into
    ``output_dir/<group>*.so`` (all groups of `structperc.compiled.loader.GROUPS` by default).

    ``cache``: True for `cache_root`, a folder, or False/None for none. A group whose `build_key`
    has a sound entry there is copied from it; any other is compiled (``compiler``, by default numba's
    ``pycc``: `pycc_compile`) in a temporary folder, stored in the cache and moved into
    ``output_dir``. Returns ``output_dir/<group>`` of every group.
    """
    root = str(_PACKAGE.parent)
    if root not in sys.path:
        sys.path.insert(0, root)
    from structperc.compiled import loader

    compiler = compiler or pycc_compile
    key = key or build_key
    store = cache_root() if cache is True else (Path(cache) if cache else None)
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    built = []
    for group in groups or loader.GROUPS:
        wanted = key(group, loader.source_digest(_PACKAGE, group))
        target = output_dir / (group + _ext_suffix())
        if store is None or not restore(store, group, wanted, target):
            with tempfile.TemporaryDirectory(prefix=f"structperc-{group}-") as tmp:
                module = compiler(group, Path(tmp))
                if store is not None:
                    save(store, group, wanted, module)
                _install(module.read_bytes(), target)
        built.append(output_dir / group)
    return built


def pycc_compile(group: str, folder: Path) -> Path:
    """Compile one group with numba's ``pycc`` into ``folder``; returns the extension module."""
    from numba.pycc import CC

    from structperc.compiled import loader

    cc = CC(group)
    cc.output_dir = str(folder)
    cc.output_file = group + _ext_suffix()
    cc.verbose = False
    # Built at install time on the machine that runs it: use its instruction set (AVX and all).
    cc.target_cpu = "host"
    nogil = set()
    for module_name in loader.GROUPS[group]:
        module = importlib.import_module(f"structperc.{module_name}")
        for name, signature in getattr(module, "AOT_EXPORTS", {}).items():
            kernel = getattr(module, name)
            cc.export(name, signature)(kernel.py_func)
            if kernel.targetoptions.get("nogil"):
                nogil.add(kernel.py_func)
    namespace: dict = {}
    exec(f"def source_digest():\n    return {loader.source_digest(_PACKAGE, group)}", namespace)
    cc.export("source_digest", "i8()")(namespace["source_digest"])
    exec(f"def cpu_digest():\n    return {loader.cpu_digest()}", namespace)
    cc.export("cpu_digest", "i8()")(namespace["cpu_digest"])
    with warnings.catch_warnings(), host_features(), releasing_the_gil(nogil):
        warnings.simplefilter("ignore")  # pycc's deprecation notice
        cc.compile()
    return folder / cc.output_file


@contextlib.contextmanager
def releasing_the_gil(functions: set[Callable]) -> Iterator[None]:
    """Give the ahead-of-time build of each of ``functions`` (kernels declared ``@njit(nogil=True)``) a wrapper
    that lets go of the interpreter while it runs, as the JIT's does.

    pycc compiles every export with one set of flags and never sets numba's ``release_gil``: its kernels held
    the GIL for the whole call, so threads that tag, featurize or look words up (the HTTP service's, a
    threaded Dask worker's, `structperc.features.sharding`'s, a model's word tables read beside its weights)
    ran their compiled work one at a time, where the JIT ran it at once. For the build's duration pycc's
    compile step sets the flag for these functions; the wrapper then saves the thread state after unboxing
    the arguments and restores it before boxing the result or raising (`numba.core.callwrapper`)."""
    from numba.pycc import compiler as pycc

    original = pycc.compile_extra

    def compile_extra(typingctx, targetctx, func, args, return_type, flags, locals, **kwargs):
        if func in functions:
            flags = flags.copy()
            flags.release_gil = True
        return original(typingctx, targetctx, func, args, return_type, flags, locals, **kwargs)

    pycc.compile_extra = compile_extra  # type: ignore[assignment]
    try:
        yield
    finally:
        pycc.compile_extra = original


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def cache_root() -> Path | None:
    """The build cache: ``$STRUCTPERC_AOT_CACHE`` (None when it says ``off``), else
    ``$XDG_CACHE_HOME/structperc/aot``, else ``~/.cache/structperc/aot``."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value:
        return None if value.lower() in _OFF else Path(value).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "structperc" / "aot"


def build_key(group: str, digest: int) -> dict[str, str]:
    """Everything a group's machine code depends on: its sources (the loader's ``digest``), this
    recipe, the interpreter and its extension ABI, numpy (its C API), numba and llvmlite (the code
    generator), the C compiler of the module's glue, and the processor: ``target_cpu = "host"``
    compiles for this CPU model and its features (`host_features`), which another machine may lack."""
    import llvmlite
    import llvmlite.binding as ll
    import numba
    import numpy
    from numba.core import codegen

    return {"format": str(CACHE_FORMAT), "group": group, "source_digest": str(digest),
            "recipe": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
            "python": f"{sys.implementation.cache_tag} {sys.version}", "abi": _ext_suffix(),
            "platform": sysconfig.get_platform(), "numpy": numpy.__version__, "numba": numba.__version__,
            "llvmlite": llvmlite.__version__, "cc": str(sysconfig.get_config_var("CC")),
            "cpu": ll.get_host_cpu_name(), "features": codegen.get_host_cpu_features()}


def _entry(store: Path, group: str, key: dict[str, str]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()
    return store / f"{group}-{digest[:32]}"


def restore(store: Path, group: str, key: dict[str, str], target: Path) -> bool:
    """Copy the cached build of ``group`` under ``key`` to ``target``; False (nothing written) when
    there is none or it is unsound: no manifest, another key in it, a file of another size or
    SHA-256 (a partial or damaged entry)."""
    entry = _entry(store, group, key)
    try:
        meta = json.loads((entry / "entry.json").read_text(encoding="utf-8"))
        name = meta["file"]
        if meta.get("key") != key or not isinstance(name, str) or Path(name).name != name:
            return False
        data = (entry / name).read_bytes()
        if len(data) != meta["size"] or hashlib.sha256(data).hexdigest() != meta["sha256"]:
            return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    _install(data, target)
    with contextlib.suppress(OSError):
        os.utime(entry)                     # recently used: the last to be pruned
    return True


def save(store: Path, group: str, key: dict[str, str], module: Path) -> None:
    """Keep a fresh build in the cache: written into a temporary folder beside the entries, then
    renamed into place whole (an unsound entry there is replaced). A cache that cannot be written
    only warns: the build itself is done."""
    entry = _entry(store, group, key)
    tmp = None
    try:
        store.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{group}-", suffix=".tmp", dir=store))
        data = module.read_bytes()
        (tmp / module.name).write_bytes(data)
        meta = {"key": key, "file": module.name, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
        (tmp / "entry.json").write_text(json.dumps(meta, indent=1, sort_keys=True), encoding="utf-8")
        if entry.exists():      # not restored, so unsound (or just written by a concurrent build)
            shutil.rmtree(entry, ignore_errors=True)
        os.rename(tmp, entry)
        tmp = None
        _prune(store, group)
    except OSError as exc:
        if not entry.exists():
            warnings.warn(f"structperc: the build of {group} is not cached in {store} ({exc})", stacklevel=1)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _prune(store: Path, group: str) -> None:
    """Remove all but the `CACHE_KEEP` most recently used entries of ``group``."""
    entries = [e for e in store.glob(f"{group}-*") if e.is_dir() and len(e.name) == len(group) + 33]
    entries.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    for old in entries[CACHE_KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def _install(data: bytes, target: Path) -> None:
    """Write ``target`` by renaming a complete temporary file over it: a process that has the old
    module loaded keeps its copy, and no process loads half a module."""
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.chmod(0o755)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


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
            warnings.warn(f"structperc: ahead-of-time kernels not built ({exc}); numba's JIT will be used",
                          stacklevel=1)
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
