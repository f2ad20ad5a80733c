"""`StructuredPerceptron`: sklearn-crfsuite's ``CRF`` interface on the averaged structured perceptron.

Users of sklearn-crfsuite (many of whom started from its CoNLL-2002 tutorial) have feature functions
that turn each token into a dict of attributes. This estimator takes those dicts unchanged: ``X`` is a
list of sequences, a sequence a list of items, an item a dict or a list of strings, read by
python-crfsuite's ``ItemSequence`` rules (`structperc.features.attributes`: ``{"k": "v"}`` is the
attribute ``k:v`` with value 1, ``{"k": 2.5}`` the attribute ``k`` with value 2.5 …). Labels are opaque
strings, as in sklearn-crfsuite, unless they follow a span scheme (below).

What matches sklearn-crfsuite (``sklearn_crfsuite/estimator.py``, version 0.5):

* ``fit(X, y, X_dev=None, y_dev=None)``, ``predict``, ``predict_single``, ``predict_marginals``,
  ``predict_marginals_single``, ``score`` (token accuracy), and the attributes ``classes_``,
  ``attributes_``, ``num_attributes_``, ``state_features_``, ``transition_features_``, ``size_``
  (None before fitting), keyed by the user's labels (below);
* the parameters ``algorithm`` (``"ap"`` only), ``max_iterations``, ``all_possible_states``,
  ``all_possible_transitions``, ``verbose``, ``model_filename``. CRF-only parameters (``c1``, ``c2``,
  ``num_memories`` …) raise a ``ValueError`` naming them;
* scikit-learn's conventions: ``get_params``/``set_params``, ``clone``, ``cross_val_score``
  (``n_jobs`` > 1 too: the estimator pickles) and ``GridSearchCV``.

What differs, and why:

* Span labels are learnt in IOBES (``scheme="auto"``, the default): labels that are all ``O``,
  ``B-X`` or ``I-X`` are read as IOB2, converted to IOBES per sequence before training
  (`structperc.labels.schemes.convert`), and predictions are converted back, so users see their own
  scheme. The extra E/S labels tell a first-order model where a span ends, which B/I alone cannot
  (the template tagger's default for span tasks, ``Task.encoding``: +0.2 F1 on CoNLL-2000; on
  sklearn-crfsuite's CoNLL-2002 tutorial features, esp.testb span F1 76.78 against 75.77 learning in
  IOB2). ``scheme="none"`` keeps labels opaque, as sklearn-crfsuite does.
* With ``X_dev``, the iterations are scored on it and the best one is kept (sklearn-crfsuite only
  logs its holdout scores), and (``calibrate``) the temperature of the marginals is fitted on it
  (`structperc.decode.calibration`): perceptron scores are not log-likelihoods, so τ = 1 marginals
  are over-confident.
* ``all_possible_states=None`` (the default) means every (attribute, label) pair, structperc's
  default (a perceptron learns negative evidence with them); ``False`` is CRFsuite's default, the
  pairs seen in training (`structperc.model.state_weights`).
* ``all_possible_transitions`` is accepted and changes nothing: structperc's transition weights are
  always the dense (L + 1) × L matrix (the last row the sentence start), so every transition can be
  learnt; ``transition_features_`` lists every label pair the model allows (all L × L unconstrained),
  zeros too, where CRFsuite lists its non-zero ones.
* The inspection attributes speak the user's labels, as sklearn-crfsuite's: ``state_features_``
  ``{(attribute, label): weight}`` and ``transition_features_`` ``{(label_from, label_to): weight}``
  are keyed by ``classes_`` (what eli5 and the tutorial's "top features" read). A model that learnt
  in IOBES from IOB2 labels says how its labels map back in ``label_map_`` (``B-X`` <- ``B-X``,
  ``S-X``; ``I-X`` <- ``I-X``, ``E-X``; ``O`` <- ``O``), and a label's weight is the largest of its
  learnt labels' (what the label gets when the decoder takes the variant the attribute favours
  most; a learnt label with no stored weight counts 0). The weights the decoder adds, keyed by the
  learnt labels, are ``learnt_state_features_``, ``learnt_transition_features_`` over
  ``learnt_classes_``; labels learnt as given make both views equal. ``attributes_`` lists the
  attributes with a non-zero weight, which is sklearn-crfsuite's rule too (CRFsuite's model drops
  the attributes whose features all have weight 0; with ``algorithm="ap"`` that is many of those
  seen in training).
* `structperc.sklearn.metrics` holds ``sklearn_crfsuite.metrics``'s functions (the ``flat_*`` scores
  and report, ``sequence_accuracy_score``), computed by scikit-learn.
* Pickles hold the model as its archive bytes (`structperc.model.schema.to_bytes`: ``.npy`` arrays and
  JSON, no pickled arrays); ``model_filename`` is a structperc model directory (or ``.zip`` file), not a
  CRFsuite file.
"""
from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
from sklearn.base import BaseEstimator

from structperc.errors import InputError
from structperc.features.attributes import AttributeIndex
from structperc.features.index import Features
from structperc.features.task import Task
from structperc.model import schema
from structperc.model.archive import archive_path, check_target
from structperc.train.attribute_data import (
    attribute_task,
    converts,
    data_tags_of,
    detect_scheme,
    flat_tags,
    model_tags,
    split,
    train_attributes,
)
from structperc.train.options import SKLEARN, SKLEARN_ENCODINGS, validate

__all__ = ["CRF_ONLY", "DEFAULT_ITERATIONS", "ENCODINGS", "StructuredPerceptron", "detect_scheme"]

#: sklearn-crfsuite ``CRF`` parameters with no meaning for the averaged perceptron (CRF training
#: algorithms' settings, CRFsuite's feature cut-off, sklearn-crfsuite's file and trainer plumbing).
CRF_ONLY = ("min_freq", "c1", "c2", "num_memories", "epsilon", "period", "delta", "linesearch",
            "max_linesearch", "calibration_eta", "calibration_rate", "calibration_samples",
            "calibration_candidates", "calibration_max_trials", "pa_type", "c", "error_sensitive",
            "averaging", "variance", "gamma", "keep_tempfiles", "trainer_cls")
#: The CRF-only parameters whose sklearn-crfsuite default is not None (``CRF().get_params()`` gives them): that
#: value is accepted as no setting, as None is for the others.
CRF_DEFAULTS = {"keep_tempfiles": False}
#: Iterations when ``max_iterations`` is None (structperc's default epochs; CRFsuite's ``ap``: 100).
DEFAULT_ITERATIONS = 10
#: The values of ``encoding`` (None: IOBES for span labels, else the labels' own scheme).
ENCODINGS = SKLEARN_ENCODINGS


class StructuredPerceptron(BaseEstimator):
    """Averaged structured perceptron sequence tagger with sklearn-crfsuite's ``CRF`` interface.

    Parameters
    ----------
    algorithm : {"ap"} or None
        The training algorithm: the averaged perceptron (Collins 2002), CRFsuite's ``"ap"``. Any
        other value (``"lbfgs"`` …) raises ``ValueError``.
    max_iterations : int, optional
        Passes over the training data (default `DEFAULT_ITERATIONS`).
    all_possible_states : bool, optional
        True or None: a state weight for every (attribute, label) pair; False: only the pairs seen
        in training (CRFsuite's ``feature.possible_states=0``).
    all_possible_transitions : bool, optional
        Accepted for compatibility; transitions are always all (L + 1) × L.
    verbose : bool
        Print one line per iteration (mistakes, dev score, speed) to standard output.
    model_filename : str or path, optional
        Where ``fit`` saves the model (a structperc model directory, or a ``.zip`` path). An
        estimator given only the path of an existing model loads it on first use.
    random_state : int, RandomState or None
        Seed of the order of the training sentences in every iteration (None: 0, deterministic).
    scheme : {"auto", "none", "iob1", "iob2", "iobes", "bmes"}
        The tag scheme of the labels ("none": opaque strings). "auto" (the default): "iob2" when
        every training label is ``O``, ``B-X`` or ``I-X`` (and one at least is not ``O``), else
        "none". A span scheme also scores ``X_dev`` by span F1 instead of token accuracy.
    encoding : {"iobes", "iob2"} or None
        The span scheme the model learns in (labels are converted per sequence before training and
        back after decoding); None: "iobes" for span labels (see above), else the labels' own scheme.
    constrained : bool, optional
        Forbid the transitions the model's scheme forbids (``I-X`` after ``O`` in IOB2 …) when
        training and decoding; None: whenever the (resolved) scheme is not "none". Training labels
        are checked against the model's scheme after conversion: an IOB2 ``I-X`` after ``O`` reads
        as a span's start (conlleval's rule), so it is accepted when the model learns in IOBES.
    calibrate : bool
        Fit the temperature of ``predict_marginals`` on ``X_dev`` (when given).
    **crf_params
        sklearn-crfsuite's CRF-only parameters (`CRF_ONLY`) are refused with a ``ValueError`` naming
        them unless at their default there (None; ``keep_tempfiles=False``, `CRF_DEFAULTS`), so
        ``StructuredPerceptron(**CRF(algorithm="ap").get_params())`` works.

    Examples
    --------
    >>> X = [[{"w": "Juan"}, {"w": "vive"}], [{"w": "Ana"}]]
    >>> y = [["B-PER", "O"], ["B-PER"]]
    >>> sp = StructuredPerceptron(max_iterations=5).fit(X, y)
    >>> sp.predict_single([{"w": "Ana"}, {"w": "vive"}])
    ['B-PER', 'O']
    >>> sp.classes_, sp.score(X, y)
    (['B-PER', 'O'], 1.0)
    """

    def __init__(self, algorithm: str | None = "ap", max_iterations: int | None = None,
                 all_possible_states: bool | None = None, all_possible_transitions: bool | None = None,
                 verbose: bool = False, model_filename: str | os.PathLike | None = None,
                 random_state: Any = 0, scheme: str = "auto", encoding: str | None = None,
                 constrained: bool | None = None, calibrate: bool = True, **crf_params: Any):
        refused = sorted(k for k, v in crf_params.items() if k in CRF_ONLY and v is not None
                         and not (k in CRF_DEFAULTS and v is CRF_DEFAULTS[k]))
        unknown = sorted(k for k in crf_params if k not in CRF_ONLY)
        if unknown:
            raise TypeError(f"StructuredPerceptron got unexpected keyword argument(s) {', '.join(unknown)}")
        if refused:
            raise ValueError(f"CRF-only parameter(s) {', '.join(refused)} have no meaning for the "
                             "averaged perceptron (StructuredPerceptron has no regularization, line "
                             "search or feature cut-off): remove them")
        self.algorithm = algorithm
        self.max_iterations = max_iterations
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.verbose = verbose
        self.model_filename = model_filename
        self.random_state = random_state
        self.scheme = scheme
        self.encoding = encoding
        self.constrained = constrained
        self.calibrate = calibrate

    # ------------------------------------------------------------------------- parameters
    def _options(self) -> dict[str, Any]:
        """The parameters, checked by `structperc.train.options` (the same rules and messages as the
        other faces': ``max_iterations`` is their ``epochs``, ``random_state`` their ``seed``)."""
        iterations = DEFAULT_ITERATIONS if self.max_iterations is None else self.max_iterations
        seed = self.random_state
        if seed is None:
            seed = 0
        elif hasattr(seed, "randint"):  # a numpy RandomState: a seed drawn from it
            seed = int(seed.randint(2 ** 31 - 1))
        validate({"algorithm": self.algorithm, "max_iterations": iterations, "random_state": seed,
                  "all_possible_states": self.all_possible_states,
                  "all_possible_transitions": self.all_possible_transitions, "constrained": self.constrained,
                  "scheme": self.scheme, "encoding": self.encoding}, face=SKLEARN)
        return {"iterations": int(iterations), "seed": int(seed),
                "feature_set": "observed" if self.all_possible_states is False else "all"}

    def _task(self, tags: list[str], iterations: int) -> Task:
        """The task of a fit on the flat training labels ``tags`` (`attribute_task`)."""
        return attribute_task(tags, iterations, self.scheme, self.encoding, self.constrained)

    # ------------------------------------------------------------------------------ fitting
    def fit(self, X: Sequence[Any], y: Sequence[Sequence[str]], X_dev: Sequence[Any] | None = None,
            y_dev: Sequence[Sequence[str]] | None = None) -> "StructuredPerceptron":
        """Train on feature-dict sequences ``X`` and their label sequences ``y``.

        With ``X_dev`` and ``y_dev`` the iteration with the best dev score (token accuracy, or span
        F1 with a span ``scheme``, on the labels as given) is kept, and the marginals' temperature is
        fitted on them. Span labels are converted to the model's scheme (``encoding``) per sequence.
        """
        if (X_dev is None) != (y_dev is None):
            raise ValueError("Pass both X_dev and y_dev to use the holdout data")
        opts = self._options()
        if self.model_filename is not None:  # before training: a run must not fail after its last iteration
            check_target(self.model_filename)
        self.__dict__.pop("_model", None)
        self.__dict__.pop("_size", None)
        index = AttributeIndex()
        feats = index.fit_transform(X)
        data = flat_tags(y, feats.sent_ptr, "y")
        if not len(data):
            raise InputError("no training tokens: nothing to train on")
        task = self._task(data, opts["iterations"])
        tags = model_tags(data, feats.sent_ptr, "y", task)
        del data
        run = train_attributes(index, feats, tags, task, opts, None if X_dev is None else (X_dev, y_dev),
                               self.verbose, self.calibrate)
        weights, labels, best = run["weights"], run["labels"], run["best"]
        from structperc.train.run import training_provenance

        provenance = training_provenance(opts["iterations"], best, opts["seed"], run["best_score"],
                                         n_sentences=len(feats.sent_ptr) - 1, n_tokens=int(feats.sent_ptr[-1]),
                                         estimator="structperc.sklearn.StructuredPerceptron")
        model = schema.Model(task, labels, [], index, weights, params=self._json_params(),
                             provenance=provenance, calibration=run["calibration"])
        if self.model_filename is not None:
            schema.write(self.model_filename, model)
        self._model = model
        self.best_iteration_ = best
        self.history_ = run["history"]
        return self

    def _json_params(self) -> dict[str, Any]:
        params = self.get_params()
        if params["model_filename"] is not None:
            params["model_filename"] = os.fspath(params["model_filename"])
        if not isinstance(params["random_state"], (int, type(None))):
            params["random_state"] = repr(params["random_state"])
        return params

    # ---------------------------------------------------------------------------- the model
    def _current(self) -> schema.Model | None:
        """The fitted model; an unfitted estimator with an existing ``model_filename`` loads it."""
        model = self.__dict__.get("_model")
        if model is None and self.model_filename is not None \
                and archive_path(self.model_filename).exists():
            model = schema.read(self.model_filename)
            if not model.attribute_model:
                raise InputError(f"{self.model_filename}: a template model (structperc.Tagger), not "
                                 "one of StructuredPerceptron: load it with structperc.Tagger.load",
                                 os.fspath(self.model_filename))
            self._model = model
        return model

    def _fitted(self) -> schema.Model:
        model = self._current()
        if model is None:
            from sklearn.exceptions import NotFittedError

            if self.model_filename is not None:  # sklearn_crfsuite's CRF loads its file; this one is not there
                raise NotFittedError(f"This StructuredPerceptron is not fitted yet and its model_filename "
                                     f"{os.fspath(self.model_filename)!r} holds no saved model: call fit, or give "
                                     "the path of a saved model")
            raise NotFittedError("This StructuredPerceptron is not fitted yet: call fit, or give "
                                 "model_filename of a saved model")
        return model

    def __sklearn_is_fitted__(self) -> bool:
        """For `sklearn.utils.validation.check_is_fitted`: fitted, or a saved model to load."""
        return self._current() is not None

    @property
    def model_(self) -> schema.Model | None:
        """The `structperc.model.schema.Model` (None before fitting)."""
        return self._current()

    # --------------------------------------------------------------------------- prediction
    def _features(self, X: Any) -> tuple[schema.Model, Features]:
        model = self._fitted()
        if isinstance(X, (str, bytes)) or not hasattr(X, "__iter__"):
            raise InputError(f"X must be a list of sequences of items, not {type(X).__name__}")
        return model, model.features.transform(X)

    def predict(self, X: Sequence[Any]) -> np.ndarray:
        """Label sequences of ``X``: a 1-D object array of lists of labels (sklearn-crfsuite's type)."""
        model, feats = self._features(X)
        from structperc.decode.decoder import predict

        ids = predict(model.weights, feats)
        return split(data_tags_of(ids, feats.sent_ptr, model), feats.sent_ptr)

    def predict_single(self, xseq: Sequence[Any]) -> list[str]:
        """Labels of one sequence of items."""
        return self.predict([xseq])[0]

    def predict_marginals(self, X: Sequence[Any]) -> np.ndarray:
        """p(label at each position) of every sequence: an object array of lists of dicts
        ``{label: probability}`` over `classes_` (at the model's calibrated temperature). A model
        learnt in another scheme sums its labels' probabilities into the data's (IOBES ``B-X`` and
        ``S-X`` into IOB2 ``B-X`` …, `structperc.labels.partial.label_projection`)."""
        model, feats = self._features(X)
        from structperc.decode.marginals import marginals
        from structperc.predict import confidence_temperature

        probs = marginals(model.weights, feats, confidence_temperature(model))[0]  # says if uncalibrated
        if converts(model.task):
            from structperc.predict import projection_matrix

            labels, M = projection_matrix(model)
            probs = probs @ M
        else:
            labels = model.labels
        rows = [dict(zip(labels, row)) for row in probs.tolist()]
        return split(rows, feats.sent_ptr)

    def predict_marginals_single(self, xseq: Sequence[Any]) -> list[dict[str, float]]:
        """`predict_marginals` of one sequence."""
        return self.predict_marginals([xseq])[0]

    def score(self, X: Sequence[Any], y: Sequence[Sequence[str]]) -> float:
        """Token accuracy of the predictions of ``X`` against ``y`` (sklearn-crfsuite's score)."""
        pred = self.predict(X)
        gold = [list(s) for s in y]
        if len(gold) != len(pred) or any(len(g) != len(p) for g, p in zip(gold, pred)):
            raise ValueError("y does not match X: the numbers of sequences or of tokens differ")
        total = sum(map(len, gold))
        correct = sum(a == b for g, p in zip(gold, pred) for a, b in zip(g, p))
        return correct / total if total else 0.0

    # --------------------------------------------------------------------------- inspection
    def _projection(self, model: schema.Model) -> dict[str, np.ndarray]:
        """Every label of `classes_` and the ids of the learnt labels (``model_.labels``) that read as
        it (`structperc.labels.partial.label_projection`; the identity when nothing is converted)."""
        if converts(model.task):
            from structperc.labels.partial import label_projection

            projection = label_projection(model.labels, model.task.model_scheme, model.task.scheme)
            return {tag: projection[tag] for tag in sorted(projection)}
        return {lab: np.array([i], dtype=np.int64) for i, lab in enumerate(model.labels)}

    @property
    def classes_(self) -> list[str] | None:
        """The labels in the data's scheme (sorted), or None before fitting: those `predict` can
        return, `predict_marginals`, `state_features_` and `transition_features_` key (the model's
        own labels are `learnt_classes_`)."""
        model = self._current()
        return None if model is None else list(self._projection(model))

    @property
    def learnt_classes_(self) -> list[str] | None:
        """The labels the model learnt and scores (``model_.labels``): IOBES when IOB2 labels were
        learnt in IOBES, else `classes_`."""
        model = self._current()
        return None if model is None else list(model.labels)

    @property
    def label_map_(self) -> dict[str, list[str]] | None:
        """How the learnt labels map back: ``{label of classes_: [learnt labels that read as it]}``.
        IOB2 data learnt in IOBES: ``B-X`` <- [``B-X``, ``S-X``], ``I-X`` <- [``E-X``, ``I-X``],
        ``O`` <- [``O``]; IOB1 data: ``I-X`` <- every learnt label of type X (an IOB1 ``I-X`` may begin
        a span). Labels learnt as given: ``{label: [label]}``."""
        model = self._current()
        if model is None:
            return None
        return {tag: [model.labels[i] for i in ids.tolist()] for tag, ids in self._projection(model).items()}

    @property
    def attributes_(self) -> list[str] | None:
        """The attributes with a non-zero weight, by id: sklearn-crfsuite's rule (CRFsuite's model,
        which its ``attributes_`` lists, keeps only the attributes of non-zero features; an attribute
        seen in training whose weights all stayed 0 is in neither). Every attribute of
        `state_features_` and `learnt_state_features_` is here."""
        model = self._current()
        return None if model is None else list(model.features.names)  # type: ignore[union-attr]

    @property
    def num_attributes_(self) -> int | None:
        """The number of `attributes_`."""
        model = self._current()
        return None if model is None else model.features.n_state_attributes

    @property
    def learnt_state_features_(self) -> dict[tuple[str, str], float] | None:
        """``{(attribute, learnt label): weight}`` of every non-zero state weight, over
        `learnt_classes_`: the weights the decoder adds (`state_features_` when nothing is converted)."""
        model = self._current()
        if model is None:
            return None
        sw = model.weights.sparse
        nz = sw.values != 0
        names, labels = model.features.names, model.labels  # type: ignore[union-attr]
        return {(names[a], labels[b]): v for a, b, v in
                zip(sw.rows()[nz].tolist(), sw.labels[nz].tolist(), sw.values[nz].tolist())}

    @property
    def state_features_(self) -> dict[tuple[str, str], float] | None:
        """``{(attribute, label): weight}`` over `classes_`, the non-zero ones.

        The weight of a label is the largest weight of the learnt labels that read as it (`label_map_`;
        a learnt label without a stored weight counts 0): ``(a, "B-NP")`` is the larger of
        ``(a, "B-NP")`` and ``(a, "S-NP")`` of a model learnt in IOBES. That is what the label gets
        from the attribute when the decoder, which maximizes over learnt labels, takes the variant the
        attribute favours most: a positive weight says the attribute argues for the label in one of
        its forms, a negative one that it argues against it in all of them. Sums would count one
        token's evidence twice. The exact weights are `learnt_state_features_`; when the labels are
        learnt as given, the two are equal."""
        model = self._current()
        if model is None:
            return None
        projection = self._projection(model)
        sw = model.weights.sparse
        nz = sw.values != 0
        rows, labs, vals = sw.rows()[nz], sw.labels[nz].astype(np.int64), sw.values[nz]
        # the learnt label -> label pairs, and each entry once per label it reads as
        learnt = np.concatenate([ids for ids in projection.values()]).astype(np.int64)
        target = np.repeat(np.arange(len(projection), dtype=np.int64), [len(ids) for ids in projection.values()])
        order = np.argsort(learnt, kind="stable")
        learnt, target = learnt[order], target[order]
        lo = np.searchsorted(learnt, labs, side="left")
        counts = np.searchsorted(learnt, labs, side="right") - lo
        pick = np.repeat(np.arange(len(labs)), counts) if len(labs) else np.zeros(0, np.int64)
        offset = np.arange(len(pick)) - np.repeat(np.cumsum(counts) - counts, counts)
        tags = target[np.repeat(lo, counts) + offset]
        n_tags = len(projection)
        keys = rows[pick] * n_tags + tags
        weights = vals[pick].astype(np.float64)
        order = np.lexsort((weights, keys))  # by key, the largest weight last
        keys, weights = keys[order], weights[order]
        last = np.r_[keys[1:] != keys[:-1], True] if len(keys) else np.zeros(0, bool)
        first = np.r_[True, keys[1:] != keys[:-1]] if len(keys) else np.zeros(0, bool)
        stored = np.diff(np.r_[np.flatnonzero(first), len(keys)])
        keys, best = keys[last], weights[last]
        sizes = np.array([len(ids) for ids in projection.values()], dtype=np.int64)
        best = np.where(stored < sizes[keys % n_tags], np.maximum(best, 0.0), best)  # a missing one is 0
        names, tags_of = model.features.names, list(projection)  # type: ignore[union-attr]
        keep = best != 0
        vals32 = best[keep].astype(np.float32).tolist()  # the stored float32 values, as floats
        return {(names[k // n_tags], tags_of[k % n_tags]): v for k, v in zip(keys[keep].tolist(), vals32)}

    @property
    def learnt_transition_features_(self) -> dict[tuple[str, str], float] | None:
        """``{(learnt label from, learnt label to): weight}`` of every pair of `learnt_classes_` the
        model allows (the pairs its scheme forbids, when ``constrained``, are left out; the
        sentence-start row, which CRFsuite does not have, is too)."""
        model = self._current()
        if model is None:
            return None
        return self._transitions(model, {lab: np.array([i]) for i, lab in enumerate(model.labels)})

    @property
    def transition_features_(self) -> dict[tuple[str, str], float] | None:
        """``{(label_from, label_to): weight}`` over `classes_`: every pair some allowed pair of their
        learnt labels (`label_map_`) stands for, weighted by the largest of those (the rule of
        `state_features_`). A pair the scheme forbids in every learnt form (IOB2 ``O`` -> ``I-X``
        when ``constrained``) is left out; unconstrained, all ``len(classes_) ** 2`` pairs are listed,
        zeros too. The weights the decoder adds are `learnt_transition_features_`."""
        model = self._current()
        if model is None:
            return None
        return self._transitions(model, self._projection(model))

    @staticmethod
    def _transitions(model: schema.Model, projection: dict[str, np.ndarray]) -> dict[tuple[str, str], float]:
        L = len(model.labels)
        w = model.weights
        allowed = np.asarray(w.mask)[:L] == 0
        scores = np.where(allowed, np.asarray(w.trans, dtype=np.float64)[:L], -np.inf)
        tags = list(projection)
        rows = np.stack([scores[projection[t]].max(axis=0) for t in tags])          # (D, L)
        best = np.stack([rows[:, projection[t]].max(axis=1) for t in tags], axis=1)  # (D, D)
        ok = np.isfinite(best).tolist()
        vals = best.astype(np.float32).tolist()
        return {(a, b): vals[i][j] for i, a in enumerate(tags) for j, b in enumerate(tags) if ok[i][j]}

    @property
    def size_(self) -> int | None:
        """Bytes of the model archive."""
        model = self._current()
        if model is None:
            return None
        if "_size" not in self.__dict__:
            self._size = len(schema.to_bytes(model))
        return self._size

    @property
    def temperature_(self) -> float | None:
        """τ of the marginals (fitted on ``X_dev`` with ``calibrate``; else 1)."""
        model = self._current()
        return None if model is None else model.temperature

    # ------------------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict:
        """The parameters and the model as its archive bytes (arrays as ``.npy``, never pickled)."""
        parent = getattr(super(), "__getstate__", None)
        state = dict(parent() if parent is not None else self.__dict__)
        state.pop("_size", None)
        model = state.pop("_model", None)
        if model is not None:
            state["_model_archive"] = schema.to_bytes(model)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        archive = state.pop("_model_archive", None)
        parent = getattr(super(), "__setstate__", None)
        if parent is not None:
            parent(state)
        else:
            self.__dict__.update(state)
        if archive is not None:
            self._model = schema.from_bytes(archive)
