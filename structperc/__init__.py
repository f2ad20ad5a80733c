"""structperc: sequence tagging with the averaged structured perceptron.

Chunking, NER, POS tagging and Chinese word segmentation from CoNLL files, plain lists or
`datasets.Dataset`, with CRFsuite-compatible templates, compiled training and vectorized decoding.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, overload

from structperc.version import __version__

if TYPE_CHECKING:  # what the lazy names below are, to a type checker (the package ships py.typed)
    from structperc.compiled.threads import threads
    from structperc.errors import InputError, ModelFormatError
    from structperc.io.corpus import Corpus
    from structperc.segmenter import Segmenter
    from structperc.tagger import Tagger

__all__ = ["Tagger", "Segmenter", "Corpus", "InputError", "ModelFormatError", "load", "threads", "__version__"]


#: The shipped models that segment (``structperc models``, task ``cws``): `load` gives a `Segmenter` for these
#: names, to a type checker too.
ShippedSegmenter = Literal["zh-seg"]


@overload
def load(model: ShippedSegmenter) -> Segmenter: ...


@overload
def load(model: str | os.PathLike) -> Tagger: ...


def load(model: str | os.PathLike) -> Tagger:
    """A model by shipped name (``"en-upos"``, ``"zh-seg"``: ``structperc models`` lists them) or by
    path (a directory saved by ``train`` or `Tagger.save`, or its ``.zip``; a path that exists wins
    over a name): a `Segmenter` for word segmentation, else a `Tagger` (a type checker knows a shipped
    segmenter's name, `ShippedSegmenter`; for a path, ``isinstance(model, Segmenter)`` tells)."""
    from structperc.commands.models import load as load_model

    return load_model(model)


def __getattr__(name: str):
    # Lazy: `import structperc` stays cheap (no numpy-heavy imports until something is used).
    if name == "Tagger":
        from structperc.tagger import Tagger
        return Tagger
    if name == "Segmenter":
        from structperc.segmenter import Segmenter
        return Segmenter
    if name == "Corpus":
        from structperc.io.corpus import Corpus
        return Corpus
    if name == "threads":  # ``with structperc.threads(4): tagger.predict(...)``: tagging on up to 4 threads
        from structperc.compiled.threads import threads
        return threads
    if name in ("InputError", "ModelFormatError"):
        from structperc import errors
        return getattr(errors, name)
    raise AttributeError(f"module 'structperc' has no attribute {name!r}")
