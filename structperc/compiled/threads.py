"""How many threads tagging's compiled work may use, and the runs of whole sentences a corpus is cut into for them.

Tagging a large input spends most of its time in two passes over the tokens: the attribute ids
(`structperc.features.lookup_tables`: numpy's gathers and the compiled key lookups) and the decoder
(`structperc.decode.decoder`). Both work sentence by sentence, both let go of the GIL (numpy's loops; the compiled
kernels, ahead of time too: `structperc.compiled.build.releasing_the_gil`), so runs of consecutive sentences can go
to threads that share the model and write into one output, with the same result bit for bit: the best paths, the
marginals and path probabilities, the k-best lists (`structperc.decode.decoder.in_runs`) and a second-order model's
batches (`structperc.decode.order2`).

The setting is a context variable (`threads`): 1 unless a caller asks for more, because a library call may
already run inside a caller's threads (a Dask worker's, the HTTP service's). ``structperc tag``, ``segment`` and
``eval`` ask for every usable CPU (``--threads``). An input shorter than `MIN_TOKENS_PER_THREAD` tokens per thread
runs on fewer threads (on one, below twice that): a thread's start and the Python around each run would cost more
than they save.
"""
from __future__ import annotations

import contextlib
import contextvars
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, TypeVar

import numpy as np

T = TypeVar("T")

#: Tokens each thread should have at least: below twice this an input is tagged on one thread.
MIN_TOKENS_PER_THREAD = 1 << 14

_THREADS: contextvars.ContextVar[int] = contextvars.ContextVar("structperc_threads", default=1)


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def tagging_threads() -> int:
    """How many threads tagging may use here (`threads`; 1 by default)."""
    return _THREADS.get()


@contextlib.contextmanager
def threads(n: int | None) -> Iterator[int]:
    """Within the block, tagging featurizes and decodes a large input on up to ``n`` threads (None or 0: every
    usable CPU, `usable_cpus`). Yields the number in force."""
    if n is not None and n < 0:
        raise ValueError(f"threads must be at least 0 (0: every usable CPU), not {n}")
    count = int(n) if n else usable_cpus()
    token = _THREADS.set(count)
    try:
        yield count
    finally:
        _THREADS.reset(token)


def sentence_shards(sent_ptr: np.ndarray, n_shards: int) -> np.ndarray:
    """Bounds (sentence indices, ``n + 1`` of them) of at most ``n_shards`` runs of consecutive
    sentences with about as many tokens each; never an empty run."""
    n = len(sent_ptr) - 1
    k = max(1, min(int(n_shards), n))
    cuts = np.searchsorted(sent_ptr, sent_ptr[-1] * np.arange(1, k) / k)
    bounds = np.unique(np.clip(np.concatenate([[0], cuts, [n]]), 0, n))
    return bounds.astype(np.int64)


def token_range(sent_ptr: np.ndarray, bounds: np.ndarray, k: int) -> slice:
    """The tokens of shard ``k``."""
    return slice(int(sent_ptr[bounds[k]]), int(sent_ptr[bounds[k + 1]]))


def tagging_shards(sent_ptr: np.ndarray) -> np.ndarray | None:
    """The bounds (`sentence_shards`) of the runs a corpus with these sentences is tagged in on the threads in
    force (`tagging_threads`), at least `MIN_TOKENS_PER_THREAD` tokens each; None for one run."""
    n_tokens = int(sent_ptr[-1]) if len(sent_ptr) else 0
    k = min(tagging_threads(), n_tokens // MIN_TOKENS_PER_THREAD)
    if k < 2:
        return None
    bounds = sentence_shards(sent_ptr, k)
    return bounds if len(bounds) > 2 else None


def map_threads(func: Callable[[int], T], n: int, threads: int) -> list[T]:
    """``[func(k) for k in range(n)]``, on up to ``threads`` threads (in order; the first error raises)."""
    if threads <= 1 or n <= 1:
        return [func(k) for k in range(n)]
    with ThreadPoolExecutor(min(threads, n), thread_name_prefix="structperc") as pool:
        return list(pool.map(func, range(n)))
