"""The opt-in segmentation columns of issue #20 (``lexbs``, ``lexes``, ``chpos``, ``trun``, ``tpos``):
exact values on small cases worked out by hand, and that a dictionary without them writes and saves
what it did before they existed."""
from __future__ import annotations

import numpy as np

from structperc.features.dictionary import jackknifed
from structperc.features.lexicon import (
    EXTRA_COLUMNS,
    LEX_COLUMNS,
    Lexicon,
    LexiconLearner,
    SegmentationDictionary,
    char_profiles,
    type_runs,
)
from structperc.io.corpus import expand
from structperc.io.segmented import char_corpus


def test_length_sets_list_every_word_length_starting_and_ending_at_each_character():
    lex = Lexicon(["上海", "上海市", "海市", "市长", "上海市长江大桥"])
    # 上海市长江大桥: 上 starts 上海 (2), 上海市 (3), 上海市长江大桥 (7, capped to 5); 海 starts 海市;
    # 市 starts 市长; 海 ends 上海, 市 ends 上海市 and 海市, 长 ends 市长, 桥 ends the 7-character word
    starts, ends = lex.length_sets("上海市长江大桥")
    assert starts == ["235", "2", "2", "0", "0", "0", "0"]
    assert ends == ["0", "2", "23", "2", "0", "0", "5"]


def test_length_sets_agree_with_the_longest_match_columns():
    lex = Lexicon(["上海", "上海市", "体育局", "育局"])
    lexb, lexe, _ = lex.columns("上海市体育局")
    starts, ends = lex.length_sets("上海市体育局")
    assert [s[-1] for s in starts] == lexb          # the longest length is the last one listed
    assert [e[-1] for e in ends] == lexe


def test_char_profiles_bucket_word_counts_by_place():
    words = ["大学", "大人", "大海", "伟大", "大", "学大生", "大大大大大", "大小", "大米"]
    # occurrences of 大: beginning 大学 大人 大海 大大大大大 大小 大米 (6 → bucket 3), inside 学大生
    # and three times inside 大大大大大 (4 → bucket 2), ending 伟大 and 大大大大大 (2 → 2); a word alone (1)
    profiles = char_profiles(words)
    assert profiles["大"] == "3221"
    assert profiles["学"] == "1010"    # begins 学大生, ends 大学
    assert profiles["伟"] == "1000"
    assert profiles["生"] == "0010"
    assert "x" not in profiles


def test_type_runs_measure_runs_of_one_character_type():
    run, pos = type_runs(list("１９９８年ABCDEFG，。好"))
    assert run == ["4", "4", "4", "4", "1", "5", "5", "5", "5", "5", "5", "5", "2", "2", "1"]
    assert pos == ["B", "M", "M", "E", "S", "B", "M", "M", "M", "M", "M", "E", "B", "E", "S"]
    assert type_runs([]) == ([], [])


def test_a_plain_dictionary_writes_and_saves_only_the_original_columns():
    d = SegmentationDictionary(["上海", "市长"], ["上海"])
    assert d.columns == LEX_COLUMNS
    values = {name: expand(*v) for name, v in d.values(char_corpus(["上海市长"])).items()}  # coded
    assert values == {"lexb": ["2", "0", "2", "0"], "lexe": ["0", "2", "0", "2"], "lexm": ["0"] * 4}
    assert set(d.to_json()) == {"train_words", "lexicon", "atomic"}
    assert SegmentationDictionary.from_json(d.to_json()).columns == LEX_COLUMNS


def test_an_extended_dictionary_writes_every_column_and_keeps_the_flag():
    d = SegmentationDictionary(["上海", "上海市", "市长", "长"], ["上海"], extended=True)
    assert d.columns == LEX_COLUMNS + EXTRA_COLUMNS
    corpus = d.annotate(char_corpus(["上海市长１２"]))
    got = {name: next(corpus.sentences(name)) for name in d.columns}
    assert got == {
        "lexb": ["3", "0", "2", "0", "0", "0"], "lexe": ["0", "2", "3", "2", "0", "0"],
        "lexm": ["0", "3", "0", "0", "0", "0"],
        "lexbs": ["23", "0", "2", "0", "0", "0"], "lexes": ["0", "2", "3", "2", "0", "0"],
        # 上 begins 2 words; 海 ends 上海 and sits inside 上海市; 市 ends 上海市, begins 市长;
        # 长 ends 市长 and is a word alone; digits are in no word
        "chpos": ["2000", "0110", "1010", "0011", "0", "0"],
        "trun": ["4", "4", "4", "4", "2", "2"], "tpos": ["B", "M", "M", "E", "B", "E"],
    }
    again = SegmentationDictionary.from_json(d.to_json())
    assert again.extended and again.values(char_corpus(["上海市长１２"])) == d.values(char_corpus(["上海市长１２"]))


def test_extended_columns_are_jackknifed_like_the_original_ones():
    sents = [["上海", "市长"], ["北京", "市长"]]
    corpus = char_corpus(["".join(s) for s in sents])
    annotated, full = jackknifed(corpus, LexiconLearner(sents, extended=True), folds=2, seed=0)
    assert full.columns == LEX_COLUMNS + EXTRA_COLUMNS
    # each sentence sees the other's words only: 市长 is known to both, 上海 and 北京 to neither
    for name, first, second in [("lexbs", ["0", "0", "2", "0"], ["0", "0", "2", "0"]),
                                ("chpos", ["0", "0", "1000", "0010"], ["0", "0", "1000", "0010"])]:
        assert list(annotated.sentences(name)) == [first, second]
    # with the full dictionary 上海 is a word
    assert full.values(char_corpus(["上海"]))["lexbs"] == ["2", "0"]


def test_the_learner_writes_the_original_columns_unless_asked():
    sents = [["上海", "市长"], ["北京", "市长"]]
    learner = LexiconLearner(sents)
    assert learner.columns == LEX_COLUMNS
    d = learner.learn(np.arange(2))
    assert d.columns == LEX_COLUMNS and not d.extended
