"""The best path of a `~structperc.model.schema.Model` in the data's tag scheme: featurize, constrain,
decode, and the projection of model labels onto data tags.

The decoders (`structperc.decode`) work on label ids of the model's scheme (IOBES for span tasks);
users read and write tags of their data's scheme (IOB2). This module is the bridge:

- **Constraints** (forced tags, allowed-tag sets, a column of known tags, the model's tag dictionary)
  become one bool mask (n_tokens, L) over the model's labels. A data tag allows every model label that
  reads as it (IOB2 ``B-PER`` allows IOBES ``B-PER`` and ``S-PER``; `structperc.labels.partial`); the
  scheme's transition mask then keeps only consistent paths. An explicit constraint on a token
  replaces the tag dictionary's entry there (the user knows better than the dictionary).
- **Projection**: a data tag's probability is the mass of the model labels reading as it
  (`projection_matrix`), which `structperc.predict.probabilities` applies to marginals.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import numpy as np

from structperc.decode.decoder import no_path, predict
from structperc.errors import InputError
from structperc.features.gazetteer import STAGE_COLUMN
from structperc.features.index import Features
from structperc.features.instances import data_tags, with_dictionary
from structperc.features.stacking import majority_types, tag_types
from structperc.io.corpus import Corpus
from structperc.labels.partial import label_projection
from structperc.labels.voting import vote_flat
from structperc.model.schema import Model

#: Per sentence, position -> a tag (forced) or a set of tags (allowed).
Forced = Sequence[Mapping[int, str]]
Allowed = Sequence[Mapping[int, Iterable[str]]]


#: The attribute ids of one corpus's tokens already made by a first stage's feature index (keyed by the index's
#: ``id``, which it holds alive): a vote's members' first stages read one index (`structperc.model.schema`).
FirstStageFeatures = dict[int, tuple[object, Features]]


def featurize(model: Model, corpus: Corpus, first_stages: FirstStageFeatures | None = None) -> Features:
    """Attribute ids of ``corpus`` with every column the model reads (`with_columns`)."""
    return model.features.transform(with_columns(model, corpus, first_stages))


def with_columns(model: Model, corpus: Corpus, first_stages: FirstStageFeatures | None = None) -> Corpus:
    """``corpus`` with the columns the model reads that it lacks: its dictionary's (a corpus that has them keeps
    them: a held-out slice of jackknifed training data keeps its honest columns) and a two-stage model's
    first-stage column (`with_first_stage`).

    The dictionary's columns are written before the first stage reads them when both stages read it
    (`shared_columns`). ``first_stages``, kept by the caller across the members of a vote for this same
    ``corpus``, holds the attribute ids each first-stage feature index made, so members whose first stages
    share an index make them once."""
    return _dictionary_columns(model, with_first_stage(model.stage1, shared_columns(model, corpus), first_stages))


def shared_columns(model: Model, corpus: Corpus) -> Corpus:
    """``corpus`` with the columns of the model's dictionary when every part of the model (its stages, a vote's
    members and theirs) reads that one: training gives them one, and reading a file shares equal ones
    (`structperc.model.schema`), so the columns are written once for all of them. Unchanged otherwise (each
    part then writes its own). A vote's members each add their own first stage's column to it."""
    if all(part.dictionary is model.dictionary for part in model.parts()):
        return _dictionary_columns(model, corpus)
    return corpus


def _dictionary_columns(model: Model, corpus: Corpus) -> Corpus:
    if model.dictionary is not None and set(model.dictionary.columns) <= set(corpus.columns):
        return corpus
    return with_dictionary(corpus, model.dictionary, model.templates)


def with_first_stage(first: Model | None, corpus: Corpus, first_stages: FirstStageFeatures | None = None) -> Corpus:
    """``corpus`` with the ``tmd`` column of a two-stage model whose first stage is ``first``
    (`structperc.features.stacking`): the majority type ``first`` predicts for the other occurrences
    of each word nearby. Unchanged for a one-stage model (None), or when the corpus has the column.
    ``first_stages``: the attribute ids already made for ``corpus`` by first-stage indexes (`with_columns`)."""
    if first is None or STAGE_COLUMN in corpus.columns:
        return corpus
    if first_stages is None:
        feats = featurize(first, corpus)
    else:
        if id(first.features) not in first_stages:
            first_stages[id(first.features)] = (first.features, featurize(first, corpus))
        feats = first_stages[id(first.features)][1]
    tags = data_tags(best_ids(first, corpus, feats=feats), corpus.sent_ptr, first.labels, first.task)
    types = tag_types(tags, first.task.metric == "span")
    return corpus.with_column(STAGE_COLUMN, majority_types(corpus, first.task.token_column, types))


def _projection(model: Model) -> dict[str, np.ndarray]:
    return label_projection(model.labels, model.task.model_scheme, model.task.scheme)


def constraint_mask(model: Model, corpus: Corpus, *, forced: Forced | None = None,
                    allowed: Allowed | None = None, known: Sequence[str | None] | None = None,
                    unknown: str = "?", tag_dictionary: bool = True) -> np.ndarray | None:
    """The bool mask (n_tokens, L) of the labels each token may take, or None when nothing constrains.

    ``forced``/``allowed`` give per sentence a mapping from token position to a tag or a set of
    tags; ``known`` gives a tag per token (flat, corpus order) with ``unknown`` (or None) where the
    tag is free. The model's tag dictionary applies to the tokens no explicit constraint names.
    """
    ptr = corpus.sent_ptr
    n, L = int(ptr[-1]), len(model.labels)
    if model.voters and (forced is not None or allowed is not None or known is not None):
        raise InputError("a voting model (trained with --vote) takes no forced, allowed or known tags: its members "
                         "vote on spans, which a constraint on one member would not bind")
    explicit = np.zeros(n, dtype=bool)
    mask = np.ones((n, L), dtype=bool)
    projection = _projection(model)

    def labels_of(tags: Iterable[str], where: str) -> np.ndarray:
        if not isinstance(tags, str) and not (isinstance(tags, Iterable) and not isinstance(tags, Mapping)):
            raise InputError(f"{where}: {tags!r} is not a tag (a string) or a set of tags")
        tags = [tags] if isinstance(tags, str) else list(tags)
        out = np.zeros(L, dtype=bool)
        for tag in tags:
            if not isinstance(tag, str):
                raise InputError(f"{where}: {tag!r} is not a tag (a string)")
            if tag not in projection:
                raise InputError(f"{where}: tag {tag!r} is not one of this model's tags "
                                 f"({', '.join(sorted(projection)[:8])}{', …' if len(projection) > 8 else ''})")
            out[projection[tag]] = True
        return out

    for name, given in (("forced", forced), ("allowed", allowed)):
        if given is None:
            continue
        if isinstance(given, (Mapping, str, bytes)) or not hasattr(given, "__len__"):
            raise InputError(f"{name} takes one mapping (position -> tag) or None per sentence, in a list: "
                             f"got {type(given).__name__}")
        if len(given) != len(ptr) - 1:
            raise InputError(f"{name} has {len(given)} entries for {len(ptr) - 1} sentences")
        for s, positions in enumerate(given):
            size = int(ptr[s + 1] - ptr[s])
            if positions is not None and not isinstance(positions, Mapping):
                raise InputError(f"{name}: sentence {s} has {type(positions).__name__} {positions!r:.60}, not a "
                                 "mapping from token position to tag(s) (or None)")
            for pos, tags in (positions or {}).items():
                if not isinstance(pos, (int, np.integer)) or not 0 <= pos < size:
                    raise InputError(f"{name}: sentence {s} has {size} tokens; position {pos!r} is not one")
                row = int(ptr[s]) + int(pos)
                mask[row] &= labels_of(tags, f"{name}: sentence {s}, token {pos}")
                explicit[row] = True
    if known is not None:
        if len(known) != n:
            raise InputError(f"the known tags are {len(known)} for {n} tokens")
        values = np.array([unknown if t is None else t for t in known], dtype=object)
        rows = np.flatnonzero(values != unknown)
        tags, first, inverse = np.unique(values[rows].astype(str), return_index=True, return_inverse=True)
        table = np.array([labels_of(t, f"{corpus.where(int(rows[i]))}: the known tags")
                          for t, i in zip(tags.tolist(), first.tolist())], dtype=bool).reshape(len(tags), L)
        mask[rows] &= table[inverse]
        explicit[rows] = True
    if tag_dictionary and model.tag_dictionary is not None:
        words, codes = corpus.factorize(model.task.token_column)  # each distinct word looked up once
        by_word = model.tag_dictionary.allowed(words, model.labels, codes)
        mask[~explicit] &= by_word[~explicit]
    elif not explicit.any():
        return None
    return mask


def best_ids(model: Model, corpus: Corpus, allowed: np.ndarray | None = None, *,
             feats: Features | None = None) -> np.ndarray:
    """Best label id of every token of ``corpus`` (ids into ``model.labels``); ``allowed`` (bool,
    (n_tokens, L)) restricts each token's labels, by default to the model's tag dictionary's. ``feats``: the
    attribute ids of ``corpus``, when made already."""
    if allowed is None and model.tag_dictionary is not None:
        allowed = constraint_mask(model, corpus)
    return decode(model, featurize(model, corpus) if feats is None else feats, allowed)


def voted_tags(model: Model, corpus: Corpus, tags: list[str], first_stages: FirstStageFeatures | None = None) \
        -> list[str]:
    """``tags``, the model's own predictions for ``corpus`` (flat, the data's scheme), voted on with its other
    members' (`structperc.labels.voting`: the spans more than half of them predict); unchanged for a model that
    is no vote. Each member decodes under its own tag dictionary; ``first_stages`` (`with_columns`): the first
    stages' attribute ids of ``corpus`` made so far."""
    if not model.voters:
        return tags
    first_stages = {} if first_stages is None else first_stages
    members = [tags] + [data_tags(best_ids(voter, corpus, feats=featurize(voter, corpus, first_stages)),
                                  corpus.sent_ptr, voter.labels, voter.task) for voter in model.voters]
    return vote_flat(members, corpus.sent_ptr, model.task.scheme)


def decode(model: Model, feats: Features, mask: np.ndarray | None, corpus: Corpus | None = None) -> np.ndarray:
    """Best label id per token under ``mask``; a sentence the mask leaves no path through is refused
    (constraints are honoured exactly or not at all), named by its file and line when ``corpus`` (the one
    ``feats`` were made from) knows them."""
    ids = predict(model.weights, feats, allowed=mask)
    if mask is not None:
        stuck = no_path(ids, feats.sent_ptr)
        if len(stuck):
            more = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
            where = None if corpus is None or corpus.sent_lines is None else \
                corpus.where(int(feats.sent_ptr[int(stuck[0])]))
            raise InputError(f"sentence {int(stuck[0])}{more}: its forced or allowed tags (or the tag "
                             "dictionary) leave no tag sequence this model can produce", where)
    return ids


def projection_matrix(model: Model) -> tuple[list[str], np.ndarray]:
    """The data's tags (sorted) and the 0/1 matrix (L, D) summing model-label mass into them."""
    projection = _projection(model)
    tags = sorted(projection)
    M = np.zeros((len(model.labels), len(tags)))
    for j, tag in enumerate(tags):
        M[projection[tag], j] = 1.0
    return tags, M


def at_tags(tags: list[str], data_probs: np.ndarray, predicted: list[str]) -> np.ndarray:
    """Each token's probability of its ``predicted`` data tag, from data-tag marginals ``data_probs``
    (columns ``tags``)."""
    column = {t: j for j, t in enumerate(tags)}
    cols = np.fromiter((column.get(t, 0) for t in predicted), dtype=np.int64, count=len(predicted))
    return data_probs[np.arange(len(predicted)), cols]


def confidence_of(model: Model, probs: np.ndarray, ids: np.ndarray, sent_ptr: np.ndarray) \
        -> tuple[list[str], np.ndarray]:
    """The data tags of label ids ``ids`` and each one's probability under model-label marginals
    ``probs``."""
    tags, M = projection_matrix(model)
    predicted = data_tags(ids, sent_ptr, model.labels, model.task)
    return predicted, at_tags(tags, probs @ M, predicted)
