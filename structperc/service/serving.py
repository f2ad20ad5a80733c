"""Models served to other programs, as library calls: the table of models a long-lived process loads
once, and the requests of ``structperc serve`` (`structperc.service`) checked and answered.

The HTTP face is thin: each endpoint makes one call here. What a request may be (its limits, the
shape of a token, which model answers) is decided in this module, so the same rules hold for any
other face that wants them.

A request is a *document*: its sentences see each other through document-level features (the NER
``doc`` column's window over nearby sentences), as the sentences of one file given to ``structperc
tag`` do. `tag_documents` tags several documents with one call (the service batches concurrent
requests that way) and keeps each out of the others' window (`structperc.predict.apart`), so a
request gets the same tags alone or batched. `explain_document` takes one sentence of such a document
apart (``/explain``) as it was tagged: the sentences around it within the model's document window, its
upstream columns filled as the raw path fills them, so its labels are the tags ``/tag`` answered.
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
from structperc.model import shipped
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

    @property
    def card(self) -> dict[str, Any] | None:
        """The model's card (a shipped model's: `structperc.model.shipped`), or None."""
        provenance = self.tagger.provenance_
        found = provenance.get("card") if isinstance(provenance, dict) else None
        return found if isinstance(found, dict) else None

    @property
    def language(self) -> str | None:
        """The language its raw text is split by (`Tagger.language_`), or None."""
        return self.tagger.language_

    @property
    def upstream_columns(self) -> list[str]:
        """The columns besides the word that shipped upstream models fill (its card's ``reads``)."""
        reads = (self.card or {}).get("reads") or {}
        return [c for c in self.columns[1:] if c in reads]

    def raw_refusal(self) -> str | None:
        """Why ``/tag`` cannot take this model raw text (``"raw": true``), or None if it can."""
        if self.segments:
            return f"model {self.name!r} segments words: send its text to /segment"
        if self.language is None:
            return (f"model {self.name!r} has no language to split raw text into sentences and tokens by "
                    "(it was trained without --lang and has no card): send \"text\" one sentence a line, "
                    "tokens separated by spaces, without \"raw\"")
        missing = [c for c in self.columns[1:] if c not in self.upstream_columns]
        if missing:
            return (f"model {self.name!r} reads {', '.join(self.columns)} and no model of its own fills "
                    f"{', '.join(missing)} from raw text: send \"sentences\" with each token a list of those values")
        return None

    def describe(self) -> dict[str, Any]:
        from structperc.predict import projection_matrix

        task = self.tagger.task_
        model = self.tagger.model_
        is_span = task.metric == "span"
        card = self.card
        return {"name": self.name, "task": task.name, "endpoint": "/segment" if self.segments else "/tag",
                "columns": self.columns, "labels": projection_matrix(model)[0],
                "scheme": task.scheme if is_span else None, "spans": is_span and not self.segments,
                # a second-order model decodes its best path only
                "marginals": not self.segments and model.weights.order == 1,
                "nbest": not self.segments and model.weights.order == 1,
                "calibrated": model.calibration is not None,
                "language": self.language, "raw": self.raw_refusal() is None and _can_split(),
                "card": None if card is None else {key: card.get(key) for key in CARD_FIELDS}}


#: The card fields ``GET /models`` passes on (``test``: {test set: {"metric", "score"}}).
CARD_FIELDS = ("description", "language", "corpus", "licence", "test", "date", "reads")
#: The default of a service of every shipped model (`ModelTable.all_shipped`), when it is shipped.
SHIPPED_DEFAULT = "en-upos"


def _can_split() -> bool:
    """Whether spaCy, which splits raw text (`structperc.io.raw_text`), is installed."""
    import importlib.util

    try:
        return importlib.util.find_spec("spacy") is not None
    except (ImportError, ValueError):  # `sys.modules["spacy"] = None`
        return False


def parse_spec(spec: str) -> tuple[str, Path]:
    """``NAME=DIR`` or ``DIR`` (named after the directory, the folder of a ``model.zip``, or another archive's
    own name: ``en-upos.zip`` is ``en-upos``); DIR may be a shipped model's name (``en-upos``), which names it too."""
    name, sep, path = spec.partition("=")
    if not sep:
        path = spec
        p = Path(spec.rstrip("/\\") or spec)
        name = p.resolve().parent.name if p.name == "model.zip" else p.stem if p.suffix == ".zip" else p.resolve().name
    if not NAME.fullmatch(name):
        raise InputError(f"model name {name!r}: use letters, digits, '_', '.' and '-' (at most 64, "
                         "starting with a letter or digit); name it with --model NAME=DIR")
    return name, Path(path)


class ModelTable:
    """The models a service answers with, loaded once; a request's model name is only ever looked up
    here, never joined to a path (so no request reaches the file system). The first is the default."""

    def __init__(self, served: Sequence[Served]):
        if not served:
            raise InputError("no model to serve: give --model DIR (no shipped model is installed)")
        self.models: dict[str, Served] = {}
        for s in served:
            if s.name in self.models:
                raise InputError(f"two models are named {s.name!r}: name them with --model NAME=DIR")
            self.models[s.name] = s
        self.default = served[0].name

    @classmethod
    def load(cls, specs: Sequence[str | os.PathLike]) -> "ModelTable":
        """Load every ``NAME=DIR`` (or ``DIR``) of ``specs``; DIR may be a shipped model's name (a path
        that exists wins). An unreadable model or an unknown name stops it, naming it."""
        served = []
        for spec in specs:
            text = os.fspath(spec)
            name, path = parse_spec(text)
            if not path.exists():
                given = text.partition("=")[2] if "=" in text else text  # as typed: Path drops a "./"
                if not shipped.looks_like_name(given):
                    raise InputError(f"model {name!r}: no model at this path", str(path))
                path = shipped.resolve(path)  # the one-line error listing the shipped names
            served.append(Served(name, load(path)))
        return cls(served)

    @classmethod
    def all_shipped(cls) -> "ModelTable":
        """Every shipped model under its own name; `SHIPPED_DEFAULT` first (the default) if shipped,
        then the others by name."""
        return cls.load(shipped_order(shipped.names()))

    def get(self, name: str | None, *, segments: bool = False) -> Served:
        """The model called ``name`` (None: the default; with ``segments``, for ``/segment``, the default if it
        segments, else the first segmentation model served); unknown names are a 404 naming the known ones."""
        if name is None and segments and not self.models[self.default].segments:
            name = next((n for n, s in self.models.items() if s.segments), None)
            if name is None:
                raise RequestError(f"no word segmentation model is served (the default, {self.default!r}, is a "
                                   f"{self.models[self.default].tagger.task_.name} tagger: use /tag)")
        served = self.models.get(self.default if name is None else name)
        if served is None:
            raise RequestError(f"unknown model {name!r} (known: {', '.join(self.models)})", 404)
        return served

    def describe(self) -> dict[str, Any]:
        return {"default": self.default, "models": [s.describe() for s in self.models.values()]}


def shipped_order(names: Sequence[str]) -> list[str]:
    """``names`` with `SHIPPED_DEFAULT` first (if among them), the others sorted."""
    rest = sorted(n for n in names if n != SHIPPED_DEFAULT)
    return [SHIPPED_DEFAULT, *rest] if SHIPPED_DEFAULT in names else rest


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
    return _checked(served, sentences, limits)


def _checked(served: Served, sentences: list[list[Any]], limits: Limits, *,
             words: bool = False) -> list[list[Any]]:
    """``sentences`` of tokens checked against ``limits`` and the model's columns (strings for a model
    reading one column, tuples of its values otherwise); with ``words``, plain strings (words alone,
    kept as strings) for a model whose other columns an upstream model fills."""
    if not sentences:
        raise RequestError("empty input: no sentences")
    if len(sentences) > limits.max_sentences:
        raise RequestError(f"{len(sentences)} sentences: at most {limits.max_sentences} a request", 413)
    columns = served.columns
    width = 1 if words else len(columns)
    for i, sentence in enumerate(sentences):
        if not sentence:  # as `text` has no blank-line sentences and a CoNLL file no empty ones
            raise RequestError(f"empty input: sentence {i} has no tokens")
        if len(sentence) > limits.max_tokens:
            raise RequestError(f"sentence {i}: {len(sentence)} tokens, at most {limits.max_tokens}", 413)
        for j, token in enumerate(sentence):
            values = [token] if isinstance(token, str) else token
            if len(values) != width:
                raise RequestError(f"sentence {i}, token {j}: {len(values)} values; model {served.name!r} "
                                   f"reads {len(columns)} ({', '.join(columns)})")
            if not all(values):
                raise RequestError(f"sentence {i}, token {j}: an empty string")
    if width == 1:  # ["word"] tokens as plain strings
        return [[t if isinstance(t, str) else t[0] for t in s] for s in sentences]
    return [[tuple(t) for t in s] for s in sentences]


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


def raw_input(served: Served, text: str, limits: Limits) -> list[list[Any]]:
    """The sentences of a raw-text ``/tag`` request (``"text"`` with ``"raw": true``), checked: a model
    with a language (`Served.raw_refusal`), some text, split into sentences of tokens with character
    offsets by the model's corpus conventions (`structperc.io.raw_text`), within ``limits``. Each
    sentence is a list of `structperc.io.raw_text.Token`; `tag_raw_documents` tags them."""
    from structperc.io.raw_text import split_texts

    reason = served.raw_refusal()
    if reason is not None:
        raise RequestError(reason)
    if not text.strip():
        raise RequestError("empty input: no text")
    assert served.language is not None
    sentences: list[list[Any]] = next(iter(split_texts([text], served.language)))
    if not sentences:
        raise RequestError("empty input: no tokens in the text")
    if len(sentences) > limits.max_sentences:
        raise RequestError(f"{len(sentences)} sentences: at most {limits.max_sentences} a request", 413)
    for i, sentence in enumerate(sentences):
        if len(sentence) > limits.max_tokens:
            raise RequestError(f"sentence {i} (from character {sentence[0].start}): {len(sentence)} tokens, "
                               f"at most {limits.max_tokens}", 413)
    return sentences


def tag_raw_documents(served: Served, documents: Sequence[list[list[Any]]], *, marginals: bool = False,
                      nbest: int = 0) -> list[dict[str, Any]]:
    """`tag_documents` for documents of raw-text tokens (`raw_input`): the columns an upstream shipped
    model predicts (en-chunk's POS, `Tagger.upstream_`) filled by it first, one call for all, and each
    answer given ``offsets``: each token's ``[start, end]`` in its text."""
    words = [[[t.text for t in sentence] for sentence in doc] for doc in documents]
    out = tag_documents(served, fill_upstream(served, words), marginals=marginals, nbest=nbest)
    for result, doc in zip(out, documents):
        result["offsets"] = [[[t.start, t.end] for t in sentence] for sentence in doc]
    return out


def fill_upstream(served: Served, documents: Sequence[list[list[str]]]) -> list[list[list[Any]]]:
    """Documents of words as rows of the model's columns, those an upstream shipped model predicts
    (en-chunk's POS) filled by it through `Tagger.with_upstream`, one call for all (the raw path of
    ``/tag`` and ``/explain`` alike); documents unchanged for a model without upstream columns."""
    if not served.upstream_columns:
        return [list(doc) for doc in documents]
    rows = iter(served.tagger.with_upstream([sentence for doc in documents for sentence in doc]))
    return [[list(next(rows)) for _ in doc] for doc in documents]


@dataclass(frozen=True)
class Explaining:
    """A checked ``/explain`` request (`explain_input`): a tagger's document (``sentences``, the one
    explained at ``sentence``; ``words``: plain words whose other columns upstream models fill) or a
    segmenter's ``text``; ``index`` the one token (character) to answer with, or None for all."""

    sentences: list[list[Any]] | None = None
    sentence: int = 0
    index: int | None = None
    words: bool = False
    text: str | None = None
    in_document: bool = False  # given as ``sentences``: the answer says which ``sentence``


def explain_input(served: Served, *, tokens: list[Any] | None = None, sentences: list[list[Any]] | None = None,
                  sentence: int | None = None, index: int | None = None, text: str | None = None,
                  limits: Limits) -> Explaining:
    """An ``/explain`` request checked: for a tagger exactly one of ``tokens`` (one sentence) and
    ``sentences`` (a document, as ``/tag`` answered it, the one to explain at ``sentence``), tokens as
    ``/tag`` takes them, or words alone for a model whose other columns upstream models fill (as the raw
    path of ``/tag`` does); for a segmenter ``text``, one line without whitespace. Within ``limits`` (a
    segmenter's characters count as tokens); ``index`` within the sentence."""
    if served.segments:
        if tokens is not None or sentences is not None or sentence is not None:
            raise RequestError(f"model {served.name!r} segments words: send \"text\" (one line of text)")
        if text is None or not text.strip():
            raise RequestError("empty input: no text")
        if any(c.isspace() for c in text):
            raise RequestError("\"text\" is one piece of text without whitespace or line breaks (the "
                               "segmenter decodes the pieces between whitespace apart)")
        if len(text) > limits.max_tokens:
            raise RequestError(f"text: {len(text)} characters, at most {limits.max_tokens}", 413)
        return Explaining(text=text, index=_index_in(index, len(text), "the text has", "characters"))
    if text is not None:
        raise RequestError(f"model {served.name!r} tags tokens: send \"tokens\" (one sentence), not \"text\"")
    if (tokens is None) == (sentences is None):
        raise RequestError("give either \"tokens\" (one sentence) or \"sentences\" (with \"sentence\", "
                           "the one to explain)")
    in_document = tokens is None
    if tokens is not None:
        if sentence is not None:
            raise RequestError("\"sentence\" goes with \"sentences\", not \"tokens\"")
        sentences, sentence = [tokens], 0
    assert sentences is not None
    sentence = 0 if sentence is None else sentence
    if sentence >= len(sentences):
        raise RequestError(f"sentence {sentence}: the document has {len(sentences)} sentence(s)")
    words = len(served.columns) > 1 and served.raw_refusal() is None and all(
        isinstance(t, str) or len(t) == 1 for s in sentences for t in s)
    checked = _checked(served, sentences, limits, words=words)
    return Explaining(sentences=checked, sentence=sentence, words=words, in_document=in_document,
                      index=_index_in(index, len(checked[sentence]), "the sentence has", "tokens"))


def _index_in(index: int | None, n: int, has: str, what: str) -> int | None:
    if index is not None and index >= n:
        raise RequestError(f"index {index}: {has} {n} {what}")
    return index


def explain_document(served: Served, job: Explaining) -> dict[str, Any]:
    """The answer of a checked ``/explain`` request (`explain_input`): `Tagger.explain` of the sentence
    as ``/tag`` tagged it — its document's sentences within the model's document window around it
    (`structperc.predict.documents.document_window`: NER's ``doc`` column, a two-stage model's first
    stage), upstream columns filled as the raw path of ``/tag`` fills them — so its labels are the tags
    ``/tag`` answered; `Segmenter.explain` of a segmenter's text. With ``index``, that token alone."""
    from structperc.predict.decoding import with_columns
    from structperc.predict.documents import document_window
    from structperc.predict.explain import explain

    if job.text is not None:
        seg = served.tagger
        assert isinstance(seg, Segmenter)
        out: dict[str, Any] = seg.explain(job.text)
    else:
        assert job.sentences is not None
        tagger = served.tagger
        model = tagger.model_
        window = document_window(model)
        if job.words:  # the upstream tags of the sentences in the window read their own window
            window += max((document_window(tagger.upstream_[c].model_) for c in served.upstream_columns),
                          default=0)
        lo = max(0, job.sentence - window)
        part = job.sentences[lo:job.sentence + window + 1]
        if job.words:
            part = fill_upstream(served, [part])[0]
        corpus = to_corpus(part, None, model.task, need_tags=False, reads=tagger.reads(),
                           token_columns=set(model.features.columns), unknown=None)
        # the columns read across sentences made over the window, as `predict.tag_documents` does
        # (`featurize` keeps columns a corpus has), then the one sentence taken apart
        corpus = with_columns(model, corpus)
        out = explain(model, corpus.select([job.sentence - lo]))
    out = {"model": served.name, **out}
    if job.in_document:
        out["sentence"] = job.sentence
    if job.index is not None:
        out["index"] = job.index
        out["tokens"] = [out["tokens"][job.index]]
    return out


def segment_input(served: Served, text: str, limits: Limits) -> list[str]:
    """The lines of a ``/segment`` request, checked (a word segmentation model; some text; at most
    ``limits.max_sentences`` lines of at most ``limits.max_tokens`` characters, a segmenter's tokens, as for
    ``/explain``). Lines end at ``"\\n"`` alone, as `structperc segment` reads a file (a ``"\\r"``, a line or
    paragraph separator inside a line is whitespace, where no word crosses)."""
    if not served.segments:
        raise RequestError(f"model {served.name!r} is a {served.tagger.task_.name} tagger: use /tag")
    if not text.strip():
        raise RequestError("empty input: no text")
    lines = text.split("\n")
    if lines[-1] == "":  # the newline that ends the last line
        lines.pop()
    if len(lines) > limits.max_sentences:
        raise RequestError(f"{len(lines)} lines: at most {limits.max_sentences} a request", 413)
    for i, line in enumerate(lines):
        if len(line) > limits.max_tokens and len("".join(line.split())) > limits.max_tokens:
            raise RequestError(f"line {i}: {len(''.join(line.split()))} characters, at most {limits.max_tokens}",
                               413)
    return lines


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
