"""Subprocess worker for scripts/bench_crfsuite.py: one measured job per process.

Each job runs in a fresh interpreter so that the parent can time it from process start to exit and
read its peak RSS with ``os.wait4``. The job prints one JSON line with its own internal figures on
standard output (the parent keeps the last line).

Jobs
----
crf-train   read a CoNLL file, build CRFsuite attribute lists, append them, train the averaged
            perceptron (``pycrfsuite.Trainer(algorithm="ap")``), save the model.
            ``--materialise`` first builds every sentence's feature lists in memory (as
            python-crfsuite's tutorial notebook does) and appends afterwards.
crf-tag     read a CoNLL file, build features, tag each sentence with ``pycrfsuite.Tagger``, write
            every input line with the predicted tag appended.
sp-train    train structperc through its Python API (``Tagger.train`` with an epoch callback) and
            save; reports the pure training-loop seconds of every epoch.

The CRFsuite features follow CRFsuite's example/chunking.py and example/crfutils.py exactly
(``apply_templates``, ``__BOS__``/``__EOS__`` on the first/last token, ``escape`` of ':' as done by
``to_crfsuite``), plus a ``bias`` attribute on every token because structperc's ``crfsuite`` template
preset has one.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Callable, Iterator

# ----------------------------------------------------------------------------- CoNLL reading

Sentence = list[dict]  # one dict per token: field name -> value, plus 'F': list of attributes


def readiter(fh, names: list[str], sep: str = " ", keep_line: bool = False) -> Iterator[Sentence]:
    """crfutils.readiter: sentences as lists of {field: value, 'F': []} (blank line = boundary).

    ``keep_line`` also keeps the raw line (key '_line') so that tagging can echo it.
    """
    X: Sentence = []
    for line in fh:
        line = line.strip("\n")
        if not line:
            if X:
                yield X
            X = []
            continue
        fields = line.split(sep)
        if len(fields) < len(names):
            raise ValueError(f"Too few fields ({len(fields)}) for {names!r}\n{line}")
        item = {"F": []}
        if keep_line:
            item["_line"] = line
        for i, name in enumerate(names):
            item[name] = fields[i]
        X.append(item)
    if X:
        yield X


# ----------------------------------------------------------------------------- features

#: CRFsuite example/chunking.py: (field, offset) conjunctions.
CHUNK_TEMPLATES = (
    (("w", -2),), (("w", -1),), (("w", 0),), (("w", 1),), (("w", 2),),
    (("w", -1), ("w", 0)), (("w", 0), ("w", 1)),
    (("pos", -2),), (("pos", -1),), (("pos", 0),), (("pos", 1),), (("pos", 2),),
    (("pos", -2), ("pos", -1)), (("pos", -1), ("pos", 0)), (("pos", 0), ("pos", 1)),
    (("pos", 1), ("pos", 2)),
    (("pos", -2), ("pos", -1), ("pos", 0)), (("pos", -1), ("pos", 0), ("pos", 1)),
    (("pos", 0), ("pos", 1), ("pos", 2)),
)


def apply_templates(X: Sentence, templates) -> None:
    """crfutils.apply_templates: append 'name=value' attributes; skip templates reaching outside."""
    for template in templates:
        name = "|".join("%s[%d]" % (f, o) for f, o in template)
        n = len(X)
        for t in range(n):
            values = []
            for field, offset in template:
                p = t + offset
                if p < 0 or p >= n:
                    values = []
                    break
                values.append(X[p][field])
            if values:
                X[t]["F"].append("%s=%s" % (name, "|".join(values)))


def escape(src: str) -> str:
    """crfutils.escape (applied by crfutils.to_crfsuite to every attribute)."""
    return src.replace(":", "__COLON__")


def chunk_features(X: Sentence) -> list[list[str]]:
    """example/chunking.py's feature_extractor + bias, as one list of attribute strings per token.

    The attributes move out of the token dicts (``pop``) so that nothing is held twice.
    """
    apply_templates(X, CHUNK_TEMPLATES)
    if X:
        X[0]["F"].append("__BOS__")
        X[-1]["F"].append("__EOS__")
    return [[escape(a) for a in x.pop("F")] + ["bias"] for x in X]


#: Feature functions by name (the parent's task configs refer to these names).
FEATURES: dict[str, Callable[[Sentence], list[list[str]]]] = {
    "chunk": chunk_features,
}


# ----------------------------------------------------------------------------- jobs

def crf_train(args) -> dict:
    import pycrfsuite

    featurize = FEATURES[args.features]
    names = args.fields.split(",")
    started = time.perf_counter()
    trainer = pycrfsuite.Trainer(algorithm="ap", verbose=False)
    trainer.set_params({"max_iterations": args.epochs})
    n_tokens = n_sentences = 0
    with open(args.train, encoding="utf-8") as fh:
        if args.materialise:
            sents = list(readiter(fh, names))
            X_train = [featurize(s) for s in sents]
            y_train = [[tok[args.label] for tok in s] for s in sents]
            for xseq, yseq in zip(X_train, y_train):
                trainer.append(xseq, yseq)
                n_tokens += len(yseq)
            n_sentences = len(y_train)
        else:
            for s in readiter(fh, names):
                trainer.append(featurize(s), [tok[args.label] for tok in s])
                n_tokens += len(s)
                n_sentences += 1
    prepared = time.perf_counter()
    trainer.train(args.model)
    trained = time.perf_counter()
    log = trainer.logparser
    return {
        "n_tokens": n_tokens, "n_sentences": n_sentences,
        "prepare_seconds": prepared - started, "train_seconds": trained - prepared,
        "featgen_seconds": log.featgen_seconds, "n_features": log.featgen_num_features,
        "iterations": len(log.iterations),
        "iteration_seconds": [it.get("time") for it in log.iterations],
    }


def crf_tag(args) -> dict:
    import pycrfsuite

    featurize = FEATURES[args.features]
    names = args.fields.split(",")
    tagger = pycrfsuite.Tagger()
    tagger.open(args.model)
    n_tokens = 0
    with open(args.input, encoding="utf-8") as fh, open(args.output, "w", encoding="utf-8") as out:
        first = True
        for s in readiter(fh, names, keep_line=True):
            lines = [tok["_line"] for tok in s]
            tags = tagger.tag(featurize(s))
            if not first:
                out.write("\n")
            out.write("".join(f"{line} {tag}\n" for line, tag in zip(lines, tags)))
            first = False
            n_tokens += len(s)
    return {"n_tokens": n_tokens}


def sp_train(args) -> dict:
    from structperc import Tagger

    reports = []
    tagger = Tagger.train(args.train, columns=args.columns.split(","), template=args.template,
                          epochs=args.epochs, callback=reports.append, **json.loads(args.params))
    tagger.save(args.model)
    return {
        "n_tokens": sum(r.n_tokens for r in reports), "epochs": len(reports),
        "epoch_seconds": [r.seconds for r in reports],
        "n_labels": len(tagger.labels_), "n_attributes": tagger.features_.n_state_attributes,
    }


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="job", required=True)

    p = sub.add_parser("crf-train")
    p.add_argument("--train", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--features", choices=sorted(FEATURES), required=True)
    p.add_argument("--fields", required=True, help="comma-separated field names, e.g. w,pos,y")
    p.add_argument("--label", default="y", help="the field holding the gold label")
    p.add_argument("--materialise", action="store_true",
                   help="build all feature lists first, then append (tutorial-notebook style)")
    p.set_defaults(run=crf_train)

    p = sub.add_parser("crf-tag")
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--features", choices=sorted(FEATURES), required=True)
    p.add_argument("--fields", required=True)
    p.set_defaults(run=crf_tag)

    p = sub.add_parser("sp-train")
    p.add_argument("--train", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--columns", required=True)
    p.add_argument("--template", required=True)
    p.add_argument("--params", default="{}", help="JSON keyword arguments for Tagger.train")
    p.set_defaults(run=sp_train)
    return ap.parse_args(argv)


def main(argv=None) -> None:
    args = parse_args(argv)
    result = args.run(args)
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
