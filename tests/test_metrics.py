"""Span F1 without seqeval (scored every epoch against a dev set) equals seqeval's default mode exactly,
to the last bit: the best epoch must not depend on which implementation scored it."""
from __future__ import annotations

import warnings

from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.metrics import span_entities, span_f1

TAGS = st.sampled_from(["O", "B-NP", "I-NP", "E-NP", "S-NP", "B-VP", "I-VP", "B", "I", "E", "S", "I-",
                        "B-X-Y", ".", "O-NP", "L-NP", "U-X", "I-PER", "B-PER"])
CORPUS = st.lists(st.lists(TAGS, max_size=7), min_size=1, max_size=4)


@settings(max_examples=400, deadline=None)
@given(CORPUS, st.data())
def test_span_f1_equals_seqeval_default_mode(gold, data):
    from seqeval.metrics import f1_score

    pred = [data.draw(st.lists(TAGS, min_size=len(s), max_size=len(s))) for s in gold]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert span_f1(gold, pred) == float(f1_score(gold, pred, zero_division=0))


def test_span_entities_by_hand():
    # sentences are joined by an O, offsets run over the whole corpus (seqeval's convention)
    assert span_entities([["B-NP", "I-NP", "O", "B-VP"], ["I-NP", "I-NP"]]) == \
        {("NP", 0, 1), ("VP", 3, 3), ("NP", 5, 6)}
    assert span_f1([["B-NP", "I-NP"]], [["B-NP", "B-NP"]]) == 0.0
    assert span_f1([["B-NP", "O", "B-VP"]], [["B-NP", "O", "O"]]) == 2 * 1.0 * 0.5 / 1.5
