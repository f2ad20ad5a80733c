"""The public API's type hints reach a user's type checker: the package ships ``py.typed`` (PEP 561), the lazy
names of ``import structperc`` have types, and a subclass's constructors and fitting return the subclass
(`Segmenter.train(...)` is a `Segmenter`, whose ``segment`` a checker then knows; it was typed a `Tagger`)."""
from __future__ import annotations

import subprocess
import sys

import pytest
from testkit import REPO

USER_CODE = '''\
import structperc
from structperc import Corpus, Segmenter, Tagger

seg = Segmenter.train(["上海 体育局"], epochs=1)
words: list[str] = seg.segment("上海体育局")
reveal_type(seg)
reveal_type(Segmenter.load("zh-seg"))
reveal_type(Tagger.load("en-upos").compress())
reveal_type(Tagger().fit([["a"]], [["X"]]))
reveal_type(structperc.load("en-upos"))
structperc.load("zh-seg").segment("我爱北京天安门", user_dict=["天安门"])  # the README's line


def read(corpus: Corpus, error: structperc.InputError) -> None:
    reveal_type(corpus)
    reveal_type(error)
'''


def test_the_package_is_marked_typed():
    assert (REPO / "structperc" / "py.typed").is_file()
    assert '"py.typed"' in (REPO / "pyproject.toml").read_text(encoding="utf-8")  # installed with the package


def test_a_users_type_checker_sees_the_subclass_and_the_lazy_names(tmp_path):
    pytest.importorskip("mypy")
    user = tmp_path / "user.py"
    user.write_text(USER_CODE, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), str(user)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)
    revealed = [line.split("Revealed type is ")[1].strip('"') for line in done.stdout.splitlines()
                if "Revealed type is" in line]
    assert revealed == ["structperc.segmenter.Segmenter", "structperc.segmenter.Segmenter",
                        "structperc.tagger.Tagger", "structperc.tagger.Tagger", "structperc.tagger.Tagger",
                        "structperc.io.corpus.Corpus", "structperc.errors.InputError"], done.stdout
    assert done.returncode == 0 and ": error:" not in done.stdout, done.stdout


def test_the_shipped_segmenters_are_the_names_load_types_as_segmenters():
    from typing import get_args

    from structperc import ShippedSegmenter
    from structperc.model.shipped import cards

    assert set(get_args(ShippedSegmenter)) == {card["name"] for card in cards() if card["task"] == "cws"}
