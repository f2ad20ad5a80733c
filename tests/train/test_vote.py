"""Voting models (``vote``, ``--vote``; `structperc.labels.voting`): each member is the tagger its encoding
trains alone, tagging votes their spans, the model file carries every member (and refuses a damaged one),
and the options that cannot go with a vote are refused in one line."""
from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from testkit import DOC_TRAIN, first_sentences, run

from structperc import Tagger, predict
from structperc.errors import InputError, ModelFormatError
from structperc.features.index import FeatureIndex
from structperc.features.instances import data_tags
from structperc.io.inputs import to_corpus
from structperc.labels.voting import vote_flat, vote_spans
from structperc.model import schema
from structperc.model.archive import load_archive, save_archive
from structperc.train.options import OptionError

KW = dict(columns=["word", "pos", "chunk"], epochs=2, seed=3)


@pytest.fixture(scope="module")
def sample(tmp_path_factory, sample_paths):
    """200 training and 100 test sentences of the shipped CoNLL-2000 sample, as files."""
    train, test = sample_paths
    d = tmp_path_factory.mktemp("vote")
    (d / "train.txt").write_text(first_sentences(train, 200), encoding="utf-8")
    (d / "test.txt").write_text(first_sentences(test, 100), encoding="utf-8")
    return d / "train.txt", d / "test.txt"


@pytest.fixture(scope="module")
def voting(sample):
    return Tagger(vote=["iob2", "iob1"], **KW).fit(str(sample[0]))


def test_members_are_the_taggers_of_their_encodings_and_tagging_votes(voting, sample):
    train, test = sample
    alone = [Tagger(encoding=e, **KW).fit(str(train)) for e in ("iobes", "iob2", "iob1")]
    model = voting.model_
    assert [v.task.model_scheme for v in model.voters] == ["iob2", "iob1"]
    for member, tagger in zip([model, *model.voters], alone):
        assert member.labels == tagger.labels_
        assert np.array_equal(member.weights.state, tagger.model_.weights.state)
    each = [t.predict(str(test)) for t in alone]
    expected = [vote_spans(list(tags), "iob2") for tags in zip(*each)]
    assert voting.predict(str(test)) == expected
    assert any(e != s for e, s in zip(expected, each[0]))  # the vote changed something on this sample


def test_round_trip_info_and_the_command_line(voting, sample, tmp_path):
    path = voting.save(tmp_path / "m")
    meta, _ = load_archive(path)
    assert meta["format_version"] == schema.VOTE_VERSION and len(meta["voters"]) == 2
    assert meta["params"]["vote"] == ["iob2", "iob1"]
    loaded = Tagger.load(tmp_path / "m")
    assert loaded.predict(str(sample[1])) == voting.predict(str(sample[1]))
    result = run("info", "--model", tmp_path / "m")
    assert result.exit_code == 0 and "vote         3 members' spans" in result.output and "iob1 (" in result.output
    out = tmp_path / "tagged.txt"
    assert run("tag", "--model", tmp_path / "m", sample[1], "-o", out).exit_code == 0
    tags = [[line.split()[-1] for line in block.splitlines()]
            for block in out.read_text(encoding="utf-8").strip().split("\n\n")]
    assert tags == voting.predict(str(sample[1]))


def test_a_tagger_without_vote_writes_no_vote(sample, tmp_path):
    path = Tagger(**KW).fit(str(sample[0])).save(tmp_path / "m")
    meta, _ = load_archive(path)
    assert "vote" not in meta["params"] and "voters" not in meta and meta["format_version"] == 1


def test_constraints_are_refused(voting, sample):
    with pytest.raises(InputError, match="voting model"):
        voting.predict([[("The", "DT"), ("cat", "NN")]], forced=[{0: "B-NP"}])
    with pytest.raises(InputError, match="voting model"):
        voting.predict_marginals([[("The", "DT"), ("cat", "NN")]], allowed=[{1: ["I-NP"]}])


def test_what_one_member_cannot_answer_is_refused(voting, sample, tmp_path):
    sentence = [("The", "DT"), ("cat", "NN")]
    with pytest.raises(InputError, match="members' vote"):
        voting.explain(sentence)
    with pytest.raises(InputError, match="k best paths"):
        voting.predict_nbest([sentence], k=2)
    with pytest.raises(OptionError, match="trained anew") as info:
        voting.partial_fit(str(sample[0]), epochs=1)
    assert info.value.rule == "vote_new_tagger"
    voting.save(tmp_path / "m")
    result = run("tag", "--model", tmp_path / "m", sample[1], "--nbest", "2")
    assert result.exit_code == 1 and "Traceback" not in result.output and "k best paths" in result.output


def test_a_member_of_other_data_is_refused(voting, tmp_path):
    path = voting.save(tmp_path / "m")
    meta, arrays = load_archive(path)
    meta["voters"][1]["tag_column"] = "other"
    meta["voters"][1]["columns"] = ["word", "pos", "other"]
    keep = {k: v for k, v in meta.items() if k not in ("format", "format_version", "arrays")}
    save_archive(tmp_path / "bad", keep, arrays, schema.VOTE_VERSION)
    with pytest.raises(ModelFormatError, match="member 2 of the vote"):
        schema.read(tmp_path / "bad")


def test_nested_resource_tables_are_stored_once(tmp_path):
    table = np.arange(1 << 18, dtype=np.int64)  # 2 MB: above the size shared tables start at
    path = save_archive(tmp_path / "m", {"x": 1}, {"extra.t": table, "voter0.extra.t": table.copy(),
                                                     "voter1.stage1.extra.t": table.copy(), "voter1.keys": table[:4]})
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        meta = json.loads(zf.read("metadata.json"))
    assert "voter0.extra.t.npy" not in names and "voter1.stage1.extra.t.npy" not in names
    assert meta["arrays"]["voter1.stage1.extra.t"]["same_as"] == "extra.t"
    _, arrays = load_archive(path)
    assert np.array_equal(arrays["voter1.stage1.extra.t"], table) and np.array_equal(arrays["voter1.keys"], table[:4])


def test_a_votes_repeated_arrays_are_stored_once_and_older_formats_keep_theirs(tmp_path):
    small = np.arange(4, dtype=np.int64)
    other = small + 1
    arrays = {"keys_0": small, "stage1.keys_0": small.copy(), "keys_1": small, "stage1.keys_1": other,
              "voter0.keys_0": small.copy(), "voter0.stage1.keys_1": other.copy(), "voter0.trans": other}
    meta, _ = load_archive(save_archive(tmp_path / "vote", {"x": 1}, arrays, schema.VOTE_VERSION))
    same = {k: v["same_as"] for k, v in meta["arrays"].items() if "same_as" in v}
    # each points at a stored array: the outermost equal one, else the enclosing model's
    assert same == {"stage1.keys_0": "keys_0", "voter0.keys_0": "keys_0", "voter0.stage1.keys_1": "stage1.keys_1"}
    meta, _ = load_archive(save_archive(tmp_path / "staged", {"x": 1}, arrays, 3))
    assert meta["format_version"] == 3 and not any("same_as" in v for v in meta["arrays"].values())


@pytest.fixture(scope="module")
def staged():
    """A two-stage NER vote whose preset reads a dictionary's columns (gazetteer, capitalisation, document)."""
    X = [[w for w, _ in sent] for sent in DOC_TRAIN]
    Y = [[t for _, t in sent] for sent in DOC_TRAIN]
    return Tagger.train(X, Y, task="ner", columns=["word", "ner"], epochs=3, two_stage=True, vote=["iob2", "iob1"])


def test_a_read_vote_shares_its_members_dictionary_and_indexes(staged, tmp_path):
    meta, arrays = load_archive(staged.save(tmp_path / "m"))
    assert all("same_as" in v for k, v in meta["arrays"].items() if k.startswith("voter") and "keys_" in k)
    model = schema.read(tmp_path / "m")
    assert model.dictionary is not None and all(p.dictionary is model.dictionary for p in model.parts())
    assert all(v.features is model.features and v.stage1.features is model.stage1.features for v in model.voters)
    assert model.stage1.features is not model.features  # the second stage reads the first stage's column too
    # a file that stores the members' arrays apart (as the first voting models did) is read as sharing them
    keep = {k: v for k, v in meta.items() if k not in ("format", "format_version", "arrays")}
    meta, _ = load_archive(save_archive(tmp_path / "apart", keep, {k: a.copy() for k, a in arrays.items()}, 4))
    assert not any("same_as" in v for k, v in meta["arrays"].items() if "keys_" in k)
    apart = schema.read(tmp_path / "apart")
    assert all(p.dictionary is apart.dictionary for p in apart.parts())
    assert all(v.stage1.features is apart.stage1.features for v in apart.voters)


def test_tagging_a_vote_writes_the_dictionary_once_and_votes_as_the_members_alone(staged, tmp_path, monkeypatch):
    staged.save(tmp_path / "m")
    model = schema.read(tmp_path / "m")
    X = [["Ayer", "Castaño", "vino"], ["Víctor", "Lunes", "habló"], ["ya", "Pérez", "vino", "Ayer"]] * 3
    corpus = to_corpus(X, None, model.task, need_tags=False, reads=None)
    alone = [data_tags(predict.best_ids(member, corpus), corpus.sent_ptr, member.labels, member.task)
             for member in (model, *model.voters)]  # each member writes its own columns
    annotate, transform = type(model.dictionary).annotate, FeatureIndex.transform
    calls = {"annotate": 0, "transform": 0}

    def counted(name, inner):
        def call(*args, **kwargs):
            calls[name] += 1
            return inner(*args, **kwargs)
        return call

    monkeypatch.setattr(type(model.dictionary), "annotate", counted("annotate", annotate))
    monkeypatch.setattr(FeatureIndex, "transform", counted("transform", transform))
    tags = predict.tag_corpus(model, corpus).tags
    assert calls == {"annotate": 1, "transform": 4}  # one first stage's ids, each member's second stage
    assert tags == vote_flat(alone, corpus.sent_ptr, model.task.scheme)
    assert Tagger.from_model(model).predict(X) == [tags[i:j] for i, j in zip(corpus.sent_ptr, corpus.sent_ptr[1:])]


@pytest.mark.parametrize("options, rule", [
    (dict(vote=["iobes"]), "vote_other_encodings"),
    (dict(vote=["iob2", "iob2"]), "vote"),
    (dict(vote="iob2"), "vote"),
    (dict(vote=["bmes"]), "vote"),
    (dict(vote=["iob2"], task="pos", columns=None), "vote_spans"),
])
def test_options_refused(options, rule, sample):
    kw = {**KW, **options}
    if kw.get("columns") is None:
        kw.pop("columns")
    with pytest.raises(OptionError) as info:
        Tagger(**kw).fit(str(sample[0]))
    assert info.value.rule == rule


@pytest.mark.parametrize("extra, contains", [
    (["--vote", "iobes"], "the model's own ('iobes', --encoding)"),
    (["--vote", "iob2", "--task", "cws"], "is for span tasks"),
    (["--vote", "iob2", "--init-model", "x"], "is trained anew"),
    (["--vote", "iob3"], "at least one of iob1, iob2, iobes"),
])
def test_command_line_refusals(extra, contains, sample, tmp_path):
    result = run("train", "--train", sample[0], "--columns", "word,pos,chunk", "--model", tmp_path / "m", "-q", *extra)
    assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
    assert contains in result.output
    assert not (tmp_path / "m").exists()


def test_command_line_trains_a_vote(sample, tmp_path):
    result = run("train", "--train", sample[0], "--columns", "word,pos,chunk", "--epochs", "2", "--seed", "3",
                 "--vote", "iob2,iob1", "--model", tmp_path / "m")
    assert result.exit_code == 0, result.output
    assert "voting with members learning iob2, iob1" in result.stderr
    assert len(schema.read(tmp_path / "m").voters) == 2


def test_a_votes_members_are_featurized_once_per_stage(staged, monkeypatch):
    """The members of a vote read the same columns through the same lines: each stage's index and attribute ids
    are made once (two featurizations for a two-stage vote of three, not six) and shared, stage for stage."""
    import structperc.features.instances as instances

    model = staged.model_
    assert all(v.features is model.features and v.stage1.features is model.stage1.features for v in model.voters)
    made = []
    featurize = instances.fit_transform_parallel
    monkeypatch.setattr(instances, "fit_transform_parallel", lambda *a, **k: made.append(1) or featurize(*a, **k))
    X = [[w for w, _ in sent] for sent in DOC_TRAIN]
    Y = [[t for _, t in sent] for sent in DOC_TRAIN]
    again = Tagger.train(X, Y, task="ner", columns=["word", "ner"], epochs=3, two_stage=True, vote=["iob2", "iob1"])
    assert len(made) == 2
    for before, after in zip(model.parts(), again.model_.parts()):
        assert before.labels == after.labels and np.array_equal(before.weights.state, after.weights.state)


@pytest.mark.parametrize("apart", [False, True], ids=["shared", "apart"])
def test_compressing_a_vote_keeps_one_index_per_stage(staged, apart, tmp_path):
    """A vote's members read one index per stage (or, in a model made before they shared it, equal ones):
    either way compression prunes each stage's index once, by every attribute one member keeps, so the members
    still read (and the file stores) one index; ``keep=1.0`` tags as before, and a smaller ``keep`` keeps each
    member's own top attributes."""
    import copy
    import dataclasses

    from structperc.model.compress import compress, keep_masks

    model = staged.model_
    if apart:
        model = dataclasses.replace(model, voters=[dataclasses.replace(
            v, features=copy.deepcopy(v.features),
            stage1=dataclasses.replace(v.stage1, features=copy.deepcopy(v.stage1.features))) for v in model.voters])
        assert model.voters[0].features is not model.features
    X = [[w for w, _ in sent] for sent in DOC_TRAIN]
    small = compress(model, keep=1.0)
    assert all(v.features is small.features and v.stage1.features is small.stage1.features for v in small.voters)
    assert all(p.dictionary is small.dictionary for p in small.parts())
    assert small.features.n_state_attributes < model.features.n_state_attributes  # dead attributes went
    assert Tagger.from_model(small).predict(X) == Tagger.from_model(model).predict(X)
    assert small.provenance["compressed"]["parts_sharing_the_index"] == 3
    meta, _ = load_archive(Tagger.from_model(small).save(tmp_path / "small"))
    assert all("same_as" in v for k, v in meta["arrays"].items() if k.startswith("voter") and "keys_" in k)
    # each member's own top tenth (by its weights) survives the cut, beside what the others keep
    tenth = compress(model, keep=0.1)
    kept = [keep_masks(p.weights, keep=0.1)[0] for p in (model, *model.voters)]
    union = np.logical_or.reduce(kept)
    assert tenth.features.n_state_attributes == union.sum() > max(k.sum() for k in kept)
    for before, after, mask in zip((model, *model.voters), (tenth, *tenth.voters), kept):
        rows = np.searchsorted(np.flatnonzero(union), np.flatnonzero(mask))
        assert np.array_equal(after.weights.state[rows], before.weights.state[:-1][mask])
