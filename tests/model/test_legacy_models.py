"""Models written before the package was reorganised (structperc 0.1.0 at commit 4b13eae, by
`tests/data/make_legacy_models.py`) load and answer exactly as they did then."""
from __future__ import annotations

import json

import pytest
from testkit import DATA

from structperc import Tagger
from structperc.commands import load
from structperc.cws import Segmenter
from structperc.features.gazetteer import Gazetteer


def _expected(name: str) -> dict:
    return json.loads((DATA / f"{name}.expected.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["legacy-chunk", "legacy-ner"])
def test_old_tagger_files_tag_identically(name):
    want = _expected(name)
    tagger = Tagger.load(DATA / name)
    X = [[tuple(tok) for tok in s] for s in want["X"]]
    assert tagger.predict(X) == want["tags"]
    assert load(DATA / name).predict(X) == want["tags"]


def test_old_ner_file_keeps_its_gazetteer():
    tagger = Tagger.load(DATA / "legacy-ner")
    assert isinstance(tagger.dictionary_, Gazetteer) and tagger.dictionary_.types
    assert {"gaz", "doc", "case"} <= set(tagger.features_.columns)


def test_old_segmenter_file_segments_identically():
    want = _expected("legacy-cws")
    seg = Segmenter.load(DATA / "legacy-cws")
    assert seg.segment_texts(want["texts"]) == want["words"]
    assert isinstance(load(DATA / "legacy-cws"), Segmenter)
    assert set(seg.train_words_) <= set(seg.lexicon_)


def test_old_files_save_again_and_answer_the_same(tmp_path):
    want = _expected("legacy-chunk")
    Tagger.load(DATA / "legacy-chunk").save(tmp_path / "again")
    X = [[tuple(tok) for tok in s] for s in want["X"]]
    assert Tagger.load(tmp_path / "again").predict(X) == want["tags"]
