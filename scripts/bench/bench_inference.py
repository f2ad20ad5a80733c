#!/usr/bin/env python
"""Cost of inference beyond the best path: token marginals and k-best lists against the
Viterbi decode, on one corpus.

    python scripts/bench/bench_inference.py                       # CoNLL-2000 chunking, default chunk template
    python scripts/bench/bench_inference.py --template crfsuite   # shared transitions (no conditioned template)
    python scripts/bench/bench_inference.py --k 10 --repeat 9

Trains a model once if ``--model`` does not exist (``structperc train``; default model directory
``/tmp/structperc-bench-inference-<template>``), featurizes the test file once, then times, best
of ``--repeat`` runs each on the same features (featurization excluded, as for all rows):

* ``predict`` with the ahead-of-time compiled decoder (when the build is current) and with the
  vectorized numpy decoder (the compiled module hidden);
* `structperc.decode.marginals.marginals` and ``path_log_probs``: the ahead-of-time compiled
  forward-backward (`structperc.decode.fb_kernels`, group ``_aot_fb``) when built, and the numpy
  twin (length batches); the largest difference between the two is printed;
* `structperc.decode.nbest.nbest` for k = 1 and ``--k`` (list Viterbi: the ahead-of-time kernel
  of group ``_aot_nbest`` when built, else numpy);
* when the decoder's ahead-of-time build is missing or stale but numba is installed, the same
  decoder kernel under numba's JIT (its compilation not timed) stands in as the compiled decoder.

The numpy rows run in a child process started with ``STRUCTPERC_KERNELS=jit`` (no ahead-of-time build:
`predict` and `marginals` take their numpy twins), on the same model and test file.

Ratios are printed against both decoders. The targets are marginals <= 3x and
k = 5 lists <= 5x the Viterbi decode.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "conll2000"


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` runs after one warm-up, and the last result."""
    out = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def jit_decoder(w: Any, feats: Any) -> Callable[[], np.ndarray] | None:  # pragma: no cover - needs numba
    """The compiled decoder's kernel under numba's JIT (compiled here, outside the timings), or None
    without numba: the reference when the ``_aot`` build is missing or stale."""
    try:
        from structperc.decode import tag_kernels
    except ImportError:
        return None
    c = np.ascontiguousarray
    sw = w.sparse
    args = (c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32), c(feats.sent_ptr, dtype=np.int64),
            sw.ptr, sw.labels, sw.values, w.base_transitions(), c(w.cond, dtype=np.float32),
            c(w.end, dtype=np.float64))

    def run() -> np.ndarray:
        out = np.empty(int(feats.sent_ptr[-1]), dtype=np.int32)
        tag_kernels.decode_corpus(*args, out)
        return out
    run()
    return run


def featurized(model: Path, test: Path):
    """The saved tagger and the attribute ids of the test file (featurized once, as tagging does)."""
    from structperc import Tagger, predict

    tagger = Tagger.load(model)
    return tagger, predict.featurize(tagger.model_, tagger.gold_corpus(str(test)))


def numpy_twin(args: argparse.Namespace) -> int:
    """The child's part (``STRUCTPERC_KERNELS=jit``: the numpy twins): times and results to ``--numpy-twin``."""
    from structperc.decode import decoder
    from structperc.decode.marginals import marginals

    tagger, feats = featurized(args.model, args.test)
    w = tagger.weights_
    t_np, best_np = best_of(lambda: decoder.predict(w, feats), args.repeat)
    t_mn, (marg_np, log_z_np) = best_of(lambda: marginals(w, feats, args.temperature), args.repeat)
    np.savez(args.numpy_twin, t_np=t_np, t_mn=t_mn, best=best_np, marginals=marg_np, log_z=log_z_np)
    return 0


def run_numpy_twin(args: argparse.Namespace) -> dict[str, Any]:
    """`numpy_twin` in a child process without the ahead-of-time build."""
    with tempfile.TemporaryDirectory(prefix="bench-inference-") as tmp:
        out = Path(tmp) / "numpy.npz"
        cmd = [sys.executable, __file__, "--model", str(args.model), "--test", str(args.test),
               "--repeat", str(args.repeat), "--temperature", str(args.temperature), "--numpy-twin", str(out)]
        subprocess.run(cmd, check=True, env={**os.environ, "STRUCTPERC_KERNELS": "jit"})
        with np.load(out) as done:
            return {name: done[name] for name in done.files}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=Path, default=CORPORA / "train.txt")
    ap.add_argument("--test", type=Path, default=CORPORA / "test.txt")
    ap.add_argument("--columns", default="word,pos,chunk")
    ap.add_argument("--template", default="chunk",
                    help="feature template of the trained model: chunk (the task's default: two "
                         "observation-conditioned transition templates) or crfsuite (shared transitions)")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--model", type=Path, default=None,
                    help="trained here if missing (default /tmp/structperc-bench-inference-<template>)")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--numpy-twin", type=Path, help=argparse.SUPPRESS)  # the child's output file
    args = ap.parse_args(argv)
    if args.numpy_twin is not None:
        return numpy_twin(args)
    if args.model is None:
        args.model = Path(f"/tmp/structperc-bench-inference-{args.template}")

    from structperc.compiled import loader
    from structperc.decode import decoder
    from structperc.decode.marginals import marginals, path_log_probs
    from structperc.decode.nbest import nbest

    if not args.model.exists():
        for path in (args.train, args.test):
            if not path.exists():
                print(f"error: {path} not found", file=sys.stderr)
                return 2
        exe = Path(sys.executable).with_name("structperc")
        cmd = [str(exe), "train", "-q", "--train", str(args.train), "--columns", args.columns,
               "--template", args.template, "--epochs", str(args.epochs), "--model", str(args.model)]
        print("training:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    tagger, feats = featurized(args.model, args.test)
    w = tagger.weights_
    n_tok, n_sent = int(feats.sent_ptr[-1]), len(feats.sent_ptr) - 1
    kt = feats.trans.shape[1]
    print(f"{args.test.name}: {n_sent} sentences, {n_tok} tokens, {w.n_labels} labels, template "
          f"{args.template}: {f'{kt} conditioned transition template(s)' if kt else 'shared transitions'}; "
          f"best of {args.repeat}")

    twin = run_numpy_twin(args)
    rows: list[tuple[str, float]] = []
    compiled = loader.aot("decode_corpus") is not None and loader.mode() == "aot"
    t_comp = float("nan")
    if compiled:
        t_comp, best = best_of(lambda: decoder.predict(w, feats), args.repeat)
        rows.append(("predict (compiled Viterbi)", t_comp))
    else:
        jit = jit_decoder(w, feats)
        if jit is not None:
            t_comp, best = best_of(jit, args.repeat)
            compiled = True
            rows.append(("predict (compiled Viterbi, JIT: no current build)", t_comp))
    t_np, best_np = float(twin["t_np"]), twin["best"]
    if not compiled:
        best = best_np
    rows.append(("predict (numpy Viterbi)", t_np))
    # ---- marginals (forward-backward): the compiled kernel when built, and the numpy twin
    fb_built = loader.aot("fb_corpus") is not None
    t_mn, marg_np, log_z_np = float(twin["t_mn"]), twin["marginals"], twin["log_z"]
    if fb_built:
        t_m, (marg, log_z) = best_of(lambda: marginals(w, feats, args.temperature), args.repeat)
        rows.append((f"marginals (compiled, tau={args.temperature:g})", t_m))
    else:
        marg, log_z = marg_np, log_z_np
    rows.append((f"marginals (numpy, tau={args.temperature:g})", t_mn))
    t_lp, lp = best_of(lambda: path_log_probs(w, feats, best, args.temperature), args.repeat)
    rows.append((f"path_log_probs of the best paths ({'compiled' if fb_built else 'numpy'})", t_lp))
    nb_kind = "compiled" if loader.aot("nbest_corpus") is not None else "numpy"
    t_1, one = best_of(lambda: nbest(w, feats, 1), args.repeat)
    rows.append((f"nbest k=1 ({nb_kind})", t_1))
    t_k, many = best_of(lambda: nbest(w, feats, args.k), args.repeat)
    rows.append((f"nbest k={args.k} ({nb_kind})", t_k))
    print(f"\n{'':<52}{'seconds':>9}{'x numpy':>9}{'x compiled':>12}")
    for name, t in rows:
        print(f"{name:<52}{t:>9.3f}{t / t_np:>9.2f}{t / t_comp:>12.2f}")
    if fb_built:
        print(f"\ncompiled marginals = numpy to {np.abs(marg - marg_np).max():.1e}, "
              f"log Z to {np.abs(log_z - log_z_np).max():.1e}")
    print(f"\nmarginal argmax = predict on {100 * (marg.argmax(axis=1) == best).mean():.3f}% of tokens; "
          f"numpy predict = compiled: {bool((best_np == best).all())}")
    print(f"nbest k=1 = predict: {bool((one.ids[0] == best).all())}; "
          f"k={args.k} first = predict: {bool((many.ids[0] == best).all())}; "
          f"sentences with {args.k} paths: {int((many.scores[:, -1] > -np.inf).sum())}/{n_sent}")
    print(f"mean p(best path) = {np.exp(lp).mean():.3f}; median log Z = {np.median(log_z):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
