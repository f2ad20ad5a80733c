"""Training runs: the orchestration between the estimators and the rooms below them.

One run (`train_model`): instances from the pipeline, a fresh (or resumed) perceptron state over the
chosen feature set, the trainer with dev scoring, checkpoints and progress, and a `Model` out.
`run_trainer` makes the run's one `structperc.train.trainer.TrainOptions` and calls the trainer they
choose once (`structperc.train.trainer.trainer_for`: the perceptron of Collins 2002 with its update
rule, its second-order twin, or iterative parameter mixing); no trainer's arguments are plumbed here.
`fit` adds model selection on a held-out split of the training data (``dev_split``), and
`continue_training` grows a saved model with new data (continued training).
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from structperc.errors import InputError
from structperc.features.dictionary import ColumnDictionary, fold_assignment
from structperc.features.forking import forked_map
from structperc.features.gazetteer import FOLD_BLOCK, STAGE_COLUMN
from structperc.features.index import FeatureIndex, compact_features
from structperc.features.instances import (
    Instances,
    SharedFeatures,
    check_span_tags,
    corpus_digest,
    data_tags,
    extended_instances,
    hidden_tags,
    split_tags,
    training_instances,
)
from structperc.features.stacking import first_stage_lines, majority_types, reads_stage_column, tag_types
from structperc.features.task import Task, masks
from structperc.io.corpus import Corpus
from structperc.metrics import task_score
from structperc.model.dates import record_date
from structperc.model.schema import Model
from structperc.model.weights import Weights
from structperc.predict import best_ids, calibrate, with_first_stage
from structperc.train.config import mixing_scale, order_of, validate
from structperc.train.dictionaries import dictionary_learner as dictionary_learner
from structperc.train.dictionaries import learnt_dictionary as learnt_dictionary
from structperc.train.dictionaries import learnt_tag_dictionary
from structperc.train.ensemble import average_weights
from structperc.train.heap import release_free_memory
from structperc.train.mixing import Shard
from structperc.train.perceptron import partial_sentences
from structperc.train.reports import EpochReport
from structperc.train.state import PerceptronState
from structperc.train.trainer import Mixing, TrainOptions, Update, trainer_for
from structperc.version import __version__

Callback = Callable[[EpochReport], None]
#: Receives (sentences done, sentences) during an epoch (a live progress bar).
Progress = Callable[[int, int], None]
#: Runs the shards' epochs of parameter mixing elsewhere (`structperc.train.trainer.Mixing`'s
#: ``runner``; `structperc.dask.training.dask_runner` makes one for a Dask cluster).
Runner = Callable[[list[Shard], PerceptronState], Any]


@dataclass
class Fitted:
    """What a training run gives: the model and how the run went."""

    model: Model
    best_epoch: int
    history: list[EpochReport] = field(default_factory=list)
    dev_history: list[EpochReport] | None = None


def training_provenance(epochs: int, best_epoch: int, seed: int, dev_score: float | None, **more: Any) -> dict:
    """The provenance a trained model records (`Model.provenance`): the version and date
    (`structperc.model.dates.record_date`), the epochs run and the best one, the seed, the best dev score, and
    ``more``."""
    return {"structperc_version": __version__, "date": record_date(), "epochs": epochs,
            "best_epoch": best_epoch, "seed": seed, "dev_score": dev_score, **more}


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sources(X: Any, corpus: Corpus) -> list[dict]:
    """Provenance of training data: a file's name and sha256, else the corpus's source."""
    if isinstance(X, (str, os.PathLike)) and os.path.isfile(X):
        return [{"name": os.path.basename(str(X)), "sha256": file_sha256(X)}]
    return [{"name": corpus.source}]



def fit(corpus: Corpus, dev: Corpus | None, *, task: Task, template_lines: list[str], params: dict,
        dictionary: ColumnDictionary | None, dataset_columns: dict, callback: Callback | None = None,
        progress: Progress | None = None,
        checkpoint_dir: str | os.PathLike | None = None, resume: str | os.PathLike | None = None,
        release: bool = False, workers: int = 1, mixing: str | None = None, runner: Runner | None = None,
        seeds: Sequence[int] | None = None) -> Fitted:
    """Train on ``corpus``; with ``params["dev_split"]`` (and no ``dev``) first pick the number of
    epochs on a held-out fraction of it, then (``params["refit"]``) retrain on all of it. The
    temperature of the model's probabilities is fitted on ``dev`` or on that held-out fraction
    (`structperc.predict.calibrate`; not for a second-order model, which has no marginals).
    ``workers`` > 1 trains both by iterative parameter mixing (see `train_model`). ``seeds`` (the first is
    ``params["seed"]``): the model trained on all of ``corpus`` is the mean of one member per seed
    (`train_model`); the epochs are picked by the first seed alone. ``params["vote"]`` (encodings): after the
    model, one more member per encoding, trained on all of ``corpus`` for as many epochs, whose spans and the
    model's are voted on when it tags (`structperc.labels.voting`; the model's ``voters``)."""
    epochs = task.epochs
    dev_history, calibration = None, None
    if dev is None and params.get("dev_split"):
        order = np.random.default_rng(params["seed"]).permutation(len(corpus))
        n_dev = max(1, int(round(params["dev_split"] * len(corpus))))
        held, kept = np.sort(order[:n_dev]), np.sort(order[n_dev:])
        if not len(kept):
            raise InputError(f"dev_split={params['dev_split']} holds out all {len(corpus)} training "
                             "sentence(s): nothing is left to train on", corpus.source)
        # the split's corpora are copies made for the probe alone: released once featurized
        held_out, kept_out = corpus.select(held), corpus.select(kept)
        tag_dictionary = learnt_tag_dictionary(kept_out, task, params)
        probe = train_model(kept_out, held_out, template_lines, epochs, task=task,
                            params=params, dictionary=dictionary, dataset_columns=dataset_columns,
                            callback=callback, progress=progress, release=True, workers=workers, mixing=mixing,
                            runner=runner)
        probe.dev_history = dev_history = probe.history
        # τ is fitted on the probe's held-out slice: the refit model has seen those sentences
        probe.model.tag_dictionary = tag_dictionary
        if order_of(params) == 1:  # marginals (and so the temperature) are first-order only
            probe.model.calibration = calibration = calibrate(probe.model, held_out)
            calibration["source"] = f"{corpus.source} (the held-out {params['dev_split']:g})"
        if not params.get("refit", True):
            return probe
        epochs = probe.best_epoch
        del probe, held_out, kept_out  # the probe's weights are as large as the refit's: not both at once
    tag_dictionary = learnt_tag_dictionary(corpus, task, params)  # before training releases the tokens
    vote = list(params.get("vote") or [])
    voter_tasks = [dataclasses.replace(task, encoding=e) for e in vote]
    voter_dictionaries = [learnt_tag_dictionary(corpus, t, params) for t in voter_tasks]
    # the members read the same columns through the same lines, stage for stage: one index and one set of
    # attribute ids for all of them, only the labels made per encoding (`training_instances`'s ``shared``)
    shared: SharedFeatures | None = {} if vote else None
    fitted = train_model(corpus, dev, template_lines, epochs, task=task, params=params,
                         dictionary=dictionary, dataset_columns=dataset_columns, callback=callback,
                         progress=progress,
                         checkpoint_dir=checkpoint_dir, resume=resume, release=release and not vote, workers=workers,
                         mixing=mixing, runner=runner, seeds=seeds, shared=shared)
    fitted.dev_history = dev_history
    fitted.model.tag_dictionary = tag_dictionary
    for i, (voter_task, voter_dictionary) in enumerate(zip(voter_tasks, voter_dictionaries)):
        # the vote's other members (`structperc.labels.voting`): the same data, template and options, another
        # encoding, as many epochs as the first member trained (its pick on the held-out data)
        voter = train_model(corpus, None, template_lines, fitted.best_epoch, task=voter_task,
                            params={**params, "vote": None, "encoding": voter_task.encoding}, dictionary=dictionary,
                            dataset_columns=dataset_columns, callback=callback, progress=progress,
                            release=release and i == len(vote) - 1, workers=workers, mixing=mixing, runner=runner,
                            seeds=seeds, shared=shared).model
        voter.tag_dictionary = voter_dictionary
        fitted.model.voters.append(voter)
    if dev is not None and order_of(params) == 1:
        calibration = calibrate(fitted.model, dev)
    fitted.model.calibration = calibration
    return fitted


def train_model(corpus: Corpus, dev: Corpus | None, template_lines: list[str], epochs: int, *,
                task: Task, params: dict, dictionary: ColumnDictionary | None, dataset_columns: dict,
                callback: Callback | None, progress: Progress | None = None,
                checkpoint_dir: str | os.PathLike | None = None,
                resume: str | os.PathLike | None = None, release: bool = False, workers: int = 1,
                mixing: str | None = None, runner: Runner | None = None, seeds: Sequence[int] | None = None,
                shared: SharedFeatures | None = None) -> Fitted:
    """Train once on ``corpus``. With ``release`` (a corpus read for this run alone) its token
    columns are dropped once the features are built: training needs only integer arrays, and the
    columns are a tenth of training's peak memory.

    ``workers`` > 1 trains by iterative parameter mixing (`structperc.train.mixing`) on that many
    shards, one worker process each, mixing ``mixing`` (default `~structperc.train.mixing.DEFAULT_MIXING`):
    a different model from one worker's, the same for the same seed and workers. Its checkpoints
    resume only with the same workers and mixing; the model's provenance records both. ``runner`` runs the
    shards' epochs elsewhere (`structperc.dask.training.dask_runner`: on a Dask cluster, the same model
    bit for bit).

    ``seeds`` (the first is ``params["seed"]``): seed averaging. After the first member, one more per seed
    trains on the same instances from a fresh state, for as many epochs as the first one's (its best on
    ``dev``), and the model's weights are the members' mean (`seed_members`); a two-stage model's first stage is
    averaged the same way, and so is a second-order model's ``order2`` tensor.

    ``shared`` (a vote's members, `fit`): the index and attribute ids of each stage are made by the first member
    and read by the others (`structperc.features.instances.training_instances`)."""
    if seeds is not None and (not seeds or seeds[0] != params["seed"]):
        raise ValueError(f"the first of the seeds {list(seeds)} must be the run's seed {params['seed']}")
    # the rules of what one run can combine, as every face checks them (`structperc.train.options`)
    validate({"order": order_of(params), "workers": workers, "mixing": mixing,
              "dask": None if runner is None else "a runner", "checkpoint_dir": checkpoint_dir, "resume": resume},
             lines=template_lines)
    scale = mixing_scale(workers, mixing)
    unknown = params.get("unknown_tag", "?")  # models saved before partial labels lack it
    first = None
    if reads_stage_column(template_lines):
        stage: dict[str, Any] = dict(task=task, params=params, dictionary=dictionary,
                                     dataset_columns=dataset_columns, callback=None, progress=progress,
                                     mixing=mixing, seeds=seeds, shared=shared)
        if callback is not None:  # the first stage's epochs are reported, marked as its own
            stage["callback"] = lambda report: callback(dataclasses.replace(report, stage=1))
        first, corpus, dev = _first_stage(corpus, dev, first_stage_lines(template_lines), epochs, stage,
                                          workers, runner, release)
    index, lines, label_set, data = training_instances(corpus, task, template_lines, params.get("min_count", 1),
                                                       unknown, workers=workers, shared=shared)
    labels = label_set.labels
    mask, end = masks(labels, task)
    fingerprint: dict = {}
    if resume is not None or checkpoint_dir is not None:  # hashing the corpus costs time and memory
        from structperc.train.checkpoint import checkpoint_fingerprint

        fingerprint = checkpoint_fingerprint(template_lines, labels, index, task, params, corpus_digest(corpus),
                                             scale, partial=data.partial)
    n_sentences, n_tokens = len(corpus), corpus.n_tokens
    if release:
        corpus.release_columns()
    if resume is not None:
        from structperc.train.checkpoint import load_checkpoint

        state = load_checkpoint(resume, fingerprint, mask, end, epochs=epochs)
    else:
        state = fresh_state(index, len(labels), params, data)
    model = dict(task=task, labels=labels, templates=lines, features=index, params=params,
                 dictionary=dictionary, dataset_columns=dataset_columns)
    fitted = run_trainer(model, data, state, epochs, dev, callback, progress, params["seed"], checkpoint_dir,
                  fingerprint, scale, runner)
    del state
    if seeds is not None and len(seeds) > 1:
        members = seed_members(model, data, seeds[1:], [fitted.best_epoch], callback, progress)
        fitted.model.weights = average_weights(itertools.chain([fitted.model.weights], (w for _, _, w in members)))
    fitted.model.provenance.update(n_sentences=n_sentences, n_tokens=n_tokens)
    fitted.model.stage1 = first
    return fitted


def fresh_state(index: FeatureIndex, n_labels: int, params: dict, data: Instances,
                extra: tuple[np.ndarray, np.ndarray] | None = None) -> PerceptronState:
    """The zero state a run trains from: over ``index``'s attributes and ``n_labels`` labels, on the feature
    set ``params`` name (`structperc.train.state.PerceptronState.fresh`) of the training ``data``."""
    return PerceptronState.fresh(index, n_labels, params.get("feature_set", "all"), data.feats.state, data.y,
                                 allowed=data.allowed, extra=extra)


def seed_members(model: dict[str, Any], data: Instances, seeds: Sequence[int], epochs: Sequence[int],
                 callback: Callback | None, progress: Progress | None) -> Iterator[tuple[int, int, Weights]]:
    """``(seed, epoch, averaged weights)`` of one member per seed of ``seeds``, after each of ``epochs``: each
    member trains on ``data`` by the run's own trainer (`run_trainer`: its order and update rule) from a fresh
    state, only the order of the sentences changed, one run continued epoch to epoch (the weights after epoch
    e are those of an e-epoch run); after its last epoch its state is averaged in place and freed, so a mean
    holds one sum (`structperc.ensemble`: averaging linear scorers averages their scores, the ensemble of the
    members at the size and speed of one)."""
    order = sorted(epochs)
    for seed in seeds:
        state = fresh_state(model["features"], len(model["labels"]), model["params"], data)
        for e in order:
            last = e == order[-1]
            weights = run_trainer(model, data, state, e, None, callback, progress, seed, consume=last).model.weights
            if last:
                del state
            yield seed, e, weights
            del weights  # the caller keeps what it needs


def _first_stage(corpus: Corpus, dev: Corpus | None, lines: list[str], epochs: int, stage: dict[str, Any],
                 workers: int, runner: Runner | None, release: bool) -> tuple[Model, Corpus, Corpus | None]:
    """A two-stage run's first stage (``lines``: the template without the ``tmd`` column, trained like
    the second), and the training and dev corpora with the column the second stage reads: the dev
    data's from the first stage's predictions, as at tagging time; the training data's from
    `_stage_types`. With ``release`` the given corpus drops its columns (the new one holds them)."""
    unknown = stage["params"].get("unknown_tag", "?")
    first = train_model(corpus, dev, lines, epochs, workers=workers, runner=runner, **stage).model
    dev = with_first_stage(first, dev) if dev is not None else None
    types = _stage_types(corpus, stage["task"], lines, epochs, stage, workers)
    out = corpus.with_column(STAGE_COLUMN, majority_types(corpus, stage["task"].token_column, types, ignore=unknown))
    if release:
        corpus.release_columns()
    return first, out, dev


#: Jackknife folds (of `FOLD_BLOCK`-sentence blocks) whose first-stage models predict the types that
#: give the training sentences their ``tmd`` column; 0: the gold types instead (`_stage_types`). Gold,
#: chosen on the development files (``scripts/bench_two_stage.py --stage-folds 0|2``, seeds 0-2):
#: esp.testa +0.66 F1 over one stage with gold against +0.50 with 2 folds, ned.testa +0.16 against
#: +0.12, at training ×2.1 against ×2.4.
STAGE_FOLDS = 0


def _stage_types(corpus: Corpus, task: Task, lines: list[str], epochs: int, stage: dict[str, Any],
                 workers: int) -> list[str]:
    """The type of every training token that the second stage's ``tmd`` column summarises
    (`structperc.features.stacking`): with `STAGE_FOLDS` folds, what a first stage trained on the
    other folds predicts (jackknifed: the column is as noisy as at tagging time), the folds on
    ``workers`` forked processes; with 0, the gold tags."""
    span = task.metric == "span"
    k, fold_of = fold_assignment(len(corpus), STAGE_FOLDS, stage["params"]["seed"], FOLD_BLOCK)
    if k < 2:  # no folds asked (0 gives one), or one block: nothing to jackknife with
        return tag_types(list(corpus.columns[task.tag_column]), span)

    def predicted(fold: int) -> list[str]:
        rows = corpus.select(np.flatnonzero(fold_of == fold))
        model = train_model(corpus.select(np.flatnonzero(fold_of != fold)), None, lines, epochs,
                            **{**stage, "callback": None, "progress": None}).model
        return data_tags(best_ids(model, rows), rows.sent_ptr, model.labels, task)

    types = np.empty(corpus.n_tokens, dtype=object)
    token_fold = np.repeat(fold_of, np.diff(corpus.sent_ptr))
    for fold, tags in enumerate(forked_map(predicted, list(range(k)), workers)):
        types[token_fold == fold] = tag_types(tags, span)
    return types.tolist()


def trained_fields(model: Model, labels: list[str] | None = None) -> dict[str, Any]:
    """The fields of a trained ``model`` that a run trains further from (`run_trainer`'s ``model``): all but
    what training makes (weights, provenance) or fits afterwards (calibration, tag dictionary, stages);
    ``labels`` replaces its labels (continued training's grown set)."""
    return dict(task=model.task, labels=model.labels if labels is None else labels, templates=model.templates,
                features=model.features, params=model.params, dictionary=model.dictionary,
                dataset_columns=model.dataset_columns)


def continue_training(model: Model, corpus: Corpus, dev: Corpus | None, *, epochs: int,
                      callback: Callback | None = None, progress: Progress | None = None) -> Fitted:
    """Continue training ``model`` on ``corpus`` (already holding any dictionary columns).

    New attributes and new labels are added (existing ids are remapped, weights move with them).
    Training starts from the current (averaged) weights; the averaging restarts, so the result is
    the average of the weights after each instance of *this* training. With ``dev``, the new weights'
    temperature is fitted on it; without, the model is uncalibrated (the old temperature was the old weights').
    """
    if not isinstance(model.features, FeatureIndex):
        raise InputError("continued training needs a model of templates over columns; refit a "
                         "StructuredPerceptron with fit()")
    validate({"order": 2 if model.weights.order2 is not None else 1, "init_model": "the model"})
    task, old = model.task, model.weights
    check_span_tags(corpus, task, model.unknown_tag)  # as a new model's data: no label 'UNK'
    label_set, data, state_map, trans_map = extended_instances(corpus, task, model.features, model.labels,
                                                               model.unknown_tag)
    L = len(label_set)
    label_map = label_set.encode(model.labels).astype(np.int64)
    rows = np.append(label_map, L)  # the <bos> row moves to the new last row
    sw = old.sparse
    old_rows = np.asarray(state_map, np.int64)[sw.rows()]
    old_labels = label_map[sw.labels.astype(np.int64)]
    state = fresh_state(model.features, L, model.params, data, extra=(old_rows, old_labels))
    state.W[state.pairs.positions(old_rows, old_labels)] = sw.values
    state.Wt[np.ix_(rows, label_map)] = old.trans
    state.Wc[np.ix_(trans_map, rows, label_map)] = old.cond[:-1]
    fitted = run_trainer(trained_fields(model, label_set.labels), data, state, epochs, dev, callback, progress,
                         model.params.get("seed", 0))
    fitted.model.provenance.update(continued_from=dict(model.provenance), n_sentences=len(corpus),
                                   n_tokens=corpus.n_tokens)
    if dev is not None:  # as a new model's run: the temperature of the new weights (the old one fits the old)
        fitted.model.calibration = calibrate(fitted.model, dev)
    return fitted


def dev_scorer(dev: Corpus, features: Any, labels: list[str], task: Task,
               unknown: str | None) -> tuple[Callable[[Weights], float], np.ndarray]:
    """The dev scoring hook of a run (`structperc.train.trainer.TrainOptions.dev_score`) and the state
    attribute rows it reads (``dev_rows``): ``dev`` featurized once, compacted to the rows it uses.

    Partially labelled dev data (a file, or a held-out slice of partial training data): an unknown
    gold tag is taken to agree with the prediction, so only the known tags score (for choosing the
    epoch; the number is optimistic, not a fully labelled score)."""
    hidden = hidden_tags(dev, task, unknown)
    if hidden is not None and hidden.all():
        raise InputError("every dev tag is unknown: nothing to score the epochs on", dev.source)
    dev_feats, dev_rows = compact_features(features.transform(dev))
    features.drop_lookup_tables()  # dense key tables: tens of MB that training never reads
    gold = list(dev.sentences(task.tag_column))
    unknown_at = [] if hidden is None else np.flatnonzero(hidden).tolist()

    def dev_score(weights: Weights) -> float:
        from structperc.decode.decoder import predict

        flat = data_tags(predict(weights, dev_feats), dev.sent_ptr, labels, task)
        if not unknown_at:
            return task_score(task, gold, split_tags(flat, dev.sent_ptr))
        filled = list(dev.columns[task.tag_column])
        for i in unknown_at:
            filled[i] = flat[i]
        return task_score(task, split_tags(filled, dev.sent_ptr), split_tags(flat, dev.sent_ptr))
    return dev_score, dev_rows


def run_trainer(model: dict[str, Any], data: Instances | None, state: PerceptronState, epochs: int, dev: Corpus | None,
                callback: Callback | None, progress: Progress | None, seed: int,
                checkpoint_dir: str | os.PathLike | None = None,
                fingerprint: dict | None = None, scale: dict | None = None, runner: Runner | None = None,
                consume: bool = True) -> Fitted:
    """Run the trainer from ``state`` and make the `Model` of ``model``'s fields with the weights
    and provenance it gives (the one training loop of fit, continued training and seed-averaging
    members). The trainer is the one the options choose (`structperc.train.trainer.trainer_for`): with
    ``scale`` (`mixing_scale`) iterative parameter mixing (on the shards the workers hold when ``data``
    is None), else the perceptron of the parameters' order and update rule. ``consume`` (the default):
    the state is averaged in place and its sums freed; False keeps it, to train on to a later epoch
    (`seed_members`)."""
    task, labels, params = model["task"], model["labels"], model["params"]
    mask, end = masks(labels, task)
    dev_score, dev_rows = dev_scorer(dev, model["features"], labels, task, params.get("unknown_tag", "?")) \
        if dev is not None else (None, None)
    release_free_memory()  # featurization's freed temporaries, before the epochs touch the state
    history: list[EpochReport] = []

    def report(r: EpochReport) -> None:
        history.append(r)
        if callback is not None:
            callback(r)
    on_epoch_end: Callable[[PerceptronState], None] | None = None
    if checkpoint_dir is not None:
        from structperc.train.checkpoint import Checkpointer

        on_epoch_end = Checkpointer(checkpoint_dir, fingerprint or {})
    options = TrainOptions(mask, end, epochs=epochs, seed=seed, update=Update.of(params), order=order_of(params),
                           mixing=_mixing(scale, data is None, runner), dev_score=dev_score, dev_rows=dev_rows,
                           callback=report, on_epoch_end=on_epoch_end, consume=consume, progress=progress)
    weights, best_epoch = trainer_for(options).train(data, state, options)
    if scale and data is None:  # the shards and totals of the workers are no provenance
        scale = {k: v for k, v in scale.items() if k in ("workers", "mixing")}
    provenance = training_provenance(epochs, best_epoch, seed, state.best_score, **(scale or {}))
    if data is not None and data.allowed is not None:
        provenance["partial_sentences"] = int(partial_sentences(data.allowed, data.y, data.feats.sent_ptr).sum())
    return Fitted(Model(weights=weights, provenance=provenance, **model), best_epoch, history)


def _mixing(scale: dict | None, held_elsewhere: bool, runner: Runner | None) -> Mixing | None:
    """The parameter mixing options of ``scale`` (`mixing_scale`; None: one trainer): the workers'
    count as the shards, or with the shards ``held_elsewhere`` (`train_on_workers`) theirs and the totals."""
    if not scale:
        return None
    if held_elsewhere:
        return Mixing(scale["shards"], scale["mixing"], runner=runner, totals=scale["totals"])
    return Mixing(scale["workers"], scale["mixing"], runner=runner)
