"""The k best label paths of each sentence: list Viterbi over the tagging lattice.

Exact k-best decoding by the parallel list Viterbi algorithm (Seshadri & Sundberg 1994, "List
Viterbi decoding algorithms with applications", IEEE Trans. Communications 42(2/3/4); the k-best
recursion of Nilsson & Goldberger 2001, "Sequentially finding the N-best list in hidden Markov
models", IJCAI, finds the same list one path at a time): every lattice cell (position t, label j)
keeps the k best partial paths ending there, ranked; a cell's k best are the k best one-step
extensions of its predecessors' lists, since a path among the k best of the whole sentence has a
prefix among the k best ending in its cell. Vectorized over a batch of sentences and over cells: one
Python step per position, as `structperc.decode.viterbi.viterbi_batch`.

Before the list recursion, a forward and a backward max-product pass give every cell's max-marginal
(the best score of a path through it); cells below a lower bound of the k-th best path score are
left out, as in the max-marginal filtering of Weiss & Taskar 2010 ("Structured prediction
cascades", AISTATS) but with a bound that keeps the result exact (`_live_cells`).

Two twins give identical lists (tested against each other and against brute force): the
ahead-of-time compiled kernel (`structperc.decode.nbest_kernels`, one pass per sentence, the same
pruning; k = 5 on CoNLL-2000 test costs ~2.2x the compiled Viterbi decode) and, where no build
exists, the vectorized numpy twin (`structperc.decode.list_viterbi`, ~15x). Tagging never JIT-compiles, as in
`structperc.decode.decoder`. The kernel merges the lists lazily (Huang & Chiang 2005, "Better k-best
parsing"): a sentence costs O(T·L² + k·T·log L), linear in k (28 tokens, k = 20,000: 0.08 s); the
numpy twin builds every cell's full list, O(T·L²·k) with a sort of k entries per cell (k = 5,000:
2.7 s). Either way k is at most `MAX_K`.

An optional per-token mask of allowed labels (`nbest`'s ``allowed``) sets the state score of a
forbidden label to -inf: combined with the scheme's -inf transitions, only paths through allowed
labels remain (a sentence may then have none).

Tie rule
--------
Paths are ranked by score, best first; among paths of equal score, the one whose label ids, read
from the last token backwards, are lexicographically smaller comes first (lowest final label, then
lowest label before it, ...). This is the rule of `viterbi_batch` and of the compiled decoder (ties
to the lowest label id at the end, then to the lowest predecessor), so the first path is always
exactly Viterbi's. Scores are accumulated in the dtype of the inputs, in Viterbi's order of
additions, so this holds bit for bit for float32 scores too.
"""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from structperc.decode.decoder import (
    batch_budget,
    batch_scores,
    check_allowed,
    check_features,
    in_runs,
    length_batches,
)
from structperc.decode.list_viterbi import _live_cells as _live_cells  # re-exported: the tests reach it here
from structperc.decode.list_viterbi import list_viterbi
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights

#: The largest number of paths a sentence the k-best decoder lists, for every face over it (``structperc
#: tag --nbest``, the service's ``--max-nbest``, `Tagger.predict_nbest`). The compiled list Viterbi
#: costs O(T·L² + k·T·log L) for a sentence of T tokens and L labels (28 tokens, 40 labels, k =
#: 20,000: 0.07 s), but the lists themselves are k·T labels: k = 50,000 on a 100-token sentence is
#: 41 MB of JSON lines, 3 s and 440 MB of ``structperc tag``, and the decoder's buffers grow as T·(L + k).
MAX_K = 50_000

#: Paths a streaming face (``structperc tag``) holds at once: with ``--nbest K`` its chunks shrink to
#: ``PATHS_PER_CHUNK // K`` sentences (a chunk's lists are K paths a sentence: K = 1,000 over
#: CoNLL-2000's test set in one chunk peaked at 3.4 GB).
PATHS_PER_CHUNK = 100_000


def check_k(k: int, name: str = "the number of paths k") -> int:
    """``k`` as an int, or an `InputError` naming it (``name``) when it is below 1 or above `MAX_K`."""
    try:
        if isinstance(k, bool):
            raise TypeError
        k = operator.index(k)  # a whole number: 1.7 paths is no count
    except TypeError:
        raise InputError(f"{name} must be a whole number, not {k!r}") from None
    if k < 1:
        raise InputError(f"{name} must be at least 1, not {k}")
    if k > MAX_K:
        raise InputError(f"{name} {k}: at most {MAX_K} paths a sentence are listed")
    return k


def nbest_chunk(nbest: int, sentences: int) -> int:
    """Sentences per chunk of a streaming face asked for ``nbest`` paths a sentence (0: none), at
    most ``sentences``; an `InputError` on an ``nbest`` above `MAX_K` (``--nbest`` named)."""
    if not nbest:
        return sentences
    return max(1, min(sentences, PATHS_PER_CHUNK // check_k(nbest, "--nbest")))


def nbest_batch(state: np.ndarray, trans: np.ndarray, end: np.ndarray, lengths: np.ndarray | None = None,
                k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The k best label paths of B sentences padded to a common length T (list Viterbi).

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
        True lengths, each at least 1 (default: all T). Past its length a path repeats its last
        label, as in `viterbi_batch`.
    k : int
        Number of paths wanted (at least 1).

    Returns
    -------
    paths : array of int32, shape (B, k, T)
        Best first, ties as the module's tie rule; ``paths[:, 0]`` equals ``viterbi_batch``'s result.
        Rows beyond a sentence's number of allowed paths are -1.
    scores : array of float64, shape (B, k)
        Lattice scores of the paths (non-increasing); -inf where there is no further allowed path.

    For k > 1 a forward and a backward max-product pass first mark the cells no path of the k best
    can cross (`_live_cells`; on CoNLL-2000 chunking ~1.3 of 40 labels per token stay live for
    k = 5), and the list recursion runs over the remaining cells only.

    Examples
    --------
    >>> import numpy as np
    >>> state = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    >>> trans = np.array([[0.0, -5.0], [-5.0, 0.0], [0.0, 0.0]])
    >>> paths, scores = nbest_batch(state, trans, np.zeros(2), k=3)
    >>> paths[0].tolist(), scores[0].tolist()
    ([[0, 0], [1, 1], [0, 1]], [1.0, 1.0, -3.0])
    """
    k = check_k(k)
    B, T, L = state.shape
    lens = np.full(B, T, dtype=np.int64) if lengths is None else np.asarray(lengths, dtype=np.int64)
    if B and (lens.min() < 1 or lens.max() > T):
        raise InputError(f"lengths must be integers in [1, {T}]")
    return list_viterbi(state, trans, end, lens, k)


class NBest(NamedTuple):
    """The k best labellings of every sentence of a corpus.

    Attributes
    ----------
    ids : array of int32, shape (k, n_tokens)
        ``ids[r]`` is the (r+1)-th best labelling of every sentence, in corpus order (``ids[0]`` is
        `structperc.decode.decoder.predict`'s); -1 over a sentence with fewer than r+1 allowed paths.
    scores : array of float64, shape (n_sentences, k)
        Lattice score of each sentence's paths, best first; -inf where there are fewer paths. An
        empty sentence has one path (the empty one) of score 0.
    """

    ids: np.ndarray
    scores: np.ndarray


def nbest(weights: Weights, feats: Features, k: int, allowed: np.ndarray | None = None) -> NBest:
    """The k best label paths of every sentence of a featurized corpus (list Viterbi).

    Parameters
    ----------
    weights : Weights
    feats : Features
        ``n_tokens`` tokens in ``len(feats.sent_ptr) - 1`` sentences.
    k : int
        At least 1.
    allowed : array of bool, shape (n_tokens, L), optional
        False forbids a label at a token (on top of the scheme's forbidden transitions): only
        paths through allowed labels are listed. A sentence with no allowed path gets none.

    Returns
    -------
    NBest
        ``ids`` (k, n_tokens) and ``scores`` (n_sentences, k). Sentence s's r-th path is
        ``ids[r, ptr[s]:ptr[s + 1]]`` with ``ptr = feats.sent_ptr``.

    The ahead-of-time kernel (`structperc.decode.nbest_kernels.nbest_corpus`, one pass per
    sentence) runs when its build is current; otherwise sentences are batched by length as in
    `structperc.decode.decoder.predict` for the vectorized `nbest_batch` (no JIT at tagging time).
    Both score in the decoder's float32 precision and order, so they give the same lists and
    ``ids[0]`` equals ``predict``'s labels (ties included) wherever ``allowed`` permits them.
    With attribute values (``feats.values``), the corpus is folded a run of sentences at a time
    (`structperc.decode.values`); with every value 1.0 lists and scores equal those without values.
    """
    weights.check_first_order("k-best lists")
    k = check_k(k)
    mask = _check_inputs(weights, feats, allowed)
    ptr = feats.sent_ptr
    lengths = np.diff(ptr)
    ids = np.full((k, int(ptr[-1])), -1, dtype=np.int32)
    scores = np.full((len(lengths), k), -np.inf)
    if feats.values is not None:
        from structperc.decode.values import folded_runs

        for run in folded_runs(weights, feats):
            sub = nbest(run.weights, run.feats, k, None if mask is None else mask[run.tokens])
            ids[:, run.tokens] = sub.ids
            scores[run.sents] = sub.scores
        return NBest(ids, scores)
    if _nbest_compiled(weights, feats, k, mask, ids, scores):
        return NBest(ids, scores)
    scores[lengths == 0, 0] = 0.0
    # a batch holds k entries a cell: (tokens · L · k) predecessor codes
    for sents in length_batches(lengths, max(1, batch_budget(weights, feats) // k)):
        state, trans, lens, tok, real = batch_scores(weights, feats, sents)
        if mask is not None:
            state[~mask[tok] & real[:, :, None]] = -np.inf
        paths, best = nbest_batch(state, trans, weights.end, lens, k)
        scores[sents] = best
        rows = np.broadcast_to(real[:, None, :], paths.shape)
        cols = np.broadcast_to(tok[:, None, :], paths.shape)[rows]
        ranks = np.broadcast_to(np.arange(k)[None, :, None], paths.shape)[rows]
        ids[ranks, cols] = paths[rows]
    return NBest(ids, scores)


def _check_inputs(weights: Weights, feats: Features, allowed: np.ndarray | None) -> np.ndarray | None:
    """Shapes, dtypes and id ranges the kernel trusts (it must never read out of bounds); returns
    ``allowed`` as a C-contiguous bool array, or None.

    The weights' own invariants (label ids below L, row offsets within the weight arrays) are
    `structperc.model.weights.Weights`'s, checked where it is built."""
    X, _, _ = check_features(weights, feats)
    return None if allowed is None else check_allowed(allowed, X.shape[0], weights.n_labels)


def _nbest_compiled(weights: Weights, feats: Features, k: int, allowed: np.ndarray | None,
                    ids: np.ndarray, scores: np.ndarray) -> bool:
    """Fill ``ids`` and ``scores`` with the ahead-of-time kernel; False without a current build."""
    from structperc.compiled import loader

    kernel = loader.aot("nbest_corpus")
    if kernel is None:
        return False
    c = np.ascontiguousarray
    sw = weights.sparse
    L = weights.n_labels
    none = np.zeros((0, L), dtype=np.bool_)
    weight_args = (sw.ptr, sw.labels, sw.values, weights.base_transitions(), c(weights.cond, dtype=np.float32),
                   c(weights.end, dtype=np.float64))  # once per call, whatever the runs of sentences

    def run(f: Features, tokens: slice, sents: slice) -> bool:  # a run of sentences (`in_runs`)
        whole = tokens.stop - tokens.start == ids.shape[1]
        # ids[:, tokens] is not contiguous: a run fills its own rows, copied in after
        mine = ids if whole else np.full((k, tokens.stop - tokens.start), -1, dtype=np.int32)
        kernel(c(f.state, dtype=np.int32), c(f.trans, dtype=np.int32), c(f.sent_ptr, dtype=np.int64),
               *weight_args, none if allowed is None else allowed[tokens], np.int64(k), mine, scores[sents])
        if not whole:
            ids[:, tokens] = mine
        return True

    return in_runs(feats, run)
