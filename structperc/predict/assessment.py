"""What a tagger says about its own output: scores on gold data, and probabilities — marginals, k-best
lists, sequence probabilities and the calibration of their temperature — each one call into
`structperc.metrics` or `structperc.predict` (kept out of `Tagger`, which keeps training, prediction
and persistence)."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from structperc import predict
from structperc.errors import InputError
from structperc.features.instances import check_span_tags, check_tags_match, hidden_tags, split_tags
from structperc.features.task import Task
from structperc.io.corpus import Corpus
from structperc.metrics import tagging_report
from structperc.model import schema


class Assessment:
    """Mixed into `structperc.tagger.Tagger`: what it adds needs only the trained model, the corpus
    reader and the fitted check, which the estimator provides."""

    calibration_: dict | None

    def _check_fitted(self) -> None:
        raise NotImplementedError

    def _corpus(self, X: Any, y: Any = None, *, need_tags: bool) -> Corpus:
        raise NotImplementedError

    @property
    def model_(self) -> schema.Model:
        raise NotImplementedError

    labels_: list[str]
    task_: Task

    def predict_corpus(self, corpus: Corpus, allowed: np.ndarray | None = None) -> list[str]:
        raise NotImplementedError

    def gold_corpus(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, partial: bool = True) -> Corpus:
        """``X`` read with its gold tags, refused if they are another task's (see `evaluate`), or, for a span
        task, if some are not tags of its scheme (``FOO`` among IOB2 tags: scored as a span type ``OO``, and a
        traceback from seqeval's strict mode), naming the first one's line; the model's unknown tag (``?``,
        partial labels) only where ``partial`` (calibration reads the known tags; a score needs them all)."""
        self._check_fitted()
        corpus = self._corpus(X, y, need_tags=True)
        check_tags_match(corpus, self.labels_, self.task_)
        unknown = self.model_.unknown_tag
        check_span_tags(corpus, self.task_, unknown)
        hidden = None if partial else hidden_tags(corpus, self.task_, unknown)
        if hidden is not None:
            raise InputError(f"tag {unknown!r} is the unknown tag (partial labels): a score needs every gold tag",
                             corpus.where(int(np.flatnonzero(hidden)[0])))
        return corpus

    def evaluate(self, X: Any, y: Sequence[Sequence[str]] | None = None, *, strict: bool = False,
                 calibration: bool = True) -> dict:
        """A report on gold-tagged data: span P/R/F1 per type (span tasks) or token accuracy, and
        (``calibration``) the expected calibration error of the token confidence (first-order models: a
        second-order one has no marginals)."""
        corpus = self.gold_corpus(X, y, partial=False)
        gold = list(corpus.sentences(self.task_.tag_column))
        pred = split_tags(self.predict_corpus(corpus), corpus.sent_ptr)
        report = tagging_report(gold, pred, self.task_, strict=strict)
        model = self.model_
        if calibration and model.weights.order == 1:
            c = predict.calibration_report(model, corpus)
            report["calibration"] = {k: c[k] for k in ("temperature", "fitted", "ece", "nll")}
        return report

    def score(self, X: Any, y: Sequence[Sequence[str]] | None = None) -> float:
        """The task's headline number: span F1 or token accuracy."""
        report = self.evaluate(X, y, calibration=False)
        return report["micro"]["f1"] if "micro" in report else report["accuracy"]

    def _no_sentences(self, X: Any) -> bool:
        """True for an empty list or tuple of sentences, whose predictions are an empty list (a batch loop's last
        batch may be empty); any other input goes to the reader, which refuses an empty file with its name."""
        self._check_fitted()
        return isinstance(X, (list, tuple)) and len(X) == 0

    def _constrained(self, X: Any, forced: Any, allowed: Any) -> tuple[Corpus, np.ndarray | None]:
        self._check_fitted()
        corpus = self._corpus(X, None, need_tags=False)
        return corpus, predict.constraint_mask(self.model_, corpus, forced=forced, allowed=allowed)

    def predict_marginals(self, X: Any, *, forced: predict.Forced | None = None,
                          allowed: predict.Allowed | None = None) -> list[list[dict[str, float]]]:
        """Per sentence, per token, {tag: probability} at the calibrated temperature (exact
        forward-backward over the decoder's lattice; see `structperc.predict`)."""
        if self._no_sentences(X):
            return []
        corpus, mask = self._constrained(X, forced, allowed)
        return predict.marginal_dicts(self.model_, corpus, mask)

    def predict_nbest(self, X: Any, k: int = 5, *, forced: predict.Forced | None = None,
                      allowed: predict.Allowed | None = None) -> list[list[tuple[list[str], float]]]:
        """Per sentence, up to ``k`` (tags, probability) best first (exact list Viterbi)."""
        if self._no_sentences(X):
            return []
        corpus, mask = self._constrained(X, forced, allowed)
        model = self.model_
        return [[(tags, p) for tags, _, p in paths]
                for paths in predict.k_best(model, predict.featurize(model, corpus), k, mask)]

    def predict_proba_sequence(self, X: Any, *, forced: predict.Forced | None = None,
                               allowed: predict.Allowed | None = None) -> list[float]:
        """The probability of each sentence's predicted tag sequence."""
        if self._no_sentences(X):
            return []
        corpus, mask = self._constrained(X, forced, allowed)
        model = self.model_
        feats = predict.featurize(model, corpus)
        return predict.path_probabilities(model, feats, predict.decode(model, feats, mask), mask).tolist()

    def calibrate(self, X: Any, y: Sequence[Sequence[str]] | None = None) -> dict:
        """Refit the temperature of the probabilities on gold-tagged held-out ``X``; returns the
        record kept in ``calibration_`` (and saved with the model)."""
        self.calibration_ = predict.calibrate(self.model_, self.gold_corpus(X, y))
        return self.calibration_

