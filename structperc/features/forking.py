"""Map a function over jobs in forked worker processes.

The parallel steps of one machine's training (``--workers N``: the dictionary's jackknife folds, the
sharded feature index) share one pattern: the parent holds large Python objects (a corpus, a
learner, an index) that the workers only read. Forking hands them over without pickling (copy on
write); only each job's small result travels back through the pool's pipe. A function cannot be sent
to a pool when it is a closure, so the job's function and items are parked in a module global before
the pool forks and the workers receive only an index.

Where "fork" is not available (Windows, macOS' default) or one worker is asked for, the jobs run in
this process, in order: the same results, only slower.
"""
from __future__ import annotations

import multiprocessing
from typing import Any, Callable, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: The running job: (function, items), set just before a pool forks so its workers inherit it.
_JOB: tuple[Callable[[Any], Any], Sequence[Any]] | None = None


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _run(i: int) -> Any:
    func, items = _JOB  # type: ignore[misc]
    return func(items[i])


def forked_map(func: Callable[[T], R], items: Sequence[T], workers: int) -> list[R]:
    """``[func(x) for x in items]``, in ``workers`` forked processes when there are several.

    ``func`` may be any callable (a closure over the parent's objects): it is inherited, not pickled.
    Results come back in the order of ``items``; an exception in a worker is raised here.
    """
    global _JOB
    n = min(int(workers), len(items))
    if n <= 1 or not can_fork() or _JOB is not None:  # (a job inside a job runs serially)
        return [func(x) for x in items]
    _JOB = (func, items)
    try:
        with multiprocessing.get_context("fork").Pool(n) as pool:
            return pool.map(_run, range(len(items)), chunksize=1)
    finally:
        _JOB = None
