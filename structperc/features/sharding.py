"""The attribute index fitted as a reduce over shards of a corpus, the shards in parallel (issue 19).

A corpus cut into runs of consecutive sentences is featurized in three map steps, each followed by a
reduce (`structperc.features.index.FeatureIndex`):

1. each shard's columns: distinct values in order of first occurrence, with counts
   (`~FeatureIndex.column_values`) → the vocabularies (`~FeatureIndex.grow_vocabularies`);
2. each shard's distinct keys per template, with counts (`~FeatureIndex.key_tables`) → merged and
   sorted into the tables (`~FeatureIndex.merge_key_tables`);
3. each shard maps its keys to ids (`~FeatureIndex.transform`).

Keys and counts merge exactly, so the index and the ids are those of `~FeatureIndex.fit_transform` on
the whole corpus, bit for bit, whatever the number of shards (tested). What a shard sends is its
distinct values and its distinct keys, never its tokens.

On one machine (`fit_transform_parallel`) step 1 runs once on the whole corpus: its columns are
factorized already (the readers code them as they read), and the vocabularies keep the corpus's own
order of values, whatever it is (word segmentation numbers characters by code point). Steps 2 and 3
run on threads, not processes: their work is numpy's (sorting, binary search, gathers), which releases
the GIL, so threads share the corpus and write the ids straight into one matrix, with nothing pickled
and no copy-on-write faults (forked workers paid those on every fresh page, which made them slower
than threads on this work). Shards of about `SHARD_TOKENS` tokens keep the temporaries small, which
pays even on one thread.
"""
from __future__ import annotations

import numpy as np

from structperc.compiled.threads import map_threads as _map
from structperc.compiled.threads import sentence_shards as sentence_shards
from structperc.compiled.threads import token_range as token_range
from structperc.features.index import FeatureIndex, Features
from structperc.io.corpus import Corpus

#: Tokens per shard on one machine: small enough for the per-template temporaries to stay in cache.
SHARD_TOKENS = 1 << 17


def fit_transform_parallel(index: FeatureIndex, corpus: Corpus, workers: int = 1,
                           shard_tokens: int = SHARD_TOKENS) -> Features:
    """``index.fit_transform(corpus)`` by the three steps, on shards of about ``shard_tokens`` tokens
    (at least ``workers`` of them) run on ``workers`` threads: the same index and ids."""
    if index.fitted:
        raise RuntimeError("FeatureIndex is already fitted")
    n_shards = max(int(workers), -(-corpus.n_tokens // max(1, int(shard_tokens))))
    bounds = sentence_shards(corpus.sent_ptr, n_shards)
    rows = [token_range(corpus.sent_ptr, bounds, k) for k in range(len(bounds) - 1)]
    index.grow_vocabularies([index.column_values(corpus)])  # also factorizes every column, once
    corpus.positions()  # computed once, before the threads share it
    index.merge_key_tables(_map(lambda k: index.key_tables(corpus, rows[k]), len(rows), workers))
    index.build_lookup_tables()
    n_state = sum(not t.transition for t in index.templates)
    state = np.empty((corpus.n_tokens, n_state), np.int32)
    trans = np.empty((corpus.n_tokens, len(index.templates) - n_state), np.int32)

    def ids(k: int) -> None:
        feats = index.transform(corpus, rows[k])
        state[rows[k]], trans[rows[k]] = feats.state, feats.trans

    _map(ids, len(rows), workers)
    index.drop_lookup_tables()  # training needs no lookups; tagging rebuilds them on first use
    return Features(state, trans, corpus.sent_ptr)
