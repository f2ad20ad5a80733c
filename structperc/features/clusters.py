"""Brown word clusters learnt from raw text: the cluster-path columns templates read.

Brown clustering (Brown et al. 1992) merges words greedily into a binary tree that keeps the mutual
information of adjacent clusters high; a word's path in the tree (a bitstring) and its prefixes are
coarser and coarser word classes, learnt from unlabelled text. Feature-based taggers (Koo et al. 2008,
Turian et al. 2010, Owoputi et al. 2013) read prefixes of 4, 6, 10 and 20 bits and the full path: a
word never seen in the labelled data still shares its class with words that were.

The clusters are learnt once, from text the user supplies (``structperc clusters raw.txt``), and
kept in Percy Liang's ``paths`` format (``bitstring<TAB>word<TAB>count``, what ``wcluster`` writes
and what other taggers read), so clusters made elsewhere can be used too. `ClusterMap` writes the
``clu4``, ``clu6``, ``clu10``, ``clu20`` and ``clu`` columns; it is a
`structperc.features.dictionary.ColumnDictionary` kept inside the model (`to_json`), so a model tags
with the clusters it was trained with. The clusters never read tags, so there is nothing to jackknife:
`ClusterLearner` gives every fold the same map.

The clustering itself is the ``brown-clustering`` package's (a numba implementation of the windowed
algorithm of Brown et al. / Liang's ``wcluster``).
"""
from __future__ import annotations

import contextlib
import io
import os
from typing import IO, Any, Iterable, Iterator, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.dictionary import FixedLearner, with_columns
from structperc.features.resources.storage import StoredClasses, spellings
from structperc.io.corpus import Corpus, compact
from structperc.io.text import open_text_lines

CLUSTER_COLUMN = "clu"
#: Path prefix lengths with a column each (``clu4`` …), the lengths of Koo et al. and Owoputi et al.
PREFIX_LENGTHS = (4, 6, 10, 20)
#: The columns of a map with the default prefixes.
DEFAULT_COLUMNS = tuple(f"{CLUSTER_COLUMN}{n}" for n in PREFIX_LENGTHS) + (CLUSTER_COLUMN,)
#: The value of every cluster column for a word the clusters do not know.
UNKNOWN = "<unk>"


def _check(paths: dict[str, str], prefixes: Sequence[int]) -> None:
    """Refuse a path that is not a bitstring (naming its word) and a prefix length below 1."""
    for bits in set(paths.values()):  # the distinct paths: a resource's million words share a thousand
        if not isinstance(bits, str) or not bits or set(bits) - {"0", "1"}:
            w = next(w for w, b in paths.items() if b == bits)
            raise InputError(f"cluster path of {w!r} is not a bitstring: {bits!r}")
    if any(int(n) < 1 for n in prefixes):
        raise InputError(f"cluster prefix lengths must be positive: {list(prefixes)}")


class ClusterMap:
    """Word → cluster path, writing one column per path prefix and one for the full path.

    A word is looked up as written, then lowercased (clusters learnt on lowercased text serve cased
    input). ``word`` names the token column it reads. A
    `structperc.features.dictionary.ColumnDictionary`.

    Examples
    --------
    >>> m = ClusterMap({"cat": "0110", "dog": "0111", "sat": "10"}, prefixes=(2, 3))
    >>> m.columns
    ('clu2', 'clu3', 'clu')
    >>> distinct, codes = m.values(Corpus.from_sentences([["The", "Cat", "sat"]]))["clu3"]
    >>> [distinct[c] for c in codes]
    ['<unk>', '011', '10']
    """

    def __init__(self, paths: dict[str, str], counts: dict[str, int] | None = None, *, word: str = "word",
                 prefixes: Sequence[int] = PREFIX_LENGTHS, resource: dict | None = None,
                 table: StoredClasses | None = None):
        _check(paths, prefixes)
        #: word → path: a dictionary, or a model's stored table looked up as far as needed (``table``, `stored`)
        self._stored = table if table is not None else StoredClasses.of(paths)
        self.counts = dict(counts or {})
        self.word = word
        self.prefixes = tuple(int(n) for n in prefixes)
        #: Where the clusters come from when a language resource gave them (`structperc.features.resources`:
        #: name, package, version, licence); such a map is stored as arrays (`arrays`), not as JSON lists.
        self.resource = dict(resource) if resource else None

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f"{CLUSTER_COLUMN}{n}" for n in self.prefixes) + (CLUSTER_COLUMN,)

    @classmethod
    def stored(cls, table: StoredClasses, *, word: str = "word", prefixes: Sequence[int] = PREFIX_LENGTHS,
               resource: dict | None = None, paths: Sequence[str] = ()) -> "ClusterMap":
        """A map over a model's stored table (``paths``: its distinct paths, checked here) whose dictionary is
        built only when needed: tagging once looks up a corpus's few thousand distinct words in the table's index
        instead (`StoredClasses.class_ids`), where building the dictionary of a Spanish table took a tenth of a
        second."""
        _check({p: p for p in paths}, prefixes)
        return cls({}, word=word, prefixes=prefixes, resource=resource, table=table)

    @property
    def paths(self) -> dict[str, str]:
        """Word → path."""
        return self._stored.table()

    @property
    def n_clusters(self) -> int:
        """Distinct paths (leaves of the tree that hold words)."""
        return len(set(self.paths.values()))

    def path(self, word: str) -> str | None:
        """The word's path: as written, else lowercased; None when unknown."""
        hit = self.paths.get(word)
        return hit if hit is not None else self.paths.get(word.lower())

    def values(self, corpus: Corpus) -> dict[str, Any]:
        """One value per token for every column, as ``(distinct, codes)``, the values numbered in order of
        first occurrence (as `structperc.features.dictionary.word_columns` numbers them). The distinct words,
        as written and lowercased, are found by probes of the table's index (`spellings`, shared with the model's
        other tables); the prefixes are taken of the table's few distinct paths, not of every word."""
        codes = corpus.factorize(self.word)[1]
        found = spellings(corpus, self.word)
        paths = self._stored.class_names
        path_of = found.as_written_else_lower(self._stored.class_ids(found.query))
        path_of[path_of < 0] = len(paths)  # the unknown words' value is listed after the paths
        out = {}
        for name, n in zip(self.columns, self.prefixes + (None,)):
            prefixed = [p if n is None else p[:n] for p in paths] + [UNKNOWN]
            values = list(dict.fromkeys(prefixed))
            position = {v: i for i, v in enumerate(values)}
            of_path = np.fromiter(map(position.__getitem__, prefixed), np.int64, len(prefixed))
            kept, of_word = compact(values, of_path[path_of])  # per distinct word, in order of first occurrence
            out[name] = (kept, of_word[codes])
        return out

    def annotate(self, corpus: Corpus, values: dict[str, Any] | None = None) -> Corpus:
        """``corpus`` with the cluster columns (``values``, or the map's own)."""
        return with_columns(corpus, values if values is not None else self.values(corpus), self.columns)

    def to_json(self) -> dict:
        """Paths → their words (sorted), and the prefix lengths: what a model file keeps (the counts
        are not needed to tag). A resource's map (hundreds of thousands of words) keeps its distinct
        paths and its provenance here and its words in `arrays`."""
        by_path: dict[str, list[str]] = {}
        for w, bits in self.paths.items():
            by_path.setdefault(bits, []).append(w)
        if self.resource is not None:
            return {"kind": "brown", "prefixes": list(self.prefixes), "resource": self.resource,
                    "paths": sorted(by_path), "stored": "arrays"}
        return {"kind": "brown", "prefixes": list(self.prefixes),
                "paths": {bits: sorted(words) for bits, words in sorted(by_path.items())}}

    def arrays(self) -> dict[str, np.ndarray]:
        """A resource's words grouped by path (`structperc.features.resources.storage.pack_classes`);
        nothing for a map read from a file."""
        if self.resource is None:
            return {}
        return self._stored.packed()[1]

    @classmethod
    def from_json(cls, data: dict, word: str = "word", arrays: dict[str, np.ndarray] | None = None) -> "ClusterMap":
        """Read `to_json` output (and, for a resource's map, its `arrays`)."""
        if not isinstance(data, dict) or data.get("kind") != "brown":
            raise ValueError("not a Brown cluster map")
        if data.get("stored") == "arrays":
            return cls.stored(StoredClasses(list(data["paths"]), arrays), word=word, prefixes=data["prefixes"],
                              resource=data["resource"], paths=data["paths"])
        paths = {w: bits for bits, words in data["paths"].items() for w in words}
        return cls(paths, word=word, prefixes=data["prefixes"])


class ClusterLearner(FixedLearner):
    """The `structperc.features.dictionary.DictionaryLearner` of a fixed `ClusterMap`: clusters come
    from raw text, not from the training tags, so every fold gets the same map (no jackknifing)."""

    def __init__(self, clusters: ClusterMap):
        super().__init__(clusters)
        self.clusters = clusters


# -- the paths file ------------------------------------------------------------------------------

def read_paths(path: str | os.PathLike | IO, *, word: str = "word",
               prefixes: Sequence[int] = PREFIX_LENGTHS) -> ClusterMap:
    """Read a ``paths`` file (``bitstring<TAB>word<TAB>count`` per line; the count may be missing).
    Errors name the file and line."""
    name = os.fspath(path) if isinstance(path, (str, os.PathLike)) else getattr(path, "name", "<stream>")
    paths: dict[str, str] = {}
    counts: dict[str, int] = {}
    for number, line in open_text_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) not in (2, 3) or not fields[0] or set(fields[0]) - {"0", "1"} or not fields[1]:
            raise InputError("expected 'bitstring<TAB>word<TAB>count' (Liang's paths format)", name, number)
        if fields[1] in paths:
            raise InputError(f"word {fields[1]!r} has a second path", name, number)
        paths[fields[1]] = fields[0]
        if len(fields) == 3:
            try:
                counts[fields[1]] = int(fields[2])
            except ValueError:
                raise InputError(f"count {fields[2]!r} is not an integer", name, number) from None
    if not paths:
        raise InputError("no clusters in the file", name)
    return ClusterMap(paths, counts, word=word, prefixes=prefixes)


def write_paths(clusters: ClusterMap, out: IO[str]) -> None:
    """Write ``clusters`` in the ``paths`` format, sorted by path then by falling count (as
    ``wcluster`` does)."""
    for w, bits in sorted(clusters.paths.items(), key=lambda kv: (kv[1], -clusters.counts.get(kv[0], 0), kv[0])):
        out.write(f"{bits}\t{w}\t{clusters.counts.get(w, 0)}\n")


def raw_sentences(path: str | os.PathLike | IO, *, lowercase: bool = False) -> Iterator[list[str]]:
    """Sentences of a raw text file: one per line, tokens split on whitespace (blank lines skipped)."""
    for _, line in open_text_lines(path):
        tokens = (line.lower() if lowercase else line).split()
        if tokens:
            yield tokens


# -- learning ------------------------------------------------------------------------------------

def learn_clusters(sentences: Iterable[Sequence[str]], n_clusters: int = 1000, min_count: int = 2, *,
                   alpha: float = 0.5, threads: int = 1, progress: bool = False,
                   source: str | None = None) -> ClusterMap:
    """Brown clusters of the words seen at least ``min_count`` times in ``sentences``.

    ``n_clusters`` is the window of the algorithm: the number of leaf clusters (fewer when the
    vocabulary is smaller). ``alpha`` is the add-alpha smoothing of the bigram counts. The time grows
    with vocabulary × ``n_clusters``²; ``progress`` shows the library's progress bar on stderr;
    ``source`` names the text in error messages. ``threads``: numba's, for the library's parallel loops;
    one by default, because each loop is short and on a loaded machine (where a tagger is trained
    alongside) two threads took over 5× as long as one (EWT, 1000 sentences, 100 clusters: 25 s with one).

    Paths are Liang's: the words of one leaf cluster share its path (the library's own codes also
    number the words inside a leaf by their merge order; those bits are dropped).
    """
    import numba
    try:
        from brown_clustering import BigramCorpus, BrownClustering
    except ImportError:
        raise InputError("learning clusters needs the brown-clustering package: pip install "
                         "\"structperc[clusters]\" (or give a paths file made elsewhere, e.g. by wcluster)") from None

    if n_clusters < 1:
        raise InputError(f"the number of clusters must be positive, not {n_clusters}", source)
    data = [list(s) for s in sentences]
    if not data:
        raise InputError("no text to cluster (one sentence per line expected)", source)
    corpus = BigramCorpus(data, alpha=alpha, min_count=max(1, int(min_count)))
    vocabulary = dict(corpus.vocabulary)
    if not vocabulary:
        raise InputError(f"no word occurs {min_count} times or more: nothing to cluster", source)
    quiet = contextlib.nullcontext() if progress else contextlib.redirect_stderr(io.StringIO())
    before = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(threads), getattr(numba.config, "NUMBA_NUM_THREADS", 1))))
    try:
        with quiet:
            model = BrownClustering(corpus, m=min(int(n_clusters), len(vocabulary)))
            leaves = model.train()
            codes = model.codes()
    finally:
        numba.set_num_threads(before)
    paths: dict[str, str] = {}
    for leaf in leaves:
        bits = _common_prefix([codes.get(w, "") for w in leaf]) or "0"  # one leaf only: the root
        paths.update((w, bits) for w in leaf)
    return ClusterMap(paths, vocabulary)


def _common_prefix(codes: list[str]) -> str:
    """The longest common prefix: a leaf's words share the bits of the merges above the leaf."""
    if not codes:
        return ""
    lo, hi = min(codes), max(codes)
    n = 0
    while n < min(len(lo), len(hi)) and lo[n] == hi[n]:
        n += 1
    return lo[:n]
