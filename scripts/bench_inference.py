#!/usr/bin/env python
"""Cost of inference beyond the best path (issue 16): token marginals and k-best lists against the
Viterbi decode, on one corpus.

    python scripts/bench_inference.py                       # CoNLL-2000 chunking, crfsuite template
    python scripts/bench_inference.py --k 10 --prototype    # plus a numba-JIT forward-backward

Trains a model once if ``--model`` does not exist (``structperc train``), featurizes the test file
once, then times, best of ``--repeat`` runs each on the same features (featurization excluded, as
for all rows):

* ``predict`` with the ahead-of-time compiled decoder (when the build is current) and with the
  vectorized numpy decoder (the compiled module hidden);
* `structperc.decode.marginals.marginals` (forward-backward, numpy);
* `structperc.decode.nbest.nbest` for k = 1 and ``--k`` (list Viterbi, numpy);
* with ``--prototype``, a sketch of what a compiled marginals kernel would cost: a numba-JIT
  kernel scoring tokens as the compiled decoder does, then a scaled forward-backward per sentence
  (its compilation is not timed; shared transition matrices only, no underflow guard: a cost
  estimate, not a replacement).

Ratios are printed against both decoders. The acceptance of issue 16 asks marginals <= 3x and
k = 5 lists <= 5x the Viterbi decode.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora" / "conll2000"


def best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Smallest wall time of ``repeat`` runs after one warm-up, and the last result."""
    out = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def prototype_kernel():  # pragma: no cover - needs numba's JIT, used by --prototype only
    """A numba marginals kernel in the shape of `structperc.decode.tag_kernels.decode_corpus`.

    Per sentence: the token scores from the sparse state weights (float32, as the compiled
    decoder), then a scaled forward-backward in probability space (Rabiner 1989, section V.A:
    each α_t normalized, log Z the sum of the logs of the normalizers), with the transition
    exponentials computed once per corpus (shared transitions only) and one exp per label and
    token. Unlike `marginals` it has no underflow guard (a probability below ~1e-308 relative to
    its column's best becomes 0), so it is a cost estimate, not a replacement.
    """
    from numba import njit

    @njit(cache=False, nogil=True)
    def marginals_corpus(X, sent_ptr, ptr, lab, W, base, end, inv_tau, out, log_z):
        L = base.shape[1]
        dense = lab.shape[0] == (ptr.shape[0] - 1) * L
        K = X.shape[1]
        colmax = np.empty(L)
        E = np.empty((L, L))
        for j in range(L):
            m = -np.inf
            for i in range(L):
                m = max(m, np.float64(base[i, j]) * inv_tau)
            colmax[j] = m if m > -np.inf else 0.0
            for i in range(L):
                E[i, j] = np.exp(np.float64(base[i, j]) * inv_tau - colmax[j])
        ET = E.T.copy()
        ends = np.empty(L)
        for j in range(L):
            ends[j] = np.exp(end[j] * inv_tau)
        n = sent_ptr.shape[0] - 1
        max_len = 1
        for s in range(n):
            max_len = max(max_len, sent_ptr[s + 1] - sent_ptr[s])
        A = np.empty((max_len, L))
        Bt = np.empty((max_len, L))
        V = np.empty((max_len, L))
        c = np.empty(max_len)
        state = np.empty(L, dtype=np.float32)
        for s in range(n):
            p0 = sent_ptr[s]
            T = sent_ptr[s + 1] - p0
            if T == 0:
                log_z[s] = 0.0
                continue
            lz = 0.0
            for t in range(T):
                for y in range(L):
                    state[y] = np.float32(0.0)
                for k in range(K):
                    at = X[p0 + t, k]
                    if at >= 0:
                        if dense:
                            for y in range(L):
                                state[y] += W[at * L + y]
                        else:
                            for q in range(ptr[at], ptr[at + 1]):
                                state[lab[q]] += W[q]
                m = -np.inf
                for y in range(L):   # v_t(y) = exp(state + colmax - m_t); t = 0 enters from <bos>
                    x = np.float64(state[y]) * inv_tau + (np.float64(base[L, y]) * inv_tau if t == 0
                                                          else colmax[y])
                    V[t, y] = x
                    m = max(m, x)
                for y in range(L):
                    V[t, y] = np.exp(V[t, y] - m)
                lz += m
                if t == 0:
                    for y in range(L):
                        A[0, y] = V[0, y]
                else:                # row-times-matrix with the labels innermost (vectorizes)
                    for y in range(L):
                        A[t, y] = 0.0
                    for i in range(L):
                        a = A[t - 1, i]
                        for y in range(L):
                            A[t, y] += a * E[i, y]
                    for y in range(L):
                        A[t, y] *= V[t, y]
                tot = 0.0
                for y in range(L):
                    tot += A[t, y]
                c[t] = tot
                lz += np.log(tot)
                for y in range(L):
                    A[t, y] /= tot
            z_end = 0.0
            for y in range(L):
                z_end += A[T - 1, y] * ends[y]
            log_z[s] = lz + np.log(z_end)
            for y in range(L):
                Bt[T - 1, y] = ends[y] / z_end
            for t in range(T - 2, -1, -1):
                for i in range(L):
                    Bt[t, i] = 0.0
                for j in range(L):
                    wj = V[t + 1, j] * Bt[t + 1, j] / c[t + 1]
                    for i in range(L):
                        Bt[t, i] += ET[j, i] * wj
            for t in range(T):
                for y in range(L):
                    out[p0 + t, y] = A[t, y] * Bt[t, y]

    return marginals_corpus


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", type=Path, default=CORPORA / "train.txt")
    ap.add_argument("--test", type=Path, default=CORPORA / "test.txt")
    ap.add_argument("--columns", default="word,pos,chunk")
    ap.add_argument("--template", default="crfsuite")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--model", type=Path, default=Path("/tmp/chunkC"), help="trained here if missing")
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--prototype", action="store_true", help="also time a numba-JIT forward-backward")
    args = ap.parse_args(argv)

    from structperc import Tagger
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
    tagger = Tagger.load(args.model)
    corpus = tagger._corpus(str(args.test), need_tags=False)
    feats = tagger.features_.transform(tagger._annotated(corpus))
    w = tagger.weights_
    n_tok, n_sent = int(feats.sent_ptr[-1]), len(feats.sent_ptr) - 1
    print(f"{args.test.name}: {n_sent} sentences, {n_tok} tokens, {w.n_labels} labels, "
          f"{'per-token' if feats.trans.shape[1] else 'shared'} transitions; best of {args.repeat}")

    rows: list[tuple[str, float]] = []
    compiled = loader.aot("decode_corpus") is not None and loader.mode() == "aot"
    t_comp = float("nan")
    if compiled:
        t_comp, best = best_of(lambda: decoder.predict(w, feats), args.repeat)
        rows.append(("predict (compiled Viterbi)", t_comp))
    saved = loader._AOT
    loader._AOT = None
    try:
        t_np, best_np = best_of(lambda: decoder.predict(w, feats), args.repeat)
    finally:
        loader._AOT = saved
    if not compiled:
        best = best_np
    rows.append(("predict (numpy Viterbi)", t_np))
    t_m, (marg, log_z) = best_of(lambda: marginals(w, feats, args.temperature), args.repeat)
    rows.append((f"marginals (numpy, tau={args.temperature:g})", t_m))
    t_lp, lp = best_of(lambda: path_log_probs(w, feats, best, args.temperature), args.repeat)
    rows.append(("path_log_probs of the best paths", t_lp))
    t_1, one = best_of(lambda: nbest(w, feats, 1), args.repeat)
    rows.append(("nbest k=1 (numpy)", t_1))
    t_k, many = best_of(lambda: nbest(w, feats, args.k), args.repeat)
    rows.append((f"nbest k={args.k} (numpy)", t_k))
    if args.prototype:
        kernel = prototype_kernel()
        if feats.trans.shape[1]:
            print("--prototype: shared transitions only; skipped")
        else:
            sw = w.sparse

            def run() -> np.ndarray:
                out = np.empty((n_tok, w.n_labels))
                kernel(np.ascontiguousarray(feats.state, dtype=np.int32), feats.sent_ptr, sw.ptr, sw.labels,
                       sw.values, w.base_transitions(), w.end, 1.0 / args.temperature, out, np.empty(n_sent))
                return out
            t_p, proto = best_of(run, args.repeat)
            rows.append(("prototype JIT marginals kernel", t_p))
            print(f"prototype agrees with marginals to {np.abs(proto - marg).max():.1e}")

    print(f"\n{'':<44}{'seconds':>9}{'x numpy':>9}{'x compiled':>12}")
    for name, t in rows:
        print(f"{name:<44}{t:>9.3f}{t / t_np:>9.2f}{t / t_comp:>12.2f}")
    print(f"\nmarginal argmax = predict on {100 * (marg.argmax(axis=1) == best).mean():.3f}% of tokens; "
          f"numpy predict = compiled: {bool((best_np == best).all())}")
    print(f"nbest k=1 = predict: {bool((one.ids[0] == best).all())}; "
          f"k={args.k} first = predict: {bool((many.ids[0] == best).all())}; "
          f"sentences with {args.k} paths: {int((many.scores[:, -1] > -np.inf).sum())}/{n_sent}")
    print(f"mean p(best path) = {np.exp(lp).mean():.3f}; median log Z = {np.median(log_z):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
