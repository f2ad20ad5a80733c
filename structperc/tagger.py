"""`Tagger`: the estimator face of the package — parameters, fit/partial_fit/predict/evaluate/save/load,
each delegating to the rooms below (`structperc.io.inputs`, `structperc.train.run`, `structperc.features.instances`,
`structperc.model.schema`)."""
from __future__ import annotations

import dataclasses
import inspect
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from structperc import predict
from structperc.errors import InputError
from structperc.features.dictionary import ColumnDictionary, DictionaryLearner, jackknifed
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.instances import (
    check_known_tags,
    columns_to_read,
    split_tags,
    template_columns,
    with_dictionary,
)
from structperc.features.resources.language import language_dictionaries, tagger_kinds
from structperc.features.stacking import STAGE_LINES, reads_stage_column
from structperc.features.task import Task
from structperc.features.templates import language_lines, resolve_template
from structperc.io.corpus import Corpus
from structperc.io.inputs import to_corpus
from structperc.io.lists import token_columns
from structperc.labels import LabelSet
from structperc.model import schema
from structperc.predict.assessment import Assessment
from structperc.train import config as params
from structperc.train import run as fitting
from structperc.train.run import Callback, Progress

if TYPE_CHECKING:  # the type of a subclass's fitted estimator: Segmenter.train(...) is a Segmenter
    from typing_extensions import Self


def _held(name: str, doc: str) -> Any:
    """A fitted attribute that is the field ``name`` of the estimator's held `Model`."""
    def get(self: Any) -> Any:
        held = self.__dict__.get("_model")
        if held is None:
            raise AttributeError(f"{type(self).__name__} is not trained yet: call fit() or load()")
        return getattr(held, name)

    def put(self: Any, value: Any) -> None:
        self._check_fitted()
        setattr(self._model, name, value)
    return property(get, put, doc=doc)


_PARAM_NAMES: dict[type, list[str]] = {}


class TaggedToken(NamedTuple):
    """A token of raw text (`Tagger.tag_texts`): its text, its character offsets in the document
    (``document[start:end] == text``) and its tag."""

    text: str
    start: int
    end: int
    tag: str


def _param_names(cls: type) -> list[str]:
    """A class's constructor parameters (read once per class: `predict` asks on every call)."""
    names = _PARAM_NAMES.get(cls)
    if names is None:
        names = []
        for klass in cls.__mro__:  # a constructor passing **params on takes its base's parameters too
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            params = list(inspect.signature(init).parameters.values())
            names += [p.name for p in params if p.name != "self" and p.name not in names
                      and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
            if not any(p.kind is p.VAR_KEYWORD for p in params):
                break
        _PARAM_NAMES[cls] = names
    return list(names)


class Tagger(Assessment):
    """A sequence tagger trained with the averaged structured perceptron (Collins 2002).

    Parameters (keyword-only, stored as given; checked when fitting)
    ----------------------------------------------------------------
    task : {"chunk", "ner", "pos", "cws"}
        Preset for columns, template, label scheme and metric; every other parameter overrides it.
    template : str or list of str, optional
        A preset name (``"crfsuite"``, ``"chunk"``, …), a template file, or template lines.
    columns, tag_column : optional
        CoNLL column names, left to right (``_`` skips one); the one to predict (default: the last).
    scheme, encoding, constrained : optional
        The data's tag scheme; the span scheme the model learns in (span tasks: IOBES); forbid
        transitions the scheme does not allow, in training and decoding.
    epochs, min_count, seed : int
        Passes; drop rarer attributes; the seed of the shuffling and dictionary folds.
    dev_split, refit
        Hold out this fraction of the training data to pick the epochs, then retrain on all of it.
    feature_set : {"all", "observed"}
        A state weight for every (attribute, label) pair, or (as CRFsuite) for the pairs seen.
    folds, unknown_tag, tag_dictionary
        Jackknife folds of learnt dictionaries (`structperc.features.dictionary`); a training tag that
        means "unknown" (partial labels; ``None`` in tag lists too); decode each frequent word only
        among its training tags (POS).
    step, margin, C
        The update: ``"perceptron"`` (a step of 1) or ``"pa"`` (passive-aggressive, at most ``C``), after
        decoding with ``margin`` added per wrong tag (`structperc.train.perceptron.train_perceptron`).
    order : {1, 2}
        2 adds second-order transitions (y_{t-2}, y_{t-1}, y_t), decoded by a Viterbi over label pairs
        (`structperc.train.order2`): opt-in (esp.testa +0.4 F1, epochs ×2); no marginals, k-best, calibration.
    two_stage : bool
        Train a first-stage tagger too, and read, as the column ``tmd``, the majority type it predicts
        for the other occurrences of each word within 20 sentences (Krishnan & Manning 2006;
        `structperc.features.stacking`): opt-in for NER (esp.testa +0.65 F1, ned.testa +0.46), training
        ×1.7–1.8, tagging ×1.2–1.4; not continued (`partial_fit`) or checkpointed. The first stage's
        epochs reach ``fit``'s ``callback`` too, with ``stage=1``.
    lang : str, optional
        A language whose Brown clusters (``"en"``, ``"es"``, ``"de"``: spaCy's, from the
        ``spacy-lookups-data`` package) become the ``clu*`` columns, with the cluster templates the
        task's preset adds for them (`structperc.features.templates.LANGUAGE_LINES`; a template file or
        list reads the columns itself). The model carries every word the clusters place, so tagging
        needs no extra package. A language without clusters is refused.
    vote : sequence of str, optional
        Span tasks: the encodings (``"iob2"``, ``"iob1"``, ``"iobes"``; not the tagger's own ``encoding``) of
        more members, each trained like this tagger on the same data for as many epochs; tagging keeps the spans
        most members predict (Kudo & Matsumoto 2001; Shen & Sarkar 2005; `structperc.labels.voting`). Opt-in:
        esp.testa +0.65 F1 over the IOBES tagger alone with ``vote=("iob2", "iob1")`` (3 seeds), for twice
        the training time, tagging time and model size; no forced or allowed tags,
        k best paths or `explain`; probabilities are the first member's.

    Attributes
    ----------
    labels_, features_, weights_, dictionary_, best_epoch_, history_
        Labels (sorted), `FeatureIndex`, `Weights`, learnt dictionary, chosen epoch, `EpochReport` s.
    calibration_, tag_dictionary_
        The fitted temperature's record (or None), the decoding `TagDictionary` (or None).
    stage1_
        A two-stage tagger's first-stage `~structperc.model.schema.Model` (None for one stage).

    Scores (`evaluate`, `score`) and inference beyond the best path (`predict_marginals`, `predict_nbest`,
    `predict_proba_sequence`, `calibrate`): `structperc.predict.assessment.Assessment`; constraints:
    `structperc.predict.decoding`.

    References
    ----------
    M. Collins. Discriminative training methods for hidden Markov models: theory and experiments
    with perceptron algorithms. EMNLP 2002.

    Examples
    --------
    >>> tagger = Tagger.train([["the", "cat", "sat"], ["a", "dog", "ran"]],
    ...                       [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"]],
    ...                       columns=["word", "chunk"], template=["w[0]", "w[-1]"], epochs=3)
    >>> tagger.tag(["the", "dog", "sat"])
    ['B-NP', 'I-NP', 'B-VP']
    """

    dictionary_: ColumnDictionary | None
    best_epoch_: int | None

    def __init__(self, *, task: str = "chunk", template: str | Sequence[str] | None = None,
                 columns: Sequence[str] | None = None, tag_column: str | None = None,
                 scheme: str | None = None, constrained: bool | None = None,
                 encoding: str | None = None, epochs: int | None = None, min_count: int = 1,
                 seed: int = 0, dev_split: float = 0.0, refit: bool = True, feature_set: str = "all",
                 folds: int = 10, unknown_tag: str | None = "?", tag_dictionary: bool = False,
                 step: str = "perceptron", margin: float = 0.0, C: float = 1.0, order: int = 1,
                 two_stage: bool = False, lang: str | None = None, vote: Sequence[str] | None = None):
        self.task, self.template, self.columns, self.tag_column = task, template, columns, tag_column
        self.scheme, self.constrained, self.encoding = scheme, constrained, encoding
        self.epochs, self.min_count, self.seed, self.dev_split = epochs, min_count, seed, dev_split
        self.refit, self.feature_set, self.folds, self.unknown_tag = refit, feature_set, folds, unknown_tag
        self.tag_dictionary, self.step, self.margin, self.C, self.order = tag_dictionary, step, margin, C, order
        self.two_stage, self.lang, self.vote = two_stage, lang, vote

    @classmethod
    def _param_names(cls) -> list[str]:
        return _param_names(cls)

    def get_params(self, deep: bool = True) -> dict:
        """The constructor parameters (scikit-learn's convention, so ``sklearn.base.clone`` works; ``deep`` is
        accepted for it: no parameter is an estimator)."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params: Any) -> Self:
        """Set constructor parameters (scikit-learn's convention); an unknown name raises ``ValueError``. The
        options' rules are checked when `fit` runs, as for the constructor."""
        valid = self._param_names()
        for name in params:
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__} (valid: {', '.join(valid)})")
        for name, value in params.items():
            setattr(self, name, value)
        return self

    def fit(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, dev: Any = None,
            dev_y: Sequence[Sequence[str]] | None = None, tokens: str = "tokens", tags: str | None = None,
            features: dict[str, str] | None = None, callback: Callback | None = None,
            progress: Progress | None = None, checkpoint_dir: str | os.PathLike | None = None,
            resume: str | os.PathLike | None = None, workers: int = 1, mixing: str | None = None,
            clusters: str | os.PathLike | None = None, dask: Any = None,
            seeds: Sequence[int] | None = None) -> Self:
        """Train on ``X`` (a CoNLL path, a `Corpus`, a `datasets.Dataset`, or token lists with tags ``y``).

        ``dev`` (or ``dev_split``) picks the best epoch. A dataset's ``tokens``/``tags`` columns are
        named, ``features`` maps more, e.g. ``{"pos": "pos_tags"}``. ``checkpoint_dir``/``resume``: save
        the trainer every epoch / continue such a run; ``workers`` > 1: `structperc.train.run.train_model`'s mixing (on
        the Dask cluster ``dask`` if given); ``clusters``: a word clusters file for ``clu*`` templates;
        ``seeds``: seed averaging (`structperc.ensemble.train_seed_average`, whose seeds are checked; the
        first is the tagger's ``seed``)."""
        task = params.task_for(settings := self.get_params())
        run = dict(dev=dev is not None, checkpoint_dir=checkpoint_dir, resume=resume, workers=workers,
                   mixing=mixing, dask=dask, clusters=clusters, seed_average=seeds is not None)
        params.check(settings, task, data=X, **run)
        lines = resolve_template(self.template if self.template is not None else task.template)
        resources: list = []
        if self.lang is not None:
            lines = lines + [x for x in language_lines(self.template, task.template, tagger_kinds(self.lang))
                             if x not in lines]
            clusters, resources = language_dictionaries(  # type: ignore[assignment]
                self.lang, template_columns(lines), task.token_column)
        if self.two_stage and not reads_stage_column(lines):
            lines = lines + list(STAGE_LINES)
        params.validate({**settings, **run}, task=task, lines=lines)  # the rules about the template too
        columns = {"tokens": tokens, "tags": tags or task.tag_column, "features": dict(features or {})}
        reads = columns_to_read(task, lines, gold=True)
        corpus = to_corpus(X, y, task, need_tags=True, reads=reads, dataset_columns=columns,
                           unknown=self.unknown_tag)
        dev_corpus = to_corpus(dev, dev_y, task, need_tags=True, reads=reads, dataset_columns=columns,
                               unknown=self.unknown_tag) if dev is not None else None
        learner = fitting.dictionary_learner(corpus, task, lines, None, self.unknown_tag, clusters, resources)
        self._fit_corpus(corpus, dev_corpus, X, task, lines, columns, learner, callback,
                         checkpoint_dir, resume, progress, dict(workers=workers, mixing=mixing, dask=dask), seeds)
        self._record_resources()
        return self

    def _record_resources(self) -> None:
        """Name the language resources the model carries in its provenance (`structperc info` shows them)."""
        found: list[dict] = []
        for r in (getattr(p, "resource", None) for p in dictionary_parts(self.dictionary_)):
            if r and r.get("name") not in [f.get("name") for f in found]:
                found.append(r)
        if found:
            self.provenance_["resources"] = found

    def _fit_corpus(self, corpus: Corpus, dev: Corpus | None, X: Any, task: Task, lines: list[str],
                    columns: dict, learner: DictionaryLearner | None, callback: Callback | None,
                    checkpoint_dir: str | os.PathLike | None = None, resume: str | os.PathLike | None = None,
                    progress: Progress | None = None, scale: dict | None = None,
                    seeds: Sequence[int] | None = None) -> Self:
        """Learn the dictionary (jackknifed in when the templates read it), train, keep the result.
        ``scale``: ``workers``, ``mixing`` and ``dask`` (a cluster that runs the mixing's shard epochs);
        ``seeds``: the members of a seed-averaged model (`structperc.train.run.fit`)."""
        scale = dict(scale or {})
        dask = scale.pop("dask", None)
        if dask is not None:
            from structperc.dask.training import dask_runner

            scale["runner"] = dask_runner(dask)
        corpus, dictionary = fitting.learnt_dictionary(corpus, learner, lines, self.folds, self.seed, scale)
        dev = with_dictionary(dev, dictionary, lines) if dev is not None else None
        result = fitting.fit(corpus, dev, task=task, template_lines=lines, params=self._saved_params(),
                             dictionary=dictionary, dataset_columns=columns, callback=callback, progress=progress,
                             checkpoint_dir=checkpoint_dir, resume=resume,
                             release=not isinstance(X, Corpus), seeds=seeds, **scale)
        self._keep(result)
        if result.dev_history is not None:
            self.dev_history_ = result.dev_history
        if result.dev_history is None or self.refit:
            self.provenance_["sources"] = fitting.sources(X, corpus)
        return self

    def partial_fit(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, epochs: int | None = None,
                    dev: Any = None, callback: Callback | None = None,
                    progress: Progress | None = None, add_labels: bool = False) -> Self:
        """Continue training a fitted tagger on new data (see `structperc.train.run.continue_training`);
        templates, columns, label scheme and seed are kept from the model. Tags the model does not
        know (for span tasks: entity types) are refused, unless ``add_labels``: then they become new
        labels, starting from zero weights."""
        self._check_fitted()
        params.validate(dict(init_model=True, add_labels=add_labels, dev=dev is not None, order=self.weights_.order,
                             two_stage=self.stage1_ is not None,
                             vote=[v.task.model_scheme for v in self._model.voters] or None))
        corpus = self._corpus(X, y, need_tags=True)
        if not add_labels:
            check_known_tags(corpus, self.labels_, self.task_, self.unknown_tag)
        dev_corpus = self._corpus(dev, None, need_tags=True) if dev is not None else None
        lines, unknown = self.template_lines_, self.unknown_tag
        learner = fitting.dictionary_learner(corpus, self.task_, lines, self.dictionary_, unknown)
        if learner is not None:
            corpus, self.dictionary_ = jackknifed(corpus, learner, self.folds, self.seed)
            dev_corpus = self._annotated(dev_corpus) if dev_corpus is not None else None
        result = fitting.continue_training(self.model_, corpus, dev_corpus, epochs=epochs or self.task_.epochs,
                                           callback=callback, progress=progress)
        self._keep(result)
        self.provenance_["sources"] = fitting.sources(X, corpus)
        return self

    @classmethod
    def train(cls, X: Any, y: Sequence[Sequence[str]] | None = None, **kwargs: Any) -> Self:
        """Construct with the parameters among ``kwargs`` and fit with the rest; see `fit`."""
        names = set(cls._param_names())
        return cls(**{k: v for k, v in kwargs.items() if k in names}).fit(
            X, y, **{k: v for k, v in kwargs.items() if k not in names})

    def _keep(self, result: fitting.Fitted) -> None:
        self._set_model(result.model)
        self.best_epoch_, self.history_ = result.best_epoch, result.history

    def _set_model(self, model: schema.Model) -> None:
        """Hold ``model`` (a shallow copy: setting a fitted attribute here leaves the caller's record alone)."""
        self._model = dataclasses.replace(model)

    # The fitted attributes are the held model's fields, read and written there: saving, loading and the
    # prediction calls hand the one `Model` on, with no copying into attributes and back.
    task_ = _held("task", "The task: columns, tag column, schemes, constraints and metric.")
    labels_ = _held("labels", "The labels, sorted (a label's id is its position).")
    template_lines_ = _held("templates", "The template lines.")
    features_ = _held("features", "The `FeatureIndex`.")
    weights_ = _held("weights", "The `Weights`.")
    provenance_ = _held("provenance", "How the model was trained (data, epochs, seed, date, version).")
    dictionary_ = _held("dictionary", "The learnt dictionary whose columns the templates read (or None).")
    dataset_columns_ = _held("dataset_columns", "The `datasets` columns the model was trained from.")
    calibration_ = _held("calibration", "The fitted temperature's record (or None).")
    tag_dictionary_ = _held("tag_dictionary", "The decoding `TagDictionary` (or None).")
    stage1_ = _held("stage1", "A two-stage model's first stage (or None).")

    @property
    def label_set_(self) -> LabelSet:
        return LabelSet(self.labels_)

    def _saved_params(self) -> dict:
        """The parameters a model file records (the template is saved as lines of its own; ``lang`` only
        when given, so models trained without it keep their bytes)."""
        return {k: v for k, v in self.get_params().items()
                if k != "template" and not (k in ("lang", "vote") and v is None)}

    @property
    def model_(self) -> schema.Model:
        """The trained model (weights, features, labels, calibration), as `structperc.model.schema` saves it."""
        self._check_fitted()
        return dataclasses.replace(self._model, params=self._saved_params(), format_version=schema.FORMAT_VERSION)

    def _check_fitted(self) -> None:
        if "_model" not in self.__dict__:
            raise RuntimeError(f"this {type(self).__name__} is not trained yet: call fit() or load()")

    def _corpus(self, X: Any, y: Any = None, *, need_tags: bool) -> Corpus:
        if not need_tags and "_model" in self.__dict__:
            X = self._with_upstream(X)
        return to_corpus(X, y, self.task_, need_tags=need_tags, reads=self.reads(gold=need_tags),
                         unknown=self.unknown_tag,
                         token_columns=set(self.features_.columns), dataset_columns=self.dataset_columns_)

    def _annotated(self, corpus: Corpus) -> Corpus:
        return with_dictionary(corpus, self.dictionary_, self.template_lines_)

    def reads(self, *, gold: bool = False) -> set[str] | None:
        """The input columns this model needs (plus the gold tags with ``gold``)."""
        self._check_fitted()
        return columns_to_read(self.task_, self.template_lines_, gold=gold, dictionary=self.dictionary_)

    def predict_ids(self, corpus: Corpus, allowed: np.ndarray | None = None) -> np.ndarray:
        """Best label id of every token of ``corpus`` (ids into ``labels_``); ``allowed`` (bool,
        (n_tokens, L)) restricts each token's labels, by default to the tag dictionary's. A voting
        model's are its first member's (`predict_corpus` votes)."""
        return predict.best_ids(self.model_, corpus, allowed)

    def predict_corpus(self, corpus: Corpus, allowed: np.ndarray | None = None) -> list[str]:
        """Predicted tag of every token of ``corpus`` (flat, in corpus order, the data's scheme); a voting model's
        members' vote (`structperc.predict.voted_tags`)."""
        return predict.tag_corpus(self.model_, corpus, allowed=allowed).tags

    def predict(self, X: Any, *, forced: predict.Forced | None = None,
                allowed: predict.Allowed | None = None) -> list[list[str]]:
        """Tags for each sentence of ``X`` (token lists, a CoNLL path, a `Corpus`, a dataset);
        ``forced`` ({position: tag} per sentence) and ``allowed`` ({position: tags}) constrain them."""
        if self._no_sentences(X):
            return []
        corpus, mask = self._constrained(X, forced, allowed)
        return split_tags(self.predict_corpus(corpus, mask), corpus.sent_ptr)

    def tag(self, sentence: Sequence[Any]) -> list[str]:
        """Tags of one sentence: a list of tokens, or of tuples when the model reads several columns."""
        if isinstance(sentence, str):
            raise InputError("tag() takes a list of tokens, not a string")
        return self.predict([sentence])[0] if len(sentence) else []

    @property
    def language_(self) -> str | None:
        """The model's language: its card's (a shipped model), else ``lang`` given in training."""
        card = self.provenance_.get("card") if isinstance(self.provenance_, dict) else None
        return (card or {}).get("language") or self.lang

    @property
    def upstream_(self) -> dict[str, "Tagger"]:
        """The shipped models that predict columns this model reads (its card's ``reads``, e.g.
        ``{"pos": en-xpos}`` for en-chunk), loaded on first use: they fill those columns when the
        input has words alone (`predict` on word lists, `tag_texts`)."""
        if "_upstream" not in self.__dict__:
            from structperc.model.shipped import resolve

            card = self.provenance_.get("card") or {}
            self._upstream = {column: Tagger.from_model(schema.read(resolve(name)))
                              for column, name in (card.get("reads") or {}).items()}
        return self._upstream

    def _with_upstream(self, X: Any) -> Any:
        """Word lists, for a model with upstream models, become rows of its columns (`with_upstream`);
        any other input is returned as is."""
        if not self.upstream_ or not isinstance(X, list) or not X or not all(
                isinstance(s, (list, tuple)) and all(isinstance(t, str) for t in s) for s in X):
            return X
        return self.with_upstream(X)

    def with_upstream(self, sentences: Sequence[Sequence[str]]) -> list[list[tuple[str, ...]]]:
        """Sentences of words as rows of the columns the model reads (`token_columns`, the word first),
        the others predicted by the upstream shipped models (`upstream_`, one call each for all): what
        `predict` does with word lists, and the service with raw text."""
        columns = token_columns(self.task_, set(self.features_.columns))
        upstream = self.upstream_
        missing = [c for c in columns[1:] if c not in upstream]
        if missing:
            raise InputError(f"the model reads {', '.join(missing)}, which no upstream model predicts: "
                             "give each token as a tuple of its columns")
        sentences = list(sentences)
        filled = [upstream[c].predict(sentences) for c in columns[1:]]
        return [[(word, *(tags[n][i] for tags in filled)) for i, word in enumerate(words)]
                for n, words in enumerate(sentences)]

    def tag_texts(self, texts: str | Iterable[str], *, lang: str | None = None) -> list[list[list[TaggedToken]]]:
        """Tag raw text: for each document, its sentences, each a list of `TaggedToken` (text, offsets,
        tag). Sentences and tokens are split the way the model's corpus is (`structperc.io.raw_text`,
        spaCy's rule-based tokenizer for ``lang``: by default the model's language); columns an upstream
        shipped model predicts (en-chunk's POS) are filled by it first. A string is one document."""
        from structperc.io.raw_text import split_texts

        language = lang or self.language_
        if language is None:
            raise InputError("the model has no language to split raw text by (it was trained without --lang): "
                             "give tokens (--input-format lines or tokens), or in Python tag_texts(..., lang='en')")
        if not isinstance(texts, str) and not isinstance(texts, Iterable):
            raise InputError(f"tag_texts() takes a string or strings, not {type(texts).__name__}")
        docs = [texts] if isinstance(texts, str) else list(texts)
        split = list(split_texts(docs, language))
        sentences = [s for doc in split for s in doc]
        tags = self.predict([[t.text for t in s] for s in sentences]) if sentences else []
        out: list[list[list[TaggedToken]]] = []
        at = 0
        for doc in split:
            out.append([[TaggedToken(t.text, t.start, t.end, tag) for t, tag in zip(s, tags[at + k])]
                        for k, s in enumerate(doc)])
            at += len(doc)
        return out

    def tag_dataset(self, dataset: Any, column: str = "predicted") -> Any:
        """A copy of a `datasets.Dataset` plus predicted tags (ClassLabel ids if the gold ones are)."""
        from structperc.io.hf import with_predictions

        if column in getattr(dataset, "column_names", ()):  # checked before the tagging, not after it
            raise InputError(f"the dataset already has a column {column!r}: name the predictions' column "
                             "another way (column=...)")
        return with_predictions(dataset, self.predict(dataset), column, self.dataset_columns_.get("tags"))

    def save(self, path: str | os.PathLike) -> Path:
        """Write the model atomically to directory ``path`` (see `structperc.model.schema`)."""
        self._check_fitted()
        return schema.write(path, self.model_)

    @classmethod
    def from_model(cls, model: schema.Model) -> Self:
        """An estimator around a loaded (or compressed) model."""
        if model.attribute_model:
            raise InputError("a model of structperc.sklearn.StructuredPerceptron (attribute dicts, not "
                             "columns): load it with StructuredPerceptron(model_filename=...)")
        names = set(cls._param_names())
        tagger = cls(**{k: v for k, v in model.params.items() if k in names})
        tagger.template = model.templates
        tagger._set_model(model)
        tagger.best_epoch_, tagger.history_ = model.provenance.get("best_epoch"), []
        return tagger

    @classmethod
    def load(cls, path: str | os.PathLike) -> Self:
        """Read a model written by `save`; damaged or foreign files raise `ModelFormatError`, a word
        segmentation model an `InputError` naming `Segmenter.load` (it segments text, not tokens)."""
        model = schema.read(path)
        if model.task.name == "cws":  # `Segmenter.load` does not come here
            raise InputError("a word segmentation model: load it with structperc.segmenter.Segmenter.load "
                             "(command line: structperc segment)", str(path))
        return cls.from_model(model)

    def compress(self, *, keep: float | None = None, threshold: float | None = None,
                 prune_vocabulary: bool = True) -> Self:
        """A compressed copy (see `structperc.model.compress.compress`); this one is untouched."""
        from structperc.model.compress import compress

        self._check_fitted()
        out = type(self).from_model(compress(self.model_, keep=keep, threshold=threshold,
                                             prune_vocabulary=prune_vocabulary))
        out.__dict__.update(self.get_params(), best_epoch_=self.best_epoch_, history_=list(self.history_))
        return out

    # ------------------------------------------------------------------ inspection
    def explain(self, sentence: Any, *, forced: Mapping[int, str] | None = None,
                allowed: Mapping[int, Iterable[str]] | None = None) -> dict:
        """Why one sentence (a list of tokens or of tuples, or any input `predict` reads holding one
        sentence) gets its tags: per token its ``label`` (``predict``'s), the ``features`` that fired
        for it as (name, weight) pairs, its ``transition`` weight from the previous label, the
        ``runner_up`` tag and its ``margin``; the path's ``score`` and ``end`` term, which the token
        parts sum to exactly (`structperc.predict.explain`). ``forced`` ({position: tag}) and ``allowed``
        ({position: tags}) constrain the sentence as they constrain ``predict``: the path explained is the
        one ``predict`` gives under them, and a runner-up is a tag they allow."""
        from structperc.predict.explain import explain, one_sentence, sentence_mask

        corpus = self._corpus(one_sentence(sentence), need_tags=False)
        return explain(self.model_, corpus, sentence_mask(self.model_, corpus, forced, allowed))

    @property
    def state_features_(self) -> Any:
        """``{(feature name, label): weight}`` of every non-zero state weight, the labels the model's
        (``labels_``), built from the weights on first use (`structperc.model.inspection`)."""
        from structperc.model.inspection import state_features

        return state_features(self.model_)

    @property
    def transition_features_(self) -> Any:
        """``{(label_from, label_to): weight}`` of every transition weight, ``"<bos>"`` (the sentence
        start) among the from-labels (`structperc.model.inspection`)."""
        from structperc.model.inspection import transition_features

        return transition_features(self.model_)
