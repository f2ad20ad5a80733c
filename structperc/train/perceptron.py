"""The averaged structured perceptron trainer: epochs, shuffling, averaging, progress, best epoch.

The trainer sees integer arrays only (features, label ids) and hands back `Weights`; strings, files
and metrics stay with the caller, which passes a ``dev_score`` function if it wants model selection.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass, field
from io import BufferedRandom
from typing import Any, Callable, Mapping

import numpy as np

from structperc.errors import InputError
from structperc.features.index import Features, checked_values
from structperc.model.state_weights import FeatureSet, StateWeights, all_pairs, feature_set
from structperc.model.weights import Weights


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
    skipped: int = 0  # partially labelled sentences no path through their known tags could fill
    stage: int = 0  # 1: an epoch of a two-stage model's first stage (`structperc.train.run`); 0: the model's own

    @property
    def tokens_per_second(self) -> float:
        return self.n_tokens / self.seconds if self.seconds > 0 else float("inf")

    def __str__(self) -> str:
        dev = f"  dev {100 * self.dev_score:.2f}{' *' if self.best else ''}" \
            if self.dev_score is not None else ""
        skipped = f" ({self.skipped} partial with no agreeing path)" if self.skipped else ""
        stage = "first stage: " if self.stage == 1 else ""
        return (f"{stage}epoch {self.epoch}/{self.epochs}  mistakes {self.mistakes}/{self.n_sentences} "
                f"sentences{skipped}  {self.token_errors} tokens{dev}  {self.seconds:.2f} s  "
                f"{self.tokens_per_second:,.0f} tokens/s")


@dataclass
class PerceptronState:
    """Everything training needs to continue exactly where it was (weights, sums, counter, RNG)."""

    W: np.ndarray          # (nnz,) float32: current weights of the state pairs (integers, exact,
    #                        unless attribute values other than 1 are trained)
    U: np.ndarray          # (nnz,) float64: running sum of c·Δ for averaging
    Wt: np.ndarray         # (L + 1, L) float32
    Ut: np.ndarray         # (L + 1, L) float64
    Wc: np.ndarray         # (AT, L + 1, L) float32
    Uc: np.ndarray         # (AT, L + 1, L) float64
    c: int = 0             # instances processed so far
    epoch: int = 0         # epochs completed
    rng_state: Mapping[str, Any] = field(default_factory=dict)
    best_score: float | None = None   # best dev score so far, its epoch and averaged weights
    best_epoch: int = 0
    best: Weights | None = None
    # None only as the constructor's default: `__post_init__` refuses a missing ptr or labels and
    # makes a missing active empty, so a constructed state always holds the three arrays.
    ptr: np.ndarray = None  # type: ignore[assignment]  # the state feature set (see
    labels: np.ndarray = None  # type: ignore[assignment]  # `structperc.model.state_weights`),
    active: np.ndarray = None  # type: ignore[assignment]  # required: `zeros` and checkpoints give it
    spill: BufferedRandom | None = field(default=None, repr=False, compare=False)  # see `remember_best`
    spilled: tuple | None = field(default=None, repr=False, compare=False)

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

    @classmethod
    def fresh(cls, index: Any, n_labels: int, kind: str = "all", X: np.ndarray | None = None,
              y: np.ndarray | None = None, *, allowed: np.ndarray | None = None,
              extra: tuple[np.ndarray, np.ndarray] | None = None) -> "PerceptronState":
        """The state a training run starts from: zeros over the state and transition attributes of
        ``index`` (a feature index) and ``n_labels`` labels, on the feature set ``kind`` of the
        training data (`structperc.model.state_weights.feature_set`: state attribute ids ``X``, gold
        label ids ``y``, the partial labels ``allowed``, an earlier model's pairs ``extra``); with no
        data (the workers hold it), every pair."""
        A = index.n_state_attributes
        pairs = None if X is None or y is None else feature_set(kind, X, y, A, n_labels, extra=extra, allowed=allowed)
        if pairs is None and kind != "all":
            raise ValueError(f"the {kind!r} feature set is made from the training data: give X and y")
        return cls.zeros(A, index.n_transition_attributes, n_labels, pairs)

    @property
    def pairs(self) -> StateWeights:
        """The current (not averaged) state weights."""
        return StateWeights(self.ptr, self.labels, self.W, self.Wt.shape[1])

    def averaged(self, mask: np.ndarray, end: np.ndarray, in_place: bool = False,
                 rows: np.ndarray | None = None) -> Weights:
        """Collins' average of the weights after every instance so far: W − U / c.

        ``in_place`` writes the state weights' average over ``W`` (no copy: the largest array of
        training); the state cannot continue training after that. ``rows`` (sorted state attribute
        ids) averages only those attributes, renumbered ``0 .. len(rows) - 1``: what scoring a dev
        set needs, a fraction of the memory of the whole average.
        """
        inv = 1.0 / self.c if self.c else 0.0
        L = self.Wt.shape[1]
        if rows is not None:
            state = self._averaged_rows(rows, inv)
        else:
            values = _average(self.W, self.U, inv, out=self.W if in_place else None)
            if in_place:
                self.U = None  # type: ignore[assignment]  # a consumed state fails loudly if reused
            state = StateWeights(self.ptr, self.labels, values, L)
        cond = np.zeros((self.Wc.shape[0] + 1,) + self.Wc.shape[1:], dtype=np.float32)
        cond[:-1] = _average(self.Wc, self.Uc, inv)
        return Weights(state, (self.Wt - self.Ut * inv).astype(np.float32), cond, mask, end)

    def _averaged_rows(self, rows: np.ndarray, inv: float, block: int = 1 << 15) -> StateWeights:
        """`averaged`'s state weights of ``rows`` only, a block of rows at a time (the index
        temporaries of all rows at once would cost more than the result)."""
        counts = np.diff(self.ptr)[rows]
        ptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        labels = np.empty(int(ptr[-1]), dtype=np.int16)
        values = np.empty(int(ptr[-1]), dtype=np.float32)
        for a in range(0, len(rows), block):
            b = min(a + block, len(rows))
            lo, hi = int(ptr[a]), int(ptr[b])
            pos = np.repeat(self.ptr[rows[a:b]] - ptr[a:b], counts[a:b]) + np.arange(lo, hi, dtype=np.int64)
            labels[lo:hi] = self.labels[pos]
            values[lo:hi] = self.W[pos] - self.U[pos] * inv
        return StateWeights(ptr, labels, values, self.Wt.shape[1])

    def remember_best(self, score: float, mask: np.ndarray, end: np.ndarray) -> None:
        """Keep the current average as the best epoch's, its state weights spilled to an anonymous
        temporary file: a second copy of the largest array in memory would nearly double training's
        peak (CoNLL-2000, default template: 561 MiB -> 1.02 GiB with a dev set)."""
        inv = 1.0 / self.c if self.c else 0.0
        small = self.averaged(mask, end, rows=np.zeros(0, dtype=np.int64))
        if self.spill is None:
            self.spill = tempfile.TemporaryFile(prefix="structperc-best-")
        self.spill.seek(0)
        block = 1 << 18
        for a in range(0, len(self.W), block):
            self.spill.write(_average(self.W[a:a + block], self.U[a:a + block], inv).tobytes())
        self.spill.flush()
        self.best, self.spilled = None, (small.trans, small.cond, mask, end)
        self.best_score, self.best_epoch = score, self.epoch

    def best_weights(self, into: np.ndarray | None = None) -> Weights | None:
        """The best epoch's averaged weights (read back from the spill file into ``into``, e.g. the
        consumed ``W``, when there is one)."""
        if self.spill is None or self.spilled is None:
            return self.best
        self.spill.seek(0)
        values = into if into is not None else np.empty(len(self.labels), dtype=np.float32)
        # numpy's stubs declare the buffer protocol (``__buffer__``) for Python >= 3.12 only
        if self.spill.readinto(memoryview(values).cast("B")) != values.nbytes:  # type: ignore[arg-type]
            raise OSError("the spilled best weights could not be read back")
        trans, cond, mask, end = self.spilled
        return Weights(StateWeights(self.ptr, self.labels, values, self.Wt.shape[1]), trans, cond, mask, end)


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
    if ptr[0] != 0 or np.any(np.diff(ptr) < 0) or X.shape[0] != n or XT.shape[0] != n or len(y) != n:
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


#: The step rules of `train_perceptron`'s ``step``.
STEPS = ("perceptron", "pa")
#: The update rule's parameters (`train_perceptron`) and their defaults.
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


def partial_sentences(allowed: np.ndarray, y: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Which sentences have a token whose allowed labels are not exactly its gold label, uint8 per
    sentence: those the latent perceptron fills itself (the others train as fully labelled)."""
    n = len(y)
    one_hot = allowed[np.arange(n), y] & (np.count_nonzero(allowed, axis=1) == 1)
    sent_of = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    flags = np.zeros(len(ptr) - 1, dtype=np.uint8)
    flags[sent_of[~one_hot]] = 1
    return flags


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
    """Train (or continue training) until ``state.epoch == epochs``.

    Parameters
    ----------
    feats, y, state
        Featurized training sentences, their gold label ids (int32, one per token), and the weights
        and sums to start from (`PerceptronState.zeros` for a fresh model).
    mask, end
        Transition and end penalties of the label scheme (see `structperc.labels.transition_mask`).
    epochs, seed, shuffle
        Passes over the data; the seed fixes the order of every epoch, so runs are reproducible.
    dev_score, dev_rows
        Scores averaged weights on held-out data (higher is better); the best epoch is returned.
        With ``dev_rows`` (the sorted state attribute ids the held-out data uses) it receives only
        those attributes' weights, renumbered: far less memory than the whole average.
    callback, on_epoch_end
        Receive an `EpochReport`, and the state (checkpoints), after every epoch.
    consume
        The caller will not continue from ``state``: the final average is computed in place of its
        weights (saves a copy of the largest array at the peak of training's memory).
    progress
        Receives ``(sentences done, sentences)`` a few dozen times per epoch (the epoch then runs
        as consecutive slices of its order: the same updates in the same order, the same result).
    allowed
        Partial labels, bool (n_tokens, L): the labels each token may take (see
        `structperc.features.instances.Instances`). A sentence whose rows are not all one-hot at ``y`` is
        filled by the best path that agrees with them (the latent structured perceptron, see
        `structperc.train.epoch_kernels.train_epoch_partial`); None, or no such sentence, trains
        exactly as fully labelled data.
    values
        Attribute values, float32 (n_tokens, n_state_templates) aligned with ``feats.state``
        (python-crfsuite's ``{"k": 2.5}``; default ``feats.values``): a token's state score is
        Σ_k v_k·W[a_k, y] and an update adds ±v_k (see
        `structperc.train.epoch_kernels.train_epoch_valued`); a value is ignored where its id is
        -1 (but must be finite everywhere). None, or every value 1, runs the all-ones epoch (the
        same weights, bit for bit). Works with ``allowed``.
    margin, step, C
        The structured margin perceptron and passive-aggressive steps (see
        `structperc.train.epoch_kernels.train_epoch_margin`): training decodes the cost-augmented
        best path argmax s(y') + ``margin``·Hamming(y, y') and updates whenever it is not the gold
        path; ``step="perceptron"`` moves by 1, ``step="pa"`` by PA-I's τ = min(``C``, ℓ / ‖Δφ‖²)
        (ℓ = s(ŷ) − s(y) + ``margin``·Hamming, or + √Hamming when ``margin`` is 0: CRFsuite's ``pa``).
        The defaults (0, "perceptron") run the default epoch, unchanged. Works with ``allowed`` and
        ``values``.

    Returns
    -------
    (Weights, int)
        Averaged weights (of the best dev epoch if ``dev_score`` is given, else of the last) and the
        epoch they come from.

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
    inputs = epoch_inputs(feats, y, state, mask, end, allowed, values, margin_hyperparameters(margin, step, C))
    mask, end = inputs.mask, inputs.end
    n_sent = inputs.n_sent
    per_call = max(1, -(-n_sent // PROGRESS_STEPS)) if progress is not None else max(n_sent, 1)
    rng = np.random.default_rng(seed)
    if state.rng_state:
        rng.bit_generator.state = state.rng_state
    while state.epoch < epochs:
        started = time.perf_counter()
        order = rng.permutation(n_sent).astype(np.int64) if shuffle else np.arange(n_sent, dtype=np.int64)
        mistakes, token_errors, skipped = run_epoch(inputs, state, order, per_call, progress)
        state.epoch += 1
        state.rng_state = rng.bit_generator.state
        report = EpochReport(state.epoch, epochs, mistakes, token_errors, n_sent, inputs.n_tok,
                             time.perf_counter() - started, skipped=skipped)
        end_of_epoch(state, report, mask, end, dev_score, dev_rows, on_epoch_end, callback)
    return _result(state, mask, end, consume)


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
    `train_perceptron` for ``allowed`` and ``values``)."""
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


def end_of_epoch(state: PerceptronState, report: EpochReport, mask: np.ndarray, end: np.ndarray,
                 dev_score: Callable[[Weights], float] | None, dev_rows: np.ndarray | None,
                 on_epoch_end: Callable[[PerceptronState], None] | None,
                 callback: Callable[[EpochReport], None] | None) -> None:
    """After an epoch: score the average on dev data (keeping the best), checkpoint, report."""
    if dev_score is not None:
        report.dev_score = float(dev_score(state.averaged(mask, end, rows=dev_rows)))
        if state.best_score is None or report.dev_score > state.best_score:
            state.remember_best(report.dev_score, mask, end)
            report.best = True
    if on_epoch_end is not None:
        on_epoch_end(state)
    if callback is not None:
        callback(report)


def _result(state: PerceptronState, mask: np.ndarray, end: np.ndarray, consume: bool) -> tuple[Weights, int]:
    """The best dev epoch's weights (read back from the spill), else the last epoch's average."""
    best = state.best_weights(into=state.W if consume else None)
    if best is None:
        return state.averaged(mask, end, in_place=consume), state.epoch
    state.spill = state.spilled = None
    if consume:
        state.U = None  # type: ignore[assignment]  # as `averaged(in_place=True)`: saving needs the room
    return best, state.best_epoch
