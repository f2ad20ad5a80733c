"""The spaCy pipeline component tagging docs with a structperc `Tagger` (the module docstring of
`structperc.spacy_component` says what it writes and from which token attributes it reads). It
predicts through `structperc.predict`: the docs of a batch are tagged with one call, kept out of
each other's document window (`structperc.predict.tag_documents`)."""
# No `from __future__ import annotations` here: spaCy validates a factory's config against the
# factory's annotations, which must be real types, not strings.
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span, Token
from spacy.util import filter_spans, minibatch

from structperc.errors import InputError
from structperc.labels.schemes import spans as tag_spans
from structperc.spacy.loading import load_model, model_bytes, model_from_bytes, saved_copy, waiting

if TYPE_CHECKING:
    from structperc.tagger import Tagger

#: The Universal POS tags (UD v2, https://universaldependencies.org/u/pos/): what ``token.pos_`` takes.
UPOS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON",
                  "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X"})
#: Where a model's input columns come from by default (token attribute names).
DEFAULT_COLUMNS = {"pos": "tag_", "xpos": "tag_", "upos": "pos_", "lemma": "lemma_", "feats": "morph"}
ANNOTATIONS = ("ents", "spans", "tag", "pos")
CONFIDENCE = "structperc_confidence"


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

    Made by the ``"structperc"`` factory: ``nlp.add_pipe("structperc", config={"model": "en-upos"})``
    (a shipped model's name, or a model path).
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
        if not saved_copy(nlp, name, model):  # else `from_disk`/`from_bytes` gives the copy saved with the pipeline
            self._use(load_model(model, f"{name!r} component"), str(model))

    # ------------------------------------------------------------------ configuration
    def _use(self, tagger: "Tagger", where: str) -> None:
        """Take ``tagger``: decide what it annotates and where each input column comes from."""
        from structperc.labels.schemes import SPAN_SCHEMES
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
        if self.marginals:  # refused here, when the component is added, not on every document
            tagger.model_.weights.check_first_order("token marginals (marginals=true)")
        read = set(tagger.reads() or ()) - {task.token_column}
        unread = sorted(set(self.columns) - read)
        if unread:  # a misspelt column ("POS") left the one it meant on its default attribute, unsaid
            raise InputError(f"config \"columns\" maps {', '.join(map(repr, unread))}, which the model does not "
                             f"read (it reads {', '.join(map(repr, sorted(read))) or 'the words alone'})", where)
        getters: Dict[str, Callable[[Token], str]] = {}
        for column in sorted(read):
            attribute = self.columns.get(column, DEFAULT_COLUMNS.get(column))
            if attribute is None:
                raise InputError(f"the model reads column {column!r}, which spaCy tokens do not have: map "
                                 f"it to a token attribute with config={{\"columns\": {{\"{column}\": "
                                 "\"tag_\"}}", where)
            getters[column] = _getter(column, attribute)
        self.tagger, self.task, self.annotation = tagger, task, annotate
        self._getters = getters
        self._sources = {c: self.columns.get(c, DEFAULT_COLUMNS.get(c)) for c in getters}

    @property
    def labels(self) -> Tuple[str, ...]:
        """The model's tags (in its own scheme, e.g. IOBES for span models)."""
        return tuple(self.tagger.labels_) if self.tagger is not None else ()

    def _loaded(self) -> "Tagger":
        if self.tagger is None:
            raise waiting(f"{self.name!r} component")
        return self.tagger

    # ---------------------------------------------------------------------- tagging
    def __call__(self, doc: Doc) -> Doc:
        self._annotate([doc])
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Tag ``stream`` ``batch_size`` docs at a time, one `structperc.predict.tag_documents` call a batch."""
        for batch in minibatch(stream, size=batch_size):
            self._annotate(batch)
            yield from batch

    def _sentences(self, docs: Sequence[Doc]) -> List[List[List[Token]]]:
        """Per doc, the tokens of every sentence to tag: whitespace tokens left out, a doc without
        sentence boundaries one sentence. (Tokens are made once here: spaCy builds a new `Token` at
        every ``doc[i]``.)"""
        return [[tokens for sent in (doc.sents if doc.has_annotation("SENT_START") else [doc])
                 if (tokens := [t for t in sent if not t.is_space])] for doc in docs]

    def _corpus(self, sentences: List[List[Token]]) -> Any:
        """The corpus of ``sentences`` (the empty ones between docs included): the words and the
        columns the model reads, each from its token attribute."""
        from structperc.io.corpus import Corpus

        words = [[t.text for t in tokens] for tokens in sentences]
        extra: Dict[str, Sequence[Sequence[str]]] = {}
        for column, get in self._getters.items():
            values = []
            for tokens in sentences:
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
        """Tag ``docs`` with one `structperc.predict.tag_documents` call (each doc out of the others'
        document window) and write the tags where `annotation` says."""
        from structperc import predict

        tagger = self._loaded()
        docs = list(docs)
        sentences = self._sentences(docs)
        if self.marginals:
            for doc in docs:
                for token in doc:
                    token._.set(CONFIDENCE, None)
        if not any(sentences):
            if self.annotation in ("ents", "spans"):
                for doc in docs:
                    self._set_spans(doc, [])
            return
        done = predict.tag_documents(tagger.model_, sentences, self._corpus, confidence=self.marginals)
        ptr = done.corpus.sent_ptr
        tags, confidence = done.tagged.sentence_tags(ptr), done.tagged.sentence_confidence(ptr)
        for doc, own, where in zip(docs, sentences, done.sentences):
            found: List[Span] = []
            for tokens, s in zip(own, where):
                if confidence is not None:
                    for token, p in zip(tokens, confidence[s]):
                        token._.set(CONFIDENCE, p)
                self._write(doc, tokens, tags[s], found)
            if self.annotation in ("ents", "spans"):
                self._set_spans(doc, found)

    def _write(self, doc: Doc, tokens: List[Token], tags: List[str], found: List[Span]) -> None:
        """One sentence's ``tags`` on its ``tokens``: spans added to ``found``, or POS tags."""
        if self.annotation in ("ents", "spans"):
            for a, b, kind in tag_spans(tags, self.task.scheme):
                found.append(Span(doc, tokens[a].i, tokens[b - 1].i + 1, label=kind or self.task.name.upper()))
        elif self.annotation == "pos":
            for token, tag in zip(tokens, tags):
                token.pos_ = tag
        else:
            for token, tag in zip(tokens, tags):
                token.tag_ = tag

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
        self._use(load_model(Path(path) / "model", f"{self.name!r} component"), str(path))
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        return model_bytes(self._loaded())

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "StructpercComponent":
        self._use(model_from_bytes(data), "<bytes>")
        return self
