"""Subprocess worker for scripts/bench/bench_crfsuite.py: one measured job per process.

Each job runs in a fresh interpreter so that the parent can time it from process start to exit and
read its peak RSS with ``os.wait4``. The job prints one JSON line with its own internal figures on
standard output (the parent keeps the last line).

Jobs
----
crf-train   read a corpus (``--format``: CoNLL columns, CoNLL-U, or segmented Chinese text, one
            sentence a line), build CRFsuite attribute lists, append them, train the averaged
            perceptron (``pycrfsuite.Trainer(algorithm="ap")``), save the model.
            ``--materialise`` first builds every sentence's feature lists in memory (as
            python-crfsuite's tutorial notebook does) and appends afterwards.
crf-tag     read a CoNLL / CoNLL-U file, build features, tag each sentence with ``pycrfsuite.Tagger``,
            write every token line with the predicted tag appended (CoNLL-U: comments dropped, a tab
            before the tag); or (``--format raw``) read raw Chinese lines, tag their characters B/M/E/S,
            write one segmented line (words split by a space) per input line.
sp-train    train structperc through its Python API (``Tagger.train``, or ``Segmenter.train`` with
            ``--api segmenter``, with an epoch callback) and save; reports the pure training-loop
            seconds of every epoch.

Feature functions (``--features``):

chunk  CRFsuite's example/chunking.py and example/crfutils.py exactly (``apply_templates``,
       ``__BOS__``/``__EOS__`` on the first/last token, ``escape`` of ':' as done by
       ``to_crfsuite``), plus a ``bias`` attribute on every token because structperc's ``crfsuite``
       template preset has one.
cws    HanLP's seven character templates C-1, C0, C+1, C-2C-1, C-1C0, C0C+1, C+1C+2 through
       ``apply_templates`` (templates reaching outside the sentence are skipped, as crfutils does),
       ``escape``, plus ``bias``.
ner    the sklearn-crfsuite tutorial's ``word2features`` (bias, word.lower(), word[-3:], word[-2:],
       isupper/istitle/isdigit, postag, postag[:2]; lower/istitle/isupper/postag/postag[:2] of the
       previous and next word; BOS/EOS), as attribute strings ``name=value``. The flags are the
       strings ``…=0``/``…=1`` (both values are attributes, as in structperc's ``isupper(w[0])``
       template), where the tutorial's dicts would give ``False`` a zero weight.
pos    the same without the POS features.

``--lang CODE`` (crf-train, crf-tag) adds to any of them the Brown-cluster attributes structperc's ``train --lang``
adds to a preset (`with_clusters`), read from the same table.
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


def parse_fields(spec: str) -> list[tuple[str, int]]:
    """``"w,pos,y"`` (columns left to right) or ``"w=2,y=4"`` (1-based columns) → [(name, index)]."""
    out = []
    for i, item in enumerate(spec.split(",")):
        name, _, col = item.partition("=")
        out.append((name, int(col) - 1 if col else i))
    return out


def conllu_iter(fh, fields: list[tuple[str, int]], keep_line: bool = False) -> Iterator[Sentence]:
    """CoNLL-U words: ``#`` comments, multi-word token lines (``1-2``) and empty nodes (``8.1``)
    skipped; a blank line ends a sentence; tab-separated columns."""
    X: Sentence = []
    for line in fh:
        line = line.rstrip("\n")
        if not line:
            if X:
                yield X
            X = []
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if "-" in cols[0] or "." in cols[0]:
            continue
        item = {"F": []}
        if keep_line:
            item["_line"] = line
        for name, i in fields:
            item[name] = cols[i]
        X.append(item)
    if X:
        yield X


def words_to_tags(words: list[str]) -> list[str]:
    """B/M/E/S tags of the characters of ``words`` (a one-character word is S, else B M… E)."""
    tags: list[str] = []
    for w in words:
        tags.extend(("S",) if len(w) == 1 else ("B", *("M" * (len(w) - 2)), "E"))
    return tags


def segmented_iter(fh) -> Iterator[Sentence]:
    """Segmented text (one sentence a line, words split by whitespace) as characters 'c' with B/M/E/S
    tags 'y'; empty lines are skipped."""
    for line in fh:
        words = line.split()
        if words:
            yield [{"F": [], "c": ch, "y": tag}
                   for ch, tag in zip("".join(words), words_to_tags(words))]


def read_sentences(fh, fmt: str, fields: str, keep_line: bool = False) -> Iterator[Sentence]:
    if fmt == "segmented":
        return segmented_iter(fh)
    parsed = parse_fields(fields)
    if fmt == "conllu":
        return conllu_iter(fh, parsed, keep_line)
    if any(i != k for k, (_, i) in enumerate(parsed)):
        raise ValueError("CoNLL fields are positional: name them left to right")
    return readiter(fh, [name for name, _ in parsed], keep_line=keep_line)


def tags_to_words(chars: str, tags: list[str]) -> list[str]:
    """Words from characters and B/M/E/S tags: a word ends after E or S; B or S always start one.

    The same as `structperc.labels.bmes.tags_to_words`, copied on purpose: importing structperc
    would load numpy into the CRFsuite process and charge its start-up to CRFsuite's timings.
    """
    words: list[str] = []
    cur: list[str] = []
    for ch, tag in zip(chars, tags):
        if tag in ("B", "S") and cur:
            words.append("".join(cur))
            cur = []
        cur.append(ch)
        if tag in ("E", "S"):
            words.append("".join(cur))
            cur = []
    if cur:
        words.append("".join(cur))
    return words


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


#: HanLP 1.x's seven CWS templates: C-1, C0, C+1, C-2C-1, C-1C0, C0C+1, C+1C+2.
CWS_TEMPLATES = (
    (("c", -1),), (("c", 0),), (("c", 1),),
    (("c", -2), ("c", -1)), (("c", -1), ("c", 0)), (("c", 0), ("c", 1)), (("c", 1), ("c", 2)),
)


def cws_features(X: Sentence) -> list[list[str]]:
    """HanLP's seven templates (crfutils-style, skipping those outside the sentence) + bias."""
    apply_templates(X, CWS_TEMPLATES)
    return [[escape(a) for a in x.pop("F")] + ["bias"] for x in X]


def _flag(value: bool) -> str:
    return "1" if value else "0"


def _tutorial_features(X: Sentence, with_pos: bool) -> list[list[str]]:
    """sklearn-crfsuite tutorial's word2features as 'name=value' attribute strings."""
    n = len(X)
    out = []
    for i, tok in enumerate(X):
        word = tok["w"]
        f = ["bias", "word.lower()=" + word.lower(), "word[-3:]=" + word[-3:],
             "word[-2:]=" + word[-2:], "word.isupper()=" + _flag(word.isupper()),
             "word.istitle()=" + _flag(word.istitle()), "word.isdigit()=" + _flag(word.isdigit())]
        if with_pos:
            postag = tok["pos"]
            f += ["postag=" + postag, "postag[:2]=" + postag[:2]]
        if i > 0:
            word1 = X[i - 1]["w"]
            f += ["-1:word.lower()=" + word1.lower(), "-1:word.istitle()=" + _flag(word1.istitle()),
                  "-1:word.isupper()=" + _flag(word1.isupper())]
            if with_pos:
                postag1 = X[i - 1]["pos"]
                f += ["-1:postag=" + postag1, "-1:postag[:2]=" + postag1[:2]]
        else:
            f.append("BOS")
        if i < n - 1:
            word1 = X[i + 1]["w"]
            f += ["+1:word.lower()=" + word1.lower(), "+1:word.istitle()=" + _flag(word1.istitle()),
                  "+1:word.isupper()=" + _flag(word1.isupper())]
            if with_pos:
                postag1 = X[i + 1]["pos"]
                f += ["+1:postag=" + postag1, "+1:postag[:2]=" + postag1[:2]]
        else:
            f.append("EOS")
        out.append(f)
    return out


def ner_features(X: Sentence) -> list[list[str]]:
    return _tutorial_features(X, with_pos=True)


def pos_features(X: Sentence) -> list[list[str]]:
    return _tutorial_features(X, with_pos=False)


def with_clusters(featurize: Callable[[Sentence], list[list[str]]], lang: str) \
        -> Callable[[Sentence], list[list[str]]]:
    """``featurize`` plus the Brown-cluster attributes structperc's ``--lang`` adds to a preset
    (`structperc.features.templates.CLUSTER_WINDOW`: path prefixes of 4, 6, 10 and 20 bits at offsets −1, 0, +1,
    from the same table), so that both sides train on the same information: ``clu6[-1]=010110``; ``<unk>`` for a
    word without a path and structperc's ``__BOS__``/``__EOS__`` past the sentence."""
    from structperc.features.resources.language import language_clusters

    clusters = language_clusters(lang)

    def featurize_with_clusters(X: Sentence) -> list[list[str]]:
        words = [tok["w"] for tok in X]
        paths = [clusters.path(w) for w in words]
        out = featurize(X)
        for t, attributes in enumerate(out):
            for i in (-1, 0, 1):
                p = t + i
                path = paths[p] if 0 <= p < len(words) else None
                pad = "__BOS__" if p < 0 else "__EOS__" if p >= len(words) else "<unk>"
                for n in (4, 6, 10, 20):
                    attributes.append(escape(f"clu{n}[{i}]={path[:n] if path else pad}"))
        return out
    return featurize_with_clusters


#: Feature functions by name (the parent's task configs refer to these names).
FEATURES: dict[str, Callable[[Sentence], list[list[str]]]] = {
    "chunk": chunk_features,
    "cws": cws_features,
    "ner": ner_features,
    "pos": pos_features,
}


# ----------------------------------------------------------------------------- jobs

def crf_train(args) -> dict:
    import pycrfsuite

    featurize = FEATURES[args.features] if not args.lang else with_clusters(FEATURES[args.features], args.lang)
    started = time.perf_counter()
    trainer = pycrfsuite.Trainer(algorithm="ap", verbose=False)
    trainer.set_params({"max_iterations": args.epochs})
    n_tokens = n_sentences = 0
    with open(args.train, encoding="utf-8") as fh:
        if args.materialise:
            sents = list(read_sentences(fh, args.format, args.fields))
            X_train = [featurize(s) for s in sents]
            y_train = [[tok[args.label] for tok in s] for s in sents]
            for xseq, yseq in zip(X_train, y_train):
                trainer.append(xseq, yseq)
                n_tokens += len(yseq)
            n_sentences = len(y_train)
        else:
            for s in read_sentences(fh, args.format, args.fields):
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

    featurize = FEATURES[args.features] if not args.lang else with_clusters(FEATURES[args.features], args.lang)
    tagger = pycrfsuite.Tagger()
    tagger.open(args.model)
    n_tokens = 0
    with open(args.input, encoding="utf-8") as fh, open(args.output, "w", encoding="utf-8") as out:
        if args.format == "raw":
            # One segmented line per input line; whitespace inside a line is a sure word boundary.
            for line in fh:
                words: list[str] = []
                for piece in line.split():
                    X = [{"F": [], "c": ch} for ch in piece]
                    words.extend(tags_to_words(piece, tagger.tag(featurize(X))))
                    n_tokens += len(piece)
                out.write(" ".join(words) + "\n")
            return {"n_tokens": n_tokens}
        sep = "\t" if args.format == "conllu" else " "
        first = True
        for s in read_sentences(fh, args.format, args.fields, keep_line=True):
            lines = [tok["_line"] for tok in s]
            tags = tagger.tag(featurize(s))
            if not first:
                out.write("\n")
            out.write("".join(f"{line}{sep}{tag}\n" for line, tag in zip(lines, tags)))
            first = False
            n_tokens += len(s)
    return {"n_tokens": n_tokens}


def sp_train(args) -> dict:
    reports = []
    params = json.loads(args.params)
    if args.api == "segmenter":
        from structperc.segmenter import Segmenter

        model = Segmenter.train(args.train, template=args.template, epochs=args.epochs,
                                callback=reports.append, **params)
        tagger = model.tagger_
    else:
        from structperc import Tagger

        if args.columns:
            params["columns"] = args.columns.split(",")
        tagger = model = Tagger.train(args.train, template=args.template, epochs=args.epochs,
                                      callback=reports.append, **params)
    model.save(args.model)
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
    p.add_argument("--format", choices=("conll", "conllu", "segmented"), default="conll")
    p.add_argument("--fields", default="", help="comma-separated field names, e.g. w,pos,y, or "
                   "name=column (1-based), e.g. w=2,y=4 for CoNLL-U; unused for segmented text")
    p.add_argument("--label", default="y", help="the field holding the gold label")
    p.add_argument("--materialise", action="store_true",
                   help="build all feature lists first, then append (tutorial-notebook style)")
    p.add_argument("--lang", default=None, help="add the language's cluster attributes (as structperc's --lang)")
    p.set_defaults(run=crf_train)

    p = sub.add_parser("crf-tag")
    p.add_argument("--model", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--features", choices=sorted(FEATURES), required=True)
    p.add_argument("--format", choices=("conll", "conllu", "raw"), default="conll")
    p.add_argument("--fields", default="")
    p.add_argument("--lang", default=None, help="add the language's cluster attributes (as structperc's --lang)")
    p.set_defaults(run=crf_tag)

    p = sub.add_parser("sp-train")
    p.add_argument("--train", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--api", choices=("tagger", "segmenter"), default="tagger")
    p.add_argument("--columns", default="", help="comma-separated (empty: the task's)")
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
