"""`Tagger`: the public API that ties reader → features → trainer → model → decoder together."""
from __future__ import annotations

import datetime
import hashlib
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from structperc import __version__
from structperc.corpus.columns import Corpus
from structperc.corpus.conll import read_corpus
from structperc.errors import InputError, ModelFormatError
from structperc.features import FeatureIndex
from structperc.labels import LabelSet, transition_mask
from structperc.model import Weights
from structperc.schemes import SPAN_SCHEMES, convert_flat
from structperc.model_io import (dense_rows, load_archive, pair_arrays, save_archive, sparse_rows,
                                 state_from_arrays)
from structperc.state_weights import FEATURE_SETS, feature_set
from structperc.tasks import Task, get_task
from structperc.templates import PRESETS, optional_columns_dropped, parse_templates, preset
from structperc.trainer import EpochReport, PerceptronState, train_perceptron


def resolve_template(template: str | Sequence[str]) -> list[str]:
    """Template lines from a preset name, a file of one template per line, or a list of lines."""
    if isinstance(template, str):
        if template in PRESETS:
            return preset(template)
        if os.path.exists(template):
            from structperc.corpus.conll import open_text_lines

            lines = [line for _, line in open_text_lines(template)]
            parse_templates(lines, template)  # errors name the file and line
            return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        raise InputError(f"{template!r} is neither a template preset ({', '.join(sorted(PRESETS))}) "
                         "nor a template file")
    return list(template)


def training_date() -> str:
    """UTC time of training, or ``SOURCE_DATE_EPOCH`` when set (the reproducible-builds convention:
    with it, the same command gives a byte-identical model file)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch and \
        epoch.isdigit() else datetime.datetime.now(datetime.timezone.utc)
    return when.isoformat(timespec="seconds")


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


class Tagger:
    """A sequence tagger trained with the averaged structured perceptron.

    Parameters (keyword-only, stored as given; checked when fitting)
    ----------------------------------------------------------------
    task : {"chunk", "ner", "pos", "cws"}
        Preset for columns, template, label scheme and metric.
    template : str or list of str, optional
        A preset name (``"crfsuite"``, ``"chunk"``, …), a template file, or template lines.
    columns : list of str, optional
        Column names of CoNLL input, left to right (``_`` skips one).
    tag_column : str, optional
        The column to predict.
    scheme : {"none", "iob1", "iob2", "iobes", "bmes"}, optional
    constrained : bool, optional
        Forbid transitions the scheme does not allow, in training and decoding.
    encoding : {"iob1", "iob2", "iobes"}, optional
        Span scheme the model is trained in (default for span tasks: IOBES, whatever the data's
        scheme); predictions come back in the data's ``scheme``.
    epochs : int, optional
    min_count : int
        Drop attributes seen fewer times in training.
    seed : int
        Fixes the shuffling of every epoch: the same data and seed give the same model.
    dev_split : float
        Hold out this fraction of the training sentences to pick the best epoch.
    refit : bool
        With ``dev_split``, retrain on all the data for the chosen number of epochs.
    feature_set : {"all", "observed"}
        Which (attribute, label) pairs get a state weight: every pair, or — as CRFsuite does by
        default — only the pairs that occur in the training data (a fraction of the memory and
        model size; the perceptron then cannot penalise a label an attribute was never seen with).

    Attributes
    ----------
    labels_ : list of str
    features_ : FeatureIndex
    weights_ : Weights
    best_epoch_ : int
    history_ : list of EpochReport

    Examples
    --------
    >>> tagger = Tagger.train([["the", "cat", "sat"], ["a", "dog", "ran"]],
    ...                       [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "B-VP"]],
    ...                       columns=["word", "chunk"], template=["w[0]", "w[-1]"], epochs=3)
    >>> tagger.tag(["the", "dog", "sat"])
    ['B-NP', 'I-NP', 'B-VP']
    """

    def __init__(self, *, task: str = "chunk", template: str | Sequence[str] | None = None,
                 columns: Sequence[str] | None = None, tag_column: str | None = None,
                 scheme: str | None = None, constrained: bool | None = None,
                 encoding: str | None = None, epochs: int | None = None,
                 min_count: int = 1, seed: int = 0, dev_split: float = 0.0, refit: bool = True,
                 feature_set: str = "all"):
        self.task = task
        self.template = template
        self.columns = columns
        self.tag_column = tag_column
        self.scheme = scheme
        self.constrained = constrained
        self.encoding = encoding
        self.epochs = epochs
        self.min_count = min_count
        self.seed = seed
        self.dev_split = dev_split
        self.refit = refit
        self.feature_set = feature_set

    # ------------------------------------------------------------ configuration
    def _task(self) -> Task:
        cols = tuple(self.columns) if self.columns is not None else None
        tag = self.tag_column
        if cols is not None and tag is None:
            tag = [c for c in cols if c != "_"][-1]
        return get_task(self.task, columns=cols, tag_column=tag, scheme=self.scheme,
                        constrained=self.constrained, epochs=self.epochs, encoding=self.encoding)

    def _check_params(self, task: Task) -> None:
        if not isinstance(self.epochs if self.epochs is not None else task.epochs, int) or task.epochs < 1:
            raise InputError(f"epochs must be a positive integer, got {task.epochs!r}")
        if not isinstance(self.min_count, int) or self.min_count < 1:
            raise InputError(f"min_count must be a positive integer, got {self.min_count!r}")
        if self.feature_set not in FEATURE_SETS:
            raise InputError(f"feature_set must be one of {', '.join(FEATURE_SETS)}, got "
                             f"{self.feature_set!r}")
        if not 0.0 <= float(self.dev_split) < 1.0:
            raise InputError(f"dev_split must be in [0, 1), got {self.dev_split!r}")
        if task.metric == "span" and (task.scheme not in SPAN_SCHEMES
                                      or task.model_scheme not in ("iob1", "iob2", "iobes")):
            raise InputError(f"span tasks need a span scheme (data: {task.scheme!r}, model: "
                             f"{task.model_scheme!r}; known: {', '.join(SPAN_SCHEMES)})")
        if task.tag_column not in task.columns:
            raise InputError(f"tag column {task.tag_column!r} is not among the columns "
                             f"{list(task.columns)}")

    # -------------------------------------------------------------- data input
    def _corpus(self, X: Any, y: Any = None, *, need_tags: bool, task: Task | None = None,
                template_lines: list[str] | None = None) -> Corpus:
        task = task or self.task_
        tag = task.tag_column
        if isinstance(X, Corpus):
            corpus = X
        elif isinstance(X, (str, os.PathLike)):
            optional = () if need_tags or task.columns[-1] != tag else (tag,)
            if template_lines is not None:
                reads = _template_columns(template_lines)
            else:
                reads = set(self.features_.columns) if hasattr(self, "features_") else None
            only = None
            if reads is not None:  # the columns features and labels need: a file may have many more
                only = [c for c in task.columns if c in reads or c in (tag, task.inputs[0])]
            corpus = read_corpus(X, task.columns, optional=optional, only=only)
        elif _is_dataset(X):
            from structperc.corpus.hf import corpus_from_dataset
            m = self.dataset_columns_ if hasattr(self, "dataset_columns_") else {}
            corpus = corpus_from_dataset(X, token_column=task.inputs[0], tokens=m.get("tokens", "tokens"),
                                         tags=m.get("tags") if need_tags or m.get("tags") in
                                         X.column_names else None,
                                         tag_column=tag, features=m.get("features"))
        elif isinstance(X, Sequence) and not isinstance(X, str):
            inputs = task.inputs
            needed = inputs
            if hasattr(self, "features_"):  # a fitted model needs only the columns its templates read
                reads = set(self.features_.columns)
                needed = [c for c in inputs if c in reads] or inputs[:1]
            for si, s in enumerate(X):
                if isinstance(s, str):
                    raise InputError(f"sentence {si} is a string: give each sentence as a list of tokens")
            sents = [list(s) for s in X]
            tuples = bool(sents and sents[0] and isinstance(sents[0][0], (tuple, list)))
            if tuples and len(sents[0][0]) != len(inputs):
                inputs = needed  # tuples may hold every input column or just the ones read
            elif not tuples:
                inputs = needed
            if tuples:
                for si, s in enumerate(sents):
                    if any(not isinstance(tok, (tuple, list)) or len(tok) != len(inputs) for tok in s):
                        raise InputError(f"sentence {si}: every token needs {len(inputs)} values "
                                         f"({', '.join(inputs)})")
                cols = {name: [[str(tok[i]) for tok in s] for s in sents] for i, name in enumerate(inputs)}
            else:
                cols = {inputs[0]: sents}
                if len(inputs) > 1:
                    raise InputError(f"this model reads {len(inputs)} columns ({', '.join(inputs)}): "
                                     "give each token as a tuple")
            first = next(iter(cols))
            corpus = Corpus.from_sentences(cols[first], y, extra={k: v for k, v in cols.items()
                                                                  if k != first},
                                           token_column=first, tag_column=tag)
        else:
            raise InputError(f"cannot read training data of type {type(X).__name__}")
        if need_tags and tag not in corpus.columns:
            raise InputError(f"no {tag!r} column with gold tags", corpus.source)
        if len(corpus) == 0:
            raise InputError("no sentences", corpus.source)
        return corpus

    # ----------------------------------------------------------------- training
    def fit(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, dev: Any = None,
            dev_y: Sequence[Sequence[str]] | None = None, tokens: str = "tokens", tags: str | None = None,
            features: dict[str, str] | None = None,
            callback: Callable[[EpochReport], None] | None = None,
            checkpoint_dir: str | os.PathLike | None = None,
            resume: str | os.PathLike | None = None) -> "Tagger":
        """Train on ``X`` (a CoNLL path, a `Corpus`, a `datasets.Dataset`, or token lists with tags ``y``).

        With ``dev`` (or ``dev_split``) the epoch scoring best on it is kept. For a `datasets.Dataset`,
        ``tokens`` and ``tags`` name its token and tag columns (`ClassLabel` tags are decoded) and
        ``features`` maps further corpus columns to dataset columns, e.g. ``{"pos": "pos_tags"}``.
        With ``checkpoint_dir`` the trainer state is saved atomically after every epoch; ``resume``
        (a checkpoint directory) continues such a run exactly where its last complete epoch ended.
        """
        task = self._task()
        self._check_params(task)
        self.task_ = task
        self.__dict__.pop("_gazetteer", None)  # a refit must not decode with the old gazetteer
        self.dataset_columns_ = {"tokens": tokens, "tags": tags or task.tag_column,
                                 "features": dict(features or {})}
        template_lines = resolve_template(self.template if self.template is not None else task.template)
        corpus = self._corpus(X, y, need_tags=True, task=task, template_lines=template_lines)
        dev_corpus = self._corpus(dev, dev_y, need_tags=True, task=task,
                                  template_lines=template_lines) if dev is not None else None
        self.template_lines_ = template_lines
        self.extra_ = {}
        if task.gazetteer and any("gaz[" in line for line in template_lines):
            from structperc.gazetteer import jackknifed
            corpus, gaz = jackknifed(corpus, task.inputs[0], task.tag_column, task.scheme, 10, self.seed)
            self.extra_["gazetteer"] = gaz.to_json()
            if dev_corpus is not None:
                dev_corpus = self._with_gazetteer(dev_corpus)
        epochs = task.epochs
        if dev_corpus is None and self.dev_split:
            rng = np.random.default_rng(self.seed)
            order = rng.permutation(len(corpus))
            n_dev = max(1, int(round(self.dev_split * len(corpus))))
            held, kept = np.sort(order[:n_dev]), np.sort(order[n_dev:])
            probe = self._fit_once(corpus.select(kept), corpus.select(held), template_lines, epochs,
                                   callback)
            probe.extra_ = self.extra_
            self.dev_history_ = probe.history_
            if not self.refit:
                self.__dict__.update({k: v for k, v in probe.__dict__.items() if k.endswith("_")})
                return self
            epochs = probe.best_epoch_
        fitted = self._fit_once(corpus, dev_corpus, template_lines, epochs, callback, checkpoint_dir,
                                resume, release=not isinstance(X, Corpus))
        fitted.extra_ = self.extra_
        self.__dict__.update({k: v for k, v in fitted.__dict__.items() if k.endswith("_")})
        self.provenance_["sources"] = _sources(X, corpus)
        return self

    def _fit_once(self, corpus: Corpus, dev: Corpus | None, template_lines: list[str], epochs: int,
                  callback, checkpoint_dir=None, resume=None, release: bool = False) -> "Tagger":
        """Train once on ``corpus``. With ``release`` (a corpus this tagger read itself) its token
        columns are dropped once the features are built: training needs only integer arrays, and
        the columns are a tenth of training's peak memory."""
        task = self.task_
        out = Tagger(**self.get_params())
        out.task_ = task
        out.dataset_columns_ = self.dataset_columns_
        template_lines = optional_columns_dropped(template_lines, set(corpus.columns))
        out.template_lines_ = template_lines
        templates = parse_templates(template_lines)
        missing = sorted({p.atom.column for t in templates for p in t.parts} - set(corpus.columns))
        if missing:
            raise InputError(f"the template reads column(s) {', '.join(missing)} that the data lacks "
                             f"(columns: {', '.join(corpus.columns)})", corpus.source)
        tags = self._to_model_scheme(corpus.columns[task.tag_column], corpus.sent_ptr, task)
        out.label_set_ = LabelSet(tags)
        out.labels_ = out.label_set_.labels
        out.features_ = FeatureIndex(templates, self.min_count)
        feats = out.features_.fit_transform(corpus)
        mask, end = out._masks()
        y = out.label_set_.encode(tags)
        del tags
        fingerprint = None
        if resume is not None or checkpoint_dir is not None:  # hashing the corpus costs time and memory
            fingerprint = {"templates": template_lines, "labels": out.labels_, "seed": self.seed,
                           "attributes": [out.features_.n_state_attributes,
                                          out.features_.n_transition_attributes],
                           "scheme": [task.model_scheme, task.constrained],
                           "data": _corpus_hash(corpus),
                           **({"feature_set": self.feature_set} if self.feature_set != "all" else {})}
        n_sentences, n_tokens = len(corpus), corpus.n_tokens
        if release:
            corpus.columns = {}
            corpus._factorized.clear()
        pairs = feature_set(self.feature_set, feats.state, y, out.features_.n_state_attributes,
                            len(out.labels_))
        if resume is not None:
            from structperc.checkpoint import load_checkpoint
            state = load_checkpoint(resume, fingerprint, mask, end)
        else:
            state = PerceptronState.zeros(out.features_.n_state_attributes,
                                          out.features_.n_transition_attributes, len(out.labels_),
                                          pairs)
        del pairs
        out._train(feats, y, state, epochs, dev, callback, checkpoint_dir, fingerprint)
        out.provenance_.update(n_sentences=n_sentences, n_tokens=n_tokens)
        return out

    def _masks(self) -> tuple[np.ndarray, np.ndarray]:
        task = self.task_
        return transition_mask(self.labels_, task.model_scheme if task.constrained else "none")

    def _train(self, feats, y: np.ndarray, state: PerceptronState, epochs: int, dev: Corpus | None,
               callback, checkpoint_dir=None, fingerprint: dict | None = None) -> None:
        """Run the trainer from ``state`` and set the fitted attributes (the one training path)."""
        task = self.task_
        labels = self.label_set_
        mask, end = self._masks()
        dev_score = None
        if dev is not None:
            dev_feats = self.features_.transform(dev)
            gold = list(dev.sentences(task.tag_column))

            def dev_score(weights: Weights) -> float:
                flat = self._from_model_scheme(labels.decode(weights.predict(dev_feats)), dev.sent_ptr,
                                               task)
                return self._score(gold, _split_tags(flat, dev.sent_ptr))
        history: list[EpochReport] = []

        def report(r: EpochReport) -> None:
            history.append(r)
            if callback is not None:
                callback(r)
        on_epoch_end = None
        if checkpoint_dir is not None:
            from structperc.checkpoint import save_checkpoint

            def on_epoch_end(st: PerceptronState) -> None:
                save_checkpoint(checkpoint_dir, st, fingerprint)
        self.weights_, self.best_epoch_ = train_perceptron(
            feats, y, state, mask=mask, end=end, epochs=epochs, seed=self.seed,
            dev_score=dev_score, callback=report, on_epoch_end=on_epoch_end, consume=True)
        self.history_ = history
        self.provenance_ = {"structperc_version": __version__, "date": training_date(),
                            "epochs": epochs, "best_epoch": self.best_epoch_, "seed": self.seed,
                            "dev_score": state.best_score}

    def partial_fit(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, epochs: int | None = None,
                    dev: Any = None, callback: Callable[[EpochReport], None] | None = None) -> "Tagger":
        """Continue training a fitted tagger on new data.

        New attributes and new labels are added (existing ids are remapped, weights move with them).
        Training starts from the current (averaged) weights; the averaging restarts, so the result is
        the average of the weights after each instance of *this* training. Templates, columns, label
        scheme and seed are kept from the model.
        """
        self._check_fitted()
        task = self.task_
        corpus = self._corpus(X, y, need_tags=True)
        dev_corpus = self._corpus(dev, None, need_tags=True) if dev is not None else None
        if getattr(self, "extra_", {}).get("gazetteer") is not None:
            from structperc.gazetteer import Gazetteer, jackknifed
            corpus, gaz = jackknifed(corpus, task.inputs[0], task.tag_column, task.scheme, 10, self.seed,
                                     base=Gazetteer.from_json(self.extra_["gazetteer"]))
            self.extra_["gazetteer"] = gaz.to_json()
            self.__dict__.pop("_gazetteer", None)
            if dev_corpus is not None:
                dev_corpus = self._with_gazetteer(dev_corpus)
        tags = self._to_model_scheme(corpus.columns[task.tag_column], corpus.sent_ptr, task)
        old_labels, old = self.labels_, self.weights_
        self.label_set_ = LabelSet(old_labels + tags)
        self.labels_ = self.label_set_.labels
        feats, state_map, trans_map = self.features_.extend(corpus)
        L = len(self.labels_)
        label_map = self.label_set_.encode(old_labels).astype(np.int64)
        rows = np.append(label_map, L)  # the <bos> row moves to the new last row
        y = self.label_set_.encode(tags)
        sw = old.sparse
        old_rows = np.asarray(state_map, np.int64)[sw.rows()]
        old_labels_new = label_map[sw.labels.astype(np.int64)]
        pairs = feature_set(getattr(self, "feature_set", "all"), feats.state, y,
                            self.features_.n_state_attributes, L, extra=(old_rows, old_labels_new))
        state = PerceptronState.zeros(self.features_.n_state_attributes,
                                      self.features_.n_transition_attributes, L, pairs)
        state.W[state.pairs.positions(old_rows, old_labels_new)] = sw.values
        state.Wt[np.ix_(rows, label_map)] = old.trans
        state.Wc[np.ix_(trans_map, rows, label_map)] = old.cond[:-1]
        previous = dict(getattr(self, "provenance_", {}))
        self._train(feats, y, state, epochs or task.epochs, dev_corpus, callback)
        self.provenance_.update(continued_from=previous, n_sentences=len(corpus), n_tokens=corpus.n_tokens,
                                sources=_sources(X, corpus))
        return self

    @staticmethod
    def _to_model_scheme(tags: list[str], ptr: np.ndarray, task: Task) -> list[str]:
        if task.metric == "span" and task.model_scheme != task.scheme:
            return convert_flat(tags, ptr, task.scheme, task.model_scheme)
        return tags

    @staticmethod
    def _from_model_scheme(tags: list[str], ptr: np.ndarray, task: Task) -> list[str]:
        if task.metric == "span" and task.model_scheme != task.scheme:
            return convert_flat(tags, ptr, task.model_scheme, task.scheme)
        return tags

    @classmethod
    def train(cls, X: Any, y: Sequence[Sequence[str]] | None = None, *, dev: Any = None,
              dev_y: Sequence[Sequence[str]] | None = None, tokens: str = "tokens",
              tags: str | None = None, features: dict[str, str] | None = None,
              callback: Callable[[EpochReport], None] | None = None,
              checkpoint_dir: str | os.PathLike | None = None, resume: str | os.PathLike | None = None,
              **params) -> "Tagger":
        """Construct with ``params`` and fit; see `Tagger` and `Tagger.fit`."""
        return cls(**params).fit(X, y, dev=dev, dev_y=dev_y, tokens=tokens, tags=tags,
                                 features=features, callback=callback, checkpoint_dir=checkpoint_dir,
                                 resume=resume)

    def get_params(self) -> dict:
        return {k: getattr(self, k) for k in ("task", "template", "columns", "tag_column", "scheme",
                                              "constrained", "encoding", "epochs", "min_count",
                                              "seed", "dev_split", "refit", "feature_set")}

    # ------------------------------------------------------------------ tagging
    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise RuntimeError("this Tagger is not trained yet: call fit() or Tagger.load()")

    def _with_gazetteer(self, corpus: Corpus) -> Corpus:
        """Add the ``gaz`` column from the model's gazetteer (NER models trained with one)."""
        data = getattr(self, "extra_", {}).get("gazetteer")
        if data is None:
            return corpus
        from structperc.gazetteer import Gazetteer, add_column
        if not hasattr(self, "_gazetteer"):
            self._gazetteer = Gazetteer.from_json(data)
        return add_column(corpus, self._gazetteer, self.task_.inputs[0])

    def predict_corpus(self, corpus: Corpus) -> list[str]:
        """Predicted tag of every token of ``corpus`` (flat, in corpus order)."""
        self._check_fitted()
        corpus = self._with_gazetteer(corpus)
        feats = self.features_.transform(corpus)
        ids = self.weights_.predict(feats)
        task = self.task_
        if task.metric == "span" and task.scheme == "iob2" and task.model_scheme != "iob2":
            from structperc.schemes import ids_to_iob2
            fast = ids_to_iob2(ids, corpus.sent_ptr, self.label_set_.labels, task.model_scheme)
            if fast is not None:
                return fast
        return self._from_model_scheme(self.label_set_.decode(ids), corpus.sent_ptr, task)

    def predict(self, X: Any) -> list[list[str]]:
        """Tags for each sentence of ``X`` (token lists, a CoNLL path, a `Corpus`)."""
        self._check_fitted()
        corpus = self._corpus(X, None, need_tags=False)
        return _split_tags(self.predict_corpus(corpus), corpus.sent_ptr)

    def tag_dataset(self, dataset: Any, column: str = "predicted") -> Any:
        """A copy of a `datasets.Dataset` with a column of predicted tags (ClassLabel ids when the
        gold tag column is a ClassLabel, else strings)."""
        from structperc.corpus.hf import with_predictions
        return with_predictions(dataset, self.predict(dataset), column,
                                self.dataset_columns_.get("tags"))

    def tag(self, sentence: Sequence[Any]) -> list[str]:
        """Tags of one sentence: a list of tokens, or of tuples when the model reads several columns."""
        if isinstance(sentence, str):
            raise InputError("tag() takes a list of tokens, not a string")
        if not len(sentence):
            return []
        return self.predict([sentence])[0]

    # --------------------------------------------------------------- evaluation
    def _score(self, gold: list[list[str]], pred: list[list[str]]) -> float:
        from structperc.metrics import bmes_word_f1, span_f1, token_accuracy
        if self.task_.metric == "span":
            return span_f1(gold, pred)
        if self.task_.metric == "words":
            return bmes_word_f1(gold, pred)
        return token_accuracy(gold, pred)

    def evaluate(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, strict: bool = False) -> dict:
        """A report on gold-tagged data: span P/R/F1 per type (span tasks) and token accuracy."""
        from structperc.metrics import confusions, span_report, token_accuracy
        self._check_fitted()
        corpus = self._corpus(X, y, need_tags=True)
        gold = list(corpus.sentences(self.task_.tag_column))
        pred = _split_tags(self.predict_corpus(corpus), corpus.sent_ptr)
        if self.task_.metric == "span":
            report = span_report(gold, pred, strict=strict, scheme=self.task_.scheme)
        else:
            report = {"accuracy": token_accuracy(gold, pred), "confusions": confusions(gold, pred)}
        report["tokens"] = corpus.n_tokens
        report["sentences"] = len(corpus)
        return report

    def score(self, X: Any, y: Sequence[Sequence[str]] | None = None) -> float:
        """The task's headline number: span F1 or token accuracy."""
        r = self.evaluate(X, y)
        return r["micro"]["f1"] if "micro" in r else r["accuracy"]

    # ---------------------------------------------------------- saving/loading
    def save(self, path: str | os.PathLike) -> Path:
        """Write the model atomically to directory ``path`` (see `structperc.model_io`)."""
        self._check_fitted()
        meta_f, arrays = self.features_.state_dict()
        w = self.weights_
        arrays.update({f"state_{part}": values for part, values in pair_arrays(w.sparse).items()})
        arrays.update({f"cond_{part}": values for part, values in sparse_rows(w.cond[:-1]).items()})
        arrays["trans"] = w.trans.astype(np.float32)
        t = self.task_
        meta = {
            "labels": self.labels_, "task": t.name, "columns": list(t.columns),
            "tag_column": t.tag_column, "scheme": t.scheme, "encoding": t.model_scheme,
            "constrained": t.constrained,
            "metric": t.metric, "templates": self.template_lines_, "features": meta_f,
            "shapes": {"state": list(w.sparse.shape), "cond": list(w.cond[:-1].shape)},
            "params": {k: v for k, v in self.get_params().items() if k != "template"},
            "provenance": self.provenance_,
            "extra": getattr(self, "extra_", {}),
            "dataset_columns": getattr(self, "dataset_columns_", {}),
        }
        return save_archive(path, meta, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tagger":
        """Read a model written by `save`; damaged or foreign files raise `ModelFormatError`."""
        meta, arrays = load_archive(path)
        try:
            t = meta
            tagger = cls(**{k: v for k, v in t["params"].items() if k in cls().get_params()})
            tagger.template = t["templates"]
            tagger.task_ = Task(t["task"], tuple(t["columns"]), t["tag_column"], "", t["scheme"],
                                t["metric"], bool(t["constrained"]),
                                encoding=t.get("encoding", t["scheme"]))
            tagger.template_lines_ = list(t["templates"])
            templates = parse_templates(tagger.template_lines_)
            tagger.features_ = FeatureIndex.from_state(templates, t["features"], arrays)
            if t["scheme"] not in SPAN_SCHEMES + ("none", "bmes") or \
                    t.get("encoding", t["scheme"]) not in SPAN_SCHEMES + ("none", "bmes"):
                raise ValueError("unknown tag scheme")
            if not all(isinstance(c, str) for c in t["columns"]) or not isinstance(t["tag_column"], str):
                raise ValueError("column names must be strings")
            tagger.labels_ = list(t["labels"])
            tagger.label_set_ = LabelSet(tagger.labels_)
            if tagger.label_set_.labels != tagger.labels_:
                raise ValueError("labels are not sorted and unique")
            L = len(tagger.labels_)
            shapes = t["shapes"]
            if shapes["state"] != [tagger.features_.n_state_attributes, L] or \
                    shapes["cond"] != [tagger.features_.n_transition_attributes, L + 1, L]:
                raise ValueError("weight shapes do not match the feature tables")
            state = state_from_arrays({k: arrays[f"state_{k}"] for k in ("indptr", "indices", "values")},
                                      tuple(shapes["state"]))
            cond = dense_rows({k: arrays[f"cond_{k}"] for k in ("indptr", "indices", "values")},
                              tuple(shapes["cond"]), zero_rows=1)
            trans = np.asarray(arrays["trans"], dtype=np.float32)
            if trans.shape != (L + 1, L):
                raise ValueError("transition weights have the wrong shape")
            mask, end = tagger._masks()
            tagger.weights_ = Weights(state.padded(), trans, cond, mask, end)
            tagger.best_epoch_ = t["provenance"].get("best_epoch")
            tagger.provenance_ = t["provenance"]
            tagger.history_ = []
            tagger.extra_ = dict(t.get("extra", {}))
            tagger.dataset_columns_ = dict(t.get("dataset_columns", {}))
        except ModelFormatError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError,
                InputError) as exc:
            raise ModelFormatError(f"{path}: damaged structperc model ({type(exc).__name__}: {exc})") \
                from None
        return tagger


def _corpus_hash(corpus: Corpus) -> str:
    """A digest of every column of a corpus (checkpoints resume only on the same data)."""
    h = hashlib.sha256()
    h.update(corpus.sent_ptr.tobytes())
    for name in sorted(corpus.columns):
        h.update(name.encode())
        h.update("\x00".join(corpus.columns[name]).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _template_columns(template_lines: list[str]) -> set[str] | None:
    """Columns that templates read (None if they do not parse: reading all lets the usual error
    surface where it always did)."""
    try:
        lines = [line.strip().lstrip("?") for line in template_lines]  # optional lines read too
        return {p.atom.column for t in parse_templates(lines) for p in t.parts}
    except (InputError, ValueError):
        return None


def _split_tags(flat: list[str], ptr: np.ndarray) -> list[list[str]]:
    p = ptr.tolist()
    return [flat[p[i]:p[i + 1]] for i in range(len(p) - 1)]


def _is_dataset(X: Any) -> bool:
    return type(X).__module__.startswith("datasets.") and hasattr(X, "features")


def _sources(X: Any, corpus: Corpus) -> list[dict]:
    if isinstance(X, (str, os.PathLike)) and os.path.isfile(X):
        return [{"name": os.path.basename(str(X)), "sha256": file_sha256(X)}]
    return [{"name": corpus.source}]
