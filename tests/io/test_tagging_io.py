"""What `structperc tag` reads and writes, at the level of `structperc.io` (issue #15, items 4, 5, 9,
10, 11): columns split at ASCII whitespace only, files without sentences described, output files
written atomically, every input line written back in order (checked against a line-by-line oracle
in every reader mode), and the input formats told apart.
"""
from __future__ import annotations

import io
import os
import stat
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import READER_MODES, compiled_reader, reader_mode

from structperc.errors import InputError
from structperc.io import conll, formats, text
from structperc.io.output import atomic_output, output_stream
from structperc.io.segmented import read_segmented_corpus

FAST = dict(deadline=None, derandomize=True, database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
BOM = b"\xef\xbb\xbf"
MODES = READER_MODES


class _Named(io.BytesIO):
    def __init__(self, data: bytes, name: str):
        super().__init__(data)
        self.name = name


# ------------------------------------------------------------------ item 4: ASCII separators only
@pytest.mark.parametrize("mode", MODES)
def test_no_break_space_and_ideographic_space_stay_inside_a_token(mode):
    data = "New\xa0York NNP B-NP\n北京\u3000欢迎\tVV\tB-VP\nx\x1cy Z O\n".encode()
    with pytest.MonkeyPatch.context() as mp:
        reader_mode(mp, mode)
        c = conll.read_conll(io.BytesIO(data), ["word", "pos", "chunk"])
    assert c.columns["word"] == ["New\xa0York", "北京\u3000欢迎", "x\x1cy"]
    assert c.columns["chunk"] == ["B-NP", "B-VP", "O"]


@pytest.mark.parametrize("mode", MODES)
def test_conllu_fields_split_at_tabs_only(mode):
    row = "\t".join(["1", "New York", "New\xa0York", "PROPN", "NNP", "_", "0", "root", "_", "_"])
    with pytest.MonkeyPatch.context() as mp:
        reader_mode(mp, mode)
        c = conll.read_conllu(io.BytesIO((row + "\n").encode()))
    assert c.columns["word"] == ["New York"] and c.columns["lemma"] == ["New\xa0York"]


# ------------------------------------------------------------------ item 5: what an empty file holds
@pytest.mark.parametrize("data, message", [
    ("", "no sentences (the file is empty)"),
    ("\n" * 12, "no sentences: 12 lines, all blank or -DOCSTART-"),
    ("-DOCSTART- -X- O\n\n-DOCSTART- -X- O\n \t\n", "no sentences: 4 lines, all blank or -DOCSTART-"),
    ("-DOCSTART-", "no sentences: 1 line, all blank or -DOCSTART-"),
])
@pytest.mark.parametrize("mode", MODES)
def test_no_sentences_says_what_the_file_holds(write_file, data, message, mode):
    p = write_file("a.txt", data)
    with pytest.MonkeyPatch.context() as mp:
        reader_mode(mp, mode)
        with pytest.raises(InputError) as err:
            conll.read_conll(p, ["word", "tag"])
    assert str(err.value) == f"{p}: {message}"


def test_no_sentences_in_conllu_and_segmented_files(write_file):
    with pytest.raises(InputError, match=r": no sentences: 3 lines, all blank, # comments"):
        conll.read_conllu(write_file("a.conllu", "# c\n\n1-2\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n"))
    with pytest.raises(InputError, match=r": no sentences: 3 lines, all blank$"):
        read_segmented_corpus(write_file("s.txt", "\n \n\u3000\n"))


# ------------------------------------------------------------------ item 10: every line comes back
_TOKEN = st.text(st.sampled_from(list("abXé北_-.#") + ["\xa0", "\u3000", "\x1c"]), min_size=1, max_size=3)
_ASCII_SEPS = [" ", " ", "\t", "  ", " \t"]


@st.composite
def _column_file(draw) -> tuple[bytes, int]:
    """A valid CoNLL column file of ``width`` columns with blank lines (runs of them, leading ones,
    some holding spaces), -DOCSTART- lines, CRLF or LF, maybe a BOM and no final line end."""
    width = draw(st.integers(1, 3))
    lines = []
    for kind in draw(st.lists(st.sampled_from(["tok"] * 5 + ["blank"] * 3 + ["doc"]), max_size=30)):
        if kind == "tok":
            fields = [draw(_TOKEN).replace("-DOCSTART-", "x") for _ in range(width)]
            if fields[0].startswith("#"):
                fields[0] = "x" + fields[0]
            sep = draw(st.sampled_from(_ASCII_SEPS))
            lines.append(draw(st.sampled_from(["", " "])) + sep.join(fields) + draw(st.sampled_from(["", " "])))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "", " ", "\t "])))
        else:
            lines.append(draw(st.sampled_from(["-DOCSTART- -X- O", "-DOCSTART-"])))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    data = "".join(line + newline for line in lines).encode()
    if data and draw(st.booleans()):
        data = data[:-len(newline)]
    if draw(st.integers(0, 4)) == 0:
        data = BOM + data
    return data, width


def _oracle(data: bytes, tags: list[str], is_token, put) -> str:
    """The output line by line: every line, in order, token lines with their tag put in; nothing
    more (no blank line after a last sentence that none closes)."""
    if data.startswith(BOM):
        data = data[3:]
    t = data.decode("utf-8").replace("\r\n", "\n")
    if t.endswith("\r"):
        t = t[:-1]
    lines = t.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    out, i, open_sentence, first_line = [], 0, False, ""
    for line in lines:
        if is_token(line):
            if not open_sentence:
                first_line = line
            open_sentence = True
            out.append(put(line, tags[i], first_line))
            i += 1
        else:
            out.append(line)
            if not line.strip(text.ASCII_WS) or line.isspace():
                open_sentence = False
    assert i == len(tags)
    return "".join(line + "\n" for line in out)


def _tag_output(source, fmt, columns, sentences, field=-1, optional=()):
    out, tags = io.StringIO(), []
    for corpus, raw in conll.iter_tagging_chunks(source, columns, optional=optional, sentences=sentences,
                                                 fmt=fmt):
        chunk_tags = [f"T{len(tags) + k}é" for k in range(corpus.n_tokens)]
        tags += chunk_tags
        conll.write_tagged(out, raw, chunk_tags, field)
    return out.getvalue(), tags


def _is_column_token(line: str) -> bool:
    return bool(line.strip(text.ASCII_WS)) and not line.startswith("-DOCSTART-")


def _append(line: str, tag: str, first: str) -> str:
    return line + ("\t" if "\t" in first else " ") + tag


@settings(max_examples=150, **FAST)
@given(case=_column_file(), piece=st.sampled_from([1, 7, 64, text._PIECE]), sentences=st.integers(1, 3),
       mode=st.sampled_from(MODES), on_disk=st.booleans())
def test_every_line_comes_back_conll(case, piece, sentences, mode, on_disk, tmp_path_factory):
    """Blank lines (leading ones, runs), -DOCSTART- lines come back where they were; every token line
    gets its tag; the same whichever reader, piece size and chunk size."""
    data, width = case
    source = io.BytesIO(data)
    if on_disk:
        path = tmp_path_factory.mktemp("lines") / "in.txt"
        path.write_bytes(data)
        source = str(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        reader_mode(mp, mode)
        got, tags = _tag_output(source, "conll", ["word", "pos", "chunk"][:width], sentences)
    assert got == _oracle(data, tags, _is_column_token, _append)


_ROW_IDS = ["1", "2", "3", "1-2", "4.1"]


@st.composite
def _conllu_file(draw) -> bytes:
    lines = []
    for kind in draw(st.lists(st.sampled_from(["word"] * 5 + ["comment", "blank", "blank", "doc"]),
                              max_size=30)):
        if kind == "word":
            fields = [draw(st.sampled_from(_ROW_IDS))] + [draw(_TOKEN).replace("\t", " ") for _ in range(9)]
            lines.append("\t".join(fields))
        elif kind == "comment":
            lines.append(draw(st.sampled_from(["# sent_id = 1", "# text = a b", "#"])))
        elif kind == "blank":
            lines.append(draw(st.sampled_from(["", "", " "])))
        else:
            lines.append("-DOCSTART-")
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    data = "".join(line + newline for line in lines).encode()
    if data and draw(st.booleans()):
        data = data[:-len(newline)]
    return data


def _is_word_line(line: str) -> bool:
    return line.split("\t", 1)[0].isdigit()


@settings(max_examples=150, **FAST)
@given(data=_conllu_file(), piece=st.sampled_from([1, 9, text._PIECE]), sentences=st.integers(1, 3),
       mode=st.sampled_from(MODES), field=st.sampled_from([-1, 3, 4, 9]))
def test_every_line_comes_back_conllu(data, piece, sentences, mode, field):
    """CoNLL-U: comments, multi-word tokens, empty nodes, blank lines come back; word lines get the
    tag in column ``field`` (or appended as an 11th)."""
    def put(line, tag, first):
        if field < 0:
            return line + "\t" + tag
        fields = line.split("\t")
        fields[field] = tag
        return "\t".join(fields)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text, "_PIECE", piece)
        reader_mode(mp, mode)
        got, tags = _tag_output(_Named(data, "x.conllu"), "conllu", [], sentences, field)
    assert got == _oracle(data, tags, _is_word_line, put)


def test_leading_blank_lines_docstart_and_runs_of_blank_lines():
    data = b"\n\n-DOCSTART- -X- O\n\nHe PRP\nran VBD\n\n\n\n-DOCSTART- -X- O\n\nOK UH"
    got, tags = _tag_output(io.BytesIO(data), "conll", ["word", "pos", "chunk"], 20_000,
                            optional=("chunk",))
    assert got == ("\n\n-DOCSTART- -X- O\n\nHe PRP T0é\nran VBD T1é\n\n\n\n-DOCSTART- -X- O\n\n"
                   "OK UH T2é\n")


def test_tokens_lines_with_spaces_are_one_token():
    for mode in MODES:
        with pytest.MonkeyPatch.context() as mp:
            reader_mode(mp, mode)
            chunks = list(conll.iter_tagging_chunks(io.BytesIO(b"New York \nis\n\n big\n"), ["word"],
                                                    fmt="tokens"))
        (corpus, raw), = chunks
        assert corpus.columns["word"] == ["New York", "is", "big"]
        assert corpus.sent_ptr.tolist() == [0, 2, 3]


@compiled_reader
def test_writer_refuses_spans_out_of_order():
    """The compiled writer trusts its spans: `RawLines.write` checks them first."""
    (_, raw), = conll.iter_tagging_chunks(io.BytesIO(b"a X\nb Y\n"), ["word", "pos"])
    piece = raw.pieces[0]
    piece.beg, piece.end = piece.beg[::-1].copy(), piece.end[::-1].copy()
    with pytest.raises(ValueError, match="out of order"):
        raw.write(io.StringIO(), ["A", "B"])
    piece.beg, piece.end = piece.beg[::-1].copy(), piece.end[::-1].copy()
    piece.stop = len(piece.data) + 5
    with pytest.raises(ValueError, match="outside"):
        raw.write(io.StringIO(), ["A", "B"])


# ------------------------------------------------------------------ item 11: telling formats apart
_CONLL = formats.Layout.of(["word", "pos", "chunk"], "chunk", "word", {"word", "pos"})
_UD = formats.Layout.of(conll.CONLLU_COLUMNS, "upos", "word", {"word"})
_ROW = "\t".join(["1", "He", "he", "PRON", "PRP", "_", "0", "root", "_", "_"])


@pytest.mark.parametrize("data, layout, expected", [
    (f"# sent_id = 1\n# text = He\n{_ROW}\n\n", _UD, "conllu"),
    (f"\n-DOCSTART-\n\n{_ROW}", _UD, "conllu"),                  # no final line end
    (_ROW.replace("1", "1-2", 1) + "\n", _UD, "conllu"),
    ("He\nran\n\n", _UD, "tokens"),
    ("#\nhashtag\n", _UD, "tokens"),                             # a '#' token, not a comment
    ("He PRP\nran VBD\n", _CONLL, "conll"),
    ("He PRP B-NP\n", _CONLL, "conll"),
    ("He\nran\n", _CONLL, "tokens"),                             # too few columns for conll
    ("He PRP B-NP x\n", _CONLL, "conll"),                       # the conll reader names the line
    ("", _CONLL, "conll"),
    ("\n\n", _UD, "conll"),
])
def test_auto_tells_formats_apart_and_gives_back_what_it_read(data, layout, expected):
    raw = data.encode()
    fmt, source = formats.resolve(io.BytesIO(raw), "auto", layout)
    assert fmt == expected
    assert source.read() == raw  # the bytes looked at are read again


def test_auto_on_a_path_and_on_standard_input(write_file, monkeypatch):
    p = write_file("ud.txt", _ROW + "\n")
    assert formats.resolve(p, "auto", _UD) == ("conllu", p)
    assert formats.resolve(write_file("x.conllu", "He\n"), "auto", _UD)[0] == "conllu"  # the name says
    assert formats.resolve(write_file("g.txt.gz", "He\nran\n", gz=True), "auto", _UD)[0] == "tokens"
    assert formats.resolve(p, "lines", _UD) == ("lines", p)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((_ROW + "\n\n").encode() * 3)))
    fmt, source = formats.resolve("-", "auto", _UD)
    assert fmt == "conllu" and source.name == "<stdin>"
    corpus = conll.read_conllu(source)
    assert corpus.columns["word"] == ["He"] * 3 and corpus.source == "<stdin>"


def test_missing_columns_are_named():
    with pytest.raises(InputError, match=r"reads column pos, which one-token-per-line input lacks"):
        formats.check("tokens", "conll", _CONLL, "x")
    with pytest.raises(InputError, match=r"reads column pos, which CoNLL-U input lacks"):
        formats.check("conllu", "conll", _CONLL, "x")
    with pytest.raises(InputError, match=r"predicts 'chunk', which is not a CoNLL-U column"):
        formats.check("conll", "conllu", _CONLL, "x")
    formats.check("tokens", "conllu", _UD, "x")
    formats.check("lines", "jsonl", _UD, "x")


# ------------------------------------------------------------------ item 9: atomic output files
def test_atomic_output_replaces_only_on_success(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    with pytest.raises(RuntimeError):
        with atomic_output(target) as fh:
            fh.write("partial\n")
            raise RuntimeError("stop")
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]   # no temporary file left
    with atomic_output(target) as fh:
        fh.write("new 北京\n")
    assert target.read_text(encoding="utf-8") == "new 北京\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_atomic_output_errors_and_special_files(tmp_path):
    with pytest.raises(InputError, match="is a directory"):
        with atomic_output(tmp_path):
            pass
    with pytest.raises(InputError, match="cannot write"):
        with atomic_output(tmp_path / "missing" / "out.txt"):
            pass
    with atomic_output(os.devnull) as fh:   # not a regular file: written directly, never replaced
        fh.write("x")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    stream = io.StringIO()
    with output_stream(stream) as out:
        out.write("a")
    assert stream.getvalue() == "a" and not stream.closed
