"""The averaged structured perceptron (Collins 2002): the first-order `Perceptron` trainer, its
compiled epoch's inputs (`epoch_inputs`, `run_epoch`), and `train_perceptron`, its keyword face.

The trainer sees integer arrays only (features, label ids) and hands back `Weights`; strings, files
and metrics stay with the caller, which passes a ``dev_score`` function if it wants model selection.
Every trainer takes the same `structperc.train.trainer.TrainOptions`; this one implements the
update rules of `structperc.train.trainer.Update`: Collins' perceptron step, and the margin and
passive-aggressive (Crammer et al. 2006) steps, in the compiled epochs of
`structperc.train.epoch_kernels`.

References
----------
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments
with perceptron algorithms. EMNLP 2002.
X. Sun, T. Matsuzaki, D. Okanohara and J. Tsujii. Latent variable perceptron algorithm for
structured classification. IJCAI 2009 (unknown tags, ``allowed``).
E. R. Fernandes and U. Brefeld. Learning from partially annotated sequences. ECML PKDD 2011.
B. Taskar, C. Guestrin and D. Koller. Max-margin Markov networks. NIPS 2003 (``margin``).
K. Crammer, O. Dekel, J. Keshet, S. Shalev-Shwartz and Y. Singer. Online passive-aggressive
algorithms. JMLR 7:551-585, 2006 (``step="pa"``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np

from structperc.compiled.boundary import rising
from structperc.errors import InputError
from structperc.features.index import Features, checked_values
from structperc.features.instances import Instances
from structperc.model.weights import Weights
from structperc.train.reports import EpochReport as EpochReport
from structperc.train.state import PerceptronState as PerceptronState
from structperc.train.trainer import STEPS as STEPS
from structperc.train.trainer import UPDATE_DEFAULTS as UPDATE_DEFAULTS
from structperc.train.trainer import TrainOptions, Update, epoch_loop, finish, training_data
from structperc.train.trainer import margin_hyperparameters as margin_hyperparameters

#: Slices an epoch is cut into when progress is reported within it.
PROGRESS_STEPS = 50


def check_kernel_inputs(X: np.ndarray, XT: np.ndarray, y: np.ndarray, ptr: np.ndarray,
                        state: PerceptronState, mask: np.ndarray, end: np.ndarray) -> None:
    """Refuse arrays the compiled epoch would read out of bounds (it checks nothing itself, for
    speed: a bad id there is a segmentation fault, not an exception)."""
    if len(ptr) < 2:
        raise InputError("no training sentences: nothing to train on")
    L = state.Wt.shape[1]
    if L < 1 or ptr[-1] < 1:
        raise InputError("no training tokens: nothing to train on")
    n = int(ptr[-1])
    if ptr[0] != 0 or not rising(ptr) or X.shape[0] != n or XT.shape[0] != n or len(y) != n:
        raise ValueError("features, label ids and sentence offsets disagree in length")
    for ids, size, what in ((X, len(state.ptr) - 1, "state attribute"),
                            (XT, state.Wc.shape[0], "transition attribute"), (y, L, "label")):
        if ids.size and (int(ids.min()) < (0 if ids is y else -1) or int(ids.max()) >= size):
            raise ValueError(f"{what} ids out of range (0..{size - 1})")
    if state.Wt.shape != (L + 1, L) or state.Wc.shape[1:] != (L + 1, L) or mask.shape != (L + 1, L) \
            or end.shape != (L,) or (len(state.labels) and int(state.labels.max()) >= L):
        raise ValueError("weights, transition mask and labels disagree in the number of labels")


def _epoch_kernel(name: str = "train_epoch"):
    """The compiled training epoch (``train_epoch``, ``train_epoch_partial`` for data with unknown
    tags, ``train_epoch_valued`` for attribute values, ``train_epoch_margin`` and
    ``train_epoch_margin_valued`` for the margin perceptron and PA steps): the ahead-of-time build, else numba's JIT
    (compiled, or loaded from its cache, here, so that the first timed epoch measures training and
    not compilation)."""
    from structperc.compiled import loader

    kernel = loader.aot(name)
    if kernel is None:
        from structperc.train import epoch_kernels

        epoch_kernels.warm_up()
        kernel = getattr(epoch_kernels, name)
    return kernel


def check_values(values: np.ndarray | None, X: np.ndarray) -> np.ndarray | None:
    """Attribute values as the compiled epoch reads them (C-contiguous float32 of ``X``'s shape), or
    None when there are none or every value is 1: the all-ones epoch is then run, which gives the
    same weights bit for bit (x·1 = x) at the speed of training without values.

    Raises `InputError` for a shape that does not match the attribute ids, or a value that is not
    finite (one NaN or infinity would spread through every weight it touches)."""
    if values is None:
        return None
    v = checked_values(values, X)
    if (v == 1).all():
        return None
    return v

def partial_sentences(allowed: np.ndarray, y: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Which sentences have a token whose allowed labels are not exactly its gold label, uint8 per
    sentence: those the latent perceptron fills itself (the others train as fully labelled)."""
    n = len(y)
    one_hot = allowed[np.arange(n), y] & (np.count_nonzero(allowed, axis=1) == 1)
    sent_of = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    flags = np.zeros(len(ptr) - 1, dtype=np.uint8)
    flags[sent_of[~one_hot]] = 1
    return flags

@dataclass
class EpochInputs:
    """What the compiled epoch reads besides the state, checked and in the dtypes it was built for:
    features, label ids and sentence offsets, the scheme's penalties, and for partial labels or
    attribute values the extra arrays of `train_epoch_partial` / `train_epoch_valued`."""

    X: np.ndarray
    XT: np.ndarray
    y: np.ndarray
    ptr: np.ndarray
    mask: np.ndarray
    end: np.ndarray
    kernel: str = "train_epoch"
    allowed: np.ndarray | None = None  # uint8 (n_tokens, L), or (0, 1) for the valued epoch
    partial: np.ndarray | None = None  # uint8 per sentence, or empty for the valued epoch
    V: np.ndarray | None = None
    H: np.ndarray | None = None  # the margin epoch's hyperparameters (`margin_hyperparameters`)

    @property
    def n_sent(self) -> int:
        return len(self.ptr) - 1

    @property
    def n_tok(self) -> int:
        return int(self.ptr[-1])

    @property
    def max_len(self) -> int:
        return int(np.diff(self.ptr).max()) if self.n_sent else 0

    def tail(self) -> tuple:
        """The kernel's arguments after ``max_len``."""
        if self.partial is None:
            return ()
        return (self.allowed, self.partial) + tuple(a for a in (self.V, self.H) if a is not None)

    def select(self, a: int, b: int) -> "EpochInputs":
        """Sentences ``a:b`` (views; offsets renumbered from 0): one shard of `structperc.train.mixing`."""
        lo, hi = int(self.ptr[a]), int(self.ptr[b])
        rows = slice(lo, hi)
        per_token = self.allowed is not None and len(self.allowed)
        return EpochInputs(self.X[rows], self.XT[rows], self.y[rows], self.ptr[a:b + 1] - lo, self.mask, self.end,
                           self.kernel, self.allowed[rows] if per_token and self.allowed is not None else self.allowed,
                           self.partial[a:b] if self.partial is not None and len(self.partial) else self.partial,
                           None if self.V is None else self.V[rows], self.H)


def epoch_inputs(feats: Features, y: np.ndarray, state: PerceptronState, mask: np.ndarray, end: np.ndarray,
                 allowed: np.ndarray | None = None, values: np.ndarray | None = None,
                 H: np.ndarray | None = None) -> EpochInputs:
    """Check the training arrays against ``state`` and choose the compiled epoch (see
    `Perceptron` for ``allowed`` and ``values``)."""
    c = np.ascontiguousarray  # the dtypes the compiled epoch was built for
    X, XT, y = c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32), c(y, dtype=np.int32)
    ptr, mask, end = c(feats.sent_ptr, dtype=np.int64), c(mask, dtype=np.float64), c(end, dtype=np.float64)
    check_kernel_inputs(X, XT, y, ptr, state, mask, end)
    V = check_values(feats.values if values is None else values, X)
    partial = None
    if allowed is not None:
        L = state.Wt.shape[1]
        if allowed.shape != (len(y), L):
            raise ValueError(f"allowed labels of shape {allowed.shape}, expected {(len(y), L)}")
        partial = partial_sentences(np.asarray(allowed, dtype=bool), y, ptr)
        if partial.any():
            allowed = c(allowed, dtype=bool).view(np.uint8)
        else:
            partial = None  # every sentence fully labelled: the fully labelled epoch, exactly
    if V is not None or H is not None:
        if partial is None:  # the valued/margin epoch with no partial sentence: every tag is gold
            allowed, partial = np.zeros((0, 1), dtype=np.uint8), np.zeros(0, dtype=np.uint8)
        kernel = "train_epoch_valued" if H is None else "train_epoch_margin" if V is None else \
            "train_epoch_margin_valued"
        return EpochInputs(X, XT, y, ptr, mask, end, kernel, allowed, partial, V, H)
    if partial is None:
        return EpochInputs(X, XT, y, ptr, mask, end)
    return EpochInputs(X, XT, y, ptr, mask, end, "train_epoch_partial", allowed, partial)


def run_epoch(inputs: EpochInputs, state: PerceptronState, order: np.ndarray, step: int | None = None,
              progress: Callable[[int, int], None] | None = None,
              updated: np.ndarray | None = None) -> tuple[int, int, int]:
    """One epoch of the compiled kernel over ``order`` (int64 sentence ids), in place on ``state``'s
    weights, sums and counter, ``step`` sentences per call (``progress`` after each; ``updated``,
    bool per slice, is set where the slice made an update). Returns the sentences with a mistake,
    the tokens mislabelled and the partial sentences skipped."""
    train_epoch = _epoch_kernel(inputs.kernel)
    n, max_len, tail = len(order), inputs.max_len, inputs.tail()
    step = step or max(n, 1)
    mistakes = token_errors = skipped = 0
    for a in range(0, n, step):  # one slice unless progress is reported
        args = (order[a:a + step], inputs.ptr, inputs.X, inputs.XT, inputs.y, state.ptr, state.labels,
                state.active, state.W, state.U, state.Wt, state.Ut, state.Wc, state.Uc, inputs.mask,
                inputs.end, state.c, max_len)
        if not tail:
            m, e, state.c = train_epoch(*args)
        else:
            m, e, state.c, k = train_epoch(*args, *tail)
            skipped += k
        mistakes, token_errors = mistakes + m, token_errors + e
        if updated is not None:
            updated[a // step] = m > 0
        if progress is not None:
            progress(min(a + step, n), n)
    return int(mistakes), int(token_errors), int(skipped)

class Perceptron:
    """The first-order averaged structured perceptron (`structperc.train.trainer.Trainer`): each
    epoch visits the sentences in the seed's order, decodes each with the current weights and, on a
    mistake, applies ``options.update`` (Collins' step, or the margin / passive-aggressive steps of
    Crammer et al. 2006); the weights returned are the average over every instance (Collins 2002).

    ``data.allowed`` (partial labels, bool (n_tokens, L)): a sentence whose rows are not all one-hot
    at ``y`` is filled by the best path that agrees with them (the latent structured perceptron,
    `structperc.train.epoch_kernels.train_epoch_partial`); None, or no such sentence, trains exactly
    as fully labelled data. ``data.feats.values`` (attribute values, float32 aligned with
    ``feats.state``): a token's state score is Σ_k v_k·W[a_k, y] and an update adds ±v_k
    (`structperc.train.epoch_kernels.train_epoch_valued`); None, or every value 1, runs the
    all-ones epoch (the same weights, bit for bit)."""

    def train(self, data: Instances | None, state: PerceptronState,
              options: TrainOptions) -> tuple[Weights, int]:
        if data is None:
            raise ValueError("the first-order perceptron trains on instances held here: give them")
        inputs = epoch_inputs(data.feats, data.y, state, options.mask, options.end, data.allowed, None,
                              options.update.hyperparameters())
        options = dataclasses.replace(options, mask=inputs.mask, end=inputs.end)
        n_sent, progress, shuffle = inputs.n_sent, options.progress, options.shuffle
        per_call = max(1, -(-n_sent // PROGRESS_STEPS)) if progress is not None else max(n_sent, 1)
        rng = np.random.default_rng(options.seed)
        if state.rng_state:
            rng.bit_generator.state = state.rng_state

        def epoch() -> tuple[int, int, int]:
            order = rng.permutation(n_sent).astype(np.int64) if shuffle else np.arange(n_sent, dtype=np.int64)
            counts = run_epoch(inputs, state, order, per_call, progress)
            state.rng_state = rng.bit_generator.state
            return counts
        epoch_loop(state, options, n_sent, inputs.n_tok, epoch)
        return finish(state, options)


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
) -> tuple[Weights, int]:
    """`Perceptron` on ``feats`` and ``y`` (gold label ids, int32, one per token) from ``state``
    (`PerceptronState.zeros` for a fresh model), its options as keywords: see
    `structperc.train.trainer.TrainOptions` for each, `structperc.train.trainer.Update` for
    ``margin``, ``step`` and ``C``, and `Perceptron` for ``allowed`` (partial labels) and ``values``
    (attribute values; default ``feats.values``).

    Returns the averaged weights (of the best dev epoch if ``dev_score`` is given, else of the
    last) and the epoch they come from.
    """
    options = TrainOptions(mask, end, epochs=epochs, seed=seed, shuffle=shuffle, update=Update(step, margin, C),
                           dev_score=dev_score, dev_rows=dev_rows, callback=callback, on_epoch_end=on_epoch_end,
                           consume=consume, progress=progress)
    return Perceptron().train(training_data(feats, y, allowed, values), state, options)
