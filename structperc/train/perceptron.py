"""The averaged structured perceptron trainer: epochs, shuffling, averaging, progress, best epoch.

The trainer sees integer arrays only (features, label ids) and hands back `Weights`; strings, files
and metrics stay with the caller, which passes a ``dev_score`` function if it wants model selection.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from structperc.features.index import Features
from structperc.model.weights import Weights
from structperc.model.state_weights import FeatureSet, StateWeights, all_pairs


@dataclass
class EpochReport:
    """What one epoch did, for progress bars and logs."""

    epoch: int
    epochs: int
    mistakes: int
    token_errors: int
    n_sentences: int
    n_tokens: int
    seconds: float
    dev_score: float | None = None
    best: bool = False

    @property
    def tokens_per_second(self) -> float:
        return self.n_tokens / self.seconds if self.seconds > 0 else float("inf")

    def __str__(self) -> str:
        dev = f"  dev {100 * self.dev_score:.2f}{' *' if self.best else ''}" \
            if self.dev_score is not None else ""
        return (f"epoch {self.epoch}/{self.epochs}  mistakes {self.mistakes}/{self.n_sentences} "
                f"sentences  {self.token_errors} tokens{dev}  {self.seconds:.2f} s  "
                f"{self.tokens_per_second:,.0f} tokens/s")


@dataclass
class PerceptronState:
    """Everything training needs to continue exactly where it was (weights, sums, counter, RNG)."""

    W: np.ndarray          # (nnz,) float32: current weights of the state pairs (integers, exact)
    U: np.ndarray          # (nnz,) float64: running sum of c·Δ for averaging
    Wt: np.ndarray         # (L + 1, L) float32
    Ut: np.ndarray         # (L + 1, L) float64
    Wc: np.ndarray         # (AT, L + 1, L) float32
    Uc: np.ndarray         # (AT, L + 1, L) float64
    c: int = 0             # instances processed so far
    epoch: int = 0         # epochs completed
    rng_state: dict = field(default_factory=dict)
    best_score: float | None = None   # best dev score so far, its epoch and averaged weights
    best_epoch: int = 0
    best: Weights | None = None
    ptr: np.ndarray | None = None     # the state feature set (see `structperc.model.state_weights`),
    labels: np.ndarray | None = None  # required: `zeros` and checkpoints give it
    active: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.ptr is None or self.labels is None:
            raise ValueError("a perceptron state needs its feature set (ptr and labels)")
        self.ptr = np.ascontiguousarray(self.ptr, dtype=np.int64)
        self.labels = np.ascontiguousarray(self.labels, dtype=np.int16)
        self.active = np.ascontiguousarray(self.active if self.active is not None else [],
                                           dtype=np.uint8)
        if not (len(self.W) == len(self.U) == len(self.labels) == self.ptr[-1]) \
                or len(self.active) not in (0, len(self.W)):
            raise ValueError("state weights do not match the feature set")

    @classmethod
    def zeros(cls, n_attributes: int, n_transition_attributes: int, n_labels: int,
              pairs: FeatureSet | None = None) -> "PerceptronState":
        """A fresh state over the feature set ``pairs`` (default: all pairs)."""
        L = n_labels
        ptr, labels, active = pairs if pairs is not None else all_pairs(n_attributes, L)
        if len(ptr) != n_attributes + 1:
            raise ValueError("the feature set does not cover the attributes")
        nnz = int(ptr[-1])
        return cls(np.zeros(nnz, np.float32), np.zeros(nnz),
                   np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L)),
                   np.zeros((n_transition_attributes, L + 1, L), np.float32),
                   np.zeros((n_transition_attributes, L + 1, L)), ptr=ptr, labels=labels,
                   active=active)

    @property
    def pairs(self) -> StateWeights:
        """The current (not averaged) state weights."""
        return StateWeights(self.ptr, self.labels, self.W, self.Wt.shape[1])

    def averaged(self, mask: np.ndarray, end: np.ndarray, in_place: bool = False) -> Weights:
        """Collins' average of the weights after every instance so far: W − U / c.

        ``in_place`` writes the state weights' average over ``W`` (no copy: the largest array of
        training); the state cannot continue training after that.
        """
        inv = 1.0 / self.c if self.c else 0.0
        values = _average(self.W, self.U, inv, out=self.W if in_place else None)
        if in_place:
            self.U = None  # type: ignore[assignment]  # a consumed state fails loudly if reused
        state = StateWeights(self.ptr, self.labels, values, self.Wt.shape[1])
        cond = np.zeros((self.Wc.shape[0] + 1,) + self.Wc.shape[1:], dtype=np.float32)
        cond[:-1] = _average(self.Wc, self.Uc, inv)
        return Weights(state, (self.Wt - self.Ut * inv).astype(np.float32), cond, mask, end)


def _epoch_kernel():
    """The compiled training epoch: the ahead-of-time build, else numba's JIT (compiled, or loaded
    from its cache, here, so that the first timed epoch measures training and not compilation)."""
    from structperc.compiled import loader

    kernel = loader.aot("train_epoch")
    if kernel is None:
        from structperc.train import epoch_kernels

        epoch_kernels.warm_up()
        kernel = epoch_kernels.train_epoch
    return kernel


def _average(W: np.ndarray, U: np.ndarray, inv: float, rows: int = 1 << 18,
             out: np.ndarray | None = None) -> np.ndarray:
    """``W − U·inv`` as float32 (into ``out``, which may be ``W``), a block of rows at a time.

    Blocking keeps the float64 temporaries small: a whole-array expression would briefly need
    three more copies of the largest array in the process.
    """
    if out is None:
        out = np.empty(W.shape, dtype=np.float32)
    n = W.shape[0]
    for a in range(0, n, rows):
        b = min(a + rows, n)
        out[a:b] = W[a:b] - U[a:b] * inv
    return out


def train_perceptron(
    feats: Features,
    y: np.ndarray,
    state: PerceptronState,
    *,
    mask: np.ndarray,
    end: np.ndarray,
    epochs: int = 10,
    seed: int = 0,
    shuffle: bool = True,
    dev_score: Callable[[Weights], float] | None = None,
    callback: Callable[[EpochReport], None] | None = None,
    on_epoch_end: Callable[[PerceptronState], None] | None = None,
    consume: bool = False,
) -> tuple[Weights, int]:
    """Train (or continue training) until ``state.epoch == epochs``.

    Parameters
    ----------
    feats, y
        Featurized training sentences and their gold label ids (int32, one per token).
    state
        Weights and sums to start from (`PerceptronState.zeros` for a fresh model).
    mask, end
        Transition and end penalties of the label scheme (see `structperc.labels.transition_mask`).
    epochs, seed, shuffle
        Passes over the data; the seed fixes the order of every epoch, so runs are reproducible.
    dev_score
        Scores averaged weights on held-out data (higher is better); the best epoch is returned.
    callback
        Receives an `EpochReport` after every epoch.
    on_epoch_end
        Receives the state after every epoch (checkpoints).
    consume
        The caller will not continue from ``state``: the final average is computed in place of its
        weights (saves a copy of the largest array at the peak of training's memory).

    Returns
    -------
    (Weights, int)
        Averaged weights (of the best dev epoch if ``dev_score`` is given, else of the last) and the
        epoch they come from.

    References
    ----------
    M. Collins. Discriminative training methods for hidden Markov models: theory and experiments
    with perceptron algorithms. EMNLP 2002.
    """
    train_epoch = _epoch_kernel()

    y = np.ascontiguousarray(y, dtype=np.int32)
    X = np.ascontiguousarray(feats.state, dtype=np.int32)
    XT = np.ascontiguousarray(feats.trans, dtype=np.int32)
    ptr = np.ascontiguousarray(feats.sent_ptr, dtype=np.int64)
    n_sent = len(ptr) - 1
    n_tok = int(ptr[-1])
    max_len = int(np.diff(ptr).max()) if n_sent else 0
    mask = np.ascontiguousarray(mask, dtype=np.float64)
    end = np.ascontiguousarray(end, dtype=np.float64)
    rng = np.random.default_rng(seed)
    if state.rng_state:
        rng.bit_generator.state = state.rng_state
    while state.epoch < epochs:
        started = time.perf_counter()
        order = rng.permutation(n_sent).astype(np.int64) if shuffle else np.arange(n_sent, dtype=np.int64)
        mistakes, token_errors, state.c = train_epoch(
            order, ptr, X, XT, y, state.ptr, state.labels, state.active, state.W, state.U,
            state.Wt, state.Ut, state.Wc, state.Uc, mask, end, state.c, max_len)
        state.epoch += 1
        state.rng_state = rng.bit_generator.state
        seconds = time.perf_counter() - started
        report = EpochReport(state.epoch, epochs, int(mistakes), int(token_errors), n_sent, n_tok, seconds)
        if dev_score is not None:
            weights = state.averaged(mask, end)
            report.dev_score = float(dev_score(weights))
            if state.best_score is None or report.dev_score > state.best_score:
                state.best_score, state.best, state.best_epoch = report.dev_score, weights, state.epoch
                report.best = True
        if on_epoch_end is not None:
            on_epoch_end(state)
        if callback is not None:
            callback(report)
    if state.best is not None:
        return state.best, state.best_epoch
    return state.averaged(mask, end, in_place=consume), state.epoch
