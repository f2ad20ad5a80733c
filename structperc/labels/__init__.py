"""Labels: label sets, span and BMES schemes, and the transitions a scheme allows (second floor of
the data flow; imports nothing of the package but `structperc.errors`)."""
from structperc.labels.constraints import SCHEMES, transition_mask, valid_sequence
from structperc.labels.label_set import LabelSet

__all__ = ["LabelSet", "SCHEMES", "transition_mask", "valid_sequence"]
