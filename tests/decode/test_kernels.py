"""The ahead-of-time kernels (``structperc._aot``) against numba's JIT of the same source.

`pip install` compiles them; a stale or missing build must fall back to the JIT, never run old code.
"""
from __future__ import annotations

import importlib
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lattices import corpus_ids

from structperc.compiled import loader as kernels
from structperc.decode import tag_kernels
from structperc.decode.decoder import predict
from structperc.train import epoch_kernels as train_kernels

aot = pytest.mark.skipif(kernels.mode() != "aot", reason="structperc._aot is not built (pip install "
                         "builds it; `python -m structperc.compiled.build` rebuilds it in place)")


def test_installed_package_uses_the_ahead_of_time_build():
    """CI installs from a clean clone: the build step must have produced a current module."""
    if os.environ.get("CI") != "true":
        pytest.skip("checked in CI, where the package is installed from a clean clone")
    assert kernels.mode() == "aot"


def test_installed_package_is_byte_compiled():
    """An editable install writes the sources' .pyc files: without them, and with
    PYTHONDONTWRITEBYTECODE set, every command would compile every module again at start-up."""
    if os.environ.get("CI") != "true":
        pytest.skip("checked in CI, where the package is installed from a clean clone")
    import importlib.util
    from pathlib import Path

    import structperc
    package = Path(structperc.__file__).parent
    sources = [p for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    missing = [str(p) for p in sources if not Path(importlib.util.cache_from_source(str(p))).exists()]
    assert sources and not missing


def _problem(rng, n_sent=25, L=5, K=4, KT=0, A=40, AT=6):
    ptr, X, XT = corpus_ids(rng, rng.integers(1, 9, n_sent), K, KT, A, AT)
    y = rng.integers(0, L, len(X)).astype(np.int32)
    mask = np.where(rng.random((L + 1, L)) < 0.15, -np.inf, 0.0)
    mask[:, 0] = 0.0  # label 0 is always reachable, so every sentence has a path
    end = np.zeros(L)
    return ptr, X, XT, y, mask, end, A, AT, L


def _pairs(kind, X, y, A, L):
    from structperc.model.state_weights import feature_set

    return feature_set(kind, X, y, A, L)


@aot
@pytest.mark.parametrize("kind", ["all", "observed"])
@pytest.mark.parametrize("KT", [0, 2])
def test_train_epoch_aot_equals_jit(KT, kind):
    rng = np.random.default_rng(KT)
    ptr, X, XT, y, mask, end, A, AT, L = _problem(rng, KT=KT)
    sp, lab, act = _pairs(kind, X, y, A, L)
    results = []
    for fn in (kernels._AOT.train_epoch, train_kernels.train_epoch):
        W, U = np.zeros(len(lab), np.float32), np.zeros(len(lab))
        Wt, Ut = np.zeros((L + 1, L), np.float32), np.zeros((L + 1, L))
        Wc, Uc = np.zeros((AT, L + 1, L), np.float32), np.zeros((AT, L + 1, L))
        c = 0
        counts = []
        for epoch in range(3):
            order = np.random.default_rng(epoch).permutation(len(ptr) - 1).astype(np.int64)
            m, e, c = fn(order, ptr, X, XT, y, sp, lab, act, W, U, Wt, Ut, Wc, Uc, mask, end, c, 8)
            counts.append((int(m), int(e), int(c)))
        results.append((counts, W, U, Wt, Ut, Wc, Uc))
    (ca, *wa), (cj, *wj) = results
    assert ca == cj
    assert any(a.any() for a in wa), "the problem should need updates"
    for a, j in zip(wa, wj):
        np.testing.assert_array_equal(a, j)


@aot
@pytest.mark.parametrize("kind", ["all", "observed"])
@pytest.mark.parametrize("KT", [0, 3])
def test_decode_corpus_aot_equals_jit_and_numpy(KT, kind):
    from structperc.features.index import Features
    from structperc.model.state_weights import StateWeights
    from structperc.model.weights import Weights

    rng = np.random.default_rng(10 + KT)
    ptr, X, XT, y, mask, end, A, AT, L = _problem(rng, n_sent=60, KT=KT)
    sp, lab, _ = _pairs(kind, X, y, A, L)
    # small integers: many ties, lowest label wins
    state = StateWeights(sp, lab, rng.integers(-3, 4, len(lab)).astype(np.float32), L)
    cond = np.zeros((AT + 1, L + 1, L), np.float32)
    cond[:-1] = rng.integers(-2, 3, (AT, L + 1, L))
    trans = rng.integers(-2, 3, (L + 1, L)).astype(np.float32)
    end[rng.integers(1, L)] = -np.inf
    w = Weights(state, trans, cond, mask, end)
    base = (trans + mask).astype(np.float32)
    outs = []
    for fn in (kernels._AOT.decode_corpus, tag_kernels.decode_corpus):
        out = np.full(len(X), -7, np.int32)
        fn(X, XT, ptr, state.ptr, state.labels, state.values, base, cond, end, out)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    feats = Features(X, XT, ptr)
    np.testing.assert_array_equal(predict(w, feats), outs[0])       # compiled path
    from structperc.decode.decoder import _predict_compiled

    assert _predict_compiled(w, feats, np.empty(len(X), np.int32))
    original = kernels._AOT
    try:
        kernels._AOT = None
        np.testing.assert_array_equal(predict(w, feats), outs[0])   # vectorized numpy path
    finally:
        kernels._AOT = original


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.sampled_from([0, 2]), st.sampled_from(["all", "observed"]),
       st.integers(0, 2**32 - 1))
def test_decode_corpus_every_label_count(L, KT, kind, seed):
    """The tagging Viterbi runs labels in vectors of 16, 8 and 4 with a last overlapping vector for
    the remainder (and scalar code below 4 labels): every L gives the numpy decoder's labels, on
    small integer weights where ties abound (the lowest previous label must win each one)."""
    from structperc.features.index import Features
    from structperc.model.state_weights import StateWeights
    from structperc.model.weights import Weights

    rng = np.random.default_rng(seed)
    ptr, X, XT, y, mask, end, A, AT, _ = _problem(rng, n_sent=6, L=L, KT=KT)
    sp, lab, _ = _pairs(kind, X, y, A, L)
    state = StateWeights(sp, lab, rng.integers(-2, 3, len(lab)).astype(np.float32), L)
    cond = np.zeros((AT + 1, L + 1, L), np.float32)
    cond[:-1] = rng.integers(-1, 2, (AT, L + 1, L))
    trans = rng.integers(-1, 2, (L + 1, L)).astype(np.float32)
    w = Weights(state, trans, cond, mask, end)
    base = (trans + mask).astype(np.float32)
    fns = [tag_kernels.decode_corpus] + ([kernels._AOT.decode_corpus] if kernels.mode() == "aot" else [])
    original = kernels._AOT
    try:
        kernels._AOT = None
        want = predict(w, Features(X, XT, ptr))                     # vectorized numpy path
    finally:
        kernels._AOT = original
    for fn in fns:
        out = np.full(len(X), -7, np.int32)
        fn(X, XT, ptr, state.ptr, state.labels, state.values, base, cond, end, out)
        np.testing.assert_array_equal(out, want)


def test_stale_build_is_ignored(monkeypatch):
    """An editable install whose kernel sources changed after the build must not run the old code."""
    monkeypatch.setattr(kernels, "source_digest", lambda root=None, group="_aot": -1)
    assert kernels._load_aot() is None


def test_jit_can_be_forced(monkeypatch):
    monkeypatch.setenv("STRUCTPERC_KERNELS", "jit")
    assert kernels._load_aot() is None


@pytest.mark.parametrize("edited", kernels.GROUPS["_aot"])
def test_source_digest_covers_every_file_of_the_group(tmp_path, edited):
    """Editing any source compiled into the build (kernels or the intrinsics they use) makes it stale."""
    from pathlib import Path

    src = Path(kernels.__file__).parent.parent

    def rel(name: str) -> str:
        return name.replace(".", "/") + ".py"
    for name in kernels.GROUPS["_aot"]:
        (tmp_path / rel(name)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel(name)).write_bytes((src / rel(name)).read_bytes())
    before = kernels.source_digest(tmp_path)
    assert before == kernels.source_digest(src)
    assert kernels.source_digest(src, "_aot_read") != before  # groups are built and checked apart
    (tmp_path / rel(edited)).write_bytes((src / rel(edited)).read_bytes() + b"\n# edit\n")
    assert kernels.source_digest(tmp_path) != before


def test_tagging_does_not_import_numba(tmp_path):
    """Tagging runs the ahead-of-time decoder or numpy: numba's import alone costs ~0.3 s, 65 MiB."""
    import subprocess
    import sys

    code = ("import sys\nimport numpy as np\nfrom structperc.model.weights import Weights\n"
            "from structperc.features.index import Features\n"
            "w = Weights(np.zeros((2, 2), np.float32), np.zeros((3, 2), np.float32),"
            " np.zeros((1, 3, 2), np.float32), np.zeros((3, 2)), np.zeros(2))\n"
            "f = Features(np.zeros((1, 1), np.int32), np.zeros((1, 0), np.int32), np.array([0, 1]))\n"
            "from structperc.decode.decoder import predict\n"
            "print(predict(w, f).tolist(), 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False"


def test_training_without_numba_when_built(tmp_path):
    """With the ahead-of-time build, training never imports numba (the peak-memory saving)."""
    if kernels.mode() != "aot":
        pytest.skip("structperc._aot is not built")
    import subprocess
    import sys

    template = tmp_path / "t.txt"
    template.write_text("w[0]\nw[-1]|w[0]\n")
    code = ("import sys\nfrom structperc.tagger import Tagger\n"
            f"t = Tagger(template={str(template)!r}, columns=['word', 'tag'], epochs=2)"
            ".fit([['a', 'b'], ['b']], [['X', 'Y'], ['Y']])\n"
            "print(t.predict([['a', 'b']]), 'numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[-1] == "False", out.stdout


def test_kernels_module_reloads_cleanly():
    importlib.reload(kernels)
    assert kernels.mode() in ("aot", "jit")


def test_prefetch_intrinsic_on_every_dtype_the_kernels_use():
    """One compiled function prefetching arrays of several dtypes (the pointer types differ) and
    indices past the end (a prefetch never faults) still computes its plain result."""
    from numba import njit

    from structperc.compiled.intrinsics import prefetch

    @njit
    def touch(a, b, c, d, i):
        prefetch(a, i)
        prefetch(b, i)
        prefetch(c, i)
        prefetch(d, np.int32(i))
        prefetch(a, i + 1_000_000)
        return a[i] + b[i] + c[i] + d[i]

    a, b = np.arange(5, dtype=np.float32), np.arange(5, dtype=np.float64)
    c, d = np.arange(5, dtype=np.int16), np.arange(5, dtype=np.int64)
    assert touch(a, b, c, d, 3) == 12.0
