"""The ahead-of-time kernels let go of the interpreter while they run, as their JIT twins (``@njit(nogil=True)``)
do: threads that tag, featurize or look words up run their compiled work at once
(`structperc.compiled.build.releasing_the_gil`)."""
from __future__ import annotations

import gc
import sys
import threading
import time

import numpy as np
import pytest

from structperc.compiled import build, loader


@pytest.mark.filterwarnings("ignore::numba.NumbaPendingDeprecationWarning")
def test_the_build_sets_release_gil_for_the_nogil_kernels_only(monkeypatch):
    from numba.core.compiler import Flags
    from numba.pycc import compiler as pycc

    seen = {}

    def fake(typingctx, targetctx, func, args, return_type, flags, locals, **kwargs):
        seen[func] = flags.release_gil
        return None

    def free():
        pass

    def held():
        pass

    monkeypatch.setattr(pycc, "compile_extra", fake)
    flags = Flags()
    with build.releasing_the_gil({free}):
        pycc.compile_extra(None, None, free, (), None, flags, locals={})
        pycc.compile_extra(None, None, held, (), None, flags, locals={})
    assert seen == {free: True, held: False}
    assert not flags.release_gil  # the shared flags are left as they were
    assert pycc.compile_extra is fake  # and pycc's compile step is restored


@pytest.mark.skipif(loader.aot("probe_words") is None, reason="the ahead-of-time build is absent")
def test_a_compiled_kernel_lets_another_thread_run_while_it_works():
    """While one thread is inside a long kernel call, the main thread keeps running: the longest pause between
    two of its steps stays far below the call's length (a kernel holding the GIL pauses it for all of it)."""
    kernel = loader.aot("probe_words")
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0005)
    text = np.frombuffer(b"a\n", dtype=np.uint8)  # a table of one word, and a wanted word of 128 MB to hash
    starts, slots = np.array([0, 2], dtype=np.int32), np.array([0, -1], dtype=np.int32)
    query = np.tile(np.frombuffer(b"abcdefgh", dtype=np.uint8), 16_000_000)
    qptr = np.array([0, len(query)], dtype=np.int64)
    times: dict[str, float] = {}
    done = threading.Event()

    def call():
        times["in"] = time.perf_counter()
        kernel(text, starts, slots, query, qptr, np.empty(1, np.int64))
        times["out"] = time.perf_counter()
        done.set()

    longest = steps = 0
    gc.disable()  # a collection would pause the main thread by itself
    try:
        worker = threading.Thread(target=call)
        prev = time.perf_counter()
        worker.start()
        while not done.is_set():
            now = time.perf_counter()
            if "in" in times:
                longest = max(longest, now - prev)
                steps += 1
            prev = now
        worker.join()
    finally:
        gc.enable()
        sys.setswitchinterval(old)
    length = times["out"] - times["in"]
    assert length > 0.02, f"the call took {length:.3f} s: too short to tell"
    assert steps and longest < length / 2, f"the main thread paused {longest:.3f} s of a {length:.3f} s call"
