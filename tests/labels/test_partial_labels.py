"""Label projections and per-token allowed sets of partially known sentences
(`structperc.labels.partial`): exact small cases by hand, and properties on random well-formed
sentences (the true model label is always allowed; known neighbours make the set exact)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.labels.partial import data_scheme_tags, label_projection, sentence_allowed
from structperc.labels.schemes import convert

IOBES = sorted(f"{p}-{t}" for p in "BIES" for t in ("NP", "VP")) + ["O"]
IOBES.sort()


def names(labels, ids):
    return sorted(labels[i] for i in ids)


def test_iob2_data_iobes_model_by_hand():
    p = label_projection(IOBES, "iobes", "iob2")
    assert set(p) == {"B-NP", "I-NP", "B-VP", "I-VP", "O"}
    assert names(IOBES, p["B-NP"]) == ["B-NP", "S-NP"]
    assert names(IOBES, p["I-NP"]) == ["E-NP", "I-NP"]
    assert names(IOBES, p["O"]) == ["O"]
    assert all(np.all(np.diff(v) > 0) for v in p.values())


def test_other_pairs_by_hand():
    p = label_projection(IOBES, "iobes", "iob1")
    assert names(IOBES, p["I-VP"]) == ["B-VP", "E-VP", "I-VP", "S-VP"]   # may begin a span
    assert names(IOBES, p["B-VP"]) == ["B-VP", "S-VP"]
    p = label_projection(IOBES, "iobes", "bilou")
    assert names(IOBES, p["U-NP"]) == ["S-NP"] and names(IOBES, p["L-NP"]) == ["E-NP"]
    iob2 = ["B-NP", "I-NP", "O"]
    p = label_projection(iob2, "iob2", "iobes")   # an IOB2 model read from IOBES data
    assert names(iob2, p["S-NP"]) == ["B-NP"] and names(iob2, p["E-NP"]) == ["I-NP"]
    assert names(iob2, p["B-NP"]) == ["B-NP"] and names(iob2, p["I-NP"]) == ["I-NP"]
    iob1 = ["B-NP", "I-NP", "O"]
    p = label_projection(iob1, "iob1", "iob2")
    assert names(iob1, p["B-NP"]) == ["B-NP", "I-NP"] and names(iob1, p["I-NP"]) == ["I-NP"]


def test_untyped_tags_and_separators():
    labels = ["B", "E", "I", "O", "S"]
    p = label_projection(labels, "iobes", "iob2")
    assert names(labels, p["B"]) == ["B", "S"] and names(labels, p["I"]) == ["E", "I"]
    labels = ["B_PER", "E_PER", "I_PER", "O", "S_PER"]
    assert data_scheme_tags(labels, "iobes", "iob2") == ["B_PER", "I_PER", "O"]


@pytest.mark.parametrize("scheme", ["none", "bmes", "iob2", "iobes"])
def test_same_scheme_is_the_identity(scheme):
    labels = ["B", "E", "M", "S"] if scheme == "bmes" else ["NN", "VB", "O", "B-X"]
    p = label_projection(labels, scheme, scheme)
    assert {k: v.tolist() for k, v in p.items()} == {lab: [i] for i, lab in enumerate(labels)}


def test_pairs_without_a_conversion_are_refused():
    with pytest.raises(ValueError):
        label_projection(["B", "M", "E", "S"], "iobes", "bmes")


def allowed_names(tags):
    a = sentence_allowed(tags, IOBES, "iobes", "iob2")
    return ["*" if row.all() else names(IOBES, np.flatnonzero(row)) for row in a]


def test_sentence_allowed_by_hand():
    assert allowed_names(["B-NP", None]) == [["B-NP", "S-NP"], "*"]
    assert allowed_names(["B-NP", "I-NP", None]) == [["B-NP"], ["E-NP", "I-NP"], "*"]
    assert allowed_names([None, "I-NP", "O"]) == ["*", ["E-NP"], ["O"]]
    # an I that cannot continue its known predecessor begins a span (as conlleval reads it)
    assert allowed_names(["O", "I-NP", None]) == [["O"], ["B-NP", "S-NP"], "*"]
    assert allowed_names([None, "B-VP", "I-NP"]) == ["*", ["S-VP"], ["S-NP"]]
    assert allowed_names([None, None]) == ["*", "*"]
    assert allowed_names([]) == []
    full = sentence_allowed(["B-NP", "I-NP", "O"], IOBES, "iobes", "iob2")
    assert [names(IOBES, np.flatnonzero(r)) for r in full] == [["B-NP"], ["E-NP"], ["O"]]
    # a tag the model has no label for allows none
    assert not sentence_allowed(["B-PP", None], IOBES, "iobes", "iob2")[0].any()


@st.composite
def well_formed(draw):
    """A well-formed IOB2 sentence (spans of types NP/VP, O between) and a mask of hidden tags."""
    n = draw(st.integers(1, 9))
    tags: list[str] = []
    while len(tags) < n:
        kind = draw(st.sampled_from(["O", "NP", "VP"]))
        if kind == "O":
            tags.append("O")
        else:
            k = draw(st.integers(1, 3))
            tags += [f"B-{kind}"] + [f"I-{kind}"] * (k - 1)
    tags = tags[:n]
    hidden = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    return tags, hidden


@settings(max_examples=300, deadline=None)
@given(well_formed(), st.sampled_from(["iob1", "iob2", "iobes", "bilou"]))
def test_the_true_label_is_allowed_and_known_neighbours_make_it_exact(sentence, data_scheme):
    iob2, hidden = sentence
    data = convert(iob2, "iob2", data_scheme)
    truth = convert(iob2, "iob2", "iobes")
    tags = [None if h else t for t, h in zip(data, hidden)]
    a = sentence_allowed(tags, IOBES, "iobes", data_scheme)
    for t, lab in enumerate(truth):
        assert a[t, IOBES.index(lab)], (tags, t, lab)
        if hidden[t]:
            assert a[t].all()
        neighbours_known = (t == 0 or not hidden[t - 1]) and (t + 1 == len(tags) or not hidden[t + 1])
        if not hidden[t] and neighbours_known:
            assert a[t].sum() == 1
        if not hidden[t]:  # never wider than the token-by-token projection (iob2 reading of the tag)
            proj = label_projection(IOBES, "iobes", data_scheme)[data[t]]
            assert set(np.flatnonzero(a[t])) <= set(proj.tolist())
