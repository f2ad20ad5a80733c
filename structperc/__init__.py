"""structperc: sequence tagging with the averaged structured perceptron.

Chunking, NER, POS tagging and Chinese word segmentation from CoNLL files, plain lists or
`datasets.Dataset`, with CRFsuite-compatible templates, compiled training and vectorized decoding.
"""
from __future__ import annotations

from structperc.version import __version__

__all__ = ["Tagger", "Segmenter", "Corpus", "InputError", "ModelFormatError", "__version__"]


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
    if name in ("InputError", "ModelFormatError"):
        from structperc import errors
        return getattr(errors, name)
    raise AttributeError(f"module 'structperc' has no attribute {name!r}")
