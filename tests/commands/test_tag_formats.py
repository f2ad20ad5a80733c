"""`structperc tag` and `structperc segment` as a user runs them (a real process): input and output
formats, every input line written back, output files replaced only when complete, and the API
accepting the token shapes the command accepts (issue #15, items 4, 5, 9, 10, 11, 12).
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from testkit import TOY, conll_text

from structperc import Tagger
from structperc.io.conll import read_conllu

conllu = pytest.importorskip("conllu", reason="the conllu package (test extra) checks CoNLL-U output")

_ROW = "{}\t{}\t{}\t{}\t{}\t_\t0\tdep\t_\t_"
#: Sentences of a small treebank: (id, form, lemma, upos, xpos); multi-word tokens and empty nodes
#: between the words.
_SENTS = [
    [("1", "He", "he", "PRON", "PRP"), ("2", "runs", "run", "VERB", "VBZ"), ("3", "home", "home", "ADV", "RB")],
    [("1", "The", "the", "DET", "DT"), ("2", "dog", "dog", "NOUN", "NN"), ("3", "runs", "run", "VERB", "VBZ")],
    [("1-2", "Vámonos", "_", "_", "_"), ("1", "Vamos", "ir", "VERB", "VB"), ("2", "nos", "nos", "PRON", "PRP"),
     ("2.1", "x", "x", "X", "XX"), ("3", "北京", "北京", "PROPN", "NNP")],
    [("1", "She", "she", "PRON", "PRP"), ("2", "saw", "see", "VERB", "VBD"), ("3", "the", "the", "DET", "DT"),
     ("4", "dog", "dog", "NOUN", "NN")],
]


def _conllu_text(sents=_SENTS) -> str:
    out = []
    for i, s in enumerate(sents):
        out.append(f"# sent_id = {i + 1}\n# text = {' '.join(t[1] for t in s if t[0].isdigit())}\n")
        out.append("".join(_ROW.format(*t) + "\n" for t in s) + "\n")
    return "".join(out)


def _command() -> list[str]:
    exe = shutil.which("structperc") or str(Path(sys.executable).parent / "structperc")
    return [exe] if Path(exe).exists() else [sys.executable, "-m", "structperc.cli"]


def run(*args, input: str | bytes | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    data = input.encode("utf-8") if isinstance(input, str) else input
    proc = subprocess.run(_command() + [str(a) for a in args], input=data, capture_output=True, timeout=120)
    stderr = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    if ok:
        assert proc.returncode == 0, stderr
    return proc


def error_line(proc: subprocess.CompletedProcess) -> str:
    """The one line a failed command prints (exit 1, no traceback)."""
    assert proc.returncode == 1
    lines = proc.stderr.decode("utf-8").strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), lines
    return lines[0]


@pytest.fixture(scope="module")
def chunker(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("chunker")
    X = [[t[:2] for t in s] for s in TOY]
    y = [[t[2] for t in s] for s in TOY]
    Tagger.train(X, y, columns=["word", "pos", "chunk"], template=["w[0]", "pos[0]", "y[-1]|y[0]|pos[0]"],
                 epochs=5).save(d / "model")
    return d / "model"


@pytest.fixture(scope="module")
def treebank(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("ud") / "train.conllu"
    p.write_text(_conllu_text(_SENTS * 3), encoding="utf-8")
    return p


@pytest.fixture(scope="module")
def upos_model(tmp_path_factory, treebank) -> Path:
    d = tmp_path_factory.mktemp("upos") / "model"
    Tagger(task="pos", epochs=5).fit(str(treebank)).save(d)
    return d


# ------------------------------------------------------------------------------ items 4 and 10
def test_every_input_line_comes_back_in_order(chunker, write_file):
    """Leading blank lines, -DOCSTART- lines and runs of blank lines stay where they were; a token
    with a no-break space or U+3000 is one column; each token line gets its tag appended."""
    text = ("\n\n-DOCSTART- -X- O\n\nThe DT\ncat NN\n\n\n\nNew\xa0York NNP\n北京\u3000欢迎 VBP\n\n"
            "-DOCSTART- -X- O\n\nA DT\ndog NN\n")
    p = write_file("in.txt", text)
    out = run("tag", "--model", chunker, p).stdout.decode("utf-8")
    expected_lines = text.split("\n")[:-1]                 # exactly the input's lines, nothing added
    got_lines = out.split("\n")[:-1]
    assert len(got_lines) == len(expected_lines)
    for got, line in zip(got_lines, expected_lines):
        if line and not line.startswith("-DOCSTART-"):
            assert got.startswith(line + " ") and len(got.split(" ")) == 3, (got, line)
        else:
            assert got == line
    assert run("tag", "--model", chunker, input=text).stdout.decode("utf-8") == out   # stdin: the same


# ------------------------------------------------------------------------------------ item 9
@pytest.mark.parametrize("existing", [False, True])
def test_tag_output_file_is_replaced_only_when_complete(chunker, write_file, tmp_path, existing):
    good = write_file("good.txt", conll_text([[t[:2] for t in s] for s in TOY]))
    bad = write_file("bad.txt", "a DT\nb\n")                             # line 2: one column
    out = tmp_path / "out.txt"
    if existing:
        out.write_text("keep me\n")
    proc = run("tag", "--model", chunker, "-o", out, good, bad, ok=False)
    assert error_line(proc).startswith(f"Error: {bad}:2: ")
    assert out.read_text() == "keep me\n" if existing else not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out")) == []  # no leftovers
    run("tag", "--model", chunker, "-o", out, good, good)
    expected = run("tag", "--model", chunker, good).stdout.decode("utf-8")
    assert out.read_text(encoding="utf-8") == expected * 2
    run("tag", "--model", chunker, "-o", good, good)                      # in place: read, then replaced
    assert Path(good).read_text(encoding="utf-8") == expected


def test_segment_output_file_is_replaced_only_when_complete(tmp_path, write_file):
    from structperc.segmenter import Segmenter

    model = tmp_path / "cws"
    Segmenter.train(["上海 体育局 召开 会议", "我 爱 北京"] * 3, epochs=3).save(model)
    good = write_file("raw.txt", "上海体育局召开会议\n我爱北京\n" * 1500)   # more than a batch: written early
    bad = write_file("bad.txt", "我爱北京\n".encode() + b"\xff\n")
    out = tmp_path / "seg.txt"
    proc = run("segment", "--model", model, "-o", out, good, bad, ok=False)
    assert error_line(proc).startswith(f"Error: {bad}:2: ")
    assert not out.exists() and [p.name for p in tmp_path.iterdir() if p.name.startswith(".seg")] == []
    run("segment", "--model", model, "-o", out, good)
    assert out.read_text(encoding="utf-8").count("\n") == 3000


# ------------------------------------------------------------------------------------ item 5
def test_eval_of_a_file_without_sentences_says_what_it_holds(chunker, write_file):
    p = write_file("blank.txt", "\n-DOCSTART- -X- O\n \n")
    proc = run("eval", "--model", chunker, p, ok=False)
    assert error_line(proc) == f"Error: {p}: no sentences: 3 lines, all blank or -DOCSTART-"
    assert run("tag", "--model", chunker, p).stdout == b"\n-DOCSTART- -X- O\n \n"


# ------------------------------------------------------------------------------------ item 11
def test_ud_model_tags_one_word_per_line_and_conllu_on_stdin(upos_model):
    """Both work on standard input, predict the same tags as the library, and CoNLL-U comes back as
    valid CoNLL-U: comments, multi-word tokens and empty nodes kept, the prediction in UPOS, every
    other column as it was."""
    source = _conllu_text()
    expected = Tagger.load(upos_model).predict_corpus(read_conllu(io.StringIO(source)))
    words = "".join("".join(t[1] + "\n" for t in s if t[0].isdigit()) + "\n" for s in _SENTS)
    tokens_out = run("tag", "--model", upos_model, input=words).stdout.decode("utf-8")
    rows = [line.split(" ") for line in tokens_out.split("\n") if line]
    assert [r[0] for r in rows] == [t[1] for s in _SENTS for t in s if t[0].isdigit()]
    assert [r[1] for r in rows] == expected
    out = run("tag", "--model", upos_model, input=source).stdout.decode("utf-8")
    parsed, gold = conllu.parse(out), conllu.parse(source)
    assert len(parsed) == len(gold) == 4
    for sent, ref in zip(parsed, gold):
        assert sent.metadata == ref.metadata and len(sent) == len(ref)
        for tok, g in zip(sent, ref):
            assert {k: v for k, v in tok.items() if k != "upos"} == {k: v for k, v in g.items() if k != "upos"}
    assert [t["upos"] for s in parsed for t in s if isinstance(t["id"], int)] == expected
    assert all(line.count("\t") == 9 for line in out.split("\n") if line and not line.startswith("#"))
    # explicitly, and the appended column on request
    assert run("tag", "--model", upos_model, "--input-format", "conllu", input=source).stdout.decode() == out
    old = run("tag", "--model", upos_model, "--output-format", "conll", input=source).stdout.decode()
    words = [line.split("\t") for line in old.split("\n") if line.split("\t")[0].isdigit()]
    assert {len(w) for w in words} == {11} and [w[-1] for w in words] == expected


def test_xpos_model_writes_the_xpos_column(treebank, tmp_path):
    model = tmp_path / "xpos"
    Tagger(task="pos", tag_column="xpos", epochs=5).fit(str(treebank)).save(model)
    out = run("tag", "--model", model, treebank).stdout.decode("utf-8")
    parsed, gold = conllu.parse(out), conllu.parse(treebank.read_text(encoding="utf-8"))
    assert [t["upos"] for s in parsed for t in s] == [t["upos"] for s in gold for t in s]
    assert [t["xpos"] for s in parsed for t in s if isinstance(t["id"], int)] == \
        Tagger.load(model).predict_corpus(read_conllu(str(treebank)))


def test_text_tokens_jsonl_and_conllu_outputs(upos_model):
    text = "He runs home\n\nThe\xa0dog runs\n"
    jl = run("tag", "--model", upos_model, "--input-format", "lines", "--output-format", "jsonl",
             input=text).stdout.decode("utf-8")
    records = [json.loads(line) for line in jl.splitlines()]
    assert [r["tokens"] for r in records] == [["He", "runs", "home"], [], ["The\xa0dog", "runs"]]
    assert [len(r["tags"]) for r in records] == [3, 0, 2]
    tags = [t for r in records for t in r["tags"]]
    conll_out = run("tag", "--model", upos_model, "--input-format", "lines", input=text).stdout.decode()
    assert conll_out == "".join(f"{w} {t}\n" for w, t in zip(["He", "runs", "home"], tags[:3])) + "\n\n" + \
        "".join(f"{w} {t}\n" for w, t in zip(["The\xa0dog", "runs"], tags[3:])) + "\n"
    tok_out = run("tag", "--model", upos_model, "--output-format", "tokens", input="He\nruns\n\nThe\n").stdout
    assert tok_out.decode().split("\n\n")[0].split("\n")[0].split("\t")[0] == "He"
    ud = run("tag", "--model", upos_model, "--input-format", "lines", "--output-format", "conllu",
             input=text).stdout.decode("utf-8")
    parsed = conllu.parse(ud)
    assert [[t["form"] for t in s] for s in parsed] == [["He", "runs", "home"], ["The\xa0dog", "runs"]]
    assert [t["upos"] for s in parsed for t in s] == tags


def test_a_model_that_needs_a_column_the_input_lacks_says_which(chunker, upos_model):
    line = error_line(run("tag", "--model", chunker, "--input-format", "tokens", input="The\ncat\n", ok=False))
    assert "reads column pos" in line and "one-token-per-line input lacks" in line
    line = error_line(run("tag", "--model", chunker, input="The\ncat\n", ok=False))   # auto: tokens
    assert "reads column pos" in line
    line = error_line(run("tag", "--model", chunker, "--output-format", "conllu", input="The DT\n", ok=False))
    assert "predicts 'chunk', which is not a CoNLL-U column" in line



def test_probabilities_in_conllu_are_refused_before_the_input_is_read(upos_model, tmp_path):
    """CoNLL-U output has no place for each tag's probability: `--marginals` on CoNLL-U input says so, and which
    output formats do, before a line is tagged (the input's bad last line is never reached)."""
    source = tmp_path / "in.conllu"
    source.write_text(_conllu_text() + "not a CoNLL-U line\n", encoding="utf-8")
    out = tmp_path / "out.conllu"
    line = error_line(run("tag", "--model", upos_model, "--marginals", source, "-o", out, ok=False))
    assert "not in conllu: give --output-format tokens, conll or jsonl" in line
    assert not out.exists()
    tokens = run("tag", "--model", upos_model, "--marginals", "--output-format", "tokens",
                 input=_conllu_text()).stdout.decode("utf-8")
    rows = [r.split("\t") for r in tokens.splitlines() if r]
    assert rows and all(len(r) == 3 and 0.0 <= float(r[2]) <= 1.0 for r in rows)

# ------------------------------------------------------------------------------------ item 12
def test_api_accepts_the_shapes_the_command_accepts(toy_tagger):
    """`structperc tag` reads lines with or without the trailing gold column: so does `tag()`, and
    `evaluate()` takes the gold tags from such tuples."""
    with_gold = [("He", "PRP", "B-NP"), ("ran", "VBD", "B-VP")]
    assert toy_tagger.tag(with_gold) == toy_tagger.tag([t[:2] for t in with_gold])
    sents = [list(s) for s in TOY]
    assert toy_tagger.predict(sents) == toy_tagger.predict([[t[:2] for t in s] for s in sents])
    assert toy_tagger.evaluate(sents)["accuracy"] == toy_tagger.evaluate(
        [[t[:2] for t in s] for s in sents], [[t[2] for t in s] for s in sents])["accuracy"]
    with pytest.raises(Exception, match="needs 2 values"):
        toy_tagger.tag([("He", "PRP", "B-NP", "extra")])


def test_api_accepts_conllu_rows(upos_model):
    tagger = Tagger.load(upos_model)
    rows = [tuple(_ROW.format(*t).split("\t")) for t in _SENTS[0]]
    assert len(rows[0]) == 10
    assert tagger.tag(rows) == tagger.tag([t[1] for t in _SENTS[0]])
