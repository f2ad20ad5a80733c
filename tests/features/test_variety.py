"""Accessor variety (`structperc.features.variety`): AV values and columns worked out by hand, the JSON the
model keeps, and that segmenters whose templates read no ``av*`` column train exactly as before."""
from __future__ import annotations

import json

import numpy as np
import pytest

from structperc import Segmenter
from structperc.errors import InputError
from structperc.features.dictionary import Dictionaries, jackknifed
from structperc.features.lexicon import SegmentationDictionary
from structperc.features.templates import CWS
from structperc.features.variety import (
    COLUMNS,
    AccessorVariety,
    VarietyLearner,
    _text_points,
    accessor_variety,
    bucket,
    variety_columns,
)
from structperc.io.segmented import char_corpus

TEXTS = ["abcab", "cabd", "ab"]


def _av(texts: list[str], n: int) -> dict[str, int]:
    points, ptr = _text_points(texts)
    _, first, av = accessor_variety(points, ptr, n)
    joined = "".join(texts)
    return {joined[i:i + n]: int(a) for i, a in zip(first.tolist(), av.tolist())}


def test_accessor_variety_counts_distinct_neighbours_and_each_sentence_edge():
    # "ab" occurs 4 times: preceded by start, c, c, start -> {c} + 2 starts = 3; followed by c, end, d, end
    # -> {c, d} + 2 ends = 4; AV = min(3, 4) = 3. "cab": preceded by b and start (2), followed by end and
    # d (2). "bc": preceded by a, followed by a: 1. "bd": a / end: 1. "ca": b and start / b, b: 1.
    assert _av(TEXTS, 2) == {"ab": 3, "bc": 1, "bd": 1, "ca": 1}
    assert _av(TEXTS, 3) == {"abc": 1, "abd": 1, "bca": 1, "cab": 2}
    # no n-gram crosses a sentence boundary; a 5-gram fits in the first sentence only, alone: 1 and 1
    assert _av(TEXTS, 5) == {"abcab": 1}


def test_buckets_are_floor_log2_capped():
    assert bucket(np.array([1, 2, 3, 4, 7, 8, 1023, 5000])).tolist() == [0, 1, 1, 2, 2, 3, 9, 9]


def test_from_texts_keeps_ngrams_of_av_at_least_min_av():
    av = AccessorVariety.from_texts(TEXTS, COLUMNS)
    assert (av.grams[2], av.buckets[2]) == ("ab", "1")        # AV 3 -> bucket 1
    assert (av.grams[3], av.buckets[3]) == ("cab", "1")       # AV 2
    assert av.grams[4] == av.grams[5] == ""
    assert len(AccessorVariety.from_texts(TEXTS, COLUMNS, min_av=3)) == 1


def test_columns_on_a_small_sentence():
    av = AccessorVariety({2: "abba", 3: "cab"}, {2: "12", 3: "2"}, COLUMNS)
    cols = av.values(char_corpus(["cabbaz"]))
    # 2-grams: ab (1) starts at 1, bb absent, ba (2) starts at 3; 3-gram cab (2) starts at 0
    assert cols["av2b"] == ["0", "1", "0", "2", "0", "0"]
    assert cols["av2e"] == ["0", "0", "1", "0", "2", "0"]
    # best covering 2-gram: b at 2 is covered by ab (E, 1) and bb (none); b at 3 by bb and ba (B, 2)
    assert cols["av2"] == ["0", "1B", "1E", "2B", "2E", "0"]
    assert cols["av3b"] == ["2", "0", "0", "0", "0", "0"]
    assert cols["av3e"] == ["0", "0", "2", "0", "0", "0"]
    assert cols["av3"] == ["2B", "2M", "2E", "0", "0", "0"]
    assert cols["av5"] == ["0"] * 6


def test_the_leftmost_of_equal_covering_ngrams_wins_and_ngrams_stay_inside_sentences():
    av = AccessorVariety({2: "abba"}, {2: "11"}, ["av2", "av2b"])
    # b at 1 is the end of ab and the start of ba, both bucket 1: ab (leftmost) -> E; a at 2 ends ba
    cols = av.values(char_corpus(["aba", "ba"]))
    assert cols["av2"] == ["1B", "1E", "1E", "1B", "1E"]
    assert cols["av2b"] == ["1", "1", "0", "1", "0"]     # "a" + next sentence's "b" is no n-gram
    assert set(cols) == {"av2", "av2b"}                  # only the columns asked for


def test_json_round_trip_gives_the_same_columns():
    av = AccessorVariety.from_texts(["上海体育局召开会议", "上海召开会议", "北京召开大会", "体育局召开"] * 2,
                                    ["av2", "av3b", "av2e"])
    again = AccessorVariety.from_json(json.loads(json.dumps(av.to_json(), ensure_ascii=False)))
    corpus = char_corpus(["上海召开体育会议", "北京体育局"])
    assert again.columns == av.columns == ("av2e", "av2", "av3b")
    assert again.values(corpus) == av.values(corpus)
    assert again.to_json() == av.to_json()


def test_unknown_columns_are_refused_and_found_among_template_columns():
    with pytest.raises(InputError):
        AccessorVariety({}, {}, ["av6b"])
    assert variety_columns(["c", "lexb", "av2", "av5e", "av6", "avx", "avseg"]) == ["av2", "av5e", "avseg"]


def test_unsupervised_segmentation_maximises_length_times_bucket():
    av = AccessorVariety({2: "abcd", 3: "xyz"}, {2: "12", 3: "1"}, ["avseg"])
    # abcdxyzq: ab (2 x 1) + cd (2 x 2) + xyz (3 x 1) + q alone; bcd: bc is no word, so b alone + cd
    cols = av.values(char_corpus(["abcdxyzq", "q", "xyzab", "bcd"]))
    assert "".join(cols["avseg"]) == "BEBEBMES" + "S" + "BMEBE" + "SBE"
    # a longer word wins when its n·t beats the pieces': abc (3 x 2 = 6) over ab + c (2 x 2 = 4)
    av = AccessorVariety({2: "ab", 3: "abc"}, {2: "2", 3: "2"}, ["avseg"])
    assert av.values(char_corpus(["abc"]))["avseg"] == ["B", "M", "E"]


def test_jackknifed_learner_leaves_each_fold_out_and_the_plain_one_does_not():
    texts = ["xab", "yab", "cd", "cd"]
    corpus = char_corpus(texts)
    # all the text: "ab" is preceded by x and y, followed by two sentence ends -> AV 2, kept (bucket 1);
    # without the first sentence only y precedes it -> AV 1, dropped; raw text "zab" brings z back
    plain, full = jackknifed(corpus, VarietyLearner(texts, ["av2b"], jackknife=False), folds=4, seed=0)
    jk, _ = jackknifed(corpus, VarietyLearner(texts, ["av2b"]), folds=4, seed=0)
    raw, _ = jackknifed(corpus, VarietyLearner(texts, ["av2b"], raw=["zab"]), folds=4, seed=0)
    assert list(plain.sentences("av2b"))[0] == ["0", "1", "0"] == full.values(corpus.select([0]))["av2b"]
    assert list(jk.sentences("av2b"))[0] == ["0", "0", "0"]
    assert list(raw.sentences("av2b"))[0] == ["0", "1", "0"]


DATA = ["上海 体育局 召开 会议", "体育局 召开 会议", "北京 召开 大会", "上海 北京 体育 大会"] * 3


def _model_bytes(seg: Segmenter, tmp_path, name: str) -> bytes:
    return open(seg.save(tmp_path / name), "rb").read()


def test_templates_reading_no_av_column_give_the_same_model_with_or_without_raw_text(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    plain = Segmenter(template=CWS, epochs=3).fit(DATA)
    with_raw = Segmenter(template=CWS, epochs=3, raw=["上海召开大会"]).fit(DATA)
    assert isinstance(plain.dictionary_, SegmentationDictionary)      # no accessor variety learnt
    assert _model_bytes(plain, tmp_path, "a") == _model_bytes(with_raw, tmp_path, "b")
    assert b"variety" not in _model_bytes(plain, tmp_path, "c")


def test_a_segmenter_reading_av_columns_saves_and_reloads_them(tmp_path):
    lines = CWS + ["av2[0]", "av3b[0]|av3e[0]"]
    seg = Segmenter(template=lines, epochs=3, raw=["上海召开大会"]).fit(DATA)
    assert isinstance(seg.dictionary_, Dictionaries)
    variety = seg.dictionary_.parts[1]
    assert variety.columns == ("av2", "av3b", "av3e")    # in `COLUMNS` order
    again = Segmenter.load(seg.save(tmp_path / "m"))
    assert again.dictionary_.parts[1].to_json() == variety.to_json()
    assert again.lexicon_ == seg.lexicon_
    text = "上海体育局召开大会"
    assert again.segment(text) == seg.segment(text)
    assert "av2" in again.template_lines_[-2]


def test_the_cli_adds_raw_text_to_the_statistics_and_refuses_it_outside_cws(tmp_path):
    from click.testing import CliRunner

    from structperc.cli import main

    train = tmp_path / "train.txt"
    train.write_text("\n".join(" ".join(s) if isinstance(s, list) else s for s in DATA) + "\n", encoding="utf-8")
    raw = tmp_path / "raw.txt"
    raw.write_text("上海召开大会\n体育局召开会议\n", encoding="utf-8")
    template = tmp_path / "template.txt"
    template.write_text("\n".join(CWS + ["av2[0]"]) + "\n", encoding="utf-8")
    runner = CliRunner()
    args = ["train", "--task", "cws", "--train", str(train), "--template", str(template), "--epochs", "2", "-q"]
    with_raw = runner.invoke(main, args + ["--raw", str(raw), "--model", str(tmp_path / "a")])
    without = runner.invoke(main, args + ["--model", str(tmp_path / "b")])
    assert with_raw.exit_code == 0 and without.exit_code == 0, with_raw.output + without.output
    grams = [sum(map(len, Segmenter.load(tmp_path / m).dictionary_.parts[1].to_json()["grams"].values()))
             for m in ("a", "b")]
    assert grams[0] > grams[1]  # the raw text's n-grams counted too
    refused = runner.invoke(main, ["train", "--train", str(train), "--raw", str(raw), "--model", str(tmp_path / "c")])
    assert refused.exit_code != 0 and "--raw is for --task cws" in refused.output
