"""Adaptive batching of concurrent requests: one decoding call for many requests.

A single-sentence request spends most of its time in per-call work (featurizing 40-odd templates,
building the lattice), not in the sentence: on a POS model one sentence costs ~1.2 ms and 32 cost
~1.7 ms. So requests that arrive while a call is running wait for it and then go together in the
next call, up to a sentence budget. Nothing waits on purpose: an idle server answers a lone request
at once, and batches grow only with load (the same policy as TensorFlow Serving's and Triton's
dynamic batchers without a timeout).

The calls run one at a time on one worker thread. That is all the parallelism there is to have
(the decoding holds the GIL for its Python parts), keeps the event loop free to read and answer
requests meanwhile, and lets the models' lazily built lookup tables stay single-threaded.
"""
from __future__ import annotations

import asyncio
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Hashable, Sequence

#: run(key, items) -> one result per item, in order.
Runner = Callable[[Hashable, Sequence[Any]], Sequence[Any]]


class Batcher:
    """Queue items per key (model and options); run each key's waiting items as one call.

    ``max_size`` bounds a batch by the items' sizes (sentences); one item larger than it runs alone.
    A failing batch of several items is retried item by item, so one bad request fails alone.
    """

    def __init__(self, run: Runner, *, max_size: int = 2048):
        self.run, self.max_size = run, max_size
        self._pending: OrderedDict[Hashable, list[tuple[Any, int, asyncio.Future]]] = OrderedDict()
        self._wake: asyncio.Event | None = None
        self._worker: asyncio.Task | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="structperc-batch")
        self.batches = 0   # calls made, and items answered: batches < items under load
        self.items = 0

    async def submit(self, key: Hashable, item: Any, size: int = 1) -> Any:
        """The result of ``item`` (an exception raised for it is raised here)."""
        loop = asyncio.get_running_loop()
        if self._worker is None or self._worker.done():
            self._wake = asyncio.Event()
            self._worker = loop.create_task(self._loop())
        future: asyncio.Future = loop.create_future()
        self._pending.setdefault(key, []).append((item, size, future))
        assert self._wake is not None
        self._wake.set()
        return await future

    def _take(self) -> tuple[Hashable, list[tuple[Any, int, asyncio.Future]]]:
        """The oldest key's items, up to the size budget (the rest stay queued, first in line)."""
        key, queue = next(iter(self._pending.items()))
        taken: list[tuple[Any, int, asyncio.Future]] = []
        size = 0
        while queue and (not taken or size + queue[0][1] <= self.max_size):
            entry = queue.pop(0)
            taken.append(entry)
            size += entry[1]
        if not queue:
            del self._pending[key]
        return key, taken

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._wake is not None
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                key, taken = self._take()
                live = [(item, fut) for item, _, fut in taken if not fut.done()]  # cancelled: client gone
                if not live:
                    continue
                try:
                    results = await loop.run_in_executor(self._executor, self.run, key, [i for i, _ in live])
                except Exception as exc:  # noqa: BLE001 - handed to the request(s) it belongs to
                    if len(live) == 1:
                        _settle(live[0][1], exc=exc)
                        continue
                    for item, fut in live:  # one bad request must not fail the others
                        try:
                            result = (await loop.run_in_executor(self._executor, self.run, key, [item]))[0]
                        except Exception as one:  # noqa: BLE001
                            _settle(fut, exc=one)
                        else:
                            _settle(fut, result=result)
                    continue
                self.batches += 1
                self.items += len(live)
                for (_, fut), result in zip(live, results):
                    _settle(fut, result=result)

    def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)


def _settle(future: asyncio.Future, *, result: Any = None, exc: BaseException | None = None) -> None:
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)
