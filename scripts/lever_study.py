"""What the training-lever studies share (`study_margin.py`, `study_order2.py`): the four corpora with
their held-out protocol, and, for their ``--bench``, one corpus's training arrays as the estimator
featurizes them, with fresh trainer states over them."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"

#: chunk and sxu: a held-out tenth of train (``dev_split``); esp and ewt: their dev files.
CORPORA = {
    "chunk": {"kind": "tagger", "train": ROOT / "conll2000/train.txt", "test": ROOT / "conll2000/test.txt",
              "params": {"task": "chunk", "dev_split": 0.1}},
    "sxu": {"kind": "segmenter", "train": ROOT / "sighan2008_sxu/train.txt",
            "test": ROOT / "sighan2008_sxu/test.txt", "params": {"dev_split": 0.1}},
    "esp": {"kind": "tagger", "train": ROOT / "conll2002/esp.train", "dev": ROOT / "conll2002/esp.testa",
            "test": ROOT / "conll2002/esp.testb", "params": {"task": "ner"}},
    "ewt": {"kind": "tagger", "train": ROOT / "ud_en_ewt/en_ewt-ud-train.conllu",
            "dev": ROOT / "ud_en_ewt/en_ewt-ud-dev.conllu", "test": ROOT / "ud_en_ewt/en_ewt-ud-test.conllu",
            "params": {"task": "pos"}},
}


class _Captured(Exception):
    """Raised by `training_arrays`' stand-in trainer once it holds the training arrays."""


def training_arrays(corpus: str) -> dict:
    """The arrays the trainer receives when the corpus's estimator is fitted (featurized once, as the
    estimator does): features, gold ids, the feature set, the scheme's mask and end, partial labels'
    allowed sets and attribute values (None where absent)."""
    import structperc.fitting as fitting
    from structperc import Segmenter, Tagger

    spec = CORPORA[corpus]
    held: dict = {}

    def capture(feats, y, state, **kwargs):
        held.update(feats=feats, y=y, ptr=state.ptr, labels=state.labels, active=state.active,
                    L=state.Wt.shape[1], AT=state.Wc.shape[0], mask=kwargs["mask"], end=kwargs["end"],
                    allowed=kwargs.get("allowed"), values=kwargs.get("values"))
        raise _Captured
    original = fitting.train_perceptron
    fitting.train_perceptron = capture
    try:
        model = Segmenter(**spec["params"]) if spec["kind"] == "segmenter" else Tagger(**spec["params"])
        model.fit(str(spec["train"]))
    except _Captured:
        pass
    finally:
        fitting.train_perceptron = original
    return held


def fresh_state(held: dict):
    """A zero `structperc.train.perceptron.PerceptronState` over ``held``'s feature set."""
    import numpy as np

    from structperc.train import perceptron

    L, nnz = held["L"], len(held["labels"])
    return perceptron.PerceptronState(
        np.zeros(nnz, np.float32), np.zeros(nnz), np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L)),
        np.zeros((held["AT"], L + 1, L), np.float32), np.zeros((held["AT"], L + 1, L)),
        ptr=held["ptr"], labels=held["labels"], active=held["active"])
