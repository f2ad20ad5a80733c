"""A tag dictionary: the labels each frequent word was seen with in training, used to prune decoding.

Ratnaparkhi (1996, "A Maximum Entropy Model for Part-of-Speech Tagging", EMNLP) restricts the tags
his beam search considers for a word seen in training to the tags it was seen with (a "tag
dictionary"), which speeds the search up with no loss in accuracy; NLTK's ``PerceptronTagger`` keeps a
``tagdict`` of frequent unambiguous words (seen at least 20 times with one tag in at least 97 % of
them) and tags those without scoring them at all (Honnibal's ``textblob-aptagger``, 2013, which it
ports). This one is Ratnaparkhi's set, with NLTK's thresholds as options:

* a word type seen at least ``min_count`` times allows the labels it was seen with;
* a label seen with the word in less than ``threshold`` of its occurrences is dropped (0 keeps every
  label seen; NLTK's 0.97 ambiguity threshold corresponds to ``threshold=0.03`` for the words it
  keeps, and this keeps the ambiguous frequent words too, with their frequent labels);
* a rare or unseen word allows every label.

The decoder exploits the mask (`structperc.decode.decoder.predict(..., allowed=…)`): a token with
fewer allowed labels costs fewer scores and Viterbi pairs, and a token with one allowed label is not
scored at all. Words are matched exactly (case included: "US" and "us" are different words).

The dictionary holds label *names*, not ids, so a saved dictionary maps onto any model's labels
(`allowed` takes them); its JSON form (`to_json`) is plain JSON types, for the model file's metadata.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Mapping, Sequence

import numpy as np

from structperc.errors import ModelFormatError

#: Version of the JSON form (`TagDictionary.to_json`).
FORMAT_VERSION = 1
#: Defaults chosen on the UD EWT dev file (``scripts/bench_tagdict.py``), never on test.
DEFAULT_MIN_COUNT = 2
DEFAULT_THRESHOLD = 0.01


@dataclass(frozen=True)
class TagDictionary:
    """Allowed labels per word.

    Attributes
    ----------
    words : dict of str to tuple of str
        Each listed word's allowed label names, sorted; a word not listed allows every label.
    min_count, threshold
        What it was learnt with (kept for the record: see the module docstring).
    """

    words: Mapping[str, tuple[str, ...]]
    min_count: int = DEFAULT_MIN_COUNT
    threshold: float = DEFAULT_THRESHOLD
    _tables: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def learn(cls, words: Sequence[str], label_ids: np.ndarray, labels: Sequence[str], *,
              min_count: int = DEFAULT_MIN_COUNT, threshold: float = DEFAULT_THRESHOLD) -> "TagDictionary":
        """The dictionary of training tokens ``words`` tagged ``label_ids`` (ids into ``labels``).

        Tokens with a negative label id (an unknown tag in partially labelled data) are skipped;
        so they count neither towards ``min_count`` nor towards a label's share.
        """
        ids = np.asarray(label_ids)
        if ids.ndim != 1 or len(ids) != len(words):
            raise ValueError(f"{len(words)} words but label ids of shape {ids.shape}")
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"label ids must be integers, not {ids.dtype}")
        if len(ids) and ids.max(initial=-1) >= len(labels):
            raise ValueError(f"label id {int(ids.max())} is not one of the {len(labels)} labels")
        if int(min_count) < 1:
            raise ValueError(f"min_count must be at least 1, not {min_count}")
        if not 0.0 <= float(threshold) < 1.0:
            raise ValueError(f"threshold must be in [0, 1), not {threshold}")
        known = ids >= 0
        types: dict[str, int] = {}
        codes = np.fromiter((types.setdefault(w, len(types)) for w in words), dtype=np.int64,
                            count=len(words))[known]
        L = len(labels)
        counts = np.bincount(codes * L + ids[known].astype(np.int64),
                             minlength=len(types) * L).reshape(len(types), L)
        totals = counts.sum(axis=1)
        keep = counts > 0
        if threshold > 0:
            keep &= counts >= threshold * totals[:, None]
        frequent = totals >= min_count
        names = list(labels)
        entries = {}
        for word, code in types.items():  # first-seen order; sorted below: deterministic
            if frequent[code]:
                entries[word] = tuple(sorted(names[j] for j in np.flatnonzero(keep[code])))
        return cls(dict(sorted(entries.items())), int(min_count), float(threshold))

    def __len__(self) -> int:
        return len(self.words)

    def allowed(self, words: Sequence[str], labels: Sequence[str],
                codes: np.ndarray | None = None) -> np.ndarray:
        """The bool mask (n_tokens, len(labels)) of the labels each token may take.

        ``labels`` are the model's label names (their order gives the columns). A listed word
        allows its labels that are among them; one whose labels are none of them (a dictionary from
        another label set) and an unlisted word allow every label. With ``codes`` (one index into
        ``words`` per token, as `structperc.io.corpus.Corpus.factorize` gives), ``words`` are the
        distinct words: each is looked up once, not once per token.
        """
        rows, index = self._table(tuple(labels))
        at = np.fromiter(map(index.get, words, repeat(0)), dtype=np.int64, count=len(words))  # in C
        if codes is not None:
            codes = np.asarray(codes)
            if codes.ndim != 1 or not np.issubdtype(codes.dtype, np.integer):
                raise ValueError(f"codes must be a 1-d integer array, not {codes.dtype} {codes.shape}")
            if len(codes) and (codes.min() < 0 or codes.max() >= len(words)):
                raise ValueError(f"codes must index the {len(words)} distinct words")
            at = at[codes]
        return rows[at]

    def _table(self, labels: tuple[str, ...]) -> tuple[np.ndarray, dict[str, int]]:
        """Row 0 allows everything; row i + 1 is the i-th listed word's (cached per label list)."""
        cached = self._tables.get(labels)
        if cached is None:
            column = {name: j for j, name in enumerate(labels)}
            rows = np.ones((len(self.words) + 1, len(labels)), dtype=bool)
            index = {}
            for i, (word, names) in enumerate(self.words.items(), start=1):
                cols = [column[n] for n in names if n in column]
                if cols:
                    rows[i] = False
                    rows[i, cols] = True
                    index[word] = i
            rows.flags.writeable = False
            cached = self._tables[labels] = (rows, index)
        return cached

    def to_json(self) -> dict[str, Any]:
        """Plain JSON types: label names, not ids."""
        return {"version": FORMAT_VERSION, "min_count": self.min_count, "threshold": self.threshold,
                "words": {w: list(names) for w, names in self.words.items()}}

    @classmethod
    def from_json(cls, data: Any) -> "TagDictionary":
        """The dictionary `to_json` wrote; `ModelFormatError` if ``data`` is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("words"), dict):
            raise ModelFormatError("the tag dictionary is not a JSON object with a 'words' object")
        if data.get("version", FORMAT_VERSION) > FORMAT_VERSION:
            raise ModelFormatError(f"the tag dictionary has format version {data['version']}; this "
                                   f"structperc reads up to {FORMAT_VERSION}")
        words = {}
        for word, names in data["words"].items():
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise ModelFormatError(f"the tag dictionary's entry for {word!r} is not a list of labels")
            words[word] = tuple(sorted(names))
        return cls(dict(sorted(words.items())), int(data.get("min_count", DEFAULT_MIN_COUNT)),
                   float(data.get("threshold", DEFAULT_THRESHOLD)))
