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

The mixing arithmetic (`structperc.train.mixing_arithmetic`) is in float64 (W is float32) as
``x_0 + Σ_{i≥1} k_i (x_i − x_0) / K`` with integer k_i (1 each, or the mistakes) and K = Σ k: the
same value whichever process or block computes it, and exactly x_0 where every shard agrees (N
copies of one shard mix to that shard, bit for bit).

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

Training. `ParameterMixing` is this module's `structperc.train.trainer.Trainer` (the one signature
of every trainer; `Mixing` in its options says how many shards, how to mix and where the shards
run); `train_mixed` is its keyword face.

References
----------
R. McDonald, K. Hall and G. Mann. Distributed training strategies for the structured perceptron.
NAACL HLT 2010, 456-464.
M. Collins. Discriminative training methods for hidden Markov models. EMNLP 2002 (averaging).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.features.instances import Instances
from structperc.model.weights import Weights
from structperc.train.mixing_arithmetic import BLOCK as BLOCK
from structperc.train.mixing_arithmetic import accumulate_mix, finish_mix
from structperc.train.mixing_arithmetic import mix as mix
from structperc.train.mixing_arithmetic import mix_rows as mix_rows
from structperc.train.mixing_arithmetic import row_positions as row_positions
from structperc.train.perceptron import EpochInputs, epoch_inputs, run_epoch
from structperc.train.reports import EpochReport
from structperc.train.state import PerceptronState
from structperc.train.trainer import Mixing, TrainOptions, Update, epoch_loop, finish, training_data

MIXINGS = ("uniform", "mistakes")
DEFAULT_MIXING = "uniform"
#: The arrays of a trainer state that training changes and mixing combines.
MIXED = ("W", "U", "Wt", "Ut", "Wc", "Uc")


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
                    accumulate_mix(acc[name], ki, work[name], mixed[name])
        del work, start
        k = mixing_numerators([r.mistakes for r in results], mixing)
        K = float(sum(k))
        for name in MIXED:
            finish_mix(mixed[name], acc[name], K)
        return results


class ParameterMixing:
    """Iterative parameter mixing (McDonald, Hall & Mann 2010) as a `structperc.train.trainer.Trainer`:
    every epoch each shard of ``options.mixing`` runs one epoch of `structperc.train.perceptron.Perceptron`
    (the same update rule) from the mixed weights, and the results are mixed (see the module
    docstring). The same dev scoring, best epoch, checkpoints (``on_epoch_end`` receives the mixed
    state) and reports (the shards' mistakes summed); ``progress`` hears of whole epochs only. A
    resumed state must come from a mixed run with the same shards and mixing (the caller's
    checkpoint fingerprint says so).

    Without ``data`` (None), the shards are made elsewhere and the runner runs them where they are
    (Dask workers that read and featurized their own parts: `structperc.dask.parts`): then
    ``options.mixing`` gives the shards, their runner and the run's totals."""

    def train(self, data: Instances | None, state: PerceptronState,
              options: TrainOptions) -> tuple[Weights, int]:
        shards = options.mixing
        if shards is None:
            raise ValueError("parameter mixing needs its options (TrainOptions.mixing)")
        how = DEFAULT_MIXING if shards.mixing is None else shards.mixing
        if how not in MIXINGS:
            raise InputError(f"unknown mixing {how!r} (one of {', '.join(MIXINGS)})")
        parts, options, (n_sent, n_tok) = _shards(data, state, options)
        progress = options.progress
        with _shard_runner(parts, state, shards) as run:
            def epoch() -> tuple[int, int, int]:
                if progress is not None:
                    progress(0, n_sent)
                results = run.epoch(state.epoch + 1, how)
                state.c = max(r.c for r in results)
                state.rng_state = {}
                if progress is not None:
                    progress(n_sent, n_sent)
                return (sum(r.mistakes for r in results), sum(r.token_errors for r in results),
                        sum(r.skipped for r in results))
            epoch_loop(state, options, n_sent, n_tok, epoch)
        return finish(state, options)


def _shards(data: Instances | None, state: PerceptronState,
            options: TrainOptions) -> tuple[list[Shard], TrainOptions, tuple[int, int]]:
    """The shards of a mixed run, its options with the checked masks, and its (sentences, tokens)."""
    how = options.mixing
    assert how is not None
    if data is None:
        if isinstance(how.shards, int) or how.runner is None or how.totals is None:
            raise ValueError("without features, give the shards, their runner and the totals")
        mask = np.ascontiguousarray(options.mask, dtype=np.float64)
        end = np.ascontiguousarray(options.end, dtype=np.float64)
        return how.shards, dataclasses.replace(options, mask=mask, end=end), how.totals
    inputs = epoch_inputs(data.feats, data.y, state, options.mask, options.end, data.allowed, None,
                          options.update.hyperparameters())
    parts = make_shards(inputs, how.shards, options.seed, options.shuffle) if isinstance(how.shards, int) \
        else how.shards
    return parts, dataclasses.replace(options, mask=inputs.mask, end=inputs.end), (inputs.n_sent, inputs.n_tok)


def _shard_runner(parts: list[Shard], state: PerceptronState, how: Mixing) -> Any:
    """The runner of the shards' epochs: ``how.runner``'s, else one worker process per shard
    (`structperc.train.workers.ProcessShards`), else `SerialShards`."""
    if how.runner is not None:
        return how.runner(parts, state)
    if how.processes:
        from structperc.train.workers import ProcessShards

        return ProcessShards(parts, state, how.start_method, how.sparse)
    return SerialShards(parts, state)


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
    """`ParameterMixing` with its options as keywords: `structperc.train.perceptron.train_perceptron`'s,
    and `structperc.train.trainer.Mixing`'s (``shards``, ``mixing``, ``processes``, ``start_method``,
    ``sparse``, ``runner``, ``totals``). Without ``feats`` and ``y`` (None), ``shards`` are made
    elsewhere and ``runner`` runs them where they are; ``totals`` is then the run's (sentences, tokens).
    """
    how = Mixing(shards, mixing, processes, start_method, sparse, runner, totals)
    options = TrainOptions(mask, end, epochs=epochs, seed=seed, shuffle=shuffle, update=Update(step, margin, C),
                           mixing=how, dev_score=dev_score, dev_rows=dev_rows, callback=callback,
                           on_epoch_end=on_epoch_end, consume=consume, progress=progress)
    data = None if feats is None or y is None else training_data(feats, y, allowed, values)
    return ParameterMixing().train(data, state, options)
