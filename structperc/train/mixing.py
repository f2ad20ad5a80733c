"""Iterative parameter mixing: the averaged structured perceptron trained on N shards at once.

McDonald, Hall and Mann (2010) train the structured perceptron on N shards of the data: every epoch
each shard runs one ordinary perceptron epoch starting from the same *mixed* weights, and the N
results are mixed (a convex combination Σ μ_i w_i) into the weights the next epoch starts from. They
show that this keeps the perceptron's convergence guarantee for separable data, with mistake bounds
of the same order as serial training, where mixing only once at the end (parameter averaging) does
not. Each shard's epoch is independent of the others, so the shards run in parallel
(`structperc.train.workers`: processes of one machine; a Dask driver can call the same pieces).

The pieces, each a pure function of its inputs (so a lost shard epoch can be recomputed anywhere):

* **Split** (`shard_bounds`): contiguous blocks of sentences balanced by tokens. Contiguous, so that
  a reader that cuts a file at sentence breaks holds exactly one shard; by tokens, because an
  epoch's time is proportional to tokens and the slowest shard sets the pace.
* **Order** (`shard_order`): shard s's order in epoch e is the plain trainer's permutation of
  *all* sentences in epoch e (the e-th draw of ``np.random.default_rng(seed)``, see
  `structperc.train.perceptron.train_perceptron`) restricted to the shard's sentences. A function of
  (seed, epoch, shard), and with one shard it is the plain trainer's order.
* **Shard epoch** (`shard_epoch`): the compiled epoch of the plain trainer, from the mixed weights,
  sums and counter c̄, on the shard alone → the shard's weights W_i, sums U_i, counter c̄ + n_i and
  its mistakes k_i.
* **Mixing** (`mix`): μ_i = 1/N (``"uniform"``) or μ_i = k_i / Σk (``"mistakes"``, McDonald et al.'s
  second variant, uniform when no shard made a mistake), applied to the weights *and* the averaging
  sums; the mixed counter is c̄ + max_i n_i. `mix_rows` mixes only the rows a tracked shard epoch
  reports as changed (``shard_epoch(track=True)``), with the same result.

Averaging. With one trainer, Collins' sums give the mean of the weights after every instance:
W − U/c, U = Σ_t t·Δ_t. Here an epoch counts as n_max = max_i n_i steps; at step s the *mixed
trajectory* is Σ_i μ_i W_i(s), where W_i(s) is shard i's weights after its s-th sentence of the epoch
(its final weights once it has run out of sentences), and μ the epoch's mixing coefficients. The
averaged weights of the run are the mean of the mixed trajectory over all steps of all epochs. That
is exactly W̄ − Ū/c̄ of the mixed W̄, Ū and c̄ above, because every shard starts from the same
counter and, at a common counter c̄ + n_max, the average W_i − U_i/c is linear in (W_i, U_i) (a shard
that ran out of sentences adds nothing to U_i, which is holding its last weights). Hence: one shard
is the plain trainer bit for bit, and N identical shards are one shard.

The mixing arithmetic is in float64 (W is float32) as ``x_0 + Σ_{i≥1} k_i (x_i − x_0) / K`` with
integer k_i (1 each, or the mistakes) and K = Σ k: the same value whichever process or block computes
it, and exactly x_0 where every shard agrees (N copies of one shard mix to that shard, bit for bit).

Default mixing (`DEFAULT_MIXING`): uniform. Measured on CoNLL-2000 chunking (default template, 10
epochs), best F1 on a held-out 10 % of train.txt (``--dev-split 0.1``, refit off; test.txt unused),
with 2 / 4 / 8 shards, two seeds of the held-out slice and the orders (``scripts/bench_scale.py
--skip-wall --shards 2,4,8 --mixing uniform,mistakes --refit no --seed S``):

    seed 0: uniform 94.44 / 94.36 / 94.10   mistakes 94.44 / 94.42 / 93.94   (one trainer: 94.57)
    seed 1: uniform 93.79 / 93.53 / 93.60   mistakes 93.89 / 93.51 / 93.54
    mean:   uniform 94.12 / 93.95 / 93.85   mistakes 94.17 / 93.97 / 93.74

A tie within the noise at 2 and 4 shards (mistakes +0.05 and +0.02), and uniform ahead at 8 shards in
both seeds (+0.11 on average), where the shards are small and their mistake counts, hence the weights,
noisiest: a shard that happened to err more in an epoch pulls the mix towards its own updates. With
no gain to show, the simpler mixing is the default: every shard counts alike in every epoch, and the
averaged weights are the plain mean of the shards' trajectories.

References
----------
R. McDonald, K. Hall and G. Mann. Distributed training strategies for the structured perceptron.
NAACL HLT 2010, 456-464.
M. Collins. Discriminative training methods for hidden Markov models. EMNLP 2002 (averaging).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights
from structperc.train.perceptron import (
    EpochInputs,
    EpochReport,
    PerceptronState,
    _result,
    end_of_epoch,
    epoch_inputs,
    margin_hyperparameters,
    run_epoch,
)

MIXINGS = ("uniform", "mistakes")
DEFAULT_MIXING = "uniform"
#: The arrays of a trainer state that training changes and mixing combines.
MIXED = ("W", "U", "Wt", "Ut", "Wc", "Uc")
#: Elements mixed at a time (float64 temporaries stay in cache).
BLOCK = 1 << 15


def shard_bounds(sent_ptr: np.ndarray, n_shards: int) -> np.ndarray:
    """Sentence boundaries of ``n_shards`` contiguous shards balanced by tokens: shard s holds
    sentences ``bounds[s]:bounds[s + 1]``, starting at the first sentence that starts at or after
    token s·T/N (each shard at least one sentence)."""
    ptr = np.asarray(sent_ptr, dtype=np.int64)
    n = len(ptr) - 1
    if n_shards < 1:
        raise InputError(f"the number of workers must be at least 1 (got {n_shards})")
    if n_shards > n:
        raise InputError(f"{n_shards} workers for {n} training sentence(s): at most one worker per sentence")
    targets = np.arange(n_shards, dtype=np.float64) * (float(ptr[-1]) / n_shards)
    bounds = np.append(np.searchsorted(ptr[:-1], targets, side="left"), n).astype(np.int64)
    bounds[0] = 0
    for s in range(1, n_shards):  # every shard gets a sentence, leaving one for each after it
        bounds[s] = min(max(bounds[s], bounds[s - 1] + 1), n - (n_shards - s))
    return bounds


class EpochOrders:
    """The plain trainer's order of every epoch: the e-th ``permutation(n)`` of
    ``np.random.default_rng(seed)`` (``arange(n)`` without shuffling). Draws are replayed from the
    seed when asked out of sequence; in sequence, each costs one permutation."""

    def __init__(self, seed: int, n: int, shuffle: bool = True):
        self.seed, self.n, self.shuffle = seed, n, shuffle
        self._rng, self._drawn, self._last = np.random.default_rng(seed), 0, np.arange(0)

    def __call__(self, epoch: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.n, dtype=np.int64)
        if epoch < 1:
            raise ValueError("epochs count from 1")
        if epoch < self._drawn:
            self._rng, self._drawn = np.random.default_rng(self.seed), 0
        while self._drawn < epoch:
            self._last = self._rng.permutation(self.n).astype(np.int64)
            self._drawn += 1
        return self._last


def shard_order(permutation: np.ndarray, start: int, stop: int) -> np.ndarray:
    """The sentences ``start:stop`` in the order ``permutation`` visits them, numbered from 0."""
    inside = (permutation >= start) & (permutation < stop)
    return np.ascontiguousarray(permutation[inside] - start, dtype=np.int64)


@dataclass
class Shard:
    """One shard: sentences ``start:stop`` of ``n_total``, their kernel inputs, and the run's seed."""

    index: int
    start: int
    stop: int
    n_total: int
    inputs: EpochInputs
    seed: int = 0
    shuffle: bool = True

    def __post_init__(self) -> None:
        self._orders = EpochOrders(self.seed, self.n_total, self.shuffle)

    def order(self, epoch: int) -> np.ndarray:
        """This shard's order in ``epoch`` (from 1): a function of (seed, epoch, shard) only."""
        return shard_order(self._orders(epoch), self.start, self.stop)


def make_shards(inputs: EpochInputs, n_shards: int, seed: int = 0, shuffle: bool = True) -> list[Shard]:
    """``inputs`` cut into the shards of `shard_bounds` (views, no copies)."""
    bounds = shard_bounds(inputs.ptr, n_shards)
    return [Shard(s, int(a), int(b), inputs.n_sent, inputs.select(int(a), int(b)), seed, shuffle)
            for s, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]


@dataclass
class ShardResult:
    """What a shard's epoch reports besides its weights and sums."""

    mistakes: int
    token_errors: int
    skipped: int
    c: int  # the counter after the epoch: c̄ + the shard's sentences
    rows: np.ndarray | None = None        # with ``track``: the state attributes (rows of W, U) and
    trans_rows: np.ndarray | None = None  # transition attributes (of Wc, Uc) the epoch may have changed


def shard_epoch(shard: Shard, arrays: dict[str, np.ndarray], pairs: tuple[np.ndarray, np.ndarray, np.ndarray],
                c: int, epoch: int, track: bool = False) -> ShardResult:
    """One perceptron epoch of ``shard`` (epoch ``epoch``, from 1), in place on ``arrays`` (W, U,
    Wt, Ut, Wc, Uc holding the mixed weights and sums), from the mixed counter ``c``; ``pairs`` is
    the state feature set (ptr, labels, active). Deterministic: the same inputs give the same bits.

    ``track`` runs the kernel a sentence at a time (the same updates in the same order: the same
    bits) to learn which sentences made an update, and reports the attributes of their tokens: the
    only rows the epoch can have changed (what `mix_rows` mixes)."""
    W, U, Wt, Ut, Wc, Uc = (arrays[name] for name in MIXED)
    state = PerceptronState(W, U, Wt, Ut, Wc, Uc, c=c, ptr=pairs[0], labels=pairs[1], active=pairs[2])
    order = shard.order(epoch)
    if not track:
        return ShardResult(*run_epoch(shard.inputs, state, order), state.c)
    updated = np.zeros(len(order), dtype=bool)
    mistakes, token_errors, skipped = run_epoch(shard.inputs, state, order, 1, updated=updated)
    inputs = shard.inputs
    sents = order[updated]
    starts, lengths = inputs.ptr[sents], np.diff(inputs.ptr)[sents]
    tokens = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(int(lengths.sum()))
    rows, trans_rows = (np.unique(ids[tokens]) for ids in (inputs.X, inputs.XT))
    return ShardResult(mistakes, token_errors, skipped, state.c, rows[rows >= 0].astype(np.int64),
                       trans_rows[trans_rows >= 0].astype(np.int64))


def mixing_numerators(mistakes: Sequence[int], mixing: str) -> list[int]:
    """The k_i of μ_i = k_i / Σk: 1 each (``"uniform"``), or each shard's mistakes (``"mistakes"``;
    uniform when no shard made one)."""
    if mixing not in MIXINGS:
        raise InputError(f"unknown mixing {mixing!r} (one of {', '.join(MIXINGS)})")
    if mixing == "mistakes" and sum(mistakes) > 0:
        return [int(k) for k in mistakes]
    return [1] * len(mistakes)


class _Scratch:
    """Work buffers of one block of `mix` (allocated once per call: a numpy temporary per block
    would be an mmap/munmap pair and fresh page faults each time under the CLI's malloc settings)."""

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


class SerialShards:
    """The shards run one after another in this process, on ``state``'s own arrays (tests, and more
    shards than cores): the same arithmetic as `structperc.train.workers.ProcessShards`, so the same
    bits, with four copies of the weights at most whatever the number of shards."""

    def __init__(self, shards: list[Shard], state: PerceptronState):
        self.shards, self.state = shards, state

    def __enter__(self) -> "SerialShards":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def epoch(self, epoch: int, mixing: str) -> list[ShardResult]:
        st = self.state
        pairs = (st.ptr, st.labels, st.active)
        mixed = {name: getattr(st, name) for name in MIXED}
        if len(self.shards) == 1:
            return [shard_epoch(self.shards[0], mixed, pairs, st.c, epoch)]
        start = {name: a.copy() for name, a in mixed.items()}
        work = {name: np.empty_like(a) for name, a in mixed.items()}
        acc = {name: np.zeros(a.shape) for name, a in mixed.items()}
        results = [shard_epoch(self.shards[0], mixed, pairs, st.c, epoch)]  # shard 0: x_0, in place
        for shard in self.shards[1:]:
            for name in MIXED:
                np.copyto(work[name], start[name])
            results.append(shard_epoch(shard, work, pairs, st.c, epoch))
            ki = 1 if mixing == "uniform" else results[-1].mistakes  # all 0: nothing moved anyway
            if ki:
                for name in MIXED:
                    _accumulate(acc[name], ki, work[name], mixed[name])
        del work, start
        k = mixing_numerators([r.mistakes for r in results], mixing)
        K = float(sum(k))
        for name in MIXED:
            _finish_mix(mixed[name], acc[name], K)
        return results


def _accumulate(acc: np.ndarray, ki: int, x: np.ndarray, ref: np.ndarray) -> None:
    """``acc += ki·(x − ref)`` over whole arrays, a block at a time (as `mix` does it)."""
    a_, x_, r_ = acc.reshape(-1), x.reshape(-1), ref.reshape(-1)
    work = _Scratch(min(BLOCK, len(a_)))
    for a in range(0, len(a_), BLOCK):
        b = min(a + BLOCK, len(a_))
        r = work.ref[:b - a]
        np.copyto(r, r_[a:b])
        work.accumulate(a_[a:b], ki, x_[a:b], r)


def _finish_mix(ref: np.ndarray, acc: np.ndarray, K: float) -> None:
    """``ref += acc / K`` where ``acc`` is not 0 (as `mix` does it)."""
    r_, a_ = ref.reshape(-1), acc.reshape(-1)
    work = _Scratch(min(BLOCK, len(r_)))
    for a in range(0, len(r_), BLOCK):
        b = min(a + BLOCK, len(r_))
        r = work.ref[:b - a]
        np.copyto(r, r_[a:b])
        r_[a:b] = work.finish(r, a_[a:b], K)


def train_mixed(
    feats: Features | None,
    y: np.ndarray | None,
    state: PerceptronState,
    *,
    mask: np.ndarray,
    end: np.ndarray,
    shards: int | list[Shard],
    mixing: str = DEFAULT_MIXING,
    epochs: int = 10,
    seed: int = 0,
    shuffle: bool = True,
    dev_score: Callable[[Weights], float] | None = None,
    dev_rows: np.ndarray | None = None,
    callback: Callable[[EpochReport], None] | None = None,
    on_epoch_end: Callable[[PerceptronState], None] | None = None,
    consume: bool = False,
    progress: Callable[[int, int], None] | None = None,
    allowed: np.ndarray | None = None,
    values: np.ndarray | None = None,
    margin: float = 0.0,
    step: str = "perceptron",
    C: float = 1.0,
    processes: bool = True,
    start_method: str | None = None,
    sparse: bool = False,
    runner: Callable[[list[Shard], PerceptronState], Any] | None = None,
    totals: tuple[int, int] | None = None,
) -> tuple[Weights, int]:
    """`structperc.train.perceptron.train_perceptron` by iterative parameter mixing over ``shards``
    shards (see the module docstring): the same arguments, dev scoring, best epoch, checkpoints
    (``on_epoch_end`` receives the mixed state) and reports (the shards' mistakes summed).

    ``processes`` runs one worker process per shard (`structperc.train.workers.ProcessShards`,
    ``start_method`` "fork" or "spawn", default fork where there is one), else the shards run in
    turn in this process; both give the same weights bit for bit, as does ``sparse`` (the workers
    mix only the rows an epoch changed, `mix_rows`: on one machine no faster than mixing every
    weight, as gathering scattered rows costs what streaming whole arrays does; the piece a driver
    that sends weights over a network needs). ``runner`` makes another runner of the shards'
    epochs from (shards, state), a context manager with ``epoch(epoch, mixing)`` (a Dask cluster:
    `structperc.dask.training.dask_runner`). ``progress`` hears of whole epochs
    only. A resumed ``state`` must come from a mixed run with the same shards and mixing (the caller's
    checkpoint fingerprint says so).

    Without ``feats`` and ``y`` (None), ``shards`` are made elsewhere and ``runner`` runs them where they
    are (Dask workers that read and featurized their own parts: `structperc.dask.parts`);
    ``totals`` is then the run's (sentences, tokens).
    """
    if mixing not in MIXINGS:
        raise InputError(f"unknown mixing {mixing!r} (one of {', '.join(MIXINGS)})")
    if feats is None or y is None:
        if isinstance(shards, int) or runner is None or totals is None:
            raise ValueError("without features, give the shards, their runner and the totals")
        mask, end = np.ascontiguousarray(mask, dtype=np.float64), np.ascontiguousarray(end, dtype=np.float64)
        parts, (n_sent, n_tok) = shards, totals
    else:
        inputs = epoch_inputs(feats, y, state, mask, end, allowed, values,
                              margin_hyperparameters(margin, step, C))
        mask, end = inputs.mask, inputs.end
        parts = make_shards(inputs, shards, seed, shuffle) if isinstance(shards, int) else shards
        n_sent, n_tok = inputs.n_sent, inputs.n_tok
    if runner is not None:
        shards_run = runner(parts, state)
    elif processes:
        from structperc.train.workers import ProcessShards

        shards_run = ProcessShards(parts, state, start_method, sparse)
    else:
        shards_run = SerialShards(parts, state)
    with shards_run as run:
        while state.epoch < epochs:
            started = time.perf_counter()
            if progress is not None:
                progress(0, n_sent)
            results = run.epoch(state.epoch + 1, mixing)
            state.c = max(r.c for r in results)
            state.epoch += 1
            state.rng_state = {}
            if progress is not None:
                progress(n_sent, n_sent)
            report = EpochReport(state.epoch, epochs, sum(r.mistakes for r in results),
                                 sum(r.token_errors for r in results), n_sent, n_tok,
                                 time.perf_counter() - started, skipped=sum(r.skipped for r in results))
            end_of_epoch(state, report, mask, end, dev_score, dev_rows, on_epoch_end, callback)
    return _result(state, mask, end, consume)
