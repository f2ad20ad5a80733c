"""structperc models inside spaCy: a pipeline component for taggers and a tokenizer for segmenters.

Install with ``pip install "structperc[spacy]"``. Both are registered through spaCy's entry points
(``spacy_factories`` and ``spacy_tokenizers`` in ``pyproject.toml``), so nothing needs importing::

    nlp = spacy.blank("es")
    nlp.add_pipe("structperc", config={"model": "ner-es/"})
    [(e.text, e.label_) for e in nlp("Juan vive en Madrid .").ents]

    nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                          "model": "cws/"}}})
    [t.text for t in nlp("上海体育局召开会议")]

What the component writes depends on the model (``annotate`` overrides it):

- ``"ents"`` (task ``ner``): ``doc.ents``, one span per entity of the predicted tags (read in the
  model's data scheme, IOB2 unless trained otherwise; conlleval's reading of ill-formed tags), with
  the entity type as label. ``overwrite=False`` keeps entities an earlier component set and adds
  only the ones that do not overlap them.
- ``"spans"`` (task ``chunk``, any other span task): ``doc.spans[span_key]`` (``"chunks"``).
- ``"pos"``: ``token.pos_``, when the model predicts the ``upos`` column and every label is one of
  the 17 Universal POS tags (spaCy refuses anything else there); ``"tag"``: ``token.tag_``,
  otherwise (``xpos``, a ``pos`` column of CoNLL-2000/2002, a ``upos`` column with other labels).

Input columns. A model may read more than the words (the chunk preset reads a ``pos`` column when
it was trained with one). Each column is taken from a token attribute: by default ``pos`` and
``xpos`` from ``token.tag_``, ``upos`` from ``token.pos_``, ``lemma`` from ``token.lemma_``,
``feats`` from ``token.morph``; ``columns={"name": "attribute"}`` maps others (``"_.x"`` reads the
extension ``token._.x``). A column with no mapping is refused when the component is made, and an
empty attribute (no earlier component set ``token.tag_``) is refused when a doc is tagged, each
with a one-line `InputError` naming the column: the model is never fed silently blank features.

Sentences and documents. A doc with sentence boundaries (a sentencizer or parser ran before) is
tagged sentence by sentence, else as one sentence; whitespace tokens are skipped (they are not words
of the training data) and get no tag. ``nlp.pipe`` tags each batch of ``batch_size`` docs with one
`Tagger.predict` call. An NER model's ``doc`` column looks at nearby sentences
(`structperc.features.gazetteer.doc_roles`); docs of one batch are kept out of each other's window,
so a doc gets the same tags alone or in any batch.

``marginals=True`` also stores each tagged token's marginal probability of its tag (at the model's
calibrated temperature, `structperc.predict.token_confidence`) in ``token._.structperc_confidence``
(None on untagged tokens).

A saved pipeline (``nlp.to_disk``) carries a copy of the model (``DIR/NAME/model``, the tokenizer's
in ``DIR/tokenizer/model``), which ``from_disk`` loads: ``spacy.load(DIR)`` works from any working
directory, once the original model folder is gone too. spaCy makes each component from the saved
config before ``from_disk`` runs; the ``model`` path of that config (relative to where the pipeline
was built) is not read then, because the pipeline's meta (``meta.json``, key ``"structperc"``) lists
the models saved inside it.

The segmenter as tokenizer: `StructpercTokenizer` keeps the text exactly (``doc.text == text``):
a single space after a word is the token's trailing space, other whitespace becomes whitespace
tokens, as spaCy's own tokenizer does (`spacy.util.get_words_and_spaces`, here in linear time).

References: spaCy's component and tokenizer contracts, https://spacy.io/usage/processing-pipelines
and https://spacy.io/usage/linguistic-features#custom-tokenizer; the Universal POS tags,
https://universaldependencies.org/u/pos/.
"""
# No `from __future__ import annotations` here: spaCy validates a factory's config against the
# factory's annotations, which must be real types, not strings.
import os
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

try:
    from spacy.language import Language
    from spacy.tokens import Doc, Span, Token
    from spacy.util import filter_spans, minibatch, registry
    from spacy.vocab import Vocab
except ImportError as exc:  # pragma: no cover - exercised only without spaCy
    raise ImportError("structperc.spacy_component needs spaCy: pip install \"structperc[spacy]\"") from exc

from structperc.errors import InputError
from structperc.labels.schemes import spans as tag_spans

if TYPE_CHECKING:
    from structperc.segmenter import Segmenter
    from structperc.tagger import Tagger

#: The Universal POS tags (UD v2, https://universaldependencies.org/u/pos/): what ``token.pos_`` takes.
UPOS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
                  "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"})
#: Where a model's input columns come from by default (token attribute names).
DEFAULT_COLUMNS = {"pos": "tag_", "xpos": "tag_", "upos": "pos_", "lemma": "lemma_", "feats": "morph"}
ANNOTATIONS = ("ents", "spans", "tag", "pos")
CONFIDENCE = "structperc_confidence"
#: The key of a pipeline's meta listing (``"saved"``) the structperc models saved inside it, by
#: component name (``"tokenizer"``: the tokenizer).
META_KEY = "structperc"
#: The names under which structperc objects were made in each live pipeline (`_saved_copy`).
_made: "weakref.WeakKeyDictionary[Language, set]" = weakref.WeakKeyDictionary()


def _load(model: Any, what: str) -> "Tagger":
    """The structperc model at ``model`` (read once), with a one-line error for a bad path."""
    from structperc.commands import load

    if model is None or (isinstance(model, str) and not model.strip()):
        raise InputError(f"the {what} needs a model: config={{\"model\": \"path/to/model/\"}}")
    if not isinstance(model, (str, os.PathLike)):
        raise InputError(f"the {what}'s model must be a path, not {type(model).__name__}")
    if not Path(model).exists():
        raise InputError(f"no structperc model at this path (for the {what})", str(model))
    return load(model)


def _saved_copy(nlp: Language, name: str) -> bool:
    """Whether ``nlp`` is a saved pipeline being loaded whose ``from_disk`` will read the copy of this
    model (``name``: a component, or ``"tokenizer"``) saved inside it, so its config's ``model`` path
    must not be read: its meta (``meta.json``) lists ``name``, and no structperc object was made
    under that name in this ``nlp`` yet (a live pipeline would read its own listing back). Lists
    ``name`` in the meta either way, for the pipeline's next ``to_disk``."""
    meta = nlp.meta
    entry = meta.get(META_KEY)
    if not isinstance(entry, dict) or not isinstance(entry.get("saved"), list):
        entry = meta[META_KEY] = {"saved": []}
    made = _made.setdefault(nlp, set())
    loading = name in entry["saved"] and name not in made
    made.add(name)
    if name not in entry["saved"]:
        entry["saved"].append(name)
    return loading


def _waiting(what: str) -> InputError:
    return InputError(f"the {what} has no model yet: it belongs to a saved pipeline whose from_disk "
                      "loads it (spacy.load(DIR))")


# -------------------------------------------------------------------------------- the component


def _getter(column: str, attribute: str) -> Callable[[Token], str]:
    """A token's value of input ``column`` read from ``attribute`` (``morph``: ``_`` when empty,
    as CoNLL-U writes no features)."""
    if attribute.startswith("_."):
        name = attribute[2:]
        if not Token.has_extension(name):
            raise InputError(f"column {column!r} is mapped to token._.{name}, an extension no one "
                             "registered")
        return lambda token: "" if token._.get(name) is None else str(token._.get(name))
    if attribute == "morph":
        return lambda token: str(token.morph) or "_"
    if not hasattr(Token, attribute):
        raise InputError(f"column {column!r} is mapped to token.{attribute}, which spaCy tokens do not "
                         "have")
    return lambda token: str(getattr(token, attribute))


class StructpercComponent:
    """A pipeline component tagging docs with a structperc `Tagger` (see the module docstring).

    Made by the ``"structperc"`` factory: ``nlp.add_pipe("structperc", config={"model": path})``.
    """

    def __init__(self, nlp: Language, name: str, model: Any, *, annotate: Optional[str] = None,
                 span_key: str = "chunks", columns: Optional[Dict[str, str]] = None,
                 marginals: bool = False, overwrite: bool = True):
        self.nlp, self.name, self.model_path = nlp, name, model
        self.span_key, self.marginals, self.overwrite = span_key, bool(marginals), bool(overwrite)
        self.columns = dict(columns or {})
        self.annotate_option = annotate
        if annotate is not None and annotate not in ANNOTATIONS:
            raise InputError(f"annotate must be one of {', '.join(ANNOTATIONS)} (or null: from the "
                             f"model), not {annotate!r}")
        if not isinstance(span_key, str) or not span_key:
            raise InputError("span_key must be a non-empty string")
        if self.marginals and not Token.has_extension(CONFIDENCE):
            Token.set_extension(CONFIDENCE, default=None)
        self.tagger: Optional["Tagger"] = None
        if not _saved_copy(nlp, name):  # else `from_disk` loads the copy saved with the pipeline
            self._use(_load(model, f"{name!r} component"), str(model))

    # ------------------------------------------------------------------ configuration
    def _use(self, tagger: "Tagger", where: str) -> None:
        """Take ``tagger``: decide what it annotates and where each input column comes from."""
        from structperc.labels.schemes import SPAN_SCHEMES
        from structperc.predict import document_window
        from structperc.segmenter import Segmenter

        if isinstance(tagger, Segmenter):
            raise InputError("a word segmentation model is a tokenizer, not a pipeline component: use "
                             "it as the tokenizer of spacy.blank(\"zh\") (\"@tokenizers\": "
                             "\"structperc.Tokenizer.v1\")", where)
        task = tagger.task_
        span = task.scheme in SPAN_SCHEMES
        upos = task.tag_column == "upos" and set(tagger.labels_) <= UPOS
        annotate = self.annotate_option
        if annotate is None:
            annotate = ("ents" if task.name == "ner" else "spans") if span else ("pos" if upos else "tag")
        if annotate in ("ents", "spans") and not span:
            raise InputError(f"annotate={annotate!r} needs a span model (IOB/IOBES tags), but this "
                             f"{task.name!r} model's tags are in scheme {task.scheme!r}", where)
        if annotate == "pos" and not upos:
            other = sorted(set(tagger.labels_) - UPOS)[:3]
            raise InputError("annotate='pos' needs Universal POS tags (spaCy's token.pos_), but this "
                             f"model predicts {task.tag_column!r} with tags such as "
                             f"{', '.join(map(repr, other)) or 'none'}: use annotate='tag'", where)
        getters: Dict[str, Callable[[Token], str]] = {}
        for column in sorted(set(tagger.reads() or ()) - {task.token_column}):
            attribute = self.columns.get(column, DEFAULT_COLUMNS.get(column))
            if attribute is None:
                raise InputError(f"the model reads column {column!r}, which spaCy tokens do not have: map "
                                 f"it to a token attribute with config={{\"columns\": {{\"{column}\": "
                                 "\"tag_\"}}", where)
            getters[column] = _getter(column, attribute)
        self.tagger, self.task, self.annotation = tagger, task, annotate
        self._getters = getters
        self._sources = {c: self.columns.get(c, DEFAULT_COLUMNS.get(c)) for c in getters}
        # the NER `doc` column reads nearby sentences: docs are kept apart by empty ones
        self._gap = document_window(tagger.model_)

    @property
    def labels(self) -> Tuple[str, ...]:
        """The model's tags (in its own scheme, e.g. IOBES for span models)."""
        return tuple(self.tagger.labels_) if self.tagger is not None else ()

    def _loaded(self) -> "Tagger":
        if self.tagger is None:
            raise _waiting(f"{self.name!r} component")
        return self.tagger

    # ---------------------------------------------------------------------- tagging
    def __call__(self, doc: Doc) -> Doc:
        self._annotate([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Tag ``stream`` ``batch_size`` docs at a time, one `Tagger.predict` call a batch."""
        for batch in minibatch(stream, size=batch_size):
            self._annotate(batch)
            yield from batch

    def _units(self, docs: Sequence[Doc]) -> List[Tuple[int, List[Token]]]:
        """(doc number, tokens) of every sentence to tag, docs kept apart by empty ones (docs must not
        see each other: `structperc.predict.apart`). (Tokens are made once here: spaCy builds a new
        `Token` at every ``doc[i]``.)"""
        from structperc.predict import apart

        sentences = [[tokens for sent in (doc.sents if doc.has_annotation("SENT_START") else [doc])
                      if (tokens := [t for t in sent if not t.is_space])] for doc in docs]
        flat, starts = apart(sentences, self._gap)
        units: List[Tuple[int, List[Token]]] = [(0, tokens) for tokens in flat]  # the empty ones: no doc's
        for d, (start, sents) in enumerate(zip(starts, sentences)):
            units[start:start + len(sents)] = [(d, tokens) for tokens in sents]
        return units

    def _corpus(self, units: List[Tuple[int, List[Token]]]) -> Any:
        from structperc.io.corpus import Corpus

        words = [[t.text for t in tokens] for _, tokens in units]
        extra: Dict[str, Sequence[Sequence[str]]] = {}
        for column, get in self._getters.items():
            values = []
            for _, tokens in units:
                row = [get(t) for t in tokens]
                if "" in row:
                    token = tokens[row.index("")]
                    raise InputError(f"the model reads column {column!r} from token.{self._sources[column]}, "
                                     f"which is empty on token {token.i} ({token.text!r}): add a component "
                                     f"that sets it before {self.name!r}, or map the column elsewhere "
                                     "(config \"columns\")")
                values.append(row)
            extra[column] = values
        return Corpus.from_sentences(words, extra=extra, token_column=self.task.token_column,
                                     tag_column=self.task.tag_column, source="<spaCy docs>")

    def _annotate(self, docs: Sequence[Doc]) -> None:
        tagger = self._loaded()
        docs = list(docs)
        units = self._units(docs)
        if self.marginals:
            for doc in docs:
                for token in doc:
                    token._.set(CONFIDENCE, None)
        if not any(tokens for _, tokens in units):
            if self.annotation in ("ents", "spans"):
                for doc in docs:
                    self._set_spans(doc, [])
            return
        corpus = self._corpus(units)
        confidence = None
        if self.marginals:
            from structperc import predict

            tagged = predict.tag_corpus(tagger.model_, corpus, confidence=True)
            ptr = corpus.sent_ptr.tolist()
            tags = [tagged.tags[ptr[s]:ptr[s + 1]] for s in range(len(ptr) - 1)]
            conf = tagged.confidence.tolist() if tagged.confidence is not None else []
            confidence = [conf[ptr[s]:ptr[s + 1]] for s in range(len(ptr) - 1)]
        else:
            tags = tagger.predict(corpus)
        found: Dict[int, List[Span]] = {d: [] for d in range(len(docs))}
        for s, (d, tokens) in enumerate(units):
            if confidence is not None:
                for token, p in zip(tokens, confidence[s]):
                    token._.set(CONFIDENCE, p)
            if self.annotation in ("ents", "spans"):
                doc = docs[d]
                for a, b, kind in tag_spans(tags[s], self.task.scheme):
                    found[d].append(Span(doc, tokens[a].i, tokens[b - 1].i + 1,
                                         label=kind or self.task.name.upper()))
            elif self.annotation == "pos":
                for token, tag in zip(tokens, tags[s]):
                    token.pos_ = tag
            else:
                for token, tag in zip(tokens, tags[s]):
                    token.tag_ = tag
        if self.annotation in ("ents", "spans"):
            for d, doc in enumerate(docs):
                self._set_spans(doc, found[d])

    def _set_spans(self, doc: Doc, spans: List[Span]) -> None:
        if self.annotation == "spans":
            doc.spans[self.span_key] = spans
        elif self.overwrite:
            doc.set_ents(spans, default="outside")
        else:  # keep what an earlier component found; add ours where they do not overlap it
            taken = {i for ent in doc.ents for i in range(ent.start, ent.end)}
            new = [s for s in filter_spans(spans) if not taken.intersection(range(s.start, s.end))]
            doc.set_ents(new, default="unmodified")

    # ---------------------------------------------------------------- serialization
    def initialize(self, get_examples: Optional[Callable[[], Iterable[Any]]] = None, *,
                   nlp: Optional[Language] = None) -> None:
        """Nothing to do: the model was trained by structperc (``structperc train``)."""

    def to_disk(self, path: Any, *, exclude: Iterable[str] = ()) -> None:
        """Save a copy of the model in ``path/model`` (structperc's archive: no pickle)."""
        self._loaded().save(Path(path) / "model")

    def from_disk(self, path: Any, *, exclude: Iterable[str] = ()) -> "StructpercComponent":
        """Load the model saved by `to_disk`."""
        self._use(_load(Path(path) / "model", f"{self.name!r} component"), str(path))
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        return _model_bytes(self._loaded())

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "StructpercComponent":
        self._use(_model_from_bytes(data), "<bytes>")
        return self


def _model_bytes(tagger: "Tagger") -> bytes:
    """The model archive's bytes (the same zip `Tagger.save` writes)."""
    with tempfile.TemporaryDirectory() as tmp:
        return tagger.save(Path(tmp) / "model.zip").read_bytes()


def _model_from_bytes(data: bytes) -> "Tagger":
    from structperc.commands import load

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "model.zip"
        target.write_bytes(data)
        return load(target)


@Language.factory("structperc", default_config={"model": None, "annotate": None, "span_key": "chunks",
                                                "columns": {}, "marginals": False, "overwrite": True})
def make_structperc(nlp: Language, name: str, model: Optional[str], annotate: Optional[str],
                    span_key: str, columns: Dict[str, str], marginals: bool,
                    overwrite: bool) -> StructpercComponent:
    """The ``"structperc"`` factory (registered through the ``spacy_factories`` entry point)."""
    return StructpercComponent(nlp, name, model, annotate=annotate, span_key=span_key, columns=columns,
                               marginals=marginals, overwrite=overwrite)


# -------------------------------------------------------------------------------- the tokenizer
def words_and_spaces(words: Sequence[str], text: str) -> Tuple[List[str], List[bool]]:
    """spaCy's words and trailing-space flags for ``words`` found in order in ``text`` with only
    whitespace between them: one ``" "`` after a word is its trailing space, any other whitespace a
    token of its own (`spacy.util.get_words_and_spaces`, in linear time: it slices the rest of the
    text at every word)."""
    out: List[str] = []
    spaces: List[bool] = []
    pos, n = 0, len(text)
    for word in words:
        start = pos
        while pos < n and text[pos].isspace():
            pos += 1
        if pos > start:
            out.append(text[start:pos])
            spaces.append(False)
        if not text.startswith(word, pos):
            raise InputError(f"segmented word {word!r} does not continue the text at character {pos}")
        out.append(word)
        pos += len(word)
        spaces.append(pos < n and text[pos] == " ")
        pos += spaces[-1]
    if pos < n:
        if text[pos:].strip():
            raise InputError(f"the segmented words do not cover the text from character {pos}")
        out.append(text[pos:])
        spaces.append(False)
    return out, spaces


class StructpercTokenizer:
    """A spaCy tokenizer segmenting text with a structperc `Segmenter` (Chinese word segmentation).

    ``nlp.tokenizer = StructpercTokenizer(nlp.vocab, "cws/")``, or in a config
    ``{"@tokenizers": "structperc.Tokenizer.v1", "model": "cws/"}``.
    """

    def __init__(self, vocab: Vocab, model: Any, *, deferred: bool = False):
        self.vocab, self.model_path = vocab, model
        self.segmenter: Optional["Segmenter"] = None
        if not deferred:  # deferred: `from_disk` loads the copy saved with the pipeline
            self._use(_load(model, "structperc tokenizer"), str(model))

    def _use(self, segmenter: "Tagger", where: str) -> None:
        from structperc.segmenter import Segmenter

        if not isinstance(segmenter, Segmenter):
            raise InputError(f"a {segmenter.task_.name!r} tagging model cannot segment text: the tokenizer "
                             "needs a word segmentation model (structperc train --task cws); add a "
                             "tagger with nlp.add_pipe(\"structperc\", ...)", where)
        self.segmenter = segmenter

    def _loaded(self) -> "Segmenter":
        if self.segmenter is None:
            raise _waiting("structperc tokenizer")
        return self.segmenter

    def _doc(self, text: str, words: Sequence[str]) -> Doc:
        tokens, spaces = words_and_spaces(words, text)
        return Doc(self.vocab, words=tokens, spaces=spaces)

    def __call__(self, text: str) -> Doc:
        if not isinstance(text, str):
            raise InputError(f"the tokenizer takes a string, not {type(text).__name__}")
        return self._doc(text, self._loaded().segment(text))

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Doc]:
        """Segment ``texts`` ``batch_size`` at a time (one `Segmenter.segment_texts` call a batch)."""
        segmenter = self._loaded()
        for batch in minibatch(texts, size=batch_size):
            for text, words in zip(batch, segmenter.segment_texts(batch)):
                yield self._doc(text, words)

    def to_disk(self, path: Any, *, exclude: Iterable[str] = ()) -> None:
        self._loaded().save(Path(path) / "model")

    def from_disk(self, path: Any, *, exclude: Iterable[str] = ()) -> "StructpercTokenizer":
        self._use(_load(Path(path) / "model", "structperc tokenizer"), str(path))
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        return _model_bytes(self._loaded())

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "StructpercTokenizer":
        self._use(_model_from_bytes(data), "<bytes>")
        return self


@registry.tokenizers("structperc.Tokenizer.v1")
def create_tokenizer(model: str) -> Callable[[Language], StructpercTokenizer]:
    """The ``structperc.Tokenizer.v1`` tokenizer (``spacy_tokenizers`` entry point): a segmenter
    model as the tokenizer, e.g. of ``spacy.blank("zh")``."""

    def make(nlp: Language) -> StructpercTokenizer:
        return StructpercTokenizer(nlp.vocab, model, deferred=_saved_copy(nlp, "tokenizer"))

    return make
