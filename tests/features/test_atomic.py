"""Atomic spans for segmentation (`structperc.features.atomic`): which boundaries lie inside runs of
Latin letters and of digits, URLs and e-mail addresses, how cut flags are constrained, and how often
the training words split each kind of run."""
from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import python_child

from structperc.features.atomic import (
    DIGIT,
    KINDS,
    LATIN,
    MIN_RUNS,
    SPLIT_THRESHOLD,
    AtomicStats,
    code_points,
    constrain,
    inside,
    whole_spans,
)

# regular-expression statements of the two kinds, to check the numpy version against
_LATIN_RE = re.compile("[A-Za-zÀ-ÖØ-öø-ɏＡ-Ｚａ-ｚ]+")
_DIGIT_RE = re.compile("[0-9０-９]+(?:[.,．][0-9０-９]+)*")
_ALPHABET = list("abZéÆ×ＡｚＢ019０９.,．，:/@上海年 。")


def inside_list(text: str, kind: str, breaks=()) -> list[int]:
    return np.flatnonzero(inside(code_points(text), kind, breaks)).tolist()


def words_of(text: str, cut: np.ndarray) -> list[str]:
    bounds = np.flatnonzero(cut).tolist()
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


# ---------------------------------------------------------------------------------- inside
def test_latin_inside_by_hand():
    assert inside_list("abc", LATIN) == [1, 2]
    assert inside_list("a上b", LATIN) == []
    assert inside_list("ＡＢc", LATIN) == [1, 2]          # full- and half-width letters make one run
    assert inside_list("Zürich", LATIN) == [1, 2, 3, 4, 5]
    assert inside_list("a×b", LATIN) == []               # × (U+00D7) sits among the Latin-1 letters
    assert inside_list("ab12", LATIN) == [1]             # digits are another kind
    assert inside_list("", LATIN) == [] and inside_list("a", LATIN) == []


def test_digit_inside_by_hand():
    assert inside_list("2008年", DIGIT) == [1, 2, 3]    # the edge before 年 stays free
    assert inside_list("１２３", DIGIT) == [1, 2]
    assert inside_list("1,234.5", DIGIT) == [1, 2, 3, 4, 5, 6]
    assert inside_list("３．５", DIGIT) == [1, 2]
    assert inside_list("１，２", DIGIT) == []             # a full-width comma separates list items
    assert inside_list("1.", DIGIT) == [] and inside_list(".5", DIGIT) == []
    assert inside_list("1..2", DIGIT) == []
    assert inside_list("5.x", DIGIT) == []


def test_breaks_end_every_span():
    assert inside_list("abcd", LATIN, breaks=[2]) == [1, 3]
    assert inside_list("1.5", DIGIT, breaks=[2]) == []    # "1." and "5" were apart: no number
    assert inside_list("1.5", DIGIT, breaks=[1]) == []
    assert inside_list("12.5", DIGIT, breaks=[1]) == [2, 3]


def test_unknown_kind():
    with pytest.raises(ValueError, match="unknown kind"):
        inside(code_points("ab"), "hanzi")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=30))
def test_inside_matches_the_regular_expressions(text):
    for kind, rx in ((LATIN, _LATIN_RE), (DIGIT, _DIGIT_RE)):
        want = [i for m in rx.finditer(text) for i in range(m.start() + 1, m.end())]
        assert inside_list(text, kind) == want, kind


# ------------------------------------------------------------------------ URLs and e-mails
def test_whole_spans_by_hand():
    text = "详情请访问https://www.example.com/news/2024?id=5获取"
    assert whole_spans(text) == [(5, 43)]
    assert text[5:43] == "https://www.example.com/news/2024?id=5"
    assert whole_spans("请发邮件至zhang.san@example.com联系") == [(5, 26)]
    assert whole_spans("下载：www.python.org/downloads。") == [(3, 27)]   # 24 characters
    # sentence punctuation after a URL is not part of it
    assert whole_spans("见http://a.cn/x.") == [(1, 14)]     # http://a.cn/x: 13 characters
    assert whole_spans("见http://a.cn/x),") == [(1, 14)]
    assert whole_spans("没有网址，只有a@b和www") == []


def test_whole_spans_stop_at_piece_ends():
    # "www.a.com" and "abc" were two pieces joined without their space
    assert whole_spans("www.a.comabc", ends=[9]) == [(0, 9)]
    assert whole_spans("www.a.comabc") == [(0, 12)]
    # the e-mail address x@b.cn reaches over the end: the first piece is searched again on its own
    # (www.x is a URL there), then the second (@b.cn is nothing, www.y.cn a URL)
    assert whole_spans("www.x@b.cnwww.y.cn") == [(0, 18)]
    assert whole_spans("www.x@b.cnwww.y.cn", ends=[5]) == [(0, 5), (10, 18)]
    assert whole_spans("上x@b.cn", ends=[2]) == []


# the one pattern `whole_spans` used to search: its leftmost matches, cut at piece ends as `whole_spans` does
_ONE_PATTERN = re.compile(
    r"(?:(?:https?|ftp)://|www\.)[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*[A-Za-z0-9\-_~/#@$&*+=%]"
    r"|[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")


def _one_pattern_spans(text: str, ends=()) -> list[tuple[int, int]]:
    out, pos, n = [], 0, len(text)
    while (m := _ONE_PATTERN.search(text, pos)) is not None:
        limit = next((e for e in ends if e > m.start()), n)
        if m.end() > limit:
            m = _ONE_PATTERN.search(text, m.start(), limit)
            if m is None:
                pos = limit
                continue
        out.append(m.span())
        pos = m.end()
    return out


_PIECES = st.sampled_from(["www.", "http://", "ftp://", "@", "@x.org", ".com", "a.b", "a", "Z", "1", ".", "-",
                           "_", "%", "/", ":", "?", "#", ")", " ", "上", "。", "@@"])


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=25), st.lists(st.integers(1, 60), max_size=4))
def test_whole_spans_find_what_the_one_pattern_finds(pieces, ends):
    """The "@"-driven search finds the same URLs and addresses as the pattern searched at every start."""
    text = "".join(pieces)
    ends = sorted({e for e in ends if e < len(text)})
    assert whole_spans(text, ends) == _one_pattern_spans(text, ends)


def test_whole_spans_take_linear_time_on_long_runs():
    """The one pattern tried every start of a letter run as an address's user part, reading to the run's end:
    28 s for a 100,000-letter line (a batch of English lines, spaces taken out, is one run). 400,000 letters,
    addresses and a URL after them now take milliseconds; the child is given 60 s (the old search: minutes)."""
    code = ("from structperc.features.atomic import whole_spans\n"
            "assert whole_spans('a' * 400_000) == []\n"
            "assert len(whole_spans('a@b.cc ' * 50_000 + 'www.x.org')) == 50_001\n"
            "assert whole_spans('x' * 200_000 + '@b.org') == [(0, 200_006)]\n")
    done = python_child(code)
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------------------------------- constrain
def test_constrain_by_hand():
    text = "ab12.5元"
    every = np.ones(len(text) + 1, dtype=bool)
    assert words_of(text, constrain(every.copy(), text, KINDS)) == ["ab", "12.5", "元"]
    assert words_of(text, constrain(every.copy(), text, [DIGIT])) == ["a", "b", "12.5", "元"]
    assert words_of(text, constrain(every.copy(), text, [])) == list(text)
    # edges are left to the caller: a run joined to its neighbour stays joined
    none = np.zeros(len(text) + 1, dtype=bool)
    none[[0, len(text)]] = True
    assert words_of(text, constrain(none.copy(), text, KINDS)) == [text]


def test_no_word_starts_with_a_character_that_joins_the_one_before():
    """A decomposed accent is part of its Latin run; a combining mark, skin tone or emoji sequence member never
    starts a word, whatever the kinds (the shipped zh-seg cut "cafe\u0301" into "cafe" and the accent)."""
    every = lambda t: np.ones(len(t) + 1, dtype=bool)  # noqa: E731
    text = "cafe\u0301s和Vie\u0302\u0323t"
    assert words_of(text, constrain(every(text), text, [LATIN])) == ["cafe\u0301s", "和", "Vie\u0302\u0323t"]
    assert words_of(text, constrain(every(text), text, [])) == ["c", "a", "f", "e\u0301", "s", "和", "V", "i",
                                                                 "e\u0302\u0323", "t"]
    emoji = "好👍\U0001F3FD👨\u200d👩\u200d👧❤\ufe0f"
    assert words_of(emoji, constrain(every(emoji), emoji, KINDS)) == [
        "好", "👍\U0001F3FD", "👨\u200d👩\u200d👧", "❤\ufe0f"]
    # a mark after a character that is not a Latin letter joins it, and does not make a Latin run of what follows
    assert inside_list("中\u0301a", LATIN) == []
    # a mark at the very start stays a word start (the text's first boundary)
    assert words_of("\u0301a", constrain(every("\u0301a"), "\u0301a", [])) == ["\u0301", "a"]
    # text without marks is constrained as before
    assert inside_list("naïve", LATIN) == inside_list("naive", LATIN) == [1, 2, 3, 4]


def test_constrain_cuts_url_edges_whatever_the_kinds():
    text = "访问http://a.cn/x获取"
    none = np.zeros(len(text) + 1, dtype=bool)
    none[[0, len(text)]] = True
    assert words_of(text, constrain(none, text, [])) == ["访问", "http://a.cn/x", "获取"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=_ALPHABET, min_size=1, max_size=30),
       st.lists(st.booleans(), min_size=31, max_size=31))
def test_constrain_keeps_runs_whole_and_other_cuts(text, flags):
    cut = np.array(flags[:len(text) + 1])
    out = constrain(cut.copy(), text, KINDS)
    protected = set(inside_list(text, LATIN)) | set(inside_list(text, DIGIT))
    spans = whole_spans(text)
    for i in range(len(text) + 1):
        in_url = any(a < i < b for a, b in spans)
        at_url_edge = any(i in (a, b) for a, b in spans)
        if in_url or (i in protected and not at_url_edge):
            assert not out[i], i
        elif at_url_edge:
            assert out[i], i
        else:
            assert out[i] == cut[i], i


# ------------------------------------------------------------------------------ statistics
def test_stats_by_hand():
    sentences = [
        ["ＡＢＣ", "公司"],            # a whole Latin run
        ["Jonathan", "Anderson"],     # a Latin run with a word boundary inside
        ["１９９８", "年"],            # a whole digit run; 年 is outside it
        ["１", "２", "３"],            # a split digit run
        ["a", "上", "1"],             # single characters are no runs
        [],
    ]
    stats = AtomicStats(sentences)
    assert stats.runs[LATIN].tolist() == [1, 1, 0, 0, 0, 0]
    assert stats.split[LATIN].tolist() == [0, 1, 0, 0, 0, 0]
    assert stats.runs[DIGIT].tolist() == [0, 0, 1, 1, 0, 0]
    assert stats.split[DIGIT].tolist() == [0, 0, 0, 1, 0, 0]
    # runs never reach over a sentence end: "ａ" + "ｂ" of two sentences are no run
    assert AtomicStats([["ａ"], ["ｂ"]]).runs[LATIN].tolist() == [0, 0]


def test_atomic_threshold_and_minimum():
    assert SPLIT_THRESHOLD == 0.25 and MIN_RUNS == 10
    whole, split = ["１２", "年"], ["１", "２"]
    # 3 split of 10 runs: 30 % ≥ 25 % → digits are not atomic; latin (no runs) stays atomic
    stats = AtomicStats([split] * 3 + [whole] * 7)
    assert stats.atomic() == {LATIN: True, DIGIT: False}
    # 2 of 10: 20 % < 25 %
    assert AtomicStats([split] * 2 + [whole] * 8).atomic() == {LATIN: True, DIGIT: True}
    # every run split, but only 9 of them: not enough evidence
    assert AtomicStats([split] * 9).atomic()[DIGIT] is True
    # a subset of the sentences (a jackknife fold) is judged on its own runs
    assert stats.atomic(np.arange(3, 10)) == {LATIN: True, DIGIT: True}
    assert AtomicStats([]).atomic() == {LATIN: True, DIGIT: True}


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.text(alphabet=list("ab１2上."), min_size=1, max_size=4), max_size=5),
                max_size=6))
def test_stats_match_brute_force(sentences):
    stats = AtomicStats(sentences)
    for kind, rx in ((LATIN, _LATIN_RE), (DIGIT, _DIGIT_RE)):
        for j, words in enumerate(sentences):
            text = "".join(words)
            starts = set(np.cumsum([0] + [len(w) for w in words]).tolist())
            runs = [m for m in rx.finditer(text) if m.end() - m.start() >= 2]
            split = [m for m in runs if any(i in starts for i in range(m.start() + 1, m.end()))]
            assert stats.runs[kind][j] == len(runs), (kind, words)
            assert stats.split[kind][j] == len(split), (kind, words)
