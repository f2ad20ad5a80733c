#!/usr/bin/env python
"""Raw-text tokenizers against UD English EWT: token F1, sentence F1 and speed of each candidate.

    python scripts/bench/bench_tokenizer.py                  # dev (the default)
    python scripts/bench/bench_tokenizer.py --split test     # the figures to report
    python scripts/bench/bench_tokenizer.py --only spacy --disagreements 20

`structperc.io.raw_text` (spaCy's rule-based ``spacy.blank("en")`` + ``sentencizer``) is the candidate
the package uses; the others are what PyPI offers without a trained model or a download:
syntok's ``segmenter.analyze`` (``n't`` kept, its default in ``analyze``), NLTK's
``NLTKWordTokenizer`` (its improved Treebank tokenizer) inside the sentences of an *untrained*
``PunktSentenceTokenizer()`` (punkt's trained data cannot be downloaded here), and sacremoses'
``MosesTokenizer("en")`` (Moses style, no sentence splitter; its ``penn_tokenize`` raises in 0.2.0).
Candidates whose package is missing are listed as skipped.

Protocol:

* gold tokens: each sentence's word FORMs aligned left to right to its ``# text`` line, giving
  (start, end) character spans. Multi-word tokens (``1-2 don't`` over ``do`` + ``n't``): by default
  (``--gold words``) the *words* are the gold, because the tagger is trained on them (the CoNLL-U
  reader skips the ``1-2`` lines) and, in EWT, every multi-word token's words spell it exactly
  (``do`` + ``n't`` = ``don't``), so each word has a span of the text. ``--gold surface`` scores
  against the multi-word tokens instead (``don't`` one token), the text's surface tokenization.
* token F1: precision and recall of the predicted (start, end) spans, each ``# text`` line
  tokenized as a document of its own (sentence splitting cannot move a token's span).
* sentence F1: the sentences of one ``# newdoc`` joined with a space into one text; a sentence is
  right when its span (first token's start, last token's end) is a gold sentence's span, as in the
  CoNLL 2018 shared task's evaluation.
* speed: tokenizing and splitting the joined documents, the best of ``--repeats`` runs, interleaved
  (one run of each candidate per round); tokens/s counts each candidate's own tokens.
* disagreements: for ``--show`` (default the package's tokenizer), the regions where gold and
  predicted spans differ (overlapping gold-only and predicted-only spans merged), most frequent
  first, each as gold tokens | predicted tokens.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "ud_en_ewt"

Span = tuple[int, int]
#: documents -> their sentences -> the sentence's token spans, offsets into the document
Split = list[list[list[Span]]]


@dataclass
class Sentence:
    text: str
    words: list[Span]
    surface: list[Span]
    #: (UPOS, XPOS) of each of ``words`` (`bench_ready` scores taggers from raw text with them)
    tags: list[tuple[str, str]]


@dataclass
class Document:
    sentences: list[Sentence] = field(default_factory=list)


def read_ewt(path: Path) -> tuple[list[Document], int]:
    """Documents (``# newdoc``) of sentences with their gold spans and tags; and the number of multi-word
    tokens seen. A FORM not found in order in ``# text`` stops the run: the spans would be wrong.
    The one EWT reader of the benchmarks (`bench_ready.ewt_documents` reads through it)."""
    docs: list[Document] = []
    n_mwt = 0
    text: str | None = None
    rows: list[list[str]] = []

    def close() -> None:
        nonlocal text, rows, n_mwt
        if text is None:
            return
        words: list[Span] = []
        surface: list[Span] = []
        tags: list[tuple[str, str]] = []
        pos = 0
        covered = 0  # words up to this ID are inside a multi-word token already placed
        for cols in rows:
            ident, form = cols[0], cols[1]
            if "." in ident:
                continue  # empty node: no surface
            if "-" in ident:
                first, last = (int(x) for x in ident.split("-"))
                start = text.index(form, pos)
                if text[pos:start].strip():
                    raise SystemExit(f"bench_tokenizer: {path}: {form!r} not next in {text!r}")
                surface.append((start, start + len(form)))
                covered = last
                n_mwt += 1
                inner = pos = start
                continue
            idx = int(ident)
            if idx <= covered:  # a word of the multi-word token: inside its span
                start = text.index(form, inner)
                words.append((start, start + len(form)))
                tags.append((cols[3], cols[4]))
                inner = start + len(form)
                pos = max(pos, inner)
                if idx == covered:
                    pos = surface[-1][1]
                continue
            start = text.index(form, pos)
            if text[pos:start].strip():
                raise SystemExit(f"bench_tokenizer: {path}: {form!r} not next in {text!r}")
            words.append((start, start + len(form)))
            tags.append((cols[3], cols[4]))
            surface.append(words[-1])
            pos = start + len(form)
        if not docs:
            docs.append(Document())
        docs[-1].sentences.append(Sentence(text, words, surface, tags))
        text, rows = None, []

    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# newdoc"):
                close()
                docs.append(Document())
            elif line.startswith("# text = "):
                text = line[len("# text = "):]
            elif not line:
                close()
            elif not line.startswith("#"):
                rows.append(line.split("\t"))
    close()
    return [d for d in docs if d.sentences], n_mwt


# ---- the candidates: texts -> per text, its sentences' token spans ------------------------------

def spacy_package(texts: list[str]) -> Split:
    from structperc.io.raw_text import split_texts

    return [[[(t.start, t.end) for t in sent] for sent in doc] for doc in split_texts(texts, "en")]


def syntok_analyze(texts: list[str]) -> Split:
    from syntok import segmenter

    out: Split = []
    for text in texts:
        sents = []
        for paragraph in segmenter.analyze(text):
            for sent in paragraph:
                spans = [(t.offset, t.offset + len(t.value)) for t in sent if t.value]
                if spans:
                    sents.append(spans)
        out.append(sents)
    return out


def nltk_treebank_punkt(texts: list[str]) -> Split:
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    words, sentences = NLTKWordTokenizer(), PunktSentenceTokenizer()
    out: Split = []
    for text in texts:
        sents = []
        for a, b in sentences.span_tokenize(text):
            spans = [(a + s, a + e) for s, e in words.span_tokenize(text[a:b])]
            if spans:
                sents.append(spans)
        out.append(sents)
    return out


def sacremoses_moses(texts: list[str]) -> Split:
    """Moses' tokens carry no offsets: each is found in the text left to right (``escape=False``
    keeps them as written); one "sentence" per text (sacremoses splits no sentences)."""
    from sacremoses import MosesTokenizer

    moses = MosesTokenizer(lang="en")
    out: Split = []
    for text in texts:
        spans, pos = [], 0
        for tok in moses.tokenize(text, escape=False):
            start = text.find(tok, pos)
            if start < 0:  # a rewritten token: skip it, it scores as missing
                continue
            spans.append((start, start + len(tok)))
            pos = start + len(tok)
        out.append([spans] if spans else [])
    return out


CANDIDATES: dict[str, tuple[str, str, Callable[[list[str]], Split]]] = {
    # name: (package to import, description, function)
    "spacy": ("spacy", "structperc.io.raw_text: spacy.blank('en') + sentencizer", spacy_package),
    "syntok": ("syntok", "syntok segmenter.analyze", syntok_analyze),
    "nltk": ("nltk", "nltk NLTKWordTokenizer + untrained PunktSentenceTokenizer()", nltk_treebank_punkt),
    "sacremoses": ("sacremoses", "sacremoses MosesTokenizer('en'), no sentences", sacremoses_moses),
}


def prf(right: int, predicted: int, gold: int) -> tuple[float, float, float]:
    p = right / predicted if predicted else 0.0
    r = right / gold if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def disagreements(text: str, gold: list[Span], pred: list[Span]) -> list[tuple[str, str]]:
    """Regions where the spans differ: gold-only and predicted-only spans that overlap, merged."""
    g_only = sorted(set(gold) - set(pred))
    p_only = sorted(set(pred) - set(gold))
    items = sorted([(s, "g") for s in g_only] + [(s, "p") for s in p_only])
    regions: list[tuple[int, list[Span], list[Span]]] = []
    for (a, b), side in items:
        if regions and a < regions[-1][0]:
            end, gs, ps = regions[-1]
            regions[-1] = (max(end, b), gs, ps)
        else:
            regions.append((b, [], []))
        regions[-1][1 if side == "g" else 2].append((a, b))
    return [(" ".join(text[a:b] for a, b in gs) or "∅", " ".join(text[a:b] for a, b in ps) or "∅")
            for _, gs, ps in regions]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=CORPUS, help="folder holding en_ewt-ud-*.conllu")
    p.add_argument("--split", choices=("train", "dev", "test"), default="dev")
    p.add_argument("--gold", choices=("words", "surface"), default="words",
                   help="multi-word tokens scored as their words (what the tagger reads) or as one token")
    p.add_argument("--only", nargs="+", choices=sorted(CANDIDATES), help="the candidates to run (default: all)")
    p.add_argument("--show", default="spacy", help="the candidate whose disagreements are listed")
    p.add_argument("--disagreements", type=int, default=10, help="how many of them (0: none)")
    p.add_argument("--repeats", type=int, default=3, help="speed: best of this many runs")
    args = p.parse_args(argv)

    path = args.corpus / f"en_ewt-ud-{args.split}.conllu"
    if not path.is_file():
        print(f"bench_tokenizer: corpus not found: {path}", file=sys.stderr)
        return 2
    docs, n_mwt = read_ewt(path)
    sentences = [s for d in docs for s in d.sentences]
    texts = [s.text for s in sentences]
    gold_tokens = [s.words if args.gold == "words" else s.surface for s in sentences]
    joined = [" ".join(s.text for s in d.sentences) for d in docs]
    gold_sents: list[set[Span]] = []
    for d in docs:
        spans, offset = set(), 0
        for s in d.sentences:
            toks = s.words
            spans.add((offset + toks[0][0], offset + toks[-1][1]))
            offset += len(s.text) + 1
        gold_sents.append(spans)
    n_gold = sum(len(g) for g in gold_tokens)
    n_chars = sum(len(t) for t in joined)
    print(f"UD EWT {args.split}: {len(docs)} documents, {len(sentences)} sentences, {n_gold} gold tokens "
          f"(--gold {args.gold}; {n_mwt} multi-word tokens), {n_chars} characters joined")

    names = args.only or list(CANDIDATES)
    runs: dict[str, tuple[str, Callable[[list[str]], Split]]] = {}
    for name in names:
        package, description, fn = CANDIDATES[name]
        try:
            __import__(package)
        except ImportError:
            print(f"  {name}: skipped, {package} is not installed (pip install {package})")
            continue
        if name == "spacy":
            from structperc.io.raw_text import tokenizer_name

            description = f"structperc.io.raw_text: {tokenizer_name('en')}"
        fn(["Warm up: imports, rule tables, caches."])  # not timed: built once per process
        runs[name] = (description, fn)

    # speed first, the rounds interleaved (one run of each candidate per round: a burst of load on
    # the shared machine hits all of them alike); the last round's output is scored for sentences
    best = dict.fromkeys(runs, float("inf"))
    split: dict[str, Split] = {}
    for _ in range(max(1, args.repeats)):
        for name, (_, fn) in runs.items():
            t0 = time.perf_counter()
            split[name] = fn(joined)
            best[name] = min(best[name], time.perf_counter() - t0)

    rows = []
    shown: list[tuple[str, list[Span], list[Span]]] | None = None
    for name, (description, fn) in runs.items():
        pred = fn(texts)
        right = n_pred = 0
        for g, doc in zip(gold_tokens, pred):
            flat = [s for sent in doc for s in sent]
            n_pred += len(flat)
            right += len(set(g) & set(flat))
        tok = prf(right, n_pred, n_gold)
        sent: tuple[float, float, float] | None = None
        if name != "sacremoses":
            s_right = s_pred = 0
            for g, doc in zip(gold_sents, split[name]):
                found = {(sent_[0][0], sent_[-1][1]) for sent_ in doc}
                s_pred += len(found)
                s_right += len(g & found)
            sent = prf(s_right, s_pred, sum(len(g) for g in gold_sents))
        n_tok = sum(len(s) for doc in split[name] for s in doc)
        rows.append((name, description, tok, sent, n_tok / best[name], n_chars / best[name]))
        if name == args.show:
            shown = [(t.text, g, [s for sent_ in doc for s in sent_])
                     for t, g, doc in zip(sentences, gold_tokens, pred)]

    print(f"\n{'candidate':<11} {'tok P':>6} {'tok R':>6} {'tok F1':>6}  {'sent P':>6} {'sent R':>6} "
          f"{'sent F1':>7}  {'tokens/s':>9} {'chars/s':>10}")
    for name, _, (tp, tr, tf), sent, tps, cps in rows:
        s = f"{100 * sent[0]:>6.2f} {100 * sent[1]:>6.2f} {100 * sent[2]:>7.2f}" if sent else f"{'n/a':>22}"
        print(f"{name:<11} {100 * tp:>6.2f} {100 * tr:>6.2f} {100 * tf:>6.2f}  {s}  {tps:>9,.0f} {cps:>10,.0f}")
    for name, description, *_ in rows:
        print(f"  {name}: {description}")

    if shown is not None and args.disagreements > 0:
        counts: Counter[tuple[str, str]] = Counter()
        for text, g, pr in shown:
            counts.update(disagreements(text, g, pr))
        total = sum(counts.values())
        print(f"\n{args.show}: {total} disagreement regions; the {args.disagreements} most frequent "
              f"(gold | predicted):")
        for (g, pr), n in counts.most_common(args.disagreements):
            print(f"  {n:>5}  {g!r:<24} | {pr!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
