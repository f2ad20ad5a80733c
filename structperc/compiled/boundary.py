"""The boundary of every compiled kernel: what its arguments must be before the machine code runs.

An ahead-of-time kernel (numba's ``pycc``) checks nothing: an array of another dtype, a strided view, or
an index one past the end is read or written as raw memory, and the process dies later with ``free():
invalid next size`` or a segmentation fault, far from the mistake. numba's JIT checks dtypes (by
compiling another specialisation) and, with ``NUMBA_BOUNDSCHECK=1``, indexes; the ahead-of-time build
does neither. So every kernel that `structperc.compiled.loader.aot` hands out is wrapped here:

1. its exported signature (``AOT_EXPORTS``) is enforced: each array argument's dtype, number of
   dimensions and C-contiguity, each scalar's kind;
2. the kernel's own contract (`CONTRACTS`): the index ranges and sizes its loops rely on (attribute ids
   below the number of attributes, sentence offsets within the tokens, output arrays large enough, ...),
   checked with vectorized numpy before the call.

A broken contract raises `KernelInputError` (a `StructpercError`: one line on the command line, never a
crash). It signals a defect in the caller, not in the user's data, so the message names the kernel and
the argument. The checks cost O(size of the arguments) numpy work, small beside the kernels' own, with one
exception made cheap: the tables of a model (its state weights' rows and labels, a key lookup's slots, a
lexicon's hash table) are as large as the model and the same at every call, so a table nothing can write
(`frozen`: read-only, over memory no writeable array holds) is checked once and remembered (`_once`). A
one-sentence `predict` with a POS model spent 1.4 ms of its 2.5 ms re-checking its tables; a service or a
spaCy pipeline tags sentence by sentence.
"""
from __future__ import annotations

import re
import weakref
from typing import Any, Callable

import numpy as np

from structperc.errors import StructpercError


class KernelInputError(StructpercError, ValueError):
    """A compiled kernel was called with arguments outside its contract (a defect of the caller)."""


_DTYPES = {"i1": np.int8, "i2": np.int16, "i4": np.int32, "i8": np.int64, "u1": np.uint8, "u4": np.uint32,
           "u8": np.uint64, "f4": np.float32, "f8": np.float64, "b1": np.bool_}
_ARG = re.compile(r"^(\w+)(?:\[([^\]]*)\])?$")


def parse_signature(signature: str) -> list[tuple[str, Any, int]]:
    """The arguments of a numba signature string as (kind, dtype, ndim): kind ``"array"`` (C-contiguous,
    ``[:, ::1]``) or ``"scalar"`` (ndim 0)."""
    # "void(args)", "i8(args)", "UniTuple(i8, 3)(args)": the arguments are the last parenthesised group
    start = signature.index(")(") + 2 if ")(" in signature else signature.index("(") + 1
    inner = signature[start:signature.rindex(")")]
    args: list[tuple[str, Any, int]] = []
    for part in re.split(r",\s*(?![^\[]*\])", inner.strip()):
        if not part:
            continue
        m = _ARG.match(part.strip())
        if m is None or m.group(1) not in _DTYPES:
            raise ValueError(f"unsupported kernel argument type {part!r}")
        dims = m.group(2)
        if dims is None:
            args.append(("scalar", _DTYPES[m.group(1)], 0))
        else:
            if not dims.replace(" ", "").endswith("::1"):
                raise ValueError(f"kernel arrays are C-contiguous here, not {part!r}")
            args.append(("array", np.dtype(_DTYPES[m.group(1)]), dims.count(":") - 1))
    return args


def check_signature(name: str, spec: list[tuple[str, Any, int]], args: tuple) -> None:
    """Raise `KernelInputError` unless ``args`` match ``spec`` (see `parse_signature`)."""
    if len(args) != len(spec):
        raise KernelInputError(f"kernel {name}: {len(args)} arguments, expected {len(spec)}")
    for i, (arg, (kind, dtype, ndim)) in enumerate(zip(args, spec)):
        if kind == "array":
            if not isinstance(arg, np.ndarray) or arg.dtype != dtype or arg.ndim != ndim \
                    or not arg.flags.c_contiguous:
                got = f"{arg.dtype}{list(arg.shape)}{'' if arg.flags.c_contiguous else ' strided'}" \
                    if isinstance(arg, np.ndarray) else type(arg).__name__
                raise KernelInputError(f"kernel {name}: argument {i + 1} must be a C-contiguous {ndim}-d "
                                       f"{dtype} array, not {got}")
        elif isinstance(arg, np.ndarray) or not isinstance(arg, (int, float, bool, np.number, np.bool_)):
            raise KernelInputError(f"kernel {name}: argument {i + 1} must be a number, not {type(arg).__name__}")
        elif np.issubdtype(dtype, np.integer) and not float(arg).is_integer():
            raise KernelInputError(f"kernel {name}: argument {i + 1} must be an integer, not {arg!r}")


def guard(name: str, signature: str, kernel: Callable[..., Any]) -> Callable[..., Any]:
    """``kernel`` behind its signature and its contract (`CONTRACTS`; a kernel with none has only its
    signature checked)."""
    spec = parse_signature(signature)
    contract = CONTRACTS.get(name)

    def guarded(*args: Any, **known: Any) -> Any:
        # ``known``: what the caller already computed of the arguments and the contract would
        # otherwise recompute (the newlines of a scanned piece: ``newlines=``); the kernel never sees it
        check_signature(name, spec, args)
        if contract is not None:
            contract(*args, **known)
        return kernel(*args)

    guarded.__name__ = name
    guarded.__doc__ = kernel.__doc__
    guarded.kernel = kernel  # type: ignore[attr-defined]
    return guarded


# ---------------------------------------------------------------------------------------- contracts
def _need(ok: bool, name: str, what: str) -> None:
    if not ok:
        raise KernelInputError(f"kernel {name}: {what}")


def _ids_within(name: str, what: str, ids: np.ndarray, low: int, size: int) -> None:
    if ids.size:
        lo, hi = int(ids.min()), int(ids.max())
        _need(lo >= low and hi < size, name, f"{what} ids {lo}..{hi} outside {low}..{size - 1}")


#: The frozen tables a contract found sound, by ``id``: a weak reference to the table (the entry goes with it) and
#: what it was checked against.
_SOUND: dict[int, tuple[weakref.ref, tuple]] = {}


def frozen(a: np.ndarray) -> bool:
    """Whether nothing can change ``a``'s data: it is read-only and so is every array it views, down to memory
    of its own or an immutable ``bytes``."""
    base: Any = a
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return False
        base = base.base
    return base is None or isinstance(base, bytes)


def freeze(*tables: np.ndarray) -> None:
    """Make ``tables`` read-only where they hold their own memory, so that their contracts are checked once
    (`frozen`); the caller promises nothing writes them again."""
    for a in tables:
        if a.base is None:
            a.flags.writeable = False


def _once(table: np.ndarray, against: tuple, check: Callable[[], None]) -> None:
    """``check()`` of a model's ``table`` against ``against`` (the sizes it was checked with), once while the
    table is `frozen`; at every call otherwise."""
    if not frozen(table):
        check()
        return
    key = id(table)
    seen = _SOUND.get(key)
    if seen is not None and seen[0]() is table and seen[1] == against:
        return
    check()

    def forget(_ref: weakref.ref) -> None:
        _SOUND.pop(key, None)

    _SOUND[key] = (weakref.ref(table, forget), against)


def rising(a: np.ndarray, strict: bool = False) -> bool:
    """Whether no value of the one-dimensional ``a`` is below the one before it (with ``strict``, none equals it
    either): one comparison of neighbours, where ``np.diff`` would first make a difference array, twice the work
    on a model's million row offsets or its key tables."""
    return bool((a[1:] > a[:-1]).all() if strict else (a[1:] >= a[:-1]).all())


def _offsets(name: str, what: str, ptr: np.ndarray, total: int, exact: bool = True) -> None:
    """``ptr`` rises from 0 to ``total`` (to at most ``total`` where not ``exact``)."""
    _need(ptr.shape[0] >= 1 and int(ptr[0]) == 0 and rising(ptr)
          and (int(ptr[-1]) == total if exact else int(ptr[-1]) <= total),
          name, f"{what} must rise from 0 to {'' if exact else 'at most '}{total}")


def _spans(name: str, beg: np.ndarray, end: np.ndarray, low: int, high: int) -> None:
    _need(beg.shape == end.shape, name, "span starts and ends differ in number")
    if beg.size:
        _need(int(beg.min()) >= low and int(end.max()) <= high and bool(np.all(end >= beg)), name,
              f"spans outside {low}..{high}")


def lattice(name: str, X: np.ndarray, XT: np.ndarray, sent_ptr: np.ndarray, ptr: np.ndarray, lab: np.ndarray,
            W: np.ndarray, base: np.ndarray, Wc: np.ndarray, end: np.ndarray) -> tuple[int, int]:
    """The tagging lattice every decoder reads (`structperc.decode.tag_kernels.decode_corpus`): token
    attribute ids within the state weights' rows (-1 unknown), transition attribute ids within the
    conditioned tables, sentence offsets over the tokens, label ids below L, tables of L labels plus
    ``<bos>``. Returns (tokens, L)."""
    n = X.shape[0]
    L = base.shape[1]
    _need(XT.shape[0] == n, name, f"{XT.shape[0]} rows of transition ids for {n} tokens")
    _offsets(name, "sentence offsets", sent_ptr, n)
    _once(ptr, ("rows", lab.shape[0]), lambda: _offsets(name, "state weight rows", ptr, lab.shape[0]))
    _need(W.shape[0] == lab.shape[0], name, "state weights and their labels differ in length")
    _need(L >= 1 and base.shape[0] == L + 1 and Wc.shape[1:] == (L + 1, L) and end.shape == (L,), name,
          f"transition tables must be ({L + 1}, {L}) for {L} labels")
    _ids_within(name, "state attribute", X, -1, ptr.shape[0] - 1)
    _ids_within(name, "transition attribute", XT, -1, Wc.shape[0])
    _once(lab, ("labels", L), lambda: _ids_within(name, "label", lab, 0, L))
    return n, L


def _decode_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, out) -> None:
    n, _ = lattice("decode_corpus", X, XT, sent_ptr, ptr, lab, W, base, Wc, end)
    _need(out.shape[0] == n, "decode_corpus", f"output of {out.shape[0]} for {n} tokens")


def _decode_corpus_allowed(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, allowed, out) -> None:
    n, L = lattice("decode_corpus_allowed", X, XT, sent_ptr, ptr, lab, W, base, Wc, end)
    _need(allowed.shape == (n, L) and out.shape[0] == n, "decode_corpus_allowed",
          f"allowed must be ({n}, {L}) and the output {n} long")


def _fb_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, inv_tau, allowed, ids, out, log_z, path_lp) -> None:
    name = "fb_corpus"
    n, L = lattice(name, X, XT, sent_ptr, ptr, lab, W, base, Wc, end)
    S = sent_ptr.shape[0] - 1
    _need(np.isfinite(inv_tau) and inv_tau > 0, name, "1/temperature must be finite and > 0")
    _need(allowed.shape in ((n, L), (0, L)), name, f"allowed must be ({n}, {L}) or (0, {L})")
    _need(ids.shape[0] in (0, n) and out.shape in ((n, L), (0, L)), name, "path ids or marginals of the wrong size")
    _need(log_z.shape[0] == S and path_lp.shape[0] in (0, S), name, f"per-sentence outputs must be {S} long")
    _need(path_lp.shape[0] == S or ids.shape[0] == 0, name, "path ids without their outputs")
    _ids_within(name, "path label", ids, 0, L)


def _nbest_corpus(X, XT, sent_ptr, ptr, lab, W, base, Wc, end, allowed, k, ids, scores) -> None:
    name = "nbest_corpus"
    n, L = lattice(name, X, XT, sent_ptr, ptr, lab, W, base, Wc, end)
    _need(k >= 1, name, "k must be at least 1")
    _need(k + L < 2 ** 31, name, f"k must be below 2^31 - {L} (the kernel's int32 entry ids)")
    _need(allowed.shape in ((n, L), (0, L)), name, f"allowed must be ({n}, {L}) or (0, {L})")
    _need(ids.shape == (k, n) and scores.shape == (sent_ptr.shape[0] - 1, k), name,
          f"outputs must be ({k}, {n}) and ({sent_ptr.shape[0] - 1}, {k})")


def _viterbi2_corpus(state, trans, T2, end, sent_ptr, allowed, out) -> None:
    name = "viterbi2_corpus"
    n, L = state.shape
    _offsets(name, "sentence offsets", sent_ptr, n)
    _need(L >= 1 and trans.shape[1:] == (L + 1, L) and trans.shape[0] in (1, n), name,
          f"transitions must be (1 or {n}, {L + 1}, {L})")
    _need(T2.shape == (L + 1, L + 1, L) and end.shape == (L,) and allowed.shape == (L + 1, L)
          and out.shape == (n,), name, "second-order tables or output of the wrong size")


def _scan_common(name: str, data, want, codes, line_beg, line_end, sent_len, sent_line, scan, table, ent, arena,
                 state, newlines: int | None = None) -> None:
    """``newlines``: the newlines of ``data``, as the caller counted them to size its outputs
    (`structperc.io.scan.scan_piece`, by the ``count_byte`` kernel); None: counted here. Counting
    again on every call (a scan resumes after each GROW) read every byte once more and allocated a
    mask of the piece's size."""
    if newlines is None:
        newlines = int(np.count_nonzero(data == 10))
    cap = int(newlines) + 1  # at most one token and one sentence per line
    nw = want.shape[0]
    _need(scan.shape[0] >= 9 and 0 <= int(scan[0]) <= data.shape[0], name, "scan state out of range")
    _need(codes.shape[0] == nw and codes.shape[1] >= cap and sent_len.shape[0] >= cap
          and sent_line.shape[0] >= cap, name, f"outputs need room for {cap} lines")
    _need(line_beg.shape[0] in (0, codes.shape[1]) and line_end.shape == line_beg.shape
          and (line_beg.shape[0] > 0) == (int(scan[6]) != 0), name, "line span outputs of the wrong size")
    _need(nw == 0 or (int(want.min()) >= 0 and rising(want, strict=True)), name,
          "wanted fields must be distinct, ascending and >= 0")
    # the values still to scan come from data[scan[0]:] (a call after GROW resumes there)
    _interner(name, table, ent, arena, state, nw, data.shape[0] - int(scan[0]))


def _interner(name: str, table, ent, arena, state, columns: int, incoming: int) -> None:
    """The compiled value table of `structperc.io.scan.Interner`: a power-of-two table at most half
    full, entries within ``ent``, room in the arena for ``incoming`` more bytes."""
    size = table.shape[0]
    _need(size >= 2 and size & (size - 1) == 0 and ent.shape[1] == 6, name, "the value table must be a power of two")
    _need(state.shape[0] >= 2 + columns and 0 <= int(state[0]) <= ent.shape[0] and 2 * int(state[0]) <= size,
          name, "value table counters out of range")
    _need(0 <= int(state[1]) and int(state[1]) + incoming + 1 <= arena.shape[0], name,
          f"the arena needs room for {incoming} more bytes")


def _scan_columns(data, want, codes, line_beg, line_end, sent_len, sent_line, sent_tab, scan, table, ent, arena,
                  state, newlines: int | None = None) -> None:
    _scan_common("scan_columns", data, want, codes, line_beg, line_end, sent_len, sent_line, scan, table, ent,
                 arena, state, newlines)
    _need(sent_tab.shape[0] >= sent_len.shape[0], "scan_columns", "separator output too short")


def _scan_conllu(data, words, lead, want, codes, line_beg, line_end, sent_len, sent_line, scan, table, ent, arena,
                 state, newlines: int | None = None) -> None:
    _scan_common("scan_conllu", data, want, codes, line_beg, line_end, sent_len, sent_line, scan, table, ent,
                 arena, state, newlines)
    _need(0 <= lead < 8 and (words.shape[0] == 0 or lead + 8 * words.shape[0] <= data.shape[0]), "scan_conllu",
          "aligned words outside the data")
    _need(want.shape[0] == 0 or int(want.max()) < 10, "scan_conllu", "CoNLL-U has 10 fields")


def _insert_spans(data, beg, end, col, codes, table, ent, arena, state) -> None:
    name = "insert_spans"
    _spans(name, beg, end, 0, data.shape[0])
    _need(codes.shape[0] >= beg.shape[0], name, f"{codes.shape[0]} codes for {beg.shape[0]} values")
    _need(0 <= col and 2 + col < state.shape[0], name, f"column {col} outside the table's columns")
    _interner(name, table, ent, arena, state, 0, int((end - beg).sum()) + beg.shape[0] if beg.size else 0)


def _rehash(table, ent, arena, n) -> None:
    size = table.shape[0]
    _need(size >= 2 and size & (size - 1) == 0 and 0 <= n <= ent.shape[0] and 2 * n <= size
          and ent.shape[1] == 6, "rehash", "table or entry count out of range")
    if n:
        off, length = ent[:n, 0], ent[:n, 1]
        _need(int(off.min()) >= 0 and int(length.min()) >= 0 and int((off + length).max()) <= arena.shape[0],
              "rehash", "entries outside the arena")


def _write_tagged(data, start, stop, line_beg, line_end, sent_len, sent_sep, field, tags, labels, label_off,
                  out) -> None:
    name = "write_tagged"
    _need(0 <= start <= stop <= data.shape[0], name, "the piece lies outside the data")
    _spans(name, line_beg, line_end, start, stop)
    n = line_beg.shape[0]
    _need(bool(np.all(line_beg[1:] >= line_end[:-1])) if n > 1 else True, name, "token lines out of order")
    _need(sent_len.shape[0] == sent_sep.shape[0] and int(sent_len.sum()) == n and tags.shape[0] >= n
          and (sent_len.size == 0 or int(sent_len.min()) >= 0), name, "sentences and token lines disagree")
    _offsets(name, "label offsets", label_off, labels.shape[0], exact=False)
    _ids_within(name, "tag", tags[:n], 0, label_off.shape[0] - 1)
    widths = np.diff(label_off)[tags[:n]] if n else np.zeros(0, dtype=np.int64)
    _need((stop - start) + int(widths.sum()) + n <= out.shape[0], name, "the output buffer is too small")


def _code_points(name: str, what: str, points: np.ndarray) -> None:
    if points.size:
        _need(int(points.min()) >= 0 and int(points.max()) < 0x110000, name, f"{what} outside Unicode's code points")


def _longest_matches(text, sent_ptr, fold, table, max_len, out) -> None:
    name = "longest_matches"
    _offsets(name, "sentence offsets", sent_ptr, text.shape[0])
    _need(fold.shape[0] == sent_ptr.shape[0] - 1 and (fold.size == 0 or int(fold.max()) < 63), name,
          "one fold per sentence, below 63")
    rows = out.shape[0]
    _need(rows in range(3, 3 * 62 + 1, 3) and out.shape[1] == text.shape[0], name,
          f"output must be (3·S, {text.shape[0]}) for 1 to 62 word lists S")
    _need(rows == 3 or fold.size == 0 or int(fold.max()) < 0, name, "several word lists take no folds")
    size = table.shape[0]
    _need(size >= 1 and size & (size - 1) == 0 and table.shape[1] == 2, name,
          "the table must be a power of two of (key, mask) slots")
    # a key never indexes memory, but a table without an empty slot would make a probe that finds nothing
    # go round for ever
    _once(table, ("room",), lambda: _need(bool((table[:, 0] < 0).any()), name, "the table has no empty slot"))
    _code_points(name, "text", text)


def _build_table(codes, ptr, masks, table) -> None:
    name = "build_table"
    _offsets(name, "word offsets", ptr, codes.shape[0])
    _need(masks.shape[0] == ptr.shape[0] - 1, name, "one mask per word")
    room = int(np.maximum(np.diff(ptr) - 1, 0).sum())  # a word of length m enters at most m - 1 keys
    # an empty slot must remain, or a probe that finds nothing goes round for ever (how full a table may get
    # for speed is the caller's choice: `structperc.features.lexicon_match`)
    _need(table.shape[0] > room and table.shape[1] == 2
          and table.shape[0] & (table.shape[0] - 1) == 0 and bool(np.all(table[:, 0] == -1)), name,
          f"the table needs room for {room} entries")
    _code_points(name, "word", codes)


def _build_key_slots(keys, slots, shift) -> None:
    size = slots.shape[0]
    _need(0 < shift < 64 and size == 1 << (64 - shift) and size > keys.shape[0] and bool(np.all(slots == -1)),
          "build_key_slots", "the slots must be an empty power of two larger than the keys")


def _lookup_keys(keys, slots, shift, query, offset, out) -> None:
    size = slots.shape[0]
    _need(0 < shift < 64 and size == 1 << (64 - shift) and size > keys.shape[0] and out.shape == query.shape,
          "lookup_keys", "slots, queries and output of the wrong size")
    _once(slots, ("keys", keys.shape[0]), lambda: _ids_within("lookup_keys", "slot", slots, -1, keys.shape[0]))


def _index_words(text, starts, slots) -> None:
    name = "index_words"
    _need(text.shape[0] == 0 or int(text[-1]) == 10, name, "the stored words must end with a newline")
    words = int(np.count_nonzero(text == 10))
    _need(starts.shape[0] == words + 1, name, f"room for the starts of {words} words and their end")
    size = slots.shape[0]
    _need(size > words and size & (size - 1) == 0 and bool(np.all(slots == -1)), name,
          "the slots must be an empty power of two larger than the words")


def _probe_words(text, starts, slots, query, qptr, out) -> None:
    name = "probe_words"
    _offsets(name, "wanted word offsets", qptr, query.shape[0])
    _need(out.shape[0] == qptr.shape[0] - 1, name, "one answer per wanted word")
    words = starts.shape[0] - 1
    size = slots.shape[0]
    _need(words >= 0 and size > words and size & (size - 1) == 0, name,
          "the slots must be a power of two larger than the words")
    # every word ends with its newline: the starts rise strictly, from 0 to the text's end
    _once(starts, ("text", text.shape[0]), lambda: _need(
        int(starts[0]) == 0 and int(starts[-1]) == text.shape[0] and rising(starts, strict=True), name,
        "word starts must rise strictly from 0 to the text's length"))

    def sound_slots() -> None:
        _ids_within(name, "slot", slots, -1, words)
        _need(bool((slots < 0).any()), name, "no empty slot")

    _once(slots, ("words", words), sound_slots)


def _gazetteer_matches(words, starts, ends, keys, children, kinds, n_words, length, kind) -> None:
    name = "gazetteer_matches"
    _need(length.shape == starts.shape and kind.shape == starts.shape, name, "one length and one kind per start")
    _spans(name, starts, ends, 0, words.shape[0])
    _need(keys.shape == children.shape and kinds.shape[0] >= 1 and n_words >= 0, name,
          "one child per edge key, and a root node")
    _ids_within(name, "word", words, -1, max(int(n_words), 0))
    _ids_within(name, "child node", children, 0, kinds.shape[0])


def _rows_ascending(ptr, lab) -> None:
    _offsets("rows_ascending", "row offsets", ptr, lab.shape[0])


def _pad_rows(ptr, lab, W, pad, L, new_ptr, new_lab, new_W) -> None:
    name = "pad_rows"
    A = ptr.shape[0] - 1
    _offsets(name, "row offsets", ptr, lab.shape[0])
    _offsets(name, "padded row offsets", new_ptr, new_lab.shape[0])
    _need(W.shape == lab.shape and pad.shape[0] == A and new_ptr.shape[0] == A + 1 and new_W.shape == new_lab.shape,
          name, "rows disagree in number")
    _ids_within(name, "label", lab, 0, L)
    counts = np.diff(ptr)
    _need(bool(np.all(np.diff(new_ptr) >= np.where(pad, L, counts))), name, "a padded row is too short")


#: Each kernel's contract, by exported name (the training epochs are checked by their driver,
#: `structperc.train.perceptron.epoch_inputs`, before every epoch).
CONTRACTS: dict[str, Callable[..., None]] = {
    "decode_corpus": _decode_corpus,
    "decode_corpus_allowed": _decode_corpus_allowed,
    "fb_corpus": _fb_corpus,
    "nbest_corpus": _nbest_corpus,
    "viterbi2_corpus": _viterbi2_corpus,
    "scan_columns": _scan_columns,
    "scan_conllu": _scan_conllu,
    "insert_spans": _insert_spans,
    "rehash": _rehash,
    "write_tagged": _write_tagged,
    "longest_matches": _longest_matches,
    "build_table": _build_table,
    "build_key_slots": _build_key_slots,
    "lookup_keys": _lookup_keys,
    "index_words": _index_words,
    "probe_words": _probe_words,
    "gazetteer_matches": _gazetteer_matches,
    "rows_ascending": _rows_ascending,
    "pad_rows": _pad_rows,
}
