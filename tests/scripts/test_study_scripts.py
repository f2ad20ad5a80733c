"""The lever studies of `scripts/studies/`, run as a user runs them (a process, from the repository root)
on tiny corpora: each variant reaches the trainer. A study whose variants all ran as the default (as
`study_margin.py` once did, when the estimators' own ``margin``/``step``/``C`` overrode its wrapper)
reports a lever as "no effect" without having measured it. That the estimators' parameters reach the
trainer is tested in ``tests/train/test_margin.py``; here, that the studies pass them on."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
from testkit import CWS_TRAIN, REPO, SAMPLE_TEST, SAMPLE_TRAIN

STUDIES = REPO / "scripts" / "studies"


def run_study(name: str, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, str(STUDIES / name), *args], capture_output=True, text=True,
                          timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done


def rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """A ``--corpora-dir`` holding the first 600 sentences of the shipped CoNLL-2000 sample as chunk's
    train.txt, and a small segmented text as sxu's."""
    root = tmp_path_factory.mktemp("corpora")
    (root / "conll2000").mkdir()
    with gzip.open(SAMPLE_TRAIN, "rt", encoding="utf-8") as fh:
        sentences = fh.read().strip().split("\n\n")
    (root / "conll2000" / "train.txt").write_text("\n\n".join(sentences[:600]) + "\n\n", encoding="utf-8")
    with gzip.open(SAMPLE_TEST, "rt", encoding="utf-8") as fh:
        (root / "conll2000" / "test.txt").write_text(fh.read(), encoding="utf-8")
    (root / "sighan2008_sxu").mkdir()
    segmented = "".join(f"{line}\n" for line in CWS_TRAIN * 20)
    for name in ("train.txt", "test.txt"):
        (root / "sighan2008_sxu" / name).write_text(segmented, encoding="utf-8")
    return root


def test_margin_study_variants_train_differently(corpora, tmp_path):
    out = tmp_path / "margin.jsonl"
    run_study("study_margin.py", "--corpora-dir", str(corpora), "--corpora", "chunk", "--variants",
              "default,m1,pa0.1", "--epochs", "2", "--out", str(out))
    found = {r["variant"]: r for r in rows(out)}
    assert set(found) == {"default", "m1", "pa0.1"}
    default = found["default"]
    assert len(default["curve"]) == 2 and "test" not in default  # held-out figures only
    for variant in ("m1", "pa0.1"):
        assert (found[variant]["curve"], found[variant]["mistakes"]) != (default["curve"], default["mistakes"])
    again = tmp_path / "again.jsonl"  # and the same variant repeats
    run_study("study_margin.py", "--corpora-dir", str(corpora), "--corpora", "chunk", "--variants", "default",
              "--epochs", "2", "--out", str(again))
    repeated = rows(again)[0]
    assert (repeated["curve"], repeated["mistakes"]) == (default["curve"], default["mistakes"])


@pytest.mark.parametrize("corpus", ["chunk", "sxu"])
def test_order2_study_trains_second_order_transitions(corpora, tmp_path, corpus):
    """Both estimators: a `Segmenter` has no ``order`` parameter, and the study passes it on anyway."""
    out = tmp_path / "order2.jsonl"
    run_study("study_order2.py", "--corpora-dir", str(corpora), "--corpora", corpus, "--epochs", "2",
              "--out", str(out))
    found = {r["order"]: r for r in rows(out)}
    assert set(found) == {1, 2}
    assert (found[1]["trained_order"], found[2]["trained_order"]) == (1, 2)
    if corpus == "chunk":
        assert found[1]["mistakes"] != found[2]["mistakes"]


def test_unknown_corpus_is_a_usage_error(corpora):
    done = subprocess.run([sys.executable, str(STUDIES / "study_margin.py"), "--corpora-dir", str(corpora),
                           "--corpora", "nope"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2 and "unknown corpus nope" in done.stderr and "Traceback" not in done.stderr


def test_vote_study_reads_sentences_backwards_and_back(tmp_path, monkeypatch):
    """`study_vote.py --backward`'s members train on reversed sentences: their spans must map back exactly."""
    monkeypatch.syspath_prepend(str(STUDIES))
    from study_vote import reversed_file, reversed_tags

    tags = ["B-NP", "I-NP", "B-VP", "O", "B-NP", "B-NP", "I-NP"]
    assert reversed_tags(tags) == ["B-NP", "I-NP", "B-NP", "O", "B-VP", "B-NP", "I-NP"]
    assert reversed_tags(reversed_tags(tags)) == tags
    source = tmp_path / "a.txt"
    source.write_text("He PRP B-NP\nran VBD B-VP\nhome NN B-NP\n\nBig JJ B-NP\ndogs NNS I-NP\n\n", encoding="utf-8")
    target = reversed_file(source, tmp_path / "b.txt")
    assert target.read_text(encoding="utf-8").split("\n\n")[1] == "dogs NNS B-NP\nBig JJ I-NP"
    assert reversed_file(target, tmp_path / "c.txt").read_text(encoding="utf-8") == source.read_text(encoding="utf-8")


def test_vote_study_writes_ioe_tags_and_reads_them_back(tmp_path, monkeypatch):
    """`study_vote.py --ioe`'s members learn IOE1/IOE2 tags written from IOB2; read back, they are the same spans."""
    monkeypatch.syspath_prepend(str(STUDIES))
    from study_vote import from_ioe, ioe_file, to_ioe

    tags = ["B-NP", "I-NP", "B-NP", "B-VP", "I-VP", "O", "B-NP", "O", "B-PP", "B-NP", "I-NP"]
    assert to_ioe(tags, "ioe2") == ["I-NP", "E-NP", "E-NP", "I-VP", "E-VP", "O", "E-NP", "O", "E-PP", "I-NP",
                                    "E-NP"]
    # IOE1 marks an end only where a span of the same type follows at once
    assert to_ioe(tags, "ioe1") == ["I-NP", "E-NP", "I-NP", "I-VP", "I-VP", "O", "I-NP", "O", "I-PP", "I-NP",
                                    "I-NP"]
    assert from_ioe(to_ioe(tags, "ioe2")) == tags and from_ioe(to_ioe(tags, "ioe1")) == tags
    # an ill-formed I-X before O still ends its span, as conlleval reads it
    assert from_ioe(["I-NP", "O", "E-VP"]) == ["B-NP", "O", "B-VP"]
    source = tmp_path / "a.txt"
    source.write_text("Big JJ B-NP\ndogs NNS I-NP\nbark VBP B-VP\n\n", encoding="utf-8")
    assert ioe_file(source, tmp_path / "b.txt", "ioe2").read_text(encoding="utf-8") == \
        "Big JJ I-NP\ndogs NNS E-NP\nbark VBP E-VP\n\n"
