"""`datasets.Dataset` in and out: token and tag columns by name, `ClassLabel` tags decoded to names.

``datasets`` is imported only here and only when a dataset is used (it costs ~1 s of start-up).
"""
from __future__ import annotations

import contextlib
import os
import socket
import threading
from typing import Any, Iterator, Mapping
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from structperc.errors import InputError
from structperc.io.corpus import Corpus


def _names(dataset: Any, column: str):
    """Label names of a ``Sequence(ClassLabel)`` column, or None for string columns."""
    feature = dataset.features[column]
    inner = getattr(feature, "feature", None)
    names = getattr(inner, "names", None)
    return list(names) if names is not None else None


def _column(dataset: Any, column: str) -> list[list[str]]:
    if column not in dataset.column_names:
        raise InputError(f"dataset has no column {column!r} (columns: {', '.join(dataset.column_names)})")
    values = dataset[column]
    names = _names(dataset, column)
    if names is not None:
        return [[names[i] for i in sent] for sent in values]
    return [[str(v) for v in sent] for sent in values]


def corpus_from_dataset(dataset: Any, *, token_column: str, tokens: str = "tokens",
                        tags: str | None = None, tag_column: str = "tag",
                        features: Mapping[str, str] | None = None) -> Corpus:
    """A `Corpus` from a `datasets.Dataset`.

    Parameters
    ----------
    token_column, tag_column
        Names the corpus columns get (what templates and the model use, e.g. ``word``, ``ner``).
    tokens, tags
        Dataset columns holding the tokens and the tags (tags may be `ClassLabel` ids).
    features
        Extra corpus columns from dataset columns, e.g. ``{"pos": "pos_tags"}``.
    """
    extra = {name: _column(dataset, col) for name, col in (features or {}).items()}
    gold = _column(dataset, tags) if tags is not None else None
    name = getattr(dataset, "info", None) and dataset.info.dataset_name or ""
    return Corpus.from_sentences(_column(dataset, tokens), gold, extra=extra, token_column=token_column,
                                 tag_column=tag_column, source=f"<dataset {name}>")


def with_predictions(dataset: Any, predictions: list[list[str]], column: str, tags: str | None) -> Any:
    """``dataset`` plus a column of predicted tags (as `ClassLabel` ids when ``tags`` is a ClassLabel
    column whose names cover every prediction, else as strings)."""
    names = _names(dataset, tags) if tags is not None and tags in dataset.column_names else None
    if names is not None and all(p in names for sent in predictions for p in sent):
        index = {n: i for i, n in enumerate(names)}
        values: list = [[index[p] for p in sent] for sent in predictions]
        return dataset.add_column(column, values, feature=dataset.features[tags])
    return dataset.add_column(column, predictions)


def load(spec: str) -> Any:
    """A dataset from a spec: a directory saved with ``save_to_disk`` (``DIR`` or ``DIR:split``), a
    ``.json``/``.jsonl``/``.parquet``/``.csv`` file, or ``hf:NAME[:SPLIT]`` from the hub."""
    import datasets

    path, _, split = spec.partition(":") if not spec.startswith("hf:") else ("", "", "")
    if spec.startswith("hf:"):
        name, _, split = spec[3:].partition(":")
        unreachable = hub_unreachable()  # then the local cache only: no retrying for half a minute
        try:
            with _offline(unreachable is not None):
                return datasets.load_dataset(name, split=split or "train")
        except Exception as exc:  # network, missing dataset, … all reach the user as one line
            if unreachable is not None:
                raise InputError(f"cannot load dataset {name!r}: the Hugging Face Hub cannot be reached "
                                 f"({unreachable}) and the dataset is not in the local cache") from None
            raise InputError(f"cannot load dataset {name!r}: {type(exc).__name__}: {exc}") from None
    if os.path.isdir(path):
        ds = datasets.load_from_disk(path)
        if isinstance(ds, datasets.DatasetDict):
            split = split or "train"
            if split not in ds:
                raise InputError(f"no split {split!r} (splits: {', '.join(ds)})", path)
            ds = ds[split]
        return ds
    kinds = {".json": "json", ".jsonl": "json", ".parquet": "parquet", ".csv": "csv"}
    kind = kinds.get(os.path.splitext(path)[1])
    if kind is None or not os.path.isfile(path):
        raise InputError("not a dataset directory or a .json/.jsonl/.parquet/.csv file", spec)
    return datasets.load_dataset(kind, data_files=path, split="train")


def is_dataset_spec(spec: str) -> bool:
    """Whether a CLI path names a dataset rather than a CoNLL file."""
    path = spec.partition(":")[0]
    return spec.startswith("hf:") or os.path.isdir(path) or \
        os.path.splitext(path)[1] in (".json", ".jsonl", ".parquet")


#: Seconds the check that the Hugging Face Hub answers may take (`hub_unreachable`).
HUB_PROBE_SECONDS = 3.0


def hub_unreachable() -> str | None:
    """Why the Hugging Face Hub cannot be reached, or None (it can, or offline mode is on already):
    one TCP connection to its host (``HF_ENDPOINT``), or to the proxy the environment names for it,
    within `HUB_PROBE_SECONDS` (name resolution included). Without it, the hub client retries every
    request with back-off for about 25 s before failing."""
    from huggingface_hub import constants

    if constants.is_offline_mode():
        return None
    url = urlsplit(constants.ENDPOINT)
    proxy = getproxies().get(url.scheme) if url.hostname and not proxy_bypass(url.hostname) else None
    target = urlsplit(proxy) if proxy and "://" in proxy else url
    if not target.hostname:
        return None
    address = (target.hostname, target.port or (443 if target.scheme == "https" else 80))
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection(address, timeout=HUB_PROBE_SECONDS).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(f"{address[0]}: {exc.strerror or exc or type(exc).__name__}")

    probe = threading.Thread(target=connect, daemon=True)  # a thread: name lookups ignore socket timeouts
    probe.start()
    probe.join(HUB_PROBE_SECONDS)
    return outcome[0] if outcome else f"{address[0]}: no answer in {HUB_PROBE_SECONDS:g} s"


@contextlib.contextmanager
def _offline(on: bool) -> Iterator[None]:
    """Hugging Face offline mode (``HF_HUB_OFFLINE``: the local cache only) while inside, when ``on``;
    set where `datasets` and `huggingface_hub` read it when a call is made, and restored after."""
    if not on:
        yield
        return
    import datasets.config
    from huggingface_hub import constants

    saved = (os.environ.get("HF_HUB_OFFLINE"), datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE)
    os.environ["HF_HUB_OFFLINE"] = "1"
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        if saved[0] is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = saved[0]
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved[1], saved[2]
