"""Reaching a Dask cluster: ``tcp://host:8786`` (a running scheduler) or ``local:N`` (a `LocalCluster` of
N single-threaded worker processes on this machine), behind one context manager that training and
tagging share. Failing to reach one is a user error (one line), not a Dask traceback."""
from __future__ import annotations

import contextlib
import logging
import re
from typing import Any, Iterator

from structperc.errors import InputError

#: How long to try a scheduler address before saying it cannot be reached (seconds).
CONNECT_TIMEOUT = 5.0
_LOCAL = re.compile(r"local:([0-9]+)")
#: Worker processes do no BLAS work worth a thread per core; N processes on N cores must not fight.
_SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def distributed_module() -> Any:
    """`distributed`, or a one-line error saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise InputError('Dask is not installed: pip install "structperc[dask]"') from None
    return distributed


@contextlib.contextmanager
def connect(spec: str, timeout: float = CONNECT_TIMEOUT) -> Iterator[Any]:
    """A `distributed.Client` for ``spec``, closed (with its `LocalCluster`, if one was started) when the
    block ends.

    ``spec`` is a scheduler address (``tcp://host:8786``; workers must see the files they are given and
    have structperc installed) or ``local:N``: N worker processes of one thread each, dashboard off —
    one process per core is how pure-Python and numpy work scales on one machine (the GIL)."""
    distributed = distributed_module()
    local = _LOCAL.fullmatch(spec.strip())
    if local:
        n = int(local.group(1))
        if n < 1:
            raise InputError(f"--dask {spec}: local:N needs at least one worker")
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           dashboard_address=None, silence_logs=logging.ERROR,
                                           # no dashboard, and its HTTP server (health checks) on a free port
                                           scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                                           env=dict(_SINGLE_THREADED))
        try:
            client = distributed.Client(cluster)
        except BaseException:
            cluster.close()
            raise
        try:
            yield client
        finally:
            client.close()
            cluster.close()
        return
    if spec.strip().startswith("local:") or spec.strip() == "local":  # not "localhost:8786", an address
        raise InputError(f"--dask {spec}: write local:N (N worker processes) or a scheduler address")
    try:
        client = distributed.Client(spec, timeout=f"{timeout}s")
    except Exception as exc:  # refused, timed out, or something else answering there (not a scheduler)
        reason = " ".join(str(exc).split())[:200] or type(exc).__name__
        raise InputError(f"cannot reach a Dask scheduler at {spec} (timeout {timeout:g} s): {reason}") from None
    try:
        yield client
    finally:
        client.close()


@contextlib.contextmanager
def using(dask: Any) -> Iterator[Any]:
    """A client for ``dask``: a `connect` spec (connected and closed here) or a `distributed.Client` the
    caller holds (used as it is, left open)."""
    if isinstance(dask, str):
        with connect(dask) as client:
            yield client
    else:
        yield dask


def require_workers(client: Any, what: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Wait up to ``timeout`` seconds for a worker to join ``client``'s cluster; none is one `InputError` line
    naming the cluster and ``what`` was to be done there (Dask's own "No valid workers found" names neither)."""
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (TimeoutError, OSError):
        raise InputError(f"the Dask cluster at {client.scheduler.address} has no worker to {what} "
                         f"(waited {timeout:g} s)") from None


def worker_threads(client: Any) -> int:
    """Threads of all the cluster's workers (at least 1): how many tasks run at once."""
    return max(1, sum(client.nthreads().values()))
