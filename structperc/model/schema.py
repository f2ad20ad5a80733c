"""The model schema: what a model file holds and how it is written and read — the one place.

A model is a directory holding ``model.zip`` (see `structperc.model.archive` for the container:
arrays + JSON, never pickle, written atomically, versioned). Saving, loading, ``structperc info``,
``structperc compress``, the segmenter and every face go through `write` and `read`; nothing else
knows the metadata's keys.

Metadata (format version 1; version 2 is a model with second-order transitions, see below)::

    labels           sorted label strings (ids are their positions)
    task, columns, tag_column, scheme, encoding, constrained, metric    the `Task`
    templates        template lines (the feature index's templates, in order)
    features         the feature index's vocabularies, radixes, frequent values (`FeatureIndex.state_dict`);
                     or, for a model of `structperc.sklearn` (whose features are the user's attribute
                     dicts, not templates), ``{"kind": "attributes", "names": [...]}`` with no templates
                     (`structperc.features.attributes.AttributeIndex`): a key the template models never
                     write, so their files load and save byte for byte as before
    shapes           {"state": [A, L], "cond": [AT, L + 1, L]}
    params           the estimator's constructor parameters, without the template (and without
                     ``order`` when it is 1: first-order models keep the bytes they had before it)
    provenance       version, date, epochs, best epoch, seed, dev score, training files …
    extra            the learnt dictionaries, one key each: {"gazetteer": …} (NER), {"cws": {train_words,
                     lexicon}}, {"ambiguity": {table, lower}} (POS), {"clusters": {kind, prefixes, paths}}
                     ({kind, prefixes, resource, paths: [distinct], stored: "arrays"} for a language
                     resource's, its words in the arrays ``extra.clusters.{words,counts}``), {"bands": …}
                     (frequency bands of a resource, likewise in ``extra.bands.*``);
                     the decoding tag dictionary: {"tag_dictionary": …} (`structperc.features.tagdict`)
    dataset_columns  the `datasets` column names a model was trained from
    calibration      (when fitted) {"temperature": τ, "source", "tokens", "nll": [before, after],
                     "ece": [before, after]}: p(path) ∝ exp(score / τ) (`structperc.decode.calibration`)

Arrays: ``keys_<i>`` (per-template sorted attribute keys; none in an attribute model),
``state_{indptr,indices,values}`` (the non-zero state pairs, row-compressed, float32),
``cond_{indptr,indices,values}`` (conditioned transitions, likewise) and ``trans`` ((L + 1) × L, the
last row ``<bos>``); a model trained with ``order=2`` adds ``trans2`` ((L + 1) × (L + 1) × L, float32,
`Weights.order2`) and is written as format version 2, which structperc releases that cannot decode
it refuse ("written by a newer structperc"); every other model is still written as version 1.

A two-stage model (`structperc.features.stacking`) nests its first stage: the first stage's metadata
under ``stage1`` and its arrays named ``stage1.<name>``, and is written as format version 3. A voting model
(`structperc.labels.voting`) nests its other members: their metadata listed under ``voters``, member i's arrays
named ``voter<i>.<name>`` (a member may have a first stage: ``voter<i>.stage1.<name>``), written as format
version 5.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from structperc.errors import InputError, ModelFormatError
from structperc.features.ambiguity import AmbiguityClasses
from structperc.features.attributes import AttributeIndex
from structperc.features.clusters import ClusterMap
from structperc.features.dictionary import ColumnDictionary, Dictionaries
from structperc.features.dictionary import parts as dictionary_parts
from structperc.features.gazetteer import Gazetteer
from structperc.features.index import FeatureIndex
from structperc.features.lexicon import SegmentationDictionary
from structperc.features.resources.bands import WordBands
from structperc.features.resources.case_evidence import CaseEvidence
from structperc.features.resources.lemmas import LemmaClasses
from structperc.features.resources.storage import beside_reading, read_together
from structperc.features.resources.wordlist import DictionaryWords
from structperc.features.task import Task, masks
from structperc.features.templates import parse_templates
from structperc.features.variety import AccessorVariety
from structperc.labels import LabelSet
from structperc.labels.schemes import SPAN_SCHEMES
from structperc.model.archive import (
    FORMAT_VERSION,
    VOTE_VERSION,
    archive_path,
    dense_rows,
    load_archive,
    pair_arrays,
    save_archive,
    sparse_rows,
    state_from_arrays,
)
from structperc.model.shipped import resolve
from structperc.model.weights import Weights

if TYPE_CHECKING:
    from structperc.features.tagdict import TagDictionary

_SCHEMES = SPAN_SCHEMES + ("none", "bmes", "bmes6")
#: The format version of first-order models (`write`: the oldest version that holds the model), of
#: second-order ones, and of two-stage ones (a nested first-stage model).
FIRST_ORDER_VERSION, SECOND_ORDER_VERSION, STAGE_VERSION = 1, 2, 3
#: The metadata key (and the array-name prefix) of a two-stage model's first stage.
STAGE_KEY = "stage1"
#: The metadata key of a voting model's other members; member i's arrays are named ``voter<i>.<name>``.
VOTERS_KEY = "voters"
#: Errors that mean "these bytes do not describe a model" while reading the metadata.
_DAMAGE = (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, InputError)


@dataclass
class Model:
    """A trained model as it is saved and loaded.

    Attributes
    ----------
    task : Task
        Columns, tag column, schemes, constraints and metric.
    labels : list of str
        Sorted; a label's id is its position.
    templates : list of str
        Template lines, in the order of ``features.templates`` (empty for an attribute model).
    features : FeatureIndex or AttributeIndex
        Templates over columns, or (`structperc.sklearn`) a vocabulary of the user's attributes.
    weights : Weights
        With the scheme's transition mask and end penalties.
    params : dict
        Constructor parameters of the estimator that trained it.
    provenance : dict
    dictionary : Gazetteer or SegmentationDictionary or None
        The learnt dictionary whose columns the templates may read.
    dataset_columns : dict
    calibration : dict or None
        The fitted temperature and how it was fitted (None: uncalibrated, τ = 1).
    tag_dictionary : TagDictionary or None
        Allowed labels per frequent word, applied when decoding (`structperc.features.tagdict`).
    """

    task: Task
    labels: list[str]
    templates: list[str]
    features: FeatureIndex | AttributeIndex
    weights: Weights
    params: dict = field(default_factory=dict)
    provenance: dict = field(default_factory=dict)
    dictionary: ColumnDictionary | None = None
    dataset_columns: dict = field(default_factory=dict)
    calibration: dict | None = None
    tag_dictionary: TagDictionary | None = None
    #: The format version of the file it was read from (models built in memory: the current one).
    format_version: int = FORMAT_VERSION
    #: The first stage of a two-stage model (`structperc.features.stacking`): the model whose predictions
    #: give the ``tmd`` column this one reads; None for a one-stage model.
    stage1: "Model | None" = None
    #: The other members of a voting model (`structperc.labels.voting`): taggers of the same spans learnt in
    #: other encodings, whose spans and this model's are voted on; empty for a single tagger.
    voters: "list[Model]" = field(default_factory=list)

    def parts(self) -> "list[Model]":
        """The model, its first stage, and a vote's other members with theirs: every set of weights it holds."""
        return [m for member in (self, *self.voters) for m in (member, member.stage1) if m is not None]

    @property
    def label_set(self) -> LabelSet:
        return LabelSet(self.labels)

    @property
    def attribute_model(self) -> bool:
        """Whether the features are an attribute vocabulary (`structperc.sklearn`), not templates:
        such a model tags python-crfsuite items, not token columns."""
        return isinstance(self.features, AttributeIndex)

    @property
    def temperature(self) -> float:
        """τ of p(path) ∝ exp(score / τ): the calibrated one, else 1."""
        return float(self.calibration["temperature"]) if self.calibration else 1.0

    @property
    def unknown_tag(self) -> str | None:
        """The marker of an unknown gold tag (partial labels) in its data; ``"?"`` for models saved before partial
        labels; None: no marker."""
        return self.params.get("unknown_tag", "?")


#: The key of each kind of learnt dictionary in ``extra`` (a model may hold several: `Dictionaries`).
_DICTIONARY_KEYS = (("gazetteer", Gazetteer), ("cws", SegmentationDictionary), ("ambiguity", AmbiguityClasses),
                    ("clusters", ClusterMap), ("variety", AccessorVariety), ("bands", WordBands),
                    ("lemmas", LemmaClasses), ("capitalisation", CaseEvidence), ("dictionary", DictionaryWords))


#: The dictionaries read like a language resource's table (its JSON, the word column, its arrays), in the order
#: a model lists them.
_RESOURCE_TABLES: tuple[tuple[str, Any], ...] = (("clusters", ClusterMap), ("bands", WordBands),
                                                 ("lemmas", LemmaClasses), ("capitalisation", CaseEvidence))


#: The array-name prefix of a dictionary's tables (a language resource's words: ``extra.clusters.words``).
_EXTRA_ARRAYS = "extra"


def _extra_json(model: Model, arrays: dict[str, np.ndarray]) -> dict:
    """The dictionaries' JSON; the tables a dictionary keeps as arrays (a resource's words) go into
    ``arrays`` as ``extra.<key>.<name>``."""
    extra: dict = {}
    for part in dictionary_parts(model.dictionary):
        key = next(k for k, kind in _DICTIONARY_KEYS if isinstance(part, kind))
        if key in extra:
            raise ValueError(f"a model holds one dictionary of each kind, not two {key!r}")
        extra[key] = part.to_json()
        tables = part.arrays() if hasattr(part, "arrays") else {}
        arrays.update({f"{_EXTRA_ARRAYS}.{key}.{name}": a for name, a in tables.items()})
    if model.tag_dictionary is not None:
        extra["tag_dictionary"] = model.tag_dictionary.to_json()
    return extra


def _extra_arrays(arrays: dict[str, np.ndarray], key: str) -> dict[str, np.ndarray]:
    prefix = f"{_EXTRA_ARRAYS}.{key}."
    return {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)}


def _tag_dictionary(extra: dict) -> TagDictionary | None:
    from structperc.features.tagdict import TagDictionary

    return TagDictionary.from_json(extra["tag_dictionary"]) if extra.get("tag_dictionary") else None


def _calibration(meta: dict) -> dict | None:
    calibration = meta.get("calibration")
    if calibration is None:
        return None
    if not isinstance(calibration, dict) or not float(calibration["temperature"]) > 0:
        raise ValueError("calibration has no positive temperature")
    return calibration


def _dictionary(extra: dict, task: Task, arrays: dict[str, np.ndarray], seen: _Built | None = None) \
        -> ColumnDictionary | None:
    """The dictionary whose columns a model's templates read (one, or `Dictionaries` of several); ``seen``: the
    same object as an equal one already read from the file."""
    if not isinstance(extra, dict):
        raise TypeError("extra is not a mapping")
    if seen is not None:
        described = ("dictionary", {k: extra[k] for k, _ in _DICTIONARY_KEYS if k in extra}, task.token_column)
        return seen.get(described, {k: a for k, a in arrays.items() if k.startswith(f"{_EXTRA_ARRAYS}.")},
                        lambda: _dictionary(extra, task, arrays))
    found: list[ColumnDictionary] = []
    if extra.get("gazetteer") is not None:
        found.append(Gazetteer.from_json(extra["gazetteer"], word=task.token_column))
    if isinstance(extra.get("cws"), dict):
        found.append(SegmentationDictionary.from_json(extra["cws"], _extra_arrays(arrays, "cws")))
    if isinstance(extra.get("ambiguity"), dict):
        found.append(AmbiguityClasses.from_json(extra["ambiguity"], word=task.token_column))
    for key, table in _RESOURCE_TABLES:  # a language resource's tables: JSON, the word column and arrays
        if isinstance(extra.get(key), dict):
            found.append(table.from_json(extra[key], word=task.token_column, arrays=_extra_arrays(arrays, key)))
    if isinstance(extra.get("dictionary"), dict):
        found.append(DictionaryWords.from_json(extra["dictionary"], _extra_arrays(arrays, "dictionary")))
    if isinstance(extra.get("variety"), dict):
        found.append(AccessorVariety.from_json(extra["variety"]))
    return None if not found else found[0] if len(found) == 1 else Dictionaries(found)


def write(path: str | os.PathLike, model: Model, *, deflate: bool = False) -> Path:
    """Save ``model`` atomically to directory ``path`` (or ``.zip`` file; ``deflate`` compresses its
    members); returns the archive's path."""
    meta, arrays = _content(model)
    version = VOTE_VERSION if model.voters else STAGE_VERSION if model.stage1 is not None else \
        SECOND_ORDER_VERSION if model.weights.order2 is not None else FIRST_ORDER_VERSION
    return save_archive(path, meta, arrays, version, deflate=deflate)


def _content(model: Model) -> tuple[dict, dict[str, np.ndarray]]:
    """The metadata and arrays of ``model``; a first stage's are nested under `STAGE_KEY`."""
    meta_f, arrays = model.features.state_dict()
    w = model.weights
    arrays.update({f"state_{part}": values for part, values in pair_arrays(w.sparse).items()})
    arrays.update({f"cond_{part}": values for part, values in sparse_rows(w.cond[:-1]).items()})
    arrays["trans"] = w.trans.astype(np.float32)
    if w.order2 is not None:
        arrays["trans2"] = np.asarray(w.order2, dtype=np.float32)
    params = {k: v for k, v in model.params.items() if not (k == "order" and v == 1)
              and not (k in ("two_stage", "vote") and not v)}
    t = model.task
    meta = {
        "labels": model.labels, "task": t.name, "columns": list(t.columns),
        "tag_column": t.tag_column, "scheme": t.scheme, "encoding": t.model_scheme,
        "constrained": t.constrained, "metric": t.metric, "templates": model.templates,
        "features": meta_f,
        "shapes": {"state": list(w.sparse.shape), "cond": list(w.cond[:-1].shape)},
        "params": params, "provenance": model.provenance,
        "extra": _extra_json(model, arrays), "dataset_columns": model.dataset_columns,
    }
    if model.calibration is not None:  # absent, not null, in uncalibrated models: their bytes stay as before
        meta["calibration"] = model.calibration
    if model.stage1 is not None:
        if model.stage1.stage1 is not None:
            raise ValueError("a first stage has no first stage of its own")
        meta[STAGE_KEY], inner = _content(model.stage1)
        arrays.update({f"{STAGE_KEY}.{name}": a for name, a in inner.items()})
    if model.voters:
        voters = []
        for i, voter in enumerate(model.voters):
            if voter.voters:
                raise ValueError("a voting model's member has no members of its own")
            voter_meta, inner = _content(voter)
            voters.append(voter_meta)
            arrays.update({f"voter{i}.{name}": a for name, a in inner.items()})
        meta[VOTERS_KEY] = voters
    return meta, arrays


def read(path: str | os.PathLike) -> Model:
    """Load the model at ``path``; damaged or foreign files raise `ModelFormatError` naming it."""
    meta, arrays = load_archive(path)
    try:
        with read_together():  # the resources' word tables inflate while the weights are read
            model = _model(meta, arrays, seen=_Built())
            for part in (model, model.stage1, *model.voters):  # and then the key lookups are built
                if part is not None and isinstance(part.features, FeatureIndex):
                    part.features.build_lookup_tables_beside(beside_reading)
            return model
    except _DAMAGE as exc:
        raise ModelFormatError(f"{path}: damaged structperc model ({type(exc).__name__}: {exc})") \
            from None


def _task(meta: dict) -> Task:
    if meta["scheme"] not in _SCHEMES or meta.get("encoding", meta["scheme"]) not in _SCHEMES:
        raise ValueError("unknown tag scheme")
    if not all(isinstance(c, str) for c in meta["columns"]) or not isinstance(meta["tag_column"], str):
        raise ValueError("column names must be strings")
    return Task(meta["task"], tuple(meta["columns"]), meta["tag_column"], "", meta["scheme"],
                meta["metric"], bool(meta["constrained"]), encoding=meta.get("encoding", meta["scheme"]))


class _Built:
    """The tables already built while reading one file, with what each was built from: a nested model (a first
    stage, a vote's member) whose table is described by equal metadata and the same arrays gets the same object.
    A vote's members read one dictionary and, stage for stage, one feature index (`structperc.model.archive`
    stores their arrays once): built once, they are read once, and tagging writes the dictionary's columns and
    the first stages' attribute ids once for all of them (`structperc.predict.decoding.with_columns`)."""

    def __init__(self) -> None:
        self._built: list[tuple[object, dict[str, np.ndarray], Any]] = []

    def get(self, description: object, arrays: dict[str, np.ndarray], make: Callable[[], Any]) -> Any:
        for known, known_arrays, built in self._built:
            if known == description and same_arrays(known_arrays, arrays):
                return built
        built = make()
        self._built.append((description, arrays, built))
        return built


def same_arrays(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> bool:
    """Whether two sets of named arrays are equal (the same objects when the file stores them once)."""
    return a.keys() == b.keys() and all(
        x is y or (x.dtype == y.dtype and x.shape == y.shape and np.array_equal(x, y))
        for x, y in ((a[k], b[k]) for k in a))


def _features(meta: dict, templates: list[str], arrays: dict[str, np.ndarray], seen: _Built) \
        -> FeatureIndex | AttributeIndex:
    """The feature index of a model: templates, or (``features.kind == "attributes"``) the attribute
    vocabulary of a `structperc.sklearn` model."""
    if isinstance(meta["features"], dict) and "kind" in meta["features"]:
        if meta["features"]["kind"] != AttributeIndex.KIND or templates:
            raise ValueError(f"unknown feature kind {meta['features']['kind']!r}")
        return AttributeIndex.from_state(meta["features"], arrays)
    read = {name: arrays[name] for name in FeatureIndex.array_names(len(templates)) if name in arrays}
    return seen.get(("features", templates, meta["features"]), read,
                    lambda: FeatureIndex.from_state(parse_templates(templates), meta["features"], arrays))


def _model(meta: dict, arrays: dict[str, np.ndarray], version: int | None = None, *,
           seen: _Built) -> Model:
    task = _task(meta)
    extra = meta.get("extra", {})
    dictionary = _dictionary(extra, task, arrays, seen)  # first: its tables inflate meanwhile
    templates = list(meta["templates"])
    features = _features(meta, templates, arrays, seen)
    labels = list(meta["labels"])
    if LabelSet(labels).labels != labels:
        raise ValueError("labels are not sorted and unique")
    L = len(labels)
    shapes = meta["shapes"]
    if shapes["state"] != [features.n_state_attributes, L] or \
            shapes["cond"] != [features.n_transition_attributes, L + 1, L]:
        raise ValueError("weight shapes do not match the feature tables")
    state = state_from_arrays({k: arrays[f"state_{k}"] for k in ("indptr", "indices", "values")},
                              tuple(shapes["state"]))
    cond = dense_rows({k: arrays[f"cond_{k}"] for k in ("indptr", "indices", "values")},
                      tuple(shapes["cond"]), zero_rows=1)
    trans = np.asarray(arrays["trans"], dtype=np.float32)
    if trans.shape != (L + 1, L):
        raise ValueError("transition weights have the wrong shape")
    order2 = np.asarray(arrays["trans2"], dtype=np.float32) if "trans2" in arrays else None
    if order2 is not None and order2.shape != (L + 1, L + 1, L):
        raise ValueError("second-order transition weights have the wrong shape")
    for name in ("state_values", "cond_values", "trans", "trans2"):  # a NaN would tag every token alike, silently
        if name in arrays and not np.isfinite(arrays[name]).all():
            raise ValueError(f"{name} holds weights that are not finite numbers")
    mask, end = masks(labels, task)
    provenance = meta["provenance"]
    if not isinstance(provenance, dict):
        raise TypeError("provenance is not a mapping")
    version = int(meta["format_version"]) if version is None else version
    stage1 = None
    if meta.get(STAGE_KEY) is not None:
        prefix = f"{STAGE_KEY}."
        stage1 = _model(meta[STAGE_KEY], {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)},
                        version, seen=seen)
        if stage1.stage1 is not None:
            raise ValueError("a first stage has no first stage of its own")
    voters = []
    for i, voter_meta in enumerate(meta.get(VOTERS_KEY) or []):
        prefix = f"voter{i}."
        voter = _model(voter_meta, {k[len(prefix):]: a for k, a in arrays.items() if k.startswith(prefix)}, version,
                       seen=seen)
        same = (voter.task.columns, voter.task.tag_column, voter.task.scheme, voter.task.metric)
        if voter.voters or same != (task.columns, task.tag_column, task.scheme, task.metric):
            raise ValueError(f"member {i + 1} of the vote is not a tagger of the same data")
        voters.append(voter)
    return Model(task, labels, templates, features, Weights(state.padded().frozen(), trans, cond, mask, end, order2),
                 dict(meta["params"]), provenance, dictionary,
                 dict(meta.get("dataset_columns", {})), _calibration(meta), _tag_dictionary(extra),
                 version, stage1, voters)


def to_bytes(model: Model) -> bytes:
    """The bytes of ``model``'s archive (what `write` would put in ``model.zip``): how an estimator
    pickles its model without pickling arrays (`structperc.sklearn`)."""
    with tempfile.TemporaryDirectory(prefix="structperc-model-") as tmp:
        return write(tmp, model).read_bytes()


def from_bytes(data: bytes) -> Model:
    """The model whose archive bytes are ``data`` (`to_bytes`); damage raises `ModelFormatError`."""
    with tempfile.TemporaryDirectory(prefix="structperc-model-") as tmp:
        target = archive_path(tmp)
        target.write_bytes(data)
        try:
            return read(tmp)
        except ModelFormatError as exc:  # name the bytes, not a temporary file
            raise ModelFormatError(str(exc).replace(str(target), "model bytes").replace(tmp, "model bytes")) \
                from None


def file_size(path: str | os.PathLike) -> int:
    """Bytes of the archive of the model at ``path`` (or of the shipped model it names)."""
    return archive_path(resolve(path)).stat().st_size


def is_deflated(path: str | os.PathLike) -> bool:
    """Whether the archive of the model at ``path`` (or the shipped model it names) holds deflated members, as the
    shipped models do: a model written from it (`structperc compress`) keeps that choice, never growing."""
    with zipfile.ZipFile(archive_path(resolve(path))) as zf:
        return any(info.compress_type == zipfile.ZIP_DEFLATED for info in zf.infolist())
