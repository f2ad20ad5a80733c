"""Span voting: the spans most of several taggers agree on (Kudo & Matsumoto 2001; Shen & Sarkar 2005).

Taggers that learn the same spans in different encodings (IOBES, IOB2, IOB1) make different mistakes: each
encoding tells a first-order model a different part of where a span ends. Kudo & Matsumoto (2001, "Chunking
with support vector machines") and Shen & Sarkar (2005, "Voting between multiple data representations for text
chunking") combine such taggers by majority: a span is kept when more than half of them predict it, type and
both ends alike. Spans kept by a strict majority never overlap (two overlapping spans would both need a vote
from one tagger, whose own spans do not overlap), so the vote is a tagging again.

On esp.testa (`--lang es --order 2 --two-stage`, seeds 0-2), three taggers learning IOBES, IOB2 and IOB1 score
82.73, 82.40, 82.21 span F1 against 81.79, 81.72, 81.90 for the IOBES tagger alone (``scripts/README.md``).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from structperc.labels.schemes import convert, spans


def majority(n_members: int) -> int:
    """Votes a span needs among ``n_members``: more than half."""
    return n_members // 2 + 1


def vote_spans(members: Sequence[Sequence[str]], scheme: str) -> list[str]:
    """One sentence's tags (in span ``scheme``) from its tags by each member (same scheme): the spans
    more than half of the members predict, every other token ``O``.

    Examples
    --------
    >>> vote_spans([["B-NP", "I-NP", "O"], ["B-NP", "B-NP", "O"], ["B-NP", "I-NP", "B-VP"]], "iob2")
    ['B-NP', 'I-NP', 'O']
    >>> vote_spans([["B-PER", "O"], ["O", "B-LOC"], ["B-ORG", "O"]], "iob2")   # no span has a majority
    ['O', 'O']
    """
    if not members:
        raise ValueError("a vote needs at least one member")
    n = len(members[0])
    if any(len(m) != n for m in members):
        raise ValueError("the members tagged sentences of different lengths")
    counts = Counter(s for tags in members for s in spans(tags, scheme))
    sep = next((t[1] for tags in members for t in tags if len(t) >= 2 and t[1] in "-_"), "-")
    iob2 = ["O"] * n
    need = majority(len(members))
    for (start, end, kind), votes in counts.items():
        if votes >= need:
            for i in range(start, end):
                prefix = "B" if i == start else "I"
                iob2[i] = prefix + sep + kind if kind else prefix
    return iob2 if scheme == "iob2" else convert(iob2, "iob2", scheme)


def vote_flat(members: Sequence[Sequence[str]], sent_ptr: Sequence[int] | np.ndarray, scheme: str) -> list[str]:
    """`vote_spans` over a corpus: each member's tags flat (corpus order), sentences cut at ``sent_ptr``."""
    ptr = [int(p) for p in sent_ptr]
    out: list[str] = []
    for s in range(len(ptr) - 1):
        a, b = ptr[s], ptr[s + 1]
        out.extend(vote_spans([m[a:b] for m in members], scheme))
    return out
