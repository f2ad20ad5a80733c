"""User dictionaries at segmentation time (`Segmenter.segment(..., user_dict=...)`, `add_word`,
``structperc segment --user-dict``): hard mode forces the words by constrained decoding in both label
encodings, leaves whitespace-crossing occurrences alone and resolves overlaps leftmost-then-longest;
soft mode widens the lexicon for one call; jieba's file format and its errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import CWS_TRAIN, assert_clean_error, expanded, run

from structperc import segmenter as segmenter_module
from structperc.errors import InputError
from structperc.features.user_dict import (
    Entry,
    WordMatcher,
    greedy_matches,
    longest_word,
    read_user_dict,
    user_words,
)
from structperc.segmenter import Segmenter


def scan(words: set[str], text: str) -> list[tuple[int, int]]:
    """The specification of `WordMatcher.spans`, the plain way: at the leftmost position not yet covered,
    the longest word starting there; then on after it."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        best = max((j for j in range(i + 1, len(text) + 1) if text[i:j] in words), default=0)
        if best:
            out.append((i, best))
            i = best
        else:
            i += 1
    return out

TEXT = "上海体育局召开会议"


@pytest.fixture(scope="module", params=["bmes", "bmes6"])
def seg(request) -> Segmenter:
    return Segmenter.train(CWS_TRAIN * 3, epochs=3, encoding=request.param)


@pytest.fixture(scope="module")
def bmes() -> Segmenter:
    return Segmenter.train(CWS_TRAIN * 3, epochs=3)


def spans(words: list[str]) -> set[tuple[int, int]]:
    out, at = set(), 0
    for w in words:
        out.add((at, at + len(w)))
        at += len(w)
    return out


# ------------------------------------------------------------------------------ hard mode
@pytest.mark.parametrize("word", ["体育局召开", "育局召", "海体育局召开会"])
def test_hard_mode_forces_a_word_the_model_splits_and_keeps_the_rest(seg, word):
    plain = seg.segment(TEXT)
    assert plain == ["上海", "体育局", "召开", "会议"]
    assert word not in plain
    forced = seg.segment(TEXT, user_dict=[word])
    assert forced.count(word) == 1
    assert "".join(forced) == TEXT
    if word == "体育局召开":  # around the forced word the sentence is decoded as before
        assert forced == ["上海", "体育局召开", "会议"]


def test_both_encodings_decode_long_forced_words(seg):
    # the training words have at most four characters: a 6-tag model has no M, and spells longer
    # words only because the segmenter joins them after decoding
    assert longest_word(seg.labels_) == (4 if seg.encoding == "bmes6" else None)
    assert seg.segment(TEXT + "北京", user_dict=["体育局召开会议北"]) == ["上海", "体育局召开会议北", "京"]


def test_occurrences_across_whitespace_are_ignored(seg):
    text = "上海体育 局召开会议"
    assert seg.segment(text, user_dict=["育局", "体育 局"]) == seg.segment(text)
    assert greedy_matches(["育局"], text) == []


@pytest.mark.parametrize("words, expected", [
    (["上海体", "海体育局"], [(0, 3)]),            # leftmost wins over a longer word starting later
    (["上海", "上海体育"], [(0, 4)]),              # at one position the longest
    (["海体", "体育局召"], [(1, 3)]),              # a position already covered is skipped
    (["海体", "体育局召", "局召开"], [(1, 3), (4, 7)]),
])
def test_overlaps_leftmost_then_longest(bmes, words, expected):
    assert greedy_matches(words, TEXT) == expected
    assert set(expected) <= spans(bmes.segment(TEXT, user_dict=words))


def test_texts_without_user_words_are_unchanged(seg):
    texts = ["我爱北京天安门", TEXT, "我们爱上海", "２０２４年，我们去北京。", "ABC公司😀𠀋", ""]
    assert seg.segment_texts(texts, user_dict=["局召开"]) == \
        [seg.segment(t) if "局召开" not in t else seg.segment(t, user_dict=["局召开"]) for t in texts]
    plain = seg.segment_texts(texts)
    for t, a, b in zip(texts, plain, seg.segment_texts(texts, user_dict=["局召开"])):
        if "局召开" not in t:
            assert a == b


def test_a_user_word_beats_an_atomic_run(bmes):
    assert "ABC" in bmes.segment("ABC公司")
    assert bmes.segment("ABC公司", user_dict=["AB"])[:2] == ["AB", "C"]


def test_forced_words_across_window_edges(bmes, monkeypatch):
    monkeypatch.setattr(segmenter_module, "WINDOW", 6)
    monkeypatch.setattr(segmenter_module, "OVERLAP", 2)
    monkeypatch.setattr(segmenter_module, "BATCH_CHARS", 10)
    text = TEXT * 4
    words = bmes.segment(text, user_dict=["育局召开会", "议上"])
    assert "".join(words) == text
    assert spans(words) >= {(a, b) for a, b in greedy_matches(["育局召开会", "议上"], text)}


def test_segment_lines_reads_the_dictionary_once(bmes, tmp_path):
    path = tmp_path / "user.txt"
    path.write_text("局召开\n", encoding="utf-8")
    lines = [TEXT, "我爱北京天安门"] * 3
    assert list(bmes.segment_lines(lines, batch=2, user_dict=str(path))) == \
        bmes.segment_texts(lines, user_dict=["局召开"])


# ------------------------------------------------------------------------------ soft mode
def test_soft_mode_widens_the_lexicon_for_one_call(bmes, monkeypatch):
    from structperc import predict

    seen = []
    real = predict.best_ids

    def spy(model, corpus, allowed=None):
        seen.append((model, allowed))
        return real(model, corpus, allowed)

    monkeypatch.setattr(predict, "best_ids", spy)
    lexicon = list(bmes.lexicon_)
    soft = bmes.segment(TEXT, user_dict=["育局召"], user_dict_mode="soft")
    model, allowed = seen[-1]
    assert allowed is None                                   # nothing forced
    assert "育局召" in model.dictionary.lexicon and "育局召" not in bmes._dictionary().lexicon
    from structperc.io.segmented import char_corpus
    corpus = char_corpus([TEXT])
    wide, narrow = expanded(model.dictionary.values(corpus)), expanded(bmes._dictionary().values(corpus))
    assert (narrow["lexb"][3], wide["lexb"][3]) == ("0", "3")          # 育局召 starts at 育: the columns change
    assert soft == ["上海", "体育局", "召开", "会议"]            # … without forcing the word
    assert bmes.segment(TEXT, user_dict=["育局召"]) != soft
    assert bmes.lexicon_ == lexicon and bmes.segment(TEXT) == soft
    with pytest.raises(InputError, match="user_dict_mode"):
        bmes.segment(TEXT, user_dict=["育局召"], user_dict_mode="firm")


def test_soft_mode_matches_a_language_dictionary_apart_from_the_widened_lexicon(monkeypatch):
    """A model with jieba's words (the shipped ``zh-seg``) matches them and its lexicon in one table
    (`structperc.features.dictionary.Dictionaries`); a soft call's copy, made for one word set, matches them apart
    (building the shared table again for each word set took 20 ms more a call), with the columns the one table
    gives for the same words."""
    from structperc.features.dictionary import Dictionaries
    from structperc.features.lexicon_match import LexiconMatcher
    from structperc.io.segmented import char_corpus

    original = LexiconMatcher.of_sources
    built: list[int] = []

    def counted(sources):
        built.append(len(sources))
        return original(sources)

    monkeypatch.setattr(LexiconMatcher, "of_sources", counted)
    seg = Segmenter.load("zh-seg")
    text = "我爱北京天安门。今天天气很好，我们去公园散步吧。"
    plain = seg.segment(text)
    assert built == [2]                                       # the model's own dictionaries: one table
    soft = seg.segment(text, user_dict=["公园散步"], user_dict_mode="soft")
    assert built == [2]                                       # the soft copy: none
    wide = seg._soft_model(["公园散步"]).dictionary
    assert isinstance(wide, Dictionaries) and not wide.together
    corpus = char_corpus([text])
    joined = Dictionaries(wide.parts)
    assert expanded(wide.values(corpus)) == expanded(joined.values(corpus)) and built == [2, 2]
    assert plain != soft and "公园散步" in soft


# ------------------------------------------------------------------------------ add_word / del_word
def test_lexicon_words_are_refused_where_the_templates_read_no_lexicon_column(tmp_path):
    """With a template that reads no lexicon column (``hanlp-cws``), ``lexicon`` trained the same model bytes and
    soft user words segmented as no words did, both silently."""
    with pytest.raises(InputError, match=r"^the words of lexicon \(--lexicon\) go into the lexicon columns"):
        Segmenter(template="hanlp-cws", lexicon=["体育局"], epochs=1).fit(CWS_TRAIN)
    plain = Segmenter(template="hanlp-cws", epochs=1).fit(CWS_TRAIN)
    with pytest.raises(InputError, match=r"^soft user words .* hard mode \(the default\) forces the words"):
        plain.segment(TEXT, user_dict=["体育局"], user_dict_mode="soft")
    assert "体育局" in plain.segment("上海体育局召开会议", user_dict=["体育局"])  # hard mode: as asked


def test_add_word_and_del_word():
    seg = Segmenter.train(CWS_TRAIN * 3, epochs=3)
    seg.del_word("不在")                                       # never added: nothing happens
    seg.add_word("育局召", freq=3, tag="n")
    assert seg.added_words == {"育局召": Entry("育局召", 3, "n")}
    assert "育局召" in seg.segment(TEXT)
    both = seg.segment(TEXT + "北京天安门", user_dict=["京天"])   # with a call's dictionary too
    assert "育局召" in both and "京天" in both
    assert "育局召" in seg.segment(TEXT, user_dict=["京天"], user_dict_mode="soft")
    seg.del_word("育局召")
    assert seg.segment(TEXT) == ["上海", "体育局", "召开", "会议"]
    for bad in [("上 海",), ("",), ("上海", -1), ("上海", None, "n n")]:
        with pytest.raises(InputError, match="add_word"):
            seg.add_word(*bad)


def test_added_words_are_not_saved(tmp_path):
    seg = Segmenter.train(CWS_TRAIN * 3, epochs=3)
    seg.add_word("育局召")
    seg.save(tmp_path / "m")
    assert Segmenter.load(tmp_path / "m").segment(TEXT) == ["上海", "体育局", "召开", "会议"]


# ------------------------------------------------------------------------------ the file format
def test_jieba_file_format(tmp_path):
    path = tmp_path / "user.txt"
    path.write_text("\ufeff云计算 5 n\n\n凯特琳 nz\n台中\n  创新办 3 i  \n云计算\n", encoding="utf-8")
    assert read_user_dict(path) == [Entry("云计算", 5, "n"), Entry("凯特琳", None, "nz"), Entry("台中"),
                                    Entry("创新办", 3, "i"), Entry("云计算")]
    assert user_words(str(path)) == ["云计算", "凯特琳", "台中", "创新办"]
    assert user_words(["a b", "", "上海", "上海"]) == ["上海"]
    empty = tmp_path / "empty.txt"
    empty.write_text("\n", encoding="utf-8")
    assert read_user_dict(empty) == []


@pytest.mark.parametrize("line", ["台中 x 5", "台中 5 n extra", "台中 5 6", "台中 n 5", "台中 3.5", "台中 ²",
                                  "台中 ² n"])
def test_a_bad_line_names_file_and_line(bmes, tmp_path, line):
    path = tmp_path / "user.txt"
    path.write_text(f"云计算 5 n\n\n{line}\n", encoding="utf-8")
    with pytest.raises(InputError, match=f"{path}:3: ") as err:
        bmes.segment(TEXT, user_dict=str(path))
    assert err.value.path == str(path) and err.value.line == 3


# ------------------------------------------------------------------------------ the command line
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cws") / "model"
    Segmenter.train(CWS_TRAIN * 3, epochs=3).save(path)
    return path


def test_cli_user_dict(model_dir, tmp_path):
    user = tmp_path / "user.txt"
    user.write_text("育局召 3 n\n", encoding="utf-8")
    raw = tmp_path / "raw.txt"
    raw.write_text(f"{TEXT}\n\n我爱北京天安门\n", encoding="utf-8")
    plain = run("segment", "--model", model_dir, raw)
    assert plain.exit_code == 0 and plain.output.splitlines()[0] == "上海 体育局 召开 会议"
    hard = run("segment", "--model", model_dir, "--user-dict", user, raw)
    assert hard.exit_code == 0, hard.output
    lines = hard.output.splitlines()
    assert "育局召" in lines[0].split() and lines[1:] == plain.output.splitlines()[1:]
    soft = run("segment", "--model", model_dir, "--user-dict", user, "--user-dict-mode", "soft", raw)
    assert soft.exit_code == 0 and soft.output == plain.output


def test_cli_bad_user_dict(model_dir, tmp_path):
    user = tmp_path / "user.txt"
    user.write_text("育局召 3 n\n育局 x y z\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    result = run("segment", "--model", model_dir, "--user-dict", user, "-o", out, input=TEXT + "\n")
    assert_clean_error(result, f"{user}:2: ")
    assert not out.exists()
    missing = run("segment", "--model", model_dir, "--user-dict", tmp_path / "none.txt", input=TEXT + "\n")
    assert_clean_error(missing, str(tmp_path / "none.txt"))
    dask = run("segment", "--model", model_dir, "--user-dict", user, "--dask", "local:1", input=TEXT + "\n")
    assert dask.exit_code == 2 and "--user-dict" in dask.output
    # the dictionary from standard input took the text there as its words, and segmented nothing (status 0)
    both = run("segment", "--model", model_dir, "--user-dict", "-", input=TEXT + "\n")
    assert_clean_error(both, "the user dictionary and the text cannot both be standard input")
    infile = tmp_path / "text.txt"
    infile.write_text(TEXT + "\n", encoding="utf-8")
    assert run("segment", "--model", model_dir, "--user-dict", "-", infile, input="育局召\n").exit_code == 0


# ------------------------------------------------------------------------------ the property
_CHARS = "上海体育局召开会议北京我爱们ab12，"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_every_greedy_match_comes_back_as_a_word(bmes, data):
    text = data.draw(st.text(alphabet=_CHARS + " ", min_size=1, max_size=40))
    cuts = [(a, b) for a in range(len(text)) for b in range(a + 1, min(len(text), a + 6) + 1)]
    chosen = data.draw(st.lists(st.sampled_from(cuts), max_size=6)) if cuts else []
    words = [text[a:b] for a, b in chosen]
    small = data.draw(st.booleans())
    with pytest.MonkeyPatch.context() as mp:
        if small:  # windows and batches cut the text too
            mp.setattr(segmenter_module, "WINDOW", 5)
            mp.setattr(segmenter_module, "OVERLAP", 2)
            mp.setattr(segmenter_module, "BATCH_CHARS", 7)
        out = bmes.segment(text, user_dict=words)
    pieces = text.split()
    assert "".join(out) == "".join(pieces)
    got = spans(out)
    vocabulary = set(user_words(words))
    at = 0
    for piece in pieces:
        for a, b in scan(vocabulary, piece):
            assert (at + a, at + b) in got, (text, words, out)
        at += len(piece)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="甲乙丙丁戊", min_size=1, max_size=4), max_size=6),
       st.lists(st.text(alphabet="甲乙丙丁戊", min_size=1, max_size=12), min_size=1, max_size=4))
def test_compiled_spans_are_the_left_to_right_scan(words, pieces):

    matcher = WordMatcher(words)
    if not matcher:
        return
    ptr = np.concatenate([[0], np.cumsum([len(p) for p in pieces])]).astype(np.int64)
    want = [(int(ptr[k]) + a, int(ptr[k]) + b) for k, p in enumerate(pieces) for a, b in scan(set(words), p)]
    assert matcher.spans(pieces, ptr) == want


@pytest.fixture(scope="module")
def sxu_lines() -> list[str]:
    from testkit import corpus_path

    test = corpus_path("sighan2008_sxu", "test.txt")
    return ["".join(line.split()) for line in test.read_text(encoding="utf-8").splitlines()[:400] if line.strip()]


@pytest.mark.corpus
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_no_user_word_is_ever_split_on_real_text(sxu_lines, data):
    """The shipped zh-seg on SXU test sentences, with random dictionaries of words cut from them (and
    from other sentences): every occurrence the documented rule picks (leftmost, then longest) comes
    back whole."""
    from structperc.model.shipped import names

    if "zh-seg" not in names():
        pytest.skip("the shipped zh-seg is not built here (python scripts/build_models.py zh-seg)")
    seg = _shipped_zh_seg()
    text = data.draw(st.sampled_from(sxu_lines))
    others = data.draw(st.lists(st.sampled_from(sxu_lines), max_size=2))
    words = []
    for source in [text, text, *others]:
        a = data.draw(st.integers(0, max(0, len(source) - 1)))
        words.append(source[a:a + data.draw(st.integers(1, 6))])
    out = seg.segment(text, user_dict=words)
    assert "".join(out) == text
    got = spans(out)
    for a, b in scan(set(user_words(words)), text):
        assert (a, b) in got, (text, words, out)


_ZH_SEG: list[Segmenter] = []


def _shipped_zh_seg() -> Segmenter:
    if not _ZH_SEG:
        import structperc

        _ZH_SEG.append(structperc.load("zh-seg"))
    return _ZH_SEG[0]
