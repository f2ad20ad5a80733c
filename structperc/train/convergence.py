"""Why the structured perceptron converges, made checkable: R, δ and D of small data sets by
enumeration, and the mistakes the package's own trainer makes.

The feature map
---------------
A first-order model scores a label path z = (z_1 .. z_T) of sentence x by w·φ(x, z), where φ counts,
in the engine's coordinates (`Layout`; the ``"all"`` feature set, whose state pair (a, y) is the
weight ``W[a·L + y]``):

* every state pair (a, z_t) for each state attribute a of token t (``Features.state``; weighted by
  its value when ``Features.values`` is given, -1 skipped);
* every transition (z_{t-1}, z_t), with z_0 = ``<bos>`` (row L of ``Wt``);
* every conditioned transition (c, z_{t-1}, z_t) for each transition attribute c of token t
  (``Features.trans``; ``Wc[c]``).

The scheme's ``mask`` and ``end`` are not features: they remove paths (score -inf) from the set
GEN(x) of candidate paths, and `paths` leaves those out.

The theorems
------------
The perceptron starts at w = 0 and, for each sentence in turn, decodes ẑ = argmax_z w·φ(x, z); on a
*mistake* (ẑ ≠ y, the whole path) it sets w ← w + φ(x, y) − φ(x, ẑ) (Collins 2002; the update of
`structperc.train.epoch_kernels.train_epoch`).

*Theorem 1* (Novikoff 1962 for two labels; Collins 2002, Thm 1). Let ‖u‖ = 1 separate the data with
margin δ > 0: u·(φ(x_i, y_i) − φ(x_i, z)) ≥ δ for every i and every z ≠ y_i in GEN(x_i), and let R
bound every ‖φ(x_i, y_i) − φ(x_i, z)‖. Then the perceptron makes at most R²/δ² mistakes, however
many epochs it runs and in whatever order it visits the sentences. Proof: write Δ = φ(x, y) −
φ(x, ẑ) for the k-th mistake and w_k for the weights after it. Then u·w_k = u·w_{k-1} + u·Δ ≥
u·w_{k-1} + δ, so u·w_k ≥ kδ; and ‖w_k‖² = ‖w_{k-1}‖² + 2 w_{k-1}·Δ + ‖Δ‖² ≤ ‖w_{k-1}‖² + R²,
because ẑ was the best path under w_{k-1} (w_{k-1}·Δ ≤ 0: a tie counts too), so ‖w_k‖² ≤ kR².
Cauchy-Schwarz: kδ ≤ u·w_k ≤ ‖w_k‖ ≤ √k R, hence k ≤ R²/δ².

*Theorem 2* (Freund & Schapire 1999, Thm 2, for two labels; Collins 2002, Thm 2). For any unit u and
any δ > 0, let the margin deficits be ε_i = max(0, δ − m_i) with m_i = min_{z ≠ y_i} u·(φ(x_i, y_i)
− φ(x_i, z)), and D = √(Σ_i ε_i²). Then the mistakes of the *first pass* over the data are at most
(R + D)²/δ². Proof: give every φ n extra coordinates, Δ' on coordinate i for the gold path of x_i
only, 0 elsewhere. During the first pass each sentence is seen once, so the weight on its extra
coordinate is still 0 when it is decoded: the run on the extended data makes the same decisions
and mistakes. There the vector (u, ε_1/Δ', .., ε_n/Δ') / √(1 + D²/Δ'²) separates with margin
δ / √(1 + D²/Δ'²), and R'² = R² + Δ'², so Theorem 1 gives (R² + Δ'²)(1 + D²/Δ'²)/δ², which is
(R + D)²/δ² at Δ'² = RD. Later passes see a sentence again with its extra weight no longer 0: the
bound is for the first pass only.

Two labels and one token (the degenerate case): with φ(x, ±) the state pairs (j, ±) valued x_j plus
the ``<bos>`` transition into ±, φ(x, y) − φ(x, −y) puts x̃ = (x, 1) on the y side and −x̃ on the
other: an update adds y·x̃ to the weights of label + and subtracts it from those of label −, so
w_+ − w_− = 2·v for Rosenblatt's v of the homogeneous points x̃ (`one_token_corpus`,
`binary_weights`). Ties differ: the structured decoder gives a tie to the lower label id, Rosenblatt
counts a score of 0 as a mistake whatever the label.

What runs through the engine
----------------------------
`count_mistakes` trains with `structperc.train.perceptron.train_perceptron` (the first-order
trainer's face: its seeded order, the compiled epoch, its `EpochReport`), stopping after the first
error-free epoch. `trace` runs the same compiled epochs (`structperc.train.perceptron.run_epoch`)
one sentence per slice, in the order `structperc.train.perceptron.Perceptron` draws (the e-th
``permutation`` of ``np.random.default_rng(seed)``), so that the sentence behind each update is
known. Only R, δ and D (enumeration of every path) are computed here.

References
----------
A. B. J. Novikoff. On convergence proofs on perceptrons. Symposium on the Mathematical Theory of
Automata 12:615-622, 1962.
Y. Freund and R. E. Schapire. Large margin classification using the perceptron algorithm. Machine
Learning 37(3):277-296, 1999.
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments with
perceptron algorithms. EMNLP 2002.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from structperc.features.index import Features
from structperc.train.perceptron import epoch_inputs, run_epoch, train_perceptron
from structperc.train.reports import EpochReport
from structperc.train.state import PerceptronState
from structperc.train.trainer import margin_hyperparameters

#: Paths per sentence `paths` agrees to enumerate (L^T grows fast).
MAX_PATHS = 1 << 16


@dataclass(frozen=True)
class Layout:
    """The coordinates of φ, in the engine's order: A·L state pairs (attribute a, label y at
    ``a·L + y``), then (L + 1)·L transitions (row L: ``<bos>``), then AT·(L + 1)·L conditioned
    transitions: the concatenation of a `PerceptronState`'s ``W`` (``"all"`` feature set), ``Wt`` and
    ``Wc``, raveled (`weights_of`)."""

    n_attributes: int
    n_transition_attributes: int
    n_labels: int

    @classmethod
    def of(cls, feats: Features, n_labels: int) -> "Layout":
        """The smallest layout that holds the attribute ids of ``feats``."""
        A = int(feats.state.max()) + 1 if feats.state.size else 0
        AT = int(feats.trans.max()) + 1 if feats.trans.size else 0
        return cls(max(A, 0), max(AT, 0), n_labels)

    @property
    def dim(self) -> int:
        L = self.n_labels
        return self.n_attributes * L + (L + 1) * L + self.n_transition_attributes * (L + 1) * L

    def state(self, a: int, y: int) -> int:
        """Coordinate of the state pair (attribute ``a``, label ``y``)."""
        return a * self.n_labels + y

    def trans(self, p: int, y: int) -> int:
        """Coordinate of the transition ``p`` → ``y`` (``p`` = L: ``<bos>``)."""
        L = self.n_labels
        return self.n_attributes * L + p * L + y

    def cond(self, c: int, p: int, y: int) -> int:
        """Coordinate of the transition ``p`` → ``y`` conditioned on transition attribute ``c``."""
        L = self.n_labels
        return self.n_attributes * L + (L + 1) * L + (c * (L + 1) + p) * L + y

    def zeros(self) -> PerceptronState:
        """A fresh training state of this layout (the ``"all"`` feature set)."""
        return PerceptronState.zeros(self.n_attributes, self.n_transition_attributes, self.n_labels)


def weights_of(state: PerceptronState) -> np.ndarray:
    """The current (not averaged) weights of ``state`` as one float64 vector in `Layout` order.

    Raises `ValueError` for a state whose feature set is not ``"all"`` (its pairs would not sit at
    ``a·L + y``)."""
    L = state.Wt.shape[1]
    A = len(state.ptr) - 1
    if len(state.W) != A * L or not np.array_equal(state.labels, np.tile(np.arange(L), A)):
        raise ValueError("weights_of needs the 'all' feature set (every (attribute, label) pair)")
    return np.concatenate([state.W, state.Wt.ravel(), state.Wc.ravel()]).astype(np.float64)


def sentence_rows(feats: Features, s: int) -> slice:
    """Token rows of sentence ``s``."""
    return slice(int(feats.sent_ptr[s]), int(feats.sent_ptr[s + 1]))


def phi(layout: Layout, feats: Features, s: int, path: np.ndarray) -> np.ndarray:
    """φ(x_s, ``path``): the feature vector of sentence ``s`` labelled ``path`` (float64, `Layout`
    order; see the module's docstring for what it counts)."""
    rows = sentence_rows(feats, s)
    X, XT = feats.state[rows], feats.trans[rows]
    V = None if feats.values is None else np.asarray(feats.values[rows], dtype=np.float64)
    L = layout.n_labels
    out = np.zeros(layout.dim)
    for t in range(X.shape[0]):
        y, p = int(path[t]), L if t == 0 else int(path[t - 1])
        for k in range(X.shape[1]):
            if X[t, k] >= 0:
                out[layout.state(int(X[t, k]), y)] += 1.0 if V is None else V[t, k]
        out[layout.trans(p, y)] += 1.0
        for k in range(XT.shape[1]):
            if XT[t, k] >= 0:
                out[layout.cond(int(XT[t, k]), p, y)] += 1.0
    return out


def paths(T: int, L: int, mask: np.ndarray | None = None, end: np.ndarray | None = None) -> np.ndarray:
    """Every label path of length ``T`` over ``L`` labels (int32 (n, T), in lexicographic order),
    without those ``mask`` ((L + 1, L), row L ``<bos>``) or ``end`` ((L,)) score -inf: GEN(x).

    Raises `ValueError` beyond `MAX_PATHS` paths."""
    if L ** T > MAX_PATHS:
        raise ValueError(f"{L}^{T} paths: too many to enumerate (at most {MAX_PATHS})")
    out = np.array(list(itertools.product(range(L), repeat=T)), dtype=np.int32).reshape(-1, T)
    if mask is None and end is None:
        return out
    ok = np.ones(len(out), dtype=bool)
    for i, z in enumerate(out):
        score = 0.0 if end is None else float(end[z[-1]])
        if mask is not None:
            score += sum(float(mask[L if t == 0 else z[t - 1], z[t]]) for t in range(T))
        ok[i] = np.isfinite(score)
    return out[ok]


def lattice(layout: Layout, feats: Features, s: int, mask: np.ndarray | None = None,
            end: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Every candidate path of sentence ``s`` and its φ: ``(paths (n, T), Φ (n, dim))``."""
    rows = sentence_rows(feats, s)
    zs = paths(rows.stop - rows.start, layout.n_labels, mask, end)
    return zs, np.array([phi(layout, feats, s, z) for z in zs]).reshape(len(zs), layout.dim)


def best_paths(layout: Layout, feats: Features, u: np.ndarray, mask: np.ndarray | None = None,
               end: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """argmax_z u·φ(x_s, z) of every sentence by enumeration (ties: the first in lexicographic
    order), as label ids per token (int32), and each sentence's gap to its runner-up (0: a tie;
    +inf: a single candidate)."""
    y = np.zeros(int(feats.sent_ptr[-1]), dtype=np.int32)
    gaps = np.zeros(len(feats.sent_ptr) - 1)
    for s in range(len(gaps)):
        zs, Phi = lattice(layout, feats, s, mask, end)
        scores = Phi @ u
        order = np.argsort(-scores, kind="stable")
        y[sentence_rows(feats, s)] = zs[order[0]]
        gaps[s] = scores[order[0]] - scores[order[1]] if len(zs) > 1 else math.inf
    return y, gaps


@dataclass(frozen=True)
class Geometry:
    """The quantities of Collins' theorems for a data set and a unit vector u.

    Attributes
    ----------
    R : float
        max over sentences i and candidate paths z of ‖φ(x_i, y_i) − φ(x_i, z)‖.
    margins : array of float64, one per sentence
        m_i = min over z ≠ y_i of u·(φ(x_i, y_i) − φ(x_i, z)) (+inf with no other candidate);
        negative where the gold path is not u's best.
    """

    R: float
    margins: np.ndarray

    @property
    def delta(self) -> float:
        """The margin of u on the whole data set: min_i m_i (> 0 iff u separates it)."""
        return float(self.margins.min()) if len(self.margins) else math.inf

    def deficits(self, delta: float) -> np.ndarray:
        """ε_i = max(0, δ − m_i): how far each sentence falls short of margin ``delta``."""
        return np.maximum(0.0, delta - self.margins)

    def D(self, delta: float) -> float:
        """D_{u,δ} = √(Σ ε_i²)."""
        return float(np.sqrt(np.sum(self.deficits(delta) ** 2)))

    def separable_bound(self) -> float:
        """Theorem 1's R²/δ² at δ = `delta` (+inf when u does not separate the data)."""
        d = self.delta
        return self.R ** 2 / d ** 2 if d > 0 else math.inf

    def best_delta(self, grid: int = 400) -> float:
        """The δ of the lowest `bound` among the positive finite margins m_i and ``grid`` points
        spaced geometrically from a quarter of the smallest to twice the largest of them (1.0 when
        no margin is positive and finite: every bound is then at least as loose)."""
        m = self.margins[np.isfinite(self.margins) & (self.margins > 0)]
        if not len(m):
            return 1.0
        candidates = np.concatenate([m, np.geomspace(m.min() / 4, 2 * m.max(), grid)])
        return float(min(candidates, key=self.bound))

    def bound(self, delta: float) -> float:
        """Theorem 2's (R + D_{u,δ})²/δ² (first-pass mistakes), for a finite ``delta`` > 0."""
        if not (delta > 0 and math.isfinite(delta)):
            raise ValueError(f"δ must be finite and > 0, not {delta}")
        return (self.R + self.D(delta)) ** 2 / delta ** 2


def geometry(layout: Layout, feats: Features, y: np.ndarray, u: np.ndarray, mask: np.ndarray | None = None,
             end: np.ndarray | None = None) -> Geometry:
    """R and the margins of ``u`` (normalized here to ‖u‖ = 1) on sentences ``feats`` with gold label
    ids ``y``, by enumerating every candidate path of every sentence.

    Raises `ValueError` for u = 0, a u of the wrong length, or a gold path outside GEN(x)."""
    u = np.asarray(u, dtype=np.float64)
    norm = float(np.linalg.norm(u))
    if u.shape != (layout.dim,) or norm == 0:
        raise ValueError(f"u must be a nonzero vector of length {layout.dim}")
    u = u / norm
    R = 0.0
    margins = np.empty(len(feats.sent_ptr) - 1)
    for s in range(len(margins)):
        zs, Phi = lattice(layout, feats, s, mask, end)
        gold = np.asarray(y[sentence_rows(feats, s)])
        is_gold = (zs == gold).all(axis=1)
        if not is_gold.any():
            raise ValueError(f"the gold path of sentence {s} is not a candidate (forbidden by the mask?)")
        diff = Phi[is_gold][0] - Phi
        R = max(R, float(np.sqrt((diff ** 2).sum(axis=1)).max()))
        others = diff[~is_gold] @ u
        margins[s] = float(others.min()) if len(others) else math.inf
    return Geometry(R, margins)


def differences(layout: Layout, feats: Features, y: np.ndarray, mask: np.ndarray | None = None,
                end: np.ndarray | None = None) -> np.ndarray:
    """Every φ(x_i, y_i) − φ(x_i, z) for z ≠ y_i in GEN(x_i), one row each (all sentences): the
    points a u must put on its positive side by δ. A maximum-margin u of the structured problem is
    the hard-margin homogeneous separator of these points, all of class +1."""
    rows = []
    for s in range(len(feats.sent_ptr) - 1):
        zs, Phi = lattice(layout, feats, s, mask, end)
        is_gold = (zs == np.asarray(y[sentence_rows(feats, s)])).all(axis=1)
        if not is_gold.any():
            raise ValueError(f"the gold path of sentence {s} is not a candidate (forbidden by the mask?)")
        rows.append(Phi[is_gold][0] - Phi[~is_gold])
    return np.concatenate(rows) if rows else np.zeros((0, layout.dim))


@dataclass
class MistakeLog:
    """Mistakes (sentences whose decoded path is not the gold one, each one update) per epoch and,
    from `trace`, the sentence behind each update in order."""

    per_epoch: list[int] = field(default_factory=list)
    updates: list[int] = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.per_epoch)

    @property
    def converged(self) -> bool:
        """Whether the last epoch made no mistake (the weights then separate the training data)."""
        return bool(self.per_epoch) and self.per_epoch[-1] == 0


class _Clean(Exception):
    """Raised from the trainer's callback to stop after the first error-free epoch."""


def _masks(layout: Layout, mask: np.ndarray | None, end: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    L = layout.n_labels
    return (np.zeros((L + 1, L)) if mask is None else np.asarray(mask, dtype=np.float64),
            np.zeros(L) if end is None else np.asarray(end, dtype=np.float64))


def count_mistakes(layout: Layout, feats: Features, y: np.ndarray, *, epochs: int, seed: int = 0,
                   shuffle: bool = True, margin: float = 0.0, mask: np.ndarray | None = None,
                   end: np.ndarray | None = None, until_clean: bool = True) -> tuple[MistakeLog, PerceptronState]:
    """Train from w = 0 with the package's trainer (`train_perceptron`: Collins' step, the seed's
    order, the compiled epoch) for at most ``epochs`` epochs, stopping after the first error-free
    one when ``until_clean``; the mistakes come from its `EpochReport`\\ s. Returns them and the state
    (its current weights are the un-averaged w the theorems speak of)."""
    state = layout.zeros()
    log = MistakeLog()
    mask, end = _masks(layout, mask, end)

    def report(r: EpochReport) -> None:
        log.per_epoch.append(int(r.mistakes))
        if until_clean and r.mistakes == 0:
            raise _Clean

    try:
        train_perceptron(feats, np.asarray(y, dtype=np.int32), state, mask=mask, end=end, epochs=epochs,
                         seed=seed, shuffle=shuffle, callback=report, margin=margin)
    except _Clean:
        pass
    return log, state


def trace(layout: Layout, feats: Features, y: np.ndarray, *, epochs: int, seed: int = 0, shuffle: bool = True,
          margin: float = 0.0, mask: np.ndarray | None = None, end: np.ndarray | None = None,
          until_clean: bool = True) -> tuple[MistakeLog, PerceptronState]:
    """`count_mistakes` visit by visit: the compiled epochs of `run_epoch` over the orders
    `structperc.train.perceptron.Perceptron` draws (the e-th ``permutation`` of
    ``np.random.default_rng(seed)``, or 0 .. n − 1 without ``shuffle``), one sentence per slice, so
    that its ``updated`` flags name the sentence behind each update (`MistakeLog.updates`)."""
    state = layout.zeros()
    mask, end = _masks(layout, mask, end)
    inputs = epoch_inputs(feats, np.asarray(y, dtype=np.int32), state, mask, end, None, None,
                          margin_hyperparameters(margin, "perceptron", 1.0))
    n = inputs.n_sent
    rng = np.random.default_rng(seed)
    log = MistakeLog()
    for _ in range(epochs):
        order = rng.permutation(n).astype(np.int64) if shuffle else np.arange(n, dtype=np.int64)
        updated = np.zeros(n, dtype=bool)
        mistakes, _, _ = run_epoch(inputs, state, order, 1, None, updated)
        state.epoch += 1
        log.per_epoch.append(mistakes)
        log.updates += order[updated].tolist()
        if until_clean and mistakes == 0:
            break
    return log, state


def one_token_corpus(X: np.ndarray) -> tuple[Features, Layout]:
    """A binary data set as sequence data: row i of ``X`` (n, d) is a sentence of one token whose
    state attributes are 0 .. d − 1 with values ``X[i]``, for two labels (label 1 for the class +1,
    label 0 for −1). The ``<bos>`` transition into a label is then the constant coordinate of the
    homogeneous point (x, 1); no other transition is ever used."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    state = np.tile(np.arange(d, dtype=np.int32), (n, 1))
    feats = Features(state, np.zeros((n, 0), dtype=np.int32), np.arange(n + 1, dtype=np.int64),
                     X.astype(np.float32))
    return feats, Layout(d, 0, 2)


def binary_weights(state: PerceptronState) -> tuple[np.ndarray, float]:
    """(w_+ − w_−)/2 of a two-label state trained on a `one_token_corpus`: the binary weight vector
    and bias (the ``<bos>`` transitions' difference, halved) that the same updates give a binary
    perceptron with step 1 on the homogeneous points (x, 1)."""
    L = state.Wt.shape[1]
    if L != 2:
        raise ValueError(f"two labels expected, not {L}")
    W = np.asarray(state.W, dtype=np.float64).reshape(-1, 2)
    return (W[:, 1] - W[:, 0]) / 2, (float(state.Wt[2, 1]) - float(state.Wt[2, 0])) / 2


__all__ = ["MAX_PATHS", "Geometry", "Layout", "MistakeLog", "best_paths", "binary_weights", "count_mistakes",
           "differences", "geometry", "lattice", "one_token_corpus", "paths", "phi", "sentence_rows", "trace",
           "weights_of"]
