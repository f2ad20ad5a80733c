"""Every compiled kernel checks its arguments before the machine code runs (`structperc.compiled.boundary`).

The ahead-of-time build checks nothing itself: a wrong dtype or one index too many corrupted the heap
(``free(): invalid next size``) instead of raising. These tests call the guarded kernels with broken
arguments in a child process, so a crash fails the test instead of killing pytest, and check the root
cause of the reported corruption (a token holding tabs) round-trips through the compiled value table."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from structperc.compiled import boundary, loader
from structperc.io import scan


def run_child(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


def test_every_exported_kernel_has_a_parsed_signature():
    signatures = loader.exported_signatures()
    assert {"decode_corpus", "insert_spans", "scan_columns", "write_tagged", "nbest_corpus"} <= set(signatures)
    for name, signature in signatures.items():
        assert boundary.parse_signature(signature), name


def test_every_kernel_reachable_from_input_has_a_contract():
    """The training epochs and the mixing kernels are checked by their drivers; every other kernel
    (reading, lookup, decoding, model loading) has a contract of its own."""
    driven = {name for name in loader.exported_signatures() if name.startswith(("train_epoch", "mix_"))}
    assert set(loader.exported_signatures()) - driven - {"count_byte"} == set(boundary.CONTRACTS)


def test_signature_parsing_by_hand():
    assert boundary.parse_signature("UniTuple(i8, 3)(i8[::1], i4[:, ::1], f8)") == [
        ("array", np.dtype(np.int64), 1), ("array", np.dtype(np.int32), 2), ("scalar", np.float64, 0)]
    with pytest.raises(ValueError):
        boundary.parse_signature("void(i8[:])")  # strided arrays are never exported


@pytest.mark.parametrize("bad", [
    "np.array([10, 10], dtype=np.int64)",            # wrong dtype: pycc read it as bytes
    "np.frombuffer(b'a\\nb\\n\\n\\n', dtype=np.uint8)[::2]",  # strided view
    "[10, 10]",                                        # not an array
])
def test_wrong_arguments_raise_instead_of_crashing(bad):
    proc = run_child(f"""
        import numpy as np
        from structperc.compiled import loader, boundary
        k = loader.aot("count_byte")
        if k is None:
            print("no build"); raise SystemExit(0)
        try:
            k({bad}, 10)
        except boundary.KernelInputError as exc:
            print("raised", exc)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(("raised kernel count_byte", "no build")), proc.stdout


def test_more_spans_than_codes_is_refused_in_a_child():
    """The reported corruption: `insert_spans` given four spans and room for one code."""
    proc = run_child("""
        import numpy as np
        from structperc.compiled import loader, boundary
        from structperc.io.scan import Interner
        k = loader.aot("insert_spans")
        if k is None:
            print("no build"); raise SystemExit(0)
        it = Interner(1)
        data = np.frombuffer(b"a\\tb\\tc\\td\\t", dtype=np.uint8)
        it.reserve(len(data))
        end = np.array([1, 3, 5, 7]); beg = end - 1
        try:
            k(data, beg, end, 0, np.empty(1, dtype=np.int64), it.table, it.ent, it.arena, it.state)
        except boundary.KernelInputError as exc:
            print("raised", exc)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(("raised kernel insert_spans: 1 codes for 4 values", "no build")), proc.stdout


@pytest.mark.parametrize("values", [["a\tb\tc\td"], ["x", "a\tb", "x", "", "a\tb", "y\t"], ["\t", "\t\t", "z"]])
def test_values_holding_tabs_round_trip(values):
    """A whole line read as one token keeps its tabs, and equal values get one code, with or
    without the compiled table."""
    for compiled in (False, True):
        if compiled and not scan.available():
            continue
        interner = scan.Interner(1)
        if not compiled:
            interner.compiled = False
            import itertools
            from collections import defaultdict
            interner.index = [defaultdict(itertools.count().__next__)]
        codes = interner.add_strings(0, values)
        assert [interner.distinct[0][c] for c in codes] == values
        assert len(interner.distinct[0]) == len(set(values))


def test_a_build_for_another_processor_is_ignored(monkeypatch):
    """A build made for other CPU features (a copied tree, a VM moved to other hardware) may hold
    instructions this processor lacks (SIGILL): it counts as stale and the JIT runs instead."""
    if loader._load_aot("_aot") is None:
        pytest.skip("no current ahead-of-time build here")
    monkeypatch.setattr(loader, "cpu_digest", lambda: -1)
    assert loader._load_aot("_aot") is None


def test_cpu_digest_is_stable_and_reads_no_llvm():
    proc = run_child("""
        import sys
        from structperc.compiled import loader
        a, b = loader.cpu_digest(), loader.cpu_digest()
        print(a == b, 0 <= a < 2 ** 60, "llvmlite" in sys.modules, "numba" in sys.modules)
    """)
    assert proc.stdout.split() == ["True", "True", "False", "False"], proc.stdout + proc.stderr


def test_scan_contract_takes_the_callers_newline_count():
    """The scan contracts size their check by the newlines the caller counted (``newlines=``, what
    `structperc.io.scan.scan_piece` sized its outputs by) instead of counting them again; without it
    they count. Either way outputs too small for the lines are refused before the kernel runs."""
    data = np.frombuffer(b"a b\nc d\n\ne f\n", dtype=np.uint8)
    lines = int(np.count_nonzero(data == 10))

    def args(cap):
        return (data, np.array([0, 1], np.int64), np.empty((2, cap), np.int64), np.empty(0, np.int64),
                np.empty(0, np.int64), np.empty(cap, np.int64), np.empty(cap, np.int64),
                np.empty(cap, np.uint8), np.zeros(16, np.int64), np.zeros(8, np.int64),
                np.zeros((4, 6), np.int64), np.zeros(64, np.uint8), np.zeros(4, np.int64))

    contract = boundary.CONTRACTS["scan_columns"]
    for known in ({}, {"newlines": lines}):
        contract(*args(lines + 1), **known)  # room for every line: passes
        with pytest.raises(boundary.KernelInputError, match="room for"):
            contract(*args(lines), **known)


@pytest.mark.parametrize("bad, message", [
    ("text[:-1], starts(3), slots(4)", "end with a newline"),
    ("text, starts(2), slots(4)", "room for the starts of 2 words"),
    ("text, starts(4), slots(4)", "room for the starts of 2 words"),
    ("text, starts(3), slots(2)", "empty power of two larger than the words"),
    ("text, starts(3), slots(3)", "empty power of two larger than the words"),
    ("text, starts(3), np.zeros(4, np.int32)", "empty power of two larger than the words"),
])
def test_index_words_refuses_what_would_overrun_in_a_child(bad, message):
    """`index_words` writes a start per stored word and fills slots until it finds an empty one: room for fewer or
    more starts than the text's words, slots too few, not a power of two or not empty (a probe that never ends), and a
    text without its final newline are refused before it runs."""
    assert_refused_in_child("index_words", """
        text = np.frombuffer(b"ab\\nc\\n", dtype=np.uint8)
        def starts(n):
            return np.empty(n, np.int32)
        def slots(n):
            return np.full(n, -1, np.int32)
        s, t = starts(3), slots(4)
        assert k(text, s, t) == 0 and s.tolist() == [0, 3, 5] and sorted(t.tolist()) == [-1, -1, 0, 1]
    """, bad, message)


@pytest.mark.parametrize("bad, message", [
    ("text, starts, slots, query, np.array([0, 1, 9]), out", "wanted word offsets"),
    ("text, starts, slots, query, qptr, out[:1]", "one answer per wanted word"),
    ("text, starts, slots[:2], query, qptr, out", "power of two larger than the words"),
    ("text, starts, np.full(3, -1, np.int32), query, qptr, out", "power of two larger than the words"),
    ("text, np.array([0, 3, 9], np.int32), slots, query, qptr, out", "word starts must rise"),
    ("text, np.array([0, 5, 5], np.int32), slots, query, qptr, out", "word starts must rise"),
    ("text, np.array([1, 3, 5], np.int32), slots, query, qptr, out", "word starts must rise"),
    ("text, starts, np.array([0, 1, 2, -1], np.int32), query, qptr, out", "slot ids"),
    ("text, starts, np.array([0, 1, 0, 1], np.int32), query, qptr, out", "no empty slot"),
])
def test_probe_words_refuses_what_would_overrun_in_a_child(bad, message):
    """`probe_words` reads stored words by their starts and wanted words by their offsets, and probes until an empty
    slot: starts that leave the text, slots naming no word or with no empty one (a probe that never ends), offsets
    past the wanted bytes and too few answers are refused before it runs."""
    assert_refused_in_child("probe_words", """
        text = np.frombuffer(b"ab\\nc\\n", dtype=np.uint8)
        starts, slots = np.empty(3, np.int32), np.full(4, -1, np.int32)
        assert loader.aot("index_words")(text, starts, slots) == 0
        query = np.frombuffer(b"abc", dtype=np.uint8)
        qptr = np.array([0, 2, 3])
        out = np.empty(2, np.int64)
        k(text, starts, slots, query, qptr, out)
        assert out.tolist() == [0, 1]
    """, bad, message)


def assert_refused_in_child(name: str, setup: str, bad: str, message: str) -> None:
    """In a child process: kernel ``name`` (as ``k``) works on the arguments ``setup`` makes, and raises
    `boundary.KernelInputError` naming ``message`` on the arguments ``bad`` (a crash fails the test, not pytest)."""
    proc = run_child(f"""
        import numpy as np
        from structperc.compiled import loader, boundary
        k = loader.aot("{name}")
        if k is None:
            print("no build"); raise SystemExit(0)
""" + textwrap.indent(textwrap.dedent(setup), " " * 8) + f"""
        try:
            k({bad})
        except boundary.KernelInputError as exc:
            print("raised", exc)
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith((f"raised kernel {name}", "no build")) and (
        message in proc.stdout or "no build" in proc.stdout), proc.stdout


@pytest.mark.parametrize("bad, message", [
    ("words, starts, np.array([3, 9]), keys, children, kinds, 2, length, kind", "spans outside"),
    ("words, np.array([-1, 1]), ends, keys, children, kinds, 2, length, kind", "spans outside"),
    ("words, starts, ends, keys, children, kinds, 2, length[:1], kind", "one length and one kind"),
    ("words, starts, ends, keys, np.array([1, 7], np.int32), kinds, 2, length, kind", "child node ids"),
    ("words, starts, ends, keys[:1], children, kinds, 2, length, kind", "one child per edge key"),
    ("np.array([0, 5, 1], np.int32), starts, ends, keys, children, kinds, 2, length, kind", "word ids"),
])
def test_gazetteer_matches_refuses_what_would_overrun_in_a_child(bad, message):
    """`gazetteer_matches` reads each start's tokens up to its end and the nodes its edges lead to: ends past the
    tokens, children past the nodes, word ids past the words it was told of are refused before it runs."""
    assert_refused_in_child("gazetteer_matches", """
        words = np.array([0, 1, -1], np.int32)        # "a b x": the strings "a" (type 0) and "a b" (type 1)
        starts, ends = np.array([0, 1]), np.array([3, 3])
        keys, children = np.array([0 * 2 + 0, 1 * 2 + 1]), np.array([1, 2], np.int32)
        kinds = np.array([-1, 0, 1], np.int32)
        length, kind = np.empty(2, np.int32), np.empty(2, np.int32)
        assert k(words, starts, ends, keys, children, kinds, 2, length, kind) == 1
        assert length.tolist() == [2, 0] and kind.tolist() == [1, -1]
    """, bad, message)


def test_frozen_means_nothing_can_write_the_data():
    owned = np.arange(4)
    assert not boundary.frozen(owned)
    boundary.freeze(owned)
    assert boundary.frozen(owned)
    with pytest.raises(ValueError):
        owned[0] = 9
    base = np.arange(4)
    view = base[:]
    boundary.freeze(view)  # a view is left alone: its base could still write the memory
    assert view.flags.writeable and not boundary.frozen(view)
    view.flags.writeable = False
    assert not boundary.frozen(view)  # read-only itself, but over a writeable base
    assert boundary.frozen(np.frombuffer(b"\x00" * 16, dtype=np.int64))


def _lattice_args(ptr: np.ndarray, lab: np.ndarray) -> tuple:
    """decode_corpus's arguments for 2 tokens, 2 labels, the state weights ``ptr``, ``lab``."""
    L = 2
    return (np.array([[0], [1]], np.int32), np.zeros((2, 0), np.int32), np.array([0, 2], np.int64), ptr, lab,
            np.ones(len(lab), np.float32), np.zeros((L + 1, L), np.float32), np.zeros((1, L + 1, L), np.float32),
            np.zeros(L, np.float64), np.empty(2, np.int32))


def test_a_frozen_table_is_checked_once_a_writeable_one_at_every_call():
    """A model's tables are checked once while frozen (`boundary._once`); a writeable one can change between
    calls, so its contract runs every time and refuses it once broken."""
    contract = boundary.CONTRACTS["decode_corpus"]
    ptr, lab = np.array([0, 2, 4], np.int64), np.array([0, 1, 0, 1], np.int16)
    contract(*_lattice_args(ptr, lab))
    lab[3] = 7  # a label past L: the kernel would write outside its rows
    with pytest.raises(boundary.KernelInputError, match="label ids"):
        contract(*_lattice_args(ptr, lab))
    bad = np.array([0, 1, 0, 7], np.int16)
    boundary.freeze(ptr, bad)
    for _ in range(2):  # frozen, broken: refused at the first call and every one after (never remembered)
        with pytest.raises(boundary.KernelInputError, match="label ids"):
            contract(*_lattice_args(ptr, bad))
    good = np.array([0, 1, 0, 1], np.int16)
    boundary.freeze(good)
    calls = []
    real = boundary._ids_within
    try:
        boundary._ids_within = lambda *a: (calls.append(a[1]), real(*a))[1]
        for _ in range(3):
            contract(*_lattice_args(ptr, good))
    finally:
        boundary._ids_within = real
    assert calls.count("label") == 1 and calls.count("state attribute") == 3


def test_remembered_tables_go_with_them():
    before = len(boundary._SOUND)
    contract = boundary.CONTRACTS["decode_corpus"]
    for _ in range(50):
        ptr, lab = np.array([0, 2, 4], np.int64), np.array([0, 1, 0, 1], np.int16)
        boundary.freeze(ptr, lab)
        contract(*_lattice_args(ptr, lab))
        del ptr, lab
    assert len(boundary._SOUND) <= before + 2
