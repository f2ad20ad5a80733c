"""The adaptive batcher: concurrent items of one key go in one call, keys stay apart, a lone item is
not delayed, sizes bound a batch, and one failing item fails alone."""
from __future__ import annotations

import asyncio
import threading

import pytest

from structperc.service.batching import Batcher


def run_all(coros):
    async def main():
        return await asyncio.gather(*coros(), return_exceptions=True)
    return asyncio.run(main())


def test_concurrent_items_of_a_key_share_calls_and_keep_their_order():
    calls = []
    gate = threading.Event()

    def run(key, items):
        calls.append((key, list(items)))
        gate.wait(5)  # the first call holds the worker while the others queue up
        return [(key, i * 10) for i in items]

    batcher = Batcher(run)

    def coros():
        async def later(key, i):
            await asyncio.sleep(0.05)
            return await batcher.submit(key, i)

        async def opener():
            result = await batcher.submit("a", 0)
            return result

        async def release():
            await asyncio.sleep(0.2)
            gate.set()
            return None
        return [opener()] + [later("a", i) for i in range(1, 6)] + [later("b", i) for i in range(3)] + [release()]

    results = run_all(coros)
    assert results[:6] == [("a", i * 10) for i in range(6)]
    assert results[6:9] == [("b", i * 10) for i in range(3)]
    # the first call ran alone (nothing waited for company); the queued items went in one call per key
    assert calls[0] == ("a", [0])
    assert sorted(calls[1:]) == [("a", [1, 2, 3, 4, 5]), ("b", [0, 1, 2])]
    assert batcher.batches == 3 and batcher.items == 9
    batcher.close()


def test_sizes_bound_a_batch_and_an_oversized_item_runs_alone():
    calls = []
    gate = threading.Event()

    def run(key, items):
        calls.append(list(items))
        gate.wait(5)
        return list(items)

    batcher = Batcher(run, max_size=10)

    def coros():
        async def later(i, size):
            await asyncio.sleep(0.05)
            return await batcher.submit("k", i, size)

        async def release():
            await asyncio.sleep(0.2)
            gate.set()
        return [batcher.submit("k", "first", 1), later("x", 4), later("y", 4), later("z", 4), later("big", 50),
                release()]

    results = run_all(coros)
    assert results[:5] == ["first", "x", "y", "z", "big"]
    assert calls == [["first"], ["x", "y"], ["z"], ["big"]]
    batcher.close()


def test_one_failing_item_fails_alone():
    gate = threading.Event()

    def run(key, items):
        gate.wait(5)
        if "bad" in items:
            raise ValueError("bad item")
        return [i.upper() for i in items]

    batcher = Batcher(run)

    def coros():
        async def later(i):
            await asyncio.sleep(0.05)
            return await batcher.submit("k", i)

        async def release():
            await asyncio.sleep(0.2)
            gate.set()
        return [batcher.submit("k", "x"), later("a"), later("bad"), later("b"), release()]

    results = run_all(coros)
    assert results[:2] == ["X", "A"] and results[3] == "B"
    assert isinstance(results[2], ValueError) and str(results[2]) == "bad item"
    batcher.close()


def test_a_lone_item_is_answered_and_errors_reach_it():
    batcher = Batcher(lambda key, items: [len(items)])
    assert asyncio.run(batcher.submit("k", "only")) == 1
    failing = Batcher(lambda key, items: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        asyncio.run(failing.submit("k", "x"))
    batcher.close()
    failing.close()
