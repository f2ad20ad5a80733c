"""Probabilities on the tagging lattice: token marginals, partition functions, path and span probabilities.

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

The corpus drivers (`marginals`, `path_log_probs`) run the ahead-of-time compiled twin of this
forward-backward when it is built (`structperc.decode.fb_kernels`: scaled probability-space passes,
one sentence at a time, with an exact log-space fallback; ~2-2.5x the compiled Viterbi decode on
CoNLL-2000 against ~4.5x for the numpy path, ~1.7x against ~12x with the default chunk template's
two conditioned transition templates) and the numpy code here otherwise. All drivers take an
optional per-token ``allowed`` mask (bool, (n_tokens, L)): False sets a label's state score to -inf,
on top of the scheme's transition mask (forced tags, allowed-tag sets, a tag dictionary). Features
with attribute values (``feats.values``) are folded into the equivalent problem of one attribute per
token first (`structperc.decode.values`), a run of sentences at a time.

Span probabilities (the probability that a labelled span appears in the output) are exact sums over
paths, computed from the forward and backward tables, not products of token marginals (see
`span_log_probs` for what "appears" means under each scheme).
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from structperc.decode.decoder import batch_budget, batch_scores, check_allowed, check_features, length_batches
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights

#: Below this, a shifted sum of exponentials is recomputed by an exact log-sum-exp (underflow guard).
TINY = 1e-200


SPAN_SCHEMES = ("iob2", "iobes", "bmes")

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


# ---------------------------------------------------------------------------------------- spans
def _split(label: str) -> tuple[str, str]:
    """('B', 'NP') for 'B-NP' or 'B_NP'; a bare 'B' or 'O' gives ('B', '') or ('O', '')."""
    if len(label) >= 2 and label[1] in "-_":
        return label[0], label[2:]
    return label, ""


def span_label_ids(types: Sequence[str], labels: Sequence[str], scheme: str) -> np.ndarray:
    """The label ids a span of each type is made of under ``scheme``.

    Returns
    -------
    array of int64, shape (n, 4)
        Per type: (begin, inside, end, single) label ids; -1 where the label set lacks one. IOB2:
        (B-X, I-X, I-X, B-X); IOBES: (B-X, I-X, E-X, S-X); BMES (untyped, type ""): (B, M, E, S),
        M falling back to I.
    """
    if scheme not in SPAN_SCHEMES:
        raise InputError(f"span probabilities need one of the schemes {', '.join(SPAN_SCHEMES)}, "
                         f"not {scheme!r}")
    index = {_split(lab): i for i, lab in enumerate(labels)}
    letters = {"iob2": ("B", "I", "I", "B"), "iobes": ("B", "I", "E", "S"), "bmes": ("B", "M", "E", "S")}[scheme]
    table = {}
    for typ in set(types):
        ids = [index.get((p, typ), -1) for p in letters]
        if scheme == "bmes" and ids[1] < 0:
            ids[1] = index.get(("I", typ), -1)
        table[typ] = ids
    return np.array([table[t] for t in types], dtype=np.int64).reshape(len(types), 4)


def span_log_probs(state: np.ndarray, trans: np.ndarray, end: np.ndarray, lengths: np.ndarray | None,
                   spans: Sequence[tuple[int, str, int, int]], labels: Sequence[str], scheme: str,
                   temperature: float = 1.0, fb: ForwardBackward | None = None) -> np.ndarray:
    """log p(the span appears) of each span, summed exactly over paths.

    A span is ``(b, type, start, end)``: sentence ``b`` of the batch, tokens ``start..end``
    (inclusive). It *appears* in a path when the path's labels spell it:

    - IOB2: ``B-type`` at ``start``, ``I-type`` at ``start+1..end``, and the label after ``end``
      (if any) is not ``I-type`` (otherwise the span would be longer);
    - IOBES: ``S-type`` at ``start`` if ``start == end``, else ``B-type``, ``I-type``…, ``E-type``;
    - BMES (word segmentation, type ``""``): ``S``, or ``B`` ``M``… ``E``.

    These are the well-formed spellings: under the scheme's transition mask (a constrained model)
    every path of nonzero probability is well-formed, so this is the probability that the span is in
    the decoded output. The labels on ``start..end`` are fixed, so the sum over paths factorizes
    through the forward-backward tables (Lafferty et al. 2001, section 3):

        p = α_start(l_start) · Π_{t=start+1..end} exp(trans[t, l_{t-1}, l_t] + state[t, l_t]) · β'_end / Z

    where β'_end is β_end(l_end), except for IOB2 with a following token, where the sum over the next
    label leaves out ``I-type``.

    Parameters
    ----------
    state, trans, end, lengths, temperature
        As for `forward_backward_batch`.
    spans : sequence of (int, str, int, int)
    labels : sequence of str
        The label strings of the ids (the model's labels, in its encoding).
    scheme : str
        ``"iob2"``, ``"iobes"`` or ``"bmes"``: how ``labels`` spell spans.
    fb : ForwardBackward, optional
        `forward_backward_batch` of the same arguments, if already computed.

    Returns
    -------
    array of float64, shape (n_spans,)
        -inf for a span the labels cannot spell or the model forbids.
    """
    lat = _Lattice(state, trans, end, temperature, tables=fb is None)
    B, T, L = lat.state.shape
    lens = _last(lengths, B, T)
    if fb is None:
        fb = _forward_backward(lat, lengths)
    n = len(spans)
    if n == 0:
        return np.zeros(0)
    sent = np.fromiter((s[0] for s in spans), dtype=np.int64, count=n)
    first = np.fromiter((s[2] for s in spans), dtype=np.int64, count=n)
    last = np.fromiter((s[3] for s in spans), dtype=np.int64, count=n)
    bad = (sent < 0) | (sent >= B)
    if bad.any() or (first < 0).any() or (last < first).any() or (last >= lens[sent]).any():
        raise InputError("a span must be (sentence, type, start, end) with 0 <= start <= end < length")
    ids = span_label_ids([s[1] for s in spans], labels, scheme)       # (n, 4)
    single = first == last
    l_first = np.where(single, ids[:, 3], ids[:, 0])
    missing = (l_first < 0) | (~single & (((ids[:, 1] < 0) & (last - first > 1)) | (ids[:, 2] < 0)))
    exclude = ids[:, 1].copy()                       # IOB2: the label that would extend the span
    ids = np.where(ids < 0, 0, ids)
    l_first = np.where(l_first < 0, 0, l_first)
    head = fb.log_alpha[sent, first, l_first]
    # inside the span: positions start+1..end with fixed labels (inside ..., end label at `end`)
    width = last - first
    rep = np.repeat(np.arange(n), width)
    offset = np.arange(len(rep)) - np.repeat(np.cumsum(width) - width, width)
    t = first[rep] + offset + 1
    cur = np.where(t == last[rep], ids[rep, 2], ids[rep, 1])
    prev = np.where(t == first[rep] + 1, ids[rep, 0], ids[rep, 1])
    b = sent[rep]
    step = lat.trans[prev, cur] if lat.shared else lat.trans[b, t, prev, cur]
    inner = np.bincount(rep, weights=step + lat.state[b, t, cur], minlength=n)
    l_last = np.where(single, l_first, ids[:, 2])
    tail = fb.log_beta[sent, last, l_last]
    if scheme == "iob2":
        cut = last + 1 < lens[sent]
        if cut.any():
            c = np.nonzero(cut)[0]
            bc, tc = sent[c], last[c] + 1
            rows = lat.trans[l_last[c], :L] if lat.shared else lat.trans[bc, tc, l_last[c], :L]
            rows = rows + lat.state[bc, tc] + fb.log_beta[bc, tc]
            ex = exclude[c]
            rows[np.nonzero(ex >= 0)[0], ex[ex >= 0]] = -np.inf                 # the next label is not I-type
            tail[c] = _logsumexp(rows)
    z = fb.log_z[sent]
    with np.errstate(invalid="ignore"):
        out = head + inner + tail - z
    return np.where(missing | ~np.isfinite(z) | ~np.isfinite(head + inner + tail), -np.inf, out)


# --------------------------------------------------------------------------------------- drivers
def _check_temperature(temperature: float) -> float:
    t = float(temperature)
    if not (np.isfinite(t) and t > 0):
        raise InputError(f"temperature must be a positive number, not {temperature!r}")
    return t


def _check_ids(ids: np.ndarray, n_tokens: int, L: int) -> np.ndarray:
    a = np.asarray(ids)
    if a.shape != (n_tokens,) or (n_tokens and a.dtype.kind not in "iu"):
        raise InputError(f"ids must be {n_tokens} integer label ids, not {a.dtype} {a.shape}")
    if n_tokens and (int(a.min()) < 0 or int(a.max()) >= L):
        raise InputError(f"label ids must lie in [0, {L})")
    return a


def _mask_state(state: np.ndarray, allowed: np.ndarray | None, tok: np.ndarray, real: np.ndarray) -> np.ndarray:
    """State scores with -inf where ``allowed`` forbids a label (padding left alone)."""
    if allowed is None:
        return state
    state = np.array(state)
    state[~allowed[tok] & real[:, :, None]] = -np.inf
    return state


def _kernel_args(weights: Weights, feats: Features) -> tuple[np.ndarray, ...]:
    """The arrays `structperc.decode.fb_kernels.fb_corpus` reads, checked so that it cannot read
    out of bounds (InputError otherwise: what the numpy path would trip over too).

    Dense state weights (every attribute with every label) are read by offset ``a · L`` and need no
    check of their row offsets and label ids: that O(model) scan would cost ~4 ms per call on a
    CoNLL-2000 model.
    """
    c = np.ascontiguousarray
    L = weights.n_labels
    X, XT, ptr = check_features(weights, feats)
    sw = weights.sparse
    A = len(sw.ptr) - 1
    cond = c(weights.cond, dtype=np.float32)
    base = weights.base_transitions()
    end = c(weights.end, dtype=np.float64)
    if base.shape != (L + 1, L) or end.shape != (L,) or cond.ndim != 3 or cond.shape[1:] != (L + 1, L) \
            or sw.n_labels != L or len(sw.labels) != len(sw.values):
        raise InputError("weights of inconsistent shapes")
    if len(sw.labels) != A * L:  # sparse rows: the kernel follows ptr and the label ids
        if A < 0 or sw.ptr[0] != 0 or sw.ptr[-1] != len(sw.values) or (np.diff(sw.ptr) < 0).any() \
                or (len(sw.labels) and (int(sw.labels.min()) < 0 or int(sw.labels.max()) >= L)):
            raise InputError("state weights with malformed row offsets or label ids")
    return X, XT, ptr, sw.ptr, sw.labels, sw.values, base, cond, end


def _run_compiled(weights: Weights, feats: Features, temperature: float, allowed: np.ndarray | None,
                  ids: np.ndarray | None, want_marginals: bool) \
        -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(marginals or None, log Z, path log-probabilities or None) by the compiled kernel; None without it."""
    from structperc.compiled import loader

    kernel = loader.aot("fb_corpus")
    if kernel is None:
        return None
    args = _kernel_args(weights, feats)
    L = weights.n_labels
    n_tok, n_sent = args[0].shape[0], len(args[2]) - 1
    out = np.empty((n_tok if want_marginals else 0, L))
    log_z = np.empty(n_sent)
    path_lp = np.zeros(n_sent if ids is not None else 0)  # an empty sentence: log 1 (the kernel skips it)
    mask = np.zeros((0, L), dtype=np.bool_) if allowed is None else allowed
    path = np.zeros(0, dtype=np.int32) if ids is None else np.ascontiguousarray(ids, dtype=np.int32)
    kernel(*args, 1.0 / temperature, mask, path, out, log_z, path_lp)
    return out, log_z, path_lp


def marginals(weights: Weights, feats: Features, temperature: float = 1.0,
              allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Token marginals and log partition function of every sentence of a featurized corpus.

    Parameters
    ----------
    weights : Weights
    feats : Features
        ``n_tokens`` tokens in ``n_sentences = len(feats.sent_ptr) - 1`` sentences.
    temperature : float
        p(y) ∝ exp(score(y) / temperature).
    allowed : array of bool, shape (n_tokens, L), optional
        False forbids a label at a token (its state score becomes -inf), on top of the scheme's
        mask: forced tags, allowed-tag sets, a tag dictionary.

    Returns
    -------
    marginals : array of float64, shape (n_tokens, L)
        p(y_t = l) in corpus order; each row sums to 1 (all zero in a sentence without an allowed
        path).
    log_z : array of float64, shape (n_sentences,)
        log Z per sentence (0 for an empty sentence, -inf without an allowed path).

    The ahead-of-time kernel (`structperc.decode.fb_kernels.fb_corpus`, scaled forward-backward
    with an exact log-space fallback) runs when built; otherwise the vectorized numpy twin over
    length batches (`structperc.decode.decoder.length_batches`). Both agree to ~1e-12.
    """
    weights.check_first_order("token marginals and confidences")
    tau = _check_temperature(temperature)
    L = weights.n_labels
    allowed = None if allowed is None else check_allowed(allowed, int(feats.sent_ptr[-1]), L)
    if feats.values is not None:  # attribute values: folded a run of sentences at a time
        from structperc.decode.values import folded_runs

        out = np.zeros((int(feats.sent_ptr[-1]), L))
        log_z = np.zeros(len(feats.sent_ptr) - 1)
        for run in folded_runs(weights, feats):
            out[run.tokens], log_z[run.sents] = marginals(
                run.weights, run.feats, tau, None if allowed is None else allowed[run.tokens])
        return out, log_z
    done = _run_compiled(weights, feats, tau, allowed, None, True)
    if done is not None:
        return done[0], done[1]
    return _marginals_numpy(weights, feats, tau, allowed)


def _marginals_numpy(weights: Weights, feats: Features, temperature: float = 1.0,
                     allowed: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """`marginals` by the numpy forward-backward over length batches (the twin of the kernel)."""
    ptr = feats.sent_ptr
    L = weights.n_labels
    allowed = None if allowed is None else check_allowed(allowed, int(ptr[-1]), L)
    out = np.zeros((int(ptr[-1]), L))
    log_z = np.zeros(len(ptr) - 1)
    for sents in length_batches(np.diff(ptr), batch_budget(weights, feats)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        state = _mask_state(state, allowed, tok, real)
        fb = forward_backward_batch(state, trans, weights.end, lens, temperature)
        out[tok[real]] = fb.marginals[real]
        log_z[sents] = fb.log_z
    return out, log_z


def path_log_probs(weights: Weights, feats: Features, ids: np.ndarray, temperature: float = 1.0,
                   allowed: np.ndarray | None = None) -> np.ndarray:
    """log p(labels of the sentence) of every sentence, given a label id per token (e.g. `predict`'s).

    Parameters
    ----------
    ids : array of int, shape (n_tokens,)
    allowed : array of bool, shape (n_tokens, L), optional
        As for `marginals`: the distribution is over the allowed paths only.

    Returns
    -------
    array of float64, shape (n_sentences,)
        0 for an empty sentence; -inf for a labelling the model (or ``allowed``) forbids.
    """
    weights.check_first_order("path probabilities")
    tau = _check_temperature(temperature)
    L = weights.n_labels
    n_tok = int(feats.sent_ptr[-1])
    ids = _check_ids(ids, n_tok, L)
    allowed = None if allowed is None else check_allowed(allowed, n_tok, L)
    if feats.values is not None:  # attribute values: folded a run of sentences at a time
        from structperc.decode.values import folded_runs

        out = np.zeros(len(feats.sent_ptr) - 1)
        for run in folded_runs(weights, feats):
            out[run.sents] = path_log_probs(run.weights, run.feats, ids[run.tokens], tau,
                                            None if allowed is None else allowed[run.tokens])
        return out
    done = _run_compiled(weights, feats, tau, allowed, ids, False)
    if done is not None:
        return done[2]
    return _path_log_probs_numpy(weights, feats, ids, tau, allowed)


def _path_log_probs_numpy(weights: Weights, feats: Features, ids: np.ndarray, temperature: float = 1.0,
                          allowed: np.ndarray | None = None) -> np.ndarray:
    """`path_log_probs` by the numpy forward pass over length batches."""
    ptr = feats.sent_ptr
    L = weights.n_labels
    ids = _check_ids(ids, int(ptr[-1]), L)
    allowed = None if allowed is None else check_allowed(allowed, int(ptr[-1]), L)
    out = np.zeros(len(ptr) - 1)
    for sents in length_batches(np.diff(ptr), batch_budget(weights, feats)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        state = _mask_state(state, allowed, tok, real)
        paths = np.where(real, ids[tok], 0)
        out[sents] = path_log_prob(state, trans, weights.end, paths, lens, temperature)
    return out


def span_probs(weights: Weights, feats: Features, spans: Sequence[tuple[int, str, int, int]],
               labels: Sequence[str], scheme: str, temperature: float = 1.0,
               allowed: np.ndarray | None = None) -> np.ndarray:
    """Probability of each span ``(sentence, type, start, end)`` of a featurized corpus.

    ``sentence`` indexes the corpus, ``start..end`` (inclusive) the sentence's tokens; ``labels`` are
    the model's labels and ``scheme`` its encoding (see `span_log_probs` for what a span appearing
    means). ``allowed`` (bool (n_tokens, L), optional) restricts the paths as for `marginals`. Only
    the sentences holding a span are processed (numpy: spans are few next to tokens).

    Returns
    -------
    array of float64, shape (n_spans,)
    """
    weights.check_first_order("span probabilities")
    n = len(spans)
    out = np.zeros(n)
    allowed = None if allowed is None else check_allowed(allowed, int(feats.sent_ptr[-1]), weights.n_labels)
    if n == 0:
        return out
    lengths = np.diff(feats.sent_ptr)
    sent = np.fromiter((s[0] for s in spans), dtype=np.int64, count=n)
    if (sent < 0).any() or (sent >= len(lengths)).any():
        raise InputError("a span's sentence index is out of range")
    needed = np.zeros(len(lengths), dtype=bool)
    needed[sent] = True
    if feats.values is not None:  # attribute values: the runs of sentences holding a span, folded
        from structperc.decode.values import folded_runs

        for run in folded_runs(weights, feats, needed):
            mine = np.flatnonzero((sent >= run.sents.start) & (sent < run.sents.stop))
            local = [(spans[i][0] - run.sents.start, spans[i][1], spans[i][2], spans[i][3])
                     for i in mine.tolist()]
            out[mine] = span_probs(run.weights, run.feats, local, labels, scheme, temperature,
                                   None if allowed is None else allowed[run.tokens])
        return out
    where = np.full(len(lengths), -1, dtype=np.int64)   # sentence -> batch number
    slot = np.zeros(len(lengths), dtype=np.int64)       # sentence -> row in its batch
    batches = length_batches(np.where(needed, lengths, 0), batch_budget(weights, feats))
    for k, sents in enumerate(batches):
        where[sents] = k
        slot[sents] = np.arange(len(sents))
    if (where[sent] < 0).any():
        raise InputError("a span lies in an empty sentence")
    order = np.argsort(where[sent], kind="stable")
    bounds = np.searchsorted(where[sent][order], np.arange(len(batches) + 1))
    for k, sents in enumerate(batches):
        mine = order[bounds[k]:bounds[k + 1]]
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        state = _mask_state(state, allowed, tok, real)
        local = [(int(slot[spans[i][0]]), spans[i][1], spans[i][2], spans[i][3]) for i in mine.tolist()]
        out[mine] = np.exp(span_log_probs(state, trans, weights.end, lens, local, labels, scheme, temperature))
    return out
