"""Viterbi over a batch of equal-length sentences in vectorized numpy: the tagging-time decoder.

Tagging does not import numba at all: this keeps `structperc tag` start-up at numpy's cost (numba's
import and cache load add ~0.5 s and ~65 MiB), which is most of the time when tagging a small file.
Training uses the compiled per-sentence `structperc.train.epoch_kernels.viterbi`; both are tested against
brute-force enumeration and against each other.
"""
from __future__ import annotations

import numpy as np


def viterbi_batch(state: np.ndarray, trans: np.ndarray, end: np.ndarray,
                  lengths: np.ndarray | None = None) -> np.ndarray:
    """Best label paths of B sentences padded to a common length T.

    Parameters
    ----------
    state : array, shape (B, T, L)
        Label scores per position.
    trans : array, shape (B, T, L + 1, L) or (L + 1, L)
        Transition scores into each position (row L is ``<bos>``); a 2-d array is shared by all
        positions.
    end : array, shape (L,)
        Score of ending in each label.
    lengths : array of int, shape (B,), optional
        True lengths (default: all T). Past its length a sentence's scores are carried unchanged, so
        its path simply repeats its last label there.

    Returns
    -------
    array of int32, shape (B, T)
        Ties go to the lowest label id, as in the compiled decoder.

    Examples
    --------
    >>> import numpy as np
    >>> state = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> trans = np.array([[0.0, -5.0], [-5.0, 0.0], [0.0, 0.0]])
    >>> viterbi_batch(state, trans, np.zeros(2)).tolist()
    [[0, 0]]
    """
    B, T, L = state.shape
    shared = trans.ndim == 2
    first = trans[L] if shared else trans[:, 0, L]
    delta = state[:, 0] + first
    back = np.empty((B, T, L), dtype=np.int32)
    stay = np.arange(L, dtype=np.int32)
    for t in range(1, T):
        step = trans[:L] if shared else trans[:, t, :L]
        cand = delta[:, :, None] + step
        arg = cand.argmax(axis=1)
        new = cand.max(axis=1) + state[:, t]
        if lengths is None or lengths[-1] > t and lengths.min() > t:
            back[:, t] = arg
            delta = new
        else:
            active = (lengths > t)[:, None]
            back[:, t] = np.where(active, arg, stay)
            delta = np.where(active, new, delta)
    paths = np.empty((B, T), dtype=np.int32)
    paths[:, T - 1] = (delta + end).argmax(axis=1)
    rows = np.arange(B)
    for t in range(T - 1, 0, -1):
        paths[:, t - 1] = back[rows, t, paths[:, t]]
    return paths
