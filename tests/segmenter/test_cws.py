"""Chinese word segmentation: words ↔ B/M/E/S tags, dictionary columns, the segmented-text reader,
BMES-constrained decoding, `Segmenter` (train, segment, stream, save/load, bakeoff scores, jackknifed
lexicon) and the `train --task cws` / `segment` / `eval` commands with good and bad input."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from testkit import CORPORA, CWS_TRAIN

from structperc.cli import main
from structperc.decode.viterbi import viterbi_batch
from structperc.errors import InputError, ModelFormatError
from structperc.features.lexicon import LEX_COLUMNS, MAX_VALUE, Lexicon, read_lexicon
from structperc.io.corpus import Corpus
from structperc.io.segmented import read_segmented, read_segmented_corpus
from structperc.labels import transition_mask, valid_sequence
from structperc.labels.bmes import bmes_codes, tags_to_words, word_spans, words_to_tags
from structperc.segmenter import Segmenter
from structperc.train.epoch_kernels import viterbi as compiled_viterbi

# ------------------------------------------------------------------------------ characters
_HAN = [chr(c) for c in range(0x4E00, 0xA000, 7)]                   # BMP Han
_ASTRAL_HAN = [chr(c) for c in range(0x20000, 0x2A6E0, 101)] + ["𠀋"]  # CJK Ext. B (4-byte UTF-8)
_EMOJI = [chr(c) for c in range(0x1F600, 0x1F650)]                   # 😀 …
_LATIN = list("abcxyzABCXYZéüßÆ")
_ASCII_DIGIT = list("0123456789")
_FULL_DIGIT = [chr(c) for c in range(0xFF10, 0xFF1A)]                # ０-９
_FULL_PUNCT = list("，。！？：；、（）「」《》—…％＋")
CHAR = st.one_of(*(st.sampled_from(group) for group in (
    _HAN, _ASTRAL_HAN, _EMOJI, _LATIN, _ASCII_DIGIT, _FULL_DIGIT, _FULL_PUNCT)))
WORD = st.text(alphabet=CHAR, min_size=1, max_size=7)
WORDS = st.lists(WORD, min_size=0, max_size=12)


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def assert_clean_error(result, prefix: str) -> str:
    """Exit status 1, one stderr line starting 'Error: <prefix>', no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {prefix}"), lines[0]
    return lines[0]


# ------------------------------------------------------------------- words <-> B/M/E/S tags
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), max_size=30))
def test_bmes_codes_are_the_tags_of_words_in_order_of_first_occurrence(lengths):
    """The corpus-wide coded form equals `words_to_tags` word by word, its values numbered as a
    column of strings would be (first occurrence first)."""
    distinct, codes = bmes_codes(np.array(lengths, dtype=np.int64))
    tags = words_to_tags(["x" * n for n in lengths])
    assert [distinct[c] for c in codes] == tags
    assert distinct == list(dict.fromkeys(tags))


def test_words_to_tags_by_hand():
    assert words_to_tags(["上海市", "体育", "局"]) == ["B", "M", "E", "B", "E", "S"]
    assert words_to_tags(["中华人民共和国"]) == ["B", "M", "M", "M", "M", "M", "E"]
    assert words_to_tags(["😀", "𠀋𠀋", "２０２４", "年"]) == ["S", "B", "E", "B", "M", "M", "E", "S"]
    assert words_to_tags([]) == []


def test_tags_to_words_by_hand_and_ill_formed():
    assert tags_to_words("上海市体育局", ["B", "M", "E", "B", "E", "S"]) == ["上海市", "体育", "局"]
    # ill-formed: B and S always start a word, a dangling word is closed at the end
    assert tags_to_words("abcd", ["B", "B", "M", "S"]) == ["a", "bc", "d"]
    assert tags_to_words("abc", ["M", "M", "M"]) == ["abc"]
    assert tags_to_words("𠀋😀", ["B", "E"]) == ["𠀋😀"]


@settings(max_examples=200, deadline=None)
@given(WORDS)
def test_words_tags_words_identity(words):
    text = "".join(words)
    tags = words_to_tags(words)
    assert len(tags) == len(text)                       # one tag per code point, astral ones too
    assert valid_sequence(tags, "bmes")
    assert tags_to_words(text, tags) == words
    assert tags_to_words(list(text), tags) == words


@settings(max_examples=100, deadline=None)
@given(WORDS)
def test_word_spans_tile_the_text(words):
    text = "".join(words)
    spans = word_spans(words)
    assert len(spans) == len(words)
    pos = 0
    for w, (a, b) in zip(words, spans):
        assert a == pos and b == a + len(w) and text[a:b] == w
        pos = b
    assert pos == len(text)


def test_word_spans_by_hand():
    assert word_spans(["上海", "😀", "体育局"]) == [(0, 2), (2, 3), (3, 6)]
    assert word_spans([]) == []


@pytest.mark.corpus
def test_identity_on_every_sxu_training_line():
    path = CORPORA / "sighan2008_sxu" / "train.txt"
    if not path.is_file():
        pytest.skip(f"SIGHAN 2008 SXU corpus not found ({path} missing)")
    n = 0
    for number, words in read_segmented(path):
        text = "".join(words)
        tags = words_to_tags(words)
        assert tags_to_words(text, tags) == words, f"{path}:{number}"
        assert valid_sequence(tags, "bmes"), f"{path}:{number}"
        n += bool(words)
    assert n == 17115  # the README's count of lines


# ------------------------------------------------------------------------ lexicon columns
def test_lexicon_docstring_case():
    lex = Lexicon(["上海", "上海市", "体育局"])
    assert lex.columns("上海市体育局") == (["3", "0", "0", "3", "0", "0"], ["0", "2", "3", "0", "0", "3"],
                                          ["0", "3", "0", "0", "3", "0"])


def test_lexicon_longest_match_with_overlaps():
    # 北京(0,2) 北京大学(0,4) 大学(2,4) 大学生(2,5) all match in 北京大学生
    lex = Lexicon(["北京", "北京大学", "大学", "大学生"])
    lexb, lexe, lexm = lex.columns("北京大学生")
    assert lexb == ["4", "0", "3", "0", "0"]
    assert lexe == ["0", "2", "0", "4", "3"]
    assert lexm == ["0", "4", "4", "3", "0"]


def test_lexicon_prefix_that_is_not_a_word_keeps_searching():
    lex = Lexicon(["abcd"])            # "ab", "abc" are prefixes only
    assert lex.columns("xabcdy") == (["0", "4", "0", "0", "0", "0"], ["0", "0", "0", "0", "4", "0"],
                                     ["0", "0", "4", "4", "0", "0"])
    assert lex.columns("abc") == (["0"] * 3, ["0"] * 3, ["0"] * 3)


def test_lexicon_values_capped():
    assert MAX_VALUE == 5
    lex = Lexicon(["中华人民共和国"])   # 7 characters
    lexb, lexe, lexm = lex.columns("中华人民共和国万岁")
    assert lexb == ["5"] + ["0"] * 8
    assert lexe == ["0"] * 6 + ["5", "0", "0"]
    assert lexm == ["0"] + ["5"] * 5 + ["0", "0", "0"]
    assert Lexicon(["一二三四五"]).columns("一二三四五")[0][0] == "5"
    assert Lexicon(["一二三四"]).columns("一二三四")[0][0] == "4"


def test_lexm_strictly_inside():
    lexb, lexe, lexm = Lexicon(["上海"]).columns("上海")
    assert (lexb, lexe, lexm) == (["2", "0"], ["0", "2"], ["0", "0"])   # a 2-char word covers nothing inside
    assert Lexicon(["体育局"]).columns("体育局")[2] == ["0", "3", "0"]


def test_lexicon_single_characters_ignored_and_astral():
    lex = Lexicon(["我", "我们", "𠀋😀"])
    assert len(lex) == 2
    assert lex.columns("我们我") == (["2", "0", "0"], ["0", "2", "0"], ["0", "0", "0"])
    assert lex.columns("x𠀋😀") == (["0", "2", "0"], ["0", "0", "2"], ["0", "0", "0"])
    assert Lexicon([]).columns("上海") == (["0", "0"], ["0", "0"], ["0", "0"])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(alphabet="上海市体育局abc😀", min_size=1, max_size=6), max_size=6),
       st.text(alphabet="上海市体育局abc😀", max_size=12))
def test_lexicon_columns_match_brute_force(words, text):
    lex = Lexicon(words)
    n = len(text)
    lb, le, lm = [0] * n, [0] * n, [0] * n
    for i in range(n):
        for j in range(i + 2, n + 1):
            if text[i:j] in lex.words:
                k = j - i
                lb[i], le[j - 1] = max(lb[i], k), max(le[j - 1], k)
                for m in range(i + 1, j - 1):
                    lm[m] = max(lm[m], k)
    cap = lambda xs: [str(min(x, MAX_VALUE)) for x in xs]  # noqa: E731
    assert lex.columns(text) == (cap(lb), cap(le), cap(lm))


def test_read_lexicon_counts_and_crlf(write_file):
    path = write_file("lex.txt", "上海\r\n\r\n体育局 12\r\n天安门　３\r\n")   # full-width space and digit
    assert read_lexicon(path) == ["上海", "体育局", "天安门"]


def test_read_lexicon_three_fields_names_file_and_line(write_file):
    path = write_file("lex.txt", "上海\n体育局 12\n北京 天安门 3\n")
    with pytest.raises(InputError) as info:
        read_lexicon(path)
    assert info.value.path == path and info.value.line == 3
    assert str(info.value).startswith(f"{path}:3: ")


def test_read_lexicon_non_numeric_second_field(write_file):
    path = write_file("lex.txt", "上海 体育\n")
    with pytest.raises(InputError) as info:
        read_lexicon(path)
    assert str(info.value).startswith(f"{path}:1: ")


@pytest.mark.parametrize("text", ["", "\n\n", "  \n\u3000\n"])
def test_read_lexicon_empty(write_file, text):
    path = write_file("lex.txt", text)
    with pytest.raises(InputError, match="empty") as info:
        read_lexicon(path)
    assert info.value.path == path


# -------------------------------------------------------------------- segmented-text reader
def test_read_segmented_crlf_fullwidth_spaces_and_empty_lines(write_file):
    path = write_file("seg.txt", "上海  体育局\r\n\r\n我\u3000爱　北京\r\n   \n\t２０２４\t年\n")
    assert list(read_segmented(path)) == [(1, ["上海", "体育局"]), (2, []), (3, ["我", "爱", "北京"]),
                                          (4, []), (5, ["２０２４", "年"])]
    sents, lines = read_segmented_corpus(path)
    assert sents == [["上海", "体育局"], ["我", "爱", "北京"], ["２０２４", "年"]]
    assert lines == [1, 3, 5]


def test_read_segmented_corpus_empty(write_file):
    path = write_file("seg.txt", "\n \n\u3000\n")
    with pytest.raises(InputError, match="no sentences"):
        read_segmented_corpus(path)


def test_read_segmented_bad_bytes_name_line(write_file):
    path = write_file("seg.txt", "上 海\n".encode() + b"ab \xff\xfe\n")
    with pytest.raises(InputError) as info:
        list(read_segmented(path))
    assert info.value.line == 2


# ------------------------------------------------------------------- BMES-constrained decoding
BMES = ["B", "E", "M", "S"]
SCORES = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False, width=32)


def _arrays(shape):
    return arrays(np.float64, shape, elements=SCORES)


@st.composite
def scored_sentences(draw, n_labels, max_len=8, max_batch=4):
    B = draw(st.integers(1, max_batch))
    lengths = draw(st.lists(st.integers(1, max_len), min_size=B, max_size=B))
    T = max(lengths)
    state = draw(_arrays((B, T, n_labels)))
    per_token = draw(st.booleans())
    trans = draw(_arrays((B, T, n_labels + 1, n_labels) if per_token else (n_labels + 1, n_labels)))
    return state, trans, np.asarray(lengths, dtype=np.int64)


def decode_both(labels, scheme, state, trans, lengths):
    """Paths of every sentence from the compiled decoder and from viterbi_batch, with the mask added."""
    mask, end = transition_mask(labels, scheme)
    B, T, L = state.shape
    masked = trans + mask
    out = []
    for b in range(B):
        n = int(lengths[b])
        t = masked[b, :n] if masked.ndim == 4 else masked[None]
        path = np.empty(n, dtype=np.int32)
        compiled_viterbi(np.ascontiguousarray(state[b, :n]), np.ascontiguousarray(t), end, path)
        out.append(("compiled", [labels[i] for i in path]))
    batch = viterbi_batch(state, masked, end, lengths)
    for b in range(B):
        out.append(("batch", [labels[i] for i in batch[b, :int(lengths[b])]]))
    return out


@settings(max_examples=150, deadline=None)
@given(scored_sentences(len(BMES)))
def test_bmes_mask_decoding_is_always_valid(data):
    state, trans, lengths = data
    for which, tags in decode_both(BMES, "bmes", state, trans, lengths):
        assert valid_sequence(tags, "bmes"), (which, tags)
        assert len(tags) in lengths.tolist()


def test_bmes_mask_by_hand():
    mask, end = transition_mask(BMES, "bmes")
    ok = {(p, c) for p in ("B", "M") for c in ("M", "E")} | {(p, c) for p in ("E", "S", None)
                                                             for c in ("B", "S")}
    for i, p in enumerate(BMES + [None]):
        for j, c in enumerate(BMES):
            assert (mask[i, j] == 0) == ((p, c) in ok), (p, c)
    assert end.tolist() == [-np.inf, 0.0, -np.inf, 0.0]


def test_bmes_mask_overrides_strong_scores():
    """Scores that all favour M: the decoder must still start with B/S and end with E/S."""
    state = np.zeros((1, 5, 4))
    state[..., 2] = 100.0
    for which, tags in decode_both(BMES, "bmes", state, np.zeros((5, 4)), np.array([5])):
        assert tags == ["B", "M", "M", "M", "E"], which


# ------------------------------------------------------------------------------- Segmenter
TRAIN = CWS_TRAIN


@pytest.fixture(scope="module")
def segmenter():
    return Segmenter.train(TRAIN, epochs=10, seed=0)


def test_segmenter_fits_training_sentences(segmenter):
    for line in TRAIN:
        assert segmenter.segment("".join(line.split())) == line.split()
    assert segmenter.train_words_ == sorted({w for line in TRAIN for w in line.split()})


def test_segment_texts_empty_lines_and_whitespace_boundaries(segmenter):
    texts = ["", "   ", "\u3000", "上海体育局召开会议", "上海体育 局召开", "北京\u3000体育局\t会议"]
    out = segmenter.segment_texts(texts)
    assert out[:3] == [[], [], []]
    assert out[3] == ["上海", "体育局", "召开", "会议"]
    # whitespace is a sure boundary: the pieces are segmented separately, no word crosses the space
    assert out[4] == segmenter.segment("上海体育") + segmenter.segment("局召开")
    assert "".join(out[4]) == "上海体育局召开"
    assert all("体育局" != w for w in out[4])
    assert out[5] == ["北京", "体育局", "会议"]


def test_segment_rejects_non_strings(segmenter):
    with pytest.raises(InputError):
        segmenter.segment(["上海"])


def test_segment_lines_batches_equal_one_batch_and_stream(segmenter):
    lines = ["上海体育局", "", "我爱北京天安门", "  ", "２０２４年，我们去北京。", "ABC公司😀𠀋", "我们爱上海"]
    whole = segmenter.segment_texts(lines)
    for batch in (1, 2, 3, 100):
        assert list(segmenter.segment_lines(iter(lines), batch=batch)) == whole

    pulled = []

    def source():
        for line in lines:
            pulled.append(line)
            yield line
    it = segmenter.segment_lines(source(), batch=2)
    assert next(it) == whole[0]
    assert len(pulled) == 2                      # only the first batch was read
    assert list(it) == whole[1:]


def test_untrained_segmenter():
    with pytest.raises(RuntimeError, match="not trained"):
        Segmenter().segment("上海")


def test_folds_must_be_positive():
    with pytest.raises(InputError, match="folds"):
        Segmenter(folds=0).fit(TRAIN)


def test_save_load_round_trip(segmenter, tmp_path):
    segmenter.save(tmp_path / "seg")
    loaded = Segmenter.load(tmp_path / "seg")
    texts = ["上海体育局召开会议", "", "北京天安门 ２０２４年", "😀𠀋公司", "新词汇测试"]
    assert loaded.segment_texts(texts) == segmenter.segment_texts(texts)
    assert loaded.train_words_ == segmenter.train_words_
    assert loaded.lexicon_ == segmenter.lexicon_
    assert loaded.evaluate(TRAIN) == segmenter.evaluate(TRAIN)


def test_load_refuses_a_tagging_model(tmp_path, toy_tagger):
    toy_tagger.save(tmp_path / "chunker")
    with pytest.raises(ModelFormatError, match="not a word segmentation model"):
        Segmenter.load(tmp_path / "chunker")


def test_evaluate_hand_computed(segmenter, monkeypatch):
    gold = ["上海 体育局", "我 爱 北京"]
    pred = [["上海", "体育", "局"], ["我爱", "北京"]]
    monkeypatch.setattr(segmenter, "segment_texts", lambda texts: [list(p) for p in pred])
    monkeypatch.setattr(segmenter, "train_words_", ["上海", "我", "爱", "体育"])
    r = segmenter.evaluate(gold)
    # gold spans: (0,2)(2,5) | (0,1)(1,2)(2,4); predicted: (0,2)(2,4)(4,5) | (0,2)(2,4)
    # correct: 上海, 北京 → P = 2/5, R = 2/5; OOV gold words 体育局, 北京 (北京 found), IV 上海 我 爱
    assert r["words"] == 5 and r["sentences"] == 2
    assert r["precision"] == pytest.approx(2 / 5)
    assert r["recall"] == pytest.approx(2 / 5)
    assert r["f1"] == pytest.approx(2 / 5)
    assert r["oov_rate"] == pytest.approx(2 / 5)
    assert r["oov_recall"] == pytest.approx(1 / 2)
    assert r["iv_recall"] == pytest.approx(1 / 3)


def test_evaluate_unequal_counts(segmenter, monkeypatch):
    gold = ["上海市 体育局"]
    pred = [["上海", "市", "体育局"]]
    monkeypatch.setattr(segmenter, "segment_texts", lambda texts: pred)
    r = segmenter.evaluate(gold)
    # 1 correct (体育局) of 3 predicted and 2 gold: P 1/3, R 1/2, F1 2·(1/3·1/2)/(1/3+1/2) = 0.4
    assert (r["precision"], r["recall"]) == (pytest.approx(1 / 3), pytest.approx(1 / 2))
    assert r["f1"] == pytest.approx(0.4)


def test_what_a_tagger_has_and_a_segmenter_has_not_is_refused_plainly(segmenter):
    """Inherited from `Tagger`, ``partial_fit`` asked for 5 columns (char lexb lexe lexm tag) and ``predict`` for
    tuples of 4: columns a segmenter makes for itself."""
    with pytest.raises(InputError, match="^continued training of a word segmentation model is not supported"):
        segmenter.partial_fit(["上海 体育局"])
    for call in (lambda: segmenter.predict([list("上海市体育局")]), lambda: segmenter.tag(list("上海")),
                 lambda: segmenter.tag_texts(["上海"])):
        with pytest.raises(InputError, match=r"^a Segmenter segments text: segment\(text\)"):
            call()
    assert segmenter.segment("上海体育局")  # what it does


def test_evaluate_refuses_strict_which_words_do_not_have(segmenter):
    """``eval --strict`` printed the same word F1 as without it, saying nothing."""
    with pytest.raises(InputError, match="--strict .* a segmenter's word F1 has none"):
        segmenter.evaluate(["上海 体育局"], strict=True)


def test_evaluate_on_training_data_is_perfect(segmenter, write_file):
    path = write_file("gold.txt", "\n".join(TRAIN) + "\n\n")
    r = segmenter.evaluate(path)
    assert r["f1"] == 1.0 and r["precision"] == 1.0 and r["recall"] == 1.0
    assert r["oov_rate"] == 0.0 and r["iv_recall"] == 1.0
    assert r["sentences"] == len(TRAIN)
    assert r["words"] == sum(len(s.split()) for s in TRAIN)


# ------------------------------------------------------------------------- jackknifed lexicon
JACK = [
    ["天安门", "很", "大"],      # 天安门 occurs in this sentence only
    ["我", "爱", "北京"],
    ["北京", "很", "大"],        # 北京 occurs in two sentences
    ["我", "爱", "上海"],
    ["上海", "很", "美"],
]


def _training_corpus(monkeypatch, **params):
    import structperc.train.run as fitting

    seen = []
    original = fitting.fit

    def spy(corpus, *args, **kwargs):
        # the corpus training gets, dictionary columns and all (copied: training releases them)
        seen.append(Corpus({k: list(v) for k, v in corpus.columns.items()}, corpus.sent_ptr.copy()))
        return original(corpus, *args, **kwargs)
    monkeypatch.setattr(fitting, "fit", spy)
    Segmenter(epochs=1, **params).fit(JACK)
    monkeypatch.undo()
    return seen[0]


def test_jackknifing_hides_a_sentences_own_words(monkeypatch):
    default = _training_corpus(monkeypatch)
    single = _training_corpus(monkeypatch, folds=1)
    for c in (default, single):
        assert set(LEX_COLUMNS) <= set(c.columns)
        assert c.sentence(0)["char"] == list("天安门很大")
    # without jackknifing the sentence's own word marks it; with it, no other sentence has 天安门
    assert single.sentence(0)["lexb"] == ["3", "0", "0", "0", "0"]
    assert single.sentence(0)["lexe"] == ["0", "0", "3", "0", "0"]
    assert default.sentence(0)["lexb"] == ["0"] * 5
    assert default.sentence(0)["lexe"] == ["0"] * 5
    assert default.sentence(0)["lexm"] == ["0"] * 5
    # 5 sentences, 10 folds → one sentence per fold: 北京 is still known from the other sentence
    assert default.sentence(2)["lexb"][:2] == ["2", "0"]
    assert default.sentence(1)["lexb"][2:] == ["2", "0"]
    assert default.columns["lexb"] != single.columns["lexb"]


def test_jackknifing_keeps_user_lexicon_words(monkeypatch):
    c = _training_corpus(monkeypatch, lexicon=["天安门"])
    assert c.sentence(0)["lexb"] == ["3", "0", "0", "0", "0"]


def test_final_lexicon_has_all_training_words_and_user_words():
    seg = Segmenter(epochs=1, lexicon=["人民大会堂"]).fit(JACK)
    assert seg.lexicon_ == sorted({w for s in JACK for w in s} | {"人民大会堂"})
    assert seg.dictionary_.lookup.columns("去天安门")[0] == ["0", "3", "0", "0"]


def test_template_without_lexicon_columns_builds_none(monkeypatch):
    c = _training_corpus(monkeypatch, template="cws-chars")
    assert not set(LEX_COLUMNS) & set(c.columns)


# ------------------------------------------------------------------------------------- CLI
@pytest.fixture
def cws_files(write_file):
    return {
        "train": write_file("train.txt", "\n".join(TRAIN) + "\n"),
        "lexicon": write_file("lexicon.txt", "人民大会堂 7\n天安门广场\n"),
        "raw": write_file("raw.txt", "上海体育局召开会议\r\n\r\n我爱北京天安门广场\n２０２４年，我们去北京。\n"),
        "gold": write_file("gold.txt", "上海 体育局 召开 会议\n我 爱 北京 天安门\n"),
    }


@pytest.fixture
def cli_model(tmp_path, cws_files):
    d = tmp_path / "cws-model"
    r = run("train", "--task", "cws", "--train", cws_files["train"], "--lexicon", cws_files["lexicon"],
            "--epochs", 10, "--model", d, "-q")
    assert r.exit_code == 0, (r.output, r.exception)
    return d


def test_cli_train_with_lexicon(cli_model):
    seg = Segmenter.load(cli_model)
    assert "天安门广场" in seg.lexicon_ and "人民大会堂" in seg.lexicon_
    assert "天安门广场" not in seg.train_words_
    assert seg.dictionary_.lookup.columns("去天安门广场")[0][1] == "5"
    assert seg.segment("上海体育局召开会议") == ["上海", "体育局", "召开", "会议"]


def test_cli_segment_stdin_and_file(cli_model, cws_files):
    seg = Segmenter.load(cli_model)
    raw = Path(cws_files["raw"]).read_text(encoding="utf-8").replace("\r\n", "\n")
    expected = "".join(" ".join(ws) + "\n" for ws in seg.segment_texts(raw.split("\n")[:-1]))
    from_stdin = run("segment", "--model", cli_model, input=raw)
    from_file = run("segment", "--model", cli_model, cws_files["raw"])
    assert from_stdin.exit_code == 0 and from_file.exit_code == 0, (from_stdin.output, from_file.output)
    assert from_stdin.stdout == expected
    assert from_file.stdout == expected
    lines = from_file.stdout.split("\n")
    assert len(lines) == 5 and lines[1] == "" and lines[0] == "上海 体育局 召开 会议"
    slash = run("segment", "--model", cli_model, "--sep", "/", cws_files["raw"])
    assert slash.stdout.split("\n")[0] == "上海/体育局/召开/会议"


def test_cli_eval_segmented_file(cli_model, cws_files):
    r = run("eval", "--model", cli_model, "--json", cws_files["gold"])
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report == pytest.approx(Segmenter.load(cli_model).evaluate(cws_files["gold"]))
    assert report["words"] == 8 and report["sentences"] == 2
    text = run("eval", "--model", cli_model, cws_files["gold"])
    assert text.exit_code == 0
    assert "words 8" in text.stdout and "OOV rate" in text.stdout and "IV recall" in text.stdout


def test_cli_training_file_with_bad_bytes(tmp_path, write_file):
    path = write_file("bad.txt", "上海 体育局\n我 爱 北京\n".encode() + b"\xff\xfe \xe5\x8c\x97\n")
    line = assert_clean_error(run("train", "--task", "cws", "--train", path, "--model",
                                  tmp_path / "m", "-q"), f"{path}:3:")
    assert "UTF-8" in line
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("text", ["", "\n\n  \n"])
def test_cli_empty_training_file(tmp_path, write_file, text):
    path = write_file("empty.txt", text)
    line = assert_clean_error(run("train", "--task", "cws", "--train", path, "--model",
                                  tmp_path / "m", "-q"), f"{path}:")
    assert "no sentences" in line


def test_cli_malformed_lexicon(tmp_path, write_file, cws_files):
    lex = write_file("badlex.txt", "上海\n体育 局 x\n")
    line = assert_clean_error(run("train", "--task", "cws", "--train", cws_files["train"], "--lexicon",
                                  lex, "--model", tmp_path / "m", "-q"), f"{lex}:2:")
    assert "one word per line" in line


def test_cli_segment_file_with_bad_bytes(cli_model, write_file):
    path = write_file("badraw.txt", "上海体育局\n\n".encode() + b"ab\xc3(\n")
    assert_clean_error(run("segment", "--model", cli_model, path), f"{path}:3:")


def test_cli_segment_with_a_tagging_model(tmp_path, toy_tagger, cws_files):
    toy_tagger.save(tmp_path / "chunker")
    line = assert_clean_error(run("segment", "--model", tmp_path / "chunker", cws_files["raw"]), "")
    assert "not a word segmentation model" in line


def test_cli_eval_task_option_is_checked(cli_model, cws_files):
    ok = run("eval", "--task", "cws", "--model", cli_model, cws_files["train"])
    assert ok.exit_code == 0, ok.output
    line = assert_clean_error(run("eval", "--task", "ner", "--model", cli_model, cws_files["train"]), "")
    assert "a 'cws' model, not 'ner'" in line


def test_cli_tag_with_a_segmentation_model(cli_model, cws_files):
    line = assert_clean_error(run("tag", "--model", cli_model, cws_files["raw"]), "")
    assert "use 'structperc segment'" in line


def test_cli_missing_files(cli_model, cws_files, tmp_path):
    missing = tmp_path / "nope.txt"
    line = assert_clean_error(run("segment", "--model", cli_model, missing), f"{missing}: ")
    assert "No such file" in line
    line = assert_clean_error(run("train", "--task", "cws", "--train", cws_files["train"], "--lexicon",
                                  missing, "--model", tmp_path / "m", "-q"), f"{missing}: ")


def test_cli_segment_crlf_and_fullwidth_space_input(cli_model):
    seg = Segmenter.load(cli_model)
    r = run("segment", "--model", cli_model, input="上海体育局\r\n\u3000北京\u3000体育局\r\n".encode())
    assert r.exit_code == 0, r.output
    assert r.stdout == " ".join(seg.segment("上海体育局")) + "\n" + \
        " ".join(seg.segment("北京") + seg.segment("体育局")) + "\n"
    assert "\r" not in r.stdout and "\u3000" not in r.stdout
