"""The second-order averaged structured perceptron: `SecondOrderPerceptron`, an opt-in twin of
`structperc.train.perceptron.Perceptron` (the same `structperc.train.trainer.Trainer` signature)
whose model adds transitions over label triples (y_{t-2}, y_{t-1}, y_t) to the first-order one
(issue 20's lever; the kernels are `structperc.train.order2_kernels`); `train_perceptron_order2` is
its keyword face.

The first-order trainer is untouched: this module has its own epoch loop over the same
`PerceptronState` (state weights, transitions, conditioned transitions, counter, RNG) plus the
second-order weights and sums of `SecondOrder`. The same seed visits the sentences in the same order
as the first-order trainer, so the two can be compared epoch for epoch.

Restricted to the common case: no attribute values other than 1, no partial labels, the default
update (no margin, no passive-aggressive steps), no checkpoints; anything else is refused with an
`InputError`.

References
----------
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments with
perceptron algorithms. EMNLP 2002 (the perceptron and its averaging, for any Markov order).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features
from structperc.features.instances import Instances
from structperc.model.weights import Weights
from structperc.train.perceptron import check_kernel_inputs, check_values, partial_sentences
from structperc.train.reports import EpochReport
from structperc.train.state import PerceptronState
from structperc.train.trainer import TrainOptions, Update, epoch_loop, finish, training_data


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


class SecondOrderPerceptron:
    """The second-order averaged structured perceptron (`structperc.train.trainer.Trainer`): Collins'
    perceptron over first- and second-order transitions, the same seed visiting the sentences in the
    same order as `structperc.train.perceptron.Perceptron`. ``second`` holds the second-order weights
    to continue from (default zeros; updated in place). The weights returned, and those
    ``options.dev_score`` receives, carry the averaged second-order tensor as ``order2`` (float32
    (L + 1, L + 1, L), `structperc.decode.order2` decodes with it). ``options.progress`` hears
    nothing (the epoch is one compiled call)."""

    def __init__(self, second: SecondOrder | None = None):
        self.second = second

    def train(self, data: Instances | None, state: PerceptronState,
              options: TrainOptions) -> tuple[Weights, int]:
        if data is None:
            raise ValueError("the second-order perceptron trains on instances held here: give them")
        if options.on_epoch_end is not None:
            raise InputError("second-order transitions (order=2) do not save or resume checkpoints")
        c = np.ascontiguousarray
        feats = data.feats
        X, XT, yy = c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32), c(data.y, dtype=np.int32)
        ptr, mask, end = c(feats.sent_ptr, dtype=np.int64), c(options.mask, dtype=np.float64), \
            c(options.end, dtype=np.float64)
        check_kernel_inputs(X, XT, yy, ptr, state, mask, end)
        _refuse_unsupported(feats, None, data.allowed, yy, ptr, X, options.update.margin, options.update.step)
        L = state.Wt.shape[1]
        second = self.second if self.second is not None else SecondOrder.zeros(L)
        if second.W2.shape != (L + 1, L + 1, L) or second.U2.shape != second.W2.shape:
            raise ValueError("second-order weights do not match the number of labels")
        kernel = _epoch_kernel()
        n_sent, max_len, shuffle = len(ptr) - 1, int(np.diff(ptr).max()), options.shuffle
        rng = np.random.default_rng(options.seed)
        if state.rng_state:
            rng.bit_generator.state = state.rng_state

        def epoch() -> tuple[int, int, int]:
            order = rng.permutation(n_sent).astype(np.int64) if shuffle else np.arange(n_sent, dtype=np.int64)
            mistakes, token_errors, state.c = kernel(
                order, ptr, X, XT, yy, state.ptr, state.labels, state.active, state.W, state.U, state.Wt, state.Ut,
                state.Wc, state.Uc, second.W2, second.U2, mask, end, state.c, max_len)
            state.rng_state = dict(rng.bit_generator.state)
            return int(mistakes), int(token_errors), 0
        T2: dict[str, np.ndarray] = {}  # the averaged tensor of the latest dev scoring and of the best
        options = dataclasses.replace(options, mask=mask, end=end, **_keeping_best(second, state, options, T2))
        epoch_loop(state, options, n_sent, int(ptr[-1]), epoch)
        weights, best_epoch = finish(state, options)
        weights.order2 = T2["best"] if "best" in T2 else second.averaged(state.c)
        return weights, best_epoch


def _keeping_best(second: SecondOrder, state: PerceptronState, options: TrainOptions,
                  T2: dict[str, np.ndarray]) -> dict[str, Any]:
    """The dev scoring and callback of a second-order run: the scored weights carry the epoch's
    averaged second-order tensor, which ``T2`` keeps as ``"best"`` when the epoch is the best."""
    score, callback = options.dev_score, options.callback
    if score is None:
        return {}

    def dev_score(weights: Weights) -> float:
        weights.order2 = T2["latest"] = second.averaged(state.c)
        return score(weights)

    def report(r: EpochReport) -> None:
        if r.best:
            T2["best"] = T2["latest"]
        if callback is not None:
            callback(r)
    return {"dev_score": dev_score, "callback": report}


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
    """`SecondOrderPerceptron` from ``second`` with its options as keywords (those of
    `structperc.train.perceptron.train_perceptron`; ``allowed``, ``values``, ``margin``, ``step`` and
    ``C`` only in their defaults' meaning: see the module), but ``dev_score`` receives the averaged
    first-order `Weights` (of ``dev_rows`` only, when given) *and* the averaged second-order tensor.

    Returns
    -------
    (Weights, array, int)
        The averaged first-order weights and second-order tensor of the best dev epoch (else of the
        last) and that epoch.
    """
    score = None if dev_score is None else (lambda weights: dev_score(weights, weights.order2))
    options = TrainOptions(mask, end, epochs=epochs, seed=seed, shuffle=shuffle, update=Update(step, margin, C),
                           order=2, dev_score=score, dev_rows=dev_rows, callback=callback, consume=consume)
    weights, best_epoch = SecondOrderPerceptron(second).train(training_data(feats, y, allowed, values), state,
                                                              options)
    T2, weights.order2 = weights.order2, None
    assert T2 is not None
    return weights, T2, best_epoch
