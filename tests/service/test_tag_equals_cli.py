"""`/tag` gives exactly what `structperc tag` gives for the same sentences: the tags (the column the CLI
appends) and, with marginals, each tag's confidence — for the chunker on the shipped CoNLL-2000 sample and
for the NER model (document-level features) on a CoNLL file sent as one request."""
from __future__ import annotations

import gzip
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from servicekit import LIMITS, NER, SAMPLE_TEST, start_server, stop_server

from structperc import commands

#: Limits of the second server, which takes the whole NER file in one request.
BIG_LIMITS = {"max_body_bytes": 1 << 20, "max_sentences": 1000, "max_tokens": 1000, "max_nbest": 20}


def read_conll(path) -> list[list[list[str]]]:
    """Sentences of a (gzipped) CoNLL file as lists of column-value lists."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        blocks = fh.read().strip().split("\n\n")
    return [[line.split() for line in block.splitlines() if line.strip()] for block in blocks if block.strip()]


def cli_tag(model: Path, path: Path, *options: str) -> str:
    """What ``structperc tag --model MODEL [OPTIONS] PATH`` prints (``python -m structperc.cli``)."""
    proc = subprocess.run([sys.executable, "-m", "structperc.cli", "tag", "--model", str(model), *options, str(path)],
                          capture_output=True, text=True, encoding="utf-8", check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def cli_columns(text: str) -> list[list[list[str]]]:
    """CoNLL output as sentences of token-line columns."""
    return [[line.split() for line in block.splitlines()] for block in text.strip().split("\n\n")]


def cli_jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def served(server, model: str, sentences: list, per_request: int, **options) -> list[dict]:
    """/tag answers for ``sentences`` sent ``per_request`` at a time."""
    out = []
    for i in range(0, len(sentences), per_request):
        status, answer = server.request("POST", "/tag", {"model": model, "sentences": sentences[i:i + per_request],
                                                         **options})
        assert status == 200, answer
        out.append(answer)
    return out


def assert_close(mine: list[list[float]], theirs: list[list[float]], tol: float) -> None:
    assert len(mine) == len(theirs)
    for a, b in zip(mine, theirs):
        assert len(a) == len(b)
        assert all(abs(x - y) <= tol + 1e-12 for x, y in zip(a, b)), (a, b)


def full_confidence(model_dir: Path, path: Path) -> list[list[float]]:
    """Each predicted tag's probability, unrounded, for the file the CLI tags: the model's own calls."""
    model = commands.load(model_dir)
    tags, dists = model.predict(str(path)), model.predict_marginals(str(path))
    return [[d[t] for t, d in zip(ts, ds)] for ts, ds in zip(tags, dists)]


def joined(answers: list[dict], key: str) -> list:
    return [x for a in answers for x in a[key]]


@pytest.fixture(scope="module")
def ner_file(tmp_path_factory, service_models) -> Path:
    """A CoNLL file (word, gold ner) of 120 sentences: the toy NER sentences and random sentences of their
    words, whose tags depend on the sentences around them (the NER model's document window)."""
    rng = random.Random(7)
    words = sorted({w for s in NER for w, _ in s} | {"Castaño", "Víctor", "de", "Lo"})
    sentences = [list(s) for s in NER[:4]]
    sentences += [[(rng.choice(words), "O") for _ in range(rng.randint(2, 9))] for _ in range(116)]
    rng.shuffle(sentences)
    path = tmp_path_factory.mktemp("ner-doc") / "doc.conll"
    path.write_text("".join("\n".join(f"{w} {t}" for w, t in s) + "\n\n" for s in sentences), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def big_server(service_models, tmp_path_factory):
    """A second server whose limits let the whole NER file through as one request."""
    srv = start_server(service_models, tmp_path_factory.mktemp("serve-big") / "serve.log", limits=BIG_LIMITS)
    yield srv
    stop_server(srv)


def test_chunk_tags_equal_the_cli(server, service_models):
    sentences = read_conll(SAMPLE_TEST)
    assert len(sentences) > LIMITS["max_sentences"]
    cli = cli_columns(cli_tag(service_models["chunk"], SAMPLE_TEST))
    assert len(cli) == len(sentences)
    for given, back in zip(sentences, cli):
        assert [row[:-1] for row in back] == given  # every input column kept, the tag appended
    cli_tags = [[row[-1] for row in s] for s in cli]

    tokens = [[[w, p] for w, p, _ in s] for s in sentences]
    # The test server takes at most LIMITS["max_sentences"] sentences a request, so the file goes in
    # several requests. The chunk model has no document-level features (a sentence's tags depend on
    # that sentence only), so splitting the file does not change its tags — checked in-process here.
    model = commands.load(service_models["chunk"])
    as_tuples = [[tuple(t) for t in s] for s in tokens]
    n = LIMITS["max_sentences"]
    pieces = [t for i in range(0, len(as_tuples), n) for t in model.predict(as_tuples[i:i + n])]
    assert model.predict(as_tuples) == pieces

    answers = served(server, "chunk", tokens, n)
    assert joined(answers, "tokens") == [[w for w, _, _ in s] for s in sentences]
    assert joined(answers, "tags") == cli_tags


def test_chunk_confidence_equals_the_cli(server, service_models):
    sentences = read_conll(SAMPLE_TEST)
    tokens = [[[w, p] for w, p, _ in s] for s in sentences]
    answers = served(server, "chunk", tokens, LIMITS["max_sentences"], marginals=True)
    tags, confidence = joined(answers, "tags"), joined(answers, "confidence")

    # The CLI prints confidences rounded (jsonl: 6 decimals, conll: 4), so its output agrees to that
    # precision; the values it rounds — the same model on the same file, at full precision, through the
    # library's public calls — agree to 1e-9.
    cli = cli_jsonl(cli_tag(service_models["chunk"], SAMPLE_TEST, "--marginals", "--output-format", "jsonl"))
    assert [s["tags"] for s in cli] == tags
    assert_close(confidence, [s["confidence"] for s in cli], 5e-7)
    assert_close(confidence, full_confidence(service_models["chunk"], SAMPLE_TEST), 1e-9)

    # the CoNLL output's confidence column (printed to 4 decimals) reads the same
    columns = cli_columns(cli_tag(service_models["chunk"], SAMPLE_TEST, "--marginals"))
    for mine, rows in zip(confidence, columns):
        assert len(mine) == len(rows)
        assert all(abs(a - float(row[-1])) <= 5e-5 + 1e-12 for a, row in zip(mine, rows))
    assert tags == [[row[-2] for row in rows] for rows in columns]


def test_ner_document_in_one_request_equals_the_cli(big_server, service_models, ner_file):
    sentences = read_conll(ner_file)
    words = [[w for w, _ in s] for s in sentences]
    assert len(words) > LIMITS["max_sentences"]  # hence the second server
    model = commands.load(service_models["ner"])
    # the point of one request: tagged in pieces (or sentence by sentence) the file gets other tags
    n = LIMITS["max_sentences"]
    whole = model.predict(words)
    assert whole != [t for i in range(0, len(words), n) for t in model.predict(words[i:i + n])]

    cli = cli_columns(cli_tag(service_models["ner"], ner_file))
    for given, back in zip(sentences, cli):
        assert [row[:-1] for row in back] == given
    cli_tags = [[row[-1] for row in s] for s in cli]
    assert cli_tags == whole

    (answer,) = served(big_server, "ner", words, len(words))
    assert answer["tokens"] == words
    assert answer["tags"] == cli_tags

    (answer,) = served(big_server, "ner", words, len(words), marginals=True)
    assert answer["tags"] == cli_tags
    cli = cli_jsonl(cli_tag(service_models["ner"], ner_file, "--marginals", "--output-format", "jsonl"))
    assert [s["tags"] for s in cli] == cli_tags
    assert_close(answer["confidence"], [s["confidence"] for s in cli], 5e-7)  # printed to 6 decimals
    assert_close(answer["confidence"], full_confidence(service_models["ner"], ner_file), 1e-9)

    # the same file as text (one sentence a line) is the same document
    status, by_text = big_server.request("POST", "/tag", {"model": "ner",
                                                          "text": "\n".join(" ".join(s) for s in words)})
    assert status == 200, by_text
    assert by_text["tags"] == cli_tags
