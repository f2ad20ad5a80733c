"""``--lang CODE``: a language resource's columns inside a model (`structperc.features.resources.language`).

The word tables stored as arrays (`structperc.features.resources.storage`), the cluster map and the
segmentation dictionary that carry them (`ClusterMap`, `SegmentationDictionary`: ``to_json`` plus
``arrays``), a tagger and a segmenter trained with a language that save, load and tag with the resource's
packages hidden, what ``structperc info`` says about them, a model trained without a language that is
unchanged, and the command line's one-line refusals. The registry itself is tested in test_resources.py.
"""
from __future__ import annotations

import importlib.util
import io
import json
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import CWS_TRAIN, SAMPLE_TRAIN, assert_clean_error, expanded, first_sentences, run

from structperc.errors import InputError, ModelFormatError
from structperc.features.clusters import UNKNOWN, ClusterMap
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.lexicon import SegmentationDictionary
from structperc.features.resources import cluster_paths
from structperc.features.resources.storage import pack_words, unpack_words
from structperc.io.corpus import Corpus

ROOT = Path(__file__).resolve().parents[2]
HIDDEN = ("spacy_lookups_data", "jieba")
needs_packages = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in HIDDEN),
    reason='spacy-lookups-data or jieba is not installed (pip install "structperc[resources]")')
INSTALL = 'pip install "structperc[resources]"'
#: A jieba word that none of `CWS_TRAIN`'s sentences holds.
JIEBA_ONLY = "中华人民共和国"
#: Words of spaCy's English clusters that the training sentences below do not hold.
UNSEEN = ["Tuesday", "Wednesday", "banana", "BANANA"]
PROVENANCE = {"name": "xx-clusters", "package": "made-up", "version": "0.1", "file": "f.json.gz",
              "licence": "MIT", "words": 5}

no_newline = st.text().filter(lambda w: "\n" not in w)


# -- word tables ----------------------------------------------------------------------------------

@pytest.mark.parametrize("words", [
    [],
    ["a"],
    ["the", "The", "naïve", "Zürich", "北京", "中华人民共和国", "😀", "𠀋", "ＡＢＣ"],
    ["", "a", ""],                           # empty words among others
    ["tab\there", "space here", "cr\rhere"],  # only "\n" separates words
    ["b", "a", "b"],                         # order and repeats kept
])
def test_pack_words_round_trips(words):
    packed = pack_words(words)
    assert packed.dtype == np.uint8 and packed.ndim == 1
    assert unpack_words(packed) == words


def test_pack_words_compresses_sorted_words():
    words = [f"word{i:06d}" for i in range(20000)]
    assert pack_words(words).nbytes < len("\n".join(words)) / 4


@given(st.lists(no_newline, max_size=30).filter(lambda ws: ws != [""]))
@settings(max_examples=200, deadline=None)
def test_pack_words_round_trips_any_text(words):
    assert unpack_words(pack_words(words)) == words
    assert unpack_words(pack_words(iter(words))) == words  # any iterable


def test_pack_words_keeps_a_single_empty_word():
    assert unpack_words(pack_words([""])) == [""]
    assert unpack_words(pack_words([])) == []


@pytest.mark.parametrize("words", [["a\nb"], ["ok", "\n"], ["x", "line\n"]])
def test_pack_words_refuses_a_newline(words):
    with pytest.raises(ValueError, match="newline"):
        pack_words(words)


def damaged(packed: np.ndarray) -> list[np.ndarray]:
    flipped = packed.copy()
    flipped[len(flipped) // 2] ^= 0xFF
    return [packed[:-3], packed[: len(packed) // 2], flipped, np.zeros(0, np.uint8),
            np.frombuffer(b"not zlib at all", np.uint8).copy()]


def test_unpack_words_refuses_damage():
    packed = pack_words(["alpha", "beta", "gamma", "北京"] * 50)
    for bad in damaged(packed):
        with pytest.raises(ValueError):
            unpack_words(bad)


def test_unpack_words_refuses_bytes_that_are_not_utf8():
    import zlib

    with pytest.raises(ValueError, match="damaged"):
        unpack_words(np.frombuffer(zlib.compress(b"ok\n\xff\xfe"), np.uint8).copy())


@pytest.mark.parametrize("bad", [pack_words(["a"]).astype(np.int16), pack_words(["a"]).reshape(1, -1),
                                 list(pack_words(["a"])), b"x"])
def test_unpack_words_refuses_what_is_not_a_word_table(bad):
    with pytest.raises(ValueError, match="one-dimensional uint8"):
        unpack_words(bad)


# -- the cluster map ------------------------------------------------------------------------------

def resource_map(**kw) -> ClusterMap:
    paths = {"cat": "0110", "dog": "0111", "Zürich": "10", "北京": "10", "Tuesday": "0101011011"}
    return ClusterMap(paths, {"cat": 3}, resource=PROVENANCE, **kw)


def json_round_trip(data: dict) -> dict:
    return json.loads(json.dumps(data))


def test_resource_map_round_trips_through_json_and_arrays():
    m = resource_map(word="tok", prefixes=(2, 3))
    data, arrays = json_round_trip(m.to_json()), m.arrays()
    assert data == {"kind": "brown", "prefixes": [2, 3], "resource": PROVENANCE,
                    "paths": ["0101011011", "0110", "0111", "10"], "stored": "arrays"}
    assert "cat" not in json.dumps(m.to_json(), ensure_ascii=False)  # the words are in the arrays only
    assert unpack_words(arrays["words"]) == ["Tuesday", "cat", "dog", "Zürich", "北京"]  # by path, then word
    assert arrays["counts"].dtype == np.int32 and arrays["counts"].tolist() == [1, 1, 1, 2]
    back = ClusterMap.from_json(data, word="tok", arrays={k: a.copy() for k, a in arrays.items()})
    assert back.paths == m.paths and back.resource == m.resource
    assert back.prefixes == (2, 3) and back.word == "tok"
    corpus = Corpus.from_sentences([["Cat", "北京", "unknown"]], extra={"tok": [["cat", "北京", "unknown"]]})
    assert expanded(back.values(corpus)) == expanded(m.values(corpus))
    assert expanded(back.values(corpus))["clu"] == ["0110", "10", UNKNOWN]


@given(st.dictionaries(no_newline.filter(bool), st.text("01", min_size=1, max_size=12), max_size=40))
@settings(max_examples=100, deadline=None)
def test_resource_map_round_trips_any_words(paths):
    m = ClusterMap(paths, resource=PROVENANCE)
    back = ClusterMap.from_json(json_round_trip(m.to_json()), arrays=m.arrays())
    assert back.paths == paths and back.resource == PROVENANCE
    assert back.to_json()["paths"] == sorted(set(paths.values()))


def test_map_without_resource_keeps_its_json_form():
    m = ClusterMap({"cat": "0110", "dog": "0110", "sat": "10"})
    assert m.resource is None and m.arrays() == {}
    data = m.to_json()
    assert data == {"kind": "brown", "prefixes": [4, 6, 10, 20], "paths": {"0110": ["cat", "dog"], "10": ["sat"]}}
    back = ClusterMap.from_json(json_round_trip(data))
    assert back.paths == m.paths and back.resource is None and back.arrays() == {}


@pytest.mark.parametrize("change", [
    lambda a: {**a, "counts": a["counts"] + np.array([1, 0, 0, 0], np.int32)},  # one word too many
    lambda a: {**a, "counts": a["counts"][:-1]},                                # a path without its count
    lambda a: {**a, "counts": np.append(a["counts"], 0).astype(np.int32)},      # a count too many
    lambda a: {**a, "counts": np.array([3, -1, 1, 2], np.int32)},               # a negative count
    lambda a: {**a, "counts": a["counts"].reshape(2, 2)},
    lambda a: {**a, "words": pack_words(["cat", "dog"])},                       # words lost
    lambda a: {"words": a["words"]},
    lambda a: {"counts": a["counts"]},
    lambda a: None,
], ids=["too-many", "short", "long", "negative", "2d", "lost-words", "no-counts", "no-words", "no-arrays"])
def test_resource_map_refuses_counts_that_do_not_match_its_words(change):
    m = resource_map()
    with pytest.raises(ValueError):
        ClusterMap.from_json(m.to_json(), arrays=change(m.arrays()))


def test_resource_map_counts_place_the_words_on_the_paths():
    m = resource_map()
    arrays = {**m.arrays(), "counts": np.array([2, 0, 1, 2], np.int32)}  # well-formed, other paths
    back = ClusterMap.from_json(m.to_json(), arrays=arrays)
    assert back.paths == {"Tuesday": "0101011011", "cat": "0101011011", "dog": "0111", "Zürich": "10", "北京": "10"}


def test_resource_map_refuses_damaged_words():
    m = resource_map()
    arrays = m.arrays()
    for bad in damaged(arrays["words"]):
        with pytest.raises(ValueError):
            ClusterMap.from_json(m.to_json(), arrays={**arrays, "words": bad})


# -- the segmentation dictionary ------------------------------------------------------------------

ZH_PROVENANCE = {"name": "zh-words", "package": "jieba", "version": "0.42.1", "file": "dict.txt",
                 "licence": "MIT", "min_frequency": 1, "words": 3}


def test_segmentation_dictionary_round_trips_resource_words():
    d = SegmentationDictionary(["上海", "北京", "体育局"], ["上海", "北京"], {"latin": False}, True,
                               resource_words=["北京", JIEBA_ONLY, "天安门"], resource=ZH_PROVENANCE)
    assert d.lexicon == sorted({"上海", "北京", "体育局", JIEBA_ONLY, "天安门"})
    data, arrays = json_round_trip(d.to_json()), d.arrays()
    assert data["lexicon"] == ["上海", "体育局"]  # the resource's words (北京 too) are in the arrays only
    assert data["resource"] == ZH_PROVENANCE and set(arrays) == {"resource_words"}
    assert unpack_words(arrays["resource_words"]) == sorted(["北京", JIEBA_ONLY, "天安门"])
    back = SegmentationDictionary.from_json(data, arrays)
    assert back.lexicon == d.lexicon and back.train_words == d.train_words == ["上海", "北京"]
    assert back.resource == ZH_PROVENANCE and back.atomic == d.atomic and back.extended
    assert back.to_json() == data
    corpus = Corpus.from_sentences([list("中华人民共和国在北京")], extra={"char": [list("中华人民共和国在北京")]})
    assert expanded(back.values(corpus)) == expanded(d.values(corpus))


def test_segmentation_dictionary_without_resource_is_unchanged():
    d = SegmentationDictionary(["上海", "北京"], ["上海"])
    data = d.to_json()
    assert set(data) == {"train_words", "lexicon", "atomic"} and "resource" not in data
    assert data["lexicon"] == ["上海", "北京"] and d.arrays() == {}
    back = SegmentationDictionary.from_json(json_round_trip(data))
    assert back.lexicon == d.lexicon and back.resource is None


def test_segmentation_dictionary_refuses_missing_or_damaged_resource_words():
    d = SegmentationDictionary(["上海"], resource_words=[JIEBA_ONLY], resource=ZH_PROVENANCE)
    for arrays in (None, {}, {"other": d.arrays()["resource_words"]}):
        with pytest.raises(ValueError, match="missing"):
            SegmentationDictionary.from_json(d.to_json(), arrays)
    with pytest.raises(ValueError):
        SegmentationDictionary.from_json(d.to_json(), {"resource_words": d.arrays()["resource_words"][:-2]})


def test_segmentation_dictionary_with_an_empty_resource_round_trips():
    d = SegmentationDictionary(["上海"], resource_words=[], resource=ZH_PROVENANCE)
    assert SegmentationDictionary.from_json(d.to_json(), d.arrays()).resource == ZH_PROVENANCE


def test_resource_words_without_a_resource_stay_in_the_lexicon():
    d = SegmentationDictionary(["上海"], resource_words=["bb"])
    back = SegmentationDictionary.from_json(d.to_json(), d.arrays())
    assert back.lexicon == ["bb", "上海"] and d.arrays() == {}


# -- a tagger trained with --lang en --------------------------------------------------------------

def conll_with_pos(n: int) -> tuple[str, str]:
    """The shipped sample's first ``n`` sentences: the first two thirds to train on, the rest held out."""
    blocks = first_sentences(SAMPLE_TRAIN, n).strip("\n").split("\n\n")
    cut = 2 * n // 3
    return "\n\n".join(blocks[:cut]) + "\n\n", "\n\n".join(blocks[cut:]) + "\n\n"


def clusters_of(tagger) -> ClusterMap:
    found = [p for p in dictionary_parts(tagger.dictionary_) if isinstance(p, ClusterMap)]
    assert len(found) == 1, tagger.dictionary_
    return found[0]


def metadata(model_dir: Path) -> dict:
    with zipfile.ZipFile(model_dir / "model.zip") as z:
        return json.loads(z.read("metadata.json"))


def zip_names(model_dir: Path) -> list[str]:
    with zipfile.ZipFile(model_dir / "model.zip") as z:
        return z.namelist()


@pytest.fixture(scope="module")
def chunk_data(tmp_path_factory):
    folder = tmp_path_factory.mktemp("lang-chunk")
    train, held_out = conll_with_pos(45)
    (folder / "train.txt").write_text(train, encoding="utf-8")
    (folder / "test.txt").write_text(held_out, encoding="utf-8")
    words = {line.split(" ")[0] for line in train.splitlines() if line}
    assert not words & set(UNSEEN)
    return folder / "train.txt", folder / "test.txt"


@pytest.fixture(scope="module")
def en_model(chunk_data, tmp_path_factory):
    """(tagger, model directory, predictions on the held-out file before saving)."""
    from structperc import Tagger

    train, test = chunk_data
    tagger = Tagger(task="chunk", lang="en", epochs=2, seed=0).fit(str(train))
    before = tagger.predict(str(test))
    model_dir = tmp_path_factory.mktemp("lang-en") / "model"
    tagger.save(model_dir)
    return tagger, model_dir, before


@needs_packages
def test_lang_tagger_round_trip_keeps_every_word_of_the_clusters(en_model, chunk_data):
    from structperc import Tagger, commands

    tagger, model_dir, before = en_model
    assert [line for line in tagger.template_lines_ if line.startswith("clu")]  # the lines --lang adds
    for loaded in (Tagger.load(model_dir), commands.load(model_dir)):
        assert type(loaded) is Tagger and loaded.lang == "en"
        assert loaded.template_lines_ == tagger.template_lines_
        clusters = clusters_of(loaded)
        assert clusters.paths == clusters_of(tagger).paths
        assert clusters.resource["name"] == "en-clusters"
        # every trusted word of the resource, not only the training words: each finds its path (a cased word
        # whose lowercased form has the same path is stored once, lowercased)
        trusted = cluster_paths("en")
        assert clusters.resource["words"] == len(trusted) > 150_000
        assert len(clusters.paths) < len(trusted)
        assert all(clusters.path(w) == bits for w, bits in trusted.items())
        assert loaded.predict(str(chunk_data[1])) == before
        values = expanded(clusters.values(Corpus.from_sentences([UNSEEN + ["Qzxjkvw"]])))
        # spaCy's English paths (BANANA: looked up lowercased)
        assert values["clu"] == ["0101011011", "0101011011", "11101011", "11101011", UNKNOWN]
        assert values["clu4"] == ["0101", "0101", "1110", "1110", UNKNOWN]
        for column in ("clu4", "clu6", "clu10", "clu20", "clu"):
            assert UNKNOWN not in values[column][:4]
    assert {"extra.clusters.words.npy", "extra.clusters.counts.npy"} <= set(zip_names(model_dir))
    meta = metadata(model_dir)
    assert meta["params"]["lang"] == "en"
    assert "en-clusters" in [r["name"] for r in meta["provenance"]["resources"]]
    assert "Tuesday" not in json.dumps(meta["extra"])  # the words are arrays, not JSON


@needs_packages
def test_damaged_resource_arrays_are_a_model_format_error(en_model, tmp_path):
    from structperc import Tagger

    _, model_dir, _ = en_model
    words = "extra.clusters.words.npy"
    for damage in ("extra.clusters.words.npy", "extra.clusters.counts.npy", "flipped"):
        broken = tmp_path / damage / "model"
        broken.mkdir(parents=True)
        with zipfile.ZipFile(model_dir / "model.zip") as src, \
                zipfile.ZipFile(broken / "model.zip", "w") as dst:
            for info in src.infolist():
                data = src.read(info.filename)
                if info.filename == words and damage == "flipped":  # deflated words that no longer inflate
                    array = np.load(io.BytesIO(data))
                    array[len(array) // 2] ^= 0xFF
                    out = io.BytesIO()
                    np.save(out, array)
                    data = out.getvalue()
                if info.filename != damage:
                    dst.writestr(info, data)
        with pytest.raises(ModelFormatError, match="damaged"):
            Tagger.load(broken)


@needs_packages
def test_tagger_without_lang_writes_what_it_did_before(en_model, chunk_data, tmp_path):
    from structperc import Tagger

    train, _ = chunk_data
    plain = Tagger(task="chunk", lang=None, epochs=2, seed=0).fit(str(train))
    assert "resources" not in plain.provenance_
    assert not any(isinstance(p, ClusterMap) for p in dictionary_parts(plain.dictionary_))
    assert not [line for line in plain.template_lines_ if line.startswith("clu")]
    plain.save(tmp_path / "plain")
    meta = metadata(tmp_path / "plain")
    assert "lang" not in meta["params"] and "resources" not in meta["provenance"]
    assert "clusters" not in (meta.get("extra") or {})
    assert not [n for n in zip_names(tmp_path / "plain") if n.startswith("extra.")]
    # the same run with the language differs exactly there
    assert metadata(en_model[1])["params"] == {**meta["params"], "lang": "en"}


# -- the packages hidden: a model carries its resource --------------------------------------------

HIDE = textwrap.dedent(f"""
    import importlib.abc, importlib.util, json, sys
    HIDDEN = {HIDDEN!r}

    class Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in HIDDEN:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Hide())
    for name in HIDDEN:
        sys.modules.pop(name, None)
        try:
            __import__(name)
        except ImportError:
            pass
        else:
            raise SystemExit(f"{{name}} is still importable")
    from structperc.errors import InputError

    def refused(fit):
        try:
            fit()
        except InputError as e:
            return str(e)
        return None
""")


def hidden(code: str) -> dict:
    """Run ``code`` (which prints one JSON object) with spacy_lookups_data and jieba unimportable."""
    done = subprocess.run([sys.executable, "-c", HIDE + textwrap.dedent(code)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert not [m for m in loaded.pop("modules") if m.partition(".")[0] in HIDDEN]
    return loaded


@needs_packages
def test_lang_tagger_tags_with_the_packages_hidden(en_model, chunk_data):
    _, model_dir, before = en_model
    train, test = chunk_data
    out = hidden(f"""
        from structperc import Tagger
        tagger = Tagger.load({str(model_dir)!r})
        tags = tagger.predict({str(test)!r})
        message = refused(lambda: Tagger(task="chunk", lang="en", epochs=1).fit({str(train)!r}))
        print(json.dumps({{"tags": tags, "refused": message, "modules": list(sys.modules)}}))
    """)
    assert out["tags"] == before
    assert out["refused"] is not None and INSTALL in out["refused"] and "spacy-lookups-data" in out["refused"]
    assert "\n" not in out["refused"]


@needs_packages
def test_shipped_pos_model_with_every_english_table_tags_with_the_packages_hidden():
    """en-upos carries the clusters, the capitalisation evidence of the word probabilities and the lexicon's
    classes (the ``pos`` preset's ``--lang en`` tables): it tags as it does with the packages there."""
    from structperc import load

    words = [["The", "Gulf", "housing", "charge", "rose", "in", "May", "."],
             ["i", "bought", "an", "ipod", "from", "CPA"]]
    before = load("en-upos").predict(words)
    out = hidden(f"""
        from structperc import load
        tagger = load("en-upos")
        names = [r["name"] for r in tagger.provenance_["resources"]]
        print(json.dumps({{"tags": tagger.predict({words!r}), "names": names, "modules": list(sys.modules)}}))
    """)
    assert out["tags"] == before
    assert out["names"] == ["en-clusters", "en-probabilities", "en-lemmas"]


@needs_packages
def test_a_training_run_keeps_its_word_tables_packed():
    """Training with ``--lang`` looks each word table up a few times and never holds its dictionary: the tables
    stay as the model stores them (a million-word table as Python strings was most of POS training's added
    memory), and they give the same columns as their dictionaries."""
    from structperc import Tagger
    from structperc.features.resources.word_classes import WordClasses

    blocks = first_sentences(SAMPLE_TRAIN, 30).strip("\n").split("\n\n")
    X = [[line.split(" ")[0] for line in b.split("\n")] for b in blocks]
    y = [[line.split(" ")[1] for line in b.split("\n")] for b in blocks]
    tagger = Tagger(task="pos", columns=["word", "pos"], lang="en", epochs=1, seed=0).fit(X, y)
    tagger.predict(X[:5])
    tables = [p for p in dictionary_parts(tagger.dictionary_) if isinstance(p, (WordClasses, ClusterMap))]
    assert len(tables) == 2  # the clusters and the capitalisation evidence
    assert all(t._stored._table is None for t in tables)
    corpus = Corpus.from_sentences([["The", "Gulf", "ipod", "zzqx"]])

    def columns(t) -> dict[str, list[str]]:
        return {name: [distinct[c] for c in codes.tolist()] for name, (distinct, codes) in t.values(corpus).items()}

    for t in tables:
        looked_up = columns(t)
        t._stored.table()  # the whole dictionary, built on purpose
        assert columns(t) == looked_up and t._stored._table is not None


@pytest.fixture(scope="module")
def zh_model(tmp_path_factory):
    """(segmenter, model directory)."""
    from structperc.segmenter import Segmenter

    segmenter = Segmenter(lang="zh", epochs=2, seed=0).fit(CWS_TRAIN)
    model_dir = tmp_path_factory.mktemp("lang-zh") / "model"
    segmenter.save(model_dir)
    return segmenter, model_dir


ZH_TEXTS = ["中华人民共和国成立了", "我爱北京天安门", "上海体育局召开会议", "２０２４年，我们去北京。"]


@needs_packages
def test_lang_segmenter_segments_with_jieba_hidden(zh_model):
    segmenter, model_dir = zh_model
    out = hidden(f"""
        from structperc.segmenter import Segmenter
        segmenter = Segmenter.load({str(model_dir)!r})
        words = segmenter.segment_texts({ZH_TEXTS!r})
        message = refused(lambda: Segmenter(lang="zh", epochs=1).fit({CWS_TRAIN!r}))
        from structperc.features.dictionary import parts
        carried = any({JIEBA_ONLY!r} in getattr(p, "words", ()) for p in parts(segmenter.dictionary_))
        print(json.dumps({{"words": words, "carried": carried, "refused": message, "modules": list(sys.modules)}}))
    """)
    assert out["words"] == segmenter.segment_texts(ZH_TEXTS)
    assert out["carried"]
    assert out["refused"] is not None and INSTALL in out["refused"] and "jieba" in out["refused"]


# -- the segmenter's lexicon ----------------------------------------------------------------------

@needs_packages
def dictionary_words(segmenter):
    from structperc.features.resources.wordlist import DictionaryWords

    found = [p for p in dictionary_parts(segmenter.dictionary_) if isinstance(p, DictionaryWords)]
    return found[0] if found else None


def test_lang_segmenter_carries_jieba_words_in_columns_of_their_own(zh_model):
    from structperc.features.resources.language import MIN_WORD_FREQUENCY
    from structperc.segmenter import Segmenter

    segmenter, model_dir = zh_model
    assert not any(JIEBA_ONLY in sentence for sentence in CWS_TRAIN)
    words = dictionary_words(segmenter)
    # jieba's words of frequency >= 5 (the study's choice), in the dic* columns, not in the training lexicon
    assert MIN_WORD_FREQUENCY == 5 and JIEBA_ONLY in words.words and 100_000 < len(words.words) < 349_046
    assert JIEBA_ONLY not in segmenter.lexicon_
    assert {"dicb[0]", "dice[0]", "dicm[0]"} <= set(segmenter.template_lines_)
    loaded = Segmenter.load(model_dir)
    assert loaded.lang == "zh" and dictionary_words(loaded).words == words.words
    assert loaded.segment_texts(ZH_TEXTS) == segmenter.segment_texts(ZH_TEXTS)
    meta = metadata(model_dir)
    assert meta["params"]["lang"] == "zh"
    assert [r["name"] for r in meta["provenance"]["resources"]] == ["zh-words"]
    assert meta["extra"]["dictionary"]["resource"]["name"] == "zh-words"
    assert JIEBA_ONLY not in json.dumps(meta, ensure_ascii=False)  # the words are an array, not JSON
    assert "extra.dictionary.words.npy" in zip_names(model_dir)
    assert "extra.cws.resource_words.npy" not in zip_names(model_dir)


@needs_packages
def test_lang_segmenter_words_may_join_the_training_lexicon(monkeypatch, tmp_path):
    from structperc.features.resources import language
    from structperc.segmenter import Segmenter

    monkeypatch.setattr(language, "WORDS_IN_LEXICON", True)
    segmenter = Segmenter(lang="zh", epochs=1, seed=0).fit(CWS_TRAIN)
    assert JIEBA_ONLY in segmenter.lexicon_
    segmenter.save(tmp_path / "m")
    loaded = Segmenter.load(tmp_path / "m")
    assert loaded.lexicon_ == segmenter.lexicon_
    cws = metadata(tmp_path / "m")["extra"]["cws"]
    assert cws["resource"]["name"] == "zh-words" and JIEBA_ONLY not in cws["lexicon"]
    assert JIEBA_ONLY not in cws["train_words"] and "体育局" in cws["train_words"]
    assert "extra.cws.resource_words.npy" in zip_names(tmp_path / "m")


@needs_packages
def test_segmenter_without_lang_has_no_resource(tmp_path):
    from structperc.segmenter import Segmenter

    plain = Segmenter(epochs=2, seed=0).fit(CWS_TRAIN)
    assert JIEBA_ONLY not in plain.lexicon_ and "resources" not in plain.provenance_
    plain.save(tmp_path / "plain")
    meta = metadata(tmp_path / "plain")
    assert "lang" not in meta["params"] and "resources" not in meta["provenance"]
    assert "resource" not in meta["extra"]["cws"]
    assert not [n for n in zip_names(tmp_path / "plain") if n.startswith("extra.")]


# -- structperc info ------------------------------------------------------------------------------

@needs_packages
def test_info_names_the_resource(en_model, zh_model):
    for model_dir, name, package in ((en_model[1], "en-clusters", "spacy-lookups-data"),
                                     (zh_model[1], "zh-words", "jieba")):
        result = run("info", "--model", model_dir)
        assert result.exit_code == 0, result.output
        lines = [line for line in result.stdout.splitlines() if line.startswith(f"resource     {name}: ")]
        assert len(lines) == 1, result.stdout
        assert f"{name}: {package} " in lines[0] and "MIT" in lines[0] and " words" in lines[0]
        as_json = run("info", "--model", model_dir, "--json")
        assert as_json.exit_code == 0, as_json.output
        resources = json.loads(as_json.stdout)["resources"]
        mine = [r for r in resources if r["name"] == name]
        assert len(mine) == 1 and mine[0]["licence"] == "MIT" and mine[0]["package"] == package
    assert "190,129 words" in run("info", "--model", en_model[1]).stdout


# -- the command line -----------------------------------------------------------------------------

@needs_packages
def test_cli_trains_with_lang(chunk_data, tmp_path):
    result = run("train", "--train", chunk_data[0], "--model", tmp_path / "m", "--lang", "en",
                 "--task", "chunk", "--epochs", 1, "--quiet")
    assert result.exit_code == 0, result.output
    meta = metadata(tmp_path / "m")
    assert meta["params"]["lang"] == "en"
    assert "en-clusters" in [r["name"] for r in meta["provenance"]["resources"]]


@pytest.mark.parametrize("args, contains, says", [
    # Dutch has lemma tables, Greek word probabilities, and the chunk preset reads neither
    (["--lang", "nl"], "'nl'", "the templates read none of its columns (lpos)"),
    (["--lang", "el"], "'el'", "the templates read none of its columns (frq, cap)"),
    (["--lang", "fr"], "'fr'", "no language resources"),
    (["--task", "pos", "--lang", "zh"], "'zh'", "its languages are de, el, en, es, nl"),
    (["--task", "cws", "--lang", "en"], "'en'", "word segmentation (--task cws)"),
])
def test_cli_refuses_a_language_without_the_resource(args, contains, says, write_file, tmp_path):
    train = write_file("train.txt", "中 S\n\n" if "cws" in args else "The DT B-NP\ncat NN I-NP\n\n")
    result = run("train", "--train", train, "--model", tmp_path / "m", *args)
    line = assert_clean_error(result, "lang (--lang)", contains)
    assert says in line
    assert not (tmp_path / "m").exists()


def test_api_refuses_a_language_without_the_resource(chunk_data):
    from structperc import Tagger
    from structperc.segmenter import Segmenter

    for fit in (lambda: Tagger(task="chunk", lang="nl", epochs=1).fit(str(chunk_data[0])),
                lambda: Tagger(task="ner", lang="el", epochs=1).fit(str(chunk_data[0])),
                lambda: Segmenter(lang="en", epochs=1).fit(CWS_TRAIN)):
        with pytest.raises(InputError, match=r"lang \(--lang\)") as e:
            fit()
        assert "\n" not in str(e.value)
