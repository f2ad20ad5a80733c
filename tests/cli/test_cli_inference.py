"""`structperc tag --marginals/--nbest/--forced-column`, `structperc calibrate` and the calibration line
of `structperc eval`: output shapes (the JSON lines validated against the shipped schema), the same
figures as the API, and one-line errors."""
from __future__ import annotations

import json

import jsonschema
import pytest
from testkit import REPO, assert_clean_error, first_sentences, run

from structperc import Tagger

SCHEMA = json.loads((REPO / "structperc" / "io" / "tagged.schema.json")
                    .read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory, sample_paths):
    train, _ = sample_paths
    d = tmp_path_factory.mktemp("cli-inference") / "chunker"
    r = run("train", "--train", train, "--task", "chunk", "--epochs", 3, "--dev-split", 0.1, "--model", d)
    assert r.exit_code == 0, r.output
    assert "temperature" in r.stderr and "held-out ECE" in r.stderr
    return d


@pytest.fixture(scope="module")
def unlabelled(sample_paths):
    return first_sentences(sample_paths[1], 20, drop_last_column=True)


def test_marginals_add_a_probability_column(calibrated, unlabelled):
    r = run("tag", "--model", calibrated, "--marginals", input=unlabelled)
    assert r.exit_code == 0, r.output
    rows = [line.split() for line in r.stdout.splitlines() if line]
    assert all(len(row) == 4 for row in rows)
    probs = [float(row[3]) for row in rows]
    assert all(0 < p <= 1 for p in probs) and min(probs) < 0.99
    plain = run("tag", "--model", calibrated, input=unlabelled).stdout.splitlines()
    assert [line.rsplit(" ", 1)[0] for line in r.stdout.splitlines()] == plain


def test_nbest_jsonl_follows_the_schema_and_the_api(calibrated, unlabelled):
    r = run("tag", "--model", calibrated, "--nbest", 3, "--marginals", input=unlabelled)
    assert r.exit_code == 0, r.output
    objects = [json.loads(line) for line in r.stdout.splitlines()]
    for o in objects:
        jsonschema.validate(o, SCHEMA)
        assert o["nbest"][0]["tags"] == o["tags"] and 1 <= len(o["nbest"]) <= 3
    tagger = Tagger.load(calibrated)
    sents = [list(zip(o["tokens"], [line.split()[1] for line in block.splitlines()]))
             for o, block in zip(objects, unlabelled.strip().split("\n\n"))]
    api = tagger.predict_nbest(sents, k=3)
    assert [[(p["tags"], pytest.approx(p["probability"], abs=1e-6)) for p in o["nbest"]] for o in objects] == api


def test_nbest_probabilities_of_a_long_sentence_keep_their_digits(calibrated, unlabelled):
    """A path's probability falls geometrically with the sentence's length: the 20 sentences run together
    (about 500 tokens) have best paths far below 1e-6, which six decimal places printed as 0.0."""
    joined = "\n".join(line for line in unlabelled.splitlines() if line) + "\n"
    r = run("tag", "--model", calibrated, "--nbest", 2, input=joined)
    assert r.exit_code == 0, r.output
    (o,) = [json.loads(line) for line in r.stdout.splitlines()]
    tagger = Tagger.load(calibrated)
    sent = [tuple(line.split()) for line in joined.splitlines()]
    api = [p for _, p in tagger.predict_nbest([sent], k=2)[0]]
    assert 0 < api[0] < 1e-6
    assert [p["probability"] for p in o["nbest"]] == [pytest.approx(p, rel=1e-5) for p in api]


def test_nbest_needs_json_lines(calibrated, unlabelled):
    assert_clean_error(run("tag", "--model", calibrated, "--nbest", 2, "--output-format", "conll",
                           input=unlabelled), "the k best paths are written as JSON lines")


def test_forced_column_keeps_the_known_tags(calibrated, sample_paths):
    gold = first_sentences(sample_paths[1], 20)
    lines = gold.splitlines()
    # keep every third gold chunk tag, hide the rest
    partly = "\n".join(" ".join(line.split()[:2] + [line.split()[2] if i % 3 == 0 else "?"]) if line else ""
                       for i, line in enumerate(lines)) + "\n"
    r = run("tag", "--model", calibrated, "--forced-column", 3, input=partly)
    assert r.exit_code == 0, r.output
    out = [line.split() for line in r.stdout.splitlines() if line]
    kept = [row for i, row in enumerate(out) if row[2] != "?"]
    assert kept and all(row[3] == row[2] for row in kept)
    by_name = run("tag", "--model", calibrated, "--forced-column", "chunk", input=partly)
    assert by_name.stdout == r.stdout


def test_forced_column_errors(calibrated, unlabelled):
    assert_clean_error(run("tag", "--model", calibrated, "--forced-column", 9, input=unlabelled),
                       "column 9: the conll columns are")
    assert_clean_error(run("tag", "--model", calibrated, "--forced-column", "chunk", "--input-format", "lines",
                           input="He reckons .\n"), "a column of known tags needs CoNLL or CoNLL-U input")
    bad = "He PRP B-NOPE\nreckons VBZ ?\n\n"
    assert_clean_error(run("tag", "--model", calibrated, "--forced-column", 3, input=bad),
                       "", "'B-NOPE' is not one of this model's tags")


def test_calibrate_command_and_eval_line(calibrated, sample_paths, tmp_path):
    out = tmp_path / "recalibrated"
    plot = tmp_path / "reliability.png"
    r = run("calibrate", "--model", calibrated, "--out", out, "--plot", plot, sample_paths[1])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("temperature ") and "ECE" in r.stdout
    # "before" is at temperature 1, whatever the model had: said so (a second run printed the same "before")
    assert r.stdout.count("at temperature 1 ->") == 2
    assert plot.stat().st_size > 1000
    tau = Tagger.load(out).calibration_["temperature"]
    assert f"{tau:.4g}" in r.stdout
    e = run("eval", "--model", out, sample_paths[1])
    assert e.exit_code == 0 and "calibration ECE" in e.stdout and f"temperature {tau:.4g}" in e.stdout
    assert_clean_error(run("calibrate", "--model", calibrated, tmp_path / "missing.txt"), "")
