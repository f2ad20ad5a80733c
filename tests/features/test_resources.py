"""Language resources (`structperc.features.resources`): the Brown-path decoding, the registry's
one-line errors, a missing package, and (when ``structperc[resources]`` is installed) real reads."""
from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from structperc.errors import InputError
from structperc.features.resources import (
    EXTRA,
    KINDS,
    RESOURCES,
    cluster_paths,
    decode_cluster,
    jieba_words,
    languages,
    provenance,
    resource,
    resources_for,
    word_log_probs,
)
from structperc.features.resources.formats import read_cluster_paths, read_jieba_dict, read_log_probs

ROOT = Path(__file__).resolve().parents[2]
HAVE_SPACY_LOOKUPS = importlib.util.find_spec("spacy_lookups_data") is not None
HAVE_JIEBA = importlib.util.find_spec("jieba") is not None
needs_spacy_lookups = pytest.mark.skipif(
    not HAVE_SPACY_LOOKUPS, reason='spacy-lookups-data is not installed (pip install "structperc[resources]")')
needs_jieba = pytest.mark.skipif(not HAVE_JIEBA, reason='jieba is not installed (pip install "structperc[resources]")')


def one_line(e: pytest.ExceptionInfo[InputError]) -> str:
    message = str(e.value)
    assert "\n" not in message
    return message


# -- decoding -------------------------------------------------------------------------------------

@pytest.mark.parametrize("c, path", [
    (0, None),
    (0b1, "1"),
    (0b10, "01"),
    (0b11, "11"),
    (0b100, "001"),
    (0b1011, "1101"),              # "the" in the English file
    (874, "0101011011"),           # "Monday", "Tuesday", "Friday"
    (2 ** 40, "0" * 40 + "1"),
    (2 ** 63 + 1, "1" + "0" * 62 + "1"),
    (2 ** 100 - 1, "1" * 100),
])
def test_decode_cluster_reads_the_path_from_the_low_bit(c, path):
    assert decode_cluster(c) == path


def test_decode_cluster_round_trips():
    for c in range(1, 5000):
        path = decode_cluster(c)
        assert path is not None and path.endswith("1") and int(path[::-1], 2) == c


@pytest.mark.parametrize("bad", [-1, True, 1.0, "11"])
def test_decode_cluster_refuses_what_is_not_a_cluster(bad):
    with pytest.raises(InputError, match="non-negative integer"):
        decode_cluster(bad)


# -- the file formats, on small files -------------------------------------------------------------

def write_gz_json(path: Path, data: object) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    return path


def test_read_cluster_paths_keeps_trusted_words_only(tmp_path):
    path = write_gz_json(tmp_path / "xx_lexeme_cluster.json.gz", {"the": 11, "rare": 0, "Monday": 874, "x": 4})
    assert read_cluster_paths(path) == {"the": "1101", "Monday": "0101011011", "x": "001"}


def test_read_cluster_paths_names_a_bad_value(tmp_path):
    path = write_gz_json(tmp_path / "c.json.gz", {"ok": 3, "bad": "101"})
    with pytest.raises(InputError) as e:
        read_cluster_paths(path)
    assert str(path) in one_line(e) and "'bad'" in str(e.value)


def test_read_log_probs(tmp_path):
    path = write_gz_json(tmp_path / "p.json.gz", {"the": -3.5, "dog": -9})
    assert read_log_probs(path) == {"the": -3.5, "dog": -9.0}
    with pytest.raises(InputError, match="log probability"):
        read_log_probs(write_gz_json(tmp_path / "q.json.gz", {"the": 0.5}))
    assert read_log_probs(path, min_log_prob=-5.0) == {"the": -3.5}    # filtered while reading
    for bad in ({"the": True}, {"the": "x"}, {"the": [1]}, {"the": float("-inf")}, {"the": float("nan")}):
        with pytest.raises(InputError, match="log probability"):
            read_log_probs(write_gz_json(tmp_path / "bad.json.gz", bad))


def test_a_file_that_is_not_gzipped_json(tmp_path):
    path = tmp_path / "p.json.gz"
    path.write_text("not gzip")
    with pytest.raises(InputError, match="not a gzipped JSON file"):
        read_log_probs(path)
    with pytest.raises(InputError, match="JSON object"):
        read_log_probs(write_gz_json(tmp_path / "list.json.gz", [1, 2]))


def test_read_jieba_dict(tmp_path):
    path = tmp_path / "dict.txt"
    path.write_text("AT&T 3 nz\n中国 5000 ns\n\n用户词 7\n中国 6000 ns\n", encoding="utf-8")
    assert read_jieba_dict(path) == {"AT&T": 3, "中国": 6000, "用户词": 7}   # the last frequency wins, as in jieba
    path.write_text("好 10 a\n坏\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        read_jieba_dict(path)
    assert one_line(e).startswith(f"{path}:2: ")


# -- the registry ---------------------------------------------------------------------------------

def test_the_table():
    assert languages() == ["de", "el", "en", "es", "nl", "zh"]
    assert {(r.language, r.kind) for r in RESOURCES.values()} == {
        ("de", "clusters"), ("en", "clusters"), ("es", "clusters"),
        ("de", "probabilities"), ("el", "probabilities"), ("en", "probabilities"), ("es", "probabilities"),
        ("en", "lemmas"), ("nl", "lemmas"), ("zh", "words")}
    for name, r in RESOURCES.items():
        assert name == f"{r.language}-{r.kind}" and r.kind in KINDS
        # English lemma tables are WordNet 3.0's, under Princeton's licence; everything else is MIT
        assert r.extra == EXTRA == "resources"
        assert r.licence == ("WordNet 3.0 licence (Princeton University)" if name == "en-lemmas" else "MIT")
    assert resource("en-clusters").file == "data/en_lexeme_cluster.json.gz"
    assert resource(("el", "probabilities")).package == "spacy-lookups-data"
    assert resource(("zh", "words")).import_name == "jieba"


def test_resources_for_and_resource_agree():
    assert [r.kind for r in resources_for("en")] == ["clusters", "probabilities", "lemmas"]
    assert [r.name for r in resources_for(" EN ")] == ["en-clusters", "en-probabilities", "en-lemmas"]
    assert resource(("en", "clusters")) is resource("en-clusters")


def test_an_unknown_language_is_one_line_listing_the_known_ones():
    with pytest.raises(InputError) as e:
        resources_for("xx")
    assert one_line(e) == "no language resources for 'xx': known languages are de, el, en, es, nl, zh"
    with pytest.raises(InputError) as e:
        resource(("xx", "clusters"))
    assert "known languages are de, el, en, es, nl, zh" in one_line(e)


def test_an_unknown_kind_is_one_line_listing_the_known_ones():
    with pytest.raises(InputError) as e:
        resource(("en", "embeddings"))
    assert one_line(e) == "unknown resource kind 'embeddings': known kinds are clusters, probabilities, lemmas, words"
    with pytest.raises(InputError) as e:
        resource(("el", "clusters"))
    assert one_line(e) == "no clusters for language 'el': it has probabilities"
    with pytest.raises(InputError) as e:
        cluster_paths("zh")
    assert one_line(e) == "no clusters for language 'zh': it has words"


def test_an_unknown_name_is_one_line_listing_the_known_ones():
    with pytest.raises(InputError) as e:
        resource("en-embeddings")
    assert one_line(e).startswith("unknown language resource 'en-embeddings': known resources are de-clusters, ")


# -- a missing package ----------------------------------------------------------------------------

BLOCKED = textwrap.dedent("""
    import sys

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "spacy_lookups_data":
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Refuse())
    from structperc.errors import InputError
    from structperc.features.resources import cluster_paths
    try:
        cluster_paths("en")
    except InputError as e:
        print(e)
    else:
        print("read")
""")


def test_a_missing_package_is_one_line_naming_the_extra():
    done = subprocess.run([sys.executable, "-c", BLOCKED], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("the en-clusters resource needs the package spacy-lookups-data, which is not installed: "
                           'pip install "structperc[resources]"\n')


def test_a_missing_package_in_process(monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)   # how Python marks a module that must not import
    with pytest.raises(InputError) as e:
        jieba_words()
    assert one_line(e) == ("the zh-words resource needs the package jieba, which is not installed: "
                           'pip install "structperc[resources]"')


# -- real reads -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def en_clusters() -> dict[str, str]:
    if not HAVE_SPACY_LOOKUPS:
        pytest.skip('spacy-lookups-data is not installed (pip install "structperc[resources]")')
    return cluster_paths("en")


@pytest.fixture(scope="module")
def zh_words() -> dict[str, int]:
    if not HAVE_JIEBA:
        pytest.skip('jieba is not installed (pip install "structperc[resources]")')
    return jieba_words()


def test_en_clusters(en_clusters):
    assert len(en_clusters) > 100_000
    assert all(path and set(path) <= {"0", "1"} for path in en_clusters.values())
    for word in ("the", "of", "Monday", "dog", "London"):
        assert set(en_clusters[word]) <= {"0", "1"} and en_clusters[word]
    # similar words share their class or a long prefix, read from the low bit
    assert en_clusters["Monday"] == en_clusters["Tuesday"] == en_clusters["Friday"] == "0101011011"
    assert en_clusters["he"] == en_clusters["she"]
    assert en_clusters["January"][:6] == en_clusters["March"][:6] == "100010"


def test_en_clusters_leave_out_the_untrusted(en_clusters):
    # stored with cluster 0 in spacy-lookups-data 1.0.5 (809,872 of its 1,000,001 words are)
    for word in ("skytoss", "Wookieepedia", "swalot", '"'):
        assert word not in en_clusters


@needs_spacy_lookups
def test_probabilities_and_provenance():
    probs = word_log_probs("en")
    assert len(probs) > 100_000 and all(p <= 0 for p in probs.values())
    assert probs["the"] > probs["dog"] > probs["Monday"]
    assert provenance("en-clusters") == {
        "name": "en-clusters", "package": "spacy-lookups-data",
        "version": importlib.metadata.version("spacy-lookups-data"), "file": "data/en_lexeme_cluster.json.gz",
        "licence": "MIT"}


def test_jieba_words(zh_words):
    assert len(zh_words) > 300_000
    assert zh_words["中国"] > 1000 and all(f >= 0 for f in zh_words.values())


@needs_jieba
def test_jieba_provenance():
    assert provenance(("zh", "words"))["version"] == importlib.metadata.version("jieba")
