#!/usr/bin/env python
"""A probe, not a feature: what scoring the word-level templates once per distinct word would save when tagging.

    python scripts/bench/probe_folded_scores.py MODEL [MODEL ...] --data FILE.conllu [--repeat 5] [--runs 7]

A template whose parts read one offset of columns that are each a function of the word there (the word, and
the dictionary columns written from it: ambiguity classes, clusters, lexicon classes, capitalisation evidence)
gives the same weight row wherever that word stands at that offset. Its rows can be summed once per distinct
word and offset (``folded``: 5 summed rows per token for offsets −2…+2, instead of one row per template), which
is the "per-word sum of the word-level templates' rows" `scripts/README.md` names for POS tagging with
``--lang``. This probe builds the folded attribute matrix from the model's own ids and times the compiled
decoder on both (one thread, best of ``--runs``), and the attribute ids of the whole file against those of its
distinct words alone (what the atoms cost per distinct value, which folding would not save).

Folding adds the rows in another order (per group, then the groups), so its float32 sums may differ from the
decoder's in the last bits; the probe counts the tokens whose label differs. It was not built into the
decoder: every tagging kernel (k-best, marginals, constraints) would have to read the same folded lattice, and
the probe shows what it would give first.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _kernels import require_current_build  # noqa: E402

from structperc.compiled import loader  # noqa: E402
from structperc.io.conll import read_conllu  # noqa: E402
from structperc.io.corpus import Corpus  # noqa: E402
from structperc.model.schema import read  # noqa: E402
from structperc.predict.decoding import with_columns  # noqa: E402


def offset_groups(model, columns: set[str]) -> list[int | None]:
    """Per state template, the offset it reads when it reads only ``columns`` at one offset (0 for the bias),
    else None."""
    groups: list[int | None] = []
    for t in (t for t in model.features.templates if not t.transition):
        offsets = {p.offset for p in t.parts}
        if not t.parts:
            groups.append(0)
        elif len(offsets) == 1 and all(p.other is None and p.atom.column in columns for p in t.parts):
            groups.append(offsets.pop())
        else:
            groups.append(None)
    return groups


def folded(X: np.ndarray, sent_ptr: np.ndarray, codes: np.ndarray, groups: list[int | None], dense: np.ndarray) \
        -> tuple[np.ndarray, np.ndarray]:
    """The attribute matrix with each offset group's columns replaced by one column of summed rows (appended
    to ``dense``, the model's rows as a dense (A, L) array), and the extended rows."""
    n = X.shape[0]
    sent_of = np.repeat(np.arange(len(sent_ptr) - 1), np.diff(sent_ptr))
    outside = int(codes.max()) + 1
    tables, columns = [dense], []
    start = dense.shape[0]
    for o in sorted({g for g in groups if g is not None}):
        ks = [k for k, g in enumerate(groups) if g == o]
        pos = np.arange(n) + o
        inside = (pos >= sent_ptr[sent_of]) & (pos < sent_ptr[sent_of + 1])
        key = np.where(inside, codes[np.clip(pos, 0, n - 1)], outside)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
        summed = np.zeros((len(first), dense.shape[1]), dtype=np.float32)
        for k in ks:
            ids = X[first, k]
            summed += np.where((ids >= 0)[:, None], dense[np.maximum(ids, 0)], np.float32(0))
        columns.append(inverse.astype(np.int32) + start)
        start += len(first)
        tables.append(summed)
    others = [X[:, k] for k, g in enumerate(groups) if g is None]
    return np.ascontiguousarray(np.column_stack(columns + others).astype(np.int32)), np.vstack(tables)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--data", required=True, help="a CoNLL-U file (EWT test)")
    ap.add_argument("--repeat", type=int, default=5, help="the file repeated this many times [5]")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    require_current_build()
    kernel = loader.aot("decode_corpus")
    if kernel is None:
        sys.exit("the ahead-of-time kernels are not built: python -m structperc.compiled.build")
    text = Path(args.data).read_text(encoding="utf-8").rstrip("\n") + "\n\n"
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.conllu"
        data.write_text(text * args.repeat, encoding="utf-8")
        print("| model | templates (word-level) | ids: file / its distinct words, s | decode: as is / folded, s "
              "| summed rows | labels changed |\n|---|---|---|---|---|---|")
        for path in args.models:
            model = read(path)
            raw = read_conllu(data)
            assert isinstance(raw, Corpus)
            corpus = with_columns(model, raw)
            word = model.task.token_column
            distinct = corpus.factorize(word)[0]
            alone = with_columns(model, Corpus.from_sentences([[w] for w in distinct]))
            ids_all, ids_distinct = [], []
            for _ in range(args.runs):
                t = time.perf_counter()
                feats = model.features.transform(corpus)
                ids_all.append(time.perf_counter() - t)
                t = time.perf_counter()
                model.features.transform(alone)
                ids_distinct.append(time.perf_counter() - t)
            w, sw = model.weights, model.weights.sparse
            X = np.ascontiguousarray(feats.state, dtype=np.int32)
            XT = np.ascontiguousarray(feats.trans, dtype=np.int32)
            sp = np.ascontiguousarray(feats.sent_ptr, dtype=np.int64)
            base, end = w.base_transitions(), np.ascontiguousarray(w.end, dtype=np.float64)
            Wc = np.ascontiguousarray(w.cond, dtype=np.float32)
            L = base.shape[1]
            dense = sw.to_dense()
            word_like = {word} | set(model.dictionary.columns if model.dictionary is not None else ())
            groups = offset_groups(model, word_like)
            X2, rows = folded(X, sp, corpus.factorize(word)[1], groups, dense)
            ptr2 = np.arange(len(rows) + 1, dtype=np.int64) * L
            lab2 = np.tile(np.arange(L, dtype=np.int16), len(rows))
            W2 = np.ascontiguousarray(rows.ravel())
            out1, out2 = np.empty(len(X), np.int32), np.empty(len(X), np.int32)
            as_is, fold = [], []
            for _ in range(args.runs):
                t = time.perf_counter()
                kernel(X, XT, sp, sw.ptr, sw.labels, sw.values, base, Wc, end, out1)
                as_is.append(time.perf_counter() - t)
                t = time.perf_counter()
                kernel(X2, XT, sp, ptr2, lab2, W2, base, Wc, end, out2)
                fold.append(time.perf_counter() - t)
            n_word = sum(g is not None for g in groups)
            print(f"| {path} | {len(groups)} ({n_word}) | {min(ids_all):.3f} / {min(ids_distinct):.3f} | "
                  f"{min(as_is):.3f} / {min(fold):.3f} | {len(rows) - len(dense):,} | "
                  f"{int((out1 != out2).sum())} of {len(X):,} |", flush=True)


if __name__ == "__main__":
    main()
