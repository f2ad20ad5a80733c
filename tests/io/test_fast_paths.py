"""Fast paths against the simple code they short-cut: same results, same errors.

Each fast path below was added for speed only; its contract is "exactly what the older, simpler code
returns" (values, sentence offsets, line numbers, raw lines, and the same `InputError` message when the
input is bad). The properties generate irregular inputs on purpose (odd whitespace, wrong widths, bad
bytes, odd labels) because those are where a vectorized short-cut and a line-by-line loop can part:

1. the compiled column scanner (`structperc.io.read_kernels.scan_columns`) and
   `structperc.io.conll.ColumnParser._parse_fast` against `_ColumnParser.parse_blocks`;
2. the compiled CoNLL-U scanner (`structperc.io.read_kernels.scan_conllu`) and
   `structperc.io.conll.conllu_fast` against `_conllu_blocks`;
3. `structperc.labels.schemes.ids_to_iob2` against `convert_flat(..., "iob2")`;
4. the dense lookup tables of `structperc.features.index.FeatureIndex` against the sorted-table search;
5. the compiled decoder (`structperc.compiled.loader.decode_corpus`) against the numpy decoder.

Three divergences found this way (ASCII separators \x1c-\x1f, CoNLL-U pieces without words, L/U
labels read as IOBES) were fixed; their inputs stay below as plain regression tests.
"""
from __future__ import annotations

import io
import os
import random
import tempfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import READER_MODES, compiled_reader, reader_mode

from structperc.compiled import loader as kernels
from structperc.decode.decoder import predict
from structperc.features import lookup_tables as features
from structperc.features.index import FeatureIndex
from structperc.features.templates import parse_templates
from structperc.io import conll, scan, text
from structperc.io.corpus import Corpus
from structperc.labels.schemes import convert_flat, ids_to_iob2

#: Deterministic runs (no example database, fixed seed per test) that stay well under a few seconds.
FAST = dict(deadline=None, derandomize=True, database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DEFAULT_PIECE = text._PIECE
BOM = b"\xef\xbb\xbf"


# --------------------------------------------------------------------------- shared helpers
def _error(exc: BaseException) -> tuple[str, str]:
    return ("raised", type(exc).__name__, str(exc))


def _view(corpus: Corpus) -> tuple:
    """Everything a reader puts into a Corpus, as plain comparable values."""
    lines = None if corpus.sent_lines is None else corpus.sent_lines.tolist()
    return (corpus.source, {k: list(v) for k, v in corpus.columns.items()}, corpus.sent_ptr.tolist(),
            lines)


def _factorized(corpus: Corpus) -> dict:
    """Each column's distinct values and codes as the corpus hands them to feature extraction: the
    compiled reader builds them itself (first-occurrence order, nothing left over from pieces it gave
    up on), the others get them computed from the lists."""
    return {k: (corpus.factorize(k)[0], corpus.factorize(k)[1].tolist()) for k in corpus.columns}


#: The three ways a file can be read, all of which must agree: the compiled scanner (where it is
#: built), the numpy fast paths, the line-by-line parsers.
MODES = READER_MODES

_TMP = tempfile.mkdtemp(prefix="structperc-fast-paths-")


class _Source:
    """Test input given as a stream (named ``<stream>`` in messages, or ``x.conllu`` for CoNLL-U), or,
    with ``on_disk``, as the path of a file holding it (read through a memory map); `clean` renames
    that path as the stream is named, so the two can be compared."""

    on_disk = False

    @classmethod
    def open(cls, data: bytes, suffix: str = ".txt"):
        if not cls.on_disk:
            return io.BytesIO(data) if suffix == ".txt" else _Named(data, "x" + suffix)
        path = os.path.join(_TMP, "input" + suffix)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    @classmethod
    def clean(cls, value):
        if not cls.on_disk:
            return value
        if isinstance(value, str):
            for suffix, name in ((".txt", "<stream>"), (".conllu", "x.conllu")):
                value = value.replace(os.path.join(_TMP, "input" + suffix), name)
            return value
        if isinstance(value, (tuple, list)):
            return type(value)(cls.clean(v) for v in value)
        if isinstance(value, dict):
            return {cls.clean(k): cls.clean(v) for k, v in value.items()}
        return value


def _all_modes(mp: pytest.MonkeyPatch, read, *args) -> list:
    """``read(*args)`` in every mode of `MODES` and once more compiled from a file on disk."""
    got = []
    for mode in MODES + ["compiled-file"]:
        with pytest.MonkeyPatch.context() as inner:
            reader_mode(inner, mode.split("-")[0])
            inner.setattr(_Source, "on_disk", mode.endswith("file"))
            got.append(_Source.clean(read(*args)))
    return got



def _piece_sizes():
    """Tiny read sizes cut files into many pieces (each parsed on its own); the default reads whole."""
    return st.one_of(st.integers(1, 64), st.just(DEFAULT_PIECE))


def _finish(draw, text: str, newline_choice: str) -> bytes:
    """Encode, maybe with a BOM, a missing final newline, or a byte that is not UTF-8."""
    data = text.encode("utf-8")
    if newline_choice != "keep" and data.endswith(b"\n"):
        data = data[:-1]                                    # no newline at the end of the file
    if draw(st.booleans()):
        data = BOM + data
    if draw(st.integers(0, 7)) == 0:
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xe4\xb8", b"\x80"])) + data[at:]
    return data


def _join(draw, lines: list[str]) -> str:
    style = draw(st.sampled_from(["\n", "\n", "\r\n", "mixed"]))
    if style != "mixed":
        return "".join(line + style for line in lines)
    return "".join(line + draw(st.sampled_from(["\n", "\r\n"])) for line in lines)


# --------------------------------------------------------------------------- 1. CoNLL columns
_TOKEN_CHARS = list("abzXYZ09.,:-_#/éßÖжΩ北京")
_EXOTIC_WS = ["\x1c", "\x1f", "\u3000", "\xa0", "\x85", "\u2028", "\u2029", "\u2009", "\u1680", "\u202f", "\u205f"]
#: ASCII whitespace as both ``bytes.split`` and ``str.split`` see it (``\r`` alone, not before ``\n``).
_SEPS = [" ", " ", "\t", "\t", "  ", " \t", "\x0b", "\x0c", "\r"]
_BLANKS = ["", "", "", " ", "\t", " \t ", "\x0b", "\x0c ", "\r", "\u3000", "\xa0 "]
_DOCSTARTS = ["-DOCSTART-", "-DOCSTART- -X- O O", "-DOCSTART-\tO", " -DOCSTART- O", "-DOCSTART-x",
              "-DOCSTAR X"]
_token = st.one_of(st.text(st.sampled_from(_TOKEN_CHARS), min_size=1, max_size=4),
                   st.sampled_from(["-DOCSTART-", "O", "B-NP", "北京"]))


@st.composite
def _column_line(draw, width: int) -> str:
    n = draw(st.sampled_from([width] * 6 + [max(width - 1, 0), width + 1, 0]))
    fields = draw(st.lists(_token, min_size=n, max_size=n))
    line = ""
    for i, f in enumerate(fields):
        line += (draw(st.sampled_from(_SEPS)) if i else "") + f
    line = draw(st.sampled_from(["", "", "", " ", "\t"])) + line + draw(st.sampled_from(["", "", " ", "\t "]))
    if draw(st.integers(0, 9)) == 0:  # exotic (non-ASCII) whitespace somewhere in the line
        at = draw(st.integers(0, len(line)))
        line = line[:at] + draw(st.sampled_from(_EXOTIC_WS)) + line[at:]
    return line


@st.composite
def conll_files(draw):
    """(bytes, columns, optional) of a random CoNLL column file, mostly regular, sometimes not."""
    n_cols = draw(st.integers(1, 4))
    columns = ["word", "pos", "chunk", "ner"][:n_cols]
    if n_cols > 1 and draw(st.booleans()):
        columns[draw(st.integers(0, n_cols - 2))] = "_"
    n_opt = draw(st.integers(0, n_cols - 1))
    optional = columns[n_cols - n_opt:]
    width = draw(st.integers(n_cols - n_opt, n_cols))
    kinds = draw(st.lists(st.sampled_from(["tok"] * 6 + ["blank"] * 3 + ["doc"]), max_size=24))
    lines = []
    for kind in kinds:
        if kind == "tok":
            lines.append(draw(_column_line(width)))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(_BLANKS)))
        else:
            lines.append(draw(st.sampled_from(_DOCSTARTS)))
    text = _join(draw, lines)
    data = _finish(draw, text, draw(st.sampled_from(["keep", "keep", "drop"])))
    return data, columns, optional


def _read_conll(data, columns, optional, keep_lines, codes=False):
    try:
        out = conll.read_conll(_Source.open(data), columns, optional=optional, keep_lines=keep_lines)
    except Exception as exc:  # noqa: BLE001 - compared, not swallowed
        return _error(exc)
    corpus = out[0] if keep_lines else out
    view = _view(corpus) + ((_factorized(corpus),) if codes else ())
    return (view, out[1]) if keep_lines else view


def _read_chunks(data, columns, optional, sentences, codes=False):
    """Every chunk `iter_conll_chunks` yields, then the error it stops with (if any)."""
    got = []
    try:
        for corpus, raw in conll.iter_conll_chunks(_Source.open(data), columns, optional=optional,
                                                   sentences=sentences):
            got.append((_view(corpus) + ((_factorized(corpus),) if codes else ()), raw))
    except Exception as exc:  # noqa: BLE001
        got.append(_error(exc))
    return got


def _tagging_output(data, columns, optional, sentences, only=None) -> tuple[str, list] | tuple:
    """What `structperc tag` writes for a column file with made-up tags (the words reversed, so some
    are non-ASCII), through `iter_tagging_chunks` and `write_tagged`; the error if reading fails."""
    out = io.StringIO()
    views = []
    try:
        for corpus, raw in conll.iter_tagging_chunks(_Source.open(data), columns, optional=optional,
                                                     only=only, sentences=sentences):
            views.append(_view(corpus))
            word = next(iter(corpus.columns))
            conll.write_tagged(out, raw, [w[::-1] + "é" for w in corpus.columns[word]])
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    return out.getvalue(), views


def _no_column_fast_path(mp):
    mp.setattr(conll.ColumnParser, "_parse_fast", lambda self, *a: None)


@settings(max_examples=400, **FAST)
@given(case=conll_files(), piece=_piece_sizes(), keep_lines=st.booleans(), sentences=st.integers(1, 4))
def test_column_reader_fast_path_equals_line_by_line(case, piece, keep_lines, sentences):
    """`read_conll` and `iter_conll_chunks` give the same corpus (with the same distinct values and
    codes), raw lines and errors through the compiled scanner, the numpy fast path and the
    line-by-line parser, for any piece size.

    The fast paths decide widths, blank lines and ``-DOCSTART-`` lines from the bytes and split the
    fields without Python code per line; if their views of "whitespace" or "line" ever disagree with
    ``str.split``, fields shift between columns silently, which no later check would catch. The
    compiled scanner also enters values into a hash table shared by all pieces and must undo a piece
    it gives up on half-way: a leftover would show as an extra or misordered distinct value.
    """
    data, columns, optional = case

    def read():
        return (_read_conll(data, columns, optional, keep_lines, codes=True),
                _read_chunks(data, columns, optional, sentences, codes=True))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        got = _all_modes(mp, read)
    assert got[0] == got[2]
    assert got[1] == got[2]
    assert got[3] == got[2]


@settings(max_examples=200, **FAST)
@given(case=conll_files(), piece=_piece_sizes(), sentences=st.integers(1, 4))
def test_tagging_output_does_not_depend_on_the_reader(case, piece, sentences):
    """`write_tagged` over the raw lines the compiled reader keeps as bytes writes what `write_conll`
    writes over the line-by-line reader's strings (separators per sentence, CRLF, BOM, odd
    whitespace inside lines, non-ASCII tags), chunk by chunk."""
    data, columns, optional = case
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        got = _all_modes(mp, _tagging_output, data, columns, optional, sentences)
    assert got[0] == got[2]
    assert got[1] == got[2]
    assert got[3] == got[2]


def test_column_fast_path_is_taken_on_regular_input():
    """The property above would be vacuous if `_parse_fast` always gave up: on a regular file (tabs,
    CRLF, BOM, -DOCSTART-, non-ASCII letters) it must return a result itself."""
    data = BOM + "-DOCSTART- -X- O\r\n\r\nZürich\tNNP\tB-NP\r\n北京 NR  B-NP\r\n\r\nx y z\r\n".encode()
    parser = conll.ColumnParser("<t>", ["word", "pos", "chunk"], ())
    parsed = parser._parse_fast(1, data, True)
    assert parsed is not None
    assert parsed.values == [["Zürich", "北京", "x"], ["NNP", "NR", "y"], ["B-NP", "B-NP", "z"]]
    assert parsed.lengths == [2, 1] and parsed.starts == [3, 6]
    assert parsed.rows.tolist() == [3, 4, 6]


@compiled_reader
def test_compiled_column_scan_is_taken_on_regular_input():
    """Same guard for the compiled scanner, which must also give the values' codes in order of first
    occurrence, the line spans without CR, and a tab separator only where a sentence's first line
    holds a tab."""
    data = BOM + "-DOCSTART- -X- O\r\n\r\nZürich\tNNP\tB-NP\r\n北京 NR  B-NP\r\n\r\nx NR z\r\n".encode()
    interner = scan.Interner(2)
    got = scan.scan_piece("columns", 1, data, [0, 1], interner, True, -1)
    assert got is not None
    assert interner.distinct == [["Zürich", "北京", "x"], ["NNP", "NR"]]
    assert [c.tolist() for c in got.codes] == [[0, 1, 2], [0, 1, 1]]
    assert got.lengths.tolist() == [2, 1] and got.lines.tolist() == [3, 6] and got.width == 3
    assert got.raw.tolist() == [["Zürich\tNNP\tB-NP", "北京 NR  B-NP"], ["x NR z"]]
    assert got.raw.sep.tolist() == [9, 32]


@pytest.mark.parametrize("data, columns", [
    (b"a\nb\n\n\nc\n", ["word"]),
    ("-DOCSTART-\n\nA\u3000B x\nc d\n\n".encode(), ["word", "pos"]),    # exotic whitespace: fallback
    (b"a b\nc\n\nd e\n", ["word", "pos"]),                                # wrong width: fallback's error
    (b"a b\n\n\xff c\n", ["word", "pos"]),                                # bad UTF-8: fallback's error
    (BOM + b"a b\r\nc d", ["word", "pos", "chunk"]),                      # optional column, no final \n
    (b"a b\n\nc d\n\nA\xc2\xa0B x\nc e\n", ["word", "pos"]),             # NBSP after regular pieces
    (b"x y\n\n\xed\xa0\x80 z\n", ["word", "pos"]),                        # a surrogate is not UTF-8
    (b"x y\n\n\xf0\x9f\x98\x80 z\n", ["word", "pos"]),                    # 4-byte sequence
    (b"x y\n\n\xe0\x80\xaf z\n", ["word", "pos"]),                        # overlong form
    (b"-DOCSTART-\n\n", ["word", "pos"]),                                  # no sentences
])
def test_column_reader_exact_cases(data, columns):
    """A few hand-picked files, each read in every mode at several piece sizes."""
    for piece in (1, 3, 8, DEFAULT_PIECE):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(text, "_PIECE", piece)
            got = _all_modes(mp, _read_conll, data, columns, columns[2:], True, True)
        assert got[0] == got[2] and got[1] == got[2] and got[3] == got[2], (piece, got)


def test_reading_many_distinct_values():
    """Enough distinct values for the compiled hash table to grow several times, in pieces: same
    corpus, codes and raw lines as the line-by-line reader."""
    rng = random.Random(3)
    words = [f"w{i}é" for i in range(30_000)]
    lines = [f"{rng.choice(words)} {rng.choice(words[:50])}" + ("\n" if rng.random() < 0.1 else "")
             for _ in range(60_000)]
    data = ("\n".join(lines) + "\n").encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", 1 << 18)
        got = _all_modes(mp, _read_conll, data, ["word", "pos"], (), True, True)
    assert got[0] == got[2] and got[1] == got[2] and got[3] == got[2]


def test_reading_many_distinct_conllu_values():
    """The same for CoNLL-U, whose scanner stops when the table is full and resumes at that line:
    words, lemmas and tags of 40,000 lines, some non-ASCII, comments and empty nodes between."""
    rng = random.Random(4)
    lines = []
    for i in range(40_000):
        if rng.random() < 0.05:
            lines.append(["", "# sent_id = x", "# text = Zürich"][rng.randrange(3)])
        w = f"w{rng.randrange(30_000)}" + ("é" if rng.random() < 0.3 else "")
        ident = str(1 + i % 7) + (".1" if rng.random() < 0.02 else "")
        lines.append("\t".join([ident, w, w.upper(), "NOUN", "_", "_", "0", "dep", "_", "_"]))
    data = ("\n".join(lines) + "\n").encode()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", 1 << 18)
        got = _all_modes(mp, _read_conllu, data, True, True)
    assert got[0] == got[2] and got[1] == got[2] and got[3] == got[2]
    assert len(got[0][0][4]["word"][0]) > 20_000


@compiled_reader
def test_interner_rollback_restores_the_table():
    """A piece the compiled scanner gives up on half-way leaves nothing behind: entries are only
    appended, so clearing the newer ones restores the table exactly, even after it grew."""
    interner = scan.Interner(1)
    before = interner.add_strings(0, ["a", "b", "a"])
    table, state = interner.table.copy(), interner.state.copy()
    snap = interner.snapshot()
    data = "".join(f"x{i} y\n" for i in range(5000)).encode() + b"a bad line\n"
    assert scan.scan_piece("columns", 1, data, [0], interner, False, -1) is None
    assert len(interner.table) > len(table)  # it grew before giving up
    assert interner.state.tolist() == state.tolist() == snap.tolist()
    assert sorted(interner.table[interner.table >= 0].tolist()) == [0, 1]
    assert interner.add_strings(0, ["b", "c", "a"]).tolist() == [1, 2, 0]
    assert before.tolist() == [0, 1, 0] and interner.distinct == [["a", "b", "c"]]


#: Inputs of the \x1c-\x1f bug and what the line-by-line reader makes of them. CoNLL columns are
#: separated by ASCII whitespace as ``bytes.split`` sees it (issue #15, item 4): \x1c-\x1f, which
#: ``str.split`` and ``str.isspace`` take for whitespace, are characters of a token.
_SEPARATOR_CASES = [
    # 'a\x1cb X' has 2 fields (it once had 3: 'found 3')
    (b"a\x1cb X\n\n", ["word", "tag"], ("<stream>", {"word": ["a\x1cb"], "tag": ["X"]}, [0, 1], [1])),
    # a line of only '\x1f' is a token, not a blank line: one sentence of three
    (b"a\n\x1f\nb\n", ["word"], ("<stream>", {"word": ["a", "\x1f", "b"]}, [0, 3], [1])),
    # '\x1c 0' is two fields
    (b"\n\x1c 0\n\n", ["word"], ("raised", "ColumnCountError", "<stream>:2: expected 1 columns (word), found 2")),
    # a no-break space or U+3000 inside a token does not split it
    ("New\xa0York NNP\n北京\u3000欢迎 VV\n".encode(), ["word", "pos"],
     ("<stream>", {"word": ["New\xa0York", "北京\u3000欢迎"], "pos": ["NNP", "VV"]}, [0, 2], [1])),
]


@pytest.mark.parametrize("data, columns, expected", _SEPARATOR_CASES)
def test_ascii_separator_characters_reference(data, columns, expected):
    """What the line-by-line reader (the reference) does with \x1c-\x1f and non-ASCII spaces."""
    with pytest.MonkeyPatch.context() as mp:
        _no_column_fast_path(mp)
        assert _read_conll(data, columns, (), False) == expected


@pytest.mark.parametrize("mode", MODES[:2])
@pytest.mark.parametrize("data, columns, expected", _SEPARATOR_CASES)
def test_ascii_separator_characters_regression(data, columns, expected, mode):
    """The fast paths on the same inputs."""
    with pytest.MonkeyPatch.context() as mp:
        reader_mode(mp, mode)
        assert _read_conll(data, columns, (), False) == expected


# --------------------------------------------------------------------------- 2. CoNLL-U
_CONLLU_IDS = ["1", "2", "3", "10", "1", "2", "3-4", "1-2", "5.1", "8.10", "x", "", "1a", "٣", "-",
               ".", "0", " 1", "1 "]
_conllu_field = st.text(st.sampled_from(list("abXé北_ -.#:|=\x1c\u3000\xa0\r")), max_size=4)


@st.composite
def _conllu_line(draw) -> str:
    tabs = draw(st.sampled_from([9] * 10 + [8, 10, 0]))
    fields = [draw(st.sampled_from(_CONLLU_IDS))] + draw(st.lists(_conllu_field, min_size=tabs,
                                                                  max_size=tabs))
    return "\t".join(fields)


@st.composite
def conllu_files(draw) -> bytes:
    """A random CoNLL-U file: words, multi-word tokens, empty nodes, comments, bad lines."""
    kinds = draw(st.lists(st.sampled_from(["word"] * 6 + ["comment", "blank", "blank", "doc"]),
                          max_size=24))
    lines = []
    for kind in kinds:
        if kind == "word":
            lines.append(draw(_conllu_line()))
        elif kind == "comment":
            lines.append(draw(st.sampled_from(["#", "# sent_id = 1", "# text = Zürich 北京", "#\t1"])))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "", "", " ", "\t", "\u3000", "\x1c", "\r"])))
        else:
            lines.append(draw(st.sampled_from(["-DOCSTART-", "-DOCSTART-\t_"])))
    return _finish(draw, _join(draw, lines), draw(st.sampled_from(["keep", "keep", "drop"])))


def _read_conllu(data, keep_lines, codes=False):
    try:
        out = conll.read_conllu(_Source.open(data), keep_lines=keep_lines)
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    corpus = out[0] if keep_lines else out
    view = _view(corpus) + ((_factorized(corpus),) if codes else ())
    return (view, out[1]) if keep_lines else view


def _conllu_tagging_output(data, only, field=-1, sentences=20_000):
    """What `structperc tag` writes for a CoNLL-U file (tags made from the FORM column), the tags
    appended or (``field``) in place of a column."""
    out = io.StringIO()
    views = []
    try:
        for corpus, raw in conll.iter_tagging_chunks(_Source.open(data, ".conllu"), [], only=only,
                                                     sentences=sentences):
            views.append(_view(corpus))
            conll.write_tagged(out, raw, [w[::-1] + "é" for w in corpus.columns["word"]], field)
    except Exception as exc:  # noqa: BLE001
        return _error(exc)
    return out.getvalue(), views


class _Named(io.BytesIO):
    """An in-memory file with a name (`iter_tagging_chunks` tells CoNLL-U by the name)."""

    def __init__(self, data: bytes, name: str):
        super().__init__(data)
        self.name = name


@settings(max_examples=400, **FAST)
@given(data=conllu_files(), piece=_piece_sizes(), keep_lines=st.booleans())
def test_conllu_fast_path_equals_line_by_line(data, piece, keep_lines):
    """`read_conllu` gives the same corpus (distinct values and codes included), raw lines and errors
    through the compiled scanner, `_conllu_fast` and the line-by-line `_conllu_blocks`.

    The fast paths drop comments, multi-word tokens and empty nodes without Python code per line and
    find sentence starts from block boundaries; a slip there misnumbers sentences (error messages
    point to the wrong line) or keeps a non-word as a token.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        got = _all_modes(mp, _read_conllu, data, keep_lines, True)
    assert got[0] == got[2]
    assert got[1] == got[2]
    assert got[3] == got[2]


@settings(max_examples=200, **FAST)
@given(data=conllu_files(), piece=_piece_sizes(), only=st.sampled_from([None, {"word"}, {"upos", "word"}]),
       field=st.sampled_from([-1, 3, 4, 9]), sentences=st.integers(1, 3))
def test_conllu_tagging_output_does_not_depend_on_the_reader(data, piece, only, field, sentences):
    """`structperc tag`'s output for CoNLL-U (lines kept as bytes, only the columns the model reads,
    the tag appended or written into a column) is the same whichever reader read the file."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        got = _all_modes(mp, _conllu_tagging_output, data, only, field, sentences)
    assert got[0] == got[2]
    assert got[1] == got[2]
    assert got[3] == got[2]


_ROW = "\t".join(["{}", "{}"] + ["_"] * 8)
#: Inputs of the no-word-piece bug and what `_conllu_blocks` makes of them.
_NO_WORD_CASES = [
    # only a multi-word token: no sentences; fast path: IndexError
    ([_ROW.format("3-4", "zum"), ""], DEFAULT_PIECE,
     ("raised", "InputError", "<stream>: no sentences: 2 lines, all blank, # comments, -DOCSTART-, "
                              "multi-word tokens or empty nodes")),
    # a sentence of one empty node between two real ones, in a piece of its own (_PIECE = 8): words
    # ['A', 'B'] in two sentences at lines 1 and 5; fast path: IndexError
    ([_ROW.format("1", "A"), "", _ROW.format("2.1", "x"), "", _ROW.format("1", "B")], 8,
     ("<stream>", ["A", "B"], [0, 1, 2], [1, 5])),
]


def _conllu_words(data, piece, mode):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        reader_mode(mp, mode)
        got = _read_conllu(data, False)
    return got if got[0] == "raised" else (got[0], got[1]["word"], *got[2:])


@pytest.mark.parametrize("lines, piece, expected", _NO_WORD_CASES)
def test_conllu_piece_without_words_reference(lines, piece, expected):
    """The line-by-line reader skips a block without words (no sentence for it)."""
    assert _conllu_words(("\n".join(lines) + "\n").encode(), piece, "lines") == expected


@pytest.mark.parametrize("mode", MODES[:2])
@pytest.mark.parametrize("lines, piece, expected", _NO_WORD_CASES)
def test_conllu_piece_without_words_regression(lines, piece, expected, mode):
    """The fast paths on the same inputs (its property above leaves such pieces out)."""
    assert _conllu_words(("\n".join(lines) + "\n").encode(), piece, mode) == expected


def test_conllu_fast_path_is_taken_on_regular_input():
    """Guard against a vacuous property: a regular CoNLL-U piece is parsed by `_conllu_fast` itself,
    with multi-word tokens and empty nodes dropped and sentences starting at their first token line."""
    row = lambda i, w: "\t".join([i, w] + ["_"] * 8)  # noqa: E731
    text = "\n".join(["# sent_id = 1", row("1-2", "zum"), row("1", "zu"), row("2", "dem"), row("2.1", "x"),
                      "", "# c", row("1", "北京"), ""]) + "\n"
    parsed = conll.conllu_fast(1, BOM + text.replace("\n", "\r\n").encode(), True)
    assert parsed is not None
    assert parsed.values[1] == ["zu", "dem", "北京"]
    assert parsed.lengths == [2, 1] and parsed.starts == [2, 8]
    assert parsed.rows.tolist() == [3, 4, 8]
    got = []
    for mode in MODES:
        with pytest.MonkeyPatch.context() as mp:
            reader_mode(mp, mode)
            got.append(_read_conllu(text.encode(), True, codes=True))
    assert got[0] == got[1] == got[2]


@compiled_reader
def test_compiled_conllu_scan_is_taken_on_regular_input():
    """Same guard for the compiled scanner: comments, -DOCSTART-, multi-word tokens, empty nodes,
    CRLF, a BOM, non-ASCII words, a blank line of spaces; only the wanted columns get codes."""
    row = lambda i, w, u="X": "\t".join([i, w, "_", u] + ["_"] * 6)  # noqa: E731
    text = "\n".join(["# sent_id = 1", row("1-2", "zum"), row("1", "zu", "ADP"), row("2", "dem"),
                      row("2.1", "x"), " \t", "-DOCSTART-", "# c", row("1", "北京"), ""]) + "\n"
    data = BOM + text.replace("\n", "\r\n").encode()
    interner = scan.Interner(2)
    got = scan.scan_piece("conllu", 1, data, [1, 3], interner, True)
    assert got is not None
    assert interner.distinct == [["zu", "dem", "北京"], ["ADP", "X"]]
    assert [c.tolist() for c in got.codes] == [[0, 1, 2], [0, 1, 1]]
    assert got.lengths.tolist() == [2, 1] and got.lines.tolist() == [2, 9]
    assert got.raw.tolist() == [[row("1", "zu", "ADP"), row("2", "dem")], [row("1", "北京")]]
    assert got.n_lines == data.count(b"\n") == 10


_A = "1\tA\t_\t_\t_\t_\t_\t_\t_\t_\n\n"


@pytest.mark.parametrize("data", [
    (_A + "1a\tB\t_\t_\t_\t_\t_\t_\t_\t_\n").encode(),         # bad id after a good piece
    (_A + "1\tB\t_\t_\t_\n").encode(),                           # too few fields
    (_A + "\u3000\n1\tB\t_\t_\t_\t_\t_\t_\t_\t_\n").encode(),     # a blank line to str.isspace
    (_A + "\u00b2\tB\t_\t_\t_\t_\t_\t_\t_\t_\n").encode(),      # '²'.isdigit(): a word id
    _A.encode() + b"1\tB\xff\t_\t_\t_\t_\t_\t_\t_\t_\r\n",         # not UTF-8
    "# only a comment\n\n3-4\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n".encode(),  # no words at all
])
def test_conllu_exact_cases(data):
    """Irregular CoNLL-U read in every mode at several piece sizes: same corpus or same error."""
    for piece in (1, 12, DEFAULT_PIECE):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(text, "_PIECE", piece)
            got = _all_modes(mp, _read_conllu, data, True, True)
        assert got[0] == got[2] and got[1] == got[2] and got[3] == got[2], (piece, got)


# --------------------------------------------------------------------------- 3. IOB2 from label ids
_TYPES = ["NP", "VP", "PER", "x", "北京", ""]


@st.composite
def label_sets(draw, letters: str):
    """A label list as a model might hold it: typed tags with one separator (sometimes both), untyped
    B/I/E/S/L/U letters, ``O`` and labels that are not span tags at all."""
    mixed = draw(st.integers(0, 4)) == 0
    sep = draw(st.sampled_from("-_"))
    typed = st.builds(lambda l, s, t: f"{l}{s}{t}", st.sampled_from(letters),
                      st.sampled_from("-_") if mixed else st.just(sep), st.sampled_from(_TYPES))
    other = st.sampled_from(list(letters) + ["O", "O", "X", "BX", "-", "o", "b-NP", "OUT"])
    return draw(st.lists(st.one_of(typed, typed, other), min_size=1, max_size=10, unique=True))


@st.composite
def predictions(draw, letters: str):
    labels = draw(label_sets(letters))
    ids = draw(st.lists(st.integers(0, len(labels) - 1), max_size=40))
    cuts = sorted(draw(st.lists(st.integers(0, len(ids)), max_size=8)))
    sent_ptr = np.array([0] + cuts + [len(ids)], dtype=np.int64)  # repeated cuts: empty sentences
    return labels, np.array(ids, dtype=np.int32), sent_ptr


def _check_iob2(labels, ids, sent_ptr, source):
    fast = ids_to_iob2(ids, sent_ptr, labels, source)
    expected = convert_flat([labels[i] for i in ids.tolist()], sent_ptr, source, "iob2")
    if fast is None:
        seps = {t[1] for t in labels if len(t) >= 2 and t[0] in "BIESLU" and t[1] in "-_"}
        assert len(seps) > 1, "ids_to_iob2 gave up although the labels use one separator"
    else:
        assert fast == expected


@settings(max_examples=300, **FAST)
@given(source=st.sampled_from(["bilou", "iob1"]), data=st.data())
def test_ids_to_iob2_equals_convert_flat(source, data):
    """The tagger converts predicted ids to IOB2 with `ids_to_iob2` instead of `convert_flat`; the two
    must agree token for token, including at sentence starts (a span never continues across
    sentences), empty sentences, untyped tags, odd labels and either separator."""
    labels, ids, sent_ptr = data.draw(predictions("BIESLU"))
    _check_iob2(labels, ids, sent_ptr, source)


@settings(max_examples=300, **FAST)
@given(data=st.data())
def test_ids_to_iob2_equals_convert_flat_iobes(data):
    """As above for IOBES models, with the IOBES letters (B, I, E, S); L and U: see the regression test below."""
    labels, ids, sent_ptr = data.draw(predictions("BIES"))
    _check_iob2(labels, ids, sent_ptr, "iobes")


@pytest.mark.parametrize("labels, ids, ptr, expected", [
    (["B-NP", "I-NP", "E-NP", "S-NP", "O"], [0, 1, 2, 3, 4, 1], [0, 4, 6],
     ["B-NP", "I-NP", "I-NP", "B-NP", "O", "B-NP"]),
    (["B_X", "I_X", "L_X", "U_X", "O"], [3, 1, 2, 0, 2], [0, 5], ["B_X", "B_X", "I_X", "B_X", "I_X"]),
    (["B", "I", "O"], [1, 1, 2, 0], [0, 1, 4], ["B", "B", "O", "B"]),
])
def test_ids_to_iob2_exact(labels, ids, ptr, expected):
    """Hand-checked conversions: IOBES with a sentence break, BILOU with ``_``, untyped IOB1."""
    source = {"E-NP": "iobes", "L_X": "bilou"}.get(labels[2], "iob1")
    ids, ptr = np.array(ids, dtype=np.int32), np.array(ptr, dtype=np.int64)
    assert convert_flat([labels[i] for i in ids], ptr, source, "iob2") == expected
    assert ids_to_iob2(ids, ptr, labels, source) == expected


def test_ids_to_iob2_gives_up_only_on_mixed_separators():
    ids, ptr = np.array([0, 1], dtype=np.int32), np.array([0, 2])
    assert ids_to_iob2(ids, ptr, ["B-X", "I_X"], "iobes") is None
    assert ids_to_iob2(ids, ptr, ["B_X", "I_X"], "iobes") == ["B_X", "I_X"]


_LU_CASES = [(["B-X", "U-X"], ["B-X", "I-X"]), (["L-X", "I-X"], ["B-X", "I-X"])]


@pytest.mark.parametrize("labels, expected", _LU_CASES)
def test_iobes_with_bilou_letters_reference(labels, expected):
    """`convert` maps L/U to E/S only for source "bilou"; for "iobes" they read like I."""
    assert convert_flat(labels, np.array([0, 2]), "iobes", "iob2") == expected


@pytest.mark.parametrize("labels, expected", _LU_CASES)
def test_ids_to_iob2_iobes_with_bilou_letters_regression(labels, expected):
    assert ids_to_iob2(np.array([0, 1], dtype=np.int32), np.array([0, 2]), labels, "iobes") == expected


# --------------------------------------------------------------------------- 4. dense feature lookups
_WORDS = ["the", "The", "cat", "Cat", "sat", "on", "mat", "北京", "欢迎", "Zürich", "naïve", "1999", "a-b"]
_UNSEEN = ["dog", "Ωmega", "ran", "THE"]
_POS = ["DT", "NN", "VBD", "IN", "NNP"]
_TEMPLATES = ["w[0]", "w[-1]", "w[2]", "lower(w[0])", "suffix2(w[0])", "prefix1(w[-1])", "shape(w[1])",
              "w[-1]|w[0]", "lower(w[-1])|pos[0]", "pos[-2]|pos[-1]|pos[0]", "pos[0]|suffix2(w[1])",
              "same(w[0],w[-1])", "rare(w[0])", "rare(w[0])|pos[0]", "istitle(w[0])|pos[1]", "bias",
              "y[-1]|y[0]|pos[0]", "y[-1]|y[0]|suffix2(w[0])", "y[-1]|y[0]|w[-1]|pos[0]"]


def _corpora(words):
    sentence = st.lists(st.tuples(st.sampled_from(words), st.sampled_from(_POS)), min_size=1, max_size=7)
    return st.lists(sentence, min_size=1, max_size=6).map(
        lambda sents: Corpus.from_sentences([[w for w, _ in s] for s in sents],
                                            extra={"pos": [[p for _, p in s] for s in sents]}))


def _lifecycle(lines, min_count, train, more, test, keep_every):
    """fit_transform, transform, extend, transform, prune, transform: every place `_ids` runs, and
    every place the cached dense tables must be rebuilt."""
    fi = FeatureIndex(parse_templates(lines), min_count)
    out = [fi.fit_transform(train), fi.transform(test)]
    dense = [fi._dense_table(ti) is not None for ti in range(len(fi.templates))]
    ext, remap_s, remap_t = fi.extend(more)
    out += [ext, fi.transform(test)]
    keep_s = np.arange(fi.n_state_attributes) % keep_every != 0
    keep_t = np.arange(fi.n_transition_attributes) % keep_every != 0
    fi.prune(keep_s, keep_t)
    out.append(fi.transform(test))
    mats = [(f.state.tolist(), f.trans.tolist(), f.state.dtype, f.trans.dtype) for f in out]
    return mats + [remap_s.tolist(), remap_t.tolist()], dense


@settings(max_examples=120, **FAST)
@given(lines=st.lists(st.sampled_from(_TEMPLATES), min_size=1, max_size=6, unique=True),
       min_count=st.integers(1, 2), train=_corpora(_WORDS), more=_corpora(_WORDS + _UNSEEN[:2]),
       test=_corpora(_WORDS + _UNSEEN), keep_every=st.integers(2, 4),
       threshold=st.one_of(st.just(features.DENSE_KEYS), st.integers(1, 400)))
def test_dense_lookup_equals_sorted_search(lines, min_count, train, more, test, keep_every, threshold):
    """Attribute ids are identical whether a template's keys are looked up in a dense table or by
    binary search in the sorted key table (`DENSE_KEYS = 0`), for any mix of the two (a random
    threshold), through fitting, transforming unseen words, extending and pruning.

    A wrong id here does not crash anything: it silently trains or tags with the wrong weights.
    Fresh indexes on both sides, because the dense tables are cached on the index.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(features, "DENSE_KEYS", threshold)
        got, dense = _lifecycle(lines, min_count, train, more, test, keep_every)
        mp.setattr(features, "DENSE_KEYS", 0)
        expected, none_dense = _lifecycle(lines, min_count, train, more, test, keep_every)
    assert not any(none_dense)
    if threshold == features.DENSE_KEYS:
        assert all(dense)  # every key space here is small: the default really takes the dense path
    assert got == expected


def test_dense_lookup_exact_case():
    """Hand-sized: seen, unseen (-1) and sentence-edge keys, dense vs sorted search, bias included."""
    train = Corpus.from_sentences([["The", "cat"], ["the"]], extra={"pos": [["DT", "NN"], ["DT"]]})
    test = Corpus.from_sentences([["the", "dog", "cat"]], extra={"pos": [["DT", "NN", "NN"]]})
    lines = ["w[0]", "lower(w[-1])|w[0]", "bias", "y[-1]|y[0]|pos[0]"]
    results = []
    for threshold in (features.DENSE_KEYS, 0):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(features, "DENSE_KEYS", threshold)
            fi = FeatureIndex(parse_templates(lines))
            fi.fit_transform(train)
            f = fi.transform(test)
            results.append((f.state.tolist(), f.trans.tolist()))
    # w[0]: keys [2, 3, 4] (The cat the) -> the 2, dog -1, cat 1; lower(w[-1])|w[0]: keys [2, 4, 13]
    # -> (BOS, the) = 4 -> 3 + 1; (the, dog), (dog, cat) unseen; bias 6; pos[0]: DT 0, NN 1
    assert results[0] == results[1] == ([[2, 4, 6], [-1, -1, 6], [1, -1, 6]], [[0], [1], [1]])


def test_sparse_key_spaces_are_hashed_with_the_same_ids():
    """A key space the table's keys fill too thinly (`DENSE_SPREAD` possible keys per key, past `DENSE_SLACK`) is
    looked up through the hash table, not a dense array; the ids are those of the dense array."""
    train = Corpus.from_sentences([["The", "cat", "sat"], ["the", "dog"]])
    test = Corpus.from_sentences([["the", "dog", "cat", "sat", "The"]])
    lines = ["w[0]", "lower(w[-1])|w[0]", "bias"]
    results = []
    for slack, spread in ((features.DENSE_SLACK, features.DENSE_SPREAD), (0, 2)):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(features, "DENSE_SLACK", slack)
            mp.setattr(features, "DENSE_SPREAD", spread)
            fi = FeatureIndex(parse_templates(lines))
            fi.fit_transform(train)
            f = fi.transform(test)
            results.append(([fi._dense_table(ti) is not None for ti in range(3)], f.state.tolist()))
    assert results[0][0] == [True, True, True]
    # at most 2 possible keys per key: w[0]'s space (the five words and the edge and unknown codes) is dense, the
    # bigram's (lowercased words x words, five pairs seen) hashed, the bias's one key dense
    assert results[1][0] == [True, False, True]
    assert results[0][1] == results[1][1]


def _fitted_state():
    lines = ["w[0]", "lower(w[-1])|w[0]", "bias", "y[-1]|y[0]|pos[0]"]
    fi = FeatureIndex(parse_templates(lines))
    fi.fit_transform(Corpus.from_sentences([["The", "cat", "sat"], ["北京"]],
                                           extra={"pos": [["DT", "NN", "VBD"], ["NR"]]}))
    meta, arrays = fi.state_dict()
    return lines, fi, meta, arrays


def _size(meta, i):
    return int(np.prod(meta["radix"][i])) if meta["radix"][i] else 1


_CORRUPTIONS = {
    "one-past": lambda k, size: np.r_[k, size],        # one past the key space (past the dense table)
    "far": lambda k, size: np.r_[k, size * 1000],      # far out of range
    "negative": lambda k, size: np.r_[-1, k],
    "unsorted": lambda k, size: k[::-1],
    "duplicate": lambda k, size: np.r_[k[:1], k],
    "2-d": lambda k, size: k.reshape(1, -1),
}


@pytest.mark.parametrize("corruption", list(_CORRUPTIONS))
@pytest.mark.parametrize("template", [0, 1, 2, 3], ids=["w0", "bigram", "bias", "transition"])
def test_from_state_rejects_keys_outside_the_value_space(corruption, template):
    """Dense tables are indexed by key: a loaded key out of range would write or read outside the
    table, and unsorted keys break the binary search. `from_state` must refuse them."""
    lines, fi, meta, arrays = _fitted_state()
    keys = np.asarray(arrays[f"keys_{template}"])
    if corruption == "unsorted" and len(keys) < 2:
        keys = np.r_[keys, keys]  # the bias table has one key: out of order means repeated here
    arrays = dict(arrays)
    arrays[f"keys_{template}"] = _CORRUPTIONS[corruption](keys, _size(meta, template))
    with pytest.raises(ValueError, match="not sorted keys of its value space"):
        FeatureIndex.from_state(parse_templates(lines), meta, arrays)
    FeatureIndex.from_state(parse_templates(lines), meta, dict(fi.state_dict()[1]))  # intact: loads


def test_from_state_round_trip_uses_dense_tables_with_same_ids():
    lines, fi, meta, arrays = _fitted_state()
    back = FeatureIndex.from_state(parse_templates(lines), meta, arrays)
    test = Corpus.from_sentences([["the", "cat", "北京"]], extra={"pos": [["DT", "NN", "NR"]]})
    a, b = fi.transform(test), back.transform(test)
    assert all(back._dense_table(ti) is not None for ti in range(len(back.templates)))
    assert np.array_equal(a.state, b.state) and np.array_equal(a.trans, b.trans)


# --------------------------------------------------------------------------- 5. compiled decoder
aot_only = pytest.mark.skipif(kernels.mode() != "aot", reason=(
    "structperc._aot (the ahead-of-time build) is absent or stale, so there is no compiled decoder "
    "to compare with the numpy one"))


def _random_data(seed: int, n: int = 30):
    rng = random.Random(seed)
    vocab = ["the", "a", "cat", "dog", "sat", "ran", "on", "mat", "Zürich", "北京", "big", "."]
    pos = {"the": "DT", "a": "DT", "sat": "VBD", "ran": "VBD", "on": "IN", "big": "JJ", ".": "."}
    X, y = [], []
    for _ in range(n):
        words = [rng.choice(vocab) for _ in range(rng.randint(1, 9))]
        tags, prev = [], "O"
        for w in words:
            p = pos.get(w, "NN")
            if p in ("DT", "JJ", "NN"):
                tag = "I-NP" if prev.endswith("NP") and rng.random() < 0.8 else "B-NP"
            elif p == "VBD":
                tag = "B-VP"
            else:
                tag = rng.choice(["O", "B-PP"])
            tags.append(tag)
            prev = tag
        X.append([(w, pos.get(w, "NN")) for w in words])
        y.append(tags)
    return X, y


@aot_only
@pytest.mark.parametrize("params", [
    dict(task="chunk", columns=["word", "pos", "chunk"]),                 # preset with pos, IOBES model
    dict(task="chunk", columns=["word", "pos", "chunk"], template=["w[0]"]),
    dict(task="chunk", columns=["word", "pos", "chunk"], template=["w[0]", "y[-1]|y[0]|pos[0]"]),
], ids=["chunk-preset", "w0", "w0-conditioned-transitions"])
@pytest.mark.parametrize("seed", [0, 1])
def test_compiled_decoder_equals_numpy_decoder(params, seed):
    """A trained tagger predicts the same labels with the compiled decoder as with the numpy one.

    Two epochs on 30 sentences leave many equal scores (unseen words have no state features), so
    this also checks that both break ties the same way (lowest label)."""
    from structperc.tagger import Tagger

    X, y = _random_data(seed)
    tagger = Tagger.train(X, y, epochs=2, seed=seed, **params)
    test_X, _ = _random_data(seed + 100, 20)
    test_X += [[("unseen", "NN"), ("words", "XX"), ("only", "YY")], [("北京", "NNP")]]
    corpus = tagger._corpus(test_X, None, need_tags=False)
    feats = tagger.features_.transform(corpus)

    calls = []
    import structperc.decode.decoder as decoder

    real = decoder._predict_compiled
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decoder, "_predict_compiled", lambda *a: (calls.append(1), real(*a))[1])
        compiled_ids = predict(tagger.weights_, feats)
        compiled_tags = tagger.predict(test_X)
    assert calls, "the compiled decoder did not run"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(decoder, "_predict_compiled", lambda *a: False)
        numpy_ids = predict(tagger.weights_, feats)
        numpy_tags = tagger.predict(test_X)
    assert compiled_ids.tolist() == numpy_ids.tolist()
    assert compiled_tags == numpy_tags
