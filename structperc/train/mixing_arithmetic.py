"""The arithmetic of iterative parameter mixing (McDonald, Hall & Mann 2010; `structperc.train.mixing`):
the convex combination Σ μ_i x_i of the shards' weights and averaging sums, μ_i = k_i / Σk.

Why its own module: the arithmetic must give the same bits whichever process, block or runner
computes it (one machine's workers, `structperc.train.workers`; a Dask cluster), so it is written
once, here. It is in float64 (W is float32) as ``x_0 + Σ_{i≥1} k_i (x_i − x_0) / K`` with integer
k_i and K = Σ k, and exactly x_0 where every shard agrees (N copies of one shard mix to that shard,
bit for bit). `mix` mixes flat ranges of whole arrays; `mix_rows` only the rows an epoch changed
(the same result); `accumulate_mix` and `finish_mix` are the same two steps over whole arrays, for
shards run one after another (`structperc.train.mixing.SerialShards`).

References
----------
R. McDonald, K. Hall and G. Mann. Distributed training strategies for the structured perceptron.
NAACL HLT 2010, 456-464.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

#: Elements mixed at a time (float64 temporaries stay in cache).
BLOCK = 1 << 15


class _Scratch:
    """Work buffers of one block of `mix` (allocated once per call: a numpy temporary per block would be
    an allocation and fresh page faults each time)."""

    def __init__(self, n: int):
        self.ref, self.acc, self.tmp = np.empty(n), np.empty(n), np.empty(n)
        self.moved, self.same, self.eq = np.empty(n, dtype=bool), np.empty(n, dtype=bool), np.empty(n, dtype=bool)

    def accumulate(self, acc: np.ndarray, ki: int, x: np.ndarray, ref: np.ndarray) -> None:
        """``acc += ki·(x − ref)`` in float64 (``x`` of any float dtype)."""
        t = self.tmp[:len(acc)]
        np.subtract(x, ref, out=t, dtype=np.float64)
        np.multiply(t, ki, out=t)
        np.add(acc, t, out=acc)

    def finish(self, ref: np.ndarray, acc: np.ndarray, K: float) -> np.ndarray:
        """``ref + acc / K`` where ``acc`` is not 0, else ``ref`` exactly (in place of ``ref``)."""
        m = len(ref)
        t, moved = self.tmp[:m], self.moved[:m]
        np.not_equal(acc, 0, out=moved)
        np.divide(acc, K, out=t)
        np.add(ref, t, out=t)
        np.copyto(ref, t, where=moved)
        return ref


def _mix_kernels(dtype: np.dtype) -> tuple[Callable, Callable, Callable] | None:
    """The compiled steps of `mix` for float32 or float64 arrays (the ahead-of-time build, else numba's
    JIT), or None for another dtype (the numpy steps then)."""
    if dtype not in (np.float32, np.float64):
        return None
    from structperc.compiled import loader

    suffix = "f4" if dtype == np.float32 else "f8"
    names = (f"mix_accumulate_{suffix}", f"mix_finish_{suffix}", f"mix_write_{suffix}")
    found = [f for f in (loader.aot(name) for name in names) if f is not None]
    if len(found) < len(names):
        from structperc.train import epoch_kernels

        found = [getattr(epoch_kernels, name) for name in names]
    return found[0], found[1], found[2]


def mix(parts: Sequence[np.ndarray], k: Sequence[int], outs: Sequence[np.ndarray], lo: int = 0,
        hi: int | None = None, compiled: bool = True) -> None:
    """Write ``Σ_i k_i·parts[i] / Σk`` over flat elements ``lo:hi`` into every array of ``outs``
    (which may be among ``parts``), computed as described in the module docstring: float64,
    ``x_0 + Σ_{i≥1} k_i (x_i − x_0) / K``, and x_0 itself where that sum is 0.

    Where every part holds the same bits as ``parts[0]`` (a weight no shard changed: most of them
    late in training) nothing is written: ``outs`` among ``parts`` already hold the result, and a
    write would cost memory bandwidth, the price of mixing. Each step runs in one compiled pass over
    a block (``compiled``, default; else numpy's passes, the same bits)."""
    flat = [p.reshape(-1) for p in parts]
    dest = [o.reshape(-1) for o in outs]
    hi = len(flat[0]) if hi is None else hi
    K = float(sum(k))
    work = _Scratch(min(BLOCK, max(hi - lo, 0)))
    bits = np.dtype(f"u{flat[0].dtype.itemsize}")
    skip = all(any(o is p for p in parts) for o in outs)  # outs hold their part's value already
    kernels = _mix_kernels(flat[0].dtype) if compiled and all(x.dtype == flat[0].dtype for x in flat) and \
        all(o.dtype == flat[0].dtype for o in dest) else None
    for a in range(lo, hi, BLOCK):
        b = min(a + BLOCK, hi)
        ref, acc, same, eq = work.ref[:b - a], work.acc[:b - a], work.same[:b - a], work.eq[:b - a]
        acc.fill(0.0)
        same.fill(True)
        if kernels is not None:
            accumulate, finish, write = kernels
            same_u1 = same.view(np.uint8)
            x0 = flat[0][a:b]
            for ki, x in zip(k[1:], flat[1:]):
                accumulate(acc, same_u1, float(ki), x[a:b], x0, x[a:b].view(bits), x0.view(bits))
            finish(acc, K, x0, ref)
            if not skip or not same.all():
                for o in dest:
                    write(o[a:b], ref, same_u1, 0 if skip else 1)
            continue
        np.copyto(ref, flat[0][a:b])
        for ki, x in zip(k[1:], flat[1:]):
            np.equal(x[a:b].view(bits), flat[0][a:b].view(bits), out=eq)
            np.logical_and(same, eq, out=same)
            if ki:
                work.accumulate(acc, ki, x[a:b], ref)
        work.finish(ref, acc, K)
        if not skip:
            for o in dest:
                o[a:b] = ref
        elif not same.all():
            np.logical_not(same, out=eq)
            for o in dest:
                np.copyto(o[a:b], ref, casting="same_kind", where=eq)


def row_positions(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The flat positions of rows ``rows`` of a row-compressed array with offsets ``ptr``."""
    counts = ptr[rows + 1] - ptr[rows]
    return np.repeat(ptr[rows] - np.cumsum(counts) + counts, counts) + np.arange(int(counts.sum()))


def mix_rows(blocks: Sequence[dict[str, np.ndarray]], k: Sequence[int], ptr: np.ndarray, rows: np.ndarray,
             trans_rows: np.ndarray, part: int = 0, parts: int = 1, chunk: int = 1 << 14) -> None:
    """`mix` of the state pairs of attributes ``rows`` and the transition slices ``trans_rows`` only
    (share ``part`` of ``parts``), written into every block: the rows no shard changed hold the
    same value in every block, which `mix` would give back unchanged, so the result is the dense
    mixing's, bit for bit, at the cost of the rows that moved."""
    cond_ptr = np.arange(blocks[0]["Wc"].shape[0] + 1, dtype=np.int64) * int(np.prod(blocks[0]["Wc"].shape[1:]))
    for names, offsets, ids in ((("W", "U"), ptr, rows), (("Wc", "Uc"), cond_ptr, trans_rows)):
        mine = ids[len(ids) * part // parts:len(ids) * (part + 1) // parts]
        for a in range(0, len(mine), chunk):
            pos = row_positions(offsets, mine[a:a + chunk])
            for name in names:
                flat = [b[name].reshape(-1) for b in blocks]
                gathered = [x[pos] for x in flat]
                mix(gathered, k, gathered[:1])
                for x in flat:
                    x[pos] = gathered[0]
    for name in ("Wt", "Ut"):  # (L + 1) x L: small, mixed whole
        n = blocks[0][name].size
        arrays = [b[name] for b in blocks]
        mix(arrays, k, arrays, n * part // parts, n * (part + 1) // parts)


def accumulate_mix(acc: np.ndarray, ki: int, x: np.ndarray, ref: np.ndarray) -> None:
    """``acc += ki·(x − ref)`` over whole arrays, a block at a time (as `mix` does it)."""
    a_, x_, r_ = acc.reshape(-1), x.reshape(-1), ref.reshape(-1)
    work = _Scratch(min(BLOCK, len(a_)))
    for a in range(0, len(a_), BLOCK):
        b = min(a + BLOCK, len(a_))
        r = work.ref[:b - a]
        np.copyto(r, r_[a:b])
        work.accumulate(a_[a:b], ki, x_[a:b], r)


def finish_mix(ref: np.ndarray, acc: np.ndarray, K: float) -> None:
    """``ref += acc / K`` where ``acc`` is not 0 (as `mix` does it)."""
    r_, a_ = ref.reshape(-1), acc.reshape(-1)
    work = _Scratch(min(BLOCK, len(r_)))
    for a in range(0, len(r_), BLOCK):
        b = min(a + BLOCK, len(r_))
        r = work.ref[:b - a]
        np.copyto(r, r_[a:b])
        r_[a:b] = work.finish(r, a_[a:b], K)
