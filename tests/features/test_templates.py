"""The template language: parsing, aliases, value functions, transition templates and errors."""
from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import InputError
from structperc.features.templates import (
    FUNCTIONS,
    PRESETS,
    Atom,
    Part,
    parse_template,
    parse_templates,
    preset,
    value_function,
)


def test_parse_conjunction_names_and_parts():
    t = parse_template("w[-1]|w[0]")
    assert t.name == "w[-1]|w[0]"
    assert t.parts == (Part(Atom("word"), -1), Part(Atom("word"), 0))
    assert not t.transition and not t.is_bias


def test_spaces_are_ignored_in_names_and_offsets():
    t = parse_template(" lower( w[ -2 ] ) | pos[+1] ")
    assert t.name == "lower(w[-2])|pos[+1]"
    assert t.parts == (Part(Atom("word", "lower"), -2), Part(Atom("pos"), 1))
    assert [str(p) for p in t.parts] == ["lower(word[-2])", "pos[1]"]


@pytest.mark.parametrize("alias, column", [("w", "word"), ("c", "char"), ("p", "pos"),
                                           ("word", "word"), ("ner_tag", "ner_tag")])
def test_aliases(alias, column):
    t = parse_template(f"{alias}[0]")
    assert t.parts[0].atom.column == column


def test_bias():
    t = parse_template("bias")
    assert t.is_bias and t.parts == () and not t.transition


def test_function_parts():
    t = parse_template("shape(w[0])|suffix3(w[1])|prefix2(c[-1])")
    assert [p.atom for p in t.parts] == [Atom("word", "shape"), Atom("word", "suffix3"),
                                         Atom("char", "prefix2")]
    assert [p.offset for p in t.parts] == [0, 1, -1]
    assert t.parts[0].atom.name == "shape(word)"


def test_same_part():
    t = parse_template("same(c[0],c[-1])")
    assert t.parts == (Part(Atom("char"), 0, -1),)
    assert str(t.parts[0]) == "same(char[0],char[-1])"


def test_transition_template():
    t = parse_template("y[-1]|y[0]|pos[0]")
    assert t.transition
    assert t.parts == (Part(Atom("pos"), 0),)
    t2 = parse_template("y[-1] | y[0] | pos[-1] | pos[0]")
    assert t2.transition and [p.offset for p in t2.parts] == [-1, 0]


@pytest.mark.parametrize("func, value, expected", [
    ("lower", "HeLLo", "hello"),
    ("lower", "ÄÖÜ", "äöü"),
    ("shape", "Abc1", "Xxxd"),
    ("shape", "McDonald's-9", "XxXxxxxx'x-d"),
    ("shape", "北京", "北京"),           # no case, not a digit: kept
    ("shortshape", "Abc1", "Xxd"),
    ("shortshape", "AAbb--12", "Xx-d"),
    ("prefix1", "Zürich", "Z"),
    ("prefix3", "Zürich", "Zür"),
    ("prefix3", "ab", "ab"),
    ("suffix2", "Zürich", "ch"),
    ("suffix3", "北京欢迎你", "欢迎你"),
    ("suffix9", "ab", "ab"),
    ("isdigit", "123", "1"),
    ("isdigit", "12a", "0"),
    ("isdigit", "１２", "1"),          # full-width digits are digits
    ("istitle", "Hello", "1"),
    ("isupper", "ABC", "1"),
    ("islower", "aBc", "0"),
    ("hasdigit", "a1", "1"),
    ("hashyphen", "a-b", "1"),
    ("hasupper", "aB", "1"),
    ("length", "abc", "3"),
    ("length", "a" * 25, "10"),       # capped at 10
])
def test_value_functions(func, value, expected):
    assert value_function(func)(value) == expected


@pytest.mark.parametrize("value, expected", [
    ("中", "H"), ("北京", "H"), ("㐀", "H"), ("𠀀", "H"),   # CJK, extension A, extension B
    ("a", "L"), ("Ü", "L"), ("Ａ", "L"),                   # Latin, full-width Latin
    ("7", "D"), ("１", "D"),                              # ASCII and full-width digits
    ("〇", "N"),
    ("，", "P"), ("。", "P"), (",", "P"), ("$", "P"), ("+", "P"),
    (" ", "O"), ("", "E"),
])
def test_chartype(value, expected):
    assert FUNCTIONS["chartype"](value) == expected


def test_chartype_chinese_numerals():
    assert [FUNCTIONS["chartype"](v) for v in "一五十百万亿零"] == ["N"] * 7


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=12))
def test_shape_properties(s):
    shape = FUNCTIONS["shape"](s)
    short = FUNCTIONS["shortshape"](s)
    assert len(shape) == len(s)
    assert set(short) <= set(shape)
    assert all(a != b for a, b in zip(short, short[1:]))      # no repeated neighbours
    assert short == "".join(k for k, _ in itertools.groupby(shape))   # runs of the shape collapsed


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=12), st.integers(1, 9))
def test_affix_properties(s, n):
    pre, suf = value_function(f"prefix{n}")(s), value_function(f"suffix{n}")(s)
    assert s.startswith(pre) and s.endswith(suf)
    assert len(pre) == len(suf) == min(n, len(s))


@pytest.mark.parametrize("text, message", [
    ("foo(w[0])", "unknown function 'foo'"),
    ("prefix0(w[0])", "unknown function 'prefix0'"),
    ("w[0", "cannot parse template part"),
    ("w[x]", "cannot parse template part"),
    ("0w[0]", "cannot parse template part"),
    ("lower(w)", "expected a column reference"),
    ("lower(w[0],w[1])", "expected a column reference"),
    ("same(c[0])", "same() takes two offsets"),
    ("same(c[0],w[-1])", "same() takes two offsets"),
    ("w[0]||w[1]", "empty template part"),
    ("", "empty template part"),
    ("y[-1]|y[0]", "alone is the built-in transition"),
    ("y[-1]|pos[0]", "needs both y[-1] and y[0]"),
    ("y[0]|pos[0]", "needs both y[-1] and y[0]"),
    ("y[-1]|y[0]|y[0]|pos[0]", "needs both y[-1] and y[0]"),
    ("bias|w[0]", "bias cannot be combined"),
    ("y[-1]|y[0]|bias|pos[0]", "bias cannot be combined"),
    ("w[0]@0", "takes a count of at least 1"),
    ("w[0]@two", "takes a count of at least 1"),
    ("w[0]@", "takes a count of at least 1"),
    ("y[-1]|y[0]|pos[0]@2", "a transition template takes no @ count"),
])
def test_parse_errors(text, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("(", r"\(")
                       .replace(")", r"\)").replace("]", r"\]")):
        parse_template(text)


def test_errors_name_the_source():
    with pytest.raises(InputError) as err:
        parse_template("foo(w[0])", source="tpl.txt")
    assert str(err.value).startswith("tpl.txt: ")


def test_parse_templates_skips_comments_and_blanks():
    ts = parse_templates(["# a comment", "", "  w[0]  ", "bias"])
    assert [t.name for t in ts] == ["w[0]", "bias"]


@pytest.mark.parametrize("lines", [["w[0]", "w[0]"], ["w[-1]|w[0]", "w[-1] | w[0]"],
                                   ["y[-1]|y[0]|p[0]", "y[-1]|y[0]|p[0]"]])
def test_duplicate_templates(lines):
    with pytest.raises(InputError, match="duplicate template"):
        parse_templates(lines)


@pytest.mark.parametrize("lines", [["w[0]", "word[0]"], ["w[1]", "w[+1]"]])
def test_duplicate_templates_up_to_alias(lines):
    with pytest.raises(InputError, match="duplicate template"):
        parse_templates(lines)


def test_no_templates():
    with pytest.raises(InputError, match="no templates"):
        parse_templates(["# nothing", "  "])


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_presets_parse(name):
    lines = preset(name)
    ts = parse_templates(lines)
    assert len(ts) == len(lines)                       # no line dropped, no duplicate
    assert [t.name for t in ts] == [ln.lstrip("?").replace(" ", "") for ln in lines]
    assert sum(t.is_bias for t in ts) <= 1


def test_chunk_preset_extends_crfsuite_with_transitions():
    crf = parse_templates(preset("crfsuite"))
    chunk = parse_templates(preset("chunk"))
    assert [t.name for t in chunk[:len(crf)]] == [t.name for t in crf]
    assert not any(t.transition for t in crf)
    assert {t.name for t in chunk if t.transition} == {"y[-1]|y[0]|pos[0]", "y[-1]|y[0]|pos[-1]|pos[0]"}
    # crfsuite's chunking example: 5 word unigrams, 2 word bigrams, 5 POS unigrams, 4 POS bigrams,
    # 3 POS trigrams, plus bias = 20
    assert len(crf) == 20


def test_preset_returns_a_copy_and_unknown_preset():
    lines = preset("crfsuite")
    lines.append("junk")
    assert "junk" not in preset("crfsuite")
    with pytest.raises(InputError, match="unknown template preset 'nope'"):
        preset("nope")


def test_a_templates_own_count():
    t = parse_template("lower(w[0]) | clu6[1] @2")
    assert (t.name, t.min_count, [str(p) for p in t.parts]) == ("lower(w[0])|clu6[1]@2", 2,
                                                                ["lower(word[0])", "clu6[1]"])
    assert parse_template(t.name) == t  # a model stores its templates by name
    assert parse_template("w[0]").min_count == 1 and parse_template("w[0]@1").name == "w[0]"
    with pytest.raises(InputError, match="duplicate template"):  # the same attributes, cut or not
        parse_templates(["w[0]", "w[0]@3"])
