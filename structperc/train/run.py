"""Training runs: the orchestration between the estimators and the rooms below them.

One run (`train_model`): instances from the pipeline, a fresh (or resumed) perceptron state over the
chosen feature set, the trainer with dev scoring, checkpoints and progress, and a `Model` out.
`fit` adds model selection on a held-out split of the training data (``dev_split``), and
`continue_training` grows a saved model with new data (continued training).
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import os
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from structperc.errors import InputError
from structperc.features.ambiguity import AmbiguityClasses, AmbiguityLearner
from structperc.features.clusters import DEFAULT_COLUMNS as CLUSTER_COLUMNS
from structperc.features.clusters import ClusterLearner, ClusterMap, read_paths
from structperc.features.dictionary import ColumnDictionary, DictionaryLearner, combined, fold_assignment, jackknifed
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.forking import forked_map
from structperc.features.gazetteer import FOLD_BLOCK, GAZ_COLUMN, STAGE_COLUMN, Gazetteer, GazetteerLearner
from structperc.features.index import FeatureIndex, Features
from structperc.features.instances import (
    Instances,
    corpus_digest,
    data_tags,
    extended_instances,
    hidden_tags,
    model_tags,
    split_tags,
    template_columns,
    training_instances,
)
from structperc.features.stacking import first_stage_lines, majority_types, reads_stage_column, tag_types
from structperc.features.tagdict import TagDictionary
from structperc.features.task import Task
from structperc.io.corpus import Corpus
from structperc.labels import LabelSet
from structperc.metrics import task_score
from structperc.model.schema import Model, masks
from structperc.model.weights import Weights
from structperc.predict import best_ids, calibrate, with_first_stage
from structperc.train.config import check_order, mixing_scale, order_of
from structperc.train.mixing import Shard
from structperc.train.perceptron import (
    UPDATE_DEFAULTS,
    EpochReport,
    PerceptronState,
    partial_sentences,
    train_perceptron,
)
from structperc.version import __version__

Callback = Callable[[EpochReport], None]
#: Receives (sentences done, sentences) during an epoch (a live progress bar).
Progress = Callable[[int, int], None]
#: Runs the shards' epochs of parameter mixing elsewhere (`structperc.train.mixing.train_mixed`'s
#: ``runner``; `structperc.dask.training.dask_runner` makes one for a Dask cluster).
Runner = Callable[[list[Shard], PerceptronState], Any]


@dataclass
class Fitted:
    """What a training run gives: the model and how the run went."""

    model: Model
    best_epoch: int
    history: list[EpochReport] = field(default_factory=list)
    dev_history: list[EpochReport] | None = None


def training_date() -> str:
    """UTC time of training, or ``SOURCE_DATE_EPOCH`` when set (the reproducible-builds convention:
    with it, the same command gives a byte-identical model file)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch and \
        epoch.isdigit() else datetime.datetime.now(datetime.timezone.utc)
    return when.isoformat(timespec="seconds")


def training_provenance(epochs: int, best_epoch: int, seed: int, dev_score: float | None, **more: Any) -> dict:
    """The provenance a trained model records (`Model.provenance`): the version and date
    (`training_date`), the epochs run and the best one, the seed, the best dev score, and ``more``."""
    return {"structperc_version": __version__, "date": training_date(), "epochs": epochs,
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


def compact_features(feats: Features) -> tuple[Features, np.ndarray]:
    """``feats`` with its state attribute ids renumbered densely, and the sorted original ids: the
    rows of the weights that scoring this data reads (see `train_perceptron`'s ``dev_rows``)."""
    known = feats.state >= 0
    rows, inverse = np.unique(feats.state[known], return_inverse=True)
    state = np.full(feats.state.shape, -1, dtype=np.int32)
    state[known] = inverse.ravel()
    return Features(state, feats.trans, feats.sent_ptr, feats.values), rows.astype(np.int64)



def dictionary_learner(corpus: Corpus, task: Task, template_lines: list[str], base: ColumnDictionary | None,
                       unknown_tag: str | None = "?", clusters: str | os.PathLike | ClusterMap | None = None) \
        -> DictionaryLearner | None:
    """The learner of a tagger's dictionaries, each when its templates read its columns (or, when
    training continues, when the model ``base`` has one): NER's gazetteer, the ambiguity classes
    (``amb``, ``lamb``), and word clusters from the ``clusters`` file (``clu*``); several at once are
    one `Learners`."""
    reads = template_columns(template_lines)
    old = dictionary_parts(base)
    learners: list[DictionaryLearner] = []
    gazetteer = next((p for p in old if isinstance(p, Gazetteer)), None)
    if gazetteer is not None or (base is None and task.gazetteer and GAZ_COLUMN in reads):
        learners.append(GazetteerLearner(corpus, task.token_column, task.tag_column, task.scheme, gazetteer,
                                         columns=reads))
    classes = next((p for p in old if isinstance(p, AmbiguityClasses)), None)
    if classes is not None or (base is None and set(AmbiguityClasses.columns) & reads):
        learners.append(AmbiguityLearner(corpus, task.token_column, task.tag_column, unknown_tag, classes))
    cluster_map = next((p for p in old if isinstance(p, ClusterMap)), None)
    if cluster_map is None and clusters is not None:
        cluster_map = clusters if isinstance(clusters, ClusterMap) else read_paths(clusters, word=task.token_column)
    elif clusters is None and base is None and set(CLUSTER_COLUMNS) & reads:
        raise InputError(f"the templates read word clusters ({', '.join(sorted(set(CLUSTER_COLUMNS) & reads))}): "
                         "give a clusters file (--clusters FILE; 'structperc clusters' makes one)")
    if cluster_map is not None:
        learners.append(ClusterLearner(cluster_map))
    return combined(learners)


def learnt_dictionary(corpus: Corpus, learner: DictionaryLearner | None, template_lines: list[str],
                      folds: int, seed: int, scale: dict | None = None) -> tuple[Corpus, ColumnDictionary | None]:
    """The dictionary ``learner`` learns from ``corpus``, and ``corpus`` with its columns jackknifed
    in when the templates read them (see `structperc.features.dictionary`); the folds in ``scale``'s
    ``workers`` processes (the same columns)."""
    if learner is None:
        return corpus, None
    if set(learner.columns) & template_columns(template_lines):
        return jackknifed(corpus, learner, folds, seed, int((scale or {}).get("workers") or 1))
    return corpus, learner.learn(np.arange(len(corpus)))



def learnt_tag_dictionary(corpus: Corpus, task: Task, params: dict) -> TagDictionary | None:
    """With ``params["tag_dictionary"]``, the tags seen with each frequent word of ``corpus`` (model
    scheme; unknown tags of partially labelled data are left out), applied when decoding."""
    if not params.get("tag_dictionary"):
        return None
    tags = model_tags(corpus, task)
    labels = sorted(set(tags) - {params.get("unknown_tag", "?")})
    ids = LabelSet(labels).encode(tags, unknown=-1)
    return TagDictionary.learn(corpus.columns[task.token_column], ids, labels)


def fit(corpus: Corpus, dev: Corpus | None, *, task: Task, template_lines: list[str], params: dict,
        dictionary: ColumnDictionary | None, dataset_columns: dict, callback: Callback | None = None,
        progress: Progress | None = None,
        checkpoint_dir: str | os.PathLike | None = None, resume: str | os.PathLike | None = None,
        release: bool = False, workers: int = 1, mixing: str | None = None, runner: Runner | None = None) -> Fitted:
    """Train on ``corpus``; with ``params["dev_split"]`` (and no ``dev``) first pick the number of
    epochs on a held-out fraction of it, then (``params["refit"]``) retrain on all of it. The
    temperature of the model's probabilities is fitted on ``dev`` or on that held-out fraction
    (`structperc.predict.calibrate`; not for a second-order model, which has no marginals).
    ``workers`` > 1 trains both by iterative parameter mixing (see `train_model`)."""
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
    fitted = train_model(corpus, dev, template_lines, epochs, task=task, params=params,
                         dictionary=dictionary, dataset_columns=dataset_columns, callback=callback,
                         progress=progress,
                         checkpoint_dir=checkpoint_dir, resume=resume, release=release, workers=workers,
                         mixing=mixing, runner=runner)
    fitted.dev_history = dev_history
    fitted.model.tag_dictionary = tag_dictionary
    if dev is not None and order_of(params) == 1:
        calibration = calibrate(fitted.model, dev)
    fitted.model.calibration = calibration
    return fitted


def train_model(corpus: Corpus, dev: Corpus | None, template_lines: list[str], epochs: int, *,
                task: Task, params: dict, dictionary: ColumnDictionary | None, dataset_columns: dict,
                callback: Callback | None, progress: Progress | None = None,
                checkpoint_dir: str | os.PathLike | None = None,
                resume: str | os.PathLike | None = None, release: bool = False, workers: int = 1,
                mixing: str | None = None, runner: Runner | None = None) -> Fitted:
    """Train once on ``corpus``. With ``release`` (a corpus read for this run alone) its token
    columns are dropped once the features are built: training needs only integer arrays, and the
    columns are a tenth of training's peak memory.

    ``workers`` > 1 trains by iterative parameter mixing (`structperc.train.mixing`) on that many
    shards, one worker process each, mixing ``mixing`` (default `~structperc.train.mixing.DEFAULT_MIXING`):
    a different model from one worker's, the same for the same seed and workers. Its checkpoints
    resume only with the same workers and mixing; the model's provenance records both. ``runner`` runs the
    shards' epochs elsewhere (`structperc.dask.training.dask_runner`: on a Dask cluster, the same model
    bit for bit)."""
    scale = mixing_scale(workers, mixing)
    if runner is not None and not scale:
        raise InputError("--dask trains by parameter mixing: give the number of shards with --workers N (N > 1)")
    check_order(params, bool(scale), resume is not None or checkpoint_dir is not None)
    unknown = params.get("unknown_tag", "?")  # models saved before partial labels lack it
    first = None
    if reads_stage_column(template_lines):
        if resume is not None or checkpoint_dir is not None:
            raise InputError("two-stage training does not save or resume checkpoints: leave out "
                             "--checkpoint-dir/--resume")
        stage: dict[str, Any] = dict(task=task, params=params, dictionary=dictionary,
                                     dataset_columns=dataset_columns, callback=None, progress=progress,
                                     mixing=mixing)
        if callback is not None:  # the first stage's epochs are reported, marked as its own
            stage["callback"] = lambda report: callback(dataclasses.replace(report, stage=1))
        first, corpus, dev = _first_stage(corpus, dev, first_stage_lines(template_lines), epochs, stage,
                                          workers, runner, release)
    index, lines, label_set, data = training_instances(corpus, task, template_lines, params.get("min_count", 1),
                                                       unknown, workers=workers)
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
        state = PerceptronState.fresh(index, len(labels), params.get("feature_set", "all"), data.feats.state,
                                      data.y, allowed=data.allowed)
    model = dict(task=task, labels=labels, templates=lines, features=index, params=params,
                 dictionary=dictionary, dataset_columns=dataset_columns)
    fitted = run_trainer(model, data, state, epochs, dev, callback, progress, params["seed"], checkpoint_dir,
                  fingerprint, scale, runner)
    fitted.model.provenance.update(n_sentences=n_sentences, n_tokens=n_tokens)
    fitted.model.stage1 = first
    return fitted


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



def continue_training(model: Model, corpus: Corpus, dev: Corpus | None, *, epochs: int,
                      callback: Callback | None = None, progress: Progress | None = None) -> Fitted:
    """Continue training ``model`` on ``corpus`` (already holding any dictionary columns).

    New attributes and new labels are added (existing ids are remapped, weights move with them).
    Training starts from the current (averaged) weights; the averaging restarts, so the result is
    the average of the weights after each instance of *this* training.
    """
    if not isinstance(model.features, FeatureIndex):
        raise InputError("continued training needs a model of templates over columns; refit a "
                         "StructuredPerceptron with fit()")
    if model.weights.order2 is not None:
        raise InputError("continued training is not available for second-order models (order=2): train a new one")
    task, old = model.task, model.weights
    label_set, data, state_map, trans_map = extended_instances(corpus, task, model.features,
                                                               model.labels,
                                                               model.params.get("unknown_tag", "?"))
    L = len(label_set)
    label_map = label_set.encode(model.labels).astype(np.int64)
    rows = np.append(label_map, L)  # the <bos> row moves to the new last row
    sw = old.sparse
    old_rows = np.asarray(state_map, np.int64)[sw.rows()]
    old_labels = label_map[sw.labels.astype(np.int64)]
    state = PerceptronState.fresh(model.features, L, model.params.get("feature_set", "all"), data.feats.state,
                                  data.y, allowed=data.allowed, extra=(old_rows, old_labels))
    state.W[state.pairs.positions(old_rows, old_labels)] = sw.values
    state.Wt[np.ix_(rows, label_map)] = old.trans
    state.Wc[np.ix_(trans_map, rows, label_map)] = old.cond[:-1]
    grown = dict(task=task, labels=label_set.labels, templates=model.templates, features=model.features,
                 params=model.params, dictionary=model.dictionary, dataset_columns=model.dataset_columns)
    fitted = run_trainer(grown, data, state, epochs, dev, callback, progress, model.params.get("seed", 0))
    fitted.model.provenance.update(continued_from=dict(model.provenance), n_sentences=len(corpus),
                                   n_tokens=corpus.n_tokens)
    return fitted





def _train_order2(data: Instances, state: PerceptronState, kwargs: dict[str, Any]) -> tuple[Weights, int]:
    """`train_perceptron`'s run with second-order transitions (`structperc.train.order2`): the same
    arguments but the checkpoint hook and the live progress, which it does not take; the dev score
    decodes with the epoch's second-order weights. The weights carry them as ``order2``."""
    from structperc.train.order2 import train_perceptron_order2

    kwargs = {k: v for k, v in kwargs.items() if k not in ("on_epoch_end", "progress")}
    score = kwargs.pop("dev_score")

    def dev_score(weights: Weights, T2: np.ndarray) -> float:
        weights.order2 = T2
        return score(weights)
    weights, T2, best_epoch = train_perceptron_order2(data.feats, data.y, state,
                                                      dev_score=None if score is None else dev_score, **kwargs)
    weights.order2 = T2
    return weights, best_epoch


def run_trainer(model: dict[str, Any], data: Instances | None, state: PerceptronState, epochs: int, dev: Corpus | None,
         callback: Callback | None, progress: Progress | None, seed: int,
         checkpoint_dir: str | os.PathLike | None = None,
         fingerprint: dict | None = None, scale: dict | None = None, runner: Runner | None = None) -> Fitted:
    """Run the trainer from ``state`` and make the `Model` of ``model``'s fields with the weights
    and provenance it gives (the one training loop of fit and continued training); with ``scale``
    (`mixing_scale`) the iterative parameter mixing trainer."""
    task, labels, features = model["task"], model["labels"], model["features"]
    mask, end = masks(labels, task)
    dev_score, dev_rows = None, None
    if dev is not None:
        # partially labelled dev data (a file, or a held-out slice of partial training data): an
        # unknown gold tag is taken to agree with the prediction, so only the known tags score (for
        # choosing the epoch; the number is optimistic, not a fully labelled score)
        hidden = hidden_tags(dev, task, model["params"].get("unknown_tag", "?"))
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
    history: list[EpochReport] = []

    def report(r: EpochReport) -> None:
        history.append(r)
        if callback is not None:
            callback(r)
    on_epoch_end: Callable[[PerceptronState], None] | None = None
    if checkpoint_dir is not None:
        from structperc.train.checkpoint import Checkpointer

        on_epoch_end = Checkpointer(checkpoint_dir, fingerprint or {})
    kwargs: dict[str, Any] = dict(mask=mask, end=end, epochs=epochs, seed=seed, dev_score=dev_score, dev_rows=dev_rows,
                  callback=report, on_epoch_end=on_epoch_end, consume=True, progress=progress,
                  allowed=data.allowed if data else None, values=data.feats.values if data else None,
                  **{k: model["params"][k] for k in UPDATE_DEFAULTS if k in model["params"]})
    if scale:
        from structperc.train.mixing import train_mixed

        if data is None:  # the workers hold the shards (`train_on_workers`)
            weights, best_epoch = train_mixed(None, None, state, shards=scale["shards"], totals=scale["totals"],
                                              mixing=scale["mixing"], runner=runner, **kwargs)
            scale = {k: v for k, v in scale.items() if k in ("workers", "mixing")}
        else:
            weights, best_epoch = train_mixed(data.feats, data.y, state, shards=scale["workers"],
                                              mixing=scale["mixing"], runner=runner, **kwargs)
    elif order_of(model["params"]) == 2:
        assert data is not None
        weights, best_epoch = _train_order2(data, state, kwargs)
    else:
        assert data is not None  # only mixing runs from shards the workers hold
        weights, best_epoch = train_perceptron(data.feats, data.y, state, **kwargs)
    provenance = training_provenance(epochs, best_epoch, seed, state.best_score, **(scale or {}))
    if data is not None and data.allowed is not None:
        provenance["partial_sentences"] = int(partial_sentences(data.allowed, data.y, data.feats.sent_ptr).sum())
    return Fitted(Model(weights=weights, provenance=provenance, **model), best_epoch, history)

