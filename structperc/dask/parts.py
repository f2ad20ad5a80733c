"""Training input that the Dask workers read themselves (issue 19): each worker reads its own part of
the input, featurizes it and keeps its shard's arrays; the driver never holds the corpus.

The parts are the training files (one part each), or byte ranges of one file cut at sentence breaks
(`structperc.io.parts.file_parts`: the driver only seeks near each cut). Everything a worker holds is the
result of a task, so Dask rebuilds it on another worker when its worker is lost (the part is read again):

1. ``read_part``: a part's corpus, read by the same reader as the driver's;
2. ``summarize``: its columns, the distinct values of the columns the templates read, its gold tags,
   sizes and digest → the driver merges the values into the vocabularies
   (`~structperc.features.index.FeatureIndex.grow_vocabularies`, in part order) and the tags into the labels;
3. `~structperc.features.index.FeatureIndex.key_tables`: its distinct keys per template → merged
   into the attribute tables (`~structperc.features.index.FeatureIndex.merge_key_tables`);
4. ``part_shard``: its attribute ids and label ids as one `~structperc.train.mixing.Shard` of the
   run — shard k of the parts, sentences numbered across the parts in order — which
   `~structperc.dask.training.DaskShards` trains from, epoch after epoch.

The reduces are exact (`structperc.features.sharding`): the index is the one the driver would build from
the concatenated parts, and the model is the one `--workers N` trains on one machine from shards cut at the
same sentences (tested). What travels to the driver is each part's distinct values and keys, never its
tokens; what travels to the workers is the fitted index (vocabularies and key tables) once.

Not here: dictionaries learnt from the training data (a jackknife needs every sentence in one place, so
templates reading their columns are refused), partial labels, ``--dev-split`` and the ``observed``
feature set (each needs the whole corpus).
"""
from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from structperc.dask.client import using
from structperc.dask.training import dask_runner, hold
from structperc.errors import InputError
from structperc.features.index import FeatureIndex
from structperc.features.instances import check_reads, corpus_digest, hidden_tags, model_tags, template_columns
from structperc.features.task import Task, masks
from structperc.features.templates import optional_columns_dropped, parse_templates
from structperc.io.corpus import Corpus
from structperc.io.inputs import to_corpus
from structperc.io.parts import ByteRange, PartFailure, file_parts
from structperc.labels.label_set import LabelSet
from structperc.predict import calibrate
from structperc.train.config import mixing_scale, validate
from structperc.train.mixing import Shard
from structperc.train.perceptron import EpochInputs, PerceptronState
from structperc.train.run import Callback, Fitted, Progress, run_trainer


@dataclass
class PartSummary:
    """What the driver learns of a part: its columns, the distinct values (and counts) of the columns the
    templates read, its distinct gold tags (model scheme), its sizes and a digest of its data."""

    columns: list[str]
    values: dict[str, tuple[list[str], np.ndarray]]
    tags: list[str]
    n_sentences: int
    n_tokens: int
    digest: str


def training_parts(paths: Sequence[str], n_parts: int) -> list[ByteRange]:
    """The parts the workers read: one per file when there are several files, else ``n_parts`` byte
    ranges of the one file cut at blank lines (fewer if it has fewer sentences; a ``.gz`` file is one)."""
    paths = [str(p) for p in paths]
    if not paths:
        raise InputError("no training files")
    if len(paths) > 1:
        return [p for path in paths for p in file_parts(path, False, 1, part_bytes=1 << 62)]
    return file_parts(paths[0], False, n_parts, part_bytes=1 << 62)


def read_part(part: ByteRange, task: Task, reads: set[str] | None) -> Corpus | PartFailure:
    """A part's corpus (on a worker), or the failure to report: bad input with its line in the whole file.
    Unknown tags (partial labels) are refused here: their label sets need the whole corpus."""
    try:
        corpus = to_corpus(part.source(), None, task, need_tags=True, reads=reads, unknown=None)
    except InputError as exc:
        return PartFailure.of(exc, part)
    if not len(corpus):
        return PartFailure("no sentences in this part of the training input", part.name, None)
    return corpus


def summarize(corpus: Corpus | PartFailure, columns: list[str], task: Task, unknown: str | None) \
        -> PartSummary | PartFailure:
    """A part's `PartSummary`, with the values of those of ``columns`` it has (its failure, passed on)."""
    if isinstance(corpus, PartFailure):
        return corpus
    if hidden_tags(corpus, task, unknown) is not None:
        return PartFailure(f"unknown tags ({unknown!r}, partial labels) are not supported when the workers read the "
                           "training input", corpus.source, None)
    return PartSummary(list(corpus.columns), FeatureIndex([]).column_values(corpus, columns),
                       sorted(set(model_tags(corpus, task))), len(corpus), corpus.n_tokens, corpus_digest(corpus))


def part_shard(corpus: Corpus, index: FeatureIndex, labels: list[str], task: Task, k: int, start: int,
               n_total: int, seed: int, mask: np.ndarray, end: np.ndarray) -> Shard:
    """ByteRange ``k``'s shard: its sentences are ``start:start + len(corpus)`` of the run's ``n_total``."""
    feats = index.transform(corpus)
    y = LabelSet(labels).encode(model_tags(corpus, task)).astype(np.int32)
    c = np.ascontiguousarray
    X, XT = c(feats.state, dtype=np.int32), c(feats.trans, dtype=np.int32)
    # the compiled epoch checks nothing: refuse here what it would read out of bounds
    for ids, size in ((X, index.n_state_attributes), (XT, index.n_transition_attributes), (y, len(labels))):
        if ids.size and (int(ids.min()) < (0 if ids is y else -1) or int(ids.max()) >= size):
            raise ValueError(f"ids out of range on part {k}")
    inputs = EpochInputs(X, XT, c(y, dtype=np.int32), c(corpus.sent_ptr, dtype=np.int64),
                         c(mask, dtype=np.float64), c(end, dtype=np.float64))
    return Shard(k, start, start + len(corpus), n_total, inputs, seed)


@dataclass
class DistributedData:
    """The result of `featurize_on_workers`: the fitted index, the template lines it uses, the labels
    with the scheme's transition mask and end penalties, one shard future per part (on the workers),
    and the totals."""

    index: FeatureIndex
    lines: list[str]
    labels: list[str]
    mask: np.ndarray
    end: np.ndarray
    shards: list[Any]
    n_sentences: int
    n_tokens: int
    digest: str


def featurize_on_workers(client: Any, parts: list[ByteRange], task: Task, template_lines: list[str], min_count: int,
                         seed: int, unknown: str | None, masks: Any) -> DistributedData:
    """Steps 1–4 of the module docstring on ``client``'s cluster. ``masks(labels)`` gives the
    scheme's (mask, end) for the merged labels."""
    reads = template_columns(template_lines) | {task.token_column, task.tag_column}
    run = uuid.uuid4().hex[:12]  # a file read again (perhaps changed since) is a new task, never an old result
    corpora = [client.submit(read_part, p, task, reads, key=f"structperc-part-{i}-{run}", pure=False)
               for i, p in enumerate(parts)]
    answers = client.gather([client.submit(summarize, c, sorted(reads), task, unknown, pure=False) for c in corpora])
    for answer in answers:  # the first part's failure first: the earliest line of the input
        if isinstance(answer, PartFailure):
            raise answer.error()
    summaries: list[PartSummary] = answers
    # optional templates are dropped where a part lacks their column
    common = set.intersection(*(set(s.columns) for s in summaries))
    lines = optional_columns_dropped(template_lines, common)
    index = FeatureIndex(parse_templates(lines), min_count)
    check_reads(set(index.columns), common, task, parts[0].name)
    index.grow_vocabularies([s.values for s in summaries])
    grown = client.submit(hold, index, pure=False)
    index.merge_key_tables(client.gather([client.submit(FeatureIndex.key_tables, grown, c, pure=False)
                                          for c in corpora]))
    if index.n_state_attributes + index.n_transition_attributes == 0:
        raise InputError("the templates give no attribute on this data", parts[0].name)
    labels = LabelSet([t for s in summaries for t in s.tags]).labels
    mask, end = masks(labels)
    fitted = client.submit(hold, index, pure=False)
    starts = np.concatenate([[0], np.cumsum([s.n_sentences for s in summaries])]).tolist()
    n_total = int(starts[-1])
    shards = [client.submit(part_shard, c, fitted, labels, task, k, int(starts[k]), n_total, seed, mask, end,
                            key=f"structperc-shard-{k}-{fitted.key}", pure=False)
              for k, c in enumerate(corpora)]
    digest = hashlib.sha256("".join(s.digest for s in summaries).encode()).hexdigest()
    return DistributedData(index, lines, labels, mask, end, shards, n_total, sum(s.n_tokens for s in summaries), digest)

def train_on_workers(paths: list[str], dev: Corpus | None, template_lines: list[str], epochs: int, *,
                     task: Task, params: dict, dask: Any, workers: int, mixing: str | None = None,
                     callback: Callback | None = None, progress: Progress | None = None,
                     checkpoint_dir: str | os.PathLike | None = None,
                     resume: str | os.PathLike | None = None) -> Fitted:
    """Train on a Dask cluster whose workers read the training input themselves: ``workers`` byte ranges
    of one file (or one part per file of several), featurized where they are read, each a shard of
    iterative parameter mixing (`structperc.dask.parts`). The driver reads only ``dev``. The
    same model as `train_model` with ``workers`` shards cut at the same sentences."""
    validate({**params, "read_on_workers": True, "dask": dask, "workers": workers, "mixing": mixing,
              "checkpoint_dir": checkpoint_dir, "resume": resume}, lines=template_lines)
    scale = mixing_scale(workers, mixing)
    parts = training_parts(paths, workers)
    with using(dask) as client:
        data = featurize_on_workers(client, parts, task, template_lines, params.get("min_count", 1),
                                    params["seed"], params.get("unknown_tag", "?"),
                                    lambda labels: masks(labels, task))
        index, labels = data.index, data.labels
        fingerprint: dict = {}
        if resume is not None or checkpoint_dir is not None:
            from structperc.train.checkpoint import checkpoint_fingerprint

            fingerprint = checkpoint_fingerprint(template_lines, labels, index, task, params, data.digest, scale,
                                                 parts=len(parts))
        if resume is not None:
            from structperc.train.checkpoint import load_checkpoint

            state = load_checkpoint(resume, fingerprint, data.mask, data.end, epochs=epochs)
        else:
            state = PerceptronState.fresh(index, len(labels))  # the feature set "all": the workers hold the data
        model = dict(task=task, labels=labels, templates=data.lines, features=index, params=params,
                     dictionary=None, dataset_columns={})
        run_scale = {**scale, "workers": len(parts), "shards": data.shards,
                     "totals": (data.n_sentences, data.n_tokens)}
        fitted = run_trainer(model, None, state, epochs, dev, callback, progress, params["seed"], checkpoint_dir,
                      fingerprint, run_scale, dask_runner(client))
    fitted.model.provenance.update(n_sentences=data.n_sentences, n_tokens=data.n_tokens, read_on_workers=True)
    if dev is not None:
        fitted.model.calibration = calibrate(fitted.model, dev)
    return fitted
