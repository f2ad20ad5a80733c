"""Accuracy floors on the full corpora in ../shared/corpora (skipped where they are absent).

A floor guards against regressions that the small unit tests cannot see (a feature that silently
stops firing, a wrong averaging term): each costs a little accuracy, not a crash.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from testkit import CORPORA

from structperc import Tagger

pytestmark = pytest.mark.corpus   # also for tests added later; each test carries it too

CONLL2000 = CORPORA / "conll2000"


def _conll2000() -> tuple[Path, Path]:
    train, test = CONLL2000 / "train.txt", CONLL2000 / "test.txt"
    missing = [str(p) for p in (train, test) if not p.is_file()]
    if missing:
        pytest.skip(f"CoNLL-2000 corpus not found ({', '.join(missing)} missing)")
    return train, test


@pytest.mark.corpus
def test_conll2000_crfsuite_template_floor():
    train, test = _conll2000()
    tagger = Tagger.train(str(train), columns=["word", "pos", "chunk"], template="crfsuite", epochs=10,
                          seed=0)
    f1 = tagger.score(str(test))
    # measured 0.9367 (10 epochs, seed 0, IOBES training encoding; 0.9355 when trained in IOB2)
    assert f1 >= 0.934, f"CoNLL-2000 span F1 {f1:.4f} < 0.934 with the crfsuite template"


def _files(folder: str, *names: str) -> list[Path]:
    paths = [CORPORA / folder / n for n in names]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        pytest.skip(f"corpus not found ({', '.join(missing)} missing)")
    return paths


@pytest.mark.corpus
def test_conll2000_default_template_floor():
    train, test = _conll2000()
    # 5 epochs: what `structperc train --dev-split 0.1 --epochs 15` picks on a held-out tenth of the
    # training data (never on test); the held-out run itself is too slow to repeat here.
    tagger = Tagger.train(str(train), columns=["word", "pos", "chunk"], epochs=5, seed=0)
    f1 = tagger.score(str(test))
    assert f1 >= 0.940, f"CoNLL-2000 span F1 {f1:.4f} < 0.940 with the default template"  # measured 0.9411


@pytest.mark.corpus
def test_dev_split_picks_epochs_on_train_only():
    train, _ = _conll2000()
    tagger = Tagger(columns=["word", "pos", "chunk"], template="crfsuite", epochs=4, dev_split=0.1,
                    seed=0)
    tagger.fit(str(train))
    held_out = [r.dev_score for r in tagger.dev_history_]
    assert tagger.best_epoch_ == 1 + max(range(len(held_out)), key=held_out.__getitem__)
    assert tagger.provenance_["n_sentences"] == 8936  # the refit used all of train


@pytest.mark.corpus
def test_sxu_segmentation_floor():
    from structperc.segmenter import Segmenter

    train, test = _files("sighan2008_sxu", "train.txt", "test.txt")
    seg = Segmenter.train(str(train), epochs=12, seed=0)
    report = seg.evaluate(str(test))
    # measured F1 0.9566 (P 0.9523, R 0.9610, OOV-R 0.5828, IV-R 0.9814); 0.9570 with 15 epochs
    assert report["f1"] >= 0.954, report
    assert report["oov_recall"] >= 0.56, report


@pytest.mark.corpus
def test_ud_ewt_upos_floor():
    train, dev, test = _files("ud_en_ewt", "en_ewt-ud-train.conllu", "en_ewt-ud-dev.conllu",
                              "en_ewt-ud-test.conllu")
    tagger = Tagger.train(str(train), task="pos", epochs=19, seed=0)  # 19: best on the dev file
    acc = tagger.score(str(test))
    # measured 0.9545 with the ambiguity classes of #20 (0.9504 before them)
    assert acc >= 0.953, f"UD EWT UPOS accuracy {acc:.4f} < 0.953"


@pytest.mark.corpus
def test_conll2002_spanish_ner_floor():
    train, test = _files("conll2002", "esp.train", "esp.testb")
    # 8 epochs: the best mean esp.testa F1 of the ner preset over seeds 0-7 (77.64); the preset's
    # templates were chosen on esp.testa too, never on esp.testb
    tagger = Tagger.train(str(train), task="ner", epochs=8, seed=0)
    f1 = tagger.score(str(test))
    # measured 0.8105 (esp.testa 0.7909) with #20's block folds and gazt column; 0.8049 before them
    assert f1 >= 0.808, f"CoNLL-2002 esp.testb F1 {f1:.4f} < 0.808"


@pytest.mark.corpus
def test_conll2002_spanish_ner_second_order_floor():
    """The opt-in second-order transitions (`Tagger(order=2)`) on real data: chosen on esp.testa
    (+0.41 F1 over 5 seeds); the same preset and 8 epochs as the first-order floor."""
    train, test = _files("conll2002", "esp.train", "esp.testb")
    tagger = Tagger.train(str(train), task="ner", epochs=8, seed=0, order=2)
    assert tagger.weights_.order2 is not None
    f1 = tagger.score(str(test))
    # measured 0.8075 for seed 0 (seeds 0-4: 80.75 / 81.57 / 81.81 / 82.18 / 81.85, mean 81.63; order 1
    # 81.27 on the same seeds)
    assert f1 >= 0.805, f"CoNLL-2002 esp.testb F1 with order=2 {f1:.4f} < 0.805"


@pytest.mark.corpus
def test_conll2002_spanish_ner_two_stage_floor():
    """The opt-in two-stage tagger (`Tagger(two_stage=True)`): its column chosen on esp.testa
    (``scripts/study_ner_twopass.py``, ``scripts/bench_two_stage.py``); the preset's 8 epochs."""
    train, test = _files("conll2002", "esp.train", "esp.testb")
    tagger = Tagger.train(str(train), task="ner", epochs=8, seed=0, two_stage=True)
    assert tagger.stage1_ is not None and tagger.template_lines_[-1] == "tmd[0]"
    f1 = tagger.score(str(test))
    # measured 0.8119 for seed 0 (esp.testa 0.8010; one stage 0.8105 and 0.7909)
    assert f1 >= 0.809, f"CoNLL-2002 esp.testb F1 with two stages {f1:.4f} < 0.809"


@pytest.mark.corpus
def test_conll2002_spanish_ner_second_order_two_stage_floor():
    """Both opt-in NER levers at once, the most accurate NER configuration here (esp.testa 79.87 against
    the default's 78.45, seeds 0-4)."""
    train, test = _files("conll2002", "esp.train", "esp.testb")
    tagger = Tagger.train(str(train), task="ner", epochs=8, seed=0, order=2, two_stage=True)
    assert tagger.weights_.order2 is not None and tagger.stage1_.weights.order2 is not None
    f1 = tagger.score(str(test))
    # measured 0.8157 for seed 0 (seeds 0-4: 81.57 / 82.37 / 82.28 / 82.11 / 81.81, mean 82.02)
    assert f1 >= 0.813, f"CoNLL-2002 esp.testb F1 with order=2 and two stages {f1:.4f} < 0.813"


@pytest.mark.corpus
def test_conll2002_dutch_ner_floor():
    train, test = _files("conll2002", "ned.train", "ned.testb")
    # 13 epochs: the best mean ned.testa F1 of the ner preset over seeds 0-3 (77.52)
    tagger = Tagger.train(str(train), task="ner", epochs=13, seed=0)
    f1 = tagger.score(str(test))
    # measured 0.8281 (ned.testa 0.7948) with #20's NER changes, chosen on esp.testa only; 0.8126
    # (ned.testa 0.7780) before them
    assert f1 >= 0.825, f"CoNLL-2002 ned.testb F1 {f1:.4f} < 0.825"
