"""Decoding with attribute values (python-crfsuite's ``{"k": 2.5}``): one folding step that every decoder shares.

With values, the state score of label y at token i is Σ_k v_ik · W[a_ik, y] (`Features.values`; CRFsuite
scores an item the same way, Okazaki 2007, ``crfsuite_attribute.value``). The compiled decoders (Viterbi,
constrained Viterbi, forward-backward, k-best) sum weight rows without values. Rather than teaching each
of them a second scoring loop, a corpus with values is *folded* into an equivalent problem they already
solve: each token i gets its own state attribute i, whose weight row is the token's whole state score
S[i] = Σ_k v_ik · W[a_ik] (an "all" feature set, row i at offset i·L), and the features become
``state = arange(n_tokens)[:, None]`` with the same transition ids. Every decoder then sees exactly the
lattice of the valued problem (scores 0 + S[i, y] = S[i, y]), and nothing in the kernels changes.

S is the product M · W of the (n_tokens × A) sparse matrix M of the values at the attribute ids (an
id listed twice counts twice) and the state weights W (A × L, stored as
`structperc.model.state_weights.StateWeights`: CSR rows ``ptr``, ``labels``, ``values``). It is computed
with vectorized numpy gathers rather than scipy's sparse product (``csr_matmat``, whose per-entry
loop was ~5x slower on a CoNLL-2000 model: 0.80 s against 0.15 s for 95,000 tokens), in float32,
template column by template column from zero: the order of the decoders' own scoring
(`structperc.decode.score_kernels.state_scores`). With every value 1.0, v · w = w exactly, so S is bit
for bit the state scores the decoders compute from the ids alone, and the labels, k-best lists,
scores and probabilities equal those of the same features without values.

Memory is bounded: the corpus is folded a run of whole sentences at a time (`VALUE_CELLS` cells of S
per run: 8 MiB of float32 scores and 4 MiB of label ids; the gathers' temporaries are ~1 MiB).
Cost: folding CoNLL-2000's training set (211,727 tokens, 37 templates, 40 labels) takes ~0.24 s with
the in-memory model's dense weights and ~0.5 s with a saved model's sparse ones, against ~0.3 s for
the compiled Viterbi decode itself.
"""
from __future__ import annotations

from typing import Iterator, NamedTuple

import numpy as np

from structperc.compiled.boundary import rising
from structperc.errors import InputError
from structperc.features.index import Features, checked_values
from structperc.model.state_weights import StateWeights
from structperc.model.weights import Weights

#: Cells (tokens × labels) of folded state scores computed at once: bounds the memory of folding.
VALUE_CELLS = 1 << 21
#: Cells of the gathers of `state_score_rows` (their temporaries stay in the processor's cache).
BLOCK_CELLS = 1 << 18


class Folded(NamedTuple):
    """A run of whole sentences of a valued corpus, folded (see the module docstring).

    Attributes
    ----------
    sents : slice
        The run's sentences in the corpus.
    tokens : slice
        Its tokens in the corpus.
    weights : Weights
        The model's transitions, with one state attribute per token of the run holding its scores.
    feats : Features
        ``state = arange(n)[:, None]``, the run's transition ids, its sentence offsets from 0; no values.
    """

    sents: slice
    tokens: slice
    weights: Weights
    feats: Features


def check_values(feats: Features) -> np.ndarray:
    """``feats.values`` as C-contiguous float32 of ``feats.state``'s shape, or `InputError`."""
    return checked_values(feats.values, feats.state)


def state_score_rows(weights: Weights, ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """S[i] = Σ_k values[i, k] · W[ids[i, k]] (ids -1 skipped), float32 (n, L), summed in template
    order from zero (see the module docstring).

    Parameters
    ----------
    weights : Weights
    ids : array of int, shape (n, K)
        State attribute ids, -1 for none; checked to lie in [-1, A) (the gathers below do not check).
    values : array of float32, shape (n, K)

    Tokens go `BLOCK_CELLS` cells at a time (the temporaries stay in cache: ~3x faster than whole
    columns on CoNLL-2000), one template column after the other. Within a column a token reads one
    weight row, so its contributions go to distinct cells and a plain fancy-index ``+=`` adds each
    exactly once, in column order. Full rows (dense weights, or a padded row of a sparse feature
    set) are gathered as (tokens, L) blocks, and a column whose values are all 1 is added without
    a product; short rows of a sparse set are scattered through their label ids.
    """
    sw = weights.sparse
    A, L = sw.n_attributes, sw.n_labels
    ids = np.asarray(ids)
    n, K = ids.shape
    if ids.size and (int(ids.min()) < -1 or int(ids.max()) >= A):
        raise InputError(f"state attribute ids must lie in [-1, {A})")
    out = np.zeros((n, L), dtype=np.float32)
    if n == 0 or L == 0:
        return out
    dense = len(sw.values) == A * L  # ``ptr[a] = a·L``, every label in order: rows read by offset
    table = sw.values.reshape(A, L) if dense else None
    # every L consecutive weights as a row (a view, no copy): a full row starting at ``lo`` is row lo
    windows = np.lib.stride_tricks.sliding_window_view(sw.values, L) if len(sw.values) >= L else None
    step = max(1, BLOCK_CELLS // L)
    for a in range(0, n, step):
        b = min(a + step, n)
        block = out[a:b]
        flat = block.reshape(-1)
        for k in range(K):
            col, v = ids[a:b, k], values[a:b, k]
            known = col >= 0
            if table is not None:
                every = bool(known.all())
                if not every:  # an unknown id reads row 0 times 0: adds ±0, changes no sum
                    col, v = np.where(known, col, 0), np.where(known, v, np.float32(0.0))
                rows = np.take(table, col, axis=0)
                if every and bool((v == 1).all()):
                    block += rows
                else:
                    rows *= v[:, None]
                    block += rows
                continue
            safe = np.where(known, col, 0)
            lo = sw.ptr[safe]
            count = np.where(known, sw.ptr[safe + 1] - lo, 0)
            full = np.flatnonzero(count == L)
            if len(full) and windows is not None:
                rows = windows[lo[full]]
                vf = v[full]
                if not bool((vf == 1).all()):
                    rows *= vf[:, None]
                block[full] += rows
            short = np.flatnonzero((count > 0) & (count < L))
            if len(short):
                c = count[short]
                tok = np.repeat(short, c)
                pos = np.repeat(lo[short] - (np.cumsum(c) - c), c) + np.arange(int(c.sum()))
                cells = tok * L + sw.labels[pos]
                flat[cells] += v[tok] * sw.values[pos]
    return out


def folded_weights(weights: Weights, scores: np.ndarray) -> Weights:
    """``weights``' transitions with state attribute i holding ``scores[i]`` (an "all" feature set)."""
    n, L = scores.shape
    ptr = np.arange(n + 1, dtype=np.int64) * L
    labels = np.tile(np.arange(L, dtype=np.int16), n)
    state = StateWeights(ptr, labels, scores.ravel(), L)
    return Weights(state, weights.trans, weights.cond, weights.mask, weights.end)


def sentence_runs(sent_ptr: np.ndarray, max_tokens: int) -> list[tuple[int, int]]:
    """Consecutive runs ``[s0, s1)`` of sentences covering all of them, each of at most ``max_tokens``
    tokens unless a single sentence is longer; one empty run for a corpus without sentences."""
    ptr = np.asarray(sent_ptr, dtype=np.int64)
    n = len(ptr) - 1
    if n <= 0:
        return [(0, 0)]
    runs = []
    s0 = 0
    while s0 < n:
        s1 = int(np.searchsorted(ptr, ptr[s0] + max_tokens, side="right")) - 1
        s1 = min(max(s1, s0 + 1), n)
        runs.append((s0, s1))
        s0 = s1
    return runs


def fold_run(weights: Weights, feats: Features, values: np.ndarray, s0: int, s1: int) -> Folded:
    """Sentences ``s0:s1`` of a valued corpus, folded."""
    ptr = np.asarray(feats.sent_ptr, dtype=np.int64)
    t0, t1 = int(ptr[s0]), int(ptr[s1])
    scores = state_score_rows(weights, feats.state[t0:t1], values[t0:t1])
    state = np.arange(t1 - t0, dtype=np.int32)[:, None]
    sub = Features(state, np.ascontiguousarray(feats.trans[t0:t1]), ptr[s0:s1 + 1] - t0)
    return Folded(slice(s0, s1), slice(t0, t1), folded_weights(weights, scores), sub)


def folded_runs(weights: Weights, feats: Features, needed: np.ndarray | None = None) -> Iterator[Folded]:
    """The runs of sentences of a valued corpus (``feats.values`` set), folded one at a time.

    ``needed`` (bool per sentence, optional): only runs holding a needed sentence are folded."""
    values = check_values(feats)
    ptr = np.asarray(feats.sent_ptr, dtype=np.int64)
    if feats.state.ndim != 2 or ptr.ndim != 1 or len(ptr) < 1 or ptr[0] != 0 \
            or ptr[-1] != feats.state.shape[0] or not rising(ptr):
        raise InputError("features must hold (n_tokens, K) state ids and sentence offsets from 0 to "
                         "n_tokens")
    max_tokens = max(1, VALUE_CELLS // max(weights.n_labels, 1))
    for s0, s1 in sentence_runs(ptr, max_tokens):
        if needed is not None and not needed[s0:s1].any():
            continue
        yield fold_run(weights, feats, values, s0, s1)
