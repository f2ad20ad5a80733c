"""CoNLL and CoNLL-U readers/writers: columns, blocks, encodings, and errors that name file and line."""
from __future__ import annotations

import gzip
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import InputError
from structperc.io import text
from structperc.io.conll import iter_conll_chunks, read_conll, read_conllu, read_corpus, write_conll
from structperc.io.corpus import Corpus

COLS = ["word", "pos", "chunk"]
TEXT = ("He PRP B-NP\nran VBD B-VP\n\n"
        "Zürich NNP B-NP\n北京 NNP I-NP\n．  .   O\n")   # no final newline; runs of spaces in line 5


# ----------------------------------------------------------------------------- well-formed input
def test_columns_named_by_list(write_file):
    c = read_conll(write_file("a.txt", TEXT), COLS)
    assert c.column_names == COLS
    assert c.columns["word"] == ["He", "ran", "Zürich", "北京", "．"]
    assert c.columns["pos"] == ["PRP", "VBD", "NNP", "NNP", "."]
    assert c.columns["chunk"] == ["B-NP", "B-VP", "B-NP", "I-NP", "O"]
    assert c.sent_ptr.tolist() == [0, 2, 5]
    assert c.sent_lines.tolist() == [1, 4]
    assert len(c) == 2 and c.n_tokens == 5


def test_underscore_skips_columns(write_file):
    p = write_file("a.txt", "a 1 X q\nb 2 Y r\n")
    c = read_conll(p, ["word", "_", "tag", "_"])
    assert c.column_names == ["word", "tag"]
    assert c.columns == {"word": ["a", "b"], "tag": ["X", "Y"]}


def test_multiple_blank_lines_and_whitespace_lines(write_file):
    # lines: 1 a, 2 b, 3-5 blank (one with spaces/tab), 6 c, 7-8 blank
    p = write_file("a.txt", "a X\nb Y\n\n \t \n\nc Z\n\n\n")
    c = read_conll(p, ["word", "tag"])
    assert c.sent_ptr.tolist() == [0, 2, 3]
    assert c.sent_lines.tolist() == [1, 6]
    assert c.columns["tag"] == ["X", "Y", "Z"]


def test_docstart_lines_skipped(write_file):
    p = write_file("a.txt", "-DOCSTART- -X- O\n\nEU NNP B-ORG\nrejects VBZ O\n\n"
                            "-DOCSTART- -X- O\n\nPeter NNP B-PER\n")
    c = read_conll(p, ["word", "pos", "ner"])
    assert c.columns["word"] == ["EU", "rejects", "Peter"]
    assert c.sent_lines.tolist() == [3, 8]


def test_gzip_read_transparently(write_file):
    plain = read_conll(write_file("a.txt", TEXT), COLS)
    packed = read_conll(write_file("a.txt.gz", TEXT, gz=True), COLS)
    assert packed.columns == plain.columns
    assert packed.sent_ptr.tolist() == plain.sent_ptr.tolist()
    assert packed.sent_lines.tolist() == plain.sent_lines.tolist()


def test_crlf_line_ends(write_file):
    p = write_file("a.txt", "a X\r\nb Y\r\n\r\nc Z\r\n")
    c = read_conll(p, ["word", "tag"])
    assert c.columns["tag"] == ["X", "Y", "Z"]   # no stray "\r" on the last column
    assert c.sent_ptr.tolist() == [0, 2, 3]
    assert c.sent_lines.tolist() == [1, 4]


def test_streams_text_and_binary():
    a = read_conll(io.BytesIO("é X\n\nb Y\n".encode()), ["word", "tag"])
    b = read_conll(io.StringIO("é X\n\nb Y\n"), ["word", "tag"])
    assert a.columns == b.columns == {"word": ["é", "b"], "tag": ["X", "Y"]}


def test_optional_trailing_column(write_file):
    without = read_conll(write_file("a.txt", "a DT\nb NN\n"), COLS, optional=["chunk"])
    assert without.column_names == ["word", "pos"]
    with_tags = read_conll(write_file("b.txt", "a DT B-NP\nb NN I-NP\n"), COLS, optional=["chunk"])
    assert with_tags.columns["chunk"] == ["B-NP", "I-NP"]
    # too few even with the optional column absent: 1 column for 2..3
    with pytest.raises(InputError, match=r"expected 2 to 3 columns"):
        read_conll(write_file("c.txt", "a\n"), COLS, optional=["chunk"])
    # the optional column must be present in all sentences or in none: line 4 switches width
    with pytest.raises(InputError) as err:
        read_conll(write_file("d.txt", "a DT\nb NN\n\nc DT B-NP\n"), COLS, optional=["chunk"])
    assert err.value.line == 4


def test_optional_must_be_last(write_file):
    with pytest.raises(InputError, match="must be the last"):
        read_conll(write_file("a.txt", "a b c\n"), COLS, optional=["pos"])


def test_keep_lines(write_file):
    p = write_file("a.txt", "a X\r\nb Y\r\n\r\n\r\nc Z\r\n")
    corpus, lines = read_conll(p, ["word", "tag"], keep_lines=True)
    assert lines == [["a X", "b Y"], ["c Z"]]
    assert corpus.columns["word"] == ["a", "b", "c"]


@pytest.mark.parametrize("per_chunk", [1, 2, 3, 7, 100])
def test_iter_conll_chunks_same_corpus(write_file, per_chunk):
    sents = [[f"w{i}_{j} T{j % 3}" for j in range(1 + i % 4)] for i in range(7)]
    p = write_file("a.txt", "".join("\n".join(s) + "\n\n" for s in sents))
    whole, whole_lines = read_conll(p, ["word", "tag"], keep_lines=True)
    chunks = list(iter_conll_chunks(p, ["word", "tag"], sentences=per_chunk))
    # 7 sentences in pieces of per_chunk: ceil(7 / per_chunk) pieces
    assert len(chunks) == -(-7 // per_chunk)
    assert all(len(c) <= per_chunk for c, _ in chunks)
    for name in ("word", "tag"):
        assert [v for c, _ in chunks for v in c.columns[name]] == whole.columns[name]
    lengths = np.concatenate([np.diff(c.sent_ptr) for c, _ in chunks])
    assert lengths.tolist() == np.diff(whole.sent_ptr).tolist()
    assert [b for _, lines in chunks for b in lines] == whole_lines
    assert [n for c, _ in chunks for n in c.sent_lines.tolist()] == whole.sent_lines.tolist()


def test_iter_conll_chunks_reports_bad_line_in_later_chunk(write_file):
    p = write_file("a.txt", "a X\n\nb Y\n\nc Z\nd\n")   # line 6 has one column
    with pytest.raises(InputError) as err:
        list(iter_conll_chunks(p, ["word", "tag"], sentences=1))
    assert str(err.value).startswith(f"{p}:6: ")


_TOKEN = st.text(alphabet=st.sampled_from("abcXYZ北京你好éü．1"), min_size=1, max_size=4)


@settings(max_examples=60, deadline=None)
@given(sents=st.lists(st.lists(st.tuples(_TOKEN, _TOKEN), min_size=1, max_size=4), min_size=1,
                      max_size=5),
       piece=st.integers(1, 24), crlf=st.booleans())
def test_small_read_pieces_give_same_corpus(sents, piece, crlf):
    """The reader decodes in pieces; multi-byte characters split across pieces must not matter."""
    nl = "\r\n" if crlf else "\n"
    data = "".join(nl.join(f"{a} {b}" for a, b in s) + nl + nl for s in sents).encode()
    saved = text._PIECE
    try:
        text._PIECE = piece
        small = read_conll(io.BytesIO(data), ["word", "tag"])
    finally:
        text._PIECE = saved
    assert small.columns["word"] == [a for s in sents for a, _ in s]
    assert small.columns["tag"] == [b for s in sents for _, b in s]
    assert np.diff(small.sent_ptr).tolist() == [len(s) for s in sents]


# ----------------------------------------------------------------------------------- CoNLL-U
CONLLU = (
    "# sent_id = 1\n"
    "# text = Vámonos al mar\n"
    "1-2\tVámonos\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tVamos\tir\tVERB\t_\t_\t0\troot\t_\t_\n"
    "2\tnos\tnosotros\tPRON\t_\t_\t1\tobj\t_\t_\n"
    "3-4\tal\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\ta\ta\tADP\t_\t_\t5\tcase\t_\t_\n"
    "4\tel\tel\tDET\t_\t_\t5\tdet\t_\t_\n"
    "5\tmar\tmar\tNOUN\t_\t_\t1\tobl\t_\tSpaceAfter=No\n"
    "\n"
    "# sent_id = 2\n"
    "1\t北京\t北京\tPROPN\tNR\t_\t2\tnsubj\t_\t_\n"
    "2\t欢迎\t欢迎\tVERB\tVV\t_\t0\troot\t_\t_\n"
    "2.1\t说\t说\tVERB\tVV\t_\t_\t_\t2:conj\t_\n"
    "3\t你\t你\tPRON\tPN\t_\t2\tobj\t_\t_\n"
    "\n"
)


def test_conllu_skips_comments_multiword_and_empty_nodes(write_file):
    c, lines = read_conllu(write_file("a.conllu", CONLLU), keep_lines=True)
    assert c.columns["word"] == ["Vamos", "nos", "a", "el", "mar", "北京", "欢迎", "你"]
    assert c.columns["upos"] == ["VERB", "PRON", "ADP", "DET", "NOUN", "PROPN", "VERB", "PRON"]
    assert c.columns["xpos"][-3:] == ["NR", "VV", "PN"]
    assert c.sent_ptr.tolist() == [0, 5, 8]
    assert c.sent_lines.tolist() == [3, 12]      # first non-comment line of each block
    assert len(lines[0]) == 5 and lines[0][0].startswith("1\tVamos")
    assert all("\t" in ln and not ln.startswith(("1-2", "3-4", "2.1")) for b in lines for ln in b)


def test_read_corpus_dispatches_on_name(write_file):
    c = read_corpus(write_file("x.conllu.gz", CONLLU, gz=True), None)
    assert c.columns["word"][:2] == ["Vamos", "nos"]
    with pytest.raises(InputError, match="name the columns"):
        read_corpus(write_file("x.txt", "a b\n"), None)


def test_conllu_wrong_field_count_names_line(write_file):
    bad = CONLLU.replace("4\tel\tel\tDET\t_\t_\t5\tdet\t_\t_\n", "4\tel\tel\tDET\n")
    p = write_file("a.conllu", bad)
    with pytest.raises(InputError) as err:
        read_conllu(p)
    assert str(err.value).startswith(f"{p}:8: ")   # line 8 is token 4


def test_conllu_bad_token_id(write_file):
    p = write_file("a.conllu", "x\ta\t_\t_\t_\t_\t_\t_\t_\t_\n")
    with pytest.raises(InputError, match=r":1: bad token id 'x'"):
        read_conllu(p)


# ------------------------------------------------------------------------------------ writing
def test_write_conll_appends_column():
    out = io.StringIO()
    write_conll(out, [["a X", "b Y"], ["北京 NR"]], [["B", "I"], ["S"]])
    assert out.getvalue() == "a X B\nb Y I\n\n北京 NR S\n\n"


def test_write_conll_keeps_tabs_and_explicit_separator():
    out = io.StringIO()
    write_conll(out, [["a\tX"]], [["B"]])
    assert out.getvalue() == "a\tX\tB\n\n"
    out = io.StringIO()
    write_conll(out, [["a X"]], [["B"]], sep="\t")
    assert out.getvalue() == "a X\tB\n\n"
    out = io.StringIO()
    write_conll(out, [], [])
    assert out.getvalue() == ""


def test_writing_chunk_by_chunk_equals_writing_at_once(write_file):
    """What `structperc tag` does: the output must not depend on where the chunks are cut."""
    sents = [[f"w{i}_{j} T" for j in range(1 + i % 3)] for i in range(5)]
    p = write_file("a.txt", "".join("\n".join(s) + "\n\n" for s in sents))
    whole, lines = read_conll(p, ["word", "tag"], keep_lines=True)
    expected = io.StringIO()
    write_conll(expected, lines, [[w.upper() for w in s] for s in whole.sentences("word")])
    for per_chunk in (1, 2, 5):
        out = io.StringIO()
        for corpus, chunk_lines in iter_conll_chunks(p, ["word", "tag"], sentences=per_chunk):
            write_conll(out, chunk_lines, [[w.upper() for w in s] for s in corpus.sentences("word")])
        assert out.getvalue() == expected.getvalue()
    assert expected.getvalue().startswith("w0_0 T W0_0\n\nw1_0 T W1_0\nw1_1 T W1_1\n\n")


def test_write_then_read_round_trip(write_file):
    corpus, lines = read_conll(write_file("a.txt", TEXT), COLS, keep_lines=True)
    preds = [["P1", "P2"], ["P3", "P4", "P5"]]
    out = io.StringIO()
    write_conll(out, lines, preds)
    back = read_conll(io.StringIO(out.getvalue()), COLS + ["pred"])
    assert back.columns["pred"] == ["P1", "P2", "P3", "P4", "P5"]
    assert back.columns["word"] == corpus.columns["word"]


# --------------------------------------------------------------------------------- bad input
def test_wrong_column_count_names_line(write_file):
    p = write_file("a.txt", "a X\nb Y\n\nc Z\nd\n")       # line 5 has 1 column
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}:5: ")
    assert err.value.path == p and err.value.line == 5
    assert "found 1" in str(err.value)


def test_wrong_column_count_on_first_line(write_file):
    p = write_file("a.txt", "\n\na X Y\n")                 # 3 columns for 2 names on line 3
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}:3: expected 2 columns")


def test_width_change_between_sentences_names_line(write_file):
    p = write_file("a.txt", "a X\n\n\nb Y Z\n")
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag", "x"], optional=["x"])
    assert str(err.value).startswith(f"{p}:4: ")


@pytest.mark.parametrize("data, line", [
    (b"a X\nb Y\n\n\xff Z\n", 4),
    (b"a X\nb Y\n\nc \xe4\xb8\n", 4),               # truncated 3-byte sequence at the end, no newline
    (b"a X\r\n\xc3\x28 Y\r\n", 2),
    (b"\xfe\n", 1),
])
def test_undecodable_bytes_name_line(write_file, data, line):
    p = write_file("a.txt", data)
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}:{line}: ")
    assert "UTF-8" in str(err.value)


def test_undecodable_bytes_line_with_small_pieces(write_file):
    p = write_file("a.txt", "é X\nü Y\n\n北京 Z\n".encode() + b"\xff W\n")
    saved = text._PIECE
    try:
        for piece in (1, 3, 5, 64):
            text._PIECE = piece
            with pytest.raises(InputError) as err:
                read_conll(p, ["word", "tag"])
            assert str(err.value).startswith(f"{p}:5: "), piece
    finally:
        text._PIECE = saved


def test_undecodable_bytes_in_gzip_name_line(write_file):
    p = write_file("a.txt.gz", b"a X\n\xff Y\n", gz=True)
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}:2: ")


@pytest.mark.parametrize("text", ["", "\n\n\n", "-DOCSTART- -X- O\n\n"])
def test_empty_file(write_file, text):
    p = write_file("a.txt", text)
    with pytest.raises(InputError, match="no sentences") as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}: ")


def test_empty_conllu(write_file):
    with pytest.raises(InputError, match="no sentences"):
        read_conllu(write_file("a.conllu", "# only a comment\n\n"))


def test_missing_file(tmp_path):
    p = str(tmp_path / "nope.txt")
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}: ")


def test_not_gzip_despite_name(write_file):
    p = write_file("a.txt.gz", b"a X\n")
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}: ")


def test_corrupt_gzip_stream(write_file):
    data = bytearray(gzip.compress(("a X\n" * 2000).encode()))
    for i in range(20, 40):        # flip bytes inside the deflate stream (header is 10 bytes)
        data[i] ^= 0xFF
    p = write_file("a.txt.gz", bytes(data))
    with pytest.raises(InputError) as err:
        read_conll(p, ["word", "tag"])
    assert str(err.value).startswith(f"{p}")


def test_utf8_bom_is_not_part_of_first_token(write_file):
    p = write_file("a.txt", "\ufeffHe PRP B-NP\n".encode())
    assert read_conll(p, COLS).columns["word"] == ["He"]


def test_unknown_column_via_factorize(write_file):
    c = read_conll(write_file("a.txt", TEXT), COLS)
    with pytest.raises(InputError) as err:
        c.factorize("lemma")
    msg = str(err.value)
    assert "'lemma'" in msg and "word, pos, chunk" in msg and msg.startswith(c.source)


def test_factorize_codes():
    c = Corpus.from_sentences([["b", "a", "b"], ["北京", "a"]])
    values, codes = c.factorize("word")
    assert values == ["b", "a", "北京"]
    assert codes.tolist() == [0, 1, 0, 2, 1]
    pos, length = c.positions()
    assert pos.tolist() == [0, 1, 2, 0, 1] and length.tolist() == [3, 3, 3, 2, 2]


def test_derived_values_are_made_once_and_follow_their_column():
    """A value derived from a column is made once per corpus, kept by the corpora `with_column` makes while that
    column stays, and made again from the new column once it is replaced."""
    c = Corpus.from_sentences([["a", "B"]], tags=[["x", "y"]])
    made = []

    def lowered(corpus):
        def make():
            made.append(1)
            return [w.lower() for w in corpus.factorize("word")[0]]
        return corpus.derived("word", "lowered", make)

    assert lowered(c) == ["a", "b"] and lowered(c) == ["a", "b"] and len(made) == 1
    kept = c.with_column("pred", ["p", "q"])
    assert lowered(kept) == ["a", "b"] and len(made) == 1
    replaced = kept.with_column("word", ["C", "d"])
    assert lowered(replaced) == ["c", "d"] and len(made) == 2
    assert lowered(replaced.with_column("tag", (["z"], np.zeros(2, np.int64)))) == ["c", "d"] and len(made) == 2


def test_select_and_with_column():
    c = Corpus.from_sentences([["a", "b"], ["c"], ["d", "e", "f"]], tags=[["1", "2"], ["3"], ["4", "5", "6"]])
    s = c.select([2, 0])
    assert s.columns["word"] == ["d", "e", "f", "a", "b"]
    assert s.sent_ptr.tolist() == [0, 3, 5]
    w = c.with_column("pred", list("xyzuvw"))
    assert w.columns["pred"] == list("xyzuvw") and "pred" not in c.columns
    with pytest.raises(ValueError):
        c.with_column("pred", ["x"])
