"""A structperc `Segmenter` as spaCy's tokenizer (Chinese word segmentation): the text is kept
exactly (``doc.text == text``), a single space after a word being its trailing space and other
whitespace whitespace tokens, as spaCy's own tokenizer does (`spacy.util.get_words_and_spaces`, here
in linear time)."""
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.tokens import Doc
from spacy.util import minibatch
from spacy.vocab import Vocab

from structperc.errors import InputError
from structperc.spacy.loading import load_model, model_bytes, model_from_bytes, waiting

if TYPE_CHECKING:
    from structperc.segmenter import Segmenter
    from structperc.tagger import Tagger


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

    ``nlp.tokenizer = StructpercTokenizer(nlp.vocab, "zh-seg")``, or in a config
    ``{"@tokenizers": "structperc.Tokenizer.v1", "model": "zh-seg"}``; ``model`` is a shipped
    model's name or a model path (``"cws/"``).
    """

    def __init__(self, vocab: Vocab, model: Any, *, deferred: bool = False):
        self.vocab, self.model_path = vocab, model
        self.segmenter: Optional["Segmenter"] = None
        if not deferred:  # deferred: `from_disk` loads the copy saved with the pipeline
            self._use(load_model(model, "structperc tokenizer"), str(model))

    def _use(self, segmenter: "Tagger", where: str) -> None:
        from structperc.segmenter import Segmenter

        if not isinstance(segmenter, Segmenter):
            raise InputError(f"a {segmenter.task_.name!r} tagging model cannot segment text: the tokenizer "
                             "needs a word segmentation model (structperc train --task cws); add a "
                             "tagger with nlp.add_pipe(\"structperc\", ...)", where)
        self.segmenter = segmenter

    def _loaded(self) -> "Segmenter":
        if self.segmenter is None:
            raise waiting("structperc tokenizer")
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
        self._use(load_model(Path(path) / "model", "structperc tokenizer"), str(path))
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        return model_bytes(self._loaded())

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "StructpercTokenizer":
        self._use(model_from_bytes(data), "<bytes>")
        return self
