#!/usr/bin/env python
"""The shipped models from raw text, against the taggers a user would otherwise pick: accuracy from raw
text next to accuracy from gold tokens, and speed against NLTK's tagger and jieba, in one run.

    python scripts/bench/bench_ready.py                 # all parts (~3 min: NLTK's tagger is trained here)
    python scripts/bench/bench_ready.py --part upos     # raw text -> en-upos on EWT test, aligned to gold
    python scripts/bench/bench_ready.py --part speed    # en-xpos on raw text vs NLTK's tagger on tokens
    python scripts/bench/bench_ready.py --part zh       # zh-seg vs jieba's default mode, characters/s
    python scripts/bench/bench_ready.py --part chunk    # en-chunk from words alone vs from gold POS

- ``upos``: every EWT test document's sentences' ``# text`` lines, joined by spaces, go through
  `Tagger.tag_texts` (sentence splitting and tokenization included). A gold token counts as right when a
  predicted token has exactly its character span and its tag; tokens the tokenizer cut otherwise count
  as wrong. Beside it, the same model on the gold tokens (`structperc eval`'s figure).
- ``speed``: the same EWT test text. structperc: raw text in, tags out (tokenizer, sentence splitter
  and tagger, in process). NLTK: ``nltk.tag.perceptron.PerceptronTagger`` (the averaged perceptron behind
  ``nltk.pos_tag``; its shipped pickle cannot be downloaded here, so it is trained on EWT train's PTB
  tags, 5 iterations as its default) given the gold tokens, so it does no tokenizing. Tokens/s over
  gold tokens for both; each side in a fresh process of its own, the best of ``--repeat`` runs, the
  garbage collector off while timing (as `timeit` does).
- ``zh``: SXU test's lines with spaces removed, segmented by `Segmenter.segment_texts` and by
  ``jieba.lcut`` (default mode, HMM on); characters/s, best of ``--repeat``; word F1 of both against gold.
- ``chunk``: CoNLL-2000 test tagged by en-chunk from the words alone (en-xpos predicts the POS it
  reads) and from the gold POS column; span F1 (seqeval, as `structperc eval`).
"""
from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from pathlib import Path

# Sibling scripts (Python puts this folder first on the path when a script here runs): the CoNLL and EWT readers.
from bench_partial import read_sentences
from bench_tokenizer import read_ewt

CORPORA = Path(__file__).resolve().parents[2].parent / "shared" / "corpora"


def ewt_documents(path: Path) -> list[tuple[str, list[tuple[int, int, str, str, str]]]]:
    """EWT documents: (text, gold tokens as (start, end, form, upos, xpos)); the text is the sentences'
    ``# text`` lines joined by a space, each token placed as `bench_tokenizer.read_ewt` places it in
    its sentence (the words of a multi-word token, as the tagger reads them)."""
    out = []
    for doc in read_ewt(path)[0]:
        tokens, offset = [], 0
        for sent in doc.sentences:
            for (start, end), (upos, xpos) in zip(sent.words, sent.tags):
                tokens.append((offset + start, offset + end, sent.text[start:end], upos, xpos))
            offset += len(sent.text) + 1
        out.append((" ".join(sent.text for sent in doc.sentences), tokens))
    return out


def part_upos(args) -> None:
    import structperc
    from structperc import commands

    test = CORPORA / "ud_en_ewt" / "en_ewt-ud-test.conllu"
    docs = ewt_documents(test)
    tagger = structperc.load(args.upos)
    tagged = tagger.tag_texts([d for d, _ in docs])
    right = total = same_span = 0
    for (_, gold), doc in zip(docs, tagged):
        predicted = {(t.start, t.end): t.tag for sent in doc for t in sent}
        for start, end, _, upos, _ in gold:
            total += 1
            tag = predicted.get((start, end))
            same_span += tag is not None
            right += tag == upos
    gold_acc = commands.evaluate(args.upos, str(test))["accuracy"]
    print(f"UPOS on EWT test ({args.upos}): from raw text {100 * right / total:.2f} "
          f"({right}/{total} gold tokens; {100 * same_span / total:.2f} % of them tokenized alike), "
          f"from gold tokens {100 * gold_acc:.2f}")


def nltk_tagger_of(cache: Path):
    """NLTK's `PerceptronTagger` trained on EWT train's PTB tags (5 iterations, its default), kept in
    ``cache`` (its weights, tag dictionary and classes) between runs: training takes minutes."""
    from nltk.tag.perceptron import PerceptronTagger

    tagger = PerceptronTagger(load=False)
    if cache.exists():
        saved = json.loads(cache.read_text(encoding="utf-8"))
        tagger.model.weights, tagger.tagdict = saved["weights"], saved["tagdict"]
        tagger.classes = tagger.model.classes = set(saved["classes"])
        return tagger
    train = _conllu_sentences(CORPORA / "ud_en_ewt" / "en_ewt-ud-train.conllu")
    start = time.perf_counter()
    tagger.train([list(s) for s in train], nr_iter=5)
    print(f"NLTK PerceptronTagger trained on EWT train (PTB tags, 5 iterations) in "
          f"{time.perf_counter() - start:.0f} s; kept in {cache}", file=sys.stderr)
    cache.write_text(json.dumps({"weights": tagger.model.weights, "tagdict": tagger.tagdict,
                                 "classes": sorted(tagger.classes)}), encoding="utf-8")
    return tagger


def speed_worker(side: str, args) -> None:
    """One side of ``--part speed`` in a process of its own (so neither pays for the other's objects in
    memory): prints the best of ``--repeat`` timings as JSON."""
    test = CORPORA / "ud_en_ewt" / "en_ewt-ud-test.conllu"
    if side == "structperc":
        import structperc

        texts = [d for d, _ in ewt_documents(test)]
        tagger = structperc.load(args.xpos)
        tagger.tag_texts(texts[:20])  # warm: spaCy's tokenizer, the kernels

        def run() -> None:
            tagger.tag_texts(texts)
        accuracy = None
    else:
        sentences = _conllu_sentences(test)
        words = [[form for form, _ in s] for s in sentences]
        nltk_tagger = nltk_tagger_of(Path(args.nltk_cache))

        def run() -> None:
            for s in words:
                nltk_tagger.tag(s)
        pred = [[t for _, t in nltk_tagger.tag(s)] for s in words]
        accuracy = sum(a == b for g, p in zip(sentences, pred) for (_, a), b in zip(g, p)) / sum(map(len, words))
    seconds = min(_timed(run) for _ in range(args.repeat))
    print(json.dumps({"seconds": seconds, "accuracy": accuracy}))


def part_speed(args) -> None:
    n_tokens = sum(len(t) for _, t in ewt_documents(CORPORA / "ud_en_ewt" / "en_ewt-ud-test.conllu"))
    nltk_tagger_of(Path(args.nltk_cache))  # trained here first, if it is not kept yet
    got = {}
    for side in ("structperc", "nltk"):
        out = subprocess.run([sys.executable, __file__, "--speed-worker", side, "--xpos", args.xpos,
                              "--repeat", str(args.repeat), "--nltk-cache", args.nltk_cache],
                             check=True, capture_output=True, text=True).stdout
        got[side] = json.loads(out.strip().splitlines()[-1])
    t_ours, t_nltk = got["structperc"]["seconds"], got["nltk"]["seconds"]
    print(f"NLTK's tagger on gold tokens: {100 * got['nltk']['accuracy']:.2f} % PTB-tag accuracy on EWT test")
    print(f"{'':<44} {'seconds':>8} {'tokens/s':>10}")
    print(f"{'structperc ' + args.xpos + ', raw text (tokenizer included)':<44} {t_ours:>8.2f} "
          f"{n_tokens / t_ours:>10,.0f}")
    print(f"{'NLTK PerceptronTagger, gold tokens':<44} {t_nltk:>8.2f} {n_tokens / t_nltk:>10,.0f}")
    print(f"ratio: {t_nltk / t_ours:.2f}x NLTK's tokens/s (goal >= 3)")


def part_zh(args) -> None:
    import jieba

    import structperc
    from structperc.metrics import word_scores

    gold = [line.split() for line in (CORPORA / "sighan2008_sxu" / "test.txt").read_text(
        encoding="utf-8").splitlines()]
    gold = [g for g in gold if g]
    texts = ["".join(g) for g in gold]
    chars = sum(map(len, texts))
    seg = structperc.load(args.zh)
    seg.segment_texts(texts[:20])
    jieba.initialize()
    ours = theirs = None

    def run_ours() -> None:
        nonlocal ours
        ours = seg.segment_texts(texts)

    def run_jieba() -> None:
        nonlocal theirs
        theirs = [jieba.lcut(t) for t in texts]

    t_ours = min(_timed(run_ours) for _ in range(args.repeat))
    t_jieba = min(_timed(run_jieba) for _ in range(args.repeat))
    f_ours = word_scores(gold, ours)["f1"]
    f_jieba = word_scores(gold, theirs)["f1"]
    print(f"{'':<34} {'seconds':>8} {'chars/s':>10} {'word F1':>8}")
    print(f"{'structperc ' + args.zh:<34} {t_ours:>8.2f} {chars / t_ours:>10,.0f} {100 * f_ours:>8.2f}")
    print(f"{'jieba ' + jieba.__version__ + ' lcut (default, HMM)':<34} {t_jieba:>8.2f} {chars / t_jieba:>10,.0f} "
          f"{100 * f_jieba:>8.2f}")
    print(f"ratio: {t_jieba / t_ours:.2f}x jieba's characters/s (goal >= 1)")


def part_chunk(args) -> None:
    import structperc
    from structperc.metrics import span_f1

    rows = read_sentences(CORPORA / "conll2000" / "test.txt")
    words = [[r[0] for r in s] for s in rows]
    gold = [[r[-1] for r in s] for s in rows]
    tagger = structperc.load(args.chunk)
    from_words = tagger.predict(words)
    from_gold = tagger.predict([[(r[0], r[1]) for r in s] for s in rows])
    print(f"CoNLL-2000 test chunk F1 ({args.chunk}): from words alone (en-xpos's POS) "
          f"{100 * span_f1(gold, from_words):.2f}, from gold POS {100 * span_f1(gold, from_gold):.2f}")


def _conllu_sentences(path: Path) -> list[list[tuple[str, str]]]:
    out, cur = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            if cur:
                out.append(cur)
            cur = []
        elif not line.startswith("#"):
            f = line.split("\t")
            if f[0].isdigit():
                cur.append((f[1], f[4]))
    if cur:
        out.append(cur)
    return out


def _timed(fn) -> float:
    """Seconds of one call, with the cyclic garbage collector off, as `timeit` does: both taggers live in
    this process, and a collection scanning NLTK's weight dictionaries (millions of objects) would
    land on whichever call happens to trigger it."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["upos", "speed", "zh", "chunk", "all"], default="all")
    ap.add_argument("--upos", default="en-upos")
    ap.add_argument("--xpos", default="en-xpos")
    ap.add_argument("--zh", default="zh-seg")
    ap.add_argument("--chunk", default="en-chunk")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--nltk-cache", default="/tmp/structperc-bench-nltk-ewt.json",
                    help="Where NLTK's tagger trained on EWT is kept between runs (training takes minutes).")
    ap.add_argument("--speed-worker", choices=["structperc", "nltk"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.speed_worker:
        speed_worker(args.speed_worker, args)
        return
    parts = {"upos": part_upos, "speed": part_speed, "zh": part_zh, "chunk": part_chunk}
    for name, fn in parts.items():
        if args.part in (name, "all"):
            fn(args)


if __name__ == "__main__":
    main()
