"""Training on a Dask `LocalCluster` whose workers read the training input themselves
(`structperc.dask.parts`, ``structperc train --dask … --read-on-workers``):

* the index the reduces build is the one built from the whole file, and the model is, bit for bit, the
  one iterative parameter mixing trains on one machine from shards cut at the same sentences;
* several files are one part each, their sentences numbered across the files in order;
* a shard lost with its worker (SIGKILL) is rebuilt from its part, and the weights are those of a run
  without the loss;
* what needs the whole corpus in one place (learnt dictionaries, ``--dev-split``, partial labels) is
  refused with one line; the CLI trains, saves and tags with it.
"""
from __future__ import annotations

import gzip

import numpy as np
import pytest
from click.testing import CliRunner
from testkit import SAMPLE_TRAIN

from structperc import Tagger
from structperc.errors import InputError
from structperc.features.instances import training_instances
from structperc.features.task import get_task, masks
from structperc.features.templates import resolve_template
from structperc.io.conll import read_corpus
from structperc.io.parts import file_parts
from structperc.model.state_weights import all_pairs
from structperc.train.mixing import Shard, train_mixed
from structperc.train.perceptron import PerceptronState, epoch_inputs

pytest.importorskip("distributed", reason="the dask extra is not installed")
from structperc.commands import fit_on_workers  # noqa: E402
from structperc.dask.client import connect  # noqa: E402
from structperc.dask.parts import training_parts  # noqa: E402

SENTENCES = 300
TEMPLATE = resolve_template("crfsuite") + ["y[-1]|y[0]|pos[0]"]


@pytest.fixture(scope="module")
def client():
    with connect("local:2") as c:
        yield c


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    text = gzip.decompress(SAMPLE_TRAIN.read_bytes()).decode("utf-8")
    return text.strip().split("\n\n")[:SENTENCES]


def _write(path, sents):
    path.write_text("\n\n".join(sents) + "\n\n", encoding="utf-8")
    return path


def _local_model(path, bounds, epochs, seed=0):
    """What `train_mixed` trains on one machine from the whole file, shards cut at sentence ``bounds``."""
    task = get_task("chunk")
    corpus = read_corpus(str(path), ["word", "pos", "chunk"])
    index, _, label_set, data = training_instances(corpus, task, TEMPLATE, 1, "?")
    labels = label_set.labels
    mask, end = masks(labels, task)
    state = PerceptronState.zeros(index.n_state_attributes, index.n_transition_attributes, len(labels),
                                  all_pairs(index.n_state_attributes, len(labels)))
    inputs = epoch_inputs(data.feats, data.y, state, mask, end)
    shards = [Shard(k, int(a), int(b), inputs.n_sent, inputs.select(int(a), int(b)), seed)
              for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
    weights, _ = train_mixed(data.feats, data.y, state, mask=mask, end=end, shards=shards, epochs=epochs, seed=seed,
                             processes=False)
    return index, labels, weights


def _sentence_bounds(parts) -> np.ndarray:
    counts = [len(read_corpus(p.source(), ["word", "pos", "chunk"])) for p in parts]
    return np.concatenate([[0], np.cumsum(counts)])


def test_workers_reading_their_parts_train_the_local_model(client, sentences, tmp_path):
    path = _write(tmp_path / "train.txt", sentences)
    parts = training_parts([str(path)], 3)
    assert len(parts) == 3 and parts[0].start == 0 and parts[-1].end == path.stat().st_size
    tagger = fit_on_workers(Tagger(task="chunk", columns=["word", "pos", "chunk"], template=TEMPLATE, epochs=3),
                            [path], dask=client, workers=3)
    index, labels, weights = _local_model(path, _sentence_bounds(parts), 3)
    assert tagger.labels_ == labels
    assert tagger.features_.state_dict()[0] == index.state_dict()[0]
    assert all(np.array_equal(a, b) for a, b in zip(tagger.features_.keys, index.keys))
    got = tagger.weights_
    assert np.array_equal(got.trans, weights.trans) and np.array_equal(got.cond, weights.cond)
    assert np.array_equal(got.sparse.values, weights.sparse.values)
    assert tagger.provenance_["n_sentences"] == SENTENCES and tagger.provenance_["read_on_workers"]
    assert [r.n_sentences for r in tagger.history_] == [SENTENCES] * 3


def test_several_files_are_one_part_each_numbered_in_order(client, sentences, tmp_path):
    a = _write(tmp_path / "a.txt", sentences[:120])
    b = _write(tmp_path / "b.txt", sentences[120:])
    whole = _write(tmp_path / "whole.txt", sentences)
    assert len(training_parts([str(a), str(b)], 7)) == 2
    tagger = fit_on_workers(Tagger(task="chunk", columns=["word", "pos", "chunk"], template=TEMPLATE, epochs=2),
                            [a, b], dask=client, workers=2)
    _, _, weights = _local_model(whole, np.array([0, 120, SENTENCES]), 2)
    assert np.array_equal(tagger.weights_.sparse.values, weights.sparse.values)
    assert [s["name"] for s in tagger.provenance_["sources"]] == ["a.txt", "b.txt"]


def test_a_part_cut_lands_on_a_sentence_break(sentences, tmp_path):
    path = _write(tmp_path / "train.txt", sentences)
    parts = file_parts(str(path), False, 5, part_bytes=1 << 62)
    data = path.read_bytes()
    for p in parts[1:]:
        assert data[p.start - 2:p.start] == b"\n\n"
    assert sum(len(read_corpus(p.source(), ["word", "pos", "chunk"])) for p in parts) == SENTENCES


@pytest.mark.parametrize("kwargs, message", [
    ({"task": "pos", "columns": ["word", "pos", "chunk"], "tag_column": "pos"}, "learnt dictionary columns"),
    ({"task": "chunk", "columns": ["word", "pos", "chunk"], "dev_split": 0.1}, "--dev-split"),
    ({"task": "chunk", "columns": ["word", "pos", "chunk"], "tag_dictionary": True}, "--tag-dictionary"),
])
def test_what_needs_the_whole_corpus_is_refused(client, sentences, tmp_path, kwargs, message):
    path = _write(tmp_path / "train.txt", sentences[:40])
    with pytest.raises(InputError, match=message):
        fit_on_workers(Tagger(epochs=1, **kwargs), [path], dask=client, workers=2)


def test_partial_labels_are_refused_by_the_worker(client, sentences, tmp_path):
    text = "\n\n".join(sentences[:40]).replace(" B-NP\n", " ?\n", 1)
    path = tmp_path / "partial.txt"
    path.write_text(text + "\n\n", encoding="utf-8")
    with pytest.raises(InputError, match="partial labels"):
        fit_on_workers(Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=1), [path], dask=client,
                       workers=2)


def test_bad_input_in_a_later_part_names_its_line_in_the_file(client, sentences, tmp_path):
    """The worker reading the second part reported the line's number within its part, not the file, and Dask
    logged the worker's traceback beside the one-line error."""
    lines = "\n\n".join(sentences[:80]).split("\n")
    at = len(lines) - 5                       # in the second of two parts
    lines[at] = "foo bar"                     # two columns where three are
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        fit_on_workers(Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=1), [path], dask=client,
                       workers=2)
    assert err.value.path == str(path) and err.value.line == at + 1, str(err.value)


def test_cli_trains_with_the_workers_reading(sentences, tmp_path):
    from structperc.cli import main

    path = _write(tmp_path / "train.txt", sentences[:150])
    model = tmp_path / "model"
    result = CliRunner().invoke(main, ["train", "--train", str(path), "--model", str(model), "--workers", "2",
                                       "--dask", "local:2", "--read-on-workers", "--epochs", "2", "-q"])
    assert result.exit_code == 0, result.output
    tagged = CliRunner().invoke(main, ["tag", "--model", str(model), str(path)])
    assert tagged.exit_code == 0 and len(tagged.output.strip().split("\n\n")) == 150
    refused = CliRunner().invoke(main, ["train", "--train", str(path), "--model", str(tmp_path / "m2"),
                                        "--read-on-workers"])
    assert refused.exit_code == 1 and "--read-on-workers trains a new tagger on a Dask cluster" in refused.output


def _parts_run(client, path, epochs, kill_after=None):
    """Epochs of the shards the workers read and featurized (`featurize_on_workers` + `DaskShards`);
    with ``kill_after``, the one worker holding shard 1 is killed after that epoch."""
    import os
    import signal
    import time

    from structperc.dask.parts import featurize_on_workers
    from structperc.dask.training import DaskShards

    task = get_task("chunk")
    data = featurize_on_workers(client, training_parts([str(path)], 2), task, TEMPLATE, 1, 0, "?",
                                lambda labels: masks(labels, task))
    state = PerceptronState.zeros(data.index.n_state_attributes, data.index.n_transition_attributes,
                                  len(data.labels), all_pairs(data.index.n_state_attributes, len(data.labels)))
    runner = DaskShards(data.shards, state, client, timeout=60.0)
    story = None
    with runner:
        for epoch in range(1, epochs + 1):
            state.c = max(r.c for r in runner.epoch(epoch, "uniform"))
            if epoch == kill_after:
                shard = data.shards[1]
                client.amm.run_once()  # down to one replica (the run pauses the memory manager)
                deadline = time.monotonic() + 60
                while len(client.who_has([shard])[shard.key]) != 1:
                    assert time.monotonic() < deadline, "the extra replicas were never dropped"
                    time.sleep(0.05)
                [holder] = client.who_has([shard])[shard.key]
                os.kill(client.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)
        if kill_after is not None:
            key = data.shards[1].key
            story = [e for e in client.story(key) if e[1] == key]
    return state, story


def test_a_shard_lost_with_its_worker_is_rebuilt(client, sentences, tmp_path):
    """After epoch 1 the one worker holding shard 1 (read and featurized there) is killed: Dask
    featurizes that part again elsewhere (reading it again if its corpus was lost too), and the run is
    the one without the loss."""
    path = _write(tmp_path / "train.txt", sentences)
    clean, _ = _parts_run(client, path, 3)
    lost, story = _parts_run(client, path, 3, kill_after=1)
    computed = [e for e in story if e[0] == "scheduler" and tuple(e[2:4]) == ("processing", "memory")]
    assert len(computed) == 2  # made once, and once more after the loss
    for name in ("W", "U", "Wt", "Ut", "Wc", "Uc"):
        assert getattr(clean, name).tobytes() == getattr(lost, name).tobytes(), name
    assert clean.c == lost.c
    client.wait_for_workers(2, timeout=60)


def test_checkpoints_resume_to_the_straight_run(client, sentences, tmp_path):
    path = _write(tmp_path / "train.txt", sentences[:120])

    def tagger(epochs):
        return Tagger(task="chunk", columns=["word", "pos", "chunk"], template=TEMPLATE, epochs=epochs)

    straight = fit_on_workers(tagger(3), [path], dask=client, workers=2)
    fit_on_workers(tagger(2), [path], dask=client, workers=2, checkpoint_dir=tmp_path / "ck")
    resumed = fit_on_workers(tagger(3), [path], dask=client, workers=2, resume=tmp_path / "ck")
    assert resumed.weights_.sparse.values.tobytes() == straight.weights_.sparse.values.tobytes()
    assert resumed.weights_.trans.tobytes() == straight.weights_.trans.tobytes()
    with pytest.raises(InputError):  # other data: the checkpoint's fingerprint refuses it
        fit_on_workers(tagger(3), [_write(tmp_path / "other.txt", sentences[120:200])], dask=client, workers=2,
                       resume=tmp_path / "ck")
