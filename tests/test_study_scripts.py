"""The lever studies' variants reach the trainer: a study whose variants all ran as the default (as
`scripts/study_margin.py` once did, when the estimators' own ``margin``/``step``/``C`` overrode its
wrapper) reports a lever as "no effect" without having measured it."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from testkit import SAMPLE_TEST, SAMPLE_TRAIN, script_module

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


@pytest.fixture()
def study(monkeypatch):
    monkeypatch.syspath_prepend(str(SCRIPTS))  # the studies import their shared `lever_study`
    with script_module(SCRIPTS / "study_margin.py", "study_margin_under_test") as module:
        monkeypatch.setitem(module.CORPORA, "tiny", {"kind": "tagger", "train": SAMPLE_TRAIN, "dev": SAMPLE_TEST,
                                                     "params": {"task": "chunk", "epochs": 2}})
        yield module
    sys.modules.pop("lever_study", None)


@pytest.mark.parametrize("variant", ["m1", "pa0.1"])
def test_margin_study_variants_train_differently(study, variant):
    default, other = study.run("tiny", "default", 0), study.run("tiny", variant, 0)
    assert (default["curve"], default["mistakes"]) != (other["curve"], other["mistakes"])
    assert study.run("tiny", "default", 0)["curve"] == default["curve"]  # and the same variant repeats
