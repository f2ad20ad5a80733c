"""structperc models inside spaCy: a pipeline component for taggers and a tokenizer for segmenters.

Install with ``pip install "structperc[spacy]"``. Both are registered through spaCy's entry points
(``spacy_factories`` and ``spacy_tokenizers`` in ``pyproject.toml``), so nothing needs importing::

    nlp = spacy.blank("en")
    nlp.add_pipe("structperc", config={"model": "en-upos"})
    [(t.text, t.pos_) for t in nlp("The cat sat on the mat .")]

    nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "structperc.Tokenizer.v1",
                                                          "model": "zh-seg"}}})
    [t.text for t in nlp("我爱北京天安门")]

``model`` is a shipped model's name (``structperc models`` lists them) or the path of a model
directory or ``.zip`` (e.g. ``"ner-es/"``, from ``structperc train``); a path that exists wins over
a name (`structperc.model.shipped.resolve`), and an unknown bare name is refused with one line
listing the shipped names. By assignment: ``nlp.tokenizer = StructpercTokenizer(nlp.vocab,
"zh-seg")`` (but only the config form is rebuilt by ``spacy.load`` of a saved pipeline).

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
`structperc.predict.tag_documents` call. An NER model's ``doc`` column looks at nearby sentences
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
from typing import Callable, Dict, Optional

try:
    from spacy.language import Language
    from spacy.util import registry
except ImportError as exc:  # pragma: no cover - exercised only without spaCy
    raise ImportError("structperc.spacy_component needs spaCy: pip install \"structperc[spacy]\"") from exc

from structperc.spacy.component import (
    ANNOTATIONS,
    CONFIDENCE,
    DEFAULT_COLUMNS,
    UPOS,
    StructpercComponent,
)
from structperc.spacy.loading import META_KEY, saved_copy
from structperc.spacy.tokenizer import StructpercTokenizer, words_and_spaces

__all__ = ["ANNOTATIONS", "CONFIDENCE", "DEFAULT_COLUMNS", "META_KEY", "UPOS", "StructpercComponent",
           "StructpercTokenizer", "create_tokenizer", "make_structperc", "words_and_spaces"]


@Language.factory("structperc", default_config={"model": None, "annotate": None, "span_key": "chunks",
                                                "columns": {}, "marginals": False, "overwrite": True})
def make_structperc(nlp: Language, name: str, model: Optional[str], annotate: Optional[str],
                    span_key: str, columns: Dict[str, str], marginals: bool,
                    overwrite: bool) -> StructpercComponent:
    """The ``"structperc"`` factory (registered through the ``spacy_factories`` entry point)."""
    return StructpercComponent(nlp, name, model, annotate=annotate, span_key=span_key, columns=columns,
                               marginals=marginals, overwrite=overwrite)


@registry.tokenizers("structperc.Tokenizer.v1")
def create_tokenizer(model: str) -> Callable[[Language], StructpercTokenizer]:
    """The ``structperc.Tokenizer.v1`` tokenizer (``spacy_tokenizers`` entry point): a segmenter
    model as the tokenizer, e.g. of ``spacy.blank("zh")``."""

    def make(nlp: Language) -> StructpercTokenizer:
        return StructpercTokenizer(nlp.vocab, model, deferred=saved_copy(nlp, "tokenizer", model))

    return make
