"""One prediction API over a `~structperc.model.schema.Model`. Every face (`Tagger`, `Segmenter`, the
files and the service, Dask, spaCy) predicts through these calls; none re-implements them.

The room, by job:

- `decoding`: featurize, constrain (`constraint_mask`), decode the best path (`best_ids`, `decode`),
  and the projection of the model's labels onto the data's tags (`projection_matrix`);
- `probabilities`: token marginals, path probabilities and k-best lists in the data's tags;
- `calibration`: the temperature of those probabilities (`confidence_temperature`), fitted on
  held-out data (`calibrate`) and scored (`calibration_report`);
- `documents`: documents tagged in context, the one place that knows the document window
  (`document_window`, `in_context`, `tag_in_context`, `apart`, `tag_documents`);
- `files`: how an input is read, tagged and written (`tagging_setup`, `write_tagged`);
- `assessment`: what a `Tagger` says about its own output (scores, probabilities).
"""
from __future__ import annotations

from structperc.predict.calibration import (
    UNCALIBRATED,
    calibrate,
    calibration_report,
    confidence_temperature,
    gold_ids,
    told_elsewhere,
)
from structperc.predict.decoding import (
    Allowed,
    Forced,
    best_ids,
    constraint_mask,
    decode,
    featurize,
    projection_matrix,
    shared_columns,
    voted_tags,
    with_columns,
    with_first_stage,
)
from structperc.predict.documents import (
    Tagged,
    TaggedDocuments,
    apart,
    by_sentence,
    document_window,
    in_context,
    tag_corpus,
    tag_documents,
    tag_in_context,
)
from structperc.predict.files import TaggingSetup, tagging_options, tagging_setup, write_tagged
from structperc.predict.probabilities import (
    data_marginals,
    distribution_dicts,
    k_best,
    marginal_dicts,
    path_probabilities,
    token_confidence,
)

__all__ = ["Allowed", "Forced", "Tagged", "TaggedDocuments", "TaggingSetup", "UNCALIBRATED", "apart", "best_ids",
           "by_sentence", "calibrate", "calibration_report", "confidence_temperature", "constraint_mask",
           "data_marginals", "decode", "distribution_dicts", "document_window", "featurize", "gold_ids",
           "in_context", "k_best", "marginal_dicts", "path_probabilities", "projection_matrix",
           "shared_columns", "tag_corpus", "tag_documents", "tag_in_context", "tagging_options", "tagging_setup",
           "token_confidence", "told_elsewhere", "voted_tags", "with_columns", "with_first_stage", "write_tagged"]
