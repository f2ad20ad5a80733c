"""The temperature of a model's probabilities: read once per face, fitted on held-out gold data.

The perceptron is not trained for likelihood, so its exponentiated scores are over-confident; a
single temperature τ (p(y) ∝ exp(score(y) / τ)) fitted on held-out data by minimizing the negative
log-likelihood of the gold labels fixes most of that (temperature scaling: Guo, Pleiss, Sun &
Weinberger 2017, "On calibration of modern neural networks", ICML; the fit is
`structperc.decode.calibration`). `calibrate` fits it and reports the expected calibration error of
the token confidence before and after; `calibration_report` scores a given temperature. Every face
that hands probabilities to a user (``structperc tag --marginals/--nbest``, `Tagger.predict_marginals`
and the rest, the spaCy component, the HTTP service) reads the temperature through
`confidence_temperature`, which says once per model that an uncalibrated one is over-confident.
"""
from __future__ import annotations

import sys
import threading
import warnings
import weakref
from typing import Any

import numpy as np

from structperc.decode.calibration import fit_temperature, nll_of
from structperc.decode.marginals import marginals
from structperc.errors import InputError, UncalibratedWarning
from structperc.features.index import Features
from structperc.features.instances import hidden_tags, model_tags
from structperc.io.corpus import Corpus
from structperc.metrics import expected_calibration_error
from structperc.model.schema import Model
from structperc.predict.decoding import confidence_of, constraint_mask, decode, featurize

#: What an uncalibrated model's probabilities come with (once per model; ``{task}``: its task's name).
UNCALIBRATED = ("this {task} model is not calibrated (temperature 1, not fitted): its probabilities are "
                "over-confident; {how}")
#: How to fit the temperature, by the face a model comes from: `structperc.sklearn` models (task ``sklearn``)
#: are fitted with held-out data, not by `structperc calibrate`, which reads columns.
CALIBRATE_HOW = {"sklearn": "fit the temperature on held-out gold data: StructuredPerceptron(...).fit(X, y, "
                            "X_dev=..., y_dev=...)"}
CALIBRATE_DEFAULT = ("fit the temperature on held-out gold data with 'structperc calibrate --model DIR FILE' (or "
                     "train with --dev; in Python Tagger.calibrate)")
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
        how = CALIBRATE_HOW.get(model.task.name, CALIBRATE_DEFAULT)
        warnings.warn(UNCALIBRATED.format(task=model.task.name, how=how), UncalibratedWarning,
                      stacklevel=_caller_level())
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


def gold_ids(model: Model, corpus: Corpus) -> np.ndarray:
    """Gold label ids (model scheme) of a gold-tagged corpus; −1 for tags the model does not know
    and for unknown tags (partially labelled held-out data). A model learning in another scheme than its data's
    (IOBES for IOB2) reads a token's label off its neighbours' tags too (``B-X`` is ``S-X`` when no ``I-X``
    follows; an ``I-X`` after an unknown tag may start a span): beside an unknown tag that label is unknown as
    well, and −1 (converted across the unknown tag, it made a known ``B-X`` an ``S-X``: the temperature fitted
    on 30 % hidden chunk tags was 14.1 against 7.6 on the same file fully tagged)."""
    ids = model.label_set.encode(model_tags(corpus, model.task), unknown=-1)
    hidden = hidden_tags(corpus, model.task, model.unknown_tag)
    if hidden is not None:
        ids[hidden] = -1
        if model.task.model_scheme != model.task.scheme:
            ids[:-1][hidden[1:]] = -1
            ids[1:][hidden[:-1]] = -1
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
    predicted, conf = confidence_of(model, probs, ids, corpus.sent_ptr)
    gold = corpus.columns[model.task.tag_column]
    correct = np.fromiter((p == g for p, g in zip(predicted, gold)), dtype=bool, count=len(gold))
    hidden = hidden_tags(corpus, model.task, model.unknown_tag)
    if hidden is not None:  # unknown gold tags (partial labels) are neither right nor wrong
        conf, correct = conf[~hidden], correct[~hidden]
    return {"temperature": tau, "fitted": model.calibration is not None or temperature is not None,
            "ece": expected_calibration_error(conf, correct),
            "nll": nll_of(probs, gold_ids(model, corpus)),
            "confidence": conf, "correct": correct}


def calibrate(model: Model, corpus: Corpus) -> dict[str, Any]:
    """Fit the model's temperature on gold-tagged held-out ``corpus`` (Guo et al. 2017); returns the
    calibration record `Model.calibration` stores (temperature, source, tokens, NLL and ECE before
    and after)."""
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
