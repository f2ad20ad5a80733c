"""Random requests never take the service down or make it fail inside: any JSON (or non-JSON) body to
any endpoint gets an answer below 500, and a well-formed request after them is still answered."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

WORDS = st.sampled_from(["the", "cat", "Juan", "Madrid", "上海", "", " ", "\t", "a b", "😀", "\x00", "é" * 300])
TOKENS = st.one_of(WORDS, st.lists(WORDS, max_size=3), st.integers(), st.none(), st.floats(allow_nan=True))
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | WORDS,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(WORDS, inner, max_size=4),
                    max_leaves=12)
BODIES = st.one_of(
    st.fixed_dictionaries({}, optional={
        "sentences": st.one_of(st.lists(st.lists(TOKENS, max_size=6), max_size=4), JSON),
        "text": st.one_of(st.text(max_size=40), JSON),
        "model": st.one_of(st.sampled_from(["chunk", "pos", "ner", "cws", "../cws", "", "x" * 100]), JSON),
        "marginals": st.one_of(st.booleans(), JSON),
        "nbest": st.one_of(st.integers(-3, 8), JSON),
    }),
    JSON,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(path=st.sampled_from(["/tag", "/segment"]), body=BODIES, raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_random_requests_get_answers_below_500(server, path, body, raw):
    data = raw if raw is not None else json.dumps(body).encode()
    status, answer = server.request("POST", path, raw=data)
    assert status < 500, (status, answer, data[:200])
    if status >= 400:
        assert isinstance(answer, dict) and isinstance(answer.get("error"), str) and answer["error"], answer


def test_still_answering_after_the_fuzzing(server):
    assert server.request("GET", "/health") == (200, {"status": "ok"})
    status, out = server.request("POST", "/tag", {"model": "pos", "text": "The cat sat ."})
    assert status == 200 and len(out["tags"][0]) == 4
    assert server.process.poll() is None
