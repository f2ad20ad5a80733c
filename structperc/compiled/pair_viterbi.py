"""The Viterbi over label pairs of second-order transitions, shared by training and tagging.

Training (`structperc.train.order2_kernels`, float64 lattices) and tagging
(`structperc.decode.order2_kernels`, the float32 lattices of the first-order tagging decoder) run
this one kernel, each in its own arithmetic: numba compiles it for the dtypes it is given, and it
lives on the floor below both because the house keeps train and decode apart.

The model is the first-order one plus a tensor ``T2`` of shape (L + 1, L + 1, L) over (y_{t-2},
y_{t-1}, y_t), index L being ``<bos>``: position 0 scores ``T2[L, L, y0]``, position 1 ``T2[L, y0,
y1]``. The best path is a Viterbi over label pairs (Collins 2002; the trigram tagger of Brants 2000):
O(T·L³) in general, far less under a label scheme, whose forbidden transitions are never visited
(`transition_lists`).

It is written so that with ``T2 ≡ 0`` it returns the first-order Viterbi's path and score bit for
bit, ties included: the pair lattice holds each pair's score *before* its label's state score (the
first-order candidates δ[t−1, p] + trans[p, y]), a predecessor is chosen on those (lowest id on ties),
and the last pair is chosen label first, then predecessor, as the first-order backtrack does.

References
----------
M. Collins. Discriminative training methods for hidden Markov models: theory and experiments with
perceptron algorithms. EMNLP 2002.
T. Brants. TnT: a statistical part-of-speech tagger. ANLP 2000.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def transition_lists(allowed):
    """The label pairs a path may cross, as lists: for every label p, its predecessors q among the
    labels (``pred[pred_ptr[p]:pred_ptr[p + 1]]``, ascending) and its successors y
    (``succ[succ_ptr[p]:succ_ptr[p + 1]]``, ascending). ``allowed`` (L + 1, L) is a transition matrix
    (the scheme's mask, or scores): an entry of -inf is a forbidden transition."""
    L = allowed.shape[1]
    pred_ptr = np.zeros(L + 1, dtype=np.int64)
    succ_ptr = np.zeros(L + 1, dtype=np.int64)
    pred = np.empty(L * L, dtype=np.int32)
    succ = np.empty(L * L, dtype=np.int32)
    n_pred = 0
    n_succ = 0
    for p in range(L):
        for q in range(L):
            if allowed[q, p] > -np.inf:
                pred[n_pred] = q
                n_pred += 1
        pred_ptr[p + 1] = n_pred
        for y in range(L):
            if allowed[p, y] > -np.inf:
                succ[n_succ] = y
                n_succ += 1
        succ_ptr[p + 1] = n_succ
    return pred_ptr, pred, succ_ptr, succ


@njit(cache=True, nogil=True)
def pair_viterbi(state, trans, per_token, T2, end, out, a, T, A, back, M, B, pred_ptr, pred, succ_ptr, succ):
    """Best path of the sentence at rows ``a:a + T`` of ``state`` (and of ``trans`` when
    ``per_token``; else ``trans[0]`` at every position) into ``out[a:a + T]``; returns its score
    (float64; -inf: no path of finite score, e.g. under a mask of allowed labels).

    Work arrays the caller owns: ``A`` (≥ T, L + 1, L) of the lattice's dtype, filled with -inf,
    ``back`` int32 of that shape, filled with 0, ``M`` (L,) and ``B`` int32 (L,), and the
    `transition_lists` of the transitions a path may cross (every transition outside them scores -inf
    at every position). Only the pairs of the lists are written (and row L at t = 0), the others keep
    their -inf and 0: a scheme's forbidden pairs cost nothing, and the arrays serve every sentence of
    the same lists without being filled again.

    ``A[t, p, y]`` is the best score of a path whose labels at t − 1, t are (p, y) (p = L: ``<bos>``,
    t = 0 only), every score up to position t included but the state score of y at t;
    ``back[t, p, y]`` the label at t − 2 of that path. The arithmetic is the arrays' own (a float32
    lattice adds in float32, as the first-order tagging decoder does).
    """
    L = state.shape[1]
    ninf = -np.inf
    t0 = a if per_token else 0
    for y in range(L):
        A[0, L, y] = trans[t0, L, y] + T2[L, L, y]
    for t in range(1, T):
        ti = a + t if per_token else 0
        for p in range(L):
            lo = succ_ptr[p]
            hi = succ_ptr[p + 1]
            wide = 4 * (hi - lo) > L  # many successors: branch-free over every label (vectorized)
            if wide:
                for y in range(L):
                    M[y] = ninf
                    B[y] = 0
            else:
                for j in range(lo, hi):
                    M[succ[j]] = ninf
                    B[succ[j]] = 0
            if t == 1:  # the one predecessor is <bos>
                v = A[0, L, p]
                if v > ninf:
                    for j in range(lo, hi):
                        y = succ[j]
                        s = v + T2[L, p, y]
                        if s > M[y]:
                            M[y] = s
                            B[y] = L
            else:
                for k in range(pred_ptr[p], pred_ptr[p + 1]):  # ascending q: strict > keeps the lowest
                    q = pred[k]
                    v = A[t - 1, q, p]
                    if v > ninf:
                        if wide:  # the labels that do not follow p are computed too, never read
                            for y in range(L):
                                s = v + T2[q, p, y]
                                m = M[y]
                                M[y] = s if s > m else m
                                B[y] = q if s > m else B[y]
                        else:
                            for j in range(lo, hi):
                                y = succ[j]
                                s = v + T2[q, p, y]
                                if s > M[y]:
                                    M[y] = s
                                    B[y] = q
            sp = state[a + t - 1, p]
            for j in range(lo, hi):
                y = succ[j]
                A[t, p, y] = (M[y] + sp) + trans[ti, p, y]
                back[t, p, y] = B[y]
    p_lo = L if T == 1 else 0
    p_hi = L + 1 if T == 1 else L
    best = ninf
    best_y = 0
    best_p = p_lo
    for y in range(L):
        m = A[T - 1, p_lo, y]  # the lattice's dtype (no NaN: a -inf start would pick the same)
        arg = p_lo
        for p in range(p_lo + 1, p_hi):
            if A[T - 1, p, y] > m:
                m = A[T - 1, p, y]
                arg = p
        total = np.float64(m + state[a + T - 1, y]) + end[y]
        if total > best:
            best = total
            best_y = y
            best_p = arg
    out[a + T - 1] = best_y
    if T > 1:
        out[a + T - 2] = best_p
    for t in range(T - 1, 1, -1):
        out[a + t - 2] = back[t, out[a + t - 1], out[a + t]]
    return best
