"""``sklearn_crfsuite.metrics`` for `structperc.sklearn.StructuredPerceptron`: scores of label sequences,
computed by scikit-learn.

``y_true`` and ``y_pred`` are lists of label sequences (`StructuredPerceptron.predict`'s 1-D object array
of lists too). The ``flat_*`` functions score the tokens: both are flattened in order and handed, with
any keyword arguments, to the `sklearn.metrics` function of the same name (``average="weighted"``,
``labels=...``, ``zero_division`` …), exactly as sklearn-crfsuite does. Two checks it does not make: a
sequence given as a string (a flat list of labels by mistake) and a pair of sequences of different
lengths raise ``ValueError`` instead of being scored misaligned.

`sequence_accuracy_score` is the share of sequences predicted whole, by `sklearn.metrics.accuracy_score`
over sequence ids. sklearn-crfsuite's compares ``np.array(y, dtype=object)`` elementwise, which counts
tokens, not sequences, when every sequence has the same length (its value can exceed 1); the two agree
otherwise.

>>> round(flat_accuracy_score([["B-NP", "I-NP"], ["O"]], [["B-NP", "O"], ["O"]]), 3)
0.667
>>> sequence_accuracy_score([["B-NP", "I-NP"], ["O"]], [["B-NP", "O"], ["O"]])
0.5
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

__all__ = ["flat_accuracy_score", "flat_classification_report", "flat_f1_score", "flat_fbeta_score",
           "flat_precision_score", "flat_recall_score", "sequence_accuracy_score"]


def _sequences(y: Any, what: str) -> list[list[Any]]:
    if isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
        raise ValueError(f"{what} must be a list of label sequences, not {type(y).__name__}")
    out = []
    for i, seq in enumerate(y):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
            raise ValueError(f"{what}[{i}] is {type(seq).__name__} {seq!r}, not a sequence of labels: "
                             f"{what} must be a list of label sequences")
        out.append(list(seq))
    return out


def _aligned(y_true: Iterable[Sequence[Any]], y_pred: Iterable[Sequence[Any]]) \
        -> tuple[list[list[Any]], list[list[Any]]]:
    true, pred = _sequences(y_true, "y_true"), _sequences(y_pred, "y_pred")
    if len(true) != len(pred):
        raise ValueError(f"y_true has {len(true)} sequences, y_pred {len(pred)}")
    for i, (t, p) in enumerate(zip(true, pred)):
        if len(t) != len(p):
            raise ValueError(f"y_true[{i}] has {len(t)} labels, y_pred[{i}] {len(p)}")
    return true, pred


def _flat(y_true: Any, y_pred: Any) -> tuple[list[Any], list[Any]]:
    true, pred = _aligned(y_true, y_pred)
    return [t for s in true for t in s], [t for s in pred for t in s]


def flat_accuracy_score(y_true: Any, y_pred: Any, **kwargs: Any) -> float:
    """Token accuracy (`sklearn.metrics.accuracy_score` of the flattened labels)."""
    from sklearn import metrics

    return metrics.accuracy_score(*_flat(y_true, y_pred), **kwargs)


def flat_precision_score(y_true: Any, y_pred: Any, **kwargs: Any) -> Any:
    """Token precision (`sklearn.metrics.precision_score` of the flattened labels; its keywords)."""
    from sklearn import metrics

    return metrics.precision_score(*_flat(y_true, y_pred), **kwargs)


def flat_recall_score(y_true: Any, y_pred: Any, **kwargs: Any) -> Any:
    """Token recall (`sklearn.metrics.recall_score` of the flattened labels; its keywords)."""
    from sklearn import metrics

    return metrics.recall_score(*_flat(y_true, y_pred), **kwargs)


def flat_f1_score(y_true: Any, y_pred: Any, **kwargs: Any) -> Any:
    """Token F1 (`sklearn.metrics.f1_score` of the flattened labels; its keywords). Span F1 (a chunk
    counted right only whole) is `structperc.metrics`' and seqeval's, not this."""
    from sklearn import metrics

    return metrics.f1_score(*_flat(y_true, y_pred), **kwargs)


def flat_fbeta_score(y_true: Any, y_pred: Any, beta: float, **kwargs: Any) -> Any:
    """Token F-beta (`sklearn.metrics.fbeta_score` of the flattened labels; its keywords)."""
    from sklearn import metrics

    return metrics.fbeta_score(*_flat(y_true, y_pred), beta=beta, **kwargs)


def flat_classification_report(y_true: Any, y_pred: Any, labels: Sequence[Any] | None = None,
                               **kwargs: Any) -> Any:
    """`sklearn.metrics.classification_report` of the flattened labels (``labels``: the rows, e.g.
    `StructuredPerceptron.classes_` without ``"O"``; ``output_dict=True`` for a dict)."""
    from sklearn import metrics

    return metrics.classification_report(*_flat(y_true, y_pred), labels=labels, **kwargs)


def sequence_accuracy_score(y_true: Any, y_pred: Any, **kwargs: Any) -> float:
    """The share of sequences whose every label is right (0 for no sequences), by
    `sklearn.metrics.accuracy_score` over sequence ids (its keywords: ``normalize``,
    ``sample_weight`` per sequence)."""
    from sklearn import metrics

    true, pred = _aligned(y_true, y_pred)
    if not true:
        return 0.0
    ids: dict[tuple, int] = {}
    true_ids = [ids.setdefault(tuple(s), len(ids)) for s in true]
    pred_ids = [ids.setdefault(tuple(s), len(ids)) for s in pred]
    return metrics.accuracy_score(true_ids, pred_ids, **kwargs)
