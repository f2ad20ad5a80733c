"""Evaluation reports: seqeval span scores, token accuracy, confusions, and a task's headline score
(`task_score`) and report (`tagging_report`).

seqeval imports scikit-learn (seconds of start-up), so it is imported inside the functions that make a
report, never at module import.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    from structperc.features.task import Task

Tags = Sequence[Sequence[str]]


def token_accuracy(gold: Tags, pred: Tags) -> float:
    """Fraction of tokens whose predicted tag equals the gold tag."""
    total = correct = 0
    for g, p in zip(gold, pred):
        total += len(g)
        correct += sum(a == b for a, b in zip(g, p))
    return correct / total if total else 0.0


def _seqeval_scheme(scheme: str | None):
    if scheme in (None, "none", "iob1", "iob2"):
        return None
    from seqeval.scheme import IOBES
    return IOBES


def span_entities(seqs: Tags) -> set[tuple[str, int, int]]:
    """(type, first, last) of every span of ``seqs`` by conlleval's rules, as seqeval's default mode
    reads them (`seqeval.metrics.sequence_labeling.get_entities`, sentences joined by an ``O``):
    written here so that scoring a dev set every epoch does not import seqeval, which imports
    scikit-learn (+130 MiB of training's peak memory on CoNLL-2000)."""
    out = set()
    prev_tag, prev_type, begin, i = "O", "", 0, 0
    for seq in seqs:
        for chunk in list(seq) + ["O"]:
            tag, type_ = chunk[0], chunk[1:].split("-", maxsplit=1)[-1] or "_"
            if prev_tag in "ES" or (prev_tag in "BI" and tag in "BSO") or \
                    (prev_tag not in "O." and prev_type != type_):
                out.add((prev_type, begin, i - 1))
            if tag in "BS" or (prev_tag in "ESO" and tag in "EI") or (tag not in "O." and prev_type != type_):
                begin = i
            prev_tag, prev_type, i = tag, type_, i + 1
    return out


def span_f1(gold: Tags, pred: Tags, *, strict: bool = False, scheme: str | None = None) -> float:
    """Micro span F1 as conlleval computes it (seqeval's default mode, same floating-point formula),
    or seqeval's strict mode."""
    if not strict:
        true, found = span_entities(gold), span_entities(pred)
        tp = len(true & found)
        precision = tp / len(found) if found else 0.0
        recall = tp / len(true) if true else 0.0
        denom = precision + recall
        return float(2.0 * precision * recall / (denom if denom != 0.0 else 1.0))
    from seqeval.metrics import f1_score
    kw = {"mode": "strict", "scheme": _seqeval_scheme(scheme) or _iob2()}
    return float(f1_score([list(g) for g in gold], [list(p) for p in pred], zero_division=0, **kw))


def _iob2():
    from seqeval.scheme import IOB2
    return IOB2


def span_report(gold: Tags, pred: Tags, *, strict: bool = False, scheme: str | None = None) -> dict:
    """Per-type precision/recall/F1/support plus micro and macro averages and token accuracy."""
    import warnings

    from seqeval.metrics import classification_report
    kw = {"mode": "strict", "scheme": _seqeval_scheme(scheme) or _iob2()} if strict else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = classification_report([list(g) for g in gold], [list(p) for p in pred],
                                    output_dict=True, zero_division=0, **kw)
    out: dict = {"types": {}, "accuracy": token_accuracy(gold, pred)}
    for name, row in rep.items():
        entry = {"precision": float(row["precision"]), "recall": float(row["recall"]),
                 "f1": float(row["f1-score"]), "support": int(row["support"])}
        if name.endswith(" avg"):
            out[name.replace(" avg", "")] = entry
        else:
            out["types"][name] = entry
    return out


def confusions(gold: Tags, pred: Tags, top: int = 10) -> list[tuple[str, str, int]]:
    """The most frequent (gold, predicted) pairs among errors."""
    counts: Counter = Counter()
    for g, p in zip(gold, pred):
        counts.update((a, b) for a, b in zip(g, p) if a != b)
    return [(a, b, n) for (a, b), n in counts.most_common(top)]


def word_scores(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]],
                train_words: set[str] | None = None) -> dict:
    """SIGHAN bakeoff scores: word precision, recall and F1 by comparing word character spans, and
    with ``train_words`` the recall of out-of-vocabulary and in-vocabulary gold words."""
    from structperc.labels.bmes import word_spans

    n_gold = n_pred = correct = 0
    oov = oov_hit = iv = iv_hit = 0
    for g, p in zip(gold, pred):
        gs, ps = word_spans(g), set(word_spans(p))
        n_gold += len(gs)
        n_pred += len(ps)
        for w, span in zip(g, gs):
            hit = span in ps
            correct += hit
            if train_words is not None:
                if w in train_words:
                    iv += 1
                    iv_hit += hit
                else:
                    oov += 1
                    oov_hit += hit
    precision = correct / n_pred if n_pred else 0.0
    recall = correct / n_gold if n_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    out = {"precision": precision, "recall": recall, "f1": f1, "words": n_gold}
    if train_words is not None:
        out.update(oov_rate=oov / n_gold if n_gold else 0.0, oov_recall=oov_hit / oov if oov else 0.0,
                   iv_recall=iv_hit / iv if iv else 0.0)
    return out


def bmes_word_f1(gold: Tags, pred: Tags) -> float:
    """Word F1 of two B/M/E/S tag sequences over the same characters."""
    from structperc.labels.bmes import tags_to_words

    g = [tags_to_words("x" * len(t), t) for t in gold]
    p = [tags_to_words("x" * len(t), t) for t in pred]
    return word_scores(g, p)["f1"]


#: Equal-width confidence bins of the expected calibration error (the issue's 15, as Guo et al. 2017).
ECE_BINS = 15
#: Confidence thresholds of the accuracy-coverage curve.
COVERAGE_THRESHOLDS = (0.0, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99)


def _bin_of(confidence: np.ndarray, bins: int) -> np.ndarray:
    """Bin i holds confidences in (i/bins, (i+1)/bins]; 0 falls into the first."""
    return np.clip(np.ceil(confidence * bins).astype(np.int64) - 1, 0, bins - 1)


def reliability(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> list[dict]:
    """Per equal-width confidence bin: its bounds, token count, mean confidence and accuracy (the
    points of a reliability diagram; DeGroot & Fienberg 1983, Niculescu-Mizil & Caruana 2005)."""
    confidence = np.asarray(confidence, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    b = _bin_of(confidence, bins)
    count = np.bincount(b, minlength=bins)
    conf = np.bincount(b, weights=confidence, minlength=bins)
    hit = np.bincount(b, weights=correct, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf, accuracy = conf / count, hit / count
    return [{"lo": i / bins, "hi": (i + 1) / bins, "count": int(count[i]),
             "confidence": float(mean_conf[i]) if count[i] else None,
             "accuracy": float(accuracy[i]) if count[i] else None} for i in range(bins)]


def expected_calibration_error(confidence: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> float:
    """Σ_bins (n_b / n) · |accuracy_b − confidence_b| over equal-width bins (Naeini, Cooper &
    Hauskrecht 2015; Guo, Pleiss, Sun & Weinberger 2017, "On calibration of modern neural networks")."""
    n = len(confidence)
    if n == 0:
        return 0.0
    return float(sum(r["count"] * abs(r["accuracy"] - r["confidence"])
                     for r in reliability(confidence, correct, bins) if r["count"]) / n)


def accuracy_coverage(confidence: np.ndarray, correct: np.ndarray,
                      thresholds: Sequence[float] = COVERAGE_THRESHOLDS) -> list[dict]:
    """For each threshold, the fraction of tokens whose confidence reaches it (coverage) and their
    accuracy: what a user keeping only confident tags gets."""
    confidence = np.asarray(confidence, dtype=np.float64)
    correct = np.asarray(correct, dtype=bool)
    out = []
    for t in thresholds:
        kept = confidence >= t
        n = int(kept.sum())
        out.append({"threshold": float(t), "coverage": n / max(len(confidence), 1),
                    "accuracy": float(correct[kept].mean()) if n else None})
    return out


def format_report(report: dict) -> str:
    """A fixed-width text table of a span report or an accuracy report."""
    lines = []
    if "types" in report:
        lines.append(f"{'type':<12} {'precision':>9} {'recall':>9} {'f1':>9} {'support':>9}")
        rows = sorted(report["types"].items()) + [(k, report[k]) for k in ("micro", "macro", "weighted")
                                                  if k in report]
        for name, r in rows:
            if name == "micro":
                lines.append("")
            lines.append(f"{name:<12} {100 * r['precision']:>9.2f} {100 * r['recall']:>9.2f} "
                         f"{100 * r['f1']:>9.2f} {r['support']:>9d}")
        lines.append("")
    if "oov_recall" in report or ("f1" in report and "types" not in report):
        lines.append(f"words {report['words']}  P {100 * report['precision']:.2f}  "
                     f"R {100 * report['recall']:.2f}  F1 {100 * report['f1']:.2f}")
        if "oov_recall" in report:
            lines.append(f"OOV rate {100 * report['oov_rate']:.2f}  OOV recall "
                         f"{100 * report['oov_recall']:.2f}  IV recall {100 * report['iv_recall']:.2f}")
    if "accuracy" in report:
        lines.append(f"token accuracy {100 * report['accuracy']:.2f} ({report.get('tokens', '?')} tokens)")
    if "calibration" in report:
        c = report["calibration"]
        lines.append(f"calibration ECE {c['ece']:.4f} ({ECE_BINS} bins, temperature {c['temperature']:.4g}"
                     f"{'' if c.get('fitted') else ', not fitted'})")
    if report.get("confusions"):
        lines.append("top confusions (gold -> predicted: count)")
        lines.extend(f"  {g} -> {p}: {n}" for g, p, n in report["confusions"])
    return "\n".join(lines)


def to_json(report: dict) -> str:
    return json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True)

def task_score(task: Task, gold: list[list[str]], pred: list[list[str]]) -> float:
    """The task's headline number on tags: span F1, BMES word F1 or token accuracy."""
    if task.metric == "span":
        return span_f1(gold, pred)
    if task.metric == "words":
        return bmes_word_f1(gold, pred)
    return token_accuracy(gold, pred)


def tagging_report(gold: list[list[str]], pred: list[list[str]], task: Task, *,
                   strict: bool = False) -> dict:
    """Span P/R/F1 per type (span tasks) or token accuracy and confusions, with the counts."""
    if task.metric == "span":
        report = span_report(gold, pred, strict=strict, scheme=task.scheme)
    else:
        report = {"accuracy": token_accuracy(gold, pred), "confusions": confusions(gold, pred)}
    report.update(tokens=sum(map(len, gold)), sentences=len(gold))
    return report
