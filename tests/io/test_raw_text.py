"""`structperc.io.raw_text`: raw text into sentences of tokens with offsets, tokenized as the corpora
are (EWT / Penn Treebank: "did n't", "Madrid ."), with spaCy's rule-based tokenizer; spaCy missing is
one `InputError` line."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import CORPORA, REPO, python_child

from structperc.errors import InputError
from structperc.io import raw_text
from structperc.io.raw_text import Token, split_texts, tokenizer_name

#: Every test but the one of spaCy's absence needs it (the module imports it only when splitting).
needs_spacy = pytest.mark.skipif(importlib.util.find_spec("spacy") is None,
                                 reason='raw text needs spaCy: pip install "structperc[text]"')


def split(text: str, lang: str = "en") -> list[list[Token]]:
    (sentences,) = list(split_texts([text], lang))
    for sentence in sentences:
        for tok in sentence:
            assert text[tok.start:tok.end] == tok.text
    return sentences


def words(text: str, lang: str = "en") -> list[str]:
    return [" ".join(t.text for t in s) for s in split(text, lang)]


@needs_spacy
def test_english_sentences_tokens_and_offsets():
    sentences = split("I saw Dr. Smith in Madrid. He didn't stay.")
    assert [[(t.text, t.start, t.end) for t in s] for s in sentences] == [
        [("I", 0, 1), ("saw", 2, 5), ("Dr.", 6, 9), ("Smith", 10, 15), ("in", 16, 18), ("Madrid", 19, 25),
         (".", 25, 26)],
        [("He", 27, 29), ("did", 30, 33), ("n't", 33, 36), ("stay", 37, 41), (".", 41, 42)],
    ]
    assert sentences[1][1] == Token("did", 30, 33)


@needs_spacy
def test_english_clitics_and_ewt_adjustments():
    assert words("I'm sure it's John's, isn't it?") == ["I 'm sure it 's John 's , is n't it ?"]
    # runs of one symbol stay one token (EWT), and still end a sentence; digit-digit hyphens stay
    assert words("Wow!! Call 713-853-3989 now. <<fine>>") == ["Wow !!", "Call 713-853-3989 now .",
                                                              "<< fine >>"]
    assert words("Great!!!!!! Thanks") == ["Great !!!!!!", "Thanks"]
    assert words("a well-known e-mail") == ["a well - known e - mail"]  # letters: spaCy's split stays


@needs_spacy
def test_spanish_and_dutch():
    assert words("El presidente visitó Madrid.", "es") == ["El presidente visitó Madrid ."]
    assert words("¿Dónde está? No lo sé.", "es") == ["¿ Dónde está ?", "No lo sé ."]
    assert words("De heer Jansen woont in Amsterdam. Hij is blij.", "nl") == [
        "De heer Jansen woont in Amsterdam .", "Hij is blij ."]
    # no English adjustment for the others: spaCy's own rules
    assert words("Hola!!", "es") == ["Hola ! !"]


@needs_spacy
def test_empty_whitespace_and_newlines():
    assert list(split_texts(["", "   ", "\n\t \n", "ok"], "en")) == [[], [], [], [[Token("ok", 0, 2)]]]
    sentences = split("  First line\nsame sentence\n\nNew paragraph  \r\n\r\n last ")
    assert [" ".join(t.text for t in s) for s in sentences] == [
        "First line same sentence", "New paragraph", "last"]
    assert sentences[0][0] == Token("First", 2, 7)


@needs_spacy
def test_unicode_offsets_are_in_characters():
    sentences = split("Zürich est grand. 北京欢迎你. Naïve café – “quoted” 😀 text.")
    flat = [t for s in sentences for t in s]
    assert [t.text for t in flat[:4]] == ["Zürich", "est", "grand", "."]
    assert Token("“", 38, 39) in flat and Token("😀", 47, 48) in flat  # 😀: one character (4 UTF-8 bytes)
    assert len(sentences) == 3


@needs_spacy
def test_streams_lazily_one_output_per_document():
    seen: list[int] = []

    def texts():
        for i in range(5):
            seen.append(i)
            yield f"Document {i}."

    out = split_texts(texts(), "en", batch_size=2)
    assert seen == []  # nothing read before asked
    first = next(out)
    assert [t.text for t in first[0]] == ["Document", "0", "."]
    assert len(seen) < 5
    assert len(list(out)) == 4


@needs_spacy
def test_tokenizer_name_and_bad_arguments():
    import spacy

    assert tokenizer_name("en").startswith(f"spacy {spacy.__version__} blank('en') + sentencizer")
    assert tokenizer_name("es") == f"spacy {spacy.__version__} blank('es') + sentencizer"
    for lang in ("klingon", "qq", "en.stop_words", ""):
        with pytest.raises(InputError, match="language code") as err:
            list(split_texts(["x"], lang))
        assert repr(lang) in str(err.value)
    with pytest.raises(InputError, match="document 2 is a bytes"):
        list(split_texts(["fine", b"bytes"], "en"))  # type: ignore[list-item]
    with pytest.raises(InputError, match="batch_size"):
        list(split_texts(["x"], "en", batch_size=0))


def test_without_spacy_one_input_error_line():
    code = textwrap.dedent("""
        import sys
        sys.modules["spacy"] = None
        from structperc.errors import InputError
        from structperc.io.raw_text import split_texts, tokenizer_name
        for call in (lambda: list(split_texts(["Hello."], "en")), lambda: tokenizer_name("en")):
            try:
                call()
            except InputError as err:
                print(str(err))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == ['splitting raw text into tokens needs spaCy: pip install "structperc[text]"'] * 2


#: Random text from pieces: whitespace of all kinds, punctuation, any character, and strings the rules
#: treat specially (clitics, abbreviations, URLs, symbol runs).
TEXT = st.lists(
    st.one_of(
        st.sampled_from(list(" \t\n\r\x0b\x0c\x1c\x85\u00a0\u2003\u2028\u3000\u200b.!?,;:'\"-()[]<>*=$%&/\\…“”‘’«»¿¡")),
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from(["n't", "'s", "Dr.", "U.S.", "e-mail", "3-4", "!!", "...", "http://a.b/c", "😀", "é"]),
    ),
    max_size=40,
).map("".join)


@needs_spacy
@pytest.mark.parametrize("long_stretch", [raw_text.LONG_STRETCH, 4])
@pytest.mark.parametrize("lang", ["en", "es", "nl"])
@settings(max_examples=150, deadline=None)
@given(text=TEXT)
def test_offsets_cover_every_non_whitespace_character(lang, long_stretch, text):
    """Also with stretches longer than 4 characters cut into tokens of 4 (`raw_text.LONG_STRETCH` made small)."""
    with mock.patch.object(raw_text, "LONG_STRETCH", long_stretch):
        (sentences,) = list(split_texts([text], lang))
    flat = [t for s in sentences for t in s]
    assert all(s for s in sentences)  # no empty sentence
    end = 0
    for tok in flat:
        assert tok.text == text[tok.start:tok.end]
        assert tok.start >= end and tok.end > tok.start  # in order, not overlapping, not empty
        assert not any(ch.isspace() for ch in tok.text)
        assert text[end:tok.start].isspace() or end == tok.start  # only whitespace skipped
        end = tok.end
    assert text[end:].isspace() or end == len(text)
    assert "".join(t.text for t in flat) == "".join(ch for ch in text if not ch.isspace())


@needs_spacy
def test_a_long_stretch_is_cut_into_tokens_and_the_rest_tokenized_as_before():
    """spaCy's tokenizer is quadratic in a stretch without whitespace (a minute for 850,000 characters of URLs,
    a service answering no one meanwhile): such a stretch becomes tokens of `LONG_STRETCH` characters; the text
    around it is tokenized and split into sentences as it is without it."""
    n = raw_text.LONG_STRETCH
    blob = ("http://w.com/" + "a/" * 100) * (2 * n // 213 + 1)
    text = f"He didn't stay.  {blob}  Dr. Smith came!!\n\nThen   he left."
    (sentences,) = split_texts([text], "en")
    tokens = [t for s in sentences for t in s]
    assert all(text[t.start:t.end] == t.text for t in tokens)
    inside = [t.text for t in tokens if text.index(blob) <= t.start < text.index(blob) + len(blob)]
    assert "".join(inside) == blob and [len(t) for t in inside] == [n, n, len(blob) - 2 * n]
    (without,) = split_texts([text.replace(blob, "X")], "en")
    outside = [[t.text for t in s if t.text not in inside] for s in sentences]
    assert outside == [[t.text for t in s if t.text != "X"] for s in without]


@needs_spacy
def test_raw_text_takes_linear_time_on_a_long_stretch():
    """1.7 million characters of URLs in one stretch: minutes before; a child given 60 s now takes a fraction."""
    code = ("from structperc.io.raw_text import split_texts\n"
            "text = 'Hi. ' + ('http://w1.com/' + 'a/' * 100) * 8000 + ' Bye.'\n"
            "(sentences,) = split_texts([text], 'en')\n"
            "assert sum(map(len, sentences)) > 400\n")
    done = python_child(code)
    assert done.returncode == 0, done.stderr


@needs_spacy
@pytest.mark.corpus
def test_ewt_dev_token_f1_floor():
    """Token F1 of (start, end) spans against EWT dev's words aligned to the ``# text`` lines
    (multi-word tokens as their words, as the tagger reads them; see scripts/bench/bench_tokenizer.py)."""
    path = CORPORA / "ud_en_ewt" / "en_ewt-ud-dev.conllu"
    if not path.is_file():
        pytest.skip(f"corpus not found ({path} missing; the full corpora live in ../shared/corpora)")
    sys.path.insert(0, str(REPO / "scripts" / "bench"))
    try:
        from bench_tokenizer import read_ewt
    finally:
        sys.path.pop(0)
    docs, _ = read_ewt(path)
    sentences = [s for d in docs for s in d.sentences]
    right = predicted = gold = 0
    for sentence, doc in zip(sentences, split_texts([s.text for s in sentences], "en")):
        spans = {(t.start, t.end) for sent in doc for t in sent}
        predicted += len(spans)
        gold += len(sentence.words)
        right += len(spans & set(sentence.words))
    p, r = right / predicted, right / gold
    f1 = 2 * p * r / (p + r)
    # measured 0.9849 (P 0.9846, R 0.9852); 0.9725 without the EWT adjustments
    assert f1 >= 0.982, f"EWT dev token F1 {f1:.4f} < 0.982"
