"""How the models in this folder were made: run once, with structperc 0.1.0 as it was before the
package was reorganised (commit 4b13eae), from the repository root:

    python tests/data/make_legacy_models.py

Each model directory sits beside the output the old code gave on `SAMPLE_TEXT`-style inputs
(``*.expected.json``); `tests/model/test_legacy_models.py` checks that today's code loads the old
files and answers identically. Do not re-run it with newer code: the point is the old bytes.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

os.environ.setdefault("SOURCE_DATE_EPOCH", "1700000000")

from structperc import Tagger
from structperc.segmenter import Segmenter  # noqa: E402

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parents[1] / "corpora" / "conll2000-train-sample.txt.gz"

NER_TRAIN = [
    [("Juan", "NP", "B-PER"), ("vive", "VM", "O"), ("en", "SP", "O"), ("Madrid", "NP", "B-LOC"), (".", "Fp", "O")],
    [("La", "DA", "O"), ("ONU", "NP", "B-ORG"), ("visitó", "VM", "O"), ("Nueva", "NP", "B-LOC"),
     ("York", "NP", "I-LOC"), ("ayer", "RG", "O"), (".", "Fp", "O")],
    [("María", "NP", "B-PER"), ("López", "NP", "I-PER"), ("trabaja", "VM", "O"), ("para", "SP", "O"),
     ("la", "DA", "O"), ("ONU", "NP", "B-ORG"), (".", "Fp", "O")],
    [("El", "DA", "O"), ("Real", "NP", "B-ORG"), ("Madrid", "NP", "I-ORG"), ("ganó", "VM", "O"),
     ("en", "SP", "O"), ("Zúrich", "NP", "B-LOC"), (".", "Fp", "O")],
] * 3
NER_TEST = [[("Juan", "NP"), ("visitó", "VM"), ("Zúrich", "NP"), ("y", "CC"), ("Nueva", "NP"),
             ("York", "NP"), (".", "Fp")],
            [("María", "NP"), ("ganó", "VM"), ("en", "SP"), ("Madrid", "NP")]]
CWS_TRAIN = ["上海  体育局  召开  会议", "北京  体育局  召开  宣传  工作  会议", "会议  在  上海  召开",
             "他  说  ，  ２００８年  的  会议  很  成功"] * 3
CWS_TEST = ["上海体育局召开宣传会议", "北京召开会议，他说很成功", "２００８年的会议"]


def sentences(path: Path, n: int) -> list[list[tuple[str, ...]]]:
    out, cur = [], []
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                cur.append(tuple(line.split()))
            elif cur:
                out.append(cur)
                cur = []
                if len(out) == n:
                    break
    return out


def main() -> None:
    sents = sentences(SAMPLE, 240)
    train, test = sents[:200], sents[200:]
    chunk = Tagger.train([[t[:2] for t in s] for s in train], [[t[2] for t in s] for s in train],
                         columns=["word", "pos", "chunk"], epochs=3, seed=1,
                         template=["bias", "w[0]", "pos[0]", "suffix2(w[0])", "pos[-1]|pos[0]",
                                   "y[-1]|y[0]|pos[0]"])
    chunk.save(HERE / "legacy-chunk")
    X = [[t[:2] for t in s] for s in test]
    (HERE / "legacy-chunk.expected.json").write_text(json.dumps({"X": X, "tags": chunk.predict(X)}))

    ner = Tagger.train([[t[:2] for t in s] for s in NER_TRAIN], [[t[2] for t in s] for s in NER_TRAIN],
                       task="ner", columns=["word", "pos", "ner"], epochs=4, seed=0)
    ner.save(HERE / "legacy-ner")
    (HERE / "legacy-ner.expected.json").write_text(
        json.dumps({"X": NER_TEST, "tags": ner.predict(NER_TEST)}, ensure_ascii=False))

    seg = Segmenter.train(CWS_TRAIN, epochs=4, folds=3)
    seg.save(HERE / "legacy-cws")
    (HERE / "legacy-cws.expected.json").write_text(
        json.dumps({"texts": CWS_TEST, "words": seg.segment_texts(CWS_TEST)}, ensure_ascii=False))


if __name__ == "__main__":
    main()
