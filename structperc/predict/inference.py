"""Inference beyond the best path on a `Model`: constraints, token marginals, path probabilities,
k-best lists and calibration, in the data's tag scheme.

The decoders below (`structperc.decode`) work on label ids of the model's scheme (IOBES for span
tasks); users read and write tags of their data's scheme (IOB2). This module is the bridge, in one
place:

- **Constraints** (forced tags, allowed-tag sets, a column of known tags, the model's tag dictionary)
  become one bool mask (n_tokens, L) over the model's labels. A data tag allows every model label that
  reads as it (IOB2 ``B-PER`` allows IOBES ``B-PER`` and ``S-PER``; `structperc.labels.partial`); the
  scheme's transition mask then keeps only consistent paths. An explicit constraint on a token
  replaces the tag dictionary's entry there (the user knows better than the dictionary).
- **Marginals** over model labels are summed into data tags (a data tag's probability is the mass of
  the model labels reading as it), at the model's calibrated temperature (`Model.temperature`).
- **Calibration** fits that temperature on held-out gold data (`structperc.decode.calibration`) and
  reports the expected calibration error of the token confidence before and after. Every face that
  hands probabilities to a user (``structperc tag --marginals/--nbest``, `Tagger.predict_marginals`
  and the rest, the spaCy component, the HTTP service) reads the temperature through
  `confidence_temperature`, which says once per model that an uncalibrated one is over-confident.
- **Documents and their window**: the one place that knows how far a model's features read into
  neighbouring sentences (`document_window`): chunks of a long input tagged with that context
  (`in_context`, `write_tagged`: ``structperc tag`` and its Dask twin, after `tagging_setup`), and
  documents batched into one call kept apart (`apart`: the HTTP service, the spaCy component).
"""
from __future__ import annotations

import sys
import threading
import warnings
import weakref
from collections import deque
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from structperc.decode.calibration import fit_temperature, nll_of
from structperc.decode.decoder import no_path, predict
from structperc.decode.marginals import marginals, path_log_probs
from structperc.decode.nbest import nbest
from structperc.errors import InputError, UncalibratedWarning
from structperc.features.gazetteer import STAGE_COLUMN, document_gap
from structperc.features.index import Features
from structperc.features.instances import columns_to_read, data_tags, hidden_tags, model_tags, with_dictionary
from structperc.features.stacking import majority_types, tag_types
from structperc.io.corpus import Corpus, concat, edge
from structperc.labels.partial import label_projection
from structperc.metrics import expected_calibration_error
from structperc.model.schema import Model

if TYPE_CHECKING:
    from structperc.io.formats import Layout

#: Per sentence, position -> a tag (forced) or a set of tags (allowed).
Forced = Sequence[Mapping[int, str]]
Allowed = Sequence[Mapping[int, Iterable[str]]]


def featurize(model: Model, corpus: Corpus) -> Features:
    """Attribute ids of ``corpus``, with the model's dictionary columns added when it reads them and
    the corpus lacks them (a held-out slice of jackknifed training data keeps its honest columns),
    and a two-stage model's first-stage column (`with_first_stage`)."""
    corpus = with_first_stage(model.stage1, corpus)
    if model.dictionary is not None and set(model.dictionary.columns) <= set(corpus.columns):
        return model.features.transform(corpus)
    return model.features.transform(with_dictionary(corpus, model.dictionary, model.templates))


def with_first_stage(first: Model | None, corpus: Corpus) -> Corpus:
    """``corpus`` with the ``tmd`` column of a two-stage model whose first stage is ``first``
    (`structperc.features.stacking`): the majority type ``first`` predicts for the other occurrences
    of each word nearby. Unchanged for a one-stage model (None), or when the corpus has the column."""
    if first is None or STAGE_COLUMN in corpus.columns:
        return corpus
    tags = data_tags(best_ids(first, corpus), corpus.sent_ptr, first.labels, first.task)
    types = tag_types(tags, first.task.metric == "span")
    return corpus.with_column(STAGE_COLUMN, majority_types(corpus, first.task.token_column, types))


#: What an uncalibrated model's probabilities come with (once per model; ``{task}``: its task's name).
UNCALIBRATED = ("this {task} model is not calibrated (temperature 1, not fitted): its probabilities are "
                "over-confident; fit the temperature on held-out gold data with 'structperc calibrate "
                "--model DIR FILE' (or train with --dev; in Python Tagger.calibrate)")
_told: set[int] = set()  # ids of the weights of models already said to be uncalibrated (gone with them)
_told_lock = threading.Lock()


def confidence_temperature(model: Model) -> float:
    """The temperature of probabilities a user asked for: the model's (`Model.temperature`). A model
    with no fitted temperature (``calibration`` None) also warns, once per model (per weights object:
    `Tagger.model_` makes a new `Model` around the same weights at every call), with an
    `UncalibratedWarning` naming ``structperc calibrate`` (the command line prints it as one line on
    standard error). Scores that report a temperature themselves (`calibration_report`) do not come
    here."""
    if model.calibration is None and model.weights.order == 1 and _first_time(model):  # order 2: refused
        warnings.warn(UNCALIBRATED.format(task=model.task.name), UncalibratedWarning, stacklevel=_caller_level())
    return model.temperature


def told_elsewhere(model: Model) -> None:
    """Never warn about ``model`` being uncalibrated: a copy of a model whose owner says it (a Dask
    worker's, `structperc.dask.tagging`: the client says it once, not each worker)."""
    _first_time(model)


def _first_time(model: Model) -> bool:
    """Whether `confidence_temperature` has not yet spoken of ``model`` (and will not again)."""
    key = id(model.weights)
    with _told_lock:
        if key in _told:
            return False
        _told.add(key)
    weakref.finalize(model.weights, _told.discard, key)
    return True


def _caller_level() -> int:
    """The ``stacklevel`` (for a warning raised by this function's caller) of the first frame outside
    this package: the user's line that asked for the probabilities."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith("structperc"):
        frame, level = frame.f_back, level + 1
    return level


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
    explicit = np.zeros(n, dtype=bool)
    mask = np.ones((n, L), dtype=bool)
    projection = _projection(model)

    def labels_of(tags: Iterable[str], where: str) -> np.ndarray:
        tags = [tags] if isinstance(tags, str) else list(tags)
        out = np.zeros(L, dtype=bool)
        for tag in tags:
            if tag not in projection:
                raise InputError(f"{where}: tag {tag!r} is not one of this model's tags "
                                 f"({', '.join(sorted(projection)[:8])}{', …' if len(projection) > 8 else ''})")
            out[projection[tag]] = True
        return out

    for name, given in (("forced", forced), ("allowed", allowed)):
        if given is None:
            continue
        if len(given) != len(ptr) - 1:
            raise InputError(f"{name} has {len(given)} entries for {len(ptr) - 1} sentences")
        for s, positions in enumerate(given):
            size = int(ptr[s + 1] - ptr[s])
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
        tags, inverse = np.unique(values[rows].astype(str), return_inverse=True)
        table = np.array([labels_of(t, f"{corpus.source}: the known tags") for t in tags.tolist()],
                         dtype=bool).reshape(len(tags), L)
        mask[rows] &= table[inverse]
        explicit[rows] = True
    if tag_dictionary and model.tag_dictionary is not None:
        words, codes = corpus.factorize(model.task.token_column)  # each distinct word looked up once
        by_word = model.tag_dictionary.allowed(words, model.labels, codes)
        mask[~explicit] &= by_word[~explicit]
    elif not explicit.any():
        return None
    return mask


def best_ids(model: Model, corpus: Corpus, allowed: np.ndarray | None = None) -> np.ndarray:
    """Best label id of every token of ``corpus`` (ids into ``model.labels``); ``allowed`` (bool,
    (n_tokens, L)) restricts each token's labels, by default to the model's tag dictionary's."""
    if allowed is None and model.tag_dictionary is not None:
        allowed = constraint_mask(model, corpus)
    return decode(model, featurize(model, corpus), allowed)


def decode(model: Model, feats: Features, mask: np.ndarray | None) -> np.ndarray:
    """Best label id per token under ``mask``; a sentence the mask leaves no path through is refused
    (constraints are honoured exactly or not at all)."""
    ids = predict(model.weights, feats, allowed=mask)
    if mask is not None:
        stuck = no_path(ids, feats.sent_ptr)
        if len(stuck):
            more = f" (and {len(stuck) - 1} more)" if len(stuck) > 1 else ""
            raise InputError(f"sentence {int(stuck[0]) + 1}{more}: its forced or allowed tags (or the tag "
                             "dictionary) leave no tag sequence this model can produce")
    return ids


def projection_matrix(model: Model) -> tuple[list[str], np.ndarray]:
    """The data's tags (sorted) and the 0/1 matrix (L, D) summing model-label mass into them."""
    projection = _projection(model)
    tags = sorted(projection)
    M = np.zeros((len(model.labels), len(tags)))
    for j, tag in enumerate(tags):
        M[projection[tag], j] = 1.0
    return tags, M


def data_marginals(model: Model, feats: Features, mask: np.ndarray | None,
                   temperature: float | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Token marginals over the data's tags: (tags, probabilities (n_tokens, D), log Z per sentence)."""
    tau = confidence_temperature(model) if temperature is None else temperature
    probs, log_z = marginals(model.weights, feats, tau, allowed=mask)
    tags, M = projection_matrix(model)
    return tags, probs @ M, log_z


def _confidence(model: Model, probs: np.ndarray, ids: np.ndarray, sent_ptr: np.ndarray) \
        -> tuple[list[str], np.ndarray]:
    """The data tags of label ids ``ids`` and each one's probability under model-label marginals
    ``probs``."""
    tags, M = projection_matrix(model)
    predicted = data_tags(ids, sent_ptr, model.labels, model.task)
    return predicted, _at_tags(tags, probs @ M, predicted)


def _at_tags(tags: list[str], data_probs: np.ndarray, predicted: list[str]) -> np.ndarray:
    """Each token's probability of its ``predicted`` data tag, from data-tag marginals."""
    column = {t: j for j, t in enumerate(tags)}
    cols = np.fromiter((column.get(t, 0) for t in predicted), dtype=np.int64, count=len(predicted))
    return data_probs[np.arange(len(predicted)), cols]


def marginal_dicts(model: Model, corpus: Corpus, mask: np.ndarray | None = None) \
        -> list[list[dict[str, float]]]:
    """Per sentence, per token, {data tag: probability} (sklearn-crfsuite's ``predict_marginals``
    shape)."""
    tags, probs, _ = data_marginals(model, featurize(model, corpus), mask)
    rows = [dict(zip(tags, row)) for row in probs.tolist()]
    ptr = corpus.sent_ptr.tolist()
    return [rows[ptr[i]:ptr[i + 1]] for i in range(len(ptr) - 1)]


def token_confidence(model: Model, feats: Features, ids: np.ndarray, sent_ptr: np.ndarray,
               mask: np.ndarray | None = None, temperature: float | None = None) \
        -> tuple[list[str], np.ndarray]:
    """The data tags of label ids ``ids`` and each one's marginal probability."""
    tau = confidence_temperature(model) if temperature is None else temperature
    return _confidence(model, marginals(model.weights, feats, tau, allowed=mask)[0], ids, sent_ptr)


def path_probabilities(model: Model, feats: Features, ids: np.ndarray,
                       mask: np.ndarray | None = None) -> np.ndarray:
    """p(labels ``ids`` of each sentence) at the model's temperature (under ``mask``'s lattice)."""
    return np.exp(path_log_probs(model.weights, feats, ids, confidence_temperature(model), allowed=mask))


def k_best(model: Model, feats: Features, k: int, mask: np.ndarray | None = None) \
        -> list[list[tuple[list[str], float, float]]]:
    """Per sentence, up to ``k`` (data tags, score, probability) best first (fewer when the lattice
    has fewer paths). Ties keep Viterbi's order (`structperc.decode.nbest`)."""
    result = nbest(model.weights, feats, k, allowed=mask)
    tau = confidence_temperature(model)
    # p(path r) = p(best) · exp((s_r - s_best) / τ): the best path's probability exactly (float64),
    # the others by score differences, so no probability exceeds the best one's or 1 (the k-best
    # scores are float32 sums: exp(s_r / τ - log Z) drifted above 1 by 1e-4 on long sentences)
    best_log_p = path_log_probs(model.weights, feats, result.ids[0], tau, allowed=mask) \
        if len(result.ids) else np.zeros(0)
    ptr = feats.sent_ptr
    n_paths = (result.scores > -np.inf).sum(axis=1)  # the listed paths come first, -inf after
    # every listed path as a sentence of its own, converted to data tags in one call (a call per path
    # was 90 % of `structperc tag --nbest 20000` on a 28-token sentence)
    flat = [result.ids[:n_paths[s], ptr[s]:ptr[s + 1]].ravel() for s in range(len(ptr) - 1)]
    path_ptr = np.zeros(int(n_paths.sum()) + 1, dtype=np.int64)
    np.cumsum(np.repeat(np.diff(ptr), n_paths), out=path_ptr[1:])
    tags = data_tags(np.concatenate(flat) if flat else np.zeros(0, dtype=np.int32), path_ptr,
                     model.labels, model.task)
    scores = result.scores.tolist()
    with np.errstate(invalid="ignore"):  # -inf - -inf past a sentence's paths: never read
        probs = np.exp(best_log_p[:, None] + np.minimum((result.scores - result.scores[:, :1]) / tau, 0.0))
    bounds = path_ptr.tolist()
    out: list[list[tuple[list[str], float, float]]] = []
    i = 0
    for s, (n, p) in enumerate(zip(n_paths.tolist(), probs.tolist())):
        out.append([(tags[bounds[i + r]:bounds[i + r + 1]], scores[s][r], p[r]) for r in range(n)])
        i += n
    return out


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


def tag_corpus(model: Model, corpus: Corpus, *, confidence: bool = False, k: int = 0,
               known: Sequence[str | None] | None = None, unknown: str = "?",
               distributions: bool = False) -> Tagged:
    """Tag ``corpus`` under the model's tag dictionary and the ``known`` tags (flat, ``unknown`` =
    free); with ``confidence`` each tag's marginal probability, with ``distributions`` every tag's
    (one forward-backward pass for both), with ``k`` the k best paths."""
    feats = featurize(model, corpus)
    mask = constraint_mask(model, corpus, known=known, unknown=unknown)
    ids = decode(model, feats, mask)
    tags = data_tags(ids, corpus.sent_ptr, model.labels, model.task)
    out = Tagged(tags, nbest=k_best(model, feats, k, mask) if k else None)
    if confidence or distributions:
        names, M = projection_matrix(model)
        probs = marginals(model.weights, feats, confidence_temperature(model), allowed=mask)[0] @ M
        out.confidence = _at_tags(names, probs, tags) if confidence else None
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


# ---------------------------------------------------------------------------- documents and their window
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


# ---------------------------------------------------------------------------- files and streams
@dataclass(frozen=True)
class TaggingSetup:
    """How one input is read, tagged and written (`tagging_setup`)."""

    fmt: str            # its format, one of `structperc.io.formats.INPUT_FORMATS` (not ``auto``)
    out_fmt: str        # the output format
    layout: Layout      # the model's columns in it (`structperc.io.formats.Layout`)
    known: str | None   # the column of known tags, if any


def tagging_setup(model: Model, source: Any, input_format: str = "auto", output_format: str | None = None,
                  *, nbest: int = 0, forced_column: str | int | None = None) -> tuple[TaggingSetup, Any]:
    """The `TaggingSetup` of tagging ``source`` with ``model`` (the arguments of
    `structperc.commands.streaming.tag_files`), and the source to read (``auto`` on a stream gives one that
    gives back what was looked at). Refuses, before reading, what cannot work (`formats.check`)."""
    from structperc.io import formats
    from structperc.io.text import source_name

    task = model.task
    reads = columns_to_read(task, model.templates, gold=False, dictionary=model.dictionary)
    layout = formats.Layout.of(task.columns, task.tag_column, task.token_column, reads)
    fmt, source = formats.resolve(source, input_format, layout)
    known = formats.column_name(forced_column, fmt, layout) if forced_column is not None else None
    if known is not None and reads is not None:
        layout = formats.Layout.of(task.columns, task.tag_column, task.token_column, reads | {known})
    out_fmt = output_format or ("jsonl" if nbest else formats.default_output(fmt))
    formats.check(fmt, out_fmt, layout, source_name(source))
    return TaggingSetup(fmt, out_fmt, layout, known), source


def write_tagged(out: IO[str], model: Model, chunks: Iterable[Any], setup: TaggingSetup, *,
                 before: Corpus | None = None, after: Corpus | None = None, confidence: bool = False,
                 k: int = 0, unknown: str = "?") -> None:
    """Tag the ``chunks`` of one document (`structperc.io.formats.tagging_chunks`), each in its context
    (`in_context`; ``before`` and ``after`` the chunks), and write them as ``setup`` says, a chunk at
    a time."""
    from structperc.io.formats import write_chunk

    for left, chunk, right in in_context(chunks, document_window(model), before, after):
        tagged = tag_in_context(model, chunk.corpus, left, right, confidence=confidence, k=k,
                                known_column=setup.known, unknown=unknown)
        write_chunk(out, chunk, tagged.tags, setup.out_fmt, setup.layout, tagged.confidence, tagged.nbest)
        del tagged  # a chunk's results are gone while the next one is tagged


def _unknown(model: Model) -> str | None:
    return model.params.get("unknown_tag", "?")


def gold_ids(model: Model, corpus: Corpus) -> np.ndarray:
    """Gold label ids (model scheme) of a gold-tagged corpus; −1 for tags the model does not know
    and for unknown tags (partially labelled held-out data)."""
    ids = model.label_set.encode(model_tags(corpus, model.task), unknown=-1)
    hidden = hidden_tags(corpus, model.task, _unknown(model))
    if hidden is not None:
        ids[hidden] = -1
    return ids


def calibration_report(model: Model, corpus: Corpus, temperature: float | None = None, *,
                       feats: Features | None = None, mask: np.ndarray | None = None,
                       ids: np.ndarray | None = None) -> dict[str, Any]:
    """ECE (15 bins) and token NLL of the token confidence on gold-tagged ``corpus``, at
    ``temperature`` (default: the model's), under the lattice the model decodes with (its tag
    dictionary's mask); tokens with an unknown gold tag are left out. ``feats``, ``mask`` and the
    decoded ``ids`` may be given when already computed (they do not depend on the temperature)."""
    feats = featurize(model, corpus) if feats is None else feats
    mask = constraint_mask(model, corpus) if mask is None else mask
    ids = decode(model, feats, mask) if ids is None else ids
    tau = model.temperature if temperature is None else temperature
    probs = marginals(model.weights, feats, tau, allowed=mask)[0]  # once: confidences and NLL
    predicted, conf = _confidence(model, probs, ids, corpus.sent_ptr)
    gold = corpus.columns[model.task.tag_column]
    correct = np.fromiter((p == g for p, g in zip(predicted, gold)), dtype=bool, count=len(gold))
    hidden = hidden_tags(corpus, model.task, _unknown(model))
    if hidden is not None:  # unknown gold tags (partial labels) are neither right nor wrong
        conf, correct = conf[~hidden], correct[~hidden]
    return {"temperature": tau, "fitted": model.calibration is not None or temperature is not None,
            "ece": expected_calibration_error(conf, correct),
            "nll": nll_of(probs, gold_ids(model, corpus)),
            "confidence": conf, "correct": correct}


def calibrate(model: Model, corpus: Corpus) -> dict[str, Any]:
    """Fit the model's temperature on gold-tagged held-out ``corpus``; returns the calibration
    record `Model.calibration` stores (temperature, source, tokens, NLL and ECE before and after)."""
    if corpus.n_tokens == 0:
        raise InputError("no tokens to calibrate on", corpus.source)
    feats = featurize(model, corpus)
    mask = constraint_mask(model, corpus)
    tau = fit_temperature(model.weights, feats, gold_ids(model, corpus), mask)
    ids = decode(model, feats, mask)
    before = calibration_report(model, corpus, 1.0, feats=feats, mask=mask, ids=ids)
    after = calibration_report(model, corpus, tau, feats=feats, mask=mask, ids=ids)
    return {"temperature": tau, "source": corpus.source, "tokens": corpus.n_tokens,
            "nll": [before["nll"], after["nll"]], "ece": [before["ece"], after["ece"]]}
