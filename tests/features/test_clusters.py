"""Brown clusters (`structperc.features.clusters`) and ``structperc clusters``: the paths file, the
prefix columns on a hand-made map, learning on a tiny corpus, the command end to end and its errors."""
from __future__ import annotations

import io
import json

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from testkit import expanded

from structperc.cli.clusters import clusters_command
from structperc.errors import InputError
from structperc.features.clusters import UNKNOWN, ClusterLearner, ClusterMap, learn_clusters, read_paths, write_paths
from structperc.features.dictionary import word_columns
from structperc.io.corpus import Corpus

# "cat" and "dog" (and "sat"/"ran", "the"/"a") occur in the same contexts
TINY = ["the cat sat", "the dog sat", "a cat ran", "a dog ran", "the cat ran", "a dog sat"] * 5


def _shared(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


@pytest.fixture(scope="module")
def learnt() -> ClusterMap:
    return learn_clusters([s.split() for s in TINY], n_clusters=10, min_count=1)


def test_paths_file_round_trips(tmp_path):
    m = ClusterMap({"cat": "0110", "dog": "0111", "sat": "10"}, {"cat": 7, "dog": 3, "sat": 9})
    buf = io.StringIO()
    write_paths(m, buf)
    assert buf.getvalue() == "0110\tcat\t7\n0111\tdog\t3\n10\tsat\t9\n"  # wcluster's layout
    path = tmp_path / "paths.txt"
    path.write_text(buf.getvalue(), encoding="utf-8")
    back = read_paths(path)
    assert back.paths == m.paths and back.counts == m.counts


def test_model_json_round_trips():
    m = ClusterMap({"cat": "0110", "dog": "0110", "sat": "10"}, prefixes=(2, 3), word="form")
    data = json.loads(json.dumps(m.to_json()))
    assert data["paths"] == {"0110": ["cat", "dog"], "10": ["sat"]}
    back = ClusterMap.from_json(data, word="form")
    assert back.paths == m.paths and back.columns == ("clu2", "clu3", "clu") and back.word == "form"
    with pytest.raises(ValueError):
        ClusterMap.from_json({"entities": []})


def test_prefix_columns_by_hand():
    m = ClusterMap({"cat": "0110", "dog": "0111", "sat": "10", "the": "000001111"}, prefixes=(2, 4))
    assert m.columns == ("clu2", "clu4", "clu")
    corpus = Corpus.from_sentences([["The", "cat", "sat"], ["a", "dog"]])
    values = expanded(m.values(corpus))
    # "The" falls back to "the"; a path shorter than the prefix is the whole path; "a" is unknown
    assert values == {"clu2": ["00", "01", "10", UNKNOWN, "01"],
                      "clu4": ["0000", "0110", "10", UNKNOWN, "0111"],
                      "clu": ["000001111", "0110", "10", UNKNOWN, "0111"]}
    annotated = m.annotate(corpus)
    assert annotated.columns["clu4"] == values["clu4"] and annotated.columns["word"] == corpus.columns["word"]
    assert ClusterLearner(m).learn(None) is m and ClusterLearner(m).columns == m.columns


@given(st.dictionaries(st.sampled_from(["a", "b", "A", "c", "dd", "Dd", "e"]), st.text("01", min_size=1, max_size=6),
                       max_size=7),
       st.lists(st.lists(st.sampled_from(["a", "b", "A", "c", "dd", "Dd", "e", "f", "B"]), min_size=1, max_size=6),
                max_size=5))
@settings(max_examples=200, deadline=None)
def test_prefix_columns_number_values_as_word_columns_does(paths, sentences):
    """`ClusterMap.values` takes prefixes of distinct paths, not of every word: the same values and codes, numbered
    in the same order of first occurrence (a model's vocabulary grows in that order), as one lookup per word."""
    m = ClusterMap(paths, prefixes=(1, 2, 4))
    corpus = Corpus.from_sentences(sentences)

    def prefix(n):
        return lambda w: UNKNOWN if m.path(w) is None else m.path(w) if n is None else m.path(w)[:n]
    expected = word_columns(corpus, "word", {c: prefix(n) for c, n in zip(m.columns, (1, 2, 4, None))})
    got = m.values(corpus)
    for column in m.columns:
        assert got[column][0] == expected[column][0]
        assert got[column][1].tolist() == expected[column][1].tolist()


@pytest.mark.parametrize("text, line", [("0110\tcat\t7\nxyz\tdog\t3\n", 2), ("0110 cat 7\n", 1),
                                        ("01\tcat\t1\n10\tcat\t2\n", 2), ("01\tcat\tmany\n", 1)])
def test_bad_paths_file_names_the_line(tmp_path, text, line):
    path = tmp_path / "paths.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        read_paths(path)
    assert err.value.line == line and err.value.path == str(path)


def test_learning_groups_words_that_share_contexts(learnt):
    paths = learnt.paths
    assert set(paths) == {"the", "a", "cat", "dog", "sat", "ran"}
    assert set("".join(paths.values())) <= {"0", "1"}
    close = _shared(paths["cat"], paths["dog"])
    assert close >= 1
    assert all(_shared(paths["cat"], paths[w]) < close for w in ("the", "a", "sat", "ran"))
    assert _shared(paths["sat"], paths["ran"]) > _shared(paths["sat"], paths["cat"])
    assert learnt.counts == {"the": 15, "a": 15, "cat": 15, "dog": 15, "sat": 15, "ran": 15}


def test_fewer_clusters_put_words_of_one_context_in_one_leaf():
    m = learn_clusters([s.split() for s in TINY + ["the bird flew"]], n_clusters=3, min_count=2)
    assert "bird" not in m.paths                      # seen once: below min_count
    assert m.n_clusters == 3 and m.paths["cat"] == m.paths["dog"]


def test_command_end_to_end(tmp_path, learnt):
    raw = tmp_path / "raw.txt"
    raw.write_text("\n".join(s.upper() for s in TINY) + "\n\n", encoding="utf-8")
    out = tmp_path / "clusters.txt"
    r = CliRunner().invoke(clusters_command, [str(raw), "-o", str(out), "--clusters", "10", "--min-count", "1",
                                              "--lowercase"])
    assert r.exit_code == 0, r.output
    assert f"wrote {out}: 6 words in 6 clusters" in r.stderr
    m = read_paths(out)
    assert m.paths == learnt.paths and m.counts["cat"] == 15   # lowercased: the same text as `learnt`'s


@pytest.mark.parametrize("content", [None, "", "\n  \n", "once upon a time\n"])
def test_command_unreadable_or_empty_input_is_one_line(tmp_path, content):
    raw = tmp_path / "raw.txt"
    if content is not None:
        raw.write_text(content, encoding="utf-8")
    out = tmp_path / "clusters.txt"
    r = CliRunner().invoke(clusters_command, [str(raw), "-o", str(out), "-q"])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {raw}: "), r.stderr
    assert not out.exists()
