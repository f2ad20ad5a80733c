"""The compiled reader end to end: `structperc tag` writes the same bytes with and without it, files
come in through every door (.gz, standard input, text streams), and corpora it hands over factorized
behave like corpora of plain lists.

`tests/io/test_fast_paths.py` compares the readers piece by piece on generated input; this file checks
what a user sees.
"""
from __future__ import annotations

import gzip
import io
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import TOY, conll_text

from structperc.cli import main
from structperc.compiled import loader as kernels
from structperc.errors import InputError
from structperc.io import scan
from structperc.io.conll import iter_tagging_chunks, read_conll, read_conllu, write_tagged
from structperc.io.corpus import ColumnMap, Corpus, compact, expand

compiled_reader = pytest.mark.skipif(not scan.available(), reason=(
    "structperc._aot_read (the ahead-of-time build of the reading kernels) is absent or stale"))

_ROW = "{}\t{}\t{}\t{}\t_\t_\t0\tdep\t_\t_"
#: A small CoNLL-U file with what real treebanks hold: comments, multi-word tokens, empty nodes,
#: non-ASCII words, a -DOCSTART- line, CRLF line ends on one sentence and a BOM.
CONLLU = "\ufeff" + "\n".join([
    "# newdoc id = d1", "# sent_id = 1", "# text = Vámonos al mar",
    _ROW.format("1-2", "Vámonos", "_", "_"), _ROW.format(1, "Vamos", "ir", "VERB"),
    _ROW.format(2, "nos", "nosotros", "PRON"), _ROW.format("3-4", "al", "_", "_"),
    _ROW.format(3, "a", "a", "ADP"), _ROW.format(4, "el", "el", "DET"),
    _ROW.format(5, "mar", "mar", "NOUN"), "",
    "-DOCSTART-", "",
    "# sent_id = 2", _ROW.format(1, "北京", "北京", "PROPN"), _ROW.format(2, "欢迎", "欢迎", "VERB"),
    _ROW.format("2.1", "说", "说", "VERB"), _ROW.format(3, "你", "你", "PRON"), "",
]) + "\n" + "\r\n".join(["# sent_id = 3", _ROW.format(1, "The", "the", "DET"),
                          _ROW.format(2, "cat", "cat", "NOUN"), _ROW.format(3, "Vamos", "ir", "VERB"),
                          "", ""])


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def _no_compiled_reader(mp: pytest.MonkeyPatch) -> None:
    """`kernels.aot` finds no reading kernel: the readers and the writer take their Python paths."""
    real = kernels.aot
    mp.setattr(kernels, "aot", lambda name: None if name in scan_kernel_names() else real(name))


def scan_kernel_names() -> set[str]:
    from structperc.io import read_kernels
    return set(read_kernels.AOT_EXPORTS)


@pytest.fixture(scope="module")
def pos_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("pos")
    train = d / "train.conllu"
    train.write_text(CONLLU, encoding="utf-8")
    model = d / "model"
    r = run("train", "--train", train, "--task", "pos", "--epochs", 3, "--model", model, "-q")
    assert r.exit_code == 0, r.output
    return model


def _tag(model, path, input=None, *options) -> bytes:
    args = ["tag", "--model", str(model), *options] + ([str(path)] if path else [])
    r = CliRunner().invoke(main, args, input=input)
    assert r.exit_code == 0, r.output
    return r.stdout_bytes


def _library_tags(model, path: str) -> list[str]:
    """What the library predicts for the words of a CoNLL-U file, in order."""
    from structperc.tagger import Tagger

    tagger = Tagger.load(model)
    return tagger.predict_corpus(read_conllu(path))


def test_cli_tag_conllu_same_with_and_without_compiled_reader(pos_model, tmp_path):
    """CoNLL-U in, CoNLL-U out: every line back (comments, multi-word tokens, empty nodes, the
    -DOCSTART- line; CRLF as LF, no BOM), the prediction in the UPOS column of each word line, the
    same bytes with and without the compiled reader and writer; ``--output-format conll`` appends it
    as an 11th column instead."""
    path = tmp_path / "test.conllu"
    path.write_text(CONLLU, encoding="utf-8")
    outputs = {}
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
                assert not scan.available()
            outputs[compiled] = (_tag(pos_model, path), _tag(pos_model, path, None, "--output-format", "conll"))
    assert outputs[True] == outputs[False]
    conllu_out, conll_out = (o.decode("utf-8") for o in outputs[True])
    tags = iter(_library_tags(pos_model, str(path)))
    expected, appended = [], []
    for line in CONLLU.lstrip("\ufeff").replace("\r\n", "\n").split("\n")[:-1]:
        fields = line.split("\t")
        if len(fields) == 10 and fields[0].isdigit():
            tag = next(tags)
            expected.append("\t".join(fields[:3] + [tag] + fields[4:]))
            appended.append(line + "\t" + tag)
        else:
            expected.append(line)
            appended.append(line)
    assert next(tags, None) is None
    assert conllu_out == "\n".join(expected) + "\n"
    assert conll_out == "\n".join(appended) + "\n"
    assert b"\r" not in outputs[True][0] and not outputs[True][0].startswith(b"\xef")


def test_cli_tag_gzip_and_stdin(pos_model, tmp_path, write_file):
    plain = _tag(pos_model, write_file("a.conllu", CONLLU))
    assert _tag(pos_model, write_file("b.conllu.gz", CONLLU, gz=True)) == plain
    # standard input has no name to tell CoNLL-U by: its first lines do
    assert _tag(pos_model, None, input=CONLLU) == plain
    # a chunker on CoNLL columns
    text = conll_text(TOY)
    chunker = tmp_path / "chunker"
    toy = write_file("toy.txt", text)
    assert run("train", "--train", toy, "--epochs", 2, "--model", chunker, "-q").exit_code == 0
    outs = []
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
            outs.append((_tag(chunker, None, input=text), _tag(chunker, toy),
                         _tag(chunker, write_file("toy.txt.gz", text, gz=True))))
    assert outs[0] == outs[1]
    assert outs[0][0] == outs[0][1] == outs[0][2]


def test_cli_tag_ner_with_gazetteer(tmp_path, write_file):
    """A NER model with a gazetteer reads the word column for it even where no template does: the
    command must still give it that column, and write what the library predicts."""
    from structperc.tagger import Tagger

    sents = [[("El", "DA", "O"), ("banco", "NC", "B-ORG"), ("de", "SP", "I-ORG"),
              ("España", "NP", "I-ORG"), ("abre", "VM", "O")],
             [("María", "NP", "B-PER"), ("visita", "VM", "O"), ("Zürich", "NP", "B-LOC")],
             [("北京", "NR", "B-LOC"), ("y", "CC", "O"), ("Madrid", "NP", "B-LOC")]] * 4
    train = write_file("ner.txt", conll_text(sents))
    model = tmp_path / "ner"
    template = write_file("t.txt", "pos[0]\ngaz[0]\ngaz[-1]|pos[0]\n")
    r = run("train", "--train", train, "--task", "ner", "--template", template, "--epochs", 3,
            "--model", model, "-q")
    assert r.exit_code == 0, r.output
    tagger = Tagger.load(model)
    assert tagger.dictionary_ is not None and "word" not in tagger.features_.columns
    test = write_file("test.txt", conll_text([[t[:2] for t in s] for s in sents[:3]]))
    outs = []
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
            outs.append(_tag(model, test))
    assert outs[0] == outs[1]
    tags = [line.rsplit(" ", 1)[1] for line in outs[0].decode().split("\n") if line]
    assert tags == sum(tagger.predict([[t[:2] for t in s] for s in sents[:3]]), [])


def test_cli_tag_irregular_conllu_names_line(pos_model, write_file):
    bad = CONLLU.replace(_ROW.format(2, "欢迎", "欢迎", "VERB"), "2\t欢迎\t欢迎")
    p = write_file("bad.conllu", bad)
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
            r = run("tag", "--model", pos_model, p)
        assert r.exit_code == 1
        assert r.stderr.strip() == f"Error: {p}:16: CoNLL-U needs 10 tab-separated columns, found 3"


@pytest.mark.parametrize("gz", [False, True])
def test_read_conllu_columns_and_doors(write_file, gz, monkeypatch):
    """Only the asked columns are read; gzip, a binary stream, a text stream and standard input
    give the same corpus as the file."""
    p = write_file("a.conllu" + (".gz" if gz else ""), CONLLU, gz=gz)
    whole = read_conllu(p)
    some = read_conllu(p, columns={"word", "upos"})
    assert some.column_names == ["word", "upos"]
    assert some.columns == {k: whole.columns[k] for k in ("word", "upos")}
    assert whole.columns["word"] == ["Vamos", "nos", "a", "el", "mar", "北京", "欢迎", "你", "The",
                                     "cat", "Vamos"]
    assert whole.sent_lines.tolist() == [4, 15, 21] and whole.sent_ptr.tolist() == [0, 5, 8, 11]
    raw = CONLLU.encode("utf-8")
    assert read_conllu(io.BytesIO(raw)).columns == whole.columns
    assert read_conllu(io.StringIO(CONLLU)).columns == whole.columns
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    assert read_conllu("-").columns == whole.columns


def test_tagging_chunks_read_only_what_the_model_reads(write_file):
    p = write_file("a.txt", conll_text(TOY * 3))
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
            chunks = list(iter_tagging_chunks(p, ["word", "pos", "chunk"], optional=("chunk",),
                                              only={"pos"}, sentences=4))
        assert [len(c) for c, _ in chunks] == [4, 4, 4, 3]
        assert all(c.column_names == ["pos"] for c, _ in chunks)
        assert sum((c.columns["pos"] for c, _ in chunks), []) == [t[1] for s in TOY * 3 for t in s]
        # later chunks number their values afresh, in order of first occurrence
        distinct, codes = chunks[1][0].factorize("pos")
        assert distinct == list(dict.fromkeys(chunks[1][0].columns["pos"])) and codes[0] == 0


def test_read_corpus_only_some_columns(write_file):
    from structperc.io.conll import read_corpus

    p = write_file("a.txt", conll_text(TOY))
    whole = read_corpus(p, ["word", "pos", "chunk"])
    some = read_corpus(p, ["word", "pos", "chunk"], only={"chunk", "word"})
    assert some.column_names == ["word", "chunk"]
    assert some.columns == {k: whole.columns[k] for k in ("word", "chunk")}
    u = read_corpus(write_file("a.conllu", CONLLU), None, only={"upos"})
    assert u.column_names == ["upos"] and u.n_tokens == 11
    with pytest.raises(InputError, match=":5: expected 3 columns like the lines before, found 2"):
        read_corpus(write_file("b.txt", "a X Y\nb Y Z\n\n\nc D\n"), ["word", "pos", "chunk"],
                    only={"word"})


def test_write_tagged_to_text_and_byte_streams(write_file):
    """The bytes path (a stream with a UTF-8 buffer) and the str path write the same text."""
    p = write_file("a.txt", "Zürich NNP\n北京\tNR\n\nx y\r\n")
    (corpus, raw), = iter_tagging_chunks(p, ["word", "pos"])
    tags = ["B-LOC", "I-LOC", "Ö"]
    text = io.StringIO()
    write_tagged(text, raw, tags)
    binary = io.BytesIO()
    wrapper = io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
    wrapper.write("head\n")
    write_tagged(wrapper, raw, tags)
    wrapper.write("tail\n")
    wrapper.flush()
    assert text.getvalue() == "Zürich NNP B-LOC\n北京\tNR I-LOC\n\nx y Ö\n"  # the input's lines, no more
    assert binary.getvalue().decode("utf-8") == "head\n" + text.getvalue() + "tail\n"
    latin = io.BytesIO()
    other = io.TextIOWrapper(latin, encoding="utf-16")
    write_tagged(other, raw, tags)
    other.flush()
    assert latin.getvalue().decode("utf-16") == text.getvalue()
    with pytest.raises(ValueError):
        write_tagged(io.StringIO(), raw, tags[:2])


def test_reading_and_tagging_do_not_import_numba(write_file):
    """The compiled reader is the ahead-of-time build or nothing: numba's import costs ~0.3 s."""
    p = write_file("a.conllu", CONLLU)
    code = ("import io, sys\nfrom structperc.io.conll import iter_tagging_chunks, write_tagged, "
            "read_conll\n"
            f"(c, raw), = iter_tagging_chunks({p!r}, [], only={{'word'}})\n"
            "write_tagged(io.StringIO(), raw, c.columns['word'])\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False"


def test_empty_and_missing_inputs_same_errors(write_file, tmp_path):
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
            for text in ("", "# c\n\n1-2\tzum\t_\t_\t_\t_\t_\t_\t_\t_\n"):
                with pytest.raises(InputError, match="no sentences"):
                    read_conllu(write_file("e.conllu", text))
            with pytest.raises(InputError, match="no sentences"):
                read_conll(write_file("e.txt", "-DOCSTART- O\n\n \n"), ["word", "tag"])
            assert list(iter_tagging_chunks(write_file("e.txt", ""), ["word"])) == []
            # no sentence, but a line to write back
            (corpus, raw), = iter_tagging_chunks(write_file("e.txt", "\n"), ["word"])
            assert len(corpus) == 0 and raw.n_bytes() == 1
            with pytest.raises(InputError, match=str(tmp_path / "none.conllu")):
                read_conllu(str(tmp_path / "none.conllu"))


# ------------------------------------------------------------------ corpora handed over factorized
def _coded_corpus(sents: list[list[tuple[str, str]]]) -> tuple[Corpus, Corpus]:
    """The same corpus twice: columns as plain lists, and as codes (`Corpus.from_codes`)."""
    words = [[w for w, _ in s] for s in sents]
    tags = [[t for _, t in s] for s in sents]
    plain = Corpus.from_sentences(words, tags)
    coded = Corpus.from_codes({k: plain.factorize(k) for k in plain.columns}, plain.sent_ptr,
                              plain.source)
    plain._factorized.clear()
    return plain, coded


_sents = st.lists(st.lists(st.tuples(st.sampled_from(["a", "b", "Zü", "北京", ""]),
                                     st.sampled_from(["X", "Y"])), min_size=1, max_size=5),
                  min_size=1, max_size=6)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(sents=_sents, data=st.data())
def test_coded_corpus_behaves_like_lists(sents, data):
    plain, coded = _coded_corpus(sents)
    assert coded.columns == plain.columns and plain.columns == coded.columns
    assert list(coded.columns.items()) == list(plain.columns.items())
    assert coded.column_names == plain.column_names == ["word", "tag"]
    index = data.draw(st.lists(st.integers(0, len(sents) - 1), max_size=8))
    a, b = plain.select(index), coded.select(index)
    assert a.columns == b.columns and a.sent_ptr.tolist() == b.sent_ptr.tolist()
    for k in ("word", "tag"):
        fa, fb = a.factorize(k), b.factorize(k)
        assert fa[0] == fb[0] and fa[1].tolist() == fb[1].tolist()
        assert isinstance(b.columns, ColumnMap) and b.columns.coded(k) is not None  # no lists made
    extra = [str(i) for i in range(coded.n_tokens)]
    c = coded.with_column("gaz", extra).with_column("tag", list(coded.columns["tag"]))
    assert c.column_names == ["word", "tag", "gaz"] and c.columns["gaz"] == extra
    assert c.columns == plain.with_column("gaz", extra).columns
    assert c.factorize("word")[1] is coded.factorize("word")[1]  # codes carried over, not redone


def test_expand_and_compact():
    distinct = ["a", "b", "c"]
    codes = np.array([2, 0, 2, 1], dtype=np.int64)
    got = expand(distinct, codes)
    assert got == ["c", "a", "c", "b"] and got[0] is got[2] is distinct[2]
    assert expand(distinct, codes[:0]) == []
    values, new = compact(distinct, np.array([1, 2, 1, 1]))
    assert values == ["b", "c"] and new.tolist() == [0, 1, 0, 0]
    assert compact(distinct, np.zeros(0, np.int64))[0] == []


def test_column_map_is_a_read_only_mapping():
    m = ColumnMap({"a": ["x"]}, {"b": (["y"], np.array([0, 0]))})
    assert list(m) == ["a", "b"] and len(m) == 2 and "b" in m and "c" not in m
    assert m["b"] == ["y", "y"] and m["b"] is m["b"] and m.get("c") is None
    with pytest.raises(TypeError):
        m["c"] = ["z"]  # type: ignore[index]


def test_read_gzip_file_equals_plain(write_file):
    text = conll_text(TOY, sep="\t", newline="\r\n")
    got = []
    for compiled in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            if not compiled:
                _no_compiled_reader(mp)
            for gz in (False, True):
                c, raw = read_conll(write_file("t.txt" + (".gz" if gz else ""), text, gz=gz),
                                    ["word", "pos", "chunk"], keep_lines=True)
                got.append((c.columns, c.sent_lines.tolist(), raw))
    assert got[0] == got[1] == got[2] == got[3]
    with gzip.open(write_file("u.txt.gz", text, gz=True), "rt") as fh:
        assert fh.read() == text.replace("\r\n", "\n")
