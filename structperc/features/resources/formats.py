"""The file formats of the language resources, parsed from a path; no knowledge of packages.

* ``{lang}_lexeme_cluster.json.gz`` (``spacy-lookups-data``): a JSON object word -> integer. The
  integer is a Brown cluster path (Brown et al. 1992) packed into bits read from the LOW bit up, so
  the path is ``bin(c)[2:][::-1]``: "Monday", "Tuesday" and "Friday" are all 874 -> ``0101011011``;
  "January" (209 -> ``10001011``) and "March" (81 -> ``1000101``) share the prefix ``100010``, which
  they would not if read from the high bit. The packed form cannot hold a leading 0 at the end of a
  path, so every path ends in 1. 0 marks a word too rare to cluster: it has no path and is dropped
  (in the English file 190,129 of 1,000,001 words have one).
* ``{lang}_lexeme_prob.json.gz``: a JSON object word -> smoothed natural log probability (English:
  "the" -3.53, "dog" -9.04).
* jieba's ``dict.txt``: UTF-8 lines ``word frequency part-of-speech`` (the tag is optional in jieba's
  format); a word listed twice keeps its last frequency, as jieba does.
"""
from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from pathlib import Path
from typing import Any, Iterator

from structperc.errors import InputError


def decode_cluster(c: int) -> str | None:
    """The Brown path packed into ``c`` (bits from the low bit up), or None for 0 (no path).

    Examples
    --------
    >>> decode_cluster(0b100), decode_cluster(0b1), decode_cluster(874), decode_cluster(0)
    ('001', '1', '0101011011', None)
    """
    if isinstance(c, bool) or not isinstance(c, int) or c < 0:
        raise InputError(f"a cluster must be a non-negative integer, not {c!r}")
    return bin(c)[2:][::-1] if c else None


def _json_object(path: Path) -> dict[str, Any]:
    try:
        with gzip.open(path, "rb") as f:
            data = json.loads(f.read())
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"not a gzipped JSON file ({e})", path=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object of words, found {type(data).__name__}", path=str(path))
    return data


#: One ``"word": value`` member of a flat JSON object, on its UTF-8 bytes (a key's escapes are kept for
#: `json.loads`).
_MEMBER = re.compile(rb'"((?:[^"\\]|\\.)*)"\s*:\s*([^,}\s]+)')


def _flat_members(path: Path) -> Iterator[tuple[bytes, bytes]]:
    """The ``(key bytes, value bytes)`` members of a gzipped flat JSON object, one at a time: a million-word
    table read whole by `json.loads` holds a million keys and values at once (170 MB for Spanish), where
    only the trusted fifth is kept; the text is scanned as bytes, never decoded whole, and a key is decoded
    (`_word`) only when its member is kept (four of five English words are not: a second of reading). The text
    must be one JSON object whose values are numbers."""
    try:
        with gzip.open(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise InputError(f"not a gzipped JSON file ({e})", path=str(path)) from None
    if not data.lstrip().startswith(b"{") or not data.rstrip().endswith(b"}"):
        raise InputError("expected a JSON object of words", path=str(path))
    for m in _MEMBER.finditer(data):
        yield m.group(1), m.group(2)


def _word(key: bytes, path: Path) -> str:
    """A member's key as text (its JSON escapes resolved)."""
    try:
        return json.loads(b'"' + key + b'"') if b"\\" in key else key.decode("utf-8")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InputError(f"not a JSON object of words ({e})", path=str(path)) from None


def read_cluster_paths(path: Path) -> dict[str, str]:
    """Word -> decoded Brown path of a spaCy ``lexeme_cluster`` file, trusted words (non-zero) only; the
    words of one path share one string."""
    out: dict[str, str] = {}
    decoded: dict[bytes, str] = {}
    for key, value in _flat_members(path):
        if value == b"0":
            continue
        bits = decoded.get(value)
        if bits is None:
            if not value.isdigit():
                raise InputError(f"word {_word(key, path)!r}: a cluster must be a non-negative integer, not "
                                 f"{value.decode('utf-8', 'replace')}", path=str(path))
            bits = decoded[value] = bin(int(value))[2:][::-1]
        out[_word(key, path)] = bits
    return out


def read_log_probs(path: Path, min_log_prob: float | None = None) -> dict[str, float]:
    """Word -> log probability of a spaCy ``lexeme_prob`` file; with ``min_log_prob``, the words of at least
    that log probability only (filtered while reading, one member at a time: the English table has a million
    words, most at the smoothing floor)."""
    out: dict[str, float] = {}
    for key, value in _flat_members(path):
        try:
            p = float(value)
        except ValueError:
            p = math.nan
        if not p <= 0 or math.isinf(p):  # NaN, a string, a list or true/false read as NaN above
            raise InputError(f"word {_word(key, path)!r}: a log probability must be a finite number <= 0, not "
                             f"{value.decode('utf-8', 'replace')}", path=str(path))
        if min_log_prob is None or p >= min_log_prob:
            out[_word(key, path)] = p
    return out


def read_jieba_dict(path: Path, min_frequency: int = 0) -> dict[str, int]:
    """Word -> frequency of a jieba dictionary (``word freq [pos]`` lines), the words of frequency at least
    ``min_frequency`` only (filtered while reading: the whole table is 349,046 words)."""
    out: dict[str, int] = {}
    try:
        with open(path, encoding="utf-8-sig") as f:
            for n, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    freq = int(parts[1])
                except (IndexError, ValueError):
                    raise InputError(f"expected 'word frequency [tag]', found {line.rstrip()!r}",
                                     path=str(path), line=n) from None
                if freq >= min_frequency:
                    out[parts[0]] = freq
                else:  # a word listed twice keeps its last frequency
                    out.pop(parts[0], None)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the dictionary ({e})", path=str(path)) from None
    return out


def read_lemma_tables(path: Path) -> dict[str, Any]:
    """A spaCy lemmatizer's lookup tables beside ``path`` (``{lang}_lemma_index.json.gz``): the index
    (class → lemmas), the irregular forms (``_lemma_exc``: class → {form: lemmas}) and the rules
    (``_lemma_rules``: class → [[suffix, replacement]])."""
    stem = path.name[:-len("index.json.gz")]
    index = _json_object(path)
    exc = _json_object(path.with_name(f"{stem}exc.json.gz"))
    rules = _json_object(path.with_name(f"{stem}rules.json.gz"))
    for name, table in (("index", index), ("exc", exc), ("rules", rules)):
        if not all(isinstance(v, (list, dict)) for v in table.values()):
            raise InputError(f"the lemma {name} is not a table of lists", path=str(path))
    return {"index": index, "exc": exc, "rules": rules}
