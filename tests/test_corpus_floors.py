"""Accuracy floors on the full corpora in ../shared/corpora (skipped where they are absent).

A floor guards against regressions that the small unit tests cannot see (a feature that silently
stops firing, a wrong averaging term): each costs a little accuracy, not a crash.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from structperc import Tagger

pytestmark = pytest.mark.corpus   # also for tests added later; each test carries it too

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
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
