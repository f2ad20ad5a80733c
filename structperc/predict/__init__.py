"""One prediction API over a `~structperc.model.schema.Model`: featurize, constrain, decode, marginals,
k-best lists and calibration in the data's tag scheme, and documents tagged in context (the one place
that knows the document window). Every face (`Tagger`, `Segmenter`, the files and the service, Dask,
spaCy) predicts through these calls."""
from __future__ import annotations

from structperc.predict.inference import (
    UNCALIBRATED,
    Allowed,
    Forced,
    Tagged,
    TaggingSetup,
    apart,
    best_ids,
    calibrate,
    calibration_report,
    confidence_temperature,
    constraint_mask,
    data_marginals,
    decode,
    document_window,
    featurize,
    gold_ids,
    in_context,
    k_best,
    marginal_dicts,
    path_probabilities,
    projection_matrix,
    tag_corpus,
    tag_in_context,
    tagging_setup,
    token_confidence,
    told_elsewhere,
    with_first_stage,
    write_tagged,
)

__all__ = ["Allowed", "Forced", "Tagged", "TaggingSetup", "UNCALIBRATED", "apart", "best_ids", "calibrate",
           "calibration_report", "confidence_temperature", "constraint_mask", "data_marginals", "decode",
           "document_window", "featurize", "gold_ids", "in_context", "k_best", "marginal_dicts",
           "path_probabilities", "projection_matrix", "tag_corpus", "tag_in_context", "tagging_setup",
           "token_confidence", "told_elsewhere", "with_first_stage", "write_tagged"]
