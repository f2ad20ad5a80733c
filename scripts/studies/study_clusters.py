"""Study: Brown-cluster prefix templates on UD English-EWT UPOS.

Protocol: clusters are learnt from the *training* file's words (no other raw text is on this machine),
the variants are scored on en_ewt-ud-dev.conllu (which also picks the epoch), and only with ``--test``
is the test file scored, for the chosen variant and the default. Clusters from the labelled training
text are not the unlabelled data of the published results (Koo et al. 2008, Owoputi et al. 2013): the
gain there comes from words the labelled data never shows; here every clustered word was seen in
training, so expect little.

The cluster columns reach the tagger as ``structperc train --clusters FILE`` gives them
(``Tagger.fit(..., clusters=FILE)``): the model keeps the map, so it also annotates the dev and test files
at scoring time.

    python scripts/studies/study_clusters.py [--clusters 100] [--min-count 2] [--epochs 20] [--seeds 0]
                                     [--paths clusters.txt] [--variants default,clusters] [--test]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from structperc import Tagger
from structperc.features.clusters import learn_clusters, raw_sentences, write_paths
from structperc.features.templates import preset
from structperc.io.output import output_stream

EWT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "corpora",
                   "ud_en_ewt")
TRAIN, DEV, TEST = (f"{EWT}/en_ewt-ud-{part}.conllu" for part in ("train", "dev", "test"))
CLUSTER_TEMPLATES = ["clu4[0]", "clu6[0]", "clu10[0]", "clu[0]"]
#: The POS preset this study measured against: the one before the ambiguity classes (`study_pos.py`) joined it.
BASE = [line for line in preset("pos") if "amb[" not in line]
VARIANTS = {
    "default": BASE,
    "clusters": BASE + CLUSTER_TEMPLATES,
    "clusters+window": BASE + CLUSTER_TEMPLATES + ["clu4[-1]", "clu4[1]", "clu[-1]", "clu[1]"],
}


def training_text(path: str, out: str) -> None:
    """The words of a CoNLL-U file, one sentence per line (the raw text the clusters are learnt from)."""
    from structperc.io.conll import read_conllu

    corpus = read_conllu(path, columns=["word"])
    with output_stream(out) as fh:
        for sent in corpus.sentences("word"):
            fh.write(" ".join(sent) + "\n")


def cluster_file(args: argparse.Namespace) -> str:
    """A Brown clusters paths file: ``--paths`` when it exists, else learnt from the training text (and
    written to ``--paths``, or beside the raw text in the temporary folder)."""
    if args.paths and os.path.exists(args.paths):
        print(f"clusters: reading {args.paths}", file=sys.stderr)
        return args.paths
    base = args.paths or os.path.join(tempfile.gettempdir(), "ewt_clusters")
    raw = base + ".raw.txt"
    training_text(TRAIN, raw)
    start = time.perf_counter()
    clusters = learn_clusters(raw_sentences(raw), args.clusters, args.min_count, progress=True)
    print(f"clusters: {len(clusters.paths)} words, {clusters.n_clusters} clusters, "
          f"{time.perf_counter() - start:.0f} s", file=sys.stderr)
    path = args.paths or base + ".paths"
    with output_stream(path) as fh:
        write_paths(clusters, fh)
    return path


def run(lines: list[str], seed: int, epochs: int, test: bool, clusters: str | None) -> dict:
    start = time.perf_counter()
    tagger = Tagger(task="pos", template=lines, epochs=epochs, seed=seed, folds=1).fit(TRAIN, dev=DEV,
                                                                                        clusters=clusters)
    seconds = time.perf_counter() - start
    out = {"dev": 100 * tagger.evaluate(DEV)["accuracy"], "best_epoch": tagger.best_epoch_, "seconds": seconds}
    if test:
        out["test"] = 100 * tagger.evaluate(TEST)["accuracy"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=100)
    ap.add_argument("--min-count", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--paths", default="", help="A paths file to reuse (or to write the learnt clusters to).")
    ap.add_argument("--variants", default="default,clusters")
    ap.add_argument("--test", action="store_true", help="Also score the test file (default and 'clusters').")
    args = ap.parse_args()
    names = args.variants.split(",")
    clusters = cluster_file(args) if any(name != "default" for name in names) else None
    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"| variant | seeds | dev UPOS (mean) | per seed | best epochs | train s |{' test |' if args.test else ''}")
    print(f"|---|---|---|---|---|---|{'---|' if args.test else ''}")
    for name in names:
        results = [run(VARIANTS[name], seed, args.epochs, args.test, clusters if name != "default" else None)
                   for seed in seeds]
        dev = [r["dev"] for r in results]
        row = (f"| {name} | {args.seeds} | {statistics.mean(dev):.2f} | {' '.join(f'{d:.2f}' for d in dev)} | "
               f"{' '.join(str(r['best_epoch']) for r in results)} | "
               f"{statistics.mean(r['seconds'] for r in results):.1f} |")
        if args.test:
            row += f" {statistics.mean(r['test'] for r in results):.2f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
