"""The 6-tag set for word segmentation (``bmes6``): B, B2, B3, M, E, S, an *encoding* of BMES.

Zhao, Huang, Li & Lu (2006, "Effective tag set selection in Chinese word segmentation via conditional
random field modeling", PACLIC 20) give the second and third characters of a word tags of their own
(B2, B3; M from the fourth on): a first-order model then sees how far into a word it is, which B/M/E/S
cannot tell it, and their SIGHAN 2008 systems used this set. Like IOBES for span tasks, it is only
what the model learns and decodes in: data, forced tags, output and scores stay BMES, converted on
label ids (B2 and B3 read as M; a BMES M stands for B2, B3 or M, the transitions choosing).

Words of 1..5 characters: S | B E | B B2 E | B B2 B3 E | B B2 B3 M E.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

#: The encoding's name (`structperc.features.task.Task.encoding`) and its labels.
BMES6 = "bmes6"
TAGS = ("B", "B2", "B3", "M", "E", "S")
#: The BMES tag each 6-tag label reads as.
TO_BMES = {"B": "B", "B2": "M", "B3": "M", "M": "M", "E": "E", "S": "S"}


def words_to_tags(words: Sequence[str]) -> list[str]:
    """6-tag labels of the characters of ``words``.

    >>> words_to_tags(["上海市", "体育局", "召开", "了", "运动会议"])
    ['B', 'B2', 'E', 'B', 'B2', 'E', 'B', 'E', 'S', 'B', 'B2', 'B3', 'E']
    """
    tags: list[str] = []
    for w in words:
        n = len(w)
        if n == 1:
            tags.append("S")
        elif n > 1:
            tags.extend(["B", "B2", "B3", *["M"] * (n - 4)][:n - 1] + ["E"])
    return tags


def from_bmes(distinct: Sequence[str], codes: np.ndarray, sent_ptr: np.ndarray) -> list[str]:
    """BMES tags (as ``distinct`` values and one code per token, `Corpus.factorize`) in the 6-tag set,
    flat, vectorized over the corpus: an M 1 or 2 characters after its word's start becomes B2 or B3.

    A word starts at B or S, after E or S, and at a sentence start (as `bmes.tags_to_words` reads
    ill-formed tags); tags other than B/M/E/S are kept.

    >>> from_bmes(["B", "M", "E", "S"], np.array([0, 1, 1, 1, 2, 3, 0, 1, 2]), np.array([0, 9]))
    ['B', 'B2', 'B3', 'M', 'E', 'S', 'B', 'B2', 'E']
    """
    codes = np.asarray(codes, dtype=np.int64)
    n = len(codes)
    letter = np.array([t if t in TO_BMES else "" for t in distinct], dtype=object)[codes]
    starts = (letter == "B") | (letter == "S")
    ends = (letter == "E") | (letter == "S")
    starts[1:] |= ends[:-1]
    ptr = np.asarray(sent_ptr, dtype=np.int64)[:-1]
    starts[ptr[ptr < n]] = True
    idx = np.arange(n)
    pos = idx - np.maximum.accumulate(np.where(starts, idx, 0)) if n else idx
    out = np.array(distinct, dtype=object)[codes] if n else np.zeros(0, dtype=object)
    middle = letter == "M"
    out[middle & (pos == 1)] = "B2"
    out[middle & (pos == 2)] = "B3"
    return out.tolist()


def to_bmes_table(labels: Sequence[str]) -> list[str]:
    """The BMES tag each of a 6-tag model's ``labels`` reads as (other labels: themselves): index it
    with label ids to convert a decoded path."""
    return [TO_BMES.get(lab, lab) for lab in labels]


def projection(labels: Sequence[str]) -> dict[str, np.ndarray]:
    """For every BMES tag, the ids of the 6-tag ``labels`` reading as it (M: B2, B3 and M); labels
    outside the set stand for themselves. Ids ascend."""
    out: dict[str, list[int]] = {}
    for i, tag in enumerate(to_bmes_table(labels)):
        out.setdefault(tag, []).append(i)
    return {tag: np.array(ids, dtype=np.int64) for tag, ids in sorted(out.items())}
