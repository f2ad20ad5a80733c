"""Tagging and segmentation on a Dask `LocalCluster` (2 worker processes, one for the module): the output
of `structperc.dask.tagging` equals `structperc.commands.streaming`'s byte for byte, whatever the cut; the
model is loaded once per worker; errors come back as the one line `structperc tag` gives."""
from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from testkit import CORPORA, CWS_TRAIN, DOC_TRAIN, SAMPLE_TEST, SAMPLE_TRAIN

from structperc import Segmenter, Tagger
from structperc.cli import main
from structperc.commands import streaming
from structperc.errors import InputError
from structperc.features.gazetteer import DOC_WINDOW, document_gap

pytest.importorskip("distributed", reason="the dask extra is not installed")
from structperc.dask import tagging, worker  # noqa: E402
from structperc.dask.client import connect  # noqa: E402
from structperc.io import parts as cluster_parts  # noqa: E402
from structperc.io.parts import file_parts  # noqa: E402

FULL_TEST = CORPORA / "conll2000" / "test.txt"



@pytest.fixture(scope="module")
def client():
    with connect("local:2") as c:
        yield c


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dask")


@pytest.fixture(scope="module")
def chunk_model(root) -> Path:
    Tagger(task="chunk", epochs=2, seed=0).fit(str(SAMPLE_TRAIN)).save(root / "chunk")
    return root / "chunk"


@pytest.fixture(scope="module")
def sample(root) -> Path:
    """The shipped test sample, decompressed (a gzip file cannot be cut into byte ranges)."""
    path = root / "sample.txt"
    path.write_bytes(gzip.decompress(SAMPLE_TEST.read_bytes()))
    return path


@pytest.fixture(scope="module")
def doc_model(root) -> Path:
    """A model that reads only the `doc` column (and the gazetteer): its tags depend on sentences 20 away."""
    words = [[w for w, _ in s] for s in DOC_TRAIN]
    tags = [[t for _, t in s] for s in DOC_TRAIN]
    Tagger(task="ner", columns=["word", "ner"], template=["?gaz[0]", "doc[0]", "bias"], epochs=5,
           seed=0).fit(words, tags).save(root / "doc")
    return root / "doc"


def plain_tag(model, inputs, **options) -> bytes:
    out = io.StringIO()
    streaming.tag_files(model, inputs, out, **options)
    return out.getvalue().encode("utf-8")


def dask_tag(client, model, inputs, **options) -> bytes:
    out = io.StringIO()
    tagging.tag_files(model, inputs, out, dask=client, **options)
    return out.getvalue().encode("utf-8")


@pytest.mark.parametrize("options", [{}, {"marginals": True}, {"output_format": "jsonl", "nbest": 2},
                                     {"output_format": "tokens", "marginals": True}])
def test_sample_in_four_parts_equals_structperc_tag(client, chunk_model, sample, options):
    parts = file_parts(str(sample), False, 4)
    assert len(parts) == 4 and parts[0].start == 0 and parts[-1].end == sample.stat().st_size
    assert all(sample.read_bytes()[p.start - 2:p.start] == b"\n\n" for p in parts[1:])  # cut at blank lines
    assert dask_tag(client, chunk_model, [str(sample)], parts=4, **options) == \
        plain_tag(chunk_model, [str(sample)], **options)


def test_cli_dask_local_equals_structperc_tag(chunk_model, sample, tmp_path):
    runner = CliRunner()
    plain = runner.invoke(main, ["tag", "--model", str(chunk_model), "-o", str(tmp_path / "plain"), str(sample)])
    dask = runner.invoke(main, ["tag", "--model", str(chunk_model), "--dask", "local:2", "-o",
                                str(tmp_path / "dask"), str(sample)])
    assert plain.exit_code == 0 and dask.exit_code == 0, dask.output
    assert (tmp_path / "dask").read_bytes() == (tmp_path / "plain").read_bytes()
    piped = runner.invoke(main, ["tag", "--model", str(chunk_model), "--dask", "local:2"], input=sample.read_bytes())
    assert piped.exit_code == 0 and piped.stdout_bytes == (tmp_path / "plain").read_bytes()


@pytest.mark.corpus
def test_full_conll2000_test_in_four_parts_equals_structperc_tag(client, chunk_model):
    if not FULL_TEST.exists():
        pytest.skip(f"corpus absent: {FULL_TEST}")
    assert len(file_parts(str(FULL_TEST), False, 4)) == 4
    assert dask_tag(client, chunk_model, [str(FULL_TEST)], parts=4) == plain_tag(chunk_model, [str(FULL_TEST)])


def test_files_gzip_and_streams_in_order(client, chunk_model, sample):
    """Several inputs come back in order; a .gz file is one part; a stream is read here and sent in parts
    (small ones here: 16 KiB), its error lines counted across them."""
    inputs = [str(SAMPLE_TEST), str(sample)]
    assert dask_tag(client, chunk_model, inputs, parts=3) == plain_tag(chunk_model, inputs)
    data = sample.read_bytes()
    crlf = sample.with_name("crlf.txt")
    crlf.write_bytes(data.replace(b"\n", b"\r\n"))
    assert dask_tag(client, chunk_model, [str(crlf)], parts=5) == plain_tag(chunk_model, [str(crlf)])
    stream = io.BytesIO(data)
    stream.name = "<stdin>"
    out = io.StringIO()
    tagging.tag_files(chunk_model, [stream], out, dask=client, part_bytes=16 << 10)
    assert out.getvalue().encode() == plain_tag(chunk_model, [str(sample)])
    lines = data.split(b"\n")
    lines[3000] = b"too many columns here"
    bad = io.BytesIO(b"\n".join(lines))
    bad.name = "<stdin>"
    with pytest.raises(InputError) as err:
        tagging.tag_files(chunk_model, [bad], io.StringIO(), dask=client, part_bytes=16 << 10)
    assert err.value.path == "<stdin>" and err.value.line == 3001


def doc_file(path: Path) -> Path:
    """Sentences where a name is the last word of a name 8 sentences before it shows up alone: cut
    between the two, a part without its neighbours would lose that."""
    sents = []
    for i in range(40):
        name = "Zor" + "abcdefghijklmnopqrstuvwxyz"[i % 26] + "ano" * (1 + i // 26)
        sents += [["Víctor", name, "habló"]] + [["ya", "luego", "vino"]] * 7 + [["Ayer", name, "vino"]] \
            + [["ya", "luego", "vino"]] * 2
    path.write_text("".join("\n".join(s) + "\n\n" for s in sents), encoding="utf-8")
    return path


def test_document_features_see_context_across_parts(client, doc_model, root):
    assert document_gap(Tagger.load(doc_model).features_.columns) == DOC_WINDOW
    path = doc_file(root / "doc.txt")
    single = plain_tag(doc_model, [str(path)])
    parts = file_parts(str(path), False, 6)
    assert len(parts) == 6
    # without context the parts are tagged otherwise: the test can tell
    alone = b""
    for k, p in enumerate(parts):
        piece = root / f"doc-part{k}.txt"
        piece.write_bytes(path.read_bytes()[p.start:p.end])
        alone += plain_tag(doc_model, [str(piece)])
    assert alone != single
    assert dask_tag(client, doc_model, [str(path)], parts=6) == single
    # context for a small part reaches past its neighbour (parts of ~10 sentences, a window of 20)
    assert dask_tag(client, doc_model, [str(path)], parts=40) == single
    stream = io.BytesIO(path.read_bytes())
    stream.name = "<stdin>"
    out = io.StringIO()
    tagging.tag_files(doc_model, [stream], out, dask=client, part_bytes=1 << 10)
    assert out.getvalue().encode() == single


def test_segment_equals_structperc_segment(client, root):
    seg = Segmenter.train(CWS_TRAIN, epochs=10, seed=0)
    seg.save(root / "cws")
    lines = ["".join(s.split()) for s in CWS_TRAIN]
    text = "".join(f"{lines[i % len(lines)]}{lines[(i * 7) % len(lines)]}\n" + ("\n" if i % 5 == 0 else "")
                   for i in range(400))
    path = root / "sxu.txt"
    path.write_text(text, encoding="utf-8")
    plain, dask = io.StringIO(), io.StringIO()
    streaming.segment_files(root / "cws", [str(path)], plain, sep="  ")
    tagging.segment_files(root / "cws", [str(path)], dask, dask=client, sep="  ", parts=5)
    assert dask.getvalue() == plain.getvalue() and plain.getvalue().count("\n") == text.count("\n")
    stream, piped = io.BytesIO(text.encode("utf-8")), io.StringIO()
    tagging.segment_files(root / "cws", [stream], piped, dask=client, sep="  ", part_bytes=2 << 10)
    assert piped.getvalue() == plain.getvalue()


def test_bag_and_dataframe_equal_predict_in_order(client, chunk_model, doc_model, sample, root):
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd
    import pyarrow as pa

    tagger = Tagger.load(chunk_model)
    sents = [[(w, p) for w, p, _ in (line.split() for line in block.splitlines())]
             for block in sample.read_text(encoding="utf-8").strip().split("\n\n")[:300]]
    expected = tagger.predict(sents)
    bag = tagging.tag_bag(db.from_sequence(sents, npartitions=7), chunk_model)
    assert client.compute(bag).result() == expected
    assert client.compute(tagging.tag_bag(db.from_sequence(sents, npartitions=3), tagger)).result() == expected

    doc = Tagger.load(doc_model)
    words = [block.split("\n") for block in doc_file(root / "frame.txt").read_text(encoding="utf-8").split("\n\n")
             if block]
    lists = pd.ArrowDtype(pa.list_(pa.string()))
    frame = pd.DataFrame({"id": range(len(words)), "tokens": pd.Series(words, dtype=lists)})
    tagged = client.compute(tagging.tag_dataframe(dd.from_pandas(frame, npartitions=4), doc_model)).result()
    assert list(tagged["id"]) == list(range(len(words)))
    # a partition is one corpus: the doc window spans the partition, as predict on the same sentences
    bounds = [0, *[len(p) for p in dd.from_pandas(frame, npartitions=4).partitions]]
    ends = [sum(bounds[:k + 1]) for k in range(1, len(bounds))]
    expected_doc = [t for a, b in zip([0, *ends[:-1]], ends) for t in doc.predict(words[a:b])]
    assert [list(t) for t in tagged["tags"]] == expected_doc and "B-PER" in str(expected_doc)
    # token lists turned into strings by Dask's convert-string are refused, not tagged character by character
    with pytest.raises(InputError, match="not token lists"):
        tagging.tag_dataframe(dd.from_pandas(pd.DataFrame({"tokens": words}), npartitions=2), doc_model)


def test_model_is_loaded_once_per_worker(client, chunk_model, sample):
    dask_tag(client, chunk_model, [str(sample)], parts=12)
    _, digest = worker.model_bytes(chunk_model)
    counts = [c.get(digest, 0) for c in client.run(worker.load_counts).values()]
    assert len(counts) == 2 and max(counts) == 1 and sum(counts) >= 1


def test_malformed_line_gives_the_one_line_error_of_structperc_tag(client, chunk_model, sample, root):
    lines = sample.read_bytes().split(b"\n")
    lines[9000] = b"Confidence NN B-NP extra columns"
    bad = root / "bad.txt"
    bad.write_bytes(b"\n".join(lines))
    with pytest.raises(InputError) as plain:
        plain_tag(chunk_model, [str(bad)])
    with pytest.raises(InputError) as dask:
        dask_tag(client, chunk_model, [str(bad)], parts=4)
    assert str(dask.value) == str(plain.value) and dask.value.line == 9001 and dask.value.path == str(bad)
    assert "\n" not in str(dask.value)
    runner = CliRunner()
    result = runner.invoke(main, ["tag", "--model", str(chunk_model), "--dask", "local:1", str(bad)])
    assert result.exit_code == 1 and f"{bad}:9001:" in result.output and "Traceback" not in result.output


def test_plain_text_read_as_columns_names_the_other_formats_as_structperc_tag(client, chunk_model, root):
    """A guessed format's column error says which formats the input may be, on Dask as in `structperc tag`."""
    text = root / "plain.txt"
    text.write_text("He reckons the current account deficit will narrow .\n", encoding="utf-8")
    with pytest.raises(InputError) as plain:
        plain_tag(chunk_model, [str(text)])
    with pytest.raises(InputError) as dask:
        dask_tag(client, chunk_model, [str(text)], parts=2)
    assert str(dask.value) == str(plain.value)
    assert "--input-format text" in str(dask.value) and "--input-format tokens" in str(dask.value)


def test_raw_text_is_refused_with_dask_in_one_line(chunk_model, sample):
    """``--input-format text`` with ``--dask`` was refused as an "unknown input format 'text'", a format `tag`
    lists; it is not available there, and the message says so (before any cluster is started)."""
    with pytest.raises(InputError, match="--input-format text is not available with --dask"):
        tagging.tag_files(chunk_model, [str(sample)], io.StringIO(), dask="local:1", input_format="text")


def test_a_cluster_without_workers_is_named_in_one_line(chunk_model, sample):
    """Dask's own "No valid workers found" named neither the cluster nor what was to be done, as training did."""
    import distributed

    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as empty:
        with pytest.raises(InputError, match=f"the Dask cluster at {cluster.scheduler_address} has no worker to "
                                             "work on"):
            tagging.tag_files(chunk_model, [str(sample)], io.StringIO(), dask=empty)


def test_unreachable_scheduler_is_a_one_line_error(chunk_model, sample):
    with pytest.raises(InputError, match="cannot reach a Dask scheduler at tcp://127.0.0.1:9") as err:
        tagging.tag_files(chunk_model, [str(sample)], io.StringIO(), dask="tcp://127.0.0.1:9")
    assert "\n" not in str(err.value)
    with pytest.raises(InputError, match="local:N"):
        tagging.tag_files(chunk_model, [str(sample)], io.StringIO(), dask="local")
    with pytest.raises(InputError, match="local:N"):
        tagging.tag_files(chunk_model, [str(sample)], io.StringIO(), dask="local:x")
    # a scheduler on this machine, by name: an address, not a misspelt local:N
    with pytest.raises(InputError, match="cannot reach a Dask scheduler at localhost:9 "):
        tagging.tag_files(chunk_model, [str(sample)], io.StringIO(), dask="localhost:9")


def test_without_dask_installed_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(InputError, match=r'pip install "structperc\[dask\]"'):
        with connect("local:1"):
            pass


def test_cuts_and_context_with_small_scan_windows(doc_model, root, monkeypatch):
    """In this process, with 64-byte scans: cut points found across scan windows, and context that must
    widen its window many times, still give the single pass's output."""
    monkeypatch.setattr(cluster_parts, "_SCAN", 64)
    path = doc_file(root / "scan.txt")
    blob, digest = worker.model_bytes(doc_model)
    options = dict(input_format="auto", output_format=None, marginals=False, nbest=0, forced_column=None,
                   unknown="?", sentences=20_000)
    items = list(tagging._tag_items(Tagger.load(doc_model), [str(path)], options, 30, 1, tagging.PART_BYTES))
    assert len(items) == 30
    assert "".join(tagging._tag_part(blob, digest, part, job) for part, job in items).encode() == \
        plain_tag(doc_model, [str(path)])
