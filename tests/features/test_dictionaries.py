"""A model's learnt dictionaries: ambiguity classes (the POS preset), the NER gazetteer and word
clusters from a file, alone or several in one model (`structperc.features.dictionary.Dictionaries`),
saved in the model file and read back with the same predictions."""
from __future__ import annotations

import pytest
from testkit import DOC_TRAIN

from structperc import Tagger
from structperc.errors import InputError
from structperc.features.ambiguity import AmbiguityClasses
from structperc.features.clusters import ClusterMap, write_paths
from structperc.features.dictionary import Dictionaries
from structperc.features.gazetteer import Gazetteer

POS = [[("the", "DET"), ("cat", "NOUN"), ("sat", "VERB")], [("a", "DET"), ("dog", "NOUN"), ("ran", "VERB")],
       [("the", "DET"), ("dog", "NOUN"), ("sat", "VERB")], [("a", "DET"), ("cat", "NOUN"), ("ran", "VERB")]] * 3
CLUSTERS = {"cat": "0110", "dog": "0111", "sat": "10", "ran": "11", "the": "000", "a": "001", "Madrid": "0100"}


def _xy(data):
    return [[w for w, _ in s] for s in data], [[t for _, t in s] for s in data]


@pytest.fixture
def paths(tmp_path):
    path = tmp_path / "clusters.txt"
    with open(path, "w", encoding="utf-8") as out:
        write_paths(ClusterMap(CLUSTERS), out)
    return path


def test_pos_preset_learns_ambiguity_classes_and_keeps_them(tmp_path):
    X, y = _xy(POS)
    tagger = Tagger(task="pos", columns=["word", "pos"], epochs=3).fit(X, y)
    assert isinstance(tagger.dictionary_, AmbiguityClasses) and tagger.dictionary_.table["dog"] == "NOUN"
    tagger.save(tmp_path / "m")
    again = Tagger.load(tmp_path / "m")
    assert isinstance(again.dictionary_, AmbiguityClasses) and again.dictionary_.table == tagger.dictionary_.table
    assert again.predict(X[:2]) == tagger.predict(X[:2]) == y[:2]


def test_clusters_with_ambiguity_classes_are_two_dictionaries_in_one_model(tmp_path, paths):
    X, y = _xy(POS)
    from structperc.features.templates import preset

    tagger = Tagger(task="pos", columns=["word", "pos"], epochs=3,
                    template=preset("pos") + ["clu4[0]", "clu[0]"]).fit(X, y, clusters=paths)
    assert isinstance(tagger.dictionary_, Dictionaries)
    kinds = {type(p) for p in tagger.dictionary_.parts}
    assert kinds == {AmbiguityClasses, ClusterMap}
    tagger.save(tmp_path / "m")
    again = Tagger.load(tmp_path / "m")
    assert {type(p) for p in again.dictionary_.parts} == kinds
    new = [["the", "dog", "ran"], ["Madrid", "sat"]]
    assert again.predict(new) == tagger.predict(new)


def test_ner_gazetteer_with_clusters(tmp_path, paths):
    X, y = _xy(DOC_TRAIN)
    from structperc.features.templates import preset

    tagger = Tagger(task="ner", columns=["word", "ner"], epochs=3,
                    template=preset("ner") + ["clu4[0]"]).fit(X, y, clusters=paths)
    assert {type(p) for p in tagger.dictionary_.parts} == {Gazetteer, ClusterMap}
    tagger.save(tmp_path / "m")
    assert Tagger.load(tmp_path / "m").predict(X[:4]) == tagger.predict(X[:4])


def test_cluster_templates_without_a_clusters_file_are_refused():
    X, y = _xy(POS)
    with pytest.raises(InputError, match="give a clusters file"):
        Tagger(task="pos", columns=["word", "pos"], epochs=1, template=["w[0]", "clu4[0]"]).fit(X, y)


def test_a_clusters_file_no_template_reads_is_refused(paths):
    """The task presets read no cluster column: a clusters file was stored in the model, read by nothing."""
    X, y = _xy(POS)
    with pytest.raises(InputError, match=r"^the templates read no word cluster column \(clu4, .*\): the clusters "
                                         r"\(--clusters\) would only be stored"):
        Tagger(task="pos", columns=["word", "pos"], epochs=1).fit(X, y, clusters=paths)
