"""The two-stage column ``tmd`` (`structperc.features.stacking`): hand cases, and brute force on random
corpora."""
from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.features.stacking import NONE, first_stage_lines, majority_types, reads_stage_column, tag_types
from structperc.io.corpus import Corpus


def _corpus(sentences: list[list[str]]) -> Corpus:
    return Corpus.from_sentences(sentences)


def brute(sentences: list[list[str]], types: list[str], window: int, ignore: str | None = None) -> list[str]:
    """Counting the other occurrences token by token, ties to the sorted-first type with O last."""
    flat = [(s, w) for s, sent in enumerate(sentences) for w in sent]
    out = []
    for i, (s, w) in enumerate(flat):
        counts = Counter(types[j] for j, (s2, w2) in enumerate(flat)
                         if j != i and w2 == w and abs(s2 - s) <= window and types[j] != ignore)
        if not counts:
            out.append(NONE)
            continue
        best = max(counts.values())
        out.append(min((t for t, c in counts.items() if c == best), key=lambda t: (t == "O", t)))
    return out


def test_window_ties_and_the_token_itself():
    # "Soto" in sentences 0, 1, 3 and 4; window 2 sees two sentences either side, not three
    sents = [["Soto"], ["Soto", "x"], ["x"], ["Soto"], ["Soto"]]
    types = ["PER", "PER", "O", "O", "LOC", "O"]
    got = majority_types(_corpus(sents), "word", types, window=2)
    #   Soto(0): PER(1) (sentence 3 is 3 away)   Soto(1): PER(0), LOC(3): a tie, LOC sorts first
    #   x(1): O(2)   x(2): O(1)   Soto(3): PER(1), O(4): PER beats O in a tie   Soto(4): LOC(3)
    assert got == ["PER", "LOC", "O", "O", "PER", "LOC"]
    assert majority_types(_corpus(sents), "word", types, window=0) == [NONE] * 6
    assert majority_types(_corpus(sents), "word", types, window=3)[0] == "LOC"  # PER(1), LOC(3): a tie


def test_ignored_tags_are_no_evidence():
    sents = [["Soto"], ["Soto"], ["Soto"]]
    assert majority_types(_corpus(sents), "word", ["?", "PER", "?"], window=5, ignore="?") == \
        ["PER", NONE, "PER"]


def test_empty_corpus():
    assert majority_types(_corpus([[]]), "word", [], window=3) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcd"), min_size=0, max_size=5), min_size=1, max_size=12),
       st.integers(0, 4), st.data())
def test_majority_matches_brute_force(sentences, window, data):
    n = sum(map(len, sentences))
    types = data.draw(st.lists(st.sampled_from(["O", "PER", "LOC", "?"]), min_size=n, max_size=n))
    ignore = data.draw(st.sampled_from([None, "?"]))
    assert majority_types(_corpus(sentences), "word", types, window, ignore) == \
        brute(sentences, types, window, ignore)


def test_tag_types():
    assert tag_types(["B-PER", "I-PER", "O", "S-LOC", "E-MISC"], span=True) == ["PER", "PER", "O", "LOC", "MISC"]
    assert tag_types(["NN", "B-X"], span=False) == ["NN", "B-X"]


def test_stage_lines():
    lines = ["w[0]", "tmd[0]", "?tmd[0]|w[0]", "pos[0]"]
    assert reads_stage_column(lines) and not reads_stage_column(["w[0]", "pos[0]"])
    assert first_stage_lines(lines) == ["w[0]", "pos[0]"]
