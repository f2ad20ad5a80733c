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
import zlib
from pathlib import Path
from typing import Any

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


def read_cluster_paths(path: Path) -> dict[str, str]:
    """Word -> decoded Brown path of a spaCy ``lexeme_cluster`` file, trusted words (non-zero) only."""
    out: dict[str, str] = {}
    for word, c in _json_object(path).items():
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise InputError(f"word {word!r}: a cluster must be a non-negative integer, not {c!r}",
                             path=str(path))
        if c:
            out[word] = bin(c)[2:][::-1]
    return out


def read_log_probs(path: Path) -> dict[str, float]:
    """Word -> log probability of a spaCy ``lexeme_prob`` file."""
    out: dict[str, float] = {}
    for word, p in _json_object(path).items():
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not p <= 0 or math.isinf(p):
            raise InputError(f"word {word!r}: a log probability must be a finite number <= 0, not {p!r}",
                             path=str(path))
        out[word] = float(p)
    return out


def read_jieba_dict(path: Path) -> dict[str, int]:
    """Word -> frequency of a jieba dictionary (``word freq [pos]`` lines)."""
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
                out[parts[0]] = freq
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read the dictionary ({e})", path=str(path)) from None
    return out
