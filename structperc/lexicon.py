"""Dictionary features for segmentation: which lexicon words start, end or cover each character.

For every character t three values are computed: the length of the longest lexicon word that starts
at t (``lexb``), ends at t (``lexe``) and covers t strictly inside (``lexm``), "0" when there is none
and capped at `MAX_VALUE`. They become ordinary token columns, so templates use them like any other.
"""
from __future__ import annotations

from typing import Iterable

from structperc.errors import InputError

LEX_COLUMNS = ("lexb", "lexe", "lexm")
MAX_VALUE = 5


class Lexicon:
    """A set of words (length ≥ 2) with its prefixes, for fast longest-match lookups.

    Examples
    --------
    >>> lex = Lexicon(["上海", "上海市", "体育局"])
    >>> lex.columns("上海市体育局")
    (['3', '0', '0', '3', '0', '0'], ['0', '2', '3', '0', '0', '3'], ['0', '3', '0', '0', '3', '0'])
    """

    def __init__(self, words: Iterable[str]):
        self.words = {w for w in words if len(w) >= 2}
        self.prefixes = {w[:k] for w in self.words for k in range(2, len(w))}
        self.max_len = max((len(w) for w in self.words), default=0)
        self._values = [str(min(k, MAX_VALUE)) for k in range(self.max_len + 1)]  # length → value

    def __len__(self) -> int:
        return len(self.words)

    def columns(self, text: str) -> tuple[list[str], list[str], list[str]]:
        """``lexb``, ``lexe``, ``lexm`` values for each character of ``text``."""
        n = len(text)
        lb, le, lm = [0] * n, [0] * n, [0] * n
        words, prefixes, max_len = self.words, self.prefixes, self.max_len
        for i in range(n - 1):
            for j in range(i + 2, min(n, i + max_len) + 1):
                piece = text[i:j]
                if piece in words:
                    k = j - i
                    if k > lb[i]:
                        lb[i] = k
                    if k > le[j - 1]:
                        le[j - 1] = k
                    for m in range(i + 1, j - 1):
                        if k > lm[m]:
                            lm[m] = k
                if piece not in prefixes:
                    break
        value = self._values
        return [value[v] for v in lb], [value[v] for v in le], [value[v] for v in lm]


def read_lexicon(path) -> list[str]:
    """One word per line (a second whitespace-separated field, e.g. a frequency, is allowed)."""
    from structperc.corpus.conll import open_text_lines

    words = []
    for number, line in open_text_lines(path):
        fields = line.split()
        if not fields:
            continue
        if len(fields) > 2 or (len(fields) == 2 and not fields[1].isdigit()):
            raise InputError("expected one word per line (optionally followed by a count)", str(path),
                             number)
        words.append(fields[0])
    if not words:
        raise InputError("the lexicon is empty", str(path))
    return words
