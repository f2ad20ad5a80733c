"""The word shape functions: the ASCII fast path (`str.translate`, a regex for runs) gives exactly
what the per-character definition gives, on any text."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.features.templates import _shape, _short_shape


def shape_by_definition(s: str) -> str:
    return "".join("X" if c.isupper() else "x" if c.islower() else "d" if c.isdigit() else c for c in s)


def short_by_definition(s: str) -> str:
    out: list[str] = []
    for ch in shape_by_definition(s):
        if not out or out[-1] != ch:
            out.append(ch)
    return "".join(out)


@settings(max_examples=500)
@given(st.one_of(st.text(alphabet=st.characters(max_codepoint=127)), st.text()))
def test_shapes_equal_their_definition(s):
    assert _shape(s) == shape_by_definition(s)
    assert _short_shape(s) == short_by_definition(s)


def test_hand_cases():
    assert _shape("Madrid-2024") == "Xxxxxx-dddd" and _short_shape("Madrid-2024") == "Xx-d"
    assert _short_shape("\n\nAa") == "\nXx" and _shape("Zürich") == "Xxxxxx" and _short_shape("ÉÉé١") == "Xxd"
