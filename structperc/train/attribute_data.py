"""Training data of the sklearn face (`structperc.sklearn.StructuredPerceptron`): label sequences checked
against the attribute sequences, span labels converted to the scheme the model learns in and back, the
held-out sequences that score the iterations and fit the temperature, and the training run itself
(`train_attributes`). Kept here, below the face, so that the face holds its interface only."""
from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.attributes import AttributeIndex
from structperc.features.index import Features, compact_features
from structperc.features.task import Task, masks
from structperc.labels import LabelSet, valid_sequence
from structperc.labels.schemes import SPAN_SCHEMES, convert_flat
from structperc.model import schema
from structperc.model.weights import Weights
from structperc.train.options import SKLEARN, validate

#: The task name of the models the sklearn face writes.
TASK_NAME = "sklearn"


def attribute_task(tags: list[str], iterations: int, scheme: str, encoding: str | None,
                   constrained: bool | None) -> Task:
    """The task of a fit on the flat training labels ``tags``: the data's scheme (``"auto"`` resolved on
    them, `detect_scheme`), the scheme the model learns in, the constraint and the dev metric."""
    resolved = detect_scheme(tags) if scheme == "auto" else scheme
    span = resolved in SPAN_SCHEMES
    validate({"encoding": encoding, "constrained": constrained, "scheme": scheme, "resolved": resolved,
              "span": span}, face=SKLEARN)
    model_scheme = (encoding or "iobes") if span else resolved
    constrain = resolved != "none" if constrained is None else bool(constrained)
    metric = "words" if resolved == "bmes" else ("accuracy" if resolved == "none" else "span")
    return Task(TASK_NAME, ("attributes", "label"), "label", "", resolved, metric, constrain, iterations,
                encoding=model_scheme)


def train_attributes(index: AttributeIndex, feats: Features, tags: list[str], task: Task, opts: dict[str, Any],
                     dev_data: tuple[Any, Any] | None, verbose: bool, calibrate: bool) -> dict[str, Any]:
    """Train on ``feats`` (``index``'s) with the model-scheme labels ``tags`` for ``opts["iterations"]``,
    keeping the iteration that scores best on ``dev_data`` (X_dev, y_dev) if given; the weights without
    unused attributes, the labels, the best iteration and its score, the history and (``calibrate``, with
    dev data) the temperature's record."""
    from structperc.train.perceptron import PerceptronState, train_perceptron

    label_set = LabelSet(tags)
    labels = label_set.labels
    gold = label_set.encode(tags)
    mask, end = masks(labels, task)
    state = PerceptronState.fresh(index, len(labels), opts["feature_set"], feats.state, gold)
    dev = None if dev_data is None else Dev(index, dev_data[0], dev_data[1], task, labels)
    history: list = []

    def report(r: Any) -> None:
        history.append(r)
        if verbose:
            print(r, file=sys.stdout, flush=True)
    weights, best = train_perceptron(
        feats, gold, state, mask=mask, end=end, epochs=opts["iterations"], seed=opts["seed"],
        dev_score=None if dev is None else dev.score, dev_rows=None if dev is None else dev.rows,
        callback=report, consume=True, values=feats.values)
    weights, remap = drop_unused(index, weights)
    calibration = dev.calibration(weights, remap) if dev is not None and calibrate else None
    return {"weights": weights, "labels": labels, "best": best, "best_score": state.best_score,
            "history": history, "calibration": calibration}


class Dev:
    """Held-out sequences: scores the iterations' averaged weights, then fits the temperature."""

    def __init__(self, index: AttributeIndex, X: Any, y: Any, task: Task, labels: list[str]):
        feats = index.transform(X)
        self.task, self.labels = task, labels
        data = flat_tags(y, feats.sent_ptr, "y_dev")
        #: the gold labels as given (the dev score compares in the data's scheme)
        self.gold = split(data, feats.sent_ptr).tolist()
        #: the gold labels in the model's scheme (for the temperature's gold ids)
        self.tags = model_tags(data, feats.sent_ptr, "y_dev", task)
        self.feats = feats
        #: the dev data over the attributes it uses, renumbered, and those attributes (`train_perceptron`'s
        #: ``dev_rows``)
        self.compact, self.rows = compact_features(feats)

    def score(self, weights: Weights) -> float:
        from structperc.decode.decoder import predict
        from structperc.metrics import task_score

        ids = predict(weights, self.compact)
        ptr = self.feats.sent_ptr
        if converts(self.task):
            from structperc.features.instances import data_tags

            flat = data_tags(ids, ptr, self.labels, self.task)
        else:
            flat = np.asarray(self.labels, dtype=object)[ids].tolist()
        pred = split(flat, ptr)
        return task_score(self.task, self.gold, pred.tolist())

    def calibration(self, weights: Weights, remap: np.ndarray | None) -> dict:
        """τ fitted on the dev tokens (gold labels unknown to the model left out), as the schema
        stores it; ``remap``: the attribute ids after `drop_unused` (None: unchanged)."""
        from structperc.decode.calibration import fit_temperature, token_nll

        feats = self.feats
        if remap is not None:
            state = np.where(feats.state >= 0, remap[feats.state], -1).astype(np.int32)
            feats = Features(state, feats.trans, feats.sent_ptr, feats.values)
        gold = LabelSet(self.labels).encode(self.tags, unknown=-1)
        tau = fit_temperature(weights, feats, gold)
        nll = [token_nll(weights, feats, gold, 1.0), token_nll(weights, feats, gold, tau)]
        return {"temperature": tau, "source": "X_dev", "tokens": int(feats.sent_ptr[-1]), "nll": nll}


def detect_scheme(tags: Sequence[str]) -> str:
    """``scheme="auto"``: "iob2" when every tag is ``O``, ``B-X`` or ``I-X`` (X not empty) and one at
    least is not ``O``; else "none" (opaque labels). IOB1 data has the same shape and the same span
    reading (`structperc.labels.schemes.convert` reads an ``I-X`` that cannot continue a span as its
    start in both); its predictions come back as IOB2."""
    seen_span = False
    for tag in set(tags):
        if tag == "O":
            continue
        if len(tag) < 3 or tag[0] not in "BI" or tag[1] != "-":
            return "none"
        seen_span = True
    return "iob2" if seen_span else "none"


def converts(task: Task) -> bool:
    """Whether the model's labels are in another scheme than the data's (span labels learnt in IOBES)."""
    return task.metric == "span" and task.model_scheme != task.scheme


def data_tags_of(ids: np.ndarray, sent_ptr: np.ndarray, model: schema.Model) -> list[str]:
    """Predicted label ids as the data's labels (flat)."""
    if converts(model.task):
        from structperc.features.instances import data_tags

        return data_tags(ids, sent_ptr, model.labels, model.task)
    return np.asarray(model.labels, dtype=object)[ids].tolist()


def model_tags(tags: list[str], sent_ptr: np.ndarray, what: str, task: Task) -> list[str]:
    """The flat labels ``tags`` in the model's scheme (converted per sequence), checked against that
    scheme when the task is constrained."""
    if converts(task):
        tags = convert_flat(tags, sent_ptr, task.scheme, task.model_scheme)
    if task.constrained:
        ptr = sent_ptr.tolist()
        for i in range(len(ptr) - 1):
            if not valid_sequence(tags[ptr[i]:ptr[i + 1]], task.model_scheme):  # type: ignore[arg-type]
                raise InputError(f"{what}[{i}] is not a valid {task.model_scheme} sequence: use the "
                                 "scheme the labels follow, or constrained=False")
    return tags


def flat_tags(y: Any, sent_ptr: np.ndarray, what: str) -> list[str]:
    """The labels of ``y`` in token order, checked against the sequences' lengths."""
    if isinstance(y, (str, bytes)) or not hasattr(y, "__iter__"):
        raise InputError(f"{what} must be a list of label sequences, not {type(y).__name__}")
    seqs = [list(s) if not isinstance(s, (str, bytes)) else None for s in y]
    lengths = np.diff(sent_ptr)
    if len(seqs) != len(lengths):
        raise InputError(f"{what} has {len(seqs)} sequences, X has {len(lengths)}")
    flat: list[str] = []
    for i, (seq, n) in enumerate(zip(seqs, lengths.tolist())):
        if seq is None or len(seq) != n:
            raise InputError(f"{what}[{i}] has {'a string' if seq is None else len(seq)} label(s) for "
                             f"{n} item(s)")
        flat += seq
    if not all(isinstance(t, str) for t in flat):
        bad = next(t for t in flat if not isinstance(t, str))
        raise InputError(f"labels must be strings, not {type(bad).__name__} ({bad!r})")
    # plain str: numpy's str_ (a label array's items) would otherwise reach classes_ and the model file
    return [t if type(t) is str else str(t) for t in flat]


def split(flat: list[Any], sent_ptr: np.ndarray) -> np.ndarray:
    """A 1-D object array of the per-sequence slices of ``flat`` (never 2-D, whatever the lengths)."""
    ptr = sent_ptr.tolist()
    out = np.empty(len(ptr) - 1, dtype=object)
    for i in range(len(ptr) - 1):
        out[i] = flat[ptr[i]:ptr[i + 1]]
    return out


def drop_unused(index: AttributeIndex, weights: Weights) -> tuple[Weights, np.ndarray | None]:
    """Weights and index without the attributes whose weights are all zero (CRFsuite's model keeps
    only attributes of non-zero features too: they change no score, and cost room in the file),
    and the new id of every old attribute (-1: dropped; None when none is)."""
    keep = weights.sparse.row_norms() > 0
    if keep.all():
        return weights, None
    index.prune(keep)
    remap = np.where(keep, np.cumsum(keep) - 1, -1)
    return Weights(weights.sparse.select(keep), weights.trans, weights.cond, weights.mask,
                   weights.end), remap
