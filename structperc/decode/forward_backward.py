"""The forward-backward algorithm on padded batches of tagging lattices: token marginals, partition
functions and path probabilities (the numpy twin of the compiled `structperc.decode.fb_kernels`; the
corpus drivers are `structperc.decode.marginals`).

The perceptron's scores define a linear-chain model once exponentiated: a path y_1..y_T of a
sentence has the score

    s(y) = Σ_t state[t, y_t] + Σ_t trans[t, y_{t-1}, y_t] + end[y_T]      (y_0 = ``<bos>``, row L)

(exactly the lattice `structperc.decode.viterbi.viterbi_batch` maximizes) and the probability
p(y) = exp(s(y) / τ) / Z with Z = Σ_y exp(s(y) / τ). The temperature τ rescales the scores: the
perceptron is not trained for likelihood, so τ is the calibration knob (fit it on held-out data). As
τ → 0 the distribution concentrates on the Viterbi path(s).

Everything is computed with the forward-backward algorithm (Rabiner 1989, "A tutorial on hidden
Markov models", section III.A; Lafferty, McCallum & Pereira 2001, "Conditional random fields",
section 3) in log space, vectorized over a batch of sentences padded to one length (one Python step
per position, as the Viterbi decoder). Each step is the log-sum-exp trick split in two: the
previous log α is shifted by its maximum and exponentiated (L exps per sentence), the transition
scores by their column maxima (shared matrix) or their maximum (per-token tables) once per batch,
and the step is one small matrix product of the two (instead of an exp over (B, L, L) per step).
Where that product underflows (< `TINY`), the entries are recomputed by an exact log-sum-exp, so
the result is exact for any score range (terms dropped by underflow are below 1e-308 next to a
sum above 1e-200). Forbidden moves (-inf transitions or end penalties of the label scheme) get probability
exactly 0; a sentence with no allowed path gets log Z = -inf and all-zero marginals (never NaN).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from structperc.errors import InputError

#: Below this, a shifted sum of exponentials is recomputed by an exact log-sum-exp (underflow guard).
TINY = 1e-200

#: m·n·k of a matrix product kept under OpenBLAS's multithreading threshold (see `_rows_times`).
_PRODUCT = 1 << 17


class ForwardBackward(NamedTuple):
    """Result of `forward_backward_batch` (all in units of score / temperature).

    Attributes
    ----------
    marginals : array of float64, shape (B, T, L)
        p(y_t = l); zero past a sentence's length and for sentences without an allowed path.
    log_z : array of float64, shape (B,)
        log Z per sentence (-inf when no path is allowed).
    log_alpha : array of float64, shape (B, T, L)
        Forward table: log Σ of exp(score / τ) over prefixes ending in label l at position t
        (carried unchanged past a sentence's length).
    log_beta : array of float64, shape (B, T, L)
        Backward table: log Σ of exp(score / τ) over suffixes after label l at position t, end
        penalty included (equal to ``end / τ`` from the last position of a sentence on).
    """

    marginals: np.ndarray
    log_z: np.ndarray
    log_alpha: np.ndarray
    log_beta: np.ndarray


class _Lattice:
    """Scores divided by the temperature, in float64, and the shifted transition exponentials.

    Attributes
    ----------
    state : array, shape (B, T, L)
    trans : array, shape (L + 1, L) (shared) or (B, T, L + 1, L)
    end : array, shape (L,)
    shift : array, shape (L,) (shared) or (B, T, 1)
        Shared: max_i trans[i, j] per column over the L real predecessors (not ``<bos>``). Per token:
        the largest real transition score of the token (one exp per entry is the cost that
        matters there, and a column-wise max over small matrices costs as much again). 0 where
        all are -inf.
    colok, rowok : arrays of bool, shape (L,), or None
        Whether label j can be entered from a real label, whether label i can be left (shared
        transitions only: entries the underflow guard need not recompute).
    expt : array, shape (L, L) or (B, T, L, L)
        exp(trans[i, j] - shift) over the real predecessors: every entry in [0, 1].
    """

    colok: np.ndarray | None
    rowok: np.ndarray | None

    def __init__(self, state: np.ndarray, trans: np.ndarray, end: np.ndarray, temperature: float,
                 tables: bool = True):
        t = float(temperature)
        if not (np.isfinite(t) and t > 0):
            raise InputError(f"temperature must be a positive number, not {temperature!r}")
        inv = 1.0 / t
        self.state = _scaled(state, inv)
        self.trans = _scaled(trans, inv)
        self.end = _scaled(end, inv)
        self.shared = self.trans.ndim == 2
        if not tables:  # scores only (the span computation from given forward-backward tables)
            return
        L = self.state.shape[2]
        real = self.trans[..., :L, :]
        if self.shared:
            colmax = real.max(axis=0)
            self.colok = np.isfinite(colmax)
            self.rowok = np.isfinite(real.max(axis=1))
            self.shift = np.where(self.colok, colmax, 0.0)
            self.expt = np.exp(real - self.shift)
        else:
            B, T = real.shape[:2]
            top = real.reshape(B, T, L * L).max(axis=2)
            self.colok = self.rowok = None
            self.shift = np.where(np.isfinite(top), top, 0.0)[:, :, None]
            self.expt = np.exp(real - self.shift[..., None])


def _scaled(x: np.ndarray, inv: float) -> np.ndarray:
    """x / temperature as a new float64 array."""
    if inv == 1.0:
        return np.array(x, dtype=np.float64)
    return np.multiply(x, inv, dtype=np.float64)


def _logsumexp(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log Σ exp(x) along ``axis``; -inf (not NaN) where every entry is -inf."""
    m = x.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(x - m).sum(axis=axis)) + np.squeeze(m, axis=axis)


def _shift(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(x - max) per row of x (B, L) and the max (0 for an all -inf row)."""
    m = x.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.exp(x - m[:, None]), m


def _rows_times(a: np.ndarray, m: np.ndarray) -> np.ndarray:
    """a @ m for a (B, L) and m (L, L), in row blocks of at most `_PRODUCT` / L² rows.

    Each block stays under OpenBLAS's threshold for multithreading a product: threads on these tiny
    products cost more in synchronization than they save, several times over on a busy machine.
    """
    rows = max(16, _PRODUCT // m.size)
    if len(a) <= rows:
        return a @ m
    out = np.empty((len(a), m.shape[1]))
    for i in range(0, len(a), rows):
        np.matmul(a[i:i + rows], m, out=out[i:i + rows])
    return out


def _forward(lat: _Lattice, lengths: np.ndarray | None) -> np.ndarray:
    """log α, shape (B, T, L): α_t(j) = Σ_i α_{t-1}(i) exp(trans[t, i, j]) exp(state[t, j])."""
    S, Tr = lat.state, lat.trans
    B, T, L = S.shape
    A = np.empty((B, T, L))
    first = Tr[L] if lat.shared else Tr[:, 0, L]
    A[:, 0] = S[:, 0] + first
    for t in range(1, T):
        prev = A[:, t - 1]
        a, am = _shift(prev)
        if lat.shared:
            s = _rows_times(a, lat.expt)
            cm = lat.shift
        else:
            s = np.matmul(a[:, None, :], lat.expt[:, t])[:, 0]
            cm = lat.shift[:, t]
        with np.errstate(divide="ignore"):
            new = np.log(s) + am[:, None] + cm + S[:, t]
        active = None if lengths is None else (lengths > t)
        bad = s < TINY
        if lat.colok is not None:
            bad &= lat.colok
        if active is not None:
            bad &= active[:, None]
        if bad.any():
            b, j = np.nonzero(bad)
            step = Tr[:L, j].T if lat.shared else Tr[b, t, :L, j]
            new[b, j] = _logsumexp(prev[b] + step) + S[b, t, j]
        A[:, t] = new if active is None or active.all() else np.where(active[:, None], new, prev)
    return A


def _backward(lat: _Lattice, lengths: np.ndarray | None) -> np.ndarray:
    """log β, shape (B, T, L): β_t(i) = Σ_j exp(trans[t+1, i, j] + state[t+1, j]) β_{t+1}(j), β_last = exp(end)."""
    S, Tr = lat.state, lat.trans
    B, T, L = S.shape
    Bt = np.empty((B, T, L))
    Bt[:, T - 1] = lat.end
    for t in range(T - 2, -1, -1):
        n = t + 1
        nxt = Bt[:, n]
        if lat.colok is not None:           # shared: a forbidden column must not set the shift
            g = np.where(lat.colok, lat.shift + S[:, n] + nxt, -np.inf)
        else:
            g = lat.shift[:, n] + S[:, n] + nxt
        w, gm = _shift(g)
        if lat.shared:
            s = _rows_times(w, lat.expt.T)
        else:
            s = np.matmul(lat.expt[:, n], w[:, :, None])[:, :, 0]
        with np.errstate(divide="ignore"):
            new = np.log(s) + gm[:, None]
        active = None if lengths is None else (lengths > n)
        bad = s < TINY
        if lat.rowok is not None:
            bad &= lat.rowok
        if active is not None:
            bad &= active[:, None]
        if bad.any():
            b, i = np.nonzero(bad)
            step = Tr[i, :L] if lat.shared else Tr[b, n, i, :L]
            new[b, i] = _logsumexp(step + S[b, n] + nxt[b])
        Bt[:, t] = new if active is None or active.all() else np.where(active[:, None], new, nxt)
    return Bt


def _last(lengths: np.ndarray | None, B: int, T: int) -> np.ndarray:
    if lengths is None:
        return np.full(B, T, dtype=np.int64)
    lens = np.asarray(lengths, dtype=np.int64)
    if lens.shape != (B,) or (B and (lens.min() < 1 or lens.max() > T)):
        raise InputError(f"lengths must be {B} integers in [1, {T}]")
    return lens


def forward_backward_batch(state: np.ndarray, trans: np.ndarray, end: np.ndarray,
                           lengths: np.ndarray | None = None, temperature: float = 1.0) -> ForwardBackward:
    """Token marginals and log partition functions of B sentences padded to a common length T.

    Forward-backward in log space (Rabiner 1989; Lafferty et al. 2001) over the lattice of
    `structperc.decode.viterbi.viterbi_batch`, with p(y) ∝ exp(score(y) / temperature).

    Parameters
    ----------
    state : array, shape (B, T, L)
        Label scores per position.
    trans : array, shape (B, T, L + 1, L) or (L + 1, L)
        Transition scores into each position (row L is ``<bos>``); a 2-d array is shared by all
        positions. -inf forbids a move.
    end : array, shape (L,)
        Score of ending in each label (-inf forbids it).
    lengths : array of int, shape (B,), optional
        True lengths, each at least 1 (default: all T); scores past a sentence's length are ignored.
    temperature : float
        τ > 0; scores are divided by it.

    Returns
    -------
    ForwardBackward
        ``marginals`` (B, T, L), ``log_z`` (B,), ``log_alpha`` and ``log_beta`` (B, T, L).

    Examples
    --------
    >>> import numpy as np
    >>> state = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> trans = np.zeros((3, 2))
    >>> fb = forward_backward_batch(state, trans, np.zeros(2))
    >>> np.round(fb.marginals[0, 0], 4).tolist(), round(float(fb.log_z[0]), 4)
    ([0.7311, 0.2689], 2.6265)
    """
    lat = _Lattice(state, trans, end, temperature)
    return _forward_backward(lat, lengths)


def _forward_backward(lat: _Lattice, lengths: np.ndarray | None) -> ForwardBackward:
    B, T, L = lat.state.shape
    lens = _last(lengths, B, T)
    lens_arg = None if lengths is None else lens
    A = _forward(lat, lens_arg)
    Bt = _backward(lat, lens_arg)
    log_z = _logsumexp(A[:, T - 1] + lat.end) if T else np.zeros(B)
    z = np.where(np.isfinite(log_z), log_z, 0.0)
    marg = np.exp(A + Bt - z[:, None, None])
    marg *= (np.arange(T)[None, :] < lens[:, None])[:, :, None]
    return ForwardBackward(marg, log_z, A, Bt)


def log_partition_batch(state: np.ndarray, trans: np.ndarray, end: np.ndarray,
                        lengths: np.ndarray | None = None, temperature: float = 1.0) -> np.ndarray:
    """log Z per sentence, shape (B,), by the forward pass alone (arguments as `forward_backward_batch`)."""
    lat = _Lattice(state, trans, end, temperature)
    B, T, L = lat.state.shape
    lens = _last(lengths, B, T)
    A = _forward(lat, None if lengths is None else lens)
    return _logsumexp(A[:, T - 1] + lat.end) if T else np.zeros(B)


def path_scores(state: np.ndarray, trans: np.ndarray, end: np.ndarray, paths: np.ndarray,
                lengths: np.ndarray | None = None) -> np.ndarray:
    """Lattice score of given label paths (no temperature).

    Parameters
    ----------
    state, trans, end, lengths
        As for `forward_backward_batch`.
    paths : array of int, shape (B, T) or (B, K, T)
        Label ids; entries past a sentence's length are ignored.

    Returns
    -------
    array of float64, shape (B,) or (B, K)
        Σ_t state[t, y_t] + Σ_t trans[t, y_{t-1}, y_t] + end[y_last] in float64 (-inf for a
        forbidden path).
    """
    paths = np.asarray(paths)
    single = paths.ndim == 2
    P = paths[:, None, :] if single else paths
    B, K, T = P.shape
    L = state.shape[2]
    lens = _last(lengths, B, T)
    real = np.arange(T)[None, :] < lens[:, None]                       # (B, T)
    y = np.where(real[:, None, :], P, 0).astype(np.int64)               # (B, K, T)
    prev = np.concatenate([np.full((B, K, 1), L, dtype=np.int64), y[:, :, :-1]], axis=2)
    bi = np.arange(B)[:, None, None]
    ti = np.arange(T)[None, None, :]
    S = np.asarray(state, dtype=np.float64)
    Tr = np.asarray(trans, dtype=np.float64)
    step = S[bi, ti, y] + (Tr[prev, y] if Tr.ndim == 2 else Tr[bi, ti, prev, y])
    step = np.where(real[:, None, :], step, 0.0)
    last = y[np.arange(B), :, lens - 1] if B else np.zeros((0, K), dtype=np.int64)
    out = step.sum(axis=2) + np.asarray(end, dtype=np.float64)[last]
    return out[:, 0] if single else out


def path_log_prob(state: np.ndarray, trans: np.ndarray, end: np.ndarray, paths: np.ndarray,
                  lengths: np.ndarray | None = None, temperature: float = 1.0,
                  log_z: np.ndarray | None = None) -> np.ndarray:
    """log p(y) of given label paths: score(y) / τ - log Z.

    Parameters
    ----------
    state, trans, end, lengths, temperature
        As for `forward_backward_batch`.
    paths : array of int, shape (B, T) or (B, K, T)
        E.g. the Viterbi paths, or the rows of `structperc.decode.nbest.nbest_batch`.
    log_z : array, shape (B,), optional
        log Z at this temperature if already known (from `forward_backward_batch`).

    Returns
    -------
    array of float64, shape (B,) or (B, K)
        -inf for a forbidden path (and for every path of a sentence without an allowed path).
    """
    if log_z is None:
        log_z = log_partition_batch(state, trans, end, lengths, temperature)
    scores = path_scores(state, trans, end, paths, lengths) / float(temperature)
    z = np.asarray(log_z, dtype=np.float64)
    if scores.ndim == 2:
        z = z[:, None]
    with np.errstate(invalid="ignore"):
        out = scores - z
    return np.where(np.isfinite(scores), out, -np.inf)


def mask_state(state: np.ndarray, allowed: np.ndarray | None, tok: np.ndarray, real: np.ndarray) -> np.ndarray:
    """State scores with -inf where ``allowed`` forbids a label (padding left alone)."""
    if allowed is None:
        return state
    state = np.array(state)
    state[~allowed[tok] & real[:, :, None]] = -np.inf
    return state
