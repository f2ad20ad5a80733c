#!/usr/bin/env python
"""Iterative parameter mixing: accuracy by number of shards, and wall time by workers.

    python scripts/bench/bench_scale.py                               # everything below, defaults
    python scripts/bench/bench_scale.py --skip-wall --shards 1,2,4,8  # accuracy only
    python scripts/bench/bench_scale.py --skip-accuracy --repeats 3   # wall times only
    python scripts/bench/bench_scale.py --skip-wall --mixing uniform,mistakes --refit no   # the default mixing

Accuracy (nothing is chosen on a test file): CoNLL-2000 chunking (``--columns word,pos,chunk``,
the chunk task's defaults) trained as ``structperc train --dev-split 0.1 --workers N`` does: a
seeded 10 % of train.txt held out, N shards trained for ``--epochs`` epochs with the held-out F1
after each, the best epoch kept; with ``--refit yes`` (default) the model is then retrained on all of
train.txt for that many epochs, and only that model is scored on test.txt (for the report). With
``--refit no`` only the held-out figures are computed (what chose the default mixing). SXU word
segmentation likewise with ``--accuracy conll2000,sxu`` (word F1 on its test.txt).

Wall time: ``structperc train`` end to end (start-up, reading, features, epochs, saving) in a
subprocess with ``--workers 1`` and ``--workers 2``, on CoNLL-2000 (chunk task's epochs unless
``--conll-epochs``) and SXU (``--task cws``, 15 epochs); the best of ``--repeats`` runs, and the sum of
the epoch times the command reports (the part that runs on the workers; reading and feature
extraction are still serial). The machine's other load shows in these figures: repeat them.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"
CONLL = CORPORA / "conll2000"
SXU = CORPORA / "sighan2008_sxu"
EPOCH_LINE = re.compile(r"^epoch (\d+)/(\d+) .* ([0-9.]+) s ")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def fit(corpus: str, workers: int, epochs: int, mixing: str | None, refit: bool, seed: int = 0):
    """The fitted estimator (held-out slice 0.1 of train; ``seed``: the slice and the epochs' orders)."""
    if corpus == "sxu":
        from structperc.segmenter import Segmenter

        # a Segmenter always refits (its saved parameters have no ``refit``)
        return Segmenter(epochs=epochs, dev_split=0.1, seed=seed).fit(str(SXU / "train.txt"), workers=workers,
                                                                      mixing=mixing)
    from structperc import Tagger

    return Tagger(task="chunk", columns=["word", "pos", "chunk"], epochs=epochs, dev_split=0.1, seed=seed,
                  refit=refit).fit(str(CONLL / "train.txt"), workers=workers, mixing=mixing)


def accuracy(corpora: list[str], shards: list[int], epochs: int, mixings: list[str], refit: bool,
             seed: int = 0) -> None:
    for corpus in corpora:
        test = SXU / "test.txt" if corpus == "sxu" else CONLL / "test.txt"
        print(f"\n== {corpus}: held-out 0.1 of train (seed {seed}), {epochs} epochs, best epoch by held-out F1"
              + (", refit on all of train, scored on test.txt" if refit else ""))
        print(f"{'shards':>6} {'mixing':>9} {'best':>5} {'held-out F1':>12} {'test F1':>8} "
              f"{'Δ test vs 1':>12} {'epochs to 99.5% of best':>24} {'seconds':>8}")
        base = None
        for mixing in mixings:
            for n in shards:
                if n == 1 and mixing != mixings[0]:
                    continue
                started = time.perf_counter()
                model = fit(corpus, n, epochs, mixing, refit, seed)
                seconds = time.perf_counter() - started
                history = getattr(model, "dev_history_", None) or model.history_
                scores = [r.dev_score for r in history]
                best = max(range(len(scores)), key=lambda i: (scores[i], -i))
                reach = next(i for i, s in enumerate(scores) if s >= 0.995 * scores[best]) + 1
                refits = refit or corpus == "sxu"
                test_f1 = model.score(str(test)) if refits else float("nan")
                if n == 1:
                    base = test_f1
                delta = 100 * (test_f1 - base) if base is not None and refits else float("nan")
                print(f"{n:>6} {mixing if n > 1 else '-':>9} {best + 1:>5} {100 * scores[best]:>12.2f} "
                      f"{100 * test_f1:>8.2f} {delta:>+12.2f} {reach:>24} {seconds:>8.1f}", flush=True)


def _train_cmd(corpus: str, workers: int | str, epochs: int | None, model: Path) -> list[str]:
    """``workers``: a number, or ``"dask:N"`` (N shards on ``--dask local:N``)."""
    dask = isinstance(workers, str)
    n = int(str(workers).split(":")[1]) if dask else workers
    cmd = [sys.executable, "-m", "structperc.cli", "train", "--model", str(model), "--workers", str(n)]
    cmd += ["--dask", f"local:{n}"] if dask else []
    if corpus == "sxu":
        cmd += ["--train", str(SXU / "train.txt"), "--task", "cws", "--epochs", str(epochs or 15)]
    else:
        cmd += ["--train", str(CONLL / "train.txt"), "--columns", "word,pos,chunk"]
        cmd += ["--epochs", str(epochs)] if epochs else []
    return cmd


def wall(corpora: list[str], workers: list, repeats: int, conll_epochs: int | None) -> None:
    print(f"\n== structperc train, end to end, best of {repeats} (worker counts interleaved)")
    print(f"{'corpus':>9} {'workers':>7} {'wall s':>8} {'ratio':>6} {'epochs s':>9} {'ratio':>6} "
          f"{'rest s':>7}  (rest: start-up, reading, features, saving)")
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in corpora:
            best: dict = {}
            for r in range(repeats):
                for n in workers:
                    started = time.perf_counter()
                    done = subprocess.run(_train_cmd(corpus, n, None if corpus == "sxu" else conll_epochs,
                                                     Path(tmp) / f"{corpus}{n}{r}"),
                                          capture_output=True, text=True, check=True)
                    seconds = time.perf_counter() - started
                    epochs = sum(float(m.group(3)) for m in map(EPOCH_LINE.match, done.stderr.splitlines())
                                 if m)
                    if n not in best or seconds < best[n][0]:
                        best[n] = (seconds, epochs)
            first = best[workers[0]]
            for n in workers:
                w, e = best[n]
                print(f"{corpus:>9} {str(n):>7} {w:>8.2f} {w / first[0]:>6.2f} {e:>9.2f} {e / first[1]:>6.2f} "
                      f"{w - e:>7.2f}", flush=True)


_GROWTH_RUN = """
import json, resource, sys
from structperc import Segmenter
seg = Segmenter(epochs=int(sys.argv[2]), seed=0).fit(sys.argv[1], workers=int(sys.argv[3]))
print(json.dumps({"epochs": [r.seconds for r in seg.history_], "tokens": seg.history_[-1].n_tokens,
                  "rss_self_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "rss_workers_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def growth(copies: list[int], epochs: int, workers: int) -> None:
    """Epoch time of SXU concatenated ``copies`` times (one process per size, ``workers`` workers), the
    log-log slope of epoch time against size between the smallest and each larger size, and peak RSS:
    the driver's, and the largest worker process's (``RUSAGE_CHILDREN``: the biggest child)."""
    import json
    import math

    text = (SXU / "train.txt").read_text(encoding="utf-8")
    print(f"\n## Growth: SXU x{', x'.join(map(str, copies))}, {epochs} epochs, --workers {workers}")
    print("| copies | tokens | epoch s (median of epochs 2..) | tokens·epochs/s | slope vs x1 | driver RSS MiB | "
          "largest worker RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for k in copies:
            path = Path(tmp) / f"sxu{k}.txt"
            path.write_text(text * k, encoding="utf-8")
            out = subprocess.run([sys.executable, "-c", _GROWTH_RUN, str(path), str(epochs), str(workers)],
                                 capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            later = sorted(r["epochs"][1:] or r["epochs"])
            epoch = later[len(later) // 2]
            if base is None:
                base = (k, epoch)
            slope = "—" if k == base[0] else f"{math.log(epoch / base[1]) / math.log(k / base[0]):.3f}"
            rss_w = f"{r['rss_workers_kib'] / 1024:.0f}" if workers > 1 else "—"
            print(f"| {k} | {r['tokens']:,} | {epoch:.3f} | {r['tokens'] / epoch:,.0f} | {slope} | "
                  f"{r['rss_self_kib'] / 1024:.0f} | {rss_w} |", flush=True)
            path.unlink()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--accuracy", default="conll2000", help="corpora for the accuracy table: conll2000,sxu")
    ap.add_argument("--shards", default="1,2,4,8", help="shard counts of the accuracy table")
    ap.add_argument("--epochs", type=int, default=10, help="epochs of the accuracy runs")
    ap.add_argument("--seed", type=int, default=0, help="seed of the held-out slice and the epochs' orders")
    ap.add_argument("--mixing", default="uniform", help="mixings to compare: uniform,mistakes")
    ap.add_argument("--refit", choices=["yes", "no"], default="yes",
                    help="retrain on all of train at the best epoch and score test.txt")
    ap.add_argument("--wall", default="conll2000,sxu", help="corpora for the wall-time table")
    ap.add_argument("--workers", default="1,2,dask:2",
                    help="worker counts of the wall-time table; dask:N is N shards on --dask local:N")
    ap.add_argument("--conll-epochs", type=int, default=None, help="epochs of the CoNLL wall-time runs")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--skip-wall", action="store_true")
    ap.add_argument("--growth", default="", help="SXU copies for the growth table, e.g. 1,4,16 (off by default)")
    ap.add_argument("--growth-epochs", type=int, default=4)
    ap.add_argument("--growth-workers", type=int, default=1)
    args = ap.parse_args()
    if not (CONLL / "train.txt").is_file():
        sys.exit(f"corpora not found in {CORPORA}")
    if not args.skip_accuracy:
        accuracy([c for c in args.accuracy.split(",") if c], _ints(args.shards), args.epochs,
                 [m for m in args.mixing.split(",") if m], args.refit == "yes", args.seed)
    if not args.skip_wall:
        counts = [w if w.startswith("dask:") else int(w) for w in args.workers.split(",") if w]
        wall([c for c in args.wall.split(",") if c], counts, args.repeats, args.conll_epochs)
    if args.growth:
        growth(_ints(args.growth), args.growth_epochs, args.growth_workers)


if __name__ == "__main__":
    main()
