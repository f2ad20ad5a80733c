"""Compiled corpus reading over raw bytes (built ahead of time into ``structperc._aot_read``).

Reading a corpus line by line in Python makes one ``str`` per field of every token: most of the time
of `structperc tag` on a large file, and most of the memory of reading a training corpus. These
kernels scan the bytes of a piece instead: they find the lines, classify them (blank, comment,
``-DOCSTART-``, token, CoNLL-U multi-word token or empty node), and look the fields of the wanted
columns up in an open-addressing hash table of byte strings, so each field becomes an integer code
and only *distinct* values ever become Python strings (`structperc.io.scan` decodes them).

They never raise and never guess: on anything the line-by-line reader might read differently or
reject (a wrong number of fields, an odd token id, whitespace that is not plain ASCII, ...) they
return `IRREGULAR` and the caller parses that piece with the line-by-line reader, which names the bad
line. A piece whose values were partly entered is undone by `structperc.io.scan` (entries are
only ever appended, so dropping those past a count restores the table exactly).

The hash table, shared by every piece of a file:

``table`` : int64 (2**k,)
    Entry number per slot, -1 where empty (linear probing, at most half full).
``ent`` : int64 (capacity, 6)
    Per entry: offset of its bytes in ``arena``, their length, its column, its code in that column,
    and (as uint64 bits) its hash and its first 8 bytes (`_key`).
``arena`` : uint8
    The entries' bytes, each followed by a tab (no field holds one), so that all new values can be
    decoded with one ``bytes.decode`` and one ``str.split``.
``state`` : int64 (2 + n_columns,)
    Number of entries, bytes used in ``arena``, then the number of distinct values of each column.

Scanning can stop before the end of a piece (`GROW`: the table or entry arrays must grow first) and
resume where it stopped: everything the scan needs between lines lives in ``scan`` (int64 (16,)):

==  ======================================================================================
0   byte offset of the next line
1   line index (from the start of the piece) of the next line
2   tokens so far (codes written)
3   sentences so far
4   line index of the first line of the open block, -1 if none
5   words in the open block
6   keep the raw line spans (1) or not (0)
7   column files: number of fields of every token line, -1 until the first one is seen
8   column files: whether the first line of the open block holds a tab
==  ======================================================================================
"""
from __future__ import annotations

import numpy as np
from numba import njit

#: Return values of the scanners.
DONE, GROW, IRREGULAR = 0, 1, 2

#: Seed and multipliers of the value hash (`_key`: FNV's offset basis, splitmix64's multipliers).
_BASIS = np.uint64(14695981039346656037)
_PRIME = np.uint64(0x94D049BB133111EB)
_MIX = np.uint64(0xBF58476D1CE4E5B9)
_S29 = np.uint64(29)
_S32 = np.uint64(32)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)
_TABS = np.uint64(0x0909090909090909)
_NEWLINES = np.uint64(0x0A0A0A0A0A0A0A0A)
#: Multiplied by 256**j (j < 8), the top byte is 7 - j: the index of the lowest flagged byte.
_BYTE_INDEX = np.uint64(0x0706050403020100)

#: Exported signatures of the ahead-of-time build (see `structperc.compiled.build`).
AOT_EXPORTS: dict[str, str] = {
    "scan_conllu": "i8(u1[::1], u8[::1], i8, i8[::1], i8[:, ::1], i8[::1], i8[::1], i8[::1], i8[::1], "
                   "i8[::1], i8[::1], i8[:, ::1], u1[::1], i8[::1])",
    "scan_columns": "i8(u1[::1], i8[::1], i8[:, ::1], i8[::1], i8[::1], i8[::1], i8[::1], u1[::1], "
                    "i8[::1], i8[::1], i8[:, ::1], u1[::1], i8[::1])",
    "insert_spans": "i8(u1[::1], i8[::1], i8[::1], i8, i8[::1], i8[::1], i8[:, ::1], u1[::1], i8[::1])",
    "rehash": "void(i8[::1], i8[:, ::1], u1[::1], i8)",
    "count_byte": "i8(u1[::1], i8)",
    "write_tagged": "i8(u1[::1], i8, i8, i8[::1], i8[::1], i8[::1], u1[::1], i8, i8[::1], u1[::1], i8[::1], "
                    "u1[::1])",
}


@njit(cache=True, nogil=True, inline="always")
def _utf8_len(data, i, n):
    """Length of the UTF-8 sequence that starts with the non-ASCII byte ``data[i]``, or 0 if it is
    not strict UTF-8 as Python's decoder reads it (no overlong forms, surrogates or code points past
    U+10FFFF). Non-ASCII spaces (U+00A0, U+3000, ...) are characters like any other: CoNLL columns
    are separated by ASCII whitespace only."""
    b = data[i]
    if 0xC2 <= b <= 0xDF:
        if i + 1 >= n or (data[i + 1] & 0xC0) != 0x80:
            return 0
        return 2
    if 0xE0 <= b <= 0xEF:
        if i + 2 >= n:
            return 0
        c1 = data[i + 1]
        c2 = data[i + 2]
        lo = 0xA0 if b == 0xE0 else 0x80
        hi = 0x9F if b == 0xED else 0xBF
        if c1 < lo or c1 > hi or (c2 & 0xC0) != 0x80:
            return 0
        return 3
    if 0xF0 <= b <= 0xF4:
        if i + 3 >= n:
            return 0
        c1 = data[i + 1]
        lo = 0x90 if b == 0xF0 else 0x80
        hi = 0x8F if b == 0xF4 else 0xBF
        if c1 < lo or c1 > hi or (data[i + 2] & 0xC0) != 0x80 or (data[i + 3] & 0xC0) != 0x80:
            return 0
        return 4
    return 0


@njit(cache=True, nogil=True)
def count_byte(data, byte):
    """How many bytes of ``data`` equal ``byte`` (branch-free, so the compiler vectorizes it)."""
    n = 0
    for i in range(data.shape[0]):
        n += data[i] == byte
    return n


@njit(cache=True, nogil=True, inline="always")
def _chunk(data, i, e):
    """Up to 8 bytes ``data[i:e]`` as a little-endian word, zero-padded."""
    x = np.uint64(0)
    m = min(e - i, 8)
    for j in range(m):
        x |= np.uint64(data[i + j]) << np.uint64(8 * j)
    return x


@njit(cache=True, nogil=True, inline="always")
def _chunk_w(data, words, lead, i, e):
    """`_chunk` from the aligned words (two loads and shifts) where they cover it."""
    q = i - lead
    if q >= 0:
        wi = q >> 3
        sh = q & 7
        if wi + 1 < words.shape[0] or (sh == 0 and wi < words.shape[0]):
            x = words[wi]
            if sh:
                x = (x >> np.uint64(8 * sh)) | (words[wi + 1] << np.uint64(64 - 8 * sh))
            m = e - i
            if m < 8:
                x &= (np.uint64(1) << np.uint64(8 * m)) - np.uint64(1)
            return x
    return _chunk(data, i, e)


@njit(cache=True, nogil=True, inline="always")
def _mix(h, x):
    h = (h ^ x) * _MIX
    return h ^ (h >> _S29)


@njit(cache=True, nogil=True, inline="always")
def _finish(h):
    h ^= h >> _S32
    h *= _PRIME
    return h ^ (h >> _S29)


@njit(cache=True, nogil=True, inline="always")
def _key(data, b, e, col):
    """Hash of the bytes ``data[b:e]`` in column ``col``, and their first 8 bytes (see `_chunk`)."""
    length = e - b
    x0 = _chunk(data, b, e)
    h = _mix(_BASIS ^ (np.uint64(col) * _PRIME) ^ (np.uint64(length) * _MIX), x0)
    for i in range(b + 8, e, 8):
        h = _mix(h, _chunk(data, i, e))
    return _finish(h), x0


@njit(cache=True, nogil=True, inline="always")
def _key_w(data, words, lead, b, e, col):
    """`_key` (the same values) with the bytes read a word at a time."""
    length = e - b
    x0 = _chunk_w(data, words, lead, b, e)
    h = _mix(_BASIS ^ (np.uint64(col) * _PRIME) ^ (np.uint64(length) * _MIX), x0)
    for i in range(b + 8, e, 8):
        h = _mix(h, _chunk_w(data, words, lead, i, e))
    return _finish(h), x0


@njit(cache=True, nogil=True, inline="always")
def _intern(data, b, e, col, h, x0, table, ent, entu, arena, state):
    """Code (within column ``col``) of the bytes ``data[b:e]`` whose `_key` is ``(h, x0)``, entering
    them if new; ``entu`` is ``ent`` viewed as uint64. The caller guarantees room: a free entry, the
    table at most half full after it, arena space. A value of at most 8 bytes is compared by its
    hash, length and first word alone, without reading the arena."""
    mask = np.uint64(table.shape[0] - 1)
    slot = np.int64(h & mask)
    length = e - b
    while True:
        k = table[slot]
        if k < 0:
            break
        if entu[k, 4] == h and entu[k, 5] == x0 and ent[k, 1] == length and ent[k, 2] == col:
            if length <= 8:
                return ent[k, 3]
            off = ent[k, 0]
            same = True
            for j in range(8, length):
                if arena[off + j] != data[b + j]:
                    same = False
                    break
            if same:
                return ent[k, 3]
        slot = (slot + 1) & (table.shape[0] - 1)
    k = state[0]
    off = state[1]
    for j in range(length):
        arena[off + j] = data[b + j]
    arena[off + length] = 9
    code = state[2 + col]
    ent[k, 0] = off
    ent[k, 1] = length
    ent[k, 2] = col
    ent[k, 3] = code
    entu[k, 4] = h
    entu[k, 5] = x0
    table[slot] = k
    state[0] = k + 1
    state[1] = off + length + 1
    state[2 + col] = code + 1
    return code


@njit(cache=True, nogil=True)
def rehash(table, ent, arena, n):
    """Enter entries ``0..n-1`` into an empty (all -1) ``table``, e.g. a larger one."""
    entu = ent.view(np.uint64)
    mask = np.uint64(table.shape[0] - 1)
    for k in range(n):
        slot = np.int64(entu[k, 4] & mask)
        while table[slot] >= 0:
            slot = (slot + 1) & (table.shape[0] - 1)
        table[slot] = k


@njit(cache=True, nogil=True)
def insert_spans(data, beg, end, col, codes, table, ent, arena, state):
    """Codes of the byte spans ``data[beg[i]:end[i]]`` in column ``col`` (values parsed by the
    line-by-line reader, entered into the same table); returns how many were done before the table
    needed to grow (the caller grows it and calls again with the rest)."""
    entu = ent.view(np.uint64)
    for i in range(beg.shape[0]):
        if (state[0] + 1) * 2 > table.shape[0] or state[0] + 1 > ent.shape[0]:
            return i
        h, x0 = _key(data, beg[i], end[i], col)
        codes[i] = _intern(data, beg[i], end[i], col, h, x0, table, ent, entu, arena, state)
    return beg.shape[0]


@njit(cache=True, nogil=True, inline="always")
def _is_docstart(data, b, e):
    if e - b < 10:
        return False
    # "-DOCSTART-"
    return (data[b] == 45 and data[b + 1] == 68 and data[b + 2] == 79 and data[b + 3] == 67
            and data[b + 4] == 83 and data[b + 5] == 84 and data[b + 6] == 65 and data[b + 7] == 82
            and data[b + 8] == 84 and data[b + 9] == 45)


@njit(cache=True, nogil=True, inline="always")
def _all_space(data, b, e):
    """Whether ``data[b:e]`` is ASCII whitespace as ``str.isspace`` sees it (\\x1c-\\x1f included)."""
    for i in range(b, e):
        c = data[i]
        if not (c == 32 or 9 <= c <= 13 or 28 <= c <= 31):
            return False
    return True


@njit(cache=True, nogil=True)
def _word(data, words, lead, wi):
    """Bytes ``lead + 8 * wi`` to ``lead + 8 * wi + 7`` of ``data`` as one little-endian word, zeros
    past either end; ``words`` holds the whole words (``data[lead:]`` viewed as uint64). Not inlined:
    only the first and the last word of a piece need it, and the scanning loop stays small."""
    if 0 <= wi < words.shape[0]:
        return words[wi]
    x = np.uint64(0)
    base = lead + 8 * wi
    for j in range(8):
        k = base + j
        if 0 <= k < data.shape[0]:
            x |= np.uint64(data[k]) << np.uint64(8 * j)
    return x


@njit(cache=True, nogil=True, inline="always")
def _events(x):
    """The high bit of every byte of ``x`` that is a tab, a newline or not ASCII (exact, no carries
    between bytes: https://graphics.stanford.edu/~seander/bithacks.html#ZeroInWord)."""
    t = x ^ _TABS
    t = ~(((t & _LOW7) + _LOW7) | t | _LOW7)
    m = x ^ _NEWLINES
    m = ~(((m & _LOW7) + _LOW7) | m | _LOW7)
    return t | m | (x & _HIGH)


@njit(cache=True, nogil=True, inline="always")
def _save_scan(scan, pos, li, ntok, nsent, bfirst, bwords):
    """Where a scanner stopped (byte, line, tokens, sentences, the open sentence's first line and
    words so far), so that its next call, on the next piece, resumes there."""
    scan[0] = pos
    scan[1] = li
    scan[2] = ntok
    scan[3] = nsent
    scan[4] = bfirst
    scan[5] = bwords


@njit(cache=True, nogil=True)
def scan_conllu(data, words, lead, want, codes, line_beg, line_end, sent_len, sent_line, scan, table,
                ent, arena, state):
    """Scan CoNLL-U lines from ``scan[0]``: codes of the fields ``want`` (sorted field indices) of
    every word line into ``codes[:, token]``, the span of each word line without its line end into
    ``line_beg``/``line_end`` (if ``scan[6]``), and per sentence (the words of a blank-line separated
    block) its length and the index of the block's first line that is not a comment.

    Comments and ``-DOCSTART-`` lines are skipped, multi-word tokens (``3-4``) and empty nodes
    (``5.1``) belong to their block but are not words. Returns `DONE`, `GROW` or `IRREGULAR` (bytes
    that are not UTF-8, a line with other than 10 tab-separated fields, a token id that is neither
    ASCII digits nor holds ``-`` or ``.``, a line that starts with anything else and is not ASCII
    whitespace).

    The bytes are read eight at a time (``words``, ``data[lead:]`` as uint64, ``lead`` < 8 so that
    the words are aligned; may be empty), and only the tabs, newlines and non-ASCII bytes in them are
    visited: most bytes of a line belong to fields no one asked for."""
    n = data.shape[0]
    nw = want.shape[0]
    pos = scan[0]
    li = scan[1]
    ntok = scan[2]
    nsent = scan[3]
    bfirst = scan[4]
    bwords = scan[5]
    keep = scan[6] != 0
    tabs = np.empty(10, dtype=np.int64)
    entu = ent.view(np.uint64)
    status = np.int64(DONE)
    nt = 0
    skip_to = pos
    wi = (pos - lead) // 8
    m = _events(_word(data, words, lead, wi))
    first_j = pos - lead - 8 * wi  # bytes of the first word before pos are not this scan's
    if first_j > 0:
        m &= ~((np.uint64(1) << np.uint64(8 * first_j)) - np.uint64(1))
    last_wi = (n - lead + 7) // 8
    while True:
        while m == 0 and wi < last_wi:
            wi += 1
            m = _events(words[wi] if wi < words.shape[0] else _word(data, words, lead, wi))
        if m != 0:
            low = m & (~m + np.uint64(1))
            m ^= low
            k = lead + 8 * wi + 7 - np.int64(((low >> np.uint64(7)) * _BYTE_INDEX) >> np.uint64(56))
            if k < skip_to:
                continue  # a continuation byte of a sequence already checked
            b = data[k]
            if b == 9:
                if nt < 10:
                    tabs[nt] = k
                nt += 1
                continue
            if b != 10:
                length = _utf8_len(data, k, n)
                if length == 0:
                    status = np.int64(IRREGULAR)
                    break
                skip_to = k + length
                continue
        elif pos < n:
            k = n  # the last line has no newline
        else:
            break
        # a line ends at k
        if (state[0] + nw) * 2 > table.shape[0] or state[0] + nw > ent.shape[0]:
            status = np.int64(GROW)
            break
        e = k
        if e > pos and data[e - 1] == 13:
            e -= 1
        blank = False
        if e == pos:
            blank = True
        else:
            c = data[pos]
            if c == 35:  # '#': a comment
                pass
            elif 48 <= c <= 57:
                if nt != 9:
                    status = np.int64(IRREGULAR)
                    break
                id_end = tabs[0]
                i = pos
                while i < id_end and 48 <= data[i] <= 57:
                    i += 1
                word = i == id_end
                if not word:
                    dashdot = False
                    for j in range(i, id_end):
                        b = data[j]
                        if b >= 128:
                            status = np.int64(IRREGULAR)
                        elif b == 45 or b == 46:
                            dashdot = True
                    if not dashdot:
                        status = np.int64(IRREGULAR)
                    if status != DONE:
                        break
                if bfirst < 0:
                    bfirst = li
                if word:
                    for wj in range(nw):
                        f = want[wj]
                        fb = pos if f == 0 else tabs[f - 1] + 1
                        fe = e if f == 9 else tabs[f]
                        h, x0 = _key_w(data, words, lead, fb, fe, wj)
                        codes[wj, ntok] = _intern(data, fb, fe, wj, h, x0, table, ent, entu, arena,
                                                  state)
                    if keep:
                        line_beg[ntok] = pos
                        line_end[ntok] = e
                    ntok += 1
                    bwords += 1
            elif c == 45 and _is_docstart(data, pos, e):
                pass
            elif _all_space(data, pos, e):
                blank = True
            else:
                status = np.int64(IRREGULAR)
                break
        if blank and bfirst >= 0:
            if bwords > 0:
                sent_len[nsent] = bwords
                sent_line[nsent] = bfirst
                nsent += 1
            bfirst = -1
            bwords = 0
        pos = k + 1
        li += 1
        nt = 0
        if pos > n:
            pos = n
    if status == DONE and bfirst >= 0:
        if bwords > 0:
            sent_len[nsent] = bwords
            sent_line[nsent] = bfirst
            nsent += 1
        bfirst = -1
        bwords = 0
    _save_scan(scan, pos, li, ntok, nsent, bfirst, bwords)
    return status


@njit(cache=True, nogil=True)
def scan_columns(data, want, codes, line_beg, line_end, sent_len, sent_line, sent_tab, scan, table,
                 ent, arena, state):
    """Scan whitespace-separated CoNLL column lines from ``scan[0]``: codes of the fields ``want``
    (sorted field indices; those past the width of the file stay unwritten) of every token line,
    line spans (if ``scan[6]``), and per sentence its length, first line and whether that line holds
    a tab (the writer's separator). ``-DOCSTART-`` lines are skipped.

    Fields are split at ASCII whitespace only (as ``bytes.split``: \x1c-\x1f and non-ASCII spaces
    belong to a field). Returns `DONE`, `GROW` or `IRREGULAR`: bytes that are not UTF-8, or a token
    line whose number of fields differs from the first one's (``scan[7]``, -1 when none was seen
    yet)."""
    n = data.shape[0]
    nw = want.shape[0]
    nb = want[nw - 1] + 1 if nw else 0
    entu = ent.view(np.uint64)
    fs = np.empty(max(nb, 1), dtype=np.int64)
    fe = np.empty(max(nb, 1), dtype=np.int64)
    pos = scan[0]
    li = scan[1]
    ntok = scan[2]
    nsent = scan[3]
    bfirst = scan[4]
    bwords = scan[5]
    keep = scan[6] != 0
    width = scan[7]
    btab = scan[8]
    status = np.int64(DONE)
    while pos < n:
        if (state[0] + nw) * 2 > table.shape[0] or state[0] + nw > ent.shape[0]:
            status = np.int64(GROW)
            break
        # one pass to the line end: field boundaries, UTF-8 validity, odd whitespace
        f = 0
        infield = False
        tab = False
        k = pos
        while k < n:
            b = data[k]
            if b == 10:
                break
            if b == 32 or 9 <= b <= 13:
                if b == 9:
                    tab = True
                if infield:
                    if f < nb:
                        fe[f] = k
                    f += 1
                    infield = False
                k += 1
                continue
            step = 1
            if b >= 128:
                step = _utf8_len(data, k, n)
                if step == 0:
                    status = np.int64(IRREGULAR)
                    break
            if not infield:
                infield = True
                if f < nb:
                    fs[f] = k
            k += step
        if status != DONE:
            break
        if infield:
            if f < nb:
                fe[f] = k
            f += 1
        e = k
        nxt = k + 1
        if e > pos and data[e - 1] == 13:
            e -= 1
        blank = False
        if f == 0:
            blank = True
        elif data[pos] == 45 and _is_docstart(data, pos, e):
            pass
        else:
            if width < 0:
                width = f
            elif f != width:
                status = np.int64(IRREGULAR)
                break
            if bfirst < 0:
                bfirst = li
                btab = 1 if tab else 0
            for wi in range(nw):
                j = want[wi]
                if j < f:
                    h, x0 = _key(data, fs[j], fe[j], wi)
                    codes[wi, ntok] = _intern(data, fs[j], fe[j], wi, h, x0, table, ent, entu, arena,
                                              state)
            if keep:
                line_beg[ntok] = pos
                line_end[ntok] = e
            ntok += 1
            bwords += 1
        if blank and bfirst >= 0:
            sent_len[nsent] = bwords
            sent_line[nsent] = bfirst
            sent_tab[nsent] = btab
            nsent += 1
            bfirst = -1
            bwords = 0
        pos = nxt
        li += 1
    if status == DONE and bfirst >= 0:
        sent_len[nsent] = bwords
        sent_line[nsent] = bfirst
        sent_tab[nsent] = btab
        nsent += 1
        bfirst = -1
        bwords = 0
    _save_scan(scan, pos, li, ntok, nsent, bfirst, bwords)
    scan[7] = width
    scan[8] = btab
    return status


@njit(cache=True, nogil=True, inline="always")
def _copy_gap(data, a, b, out, o):
    """``data[a:b]`` into ``out`` from ``o`` with the CR of every CRLF dropped (as is a CR that ends
    ``data``: a CRLF whose LF the file lacks); returns the new ``o``."""
    n = data.shape[0]
    for i in range(a, b):
        c = data[i]
        if c == 13 and (i + 1 == n or data[i + 1] == 10):
            continue
        out[o] = c
        o += 1
    return o


@njit(cache=True, nogil=True)
def write_tagged(data, start, stop, line_beg, line_end, sent_len, sent_sep, field, tags, labels, label_off,
                 out):
    """The bytes ``data[start:stop]`` with a tag put into every token line
    ``data[line_beg[i]:line_end[i]]``: appended after its sentence's separator byte (``field`` < 0),
    or in place of its tab-separated field number ``field`` (appended after a tab if the line has
    fewer fields); the tag is label ``tags[i]``, ``labels[label_off[t]:label_off[t + 1]]``.
    Everything between token lines (line ends, blank lines, comments, ...) is copied as it is, CRLF
    as LF. Returns the number of bytes written to ``out``.

    The caller (`structperc.io.scan.RawLines.write`) checks the spans (in order, inside
    ``[start, stop)``), the tag codes and the room in ``out`` before the call."""
    o = 0
    pos = start
    t = 0
    for s in range(sent_len.shape[0]):
        sep = sent_sep[s]
        for _ in range(sent_len[s]):
            b = line_beg[t]
            e = line_end[t]
            o = _copy_gap(data, pos, b, out, o)
            lab = tags[t]
            lb = label_off[lab]
            ll = label_off[lab + 1] - lb
            fb = -1
            fe = -1
            if field >= 0:
                f = 0
                fb = b
                for i in range(b, e):
                    if data[i] == 9:
                        if f == field:
                            fe = i
                            break
                        f += 1
                        fb = i + 1
                if f == field and fe < 0:
                    fe = e
                if fe < 0:
                    fb = -1
            if fb >= 0:
                length = fb - b
                out[o:o + length] = data[b:fb]
                o += length
                out[o:o + ll] = labels[lb:lb + ll]
                o += ll
                length = e - fe
                out[o:o + length] = data[fe:e]
                o += length
            else:
                length = e - b
                out[o:o + length] = data[b:e]
                o += length
                out[o] = sep if field < 0 else 9
                out[o + 1:o + 1 + ll] = labels[lb:lb + ll]
                o += ll + 1
            pos = e
            t += 1
    return _copy_gap(data, pos, stop, out, o)
