"""Span schemes: hand-written conversions between IOB1/IOB2/IOBES/BILOU, round trips that keep every
span, conlleval's reading of ill-formed IOB2, the mask ↔ `valid_sequence` agreement, and constrained
decoding that never outputs an ill-formed sequence (both decoders)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from seqeval.metrics.sequence_labeling import get_entities

from structperc.decode.viterbi import viterbi_batch
from structperc.errors import InputError
from structperc.labels import transition_mask, valid_sequence
from structperc.labels.schemes import SPAN_SCHEMES, convert, convert_flat, spans
from structperc.train.epoch_kernels import viterbi as compiled_viterbi

TYPES = ["PER", "LOC", "地名", "B-X"]   # a Chinese type, and one containing the separator


def spans_of(tags):
    """(type, start, end inclusive) of a well-formed IOB2 sequence, read by hand."""
    out, start, kind = [], None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        if start is not None and tag != "I-" + kind:
            out.append((kind, start, i - 1))
            start = None
        if tag.startswith("B-"):
            start, kind = i, tag[2:]
    return out


# --------------------------------------------------------------------------- by hand
EXAMPLES = [
    {"iob2": ["B-NP", "I-NP", "O", "B-VP"],
     "iob1": ["I-NP", "I-NP", "O", "I-VP"],
     "iobes": ["B-NP", "E-NP", "O", "S-VP"],
     "bilou": ["B-NP", "L-NP", "O", "U-VP"]},
    {"iob2": ["B-PER", "B-PER", "I-PER", "O", "B-LOC", "I-LOC", "I-LOC"],
     "iob1": ["I-PER", "B-PER", "I-PER", "O", "I-LOC", "I-LOC", "I-LOC"],
     "iobes": ["S-PER", "B-PER", "E-PER", "O", "B-LOC", "I-LOC", "E-LOC"],
     "bilou": ["U-PER", "B-PER", "L-PER", "O", "B-LOC", "I-LOC", "L-LOC"]},
    {"iob2": ["B-地名", "I-地名", "B-人名", "B-人名", "O"],
     "iob1": ["I-地名", "I-地名", "I-人名", "B-人名", "O"],
     "iobes": ["B-地名", "E-地名", "S-人名", "S-人名", "O"],
     "bilou": ["B-地名", "L-地名", "U-人名", "U-人名", "O"]},
    {"iob2": ["B-X", "I-X", "B-Y", "I-Y", "B-X"],
     "iob1": ["I-X", "I-X", "I-Y", "I-Y", "I-X"],
     "iobes": ["B-X", "E-X", "B-Y", "E-Y", "S-X"],
     "bilou": ["B-X", "L-X", "B-Y", "L-Y", "U-X"]},
    {"iob2": ["O", "O"], "iob1": ["O", "O"], "iobes": ["O", "O"], "bilou": ["O", "O"]},
    {"iob2": [], "iob1": [], "iobes": [], "bilou": []},
]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: " ".join(e["iob2"]) or "empty")
@pytest.mark.parametrize("source", SPAN_SCHEMES)
@pytest.mark.parametrize("target", SPAN_SCHEMES)
def test_hand_written_conversions(example, source, target):
    assert convert(example[source], source, target) == example[target]


def test_docstring_examples():
    assert convert(["B-NP", "I-NP", "O", "B-VP"], "iob2", "iobes") == ["B-NP", "E-NP", "O", "S-VP"]
    assert convert(["I-PER", "I-PER", "B-PER"], "iob1", "iob2") == ["B-PER", "I-PER", "B-PER"]


def test_unknown_scheme():
    with pytest.raises(ValueError, match="unknown span scheme"):
        convert(["O"], "iob2", "bioes")
    with pytest.raises(ValueError, match="unknown span scheme"):
        convert(["O"], "bmes", "iob2")


def test_convert_flat_per_sentence():
    # a span must not run across a sentence boundary: I-X at the start of sentence 2 starts a span
    tags = ["B-X", "I-X", "I-X", "O"]
    ptr = np.array([0, 2, 4])
    assert convert_flat(tags, ptr, "iob2", "iobes") == ["B-X", "E-X", "S-X", "O"]
    assert convert_flat(tags, ptr, "iob2", "iob2") == tags


# ------------------------------------------------------------------ conlleval's reading
ILL_FORMED = [
    (["O", "I-PER", "I-PER", "O", "I-LOC"], ["O", "B-PER", "E-PER", "O", "S-LOC"]),
    (["I-PER"], ["S-PER"]),
    (["B-PER", "I-LOC", "I-LOC"], ["S-PER", "B-LOC", "E-LOC"]),
    (["B-地名", "I-人名"], ["S-地名", "S-人名"]),
]


@pytest.mark.parametrize("tags, iobes", ILL_FORMED)
def test_ill_formed_iob2_starts_a_span(tags, iobes):
    assert convert(tags, "iob2", "iobes") == iobes
    repaired = convert(iobes, "iobes", "iob2")
    assert valid_sequence(repaired, "iob2")
    assert spans_of(repaired) == get_entities(tags)           # seqeval's default = conlleval


LOOSE = st.lists(st.sampled_from(["O", "B-X", "I-X", "B-Y", "I-Y", "B-地名", "I-地名"]), max_size=10)


@settings(max_examples=120, deadline=None)
@given(LOOSE)
def test_any_iob2_input_keeps_conlleval_spans(tags):
    """Whatever the input (well-formed or not), conversion keeps the spans conlleval reads in it."""
    expected = get_entities(tags)
    for target in SPAN_SCHEMES:
        converted = convert(tags, "iob2", target)
        assert len(converted) == len(tags)
        back = convert(converted, target, "iob2") if target != "iob2" else converted
        assert get_entities(back) == expected, (target, converted, back)
        if target != "iob2":
            assert valid_sequence(back, "iob2")
    assert valid_sequence(convert(tags, "iob2", "iobes"), "iobes")


# --------------------------------------------------------------------- round trips
@st.composite
def iob2_sequences(draw, max_len=12):
    """A well-formed IOB2 sequence built from random non-overlapping spans, and its spans."""
    n = draw(st.integers(0, max_len))
    tags, spans, i = [], [], 0
    while i < n:
        if draw(st.booleans()):
            tags.append("O")
            i += 1
            continue
        length = draw(st.integers(1, n - i))
        kind = draw(st.sampled_from(TYPES))
        tags += ["B-" + kind] + ["I-" + kind] * (length - 1)
        spans.append((kind, i, i + length - 1))
        i += length
    return tags, spans


@settings(max_examples=150, deadline=None)
@given(iob2_sequences())
def test_round_trip_through_every_scheme(data):
    tags, spans = data
    assert spans_of(tags) == spans
    assert get_entities(tags) == spans
    assert valid_sequence(tags, "iob2")
    converted = {x: convert(tags, "iob2", x) for x in SPAN_SCHEMES}
    for x, seq in converted.items():
        assert convert(seq, x, "iob2") == tags, x
        for y in SPAN_SCHEMES:
            assert convert(seq, x, y) == converted[y], (x, y)
    assert valid_sequence(converted["iobes"], "iobes")
    bilou_as_iobes = [t.replace("L-", "E-", 1).replace("U-", "S-", 1) if t[:2] in ("L-", "U-") else t
                      for t in converted["bilou"]]
    assert bilou_as_iobes == converted["iobes"]
    # IOBES: every span is B I* E or S, so the number of B/S tags is the number of spans
    assert sum(t[:2] in ("B-", "S-") for t in converted["iobes"]) == len(spans)


# ------------------------------------------------------------- mask ↔ valid_sequence
LABELS = {
    "iob2": ["B-PER", "B-地名", "I-PER", "I-地名", "O"],
    "iobes": ["B-PER", "B-地名", "E-PER", "E-地名", "I-PER", "I-地名", "O", "S-PER", "S-地名"],
    "bmes": ["B", "E", "M", "S"],
}


def mask_allows(seq, labels, trans, end):
    if not seq:
        return True
    ids = [labels.index(t) for t in seq]
    L = len(labels)
    ok = trans[L, ids[0]] == 0 and end[ids[-1]] == 0
    return bool(ok and all(trans[a, b] == 0 for a, b in zip(ids, ids[1:])))


@pytest.mark.parametrize("scheme", ["iob2", "iobes", "bmes"])
def test_valid_sequence_agrees_with_mask_exhaustively(scheme):
    labels = LABELS[scheme]
    trans, end = transition_mask(labels, scheme)
    assert trans.shape == (len(labels) + 1, len(labels)) and end.shape == (len(labels),)
    assert set(np.unique(trans)) <= {0.0, -np.inf} and set(np.unique(end)) <= {0.0, -np.inf}
    n_valid = 0
    for n in range(0, 4):
        for seq in itertools.product(labels, repeat=n):
            v = valid_sequence(list(seq), scheme)
            assert v == mask_allows(list(seq), labels, trans, end), seq
            n_valid += v
    assert 0 < n_valid < sum(len(labels) ** n for n in range(4))


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["iob2", "iobes"]).flatmap(
    lambda s: st.tuples(st.just(s), st.lists(st.sampled_from(LABELS[s]), max_size=9))))
def test_valid_sequence_agrees_with_mask_on_longer_sequences(data):
    scheme, seq = data
    trans, end = transition_mask(LABELS[scheme], scheme)
    assert valid_sequence(seq, scheme) == mask_allows(seq, LABELS[scheme], trans, end)


@pytest.mark.parametrize("seq, scheme, valid", [
    (["B-PER", "I-PER", "O", "B-地名"], "iob2", True),
    (["I-PER"], "iob2", False),
    (["O", "I-PER"], "iob2", False),
    (["B-PER", "I-地名"], "iob2", False),
    (["B-PER", "E-PER", "S-地名", "O"], "iobes", True),
    (["B-PER"], "iobes", False),                  # a span cannot stay open at the end
    (["B-PER", "I-PER"], "iobes", False),
    (["S-PER", "I-PER", "E-PER"], "iobes", False),
    (["B-PER", "O"], "iobes", False),
    (["B-PER", "E-地名"], "iobes", False),
    (["B-PER", "I-PER", "E-PER"], "iobes", True),
    ([], "iobes", True),
])
def test_valid_sequence_by_hand(seq, scheme, valid):
    assert valid_sequence(seq, scheme) is valid


def test_iob2_mask_by_hand():
    labels = ["B-X", "I-X", "O"]
    trans, end = transition_mask(labels, "iob2")
    allowed = trans == 0
    # rows: B-X, I-X, O, <bos>; columns: B-X, I-X, O
    assert allowed.tolist() == [[True, True, True], [True, True, True], [True, False, True],
                                [True, False, True]]
    assert end.tolist() == [0.0, 0.0, 0.0]
    none_trans, none_end = transition_mask(labels, "none")
    assert not none_trans.any() and not none_end.any()


def test_unknown_mask_scheme():
    with pytest.raises(InputError, match="unknown label scheme"):
        transition_mask(["O"], "bilou")


# -------------------------------------------------------------------- constrained decoding
SCORES = st.floats(min_value=-10, max_value=10, allow_nan=False, allow_infinity=False, width=32)


@st.composite
def scored_batch(draw, n_labels, max_len=8, max_batch=4):
    B = draw(st.integers(1, max_batch))
    lengths = draw(st.lists(st.integers(1, max_len), min_size=B, max_size=B))
    T = max(lengths)
    state = draw(arrays(np.float64, (B, T, n_labels), elements=SCORES))
    per_token = draw(st.booleans())
    shape = (B, T, n_labels + 1, n_labels) if per_token else (n_labels + 1, n_labels)
    trans = draw(arrays(np.float64, shape, elements=SCORES))
    return state, trans, np.asarray(lengths, dtype=np.int64)


def decoded(labels, scheme, state, trans, lengths):
    mask, end = transition_mask(labels, scheme)
    masked = trans + mask
    B = state.shape[0]
    out = []
    for b in range(B):
        n = int(lengths[b])
        t = masked[b, :n] if masked.ndim == 4 else masked[None]
        path = np.empty(n, dtype=np.int32)
        compiled_viterbi(np.ascontiguousarray(state[b, :n]), np.ascontiguousarray(t), end, path)
        out.append(("compiled", [labels[i] for i in path]))
    batch = viterbi_batch(state, masked, end, lengths)
    out += [("batch", [labels[i] for i in batch[b, :int(lengths[b])]]) for b in range(B)]
    return out


@pytest.mark.parametrize("scheme", ["iob2", "iobes"])
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_constrained_decoding_never_invalid(scheme, data):
    labels = LABELS[scheme]
    state, trans, lengths = data.draw(scored_batch(len(labels)))
    for which, tags in decoded(labels, scheme, state, trans, lengths):
        assert valid_sequence(tags, scheme), (which, tags)


@pytest.mark.parametrize("scheme", ["iob2", "iobes"])
def test_constrained_decoding_against_adversarial_scores(scheme):
    """State scores that all favour I-PER: only the mask keeps the path well-formed."""
    labels = LABELS[scheme]
    state = np.zeros((1, 4, len(labels)))
    state[..., labels.index("I-PER")] = 50.0
    expected = {"iob2": ["B-PER", "I-PER", "I-PER", "I-PER"],
                "iobes": ["B-PER", "I-PER", "I-PER", "E-PER"]}[scheme]
    for which, tags in decoded(labels, scheme, state, np.zeros((len(labels) + 1, len(labels))),
                               np.array([4])):
        assert tags == expected, which
    # without the mask the decoders happily output I-PER at the start
    none_mask, none_end = transition_mask(labels, "none")
    path = viterbi_batch(state, none_mask, none_end)[0]
    assert labels[path[0]] == "I-PER"


# ------------------------------------------------------------------------ known bugs
def test_underscore_separator_round_trip():
    tags = ["B_PER", "I_PER", "O", "B_LOC"]
    assert valid_sequence(tags, "iob2")
    for target in ("iob1", "iobes", "bilou"):
        assert convert(convert(tags, "iob2", target), target, "iob2") == tags, target


def test_tagger_keeps_underscore_labels():
    from structperc import Tagger
    X = [["Juan", "vive", "en", "São", "Paulo"], ["Ana", "ama", "北京"]]
    Y = [["B_PER", "O", "O", "B_LOC", "I_LOC"], ["B_PER", "O", "B_LOC"]]
    tagger = Tagger.train(X, Y, columns=["word", "ner"], template=["w[0]", "bias"], epochs=5)
    assert tagger.predict(X) == Y


def test_untyped_tags_convert_to_valid_iobes():
    assert valid_sequence(["B", "I", "O", "B"], "iob2")
    assert valid_sequence(convert(["B", "I", "O", "B"], "iob2", "iobes"), "iobes")


def test_tagger_on_untyped_bio_tags():
    from structperc import Tagger
    X = [["the", "cat", "sat", "on", "the", "mat"], ["a", "dog"], ["dogs", "run"]]
    Y = [["B", "I", "O", "O", "B", "I"], ["B", "I"], ["B", "O"]]
    reference = Tagger.train(X, Y, columns=["word", "chunk"], template=["w[0]", "w[-1]", "bias"],
                             epochs=10, encoding="iob2")
    assert reference.predict(X) == Y                          # the data is learnable
    tagger = Tagger.train(X, Y, columns=["word", "chunk"], template=["w[0]", "w[-1]", "bias"], epochs=10)
    assert tagger.predict(X) == Y


def test_spans_reading_of_tags_by_hand():
    assert spans(["B-PER", "I-PER", "O", "B-LOC"], "iob2") == [(0, 2, "PER"), (3, 4, "LOC")]
    assert spans(["I-PER", "I-LOC", "B-LOC", "I-LOC"], "iob2") == [(0, 1, "PER"), (1, 2, "LOC"), (2, 4, "LOC")]
    assert spans(["S-PER", "B-LOC", "E-LOC", "O"], "iobes") == [(0, 1, "PER"), (1, 3, "LOC")]
    assert spans(["I-PER", "I-PER", "B-PER"], "iob1") == [(0, 2, "PER"), (2, 3, "PER")]
    assert spans(["B", "I", "O", "B"], "iob2") == [(0, 2, ""), (3, 4, "")]
    assert spans([], "iob2") == [] and spans(["O", "O"], "iob2") == []


def test_foreign_tags_are_those_the_scheme_does_not_write():
    from structperc.labels.schemes import foreign_tags

    tags = ["O", "B-NP", "I-NP", "E-NP", "S-NP", "L-NP", "U-NP", "B", "garbage", "?", "NP", "B_NP"]
    assert foreign_tags(tags, "iob2") == ["E-NP", "S-NP", "L-NP", "U-NP", "garbage", "?", "NP"]
    assert foreign_tags(tags, "iob2", unknown="?") == ["E-NP", "S-NP", "L-NP", "U-NP", "garbage", "NP"]
    assert foreign_tags(tags, "iobes", unknown="?") == ["L-NP", "U-NP", "garbage", "NP"]
    assert foreign_tags(tags, "bilou", unknown="?") == ["E-NP", "S-NP", "garbage", "NP"]
