"""The scripts around ``--lang``: the benchmark's CRFsuite side reads the same cluster paths as structperc's
(`_bench_crfsuite_worker.with_clusters`), and `scripts/score_tagged.py` scores tagged output by hand-checked
figures."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from testkit import REPO

WORKER = REPO / "scripts" / "bench" / "_bench_crfsuite_worker.py"
SCORE = REPO / "scripts" / "score_tagged.py"
needs_lookups = pytest.mark.skipif(importlib.util.find_spec("spacy_lookups_data") is None,
                                   reason="the language resources need pip install \"structperc[resources]\"")


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_lookups
def test_the_crfsuite_side_reads_the_paths_structperc_reads():
    from structperc.features.resources.language import language_clusters

    worker = load(WORKER, "bench_worker")
    featurize = worker.with_clusters(lambda X: [["bias"] for _ in X], "en")
    words = ["Tuesday", "banana", "Qzxjkvw"]
    out = featurize([{"w": w, "F": []} for w in words])
    paths = [language_clusters("en").path(w) for w in words]
    assert paths[0] and paths[1] and paths[2] is None
    for t, attributes in enumerate(out):
        assert attributes[0] == "bias" and len(attributes) == 1 + 3 * 4
        got = dict(a.split("=", 1) for a in attributes[1:])
        for i in (-1, 0, 1):
            p = t + i
            for n in (4, 6, 10, 20):
                want = "__BOS__" if p < 0 else "__EOS__" if p >= len(words) else \
                    "<unk>" if paths[p] is None else paths[p][:n]
                assert got[f"clu{n}[{i}]"] == want


def test_the_benchmark_refuses_lang_for_segmentation():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "bench" / "bench_crfsuite.py"), "--task", "cws",
                           "--lang", "zh"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("bench_crfsuite: --lang mirrors the cluster window")
    assert "Traceback" not in done.stderr


def score(*args):
    return subprocess.run([sys.executable, str(SCORE), *map(str, args)], capture_output=True, text=True, cwd=REPO,
                          timeout=120)


def test_span_f1_of_tagged_output_by_hand(tmp_path):
    # gold spans NP(The cat) VP(sat) NP(Paris); predicted NP(The cat) NP(sat) NP(Paris): 2 of 3 right both ways
    tagged = tmp_path / "t.txt"
    tagged.write_text("-DOCSTART- -X- O O\n\nThe DT B-NP B-NP\ncat NN I-NP I-NP\nsat VBD B-VP B-NP\n\n"
                      "Paris NNP B-NP B-NP\n", encoding="utf-8")
    done = score("spans", tagged)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "span F1 66.67"


def test_upos_and_words_by_hand(tmp_path):
    gold = tmp_path / "gold.conllu"
    gold.write_text("# text = a b\n1\ta\ta\tDET\t_\t_\t0\troot\t_\t_\n2\tb\tb\tNOUN\t_\t_\t1\tdep\t_\t_\n\n",
                    encoding="utf-8")
    tagged = tmp_path / "tagged.conllu"
    tagged.write_text(gold.read_text(encoding="utf-8").replace("NOUN", "VERB"), encoding="utf-8")
    assert score("upos", tagged, gold).stdout.strip() == "UPOS accuracy 50.00"
    seg_gold, seg = tmp_path / "g.txt", tmp_path / "s.txt"
    seg_gold.write_text("上海 体育局\n", encoding="utf-8")
    seg.write_text("上海 体 育局\n", encoding="utf-8")
    # one of 3 predicted words right, one of 2 gold words found: P 33.33, R 50.00, F1 40.00
    assert score("words", seg, seg_gold).stdout.strip() == "word F1 40.00 (precision 33.33, recall 50.00)"
    seg.write_text("上海 体 育局\n多一行\n", encoding="utf-8")
    done = score("words", seg, seg_gold)
    assert done.returncode != 0 and "2 lines, but" in done.stderr
