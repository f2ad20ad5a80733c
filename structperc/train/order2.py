"""The second-order averaged structured perceptron: `train_perceptron_order2`, an opt-in twin of
`structperc.train.perceptron.train_perceptron` whose model adds transitions over label triples
(y_{t-2}, y_{t-1}, y_t) to the first-order one (issue 20's lever; the kernels are
`structperc.train.order2_kernels`).

The first-order trainer is untouched: this module has its own epoch loop over the same
`PerceptronState` (state weights, transitions, conditioned transitions, counter, RNG) plus the
second-order weights and sums of `SecondOrder`. The same seed visits the sentences in the same order
as the first-order trainer, so the two can be compared epoch for epoch.

Restricted to the common case: no attribute values other than 1, no partial labels, the default
update (no margin, no passive-aggressive steps); anything else is refused with an `InputError`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights
from structperc.train.perceptron import (
    EpochReport,
    PerceptronState,
    check_kernel_inputs,
    check_values,
    partial_sentences,
)


@dataclass
class SecondOrder:
    """Second-order transition weights of a perceptron in training: ``W2[q, p, y]`` scores the labels
    (q, p, y) at positions (t − 2, t − 1, t), index L being ``<bos>``; ``U2`` their running sums of
    c·Δ for averaging (see `PerceptronState`)."""

    W2: np.ndarray  # (L + 1, L + 1, L) float32
    U2: np.ndarray  # (L + 1, L + 1, L) float64

    @classmethod
    def zeros(cls, n_labels: int) -> "SecondOrder":
        shape = (n_labels + 1, n_labels + 1, n_labels)
        return cls(np.zeros(shape, np.float32), np.zeros(shape))

    def averaged(self, c: int) -> np.ndarray:
        """Collins' average after ``c`` instances: W2 − U2 / c, float32."""
        inv = 1.0 / c if c else 0.0
        return (self.W2 - self.U2 * inv).astype(np.float32)


def _refuse_unsupported(feats: Features, values: np.ndarray | None, allowed: np.ndarray | None, y: np.ndarray,
                        ptr: np.ndarray, X: np.ndarray, margin: float, step: str) -> None:
    """`InputError` for what the second-order epoch does not do (yet)."""
    if check_values(feats.values if values is None else values, X) is not None:
        raise InputError("second-order transitions (order=2) do not support attribute values other than 1")
    if allowed is not None and partial_sentences(np.asarray(allowed, dtype=bool), y, ptr).any():
        raise InputError("second-order transitions (order=2) do not support partially labelled data")
    if float(margin) != 0.0 or step != "perceptron":
        raise InputError("second-order transitions (order=2) train with the default update only "
                         "(margin 0, step 'perceptron')")


def _epoch_kernel() -> Callable[..., Any]:
    """The compiled epoch: its ahead-of-time build, else numba's JIT (compiled or loaded from its cache
    here, so that the first timed epoch measures training)."""
    from structperc.compiled import loader

    kernel = loader.aot("train_epoch_order2")
    if kernel is None:
        from structperc.train import order2_kernels

        order2_kernels.warm_up()
        kernel = order2_kernels.train_epoch_order2
    return kernel


def train_perceptron_order2(
    feats: Features,
    y: np.ndarray,
    state: PerceptronState,
    second: SecondOrder | None = None,
    *,
    mask: np.ndarray,
    end: np.ndarray,
    epochs: int = 10,
    seed: int = 0,
    shuffle: bool = True,
    dev_score: Callable[[Weights, np.ndarray], float] | None = None,
    dev_rows: np.ndarray | None = None,
    callback: Callable[[EpochReport], None] | None = None,
    consume: bool = False,
    allowed: np.ndarray | None = None,
    values: np.ndarray | None = None,
    margin: float = 0.0,
    step: str = "perceptron",
    C: float = 1.0,
) -> tuple[Weights, np.ndarray, int]:
    """Train (or continue training) the second-order model until ``state.epoch == epochs``.

    The arguments are `structperc.train.perceptron.train_perceptron`'s (``allowed``, ``values``,
    ``margin``, ``step`` and ``C`` only in their defaults' meaning: see the module), plus ``second``
    (the second-order weights to continue from; default zeros, updated in place), and ``dev_score``
    receives the averaged first-order `Weights` (of ``dev_rows`` only, when given) *and* the averaged
    second-order tensor (float32 (L + 1, L + 1, L)) to decode with (`structperc.decode.order2`).

    Returns
    -------
    (Weights, array, int)
        The averaged first-order weights and second-order tensor of the best dev epoch (else of the
        last) and that epoch.
    """
    c = np.ascontiguousarray
    X, XT, yy = c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32), c(y, dtype=np.int32)
    ptr, mask, end = c(feats.sent_ptr, dtype=np.int64), c(mask, dtype=np.float64), c(end, dtype=np.float64)
    check_kernel_inputs(X, XT, yy, ptr, state, mask, end)
    _refuse_unsupported(feats, values, allowed, yy, ptr, X, margin, step)
    L = state.Wt.shape[1]
    second = second if second is not None else SecondOrder.zeros(L)
    if second.W2.shape != (L + 1, L + 1, L) or second.U2.shape != second.W2.shape:
        raise ValueError("second-order weights do not match the number of labels")
    epoch = _epoch_kernel()
    n_sent, n_tok = len(ptr) - 1, int(ptr[-1])
    max_len = int(np.diff(ptr).max())
    rng = np.random.default_rng(seed)
    if state.rng_state:
        rng.bit_generator.state = state.rng_state
    best_T2: np.ndarray | None = None
    while state.epoch < epochs:
        started = time.perf_counter()
        order = rng.permutation(n_sent).astype(np.int64) if shuffle else np.arange(n_sent, dtype=np.int64)
        mistakes, token_errors, state.c = epoch(
            order, ptr, X, XT, yy, state.ptr, state.labels, state.active, state.W, state.U, state.Wt, state.Ut,
            state.Wc, state.Uc, second.W2, second.U2, mask, end, state.c, max_len)
        state.epoch += 1
        state.rng_state = dict(rng.bit_generator.state)
        report = EpochReport(state.epoch, epochs, int(mistakes), int(token_errors), n_sent, n_tok,
                             time.perf_counter() - started)
        if dev_score is not None:
            T2 = second.averaged(state.c)
            report.dev_score = float(dev_score(state.averaged(mask, end, rows=dev_rows), T2))
            if state.best_score is None or report.dev_score > state.best_score:
                state.remember_best(report.dev_score, mask, end)
                best_T2 = T2
                report.best = True
        if callback is not None:
            callback(report)
    best = state.best_weights(into=state.W if consume else None)
    if best is None or best_T2 is None:
        return state.averaged(mask, end, in_place=consume), second.averaged(state.c), state.epoch
    state.spill = state.spilled = None
    if consume:
        state.U = None  # type: ignore[assignment]  # as `PerceptronState.averaged(in_place=True)`
    return best, best_T2, state.best_epoch
