"""Models served to other programs, as library calls: the table of models a long-lived process loads
once, and the requests of ``structperc serve`` (`structperc.service`) checked and answered.

The HTTP face is thin: each endpoint makes one call here. What a request may be (its limits, the
shape of a token, which model answers) is decided in this module, so the same rules hold for any
other face that wants them.

A request is a *document*: its sentences see each other through document-level features (the NER
``doc`` column's window over nearby sentences), as the sentences of one file given to ``structperc
tag`` do. `tag_documents` tags several documents with one call (the service batches concurrent
requests that way) and keeps each out of the others' window (`structperc.predict.apart`), so a
request gets the same tags alone or batched.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from structperc.commands import load
from structperc.decode.nbest import check_k
from structperc.errors import InputError
from structperc.io.inputs import to_corpus, token_columns
from structperc.labels.schemes import spans
from structperc.segmenter import Segmenter
from structperc.tagger import Tagger

#: What a model may be called: a letter or digit, then letters, digits, ``_``, ``.``, ``-``.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class RequestError(InputError):
    """A request the service refuses, with the HTTP status that says why (400 by default)."""

    status = 400

    def __init__(self, reason: str, status: int = 400):
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True)
class Limits:
    """What one request may hold: the body's bytes, its sentences, a sentence's tokens, k of n-best."""

    max_body_bytes: int = 1 << 20
    max_sentences: int = 1000
    max_tokens: int = 1000
    max_nbest: int = 20

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if not isinstance(value, int) or value < 1:
                raise InputError(f"{name.replace('_', '-')} must be a positive number, not {value!r}")
        check_k(self.max_nbest, "max-nbest")  # the decoder's own bound, `structperc.decode.nbest.MAX_K`


@dataclass
class Served:
    """One loaded model: its name and estimator (a `Segmenter` for word segmentation)."""

    name: str
    tagger: Tagger

    @property
    def segments(self) -> bool:
        return isinstance(self.tagger, Segmenter)

    @property
    def columns(self) -> list[str]:
        """The values of a token, in order (the model's input columns it reads)."""
        return token_columns(self.tagger.task_, set(self.tagger.features_.columns))

    def describe(self) -> dict[str, Any]:
        from structperc.predict import projection_matrix

        task = self.tagger.task_
        model = self.tagger.model_
        is_span = task.metric == "span"
        return {"name": self.name, "task": task.name, "endpoint": "/segment" if self.segments else "/tag",
                "columns": self.columns, "labels": projection_matrix(model)[0],
                "scheme": task.scheme if is_span else None, "spans": is_span and not self.segments,
                # a second-order model decodes its best path only
                "marginals": not self.segments and model.weights.order == 1,
                "nbest": not self.segments and model.weights.order == 1,
                "calibrated": model.calibration is not None}


def parse_spec(spec: str) -> tuple[str, Path]:
    """``NAME=DIR`` or ``DIR`` (named after the directory, or the folder of a ``model.zip``)."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        p = Path(spec.rstrip("/\\") or spec)
        name = (p.parent if p.suffix == ".zip" else p).resolve().name
    if not NAME.fullmatch(name):
        raise InputError(f"model name {name!r}: use letters, digits, '_', '.' and '-' (at most 64, "
                         "starting with a letter or digit); name it with --model NAME=DIR")
    return name, Path(path)


class ModelTable:
    """The models a service answers with, loaded once; a request's model name is only ever looked up
    here, never joined to a path (so no request reaches the file system). The first is the default."""

    def __init__(self, served: Sequence[Served]):
        if not served:
            raise InputError("no model to serve: give --model DIR")
        self.models: dict[str, Served] = {}
        for s in served:
            if s.name in self.models:
                raise InputError(f"two models are named {s.name!r}: name them with --model NAME=DIR")
            self.models[s.name] = s
        self.default = served[0].name

    @classmethod
    def load(cls, specs: Sequence[str | os.PathLike]) -> "ModelTable":
        """Load every ``NAME=DIR`` (or ``DIR``) of ``specs``; an unreadable model stops it, naming it."""
        served = []
        for spec in specs:
            name, path = parse_spec(os.fspath(spec))
            if not path.exists():
                raise InputError(f"model {name!r}: no model at this path", str(path))
            served.append(Served(name, load(path)))
        return cls(served)

    def get(self, name: str | None) -> Served:
        """The model called ``name`` (None: the default); unknown names are a 404 naming the known ones."""
        served = self.models.get(self.default if name is None else name)
        if served is None:
            raise RequestError(f"unknown model {name!r} (known: {', '.join(self.models)})", 404)
        return served

    def describe(self) -> dict[str, Any]:
        return {"default": self.default, "models": [s.describe() for s in self.models.values()]}


def tag_input(served: Served, sentences: list[list[Any]] | None, text: str | None,
              limits: Limits) -> list[list[Any]]:
    """The sentences of a ``/tag`` request, checked: exactly one of ``sentences`` (tokens as strings,
    or lists of the model's column values) and ``text`` (one sentence a line, whitespace-split;
    models reading one column only), within ``limits``."""
    if served.segments:
        raise RequestError(f"model {served.name!r} segments words: use /segment")
    if (sentences is None) == (text is None):
        raise RequestError("give either \"sentences\" (lists of tokens) or \"text\" (one sentence a line)")
    columns = served.columns
    if text is not None:
        if len(columns) > 1:
            raise RequestError(f"model {served.name!r} reads {len(columns)} columns ({', '.join(columns)}): "
                               "send \"sentences\" with each token a list of those values")
        sentences = [line.split() for line in text.splitlines() if line.strip()]
    assert sentences is not None
    if not sentences:
        raise RequestError("empty input: no sentences")
    if len(sentences) > limits.max_sentences:
        raise RequestError(f"{len(sentences)} sentences: at most {limits.max_sentences} a request", 413)
    for i, sentence in enumerate(sentences):
        if not sentence:  # as `text` has no blank-line sentences and a CoNLL file no empty ones
            raise RequestError(f"empty input: sentence {i} has no tokens")
        if len(sentence) > limits.max_tokens:
            raise RequestError(f"sentence {i}: {len(sentence)} tokens, at most {limits.max_tokens}", 413)
        for j, token in enumerate(sentence):
            values = [token] if isinstance(token, str) else token
            if len(values) != len(columns):
                raise RequestError(f"sentence {i}, token {j}: {len(values)} values; model {served.name!r} "
                                   f"reads {len(columns)} ({', '.join(columns)})")
            if not all(values):
                raise RequestError(f"sentence {i}, token {j}: an empty string")
    if len(columns) == 1:  # ["word"] tokens as plain strings
        sentences = [[t if isinstance(t, str) else t[0] for t in s] for s in sentences]
    else:
        sentences = [[tuple(t) for t in s] for s in sentences]
    return sentences


def tag_documents(served: Served, documents: Sequence[list[list[Any]]], *, marginals: bool = False,
                  nbest: int = 0) -> list[dict[str, Any]]:
    """Tag several documents (each a list of checked sentences, `tag_input`) with one decoding call
    and answer each: ``tokens`` and ``tags`` per sentence, ``spans`` for span tasks, with
    ``marginals`` each tag's probability (``confidence``) and distribution (``marginals``), with
    ``nbest`` the k best paths. Documents are kept out of each other's document-level window."""
    from structperc import predict

    tagger = served.tagger
    model = tagger.model_

    def corpus_of(flat: list[list[Any]]) -> Any:
        return to_corpus(flat, None, model.task, need_tags=False, reads=tagger.reads(),
                         token_columns=set(model.features.columns), unknown=None)

    done = predict.tag_documents(model, documents, corpus_of, confidence=marginals, distributions=marginals,
                                 k=nbest)
    corpus, tagged, ptr = done.corpus, done.tagged, done.corpus.sent_ptr
    token = model.task.token_column
    words = predict.by_sentence(corpus.columns[token if token in corpus.columns else served.columns[0]], ptr)
    sentence_tags = tagged.sentence_tags(ptr)
    conf, dist = tagged.sentence_confidence(ptr), tagged.sentence_marginals(ptr)
    scheme = model.task.scheme if model.task.metric == "span" else None
    out = []
    for sents in done.sentences:
        result: dict[str, Any] = {"model": served.name, "tokens": [words[s] for s in sents],
                                  "tags": [sentence_tags[s] for s in sents]}
        if scheme is not None:
            result["spans"] = [[{"start": a, "end": b, "type": t} for a, b, t in spans(tags, scheme)]
                               for tags in result["tags"]]
        if conf is not None and dist is not None:
            result["confidence"] = [conf[s] for s in sents]
            result["marginals"] = [dist[s] for s in sents]
        if tagged.nbest is not None:
            result["nbest"] = [[{"tags": tags, "score": score, "probability": p}
                                for tags, score, p in tagged.nbest[s]] for s in sents]
        out.append(result)
    return out


def segment_input(served: Served, text: str) -> list[str]:
    """The lines of a ``/segment`` request, checked (a word segmentation model; some text)."""
    if not served.segments:
        raise RequestError(f"model {served.name!r} is a {served.tagger.task_.name} tagger: use /tag")
    if not text.strip():
        raise RequestError("empty input: no text")
    return text.splitlines()


def segment_documents(served: Served, documents: Sequence[list[str]]) -> list[dict[str, Any]]:
    """Segment the lines of several requests with one call; one word list per line."""
    seg = served.tagger
    assert isinstance(seg, Segmenter)
    words = list(seg.segment_lines(line for doc in documents for line in doc))
    out, at = [], 0
    for doc in documents:
        out.append({"model": served.name, "words": words[at:at + len(doc)]})
        at += len(doc)
    return out
