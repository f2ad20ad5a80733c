"""Documents tagged in context: the one place that knows how far a model's features read into
neighbouring sentences (`document_window`).

A model with document-level features (the NER ``doc`` column's window over nearby sentences,
`structperc.features.gazetteer.document_gap`) tags a sentence differently with other sentences
around it. Two uses follow, both here:

- a long input tagged a chunk at a time (``structperc tag`` and its Dask twin) gets each chunk tagged
  with the ``gap`` sentences either side of it as context (`in_context`, `tag_in_context`), so the
  tags equal one pass's;
- several documents tagged with one call (the HTTP service, the spaCy component) are kept out of
  each other's window by ``gap`` empty sentences between them (`apart`, `tag_documents`), so each
  gets the tags it gets alone.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np

from structperc.decode.marginals import marginals
from structperc.features.gazetteer import document_gap
from structperc.features.instances import data_tags
from structperc.io.corpus import Corpus, concat, edge
from structperc.model.schema import Model
from structperc.predict.calibration import confidence_temperature
from structperc.predict.decoding import (
    FirstStageFeatures,
    at_tags,
    constraint_mask,
    decode,
    featurize,
    projection_matrix,
    shared_columns,
    voted_tags,
)
from structperc.predict.probabilities import distribution_dicts, k_best

T = TypeVar("T")


def by_sentence(values: Sequence[T], sent_ptr: np.ndarray) -> list[Sequence[T]]:
    """Flat per-token ``values`` (corpus order) cut into sentences at ``sent_ptr``."""
    ptr = sent_ptr.tolist()
    return [values[ptr[s]:ptr[s + 1]] for s in range(len(ptr) - 1)]


@dataclass
class Tagged:
    """A corpus's predictions with what was asked for beside them (`tag_corpus`)."""

    tags: list[str]
    #: Marginal probability of each predicted tag (flat), when asked for.
    confidence: np.ndarray | None = None
    #: Per sentence, the k best (tags, score, probability), when asked for.
    nbest: list[list[tuple[list[str], float, float]]] | None = None
    #: Every token's marginal distribution over the data tags `marginal_tags` (n_tokens, D), when asked for.
    marginals: np.ndarray | None = None
    marginal_tags: list[str] | None = None

    def sentence_tags(self, sent_ptr: np.ndarray) -> list[list[str]]:
        """The tags, per sentence (``sent_ptr``: the tagged corpus's)."""
        return by_sentence(self.tags, sent_ptr)  # type: ignore[return-value]

    def sentence_confidence(self, sent_ptr: np.ndarray) -> list[list[float]] | None:
        """Each tag's probability, per sentence; None when not asked for."""
        if self.confidence is None:
            return None
        return by_sentence(self.confidence.tolist(), sent_ptr)  # type: ignore[return-value]

    def sentence_marginals(self, sent_ptr: np.ndarray) -> list[list[dict[str, float]]] | None:
        """Per sentence, per token, {data tag: probability}; None when not asked for."""
        if self.marginals is None:
            return None
        return distribution_dicts(self.marginal_tags or [], self.marginals, sent_ptr)


def tag_corpus(model: Model, corpus: Corpus, *, confidence: bool = False, k: int = 0,
               known: Sequence[str | None] | None = None, unknown: str = "?",
               distributions: bool = False, allowed: np.ndarray | None = None) -> Tagged:
    """Tag ``corpus`` under the model's tag dictionary and the ``known`` tags (flat, ``unknown`` =
    free), or under ``allowed`` (a `constraint_mask` made already: `Tagger`'s forced and allowed tags);
    with ``confidence`` each tag's marginal probability, with ``distributions`` every tag's
    (one forward-backward pass for both), with ``k`` the k best paths. A voting model's tags are its members'
    vote (`voted_tags`), with its first member's probabilities of them; no k best paths."""
    corpus = shared_columns(model, corpus)  # once for every stage and member that reads the model's dictionary
    first_stages: FirstStageFeatures = {}
    feats = featurize(model, corpus, first_stages)
    mask = constraint_mask(model, corpus, known=known, unknown=unknown) if allowed is None else allowed
    ids = decode(model, feats, mask, corpus)
    nbest = k_best(model, feats, k, mask) if k else None  # before the vote: a voting model refuses k best paths
    tags = voted_tags(model, corpus, data_tags(ids, corpus.sent_ptr, model.labels, model.task), first_stages)
    out = Tagged(tags, nbest=nbest)
    if confidence or distributions:
        names, M = projection_matrix(model)
        probs = marginals(model.weights, feats, confidence_temperature(model), allowed=mask)[0] @ M
        out.confidence = at_tags(names, probs, tags) if confidence else None
        if distributions:
            out.marginals, out.marginal_tags = probs, names
    return out


def tag_in_context(model: Model, core: Corpus, before: Corpus | None = None, after: Corpus | None = None,
                   *, confidence: bool = False, k: int = 0, known_column: str | None = None,
                   unknown: str = "?") -> Tagged:
    """`tag_corpus` of ``core`` with the sentences ``before`` and ``after`` it as context: a model whose
    features read neighbouring sentences (`structperc.features.gazetteer.document_gap`) tags a chunk of
    a long input as it would in one pass. Only the core's tags (confidence, k-best) come back;
    ``known_column`` names a column of known tags (`constraint_mask`)."""
    if not len(core):
        return Tagged([], np.zeros(0) if confidence else None, [] if k else None)
    whole = concat([before, core, after])
    if whole is None or whole is core:
        whole = core
    known = whole.columns[known_column] if known_column is not None else None
    tagged = tag_corpus(model, whole, confidence=confidence, k=k, known=known, unknown=unknown)
    if whole is core:
        return tagged
    s0 = len(before) if before is not None else 0
    a = before.n_tokens if before is not None else 0
    b = a + core.n_tokens
    return Tagged(tagged.tags[a:b], tagged.confidence[a:b] if tagged.confidence is not None else None,
                  tagged.nbest[s0:s0 + len(core)] if tagged.nbest is not None else None)


def document_window(model: Model) -> int:
    """How many sentences either side of its own a token's features read (`document_gap`; 0 for most
    models): the context each chunk of a long document is tagged with (`in_context`), and the empty
    sentences that keep documents tagged in one call apart (`apart`)."""
    return document_gap(model.features.columns)


def apart(documents: Iterable[Sequence[Any]], gap: int) -> tuple[list[Any], list[int]]:
    """The sentences of ``documents`` in one list to tag with one call, with ``gap`` empty sentences
    (`document_window`) before each document that has sentences before it, so that none reads
    another's; and where each document starts in that list. Each document gets the tags it gets alone."""
    flat: list[Any] = []
    starts = []
    for document in documents:
        if flat:
            flat += [[]] * gap
        starts.append(len(flat))
        flat += document
    return flat, starts


@dataclass
class TaggedDocuments:
    """Documents tagged with one call (`tag_documents`)."""

    corpus: Corpus        # every document's sentences, kept apart by empty ones
    tagged: Tagged        # its tags (and what was asked for beside them)
    sentences: list[range]  # each document's sentences in ``corpus``


def tag_documents(model: Model, documents: Sequence[Sequence[T]], corpus_of: Callable[[list[T]], Corpus], *,
                  confidence: bool = False, distributions: bool = False, k: int = 0) -> TaggedDocuments:
    """Tag several documents (each a sequence of sentences) with one `tag_corpus` call, each out of
    the others' document window (`apart`): ``corpus_of`` makes the corpus of their sentences in one
    list (empty sentences between documents included)."""
    flat, starts = apart(documents, document_window(model))
    corpus = corpus_of(flat)
    tagged = tag_corpus(model, corpus, confidence=confidence, distributions=distributions, k=k)
    return TaggedDocuments(corpus, tagged, [range(s, s + len(d)) for s, d in zip(starts, documents)])


def in_context(chunks: Iterable[Any], gap: int, before: Corpus | None = None,
               after: Corpus | None = None) -> Iterator[tuple[Corpus | None, Any, Corpus | None]]:
    """(sentences before, chunk, sentences after) of every chunk of one document (chunks of
    `structperc.io.formats.tagging_chunks`, each with its ``corpus``): the ``gap`` sentences
    (`document_window`) around it, from the other chunks and from ``before`` and ``after`` the
    chunks (a part of a file has its neighbours), so that tagging chunk by chunk equals one pass
    (`tag_in_context`). None with ``gap`` 0. Reads ahead as many chunks as hold ``gap`` sentences
    (one, at the default chunk size)."""
    if not gap:
        for chunk in chunks:
            yield None, chunk, None
        return
    before = edge([before], gap, last=True)  # the last `gap` sentences before the chunk
    ahead: deque = deque()  # chunks read ahead: enough to hold `gap` sentences after the current one
    for chunk in chunks:
        ahead.append(chunk)
        while sum(len(c.corpus) for c in list(ahead)[1:]) >= gap:
            current = ahead.popleft()
            yield before, current, edge([c.corpus for c in ahead], gap, last=False)
            before = edge([before, current.corpus], gap, last=True)
    while ahead:
        current = ahead.popleft()
        yield before, current, edge([c.corpus for c in ahead] + [after], gap, last=False)
        before = edge([before, current.corpus], gap, last=True)
