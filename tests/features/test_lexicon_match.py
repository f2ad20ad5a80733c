"""The compiled lexicon columns (`structperc.features.lexicon_match`) against the Python reference
(`structperc.features.lexicon.Lexicon.columns`): on the whole lexicon, fold by fold of a jackknife
(one pass with fold masks = one lexicon per fold), through `jackknifed` itself, and several word lists in
one table (`LexiconMatcher.of_sources`: each list's columns, as its own table gives them)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.features.dictionary import fold_assignment, jackknifed
from structperc.features.lexicon import Lexicon, LexiconLearner
from structperc.features.lexicon_match import LexiconMatcher, line_points, word_points
from structperc.io.corpus import expand
from structperc.io.segmented import char_corpus

NAMES = ("lexb", "lexe", "lexm")
# a small alphabet (so that words recur and overlap), with a character outside the BMP
ALPHABET = "上海市长江大桥a1𠀋"
words_st = st.lists(st.text(ALPHABET, min_size=1, max_size=7), max_size=12)
sentences_st = st.lists(st.lists(st.text(ALPHABET, min_size=1, max_size=4), min_size=1, max_size=6),
                        min_size=1, max_size=12)


def reference(lexicon: Lexicon, texts: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {name: [] for name in NAMES}
    for text in texts:
        for name, column in zip(NAMES, lexicon.columns(text)):
            out[name].extend(column)
    return out


def expanded(coded: dict) -> dict[str, list[str]]:
    return {name: expand(*coded[name]) for name in NAMES}


def test_a_hand_worked_case_longest_words_and_every_cap():
    m = LexiconMatcher(["上海", "上海市", "体育局", "中华人民共和国", "x"])  # "x": too short to count
    got = expanded(m.columns(char_corpus(["上海市体育局", "中华人民共和国x"])))
    assert got["lexb"] == ["3", "0", "0", "3", "0", "0"] + ["5", "0", "0", "0", "0", "0", "0", "0"]
    assert got["lexe"] == ["0", "2", "3", "0", "0", "3"] + ["0", "0", "0", "0", "0", "0", "5", "0"]
    assert got["lexm"] == ["0", "3", "0", "0", "3", "0"] + ["0", "5", "5", "5", "5", "5", "0", "0"]


def test_fold_masks_hide_a_fold_its_own_words():
    # 上海 only in fold 0's sentences, 市长 in folds 0 and 1, 长江 a user's word (every fold)
    m = LexiconMatcher(["上海", "市长", "长江"], np.array([0b01, 0b11, -1]))
    corpus = char_corpus(["上海市长江", "上海市长江"])
    fold0 = expanded(m.columns(corpus, np.array([0, 1])))
    assert fold0["lexb"][:5] == ["0", "0", "2", "2", "0"]   # fold 0 sees 市长 (fold 1) and 长江, not 上海
    assert fold0["lexb"][5:] == ["2", "0", "2", "2", "0"]   # fold 1 sees 上海 and 市长 (fold 0) and 长江


@settings(max_examples=150, deadline=None)
@given(words_st, sentences_st)
def test_the_whole_lexicon_equals_the_reference(words, sentences):
    texts = ["".join(s) for s in sentences]
    got = expanded(LexiconMatcher(words).columns(char_corpus(texts)))
    assert got == reference(Lexicon(words), texts)


@settings(max_examples=150, deadline=None)
@given(sentences_st, st.integers(1, 5), st.integers(0, 3), st.lists(st.text(ALPHABET, min_size=2, max_size=4),
                                                                     max_size=3))
def test_one_pass_equals_a_lexicon_per_fold(sentences, folds, seed, extra):
    """Fold f's sentences get the columns of the lexicon of the other folds' words and the user's."""
    corpus = char_corpus(["".join(s) for s in sentences])
    k, fold_of = fold_assignment(len(sentences), folds, seed)
    learner = LexiconLearner(sentences, extra)
    got = expanded(learner.jackknife_values(corpus, fold_of, k))
    want: dict[str, list[str]] = {name: [] for name in NAMES}
    for s, words in enumerate(sentences):
        others = {w for t, ws in enumerate(sentences) if fold_of[t] != fold_of[s] for w in ws} | set(extra)
        for name, column in reference(Lexicon(others), ["".join(words)]).items():
            want[name].extend(column)
    assert got == want


@pytest.mark.parametrize("workers", [1, 2])
def test_jackknifed_columns_equal_the_fold_by_fold_mechanism(workers):
    sentences = [["上海", "市长"], ["长江", "大桥"], ["上海", "长江", "大桥"], ["市", "长江"], ["大", "桥"]] * 3
    corpus = char_corpus(["".join(s) for s in sentences])
    fast, _ = jackknifed(corpus, LexiconLearner(sentences, ["江大"]), 4, 0, workers)
    slow_learner = LexiconLearner(sentences, ["江大"])
    slow_learner.jackknife_values = lambda *args: None  # type: ignore[method-assign]
    slow, _ = jackknifed(corpus, slow_learner, 4, 0, workers)
    for name in NAMES:
        assert fast.columns[name] == slow.columns[name]


DIC = ("dicb", "dice", "dicm")


def test_two_word_lists_in_one_table_by_hand():
    """上海市 is only the first list's, 市长 only the second's, 长江 both lists'; the walk goes on through the
    other list's prefixes (上海 is a prefix of 上海市 only) without finding the other list's words."""
    both = LexiconMatcher.of_sources([word_points(["上海市", "长江"]), line_points("市长\n长江\n")])
    got = both.columns(char_corpus(["上海市长江"]), names=NAMES + DIC)
    assert {name: expand(*got[name]) for name in NAMES + DIC} == {
        "lexb": ["3", "0", "0", "2", "0"], "lexe": ["0", "0", "3", "0", "2"], "lexm": ["0", "3", "0", "0", "0"],
        "dicb": ["0", "0", "2", "2", "0"], "dice": ["0", "0", "0", "2", "2"], "dicm": ["0", "0", "0", "0", "0"]}
    with pytest.raises(ValueError):
        both.columns(char_corpus(["上海"]))  # six columns to name, not three
    with pytest.raises(ValueError):
        both.lengths(np.array([19978, 28023]), np.array([0, 2]), np.array([0]))  # two lists take no folds
    with pytest.raises(ValueError):
        LexiconMatcher.of_sources([])


@settings(max_examples=150, deadline=None)
@given(st.lists(words_st, min_size=1, max_size=4), sentences_st)
def test_word_lists_in_one_table_equal_a_table_each(lists, sentences):
    corpus = char_corpus(["".join(s) for s in sentences])
    names = [f"{name}{i}" for i in range(len(lists)) for name in NAMES]
    got = LexiconMatcher.of_sources([word_points(words) for words in lists]).columns(corpus, names=names)
    want = {}
    for i, words in enumerate(lists):
        own = LexiconMatcher(words).columns(corpus)
        want.update({f"{name}{i}": own[name] for name in NAMES})
    assert {k: expand(*v) for k, v in got.items()} == {k: expand(*v) for k, v in want.items()}


def test_the_boundary_refuses_offsets_that_do_not_fit_the_text():
    m = LexiconMatcher(["上海"])
    points = np.array([19978, 28023], dtype=np.int64)
    for ptr in ([0, 3], [1, 2], [0, 2, 1, 2]):
        with pytest.raises(ValueError):
            m.lengths(points, np.array(ptr))
    with pytest.raises(ValueError):
        m.lengths(points, np.array([0, 2]), np.array([62]))
    assert m.lengths(points, np.array([0, 2])).tolist() == [[2, 0], [0, 2], [0, 0]]


def test_tokens_of_several_characters_are_left_to_the_reference():
    from structperc.io.corpus import Corpus

    corpus = Corpus({"char": ["上海", "市"]}, np.array([0, 2]), "<memory>")
    assert LexiconMatcher(["上海市"]).columns(corpus) is None


def test_the_kernels_refuse_a_full_table_and_points_outside_unicode_in_a_child():
    """A key never indexes memory, but a table with no empty slot would make a probe that finds nothing go
    round for ever, and a code point past Unicode's would alias another piece's key: both are refused at the
    boundary (in a child process, so that a hang or a crash fails the test instead of pytest)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np
        from structperc.compiled import boundary, loader
        build, match = loader.aot("build_table"), loader.aot("longest_matches")
        if build is None or match is None:  # numba's JIT checks types only; the contracts guard the build
            print("no build"); raise SystemExit(0)
        out = np.zeros((3, 2), dtype=np.int64)
        full = np.zeros((8, 2), dtype=np.int64)  # every slot taken by key 0
        for args in [(np.array([19978, 28023]), np.array([0, 2]), np.array([-1]), full, 2, out),
                     (np.array([19978, 0x110000]), np.array([0, 2]), np.array([-1]),
                      np.full((8, 2), -1, dtype=np.int64), 2, out)]:
            try:
                match(*args)
            except (boundary.KernelInputError, ValueError) as exc:
                print("refused:", exc)
        try:
            build(np.array([-5, 3]), np.array([0, 2]), np.array([-1]), np.full((8, 2), -1, dtype=np.int64))
        except (boundary.KernelInputError, ValueError) as exc:
            print("refused:", exc)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    if lines == ["no build"]:
        pytest.skip("no ahead-of-time build (STRUCTPERC_KERNELS=jit): the contracts guard the build's kernels")
    assert len(lines) == 3 and all(line.startswith("refused:") for line in lines), proc.stdout
    assert "empty slot" in lines[0] and "code points" in lines[1] and "code points" in lines[2]


def test_the_kernel_refuses_outputs_that_are_not_three_rows_a_list_in_a_child():
    """The walk writes rows 3s to 3s + 2 for each word list s (`LexiconMatcher.of_sources`): an output of another
    height would be written past its end, and folds mean nothing to a table of several lists; both are refused
    at the boundary (in a child process: a crash fails the test, not pytest)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import numpy as np
        from structperc.compiled import boundary, loader
        match = loader.aot("longest_matches")
        if match is None:
            print("no build"); raise SystemExit(0)
        table = np.full((8, 2), -1, dtype=np.int64)
        text, ptr = np.array([19978, 28023]), np.array([0, 2])
        for out, fold in [(np.zeros((4, 2), dtype=np.int64), [-1]), (np.zeros((3, 3), dtype=np.int64), [-1]),
                          (np.zeros((3 * 63, 2), dtype=np.int64), [-1]), (np.zeros((6, 2), dtype=np.int64), [0])]:
            try:
                match(text, ptr, np.array(fold), table, 2, out)
            except (boundary.KernelInputError, ValueError) as exc:
                print("refused:", exc)
        match(text, ptr, np.array([-1]), table, 2, np.zeros((6, 2), dtype=np.int64))
        print("six rows, no folds: taken")
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    if lines == ["no build"]:
        pytest.skip("no ahead-of-time build (STRUCTPERC_KERNELS=jit): the contracts guard the build's kernels")
    assert [line.split(":")[0] for line in lines] == ["refused"] * 4 + ["six rows, no folds"], proc.stdout
    assert "3·S" in lines[0] and "no folds" in lines[3]
