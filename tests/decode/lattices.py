"""Random featurized corpora shared by the decoding-kernel tests (`test_kernels`, `test_constrained`):
one rule for drawing sentence offsets and attribute ids, so the kernels' tests exercise the same
shapes of input (-1 ids among them: unknown attributes add nothing)."""
from __future__ import annotations

import numpy as np


def corpus_ids(rng: np.random.Generator, lengths: np.ndarray, K: int, KT: int, A: int,
               AT: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sent_ptr, X, XT) for sentences of ``lengths`` tokens: K state attribute ids in [-1, A) and KT
    conditioned-transition attribute ids in [-1, AT) per token, drawn in that order from ``rng``."""
    ptr = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    n = int(ptr[-1])
    X = rng.integers(-1, A, (n, K)).astype(np.int32)
    XT = rng.integers(-1, AT, (n, KT)).astype(np.int32)
    return ptr, X, XT
