"""Chinese word segmentation: `Segmenter` (defined in `structperc.segmenter`; this name is kept for
code written before the package was reorganised)."""
from structperc.segmenter import Segmenter

__all__ = ["Segmenter"]
