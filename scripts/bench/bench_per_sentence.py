#!/usr/bin/env python
"""What one call costs: each shipped model tagging one sentence (or segmenting one line) at a time, as the HTTP
service, a spaCy pipeline or a loop over user input calls it.

    python scripts/bench/bench_per_sentence.py                 # every shipped model, 300 calls each
    python scripts/bench/bench_per_sentence.py --models en-upos zh-seg --calls 1000

Each model is loaded once, called 20 times to warm up (the tables a first call builds), then timed over
``--calls`` calls of the same input; prints the mean milliseconds per call. Raw text goes through
`Tagger.tag_texts` (spaCy's tokenizer; `Segmenter.segment` for Chinese), so the figure is the user's whole call.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import structperc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _kernels import require_current_build  # noqa: E402

#: One input per shipped model: raw text in its language.
INPUTS = {
    "en-upos": "The quick brown fox jumps over the lazy dog near the river bank.",
    "en-xpos": "The quick brown fox jumps over the lazy dog near the river bank.",
    "en-chunk": "The quick brown fox jumps over the lazy dog near the river bank.",
    "es-ner": "El presidente del Gobierno, José María Aznar, viajó ayer a Barcelona.",
    "nl-ner": "De minister-president Jan Peter Balkenende bezocht gisteren Amsterdam.",
    "zh-seg": "中国人民银行今天宣布下调存款准备金率。",
}


def per_call(name: str, calls: int) -> float:
    """Mean milliseconds of one call of shipped model ``name`` on its `INPUTS` text."""
    model = structperc.load(name)
    text = INPUTS[name]
    call = (lambda: model.segment(text)) if name == "zh-seg" else (lambda: model.tag_texts(text))
    for _ in range(20):
        call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return 1000 * (time.perf_counter() - start) / calls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", nargs="+", choices=list(INPUTS), default=list(INPUTS))
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    require_current_build()  # timings of a stale build would measure numba's compiler
    print("| model | ms per call |\n|---|---|")
    for name in args.models:
        print(f"| {name} | {per_call(name, args.calls):.2f} |", flush=True)


if __name__ == "__main__":
    main()
