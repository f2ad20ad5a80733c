"""Span probabilities: the probability that a labelled span appears in the output, an exact sum over
paths from the forward and backward tables (`structperc.decode.forward_backward`; Lafferty, McCallum &
Pereira 2001, section 3), not a product of token marginals (see `span_log_probs` for what "appears"
means under each scheme), and its corpus driver `span_probs`.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from structperc.decode.decoder import batch_budget, batch_scores, check_allowed, length_batches
from structperc.decode.forward_backward import (
    ForwardBackward,
    _forward_backward,
    _last,
    _Lattice,
    _logsumexp,
    mask_state,
)
from structperc.errors import InputError
from structperc.features.index import Features
from structperc.model.weights import Weights

SPAN_SCHEMES = ("iob2", "iobes", "bmes")


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
    inner = _inside(lat, sent, first, last, ids, n)
    l_last = np.where(single, l_first, ids[:, 2])
    tail = fb.log_beta[sent, last, l_last]
    if scheme == "iob2":
        _iob2_tail(lat, fb, tail, sent, last, l_last, exclude, lens)
    z = fb.log_z[sent]
    with np.errstate(invalid="ignore"):
        out = head + inner + tail - z
    return np.where(missing | ~np.isfinite(z) | ~np.isfinite(head + inner + tail), -np.inf, out)



def _inside(lat: _Lattice, sent: np.ndarray, first: np.ndarray, last: np.ndarray, ids: np.ndarray,
            n: int) -> np.ndarray:
    """Per span, the scores of its positions start+1..end with their fixed labels (inside ..., the end
    label at ``end``): transition and state scores summed."""
    width = last - first
    rep = np.repeat(np.arange(n), width)
    offset = np.arange(len(rep)) - np.repeat(np.cumsum(width) - width, width)
    t = first[rep] + offset + 1
    cur = np.where(t == last[rep], ids[rep, 2], ids[rep, 1])
    prev = np.where(t == first[rep] + 1, ids[rep, 0], ids[rep, 1])
    b = sent[rep]
    step = lat.trans[prev, cur] if lat.shared else lat.trans[b, t, prev, cur]
    return np.bincount(rep, weights=step + lat.state[b, t, cur], minlength=n)


def _iob2_tail(lat: _Lattice, fb: ForwardBackward, tail: np.ndarray, sent: np.ndarray, last: np.ndarray,
               l_last: np.ndarray, exclude: np.ndarray, lens: np.ndarray) -> None:
    """IOB2: ``tail`` (log β at each span's end) of the spans with a following token replaced by the
    sum over the next label that is not the span's ``I-type`` (which would extend the span)."""
    L = lat.state.shape[2]
    cut = last + 1 < lens[sent]
    if cut.any():
        c = np.nonzero(cut)[0]
        bc, tc = sent[c], last[c] + 1
        rows = lat.trans[l_last[c], :L] if lat.shared else lat.trans[bc, tc, l_last[c], :L]
        rows = rows + lat.state[bc, tc] + fb.log_beta[bc, tc]
        ex = exclude[c]
        rows[np.nonzero(ex >= 0)[0], ex[ex >= 0]] = -np.inf                 # the next label is not I-type
        tail[c] = _logsumexp(rows)


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
        state = mask_state(state, allowed, tok, real)
        local = [(int(slot[spans[i][0]]), spans[i][1], spans[i][2], spans[i][3]) for i in mine.tolist()]
        out[mine] = np.exp(span_log_probs(state, trans, weights.end, lens, local, labels, scheme, temperature))
    return out
