"""Model files: round trips, and every kind of damaged or foreign file refused with ModelFormatError
(never unpickled), and atomic saving."""
from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from testkit import TOY, toy_columns

from structperc import ModelFormatError, Tagger
from structperc.model.archive import (
    ARCHIVE_NAME,
    FORMAT_VERSION,
    archive_path,
    dense_rows,
    load_archive,
    save_archive,
    sparse_rows,
)

TEST_SENTS = [[("The", "DT"), ("dog", "NN"), ("sat", "VBD")], [("北京", "NNP"), ("naïve", "JJ")],
              [("unseen", "XX")]]


@pytest.fixture
def model_dir(tmp_path, toy_tagger):
    d = tmp_path / "model"
    toy_tagger.save(d)
    return d


def _members(path):
    with zipfile.ZipFile(path) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _rewrite(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _edit_meta(model_dir, edit):
    target = model_dir / ARCHIVE_NAME
    members = _members(target)
    meta = json.loads(members["metadata.json"])
    edit(meta)
    members["metadata.json"] = json.dumps(meta).encode()
    _rewrite(target, members)


def _npy(arr, allow_pickle=False):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=allow_pickle)
    return buf.getvalue()


# ------------------------------------------------------------------------------ round trips
def test_round_trip_same_predictions_and_labels(model_dir, toy_tagger):
    loaded = Tagger.load(model_dir)
    assert loaded.labels_ == toy_tagger.labels_
    assert loaded.predict(TEST_SENTS) == toy_tagger.predict(TEST_SENTS)
    words, pos, chunks = toy_columns()
    X = [list(zip(w, p)) for w, p in zip(words, pos)]
    assert loaded.predict(X) == chunks            # the toy tagger fits its training data
    w0, w1 = toy_tagger.weights_, loaded.weights_
    for name in ("state", "trans", "cond", "mask", "end"):
        assert np.array_equal(getattr(w0, name), getattr(w1, name)), name
    assert loaded.template_lines_ == toy_tagger.template_lines_
    assert loaded.task_.columns == toy_tagger.task_.columns
    assert loaded.best_epoch_ == toy_tagger.best_epoch_ == 5
    assert loaded.provenance_["n_sentences"] == len(TOY)


def test_a_read_model_builds_its_key_lookups_beside_the_reading(model_dir, toy_tagger, monkeypatch):
    """Reading a model starts the build of its feature tables' key lookups in the reading thread: the first
    lookup waits for it and finds the ids an index built in place finds; a copy waits for it too; an error of the
    build raises at the first lookup."""
    import copy
    from concurrent.futures import Future

    from structperc.features.index import FeatureIndex
    from structperc.io.corpus import Corpus
    from structperc.model import schema

    words, pos, _ = toy_columns()
    corpus = Corpus.from_sentences(words, extra={"pos": pos})
    read = schema.read(model_dir).features
    assert isinstance(read.__dict__.get("_building"), Future)
    ids = read.transform(corpus)
    assert "_building" not in read.__dict__ and read.__dict__["_dense"]
    made = toy_tagger.model_.features
    made.drop_lookup_tables()
    built = made.transform(corpus)
    assert np.array_equal(ids.state, built.state) and np.array_equal(ids.trans, built.trans)
    copied = copy.deepcopy(schema.read(model_dir).features)  # waits, then copies the tables as built
    assert "_building" not in copied.__dict__ and np.array_equal(copied.transform(corpus).state, ids.state)

    def broken(self):
        raise MemoryError("no room for the tables")

    monkeypatch.setattr(FeatureIndex, "_build_every_table", broken)
    failing = schema.read(model_dir).features
    with pytest.raises(MemoryError, match="no room"):
        failing.transform(corpus)


def test_save_to_zip_path_and_over_existing(tmp_path, toy_tagger):
    p = tmp_path / "m.zip"
    assert toy_tagger.save(p) == p
    assert toy_tagger.save(p) == p                 # overwriting works
    assert Tagger.load(p).predict(TEST_SENTS) == toy_tagger.predict(TEST_SENTS)
    assert sorted(os.listdir(tmp_path)) == ["m.zip"]


def test_archive_path():
    assert archive_path("dir") == archive_path("dir/") and str(archive_path("dir")).endswith(ARCHIVE_NAME)
    assert str(archive_path("x/m.zip")) == os.path.join("x", "m.zip")


def test_archive_arrays_round_trip(tmp_path):
    arrays_in = {"a": np.arange(6, dtype=np.int64).reshape(2, 3), "b": np.array([1.5], np.float32),
                 "c": np.zeros((0, 4), np.uint8)}
    save_archive(tmp_path, {"x": "北京"}, arrays_in)
    meta, arrays_out = load_archive(tmp_path)
    assert meta["x"] == "北京" and meta["format_version"] == FORMAT_VERSION
    assert meta["arrays"]["a"] == {"dtype": "int64", "shape": [2, 3]}
    for k, v in arrays_in.items():
        assert arrays_out[k].dtype == v.dtype and np.array_equal(arrays_out[k], v)


_NESTED_NAMES = st.lists(st.tuples(st.lists(st.sampled_from(["stage1.", "voter0.", "voter1."]), max_size=2),
                                   st.sampled_from(["keys_0", "keys_1", "trans", "extra.t.words"])),
                         min_size=1, max_size=10)


@settings(max_examples=60, deadline=None)
@given(_NESTED_NAMES, st.lists(st.integers(0, 2), min_size=10, max_size=10), st.sampled_from([3, 5]))
def test_arrays_stored_once_read_back_as_written(tmp_path_factory, names, values, version):
    """Whatever nested names repeat which arrays, every array reads back as written, and a shared one names an
    array stored in the file (never another shared one); only a vote's file (version 5) shares small arrays."""
    arrays = {"".join(prefixes) + base: np.full(3, v, dtype=np.int64)
              for (prefixes, base), v in zip(names, values)}
    path = save_archive(tmp_path_factory.mktemp("a"), {"x": 1}, arrays, version)
    meta, back = load_archive(path)
    assert back.keys() == arrays.keys() and all(np.array_equal(back[k], a) for k, a in arrays.items())
    shared = {k: v["same_as"] for k, v in meta["arrays"].items() if "same_as" in v}
    with zipfile.ZipFile(path) as zf:
        stored = {n[:-len(".npy")] for n in zf.namelist() if n.endswith(".npy")}
    assert stored.isdisjoint(shared) and set(shared.values()) <= stored and stored | set(shared) == set(arrays)
    assert all(back[k] is back[v] for k, v in shared.items())
    assert version == 5 or not shared  # 24-byte arrays: below the size older formats share
    assert meta["format_version"] == version


def test_saved_file_mode_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        target = save_archive(tmp_path / "m", {}, {"a": np.zeros(2)})
    finally:
        os.umask(old)
    assert os.stat(target).st_mode & 0o777 == 0o644      # an ordinary file, not mkstemp's 0600


def test_saved_archive_holds_no_pickle(model_dir):
    for name, data in _members(model_dir / ARCHIVE_NAME).items():
        if name.endswith(".npy"):
            np.load(io.BytesIO(data), allow_pickle=False)   # would raise for object arrays


@settings(max_examples=60, deadline=None)
@given(arrays(np.float32, st.tuples(st.integers(0, 6), st.integers(1, 5), st.integers(1, 4)),
              elements=st.sampled_from([0.0, 0.0, 0.0, 1.5, -2.0])))
def test_sparse_rows_round_trip(dense):
    parts = sparse_rows(dense)
    assert len(parts["values"]) == np.count_nonzero(dense)
    assert np.array_equal(dense_rows(parts, dense.shape), dense)


def test_dense_rows_rejects_inconsistent_parts():
    parts = sparse_rows(np.array([[0, 1.0], [2.0, 0]], np.float32))
    bad = dict(parts, indices=np.array([0, 7], np.uint8))          # column 7 of a width-2 row
    with pytest.raises(ValueError):
        dense_rows(bad, (2, 2))
    with pytest.raises(ValueError):
        dense_rows(dict(parts, indptr=np.array([0, 2, 1])), (2, 2))  # decreasing
    with pytest.raises(ValueError):
        dense_rows(parts, (3, 2))                                     # wrong row count


# ------------------------------------------------------------------------- damaged or foreign
def _assert_refused(path):
    with pytest.raises(ModelFormatError) as err:
        Tagger.load(path)
    assert isinstance(err.value, ValueError)
    assert str(path) in str(err.value)
    return err.value


def test_missing_model(tmp_path):
    _assert_refused(tmp_path / "nothing-here")


def test_truncated_archive(model_dir):
    target = model_dir / ARCHIVE_NAME
    data = target.read_bytes()
    for cut in (len(data) // 2, len(data) - 30, 10):
        target.write_bytes(data[:cut])
        _assert_refused(model_dir)


def test_random_bytes(model_dir):
    rng = np.random.default_rng(0)
    (model_dir / ARCHIVE_NAME).write_bytes(rng.integers(0, 256, 5000, dtype=np.uint8).tobytes())
    _assert_refused(model_dir)


def test_crfsuite_model_content(model_dir):
    (model_dir / ARCHIVE_NAME).write_bytes(b"lCRFfoo" + bytes(200))
    _assert_refused(model_dir)


def test_zip_without_metadata(model_dir):
    members = _members(model_dir / ARCHIVE_NAME)
    del members["metadata.json"]
    _rewrite(model_dir / ARCHIVE_NAME, members)
    assert "no metadata.json" in str(_assert_refused(model_dir))


@pytest.mark.parametrize("payload", [b"not json", b"[1, 2]", b"\xff\xfe", b'"a string"', b"null"])
def test_metadata_not_an_object(model_dir, payload):
    members = _members(model_dir / ARCHIVE_NAME)
    members["metadata.json"] = payload
    _rewrite(model_dir / ARCHIVE_NAME, members)
    _assert_refused(model_dir)


def test_foreign_format_name(model_dir):
    _edit_meta(model_dir, lambda m: m.update(format="someone-elses-model"))
    assert "not a structperc model" in str(_assert_refused(model_dir))


def test_newer_format_version(model_dir):
    _edit_meta(model_dir, lambda m: m.update(format_version=FORMAT_VERSION + 1))
    msg = str(_assert_refused(model_dir))
    assert "newer" in msg and "upgrade" in msg


@pytest.mark.parametrize("version", [0, -1, "1", None, 1.5])
def test_bad_format_version(model_dir, version):
    _edit_meta(model_dir, lambda m: m.update(format_version=version))
    _assert_refused(model_dir)


def test_array_dtype_disagrees_with_metadata(model_dir):
    members = _members(model_dir / ARCHIVE_NAME)
    trans = np.load(io.BytesIO(members["trans.npy"]))
    members["trans.npy"] = _npy(trans.astype(np.float64))
    _rewrite(model_dir / ARCHIVE_NAME, members)
    assert "'trans' does not match" in str(_assert_refused(model_dir))


def test_array_shape_disagrees_with_metadata(model_dir):
    members = _members(model_dir / ARCHIVE_NAME)
    trans = np.load(io.BytesIO(members["trans.npy"]))
    members["trans.npy"] = _npy(trans[:-1])
    _rewrite(model_dir / ARCHIVE_NAME, members)
    _assert_refused(model_dir)


def test_metadata_shape_disagrees_with_features(model_dir):
    _edit_meta(model_dir, lambda m: m["shapes"]["state"].__setitem__(0, m["shapes"]["state"][0] + 1))
    _assert_refused(model_dir)


def test_declared_array_missing(model_dir):
    members = _members(model_dir / ARCHIVE_NAME)
    del members["trans.npy"]
    _rewrite(model_dir / ARCHIVE_NAME, members)
    assert "'trans' is missing" in str(_assert_refused(model_dir))


def test_unsorted_labels(model_dir):
    _edit_meta(model_dir, lambda m: m.update(labels=list(reversed(m["labels"]))))
    _assert_refused(model_dir)


def test_sparse_index_out_of_range(model_dir):
    members = _members(model_dir / ARCHIVE_NAME)
    idx = np.load(io.BytesIO(members["state_indices.npy"]))
    idx[0] = 200                                       # far past the label count
    members["state_indices.npy"] = _npy(idx)
    _rewrite(model_dir / ARCHIVE_NAME, members)
    _assert_refused(model_dir)


class _Exploit:
    """Unpickling this writes a marker file: proof that code ran."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('pwned')",)


@pytest.mark.parametrize("member", ["evil", "trans"])
def test_pickled_object_array_is_refused_and_not_executed(model_dir, tmp_path, member):
    marker = tmp_path / "executed.txt"
    obj = np.empty(1, dtype=object)
    obj[0] = _Exploit(marker)
    payload = _npy(obj, allow_pickle=True)
    assert b"exec" in payload                                         # the payload really pickles
    members = _members(model_dir / ARCHIVE_NAME)
    members[f"{member}.npy"] = payload
    meta = json.loads(members["metadata.json"])
    meta["arrays"][member] = {"dtype": "object", "shape": [1]}
    members["metadata.json"] = json.dumps(meta).encode()
    _rewrite(model_dir / ARCHIVE_NAME, members)
    _assert_refused(model_dir)
    assert not marker.exists()
    # sanity check of the test itself: loading it with pickle allowed would run the code
    np.load(io.BytesIO(payload), allow_pickle=True)
    assert marker.read_text() == "pwned"


# ---------------------------------------------------------------------------- atomic saving
def test_failed_save_keeps_old_model(monkeypatch, tmp_path, toy_tagger):
    d = tmp_path / "model"
    toy_tagger.save(d)
    before = (d / ARCHIVE_NAME).read_bytes()
    calls = {"n": 0}
    real = zipfile.ZipFile.writestr

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real(self, *args, **kwargs)
    monkeypatch.setattr(zipfile.ZipFile, "writestr", failing)
    with pytest.raises(OSError):
        toy_tagger.save(d)
    monkeypatch.undo()
    assert calls["n"] == 3                                    # it failed mid-way
    assert (d / ARCHIVE_NAME).read_bytes() == before
    assert os.listdir(d) == [ARCHIVE_NAME]                    # no temporary file left behind
    assert Tagger.load(d).predict(TEST_SENTS) == toy_tagger.predict(TEST_SENTS)


def test_interrupted_save_keeps_old_model(monkeypatch, tmp_path, toy_tagger):
    d = tmp_path / "model"
    toy_tagger.save(d)
    before = (d / ARCHIVE_NAME).read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        toy_tagger.save(d)
    monkeypatch.undo()
    assert (d / ARCHIVE_NAME).read_bytes() == before and os.listdir(d) == [ARCHIVE_NAME]


def test_untrained_tagger_cannot_save(tmp_path):
    with pytest.raises(RuntimeError, match="not trained"):
        Tagger().save(tmp_path / "m")
    assert not (tmp_path / "m").exists()
