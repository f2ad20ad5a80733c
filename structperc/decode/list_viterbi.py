"""The numpy twin of the k-best decoder (`structperc.decode.nbest`): list Viterbi vectorized over a
batch of sentences padded to one length and over lattice cells, one Python step per position (as
`structperc.decode.viterbi.viterbi_batch`), after max-marginal pruning of the cells no path of the k
best crosses (`_live_cells`).

The list recursion is the parallel list Viterbi algorithm (Seshadri & Sundberg 1994): every cell keeps
the k best partial paths ending there, the k best one-step extensions of its predecessors' lists.
Each cell builds its full list here, O(T·L²·k) with a sort of k entries per cell; the compiled twin
merges lazily (Huang & Chiang 2005, "Better k-best parsing"). Ties and the order of additions are
those of `nbest`'s tie rule, so both twins give the same lists bit for bit.
"""
from __future__ import annotations

import numpy as np


def _top(cand: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest entries of each row, best first, ties to the lowest column.

    Parameters
    ----------
    cand : array, shape (N, M)

    Returns
    -------
    idx : array of int, shape (N, min(k, M))
    vals : array, shape (N, min(k, M))

    A quicksort (SIMD in numpy) orders the rows; only the rows where two equal finite values fall
    among the first k + 1 (where its order among ties could matter) are sorted again, stably. Rows
    much longer than k (the merges of many predecessors' lists of k) are first cut to their k
    largest in linear time (a partition; ties at the cut to the lowest columns), then only those k
    are sorted: O(M + k log k) a row instead of O(M log M) (k = 5,000 on a 28-token sentence: 9.8
    s -> 2.7 s). Entries of -inf come last in some order (no path goes through them).
    """
    if k == 1:
        idx = cand.argmax(axis=-1)[:, None]          # the first maximum: the lowest index
        return idx, np.take_along_axis(cand, idx, axis=-1)
    N, M = cand.shape
    if M > 4 * k:
        neg = -cand
        cut = np.partition(neg, k - 1, axis=-1)[:, k - 1, None]    # minus the k-th largest value
        above = neg < cut
        tied = neg == cut
        take = above | (tied & (np.cumsum(tied, axis=-1) <= k - above.sum(axis=-1, keepdims=True)))
        cols = np.nonzero(take)[1].reshape(N, k)                    # ascending in each row
        vals = np.take_along_axis(cand, cols, axis=-1)
        order = np.argsort(-vals, axis=-1, kind="stable")          # ties: the lower column first
        return np.take_along_axis(cols, order, axis=-1), np.take_along_axis(vals, order, axis=-1)
    order = np.argsort(-cand, axis=-1)
    head = np.take_along_axis(cand, order[:, :k + 1], axis=-1)
    fix = ((head[:, 1:] == head[:, :-1]) & (head[:, 1:] > -np.inf)).any(axis=-1)
    if fix.any():
        order[fix] = np.argsort(-cand[fix], axis=-1, kind="stable")
        head = np.take_along_axis(cand, order[:, :k + 1], axis=-1)
    n = min(k, M)
    return order[:, :n], head[:, :n]


def _extend(delta: np.ndarray, b: np.ndarray, moves: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """One list-Viterbi step into n cells: the k best one-step extensions of each.

    Parameters
    ----------
    delta : array, shape (B, L, k)
        Scores of the k best partial paths ending in each label at the previous position, best
        first (-inf: none).
    b : array of int, shape (n,)
        Sentence of each cell.
    moves : array, shape (n, L)
        Transition scores from every label into each cell's label.

    Returns
    -------
    idx : array of int64, shape (n, k)
        Entry ``i * k + r`` of the predecessor list (label i, rank r) each new partial path extends.
    vals : array, shape (n, k)
        Their scores before the cell's state score, best first.

    Only predecessors whose best partial path ranks among the k best heads of a cell can
    contribute (a predecessor below k better heads is beaten k times by them), so a cell merges
    the lists of those few (ties at the k-th head all kept) instead of all L·k candidates.
    """
    n, L = moves.shape
    heads = delta[b, :, 0] + moves                                   # (n, L)
    sel = heads > -np.inf
    if k < L:
        kth = np.partition(heads, L - k, axis=-1)[:, L - k, None]
        sel &= heads >= kth
    flat = np.flatnonzero(sel)
    cell, pred = np.divmod(flat, L)
    counts = np.bincount(cell, minlength=n)
    W = max(int(counts.max()) if len(flat) else 1, 1)
    if len(flat) == n * W:                                           # as many in every cell
        P = pred.reshape(n, W)
        ok = None
    else:
        pos = np.arange(len(flat)) - (np.cumsum(counts) - counts)[cell]
        P = np.zeros((n, W), dtype=np.int64)                         # chosen predecessors, ascending
        P[cell, pos] = pred
        ok = np.zeros((n, W), dtype=bool)
        ok[cell, pos] = True
    rows = np.arange(n)[:, None]
    cand = delta[b[:, None], P] + moves[rows, P][..., None]          # (n, W, k): Viterbi's additions
    if ok is not None:
        cand[~ok] = -np.inf
    col, vals = _top(cand.reshape(n, W * k), k)                      # columns in (i, r) order
    idx = np.take_along_axis(P, col // k, axis=-1) * k + col % k   # W·k >= k columns: k kept
    return idx, vals


def _live_cells(state: np.ndarray, trans: np.ndarray, end: np.ndarray, lens: np.ndarray, k: int) -> np.ndarray:
    """Cells (t, label) some path among the k best can pass through: a safe superset.

    With max-marginals m_t(j) (the best score of a path through label j at position t, from a
    forward and a backward max-product pass), the k-th largest m_t(·) at any position t is the
    score of k distinct paths, so it bounds the k-th best path score from below; a cell whose
    m_t(j) falls below the best such bound θ carries no path of the k best. A margin covering the
    rounding of score sums keeps the test safe in float32.

    Returns
    -------
    array of bool, shape (B, T, L)
        False in the padding.
    """
    B, T, L = state.shape
    shared = trans.ndim == 2
    real = np.arange(T)[None, :] < lens[:, None]
    A = np.empty((B, T, L), dtype=np.result_type(state, trans))
    A[:, 0] = state[:, 0] + (trans[L] if shared else trans[:, 0, L])
    for t in range(1, T):
        step = trans[:L] if shared else trans[:, t, :L]
        new = (A[:, t - 1, :, None] + step).max(axis=1) + state[:, t]
        A[:, t] = np.where(real[:, t, None], new, A[:, t - 1])
    Bm = np.empty((B, T, L), dtype=A.dtype)                  # in the scores' precision: see margin
    Bm[:, T - 1] = end
    shared_T = np.ascontiguousarray(trans[:L].T) if shared else None
    for t in range(T - 2, -1, -1):                           # max over the next label as axis 1
        stepT = shared_T if shared_T is not None else trans[:, t + 1, :L].swapaxes(1, 2)
        new = ((state[:, t + 1] + Bm[:, t + 1])[:, :, None] + stepT).max(axis=1)
        Bm[:, t] = np.where(real[:, t + 1, None], new, Bm[:, t + 1])
    m = A + Bm
    if k <= L:
        kth = np.partition(m, L - k, axis=-1)[..., L - k]
        theta = np.where(real, kth, -np.inf).max(axis=1)
    else:
        theta = np.full(B, -np.inf)
    # a bound on the magnitude of any partial sum, and on the rounding of its ≤ 2T + 1 additions
    tmax = np.max(np.abs(trans), axis=(-2, -1), where=trans > -np.inf, initial=0.0)
    trans_sum = tmax * lens if shared else np.where(real, tmax, 0.0).sum(axis=1)
    state_max = np.max(np.abs(state), axis=2, where=state > -np.inf, initial=0.0)   # -inf: forbidden
    size = (np.where(real, state_max, 0.0).sum(axis=1) + trans_sum
            + np.where(np.isfinite(end), np.abs(end), 0.0).max(initial=0.0))
    eps = float(np.finfo(np.result_type(state, trans, np.float32)).eps)
    margin = 4.0 * (2 * T + 2) * eps * size
    return (m > -np.inf) & (m >= (theta - margin)[:, None, None]) & real[:, :, None]


def list_viterbi(state: np.ndarray, trans: np.ndarray, end: np.ndarray, lens: np.ndarray,
                 k: int) -> tuple[np.ndarray, np.ndarray]:
    """`structperc.decode.nbest.nbest_batch` once its arguments are checked (``lens``: every
    sentence's length, int64): the list recursion forward, then the paths read back."""
    B, T, L = state.shape
    shared = trans.ndim == 2
    head = state[:, 0] + (trans[L] if shared else trans[:, 0, L])
    delta = np.full((B, L, k), -np.inf, dtype=head.dtype)     # k best partial scores per cell
    back = np.zeros((B, T, L, k), dtype=np.int32)               # predecessor entry i * k + r
    stay = (np.arange(L)[:, None] * k + np.arange(k)).astype(np.int32)
    live = _live_cells(state, trans, end, lens, k) if k > 1 else None
    delta[:, :, 0] = head if live is None else np.where(live[:, 0], head, -np.inf)
    for t in range(1, T):
        step = trans[:L] if shared else trans[:, t, :L]
        active = lens > t
        if live is None:                                        # k = 1: Viterbi itself
            cand = delta[:, :, 0, None] + step
            arg = cand.argmax(axis=1)
            new = (np.take_along_axis(cand, arg[:, None, :], axis=1)[:, 0] + state[:, t])[:, :, None]
            idx = (arg * k)[:, :, None]
        else:
            b, j = np.divmod(np.flatnonzero(live[:, t]), L)
            moves = step[:, j].T if shared else step[b, :, j]
            cidx, vals = _extend(delta, b, moves, k)
            new = np.full((B, L, k), -np.inf, dtype=delta.dtype)
            new[b, j] = vals + state[b, t, j][:, None]
            idx = np.zeros((B, L, k), dtype=np.int64)
            idx[b, j] = cidx
        if active.all():
            back[:, t] = idx
            delta = new
        else:
            back[:, t] = np.where(active[:, None, None], idx, stay)
            delta = np.where(active[:, None, None], new, delta)
    return _backtrack(delta, back, end, k, T)


def _backtrack(delta: np.ndarray, back: np.ndarray, end: np.ndarray, k: int, T: int) \
        -> tuple[np.ndarray, np.ndarray]:
    """The k best complete paths (ending scores added) and their scores, read back from the
    predecessor entries ``back`` of the last position's lists ``delta``."""
    B, L = delta.shape[:2]
    final = (delta + np.asarray(end)[None, :, None]).reshape(B, L * k)
    cur, scores = _top(final, k)
    scores = np.asarray(scores, dtype=np.float64)
    paths = np.empty((B, k, T), dtype=np.int32)
    paths[:, :, T - 1] = cur // k
    rows = np.arange(B)[:, None]
    for t in range(T - 1, 0, -1):
        cur = back[rows, t, cur // k, cur % k]
        paths[:, :, t - 1] = cur // k
    paths[scores == -np.inf] = -1
    return paths, scores
