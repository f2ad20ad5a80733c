"""The tagging lattice shared by the tagging-side kernels (`structperc.decode.score_kernels`), through
numba's JIT: token state scores and conditioned transition tables bit-identical to the numpy scoring
of `structperc.model.weights.Weights`, the vectorized Viterbi step equal to numpy's max and argmax
(ties to the lowest previous label) for every label count that picks a different vector path, and
the build digest of every group covering the shared module."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fb_kernels import make_problem

from structperc.compiled import loader
from structperc.decode import score_kernels as SK

PACKAGE = Path(loader.__file__).resolve().parent.parent


def _structperc_imports(module: str) -> set[str]:
    """The structperc modules ``module`` (dotted, relative to the package) imports, relative too."""
    tree = ast.parse((PACKAGE / (module.replace(".", "/") + ".py")).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("structperc."):
            found.add(node.module[len("structperc."):])
        elif isinstance(node, ast.Import):
            found.update(a.name[len("structperc."):] for a in node.names if a.name.startswith("structperc."))
    return found


@pytest.mark.parametrize("group", sorted(loader.GROUPS))
def test_every_group_digest_covers_what_its_kernels_import(group):
    """A build compiles in the code its kernel modules import; a module missing from the group's
    digest could be edited without making the build stale (old code would run silently)."""
    listed = set(loader.GROUPS[group])
    for module in loader.GROUPS[group]:
        missing = _structperc_imports(module) - listed
        assert not missing, f"{group}: {module} imports {sorted(missing)}, not in its digest"


def test_the_four_tagging_kernels_share_the_lattice_module():
    for group in ("_aot", "_aot_fb", "_aot_nbest", "_aot_constrained"):
        assert "decode.score_kernels" in loader.GROUPS[group]


# --------------------------------------------------------------------------- token scores
@settings(max_examples=150, deadline=None)
@given(L=st.integers(1, 20), sparse=st.booleans(), KT=st.integers(0, 3), seed=st.integers(0, 2 ** 32 - 1))
def test_token_scores_equal_the_numpy_scoring(L, sparse, KT, seed):
    """Every label's state score, over every label or only a subset, and every conditioned table
    entry: the float32 sums of `Weights.state_scores` / `Weights.transition_scores` exactly."""
    rng = np.random.default_rng(seed)
    w, feats, _ = make_problem(rng, L, rng.integers(1, 6, 3), sparse=sparse, KT=KT, K=4)
    sw = w.sparse
    dense = SK.is_dense(sw.ptr, sw.labels, L)
    assert dense == (len(sw.labels) == (len(sw.ptr) - 1) * L)
    want_state = w.state_scores(feats.state)
    want_trans = w.transition_scores(feats.trans)
    base = w.base_transitions()
    every = np.empty(0, np.int64)
    state = np.full(L, np.nan, np.float32)
    tr = np.full((L + 1, L), np.nan, np.float32)
    for row in range(len(feats.state)):
        SK.state_scores(feats.state, row, sw.ptr, sw.labels, sw.values, dense, state, every, L)
        np.testing.assert_array_equal(state, want_state[row])
        labels = np.flatnonzero(rng.random(L) < 0.5).astype(np.int64)
        state[:] = np.nan
        SK.state_scores(feats.state, row, sw.ptr, sw.labels, sw.values, dense, state, labels, len(labels))
        np.testing.assert_array_equal(state[labels], want_state[row, labels])
        if KT > 0:
            SK.transition_table(feats.trans, row, w.cond, base, tr)
            np.testing.assert_array_equal(tr, want_trans[row])


# --------------------------------------------------------------------------- Viterbi step
@settings(max_examples=200, deadline=None)
@given(L=st.sampled_from([1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40]),
       ti=st.integers(0, 2), ties=st.booleans(), seed=st.integers(0, 2 ** 32 - 1))
def test_viterbi_step_is_max_and_lowest_argmax(L, ti, ties, seed):
    """Every vector path (16, 8, overlapping 8, 4, scalar) gives numpy's max over the previous label
    and its first argmax; small integers make ties common, -inf entries forbid transitions."""
    rng = np.random.default_rng(seed)
    draw = (lambda size: rng.integers(-2, 3, size)) if ties else (lambda size: rng.normal(0, 3, size))
    delta = draw((3, L)).astype(np.float32)
    tr = draw((3, L + 1, L)).astype(np.float32)
    tr[rng.random(tr.shape) < 0.2] = -np.inf
    back = np.full((3, L), -7, np.int32)
    t = 1
    cand = delta[t - 1][:, None] + tr[ti, :L]           # (previous label p, label y)
    SK.viterbi_step(delta, back, tr, t, ti, L)
    np.testing.assert_array_equal(delta[t], cand.max(axis=0))
    np.testing.assert_array_equal(back[t], cand.argmax(axis=0))


def test_best_last_and_backtrack():
    delta = np.array([[0, 0, 0], [1, 5, 5]], np.float32)
    end = np.array([0.0, 0.0, -1.0])
    assert SK.best_last(delta, 2, end) == (5.0, 1)        # 5 + 0 beats 5 - 1; ties to the lowest
    assert SK.best_last(np.full((1, 3), -np.inf, np.float32), 1, end) == (-np.inf, 0)
    back = np.array([[0, 0, 0], [2, 0, 1], [1, 2, 0]], np.int32)
    out = np.full(5, -1, np.int32)
    SK.backtrack(back, 0, 3, out, 1)
    assert out.tolist() == [-1, 0, 1, 0, -1]             # last 0; back[2, 0] = 1; back[1, 1] = 0
    assert SK.longest(np.array([0, 2, 2, 7, 8])) == 5
    assert SK.longest(np.array([0])) == 0
