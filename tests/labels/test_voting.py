"""Span voting (`structperc.labels.voting`): hand cases, and properties against a brute-force count of each
span's votes: a span is kept exactly when more than half of the members predict it, the result is a
well-formed tagging in the members' scheme, and unanimous members are returned unchanged."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.labels.schemes import convert, spans
from structperc.labels.voting import majority, vote_flat, vote_spans


def test_majority():
    assert [majority(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


def test_two_of_three_keep_a_span_one_does_not():
    a = ["B-NP", "I-NP", "O", "B-VP"]
    b = ["B-NP", "I-NP", "O", "O"]
    c = ["B-NP", "B-NP", "O", "B-PP"]
    # NP(0,2) by a and b; VP by a alone; PP by c alone; c's NP(0,1), NP(1,2) by c alone
    assert vote_spans([a, b, c], "iob2") == ["B-NP", "I-NP", "O", "O"]


def test_a_span_needs_type_and_both_ends():
    a = ["B-PER", "I-PER", "O"]
    b = ["B-ORG", "I-ORG", "O"]
    c = ["B-PER", "O", "O"]
    assert vote_spans([a, b, c], "iob2") == ["O", "O", "O"]


def test_adjacent_spans_of_one_type_keep_their_boundary():
    a = ["B-NP", "B-NP", "I-NP"]
    b = ["B-NP", "B-NP", "I-NP"]
    c = ["B-NP", "I-NP", "I-NP"]
    assert vote_spans([a, b, c], "iob2") == ["B-NP", "B-NP", "I-NP"]
    # the same in IOB1, where a span that follows one of its type begins with B
    iob1 = [convert(t, "iob2", "iob1") for t in (a, b, c)]
    assert vote_spans(iob1, "iob1") == ["I-NP", "B-NP", "I-NP"]


def test_two_members_need_both():
    assert vote_spans([["B-LOC", "O"], ["B-LOC", "O"]], "iob2") == ["B-LOC", "O"]
    assert vote_spans([["B-LOC", "O"], ["O", "O"]], "iob2") == ["O", "O"]


def test_one_member_is_itself():
    assert vote_spans([["I-NP", "B-NP", "O"]], "iob1") == ["I-NP", "B-NP", "O"]


def test_untyped_tags_and_the_underscore_separator():
    assert vote_spans([["B", "I", "O"], ["B", "I", "B"], ["B", "I", "O"]], "iob2") == ["B", "I", "O"]
    assert vote_spans([["B_X", "I_X"], ["B_X", "I_X"], ["O", "O"]], "iob2") == ["B_X", "I_X"]


def test_refuses_members_of_other_lengths_and_no_members():
    with pytest.raises(ValueError, match="lengths"):
        vote_spans([["O"], ["O", "O"]], "iob2")
    with pytest.raises(ValueError, match="at least one"):
        vote_spans([], "iob2")


def test_vote_flat_cuts_sentences():
    members = [["B-NP", "I-NP", "B-VP"], ["B-NP", "I-NP", "O"], ["B-NP", "O", "B-VP"]]
    assert vote_flat(members, [0, 2, 3], "iob2") == ["B-NP", "I-NP", "B-VP"]
    # a span may not run across a sentence boundary: the sentence [2:3] is voted alone
    assert vote_flat([["B-NP", "I-NP", "I-NP"]] * 3, [0, 2, 3], "iob2") == ["B-NP", "I-NP", "B-NP"]


TAGS = ["O", "B-A", "I-A", "B-B", "I-B"]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.lists(st.lists(st.sampled_from(TAGS), min_size=n, max_size=n),
                                                      min_size=1, max_size=5)),
       st.sampled_from(["iob1", "iob2", "iobes"]))
def test_kept_spans_are_exactly_the_majority_spans(members_iob2, scheme):
    members = [convert(m, "iob2", scheme) for m in members_iob2]
    out = vote_spans(members, scheme)
    votes = Counter(s for m in members for s in spans(m, scheme))
    need = len(members) // 2 + 1
    assert sorted(spans(out, scheme)) == sorted(s for s, v in votes.items() if v >= need)
    assert convert(convert(out, scheme, "iob2"), "iob2", scheme) == out  # well formed in its scheme
    if all(m == members[0] for m in members):
        assert spans(out, scheme) == spans(members[0], scheme)
