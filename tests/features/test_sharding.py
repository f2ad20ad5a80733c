"""The attribute index as a reduce over shards (issue 19): the same index and ids as one pass over
the whole corpus, whatever the shards, the threads and the pruning; and the forked map of the
jackknife folds."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structperc.errors import InputError
from structperc.features.forking import can_fork, forked_map
from structperc.features.index import FeatureIndex
from structperc.features.sharding import fit_transform_parallel, sentence_shards, token_range
from structperc.features.templates import parse_templates
from structperc.io.corpus import Corpus

#: Every kind of part: plain and function atoms, offsets, ``rare``, equality, bias, and transition
#: templates conditioned on a column.
LINES = ["w[0]", "lower(w[-1])|w[0]", "suffix2(w[1])", "rare(w[0])|pos[0]", "same(w[0],w[-2])", "bias",
         "y[-1]|y[0]|pos[0]", "w[-1]|w[0]|w[1]", "lower(w[1])|pos[0]@2"]

_WORD = st.sampled_from(["a", "b", "The", "the", "北京", "你", "naïve", "x|y", "B"])
_POS = st.sampled_from(["DT", "NN", "VB"])
_SENTS = st.lists(st.lists(st.tuples(_WORD, _POS), min_size=1, max_size=6), min_size=1, max_size=9)


def _corpus(sents) -> Corpus:
    return Corpus.from_sentences([[w for w, _ in s] for s in sents], extra={"pos": [[p for _, p in s] for s in sents]})


def _same_index(a: FeatureIndex, b: FeatureIndex) -> None:
    assert a.state_dict()[0] == b.state_dict()[0]  # vocabularies, radixes, frequent values
    assert len(a.keys) == len(b.keys)
    for x, y in zip(a.keys, b.keys):
        assert x.dtype == y.dtype and np.array_equal(x, y)


@settings(max_examples=60, deadline=None)
@given(_SENTS, st.integers(1, 3), st.integers(1, 3), st.integers(1, 40))
def test_parallel_fit_equals_one_pass(sents, min_count, workers, shard_tokens):
    """Any shard size and thread count: the index and the ids of `FeatureIndex.fit_transform`."""
    whole = FeatureIndex(parse_templates(LINES), min_count)
    expected = whole.fit_transform(_corpus(sents))
    sharded = FeatureIndex(parse_templates(LINES), min_count)
    got = fit_transform_parallel(sharded, _corpus(sents), workers, shard_tokens=shard_tokens)
    _same_index(sharded, whole)
    assert np.array_equal(got.state, expected.state) and got.state.dtype == np.int32
    assert np.array_equal(got.trans, expected.trans)
    assert np.array_equal(got.sent_ptr, expected.sent_ptr)


@settings(max_examples=40, deadline=None)
@given(_SENTS, st.integers(1, 4), st.integers(1, 2))
def test_shard_reduce_of_every_step_equals_one_pass(sents, n_shards, min_count):
    """The three steps with step 1 as a reduce too (each shard its own corpus, as Dask workers read
    their own parts): shards of consecutive sentences give the whole corpus's index and ids."""
    corpus = _corpus(sents)
    whole = FeatureIndex(parse_templates(LINES), min_count)
    expected = whole.fit_transform(corpus)
    bounds = sentence_shards(corpus.sent_ptr, n_shards)
    parts = [_corpus(sents[bounds[k]:bounds[k + 1]]) for k in range(len(bounds) - 1)]
    index = FeatureIndex(parse_templates(LINES), min_count)
    index.grow_vocabularies([index.column_values(p) for p in parts])
    index.merge_key_tables([index.key_tables(p) for p in parts])
    _same_index(index, whole)
    got = [index.transform(p) for p in parts]
    assert np.array_equal(np.concatenate([f.state for f in got]), expected.state)
    assert np.array_equal(np.concatenate([f.trans for f in got]), expected.trans)


def test_key_tables_of_a_token_range_are_those_of_its_sentences():
    corpus = _corpus([[("a", "DT"), ("b", "NN")], [("b", "NN")], [("a", "VB"), ("a", "DT"), ("b", "NN")]])
    index = FeatureIndex(parse_templates(["w[-1]|w[0]", "pos[1]"]))
    index.grow_vocabularies([index.column_values(corpus)])
    rows = token_range(corpus.sent_ptr, np.array([0, 2, 3]), 1)
    assert rows == slice(3, 6)
    alone = _corpus([[("a", "VB"), ("a", "DT"), ("b", "NN")]])
    for (k1, c1), (k2, c2) in zip(index.key_tables(corpus, rows), index.key_tables(alone)):
        assert k1.tolist() == k2.tolist() and c1.tolist() == c2.tolist()


def test_min_count_counts_across_shards():
    """A key seen once in each of two shards is kept by min_count=2 (counts are summed, not
    pruned per shard)."""
    corpus = _corpus([[("a", "DT")], [("a", "DT")], [("b", "NN")]])
    index = FeatureIndex(parse_templates(["w[0]"]), min_count=2)
    fit_transform_parallel(index, corpus, workers=2, shard_tokens=1)
    assert index.n_state_attributes == 1 and index.attribute_name(0) == "w[0]=a"


def test_a_missing_column_is_one_input_error():
    with pytest.raises(InputError, match="unknown column 'pos'"):
        fit_transform_parallel(FeatureIndex(parse_templates(["pos[0]"])), Corpus.from_sentences([["a"]]), 2)


@pytest.mark.parametrize("n_shards", [1, 2, 3, 7, 50])
def test_sentence_shards_cover_every_sentence_once(n_shards):
    lengths = np.array([5, 1, 1, 30, 2, 2, 9])
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    bounds = sentence_shards(ptr, n_shards)
    assert bounds[0] == 0 and bounds[-1] == len(lengths)
    assert (np.diff(bounds) > 0).all() and len(bounds) - 1 <= min(n_shards, len(lengths))


def test_forked_map_keeps_order_and_reads_the_parents_objects():
    big = {"offset": 1000}  # a closure over the parent's object: inherited, never pickled
    assert forked_map(lambda x: x + big["offset"], list(range(7)), workers=3) == list(range(1000, 1007))


@pytest.mark.skipif(not can_fork(), reason="no 'fork' start method on this platform")
def test_forked_map_runs_in_other_processes_and_raises_their_errors():
    import os

    pids = forked_map(lambda _: os.getpid(), range(4), workers=2)
    assert os.getpid() not in pids

    def fail(x):
        if x == 2:
            raise ValueError("job 2 failed")
        return x

    with pytest.raises(ValueError, match="job 2 failed"):
        forked_map(fail, range(4), workers=2)


def test_forked_map_with_one_worker_runs_here():
    import os

    assert forked_map(lambda _: os.getpid(), range(3), workers=1) == [os.getpid()] * 3
