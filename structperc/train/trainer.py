"""One trainer interface: every training algorithm is ``train(data, state, options) -> (Weights, best epoch)``.

Why. CRFsuite's shape (``crfsuite_train_*``): each algorithm (lbfgs, l2sgd, ap, pa, arow) is one
function of one signature that reaches the model through a small interface, and what differs
between algorithms is the *values* of one options object, not the function called or its argument
list. Before this module the trainers here had parallel signatures (19, 26 and 17 keywords), the
update rule was three loose keywords, and `structperc.train.run` plumbed arguments differently into
each. Now:

* `TrainOptions` holds how to train: epochs, seed, shuffling, the update rule (`Update`), the
  Markov order, parameter mixing (`Mixing`), the masks of the label scheme, and the hooks (dev
  scoring, epoch callback, checkpoint, progress). What to train on (features, gold ids, partial
  labels, attribute values) is the `structperc.features.instances.Instances`; where to start from
  is the `structperc.train.state.PerceptronState`.
* `Trainer` is the protocol, implemented by `structperc.train.perceptron.Perceptron` (the averaged
  structured perceptron of Collins 2002, with the margin and passive-aggressive updates of
  Crammer et al. 2006), `structperc.train.order2.SecondOrderPerceptron` (the same over label
  triples) and `structperc.train.mixing.ParameterMixing` (iterative parameter mixing, McDonald,
  Hall & Mann 2010).
* `trainer_for` picks the trainer the options ask for; `train` runs it.

The shared epoch loop (`epoch_loop`: time, count, report, score on dev data, keep the best,
checkpoint) and the end of a run (`finish`: the best dev epoch's weights, else the last average)
are here, so that each trainer writes only what differs: its epoch.

References
----------
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments with
perceptron algorithms. EMNLP 2002.
K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer. Online passive-aggressive
algorithms. JMLR 7:551-585, 2006.
R. McDonald, K. Hall and G. Mann. Distributed training strategies for the structured perceptron.
NAACL HLT 2010, 456-464.
N. Okazaki. CRFsuite: a fast implementation of conditional random fields. 2007.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Protocol, runtime_checkable

import numpy as np

from structperc.errors import InputError
from structperc.features.instances import Instances
from structperc.model.weights import Weights
from structperc.train.reports import EpochReport
from structperc.train.state import PerceptronState

if TYPE_CHECKING:
    from structperc.train.mixing import Shard

#: The step rules of `Update.step`.
STEPS = ("perceptron", "pa")
#: The update rule's parameters (`Update`) and their defaults, as the estimators' parameters name them.
UPDATE_DEFAULTS = {"step": "perceptron", "margin": 0.0, "C": 1.0}


def margin_hyperparameters(margin: float, step: str, C: float) -> np.ndarray | None:
    """The margin epoch's hyperparameter vector (see `structperc.train.epoch_kernels.H_MARGIN`), or
    None for margin 0 with perceptron steps: the default epoch then runs, unchanged.

    Raises `InputError` for a margin that is negative or not finite, an unknown step rule, or a C
    that is not positive and finite."""
    if step not in STEPS:
        raise InputError(f"unknown step rule {step!r} (expected one of {', '.join(STEPS)})")
    margin, C = float(margin), float(C)
    if not (np.isfinite(margin) and margin >= 0):
        raise InputError(f"the margin must be a finite number >= 0, not {margin}")
    if not (np.isfinite(C) and C > 0):
        raise InputError(f"C (the passive-aggressive step's bound) must be a finite number > 0, not {C}")
    if margin == 0 and step == "perceptron":
        return None
    # the layout of epoch_kernels.H_MARGIN, H_STEP, H_C and its STEP_PA (1) / STEP_PERCEPTRON (0); not
    # imported from there: that would load numba where the ahead-of-time build runs without it
    return np.array([margin, 1.0 if step == "pa" else 0.0, C], dtype=np.float64)


@dataclass(frozen=True)
class Update:
    """The update rule: what a mistake does to the weights.

    The defaults are Collins' perceptron step (move by 1 towards the gold path, away from the
    predicted one). ``margin`` > 0 decodes the cost-augmented best path argmax s(y') +
    ``margin``·Hamming(y, y') and updates whenever it is not the gold path (Taskar et al. 2003's
    margin, in the perceptron); ``step="pa"`` moves by PA-I's τ = min(``C``, ℓ / ‖Δφ‖²), ℓ = s(ŷ) −
    s(y) + ``margin``·Hamming, or + √Hamming when ``margin`` is 0: CRFsuite's ``pa`` (Crammer et
    al. 2006). Checked when a trainer starts (`hyperparameters`), as the options are made before.
    """

    step: str = "perceptron"
    margin: float = 0.0
    C: float = 1.0

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> "Update":
        """The update rule of an estimator's parameters (the keys of `UPDATE_DEFAULTS` it has)."""
        return cls(**{k: params[k] for k in UPDATE_DEFAULTS if k in params})

    def hyperparameters(self) -> np.ndarray | None:
        """`margin_hyperparameters` of this rule (None: the default epoch, unchanged)."""
        return margin_hyperparameters(self.margin, self.step, self.C)


@dataclass(frozen=True)
class Mixing:
    """Iterative parameter mixing (McDonald, Hall & Mann 2010; `structperc.train.mixing`): train on
    ``shards`` shards (a number, or shards made elsewhere), mixing ``mixing`` (None:
    `structperc.train.mixing.DEFAULT_MIXING`) after every epoch.

    ``processes``: one worker process per shard (`structperc.train.workers.ProcessShards`,
    ``start_method`` "fork" or "spawn"), else in turn in this process; ``sparse``: the workers mix
    only the rows an epoch changed; ``runner``: another runner of the shards' epochs, ``runner(shards,
    state)`` a context manager with ``epoch(epoch, mixing)`` (a Dask cluster); ``totals``: the run's
    (sentences, tokens) when the shards are held elsewhere and no instances are given. All of them
    give the same weights bit for bit."""

    shards: "int | list[Shard]"
    mixing: str | None = None
    processes: bool = True
    start_method: str | None = None
    sparse: bool = False
    runner: Callable[[list[Shard], PerceptronState], Any] | None = None
    totals: tuple[int, int] | None = None


@dataclass
class TrainOptions:
    """How a trainer trains (the one options object of every `Trainer`).

    Attributes
    ----------
    mask, end
        Transition and end penalties of the label scheme (see `structperc.labels.transition_mask`).
    epochs, seed, shuffle
        Train (or continue training) until ``state.epoch == epochs``; the seed fixes the order of
        every epoch (the e-th ``permutation`` of ``np.random.default_rng(seed)``), so runs are
        reproducible.
    update
        The update rule (`Update`): perceptron or passive-aggressive steps, with a margin.
    order
        The Markov order of the transitions: 2 trains second-order transitions too
        (`structperc.train.order2`).
    mixing
        Train by iterative parameter mixing over shards (`Mixing`), or None: one trainer.
    dev_score, dev_rows
        Scores averaged weights on held-out data (higher is better); the best epoch is returned.
        With ``dev_rows`` (the sorted state attribute ids the held-out data uses) it receives only
        those attributes' weights, renumbered: far less memory than the whole average. A
        second-order trainer's weights carry their averaged ``order2`` tensor.
    callback, on_epoch_end
        Receive an `EpochReport`, and the state (the checkpoint hook), after every epoch.
    consume
        The caller will not continue from the state: the final average is computed in place of its
        weights (saves a copy of the largest array at the peak of training's memory).
    progress
        Receives ``(sentences done, sentences)`` a few dozen times per epoch (the epoch then runs
        as consecutive slices of its order: the same updates in the same order, the same result);
        parameter mixing reports whole epochs only, second-order training nothing.
    """

    mask: np.ndarray
    end: np.ndarray
    epochs: int = 10
    seed: int = 0
    shuffle: bool = True
    update: Update = field(default_factory=Update)
    order: int = 1
    mixing: Mixing | None = None
    dev_score: Callable[[Weights], float] | None = None
    dev_rows: np.ndarray | None = None
    callback: Callable[[EpochReport], None] | None = None
    on_epoch_end: Callable[[PerceptronState], None] | None = None
    consume: bool = False
    progress: Callable[[int, int], None] | None = None


@runtime_checkable
class Trainer(Protocol):
    """A training algorithm: trains ``state`` in place on ``data`` (None only where the shards are
    held elsewhere: parameter mixing with a runner) as ``options`` say, and returns the averaged
    weights (of the best dev epoch if ``options.dev_score`` is given, else of the last) and the
    epoch they come from."""

    def train(self, data: Instances | None, state: PerceptronState,
              options: TrainOptions) -> tuple[Weights, int]: ...


def trainer_for(options: TrainOptions) -> Trainer:
    """The trainer ``options`` ask for: parameter mixing with ``mixing``, else the second-order
    perceptron with ``order`` 2, else the first-order one."""
    if options.mixing is not None:
        from structperc.train.mixing import ParameterMixing

        return ParameterMixing()
    if options.order == 2:
        from structperc.train.order2 import SecondOrderPerceptron

        return SecondOrderPerceptron()
    from structperc.train.perceptron import Perceptron

    return Perceptron()


def train(data: Instances | None, state: PerceptronState, options: TrainOptions) -> tuple[Weights, int]:
    """Train with the trainer ``options`` ask for (`trainer_for`)."""
    return trainer_for(options).train(data, state, options)


def epoch_loop(state: PerceptronState, options: TrainOptions, n_sent: int, n_tok: int,
               epoch: Callable[[], tuple[int, int, int]]) -> None:
    """Run ``epoch`` (one pass in place on ``state``: sentences with a mistake, tokens mislabelled,
    partial sentences skipped) until ``state.epoch == options.epochs``, reporting after each: the
    part every trainer shares. ``options.mask`` and ``end`` are those the weights are made with."""
    while state.epoch < options.epochs:
        started = time.perf_counter()
        mistakes, token_errors, skipped = epoch()
        state.epoch += 1
        report = EpochReport(state.epoch, options.epochs, mistakes, token_errors, n_sent, n_tok,
                             time.perf_counter() - started, skipped=skipped)
        end_of_epoch(state, report, options)


def end_of_epoch(state: PerceptronState, report: EpochReport, options: TrainOptions) -> None:
    """After an epoch: score the average on dev data (keeping the best), checkpoint, report."""
    mask, end = options.mask, options.end
    if options.dev_score is not None:
        report.dev_score = float(options.dev_score(state.averaged(mask, end, rows=options.dev_rows)))
        if state.best_score is None or report.dev_score > state.best_score:
            state.remember_best(report.dev_score, mask, end)
            report.best = True
    if options.on_epoch_end is not None:
        options.on_epoch_end(state)
    if options.callback is not None:
        options.callback(report)


def finish(state: PerceptronState, options: TrainOptions) -> tuple[Weights, int]:
    """The best dev epoch's weights (read back from the spill), else the last epoch's average."""
    mask, end, consume = options.mask, options.end, options.consume
    best = state.best_weights(into=state.W if consume else None)
    if best is None:
        return state.averaged(mask, end, in_place=consume), state.epoch
    state.spill = state.spilled = None
    if consume:
        state.U = None  # type: ignore[assignment]  # as `averaged(in_place=True)`: saving needs the room
    return best, state.best_epoch


def training_data(feats: Any, y: np.ndarray, allowed: np.ndarray | None = None,
                  values: np.ndarray | None = None) -> Instances:
    """The instances of the keyword trainers' ``(feats, y, allowed=, values=)``: ``values`` given
    replaces ``feats.values`` (the trainers read ``feats.values``)."""
    if values is not None:
        feats = type(feats)(feats.state, feats.trans, feats.sent_ptr, values)
    return Instances(feats, y, allowed)
