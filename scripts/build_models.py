#!/usr/bin/env python
"""Build the shipped models (`structperc/shipped/NAME.zip`) from the corpora, one command each.

    SOURCE_DATE_EPOCH=1795737600 python scripts/build_models.py en-upos     # or: all
    python scripts/build_models.py zh-seg --out /tmp/models                # elsewhere than the package
    python scripts/build_models.py es-ner --sample 300 --out /tmp/s        # the first 300 sentences only

Each recipe trains with `structperc train` (settings chosen on held-out data: a dev file through --dev,
which keeps the best epoch, or --dev-split on the training file; the test file is not read until the
model is trained), drops the attributes whose weights are all zero (`compress --keep 1.0`: the same
predictions, half the bytes), scores the test file once with `structperc eval`, writes the model card
into the model's metadata (``provenance["card"]``: corpus and licence, the command, the test score, the
date) and saves the archive deflated. With ``SOURCE_DATE_EPOCH`` set, the same command gives the same
bytes. ``en-chunk`` reads the parts of speech that ``en-xpos`` predicts (build en-xpos first): it is
trained and tested on CoNLL-2000 with its POS column replaced by en-xpos's tags, so raw text works and
training sees the tags it will be given.

Corpora: ../shared/corpora beside the clone (``--corpora`` to point elsewhere); the language resources
come from the `resources` extra (spacy-lookups-data, jieba).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO.parent / "shared" / "corpora"
SHIPPED = REPO / "structperc" / "shipped"

EWT_LICENCE = "CC BY-SA 4.0 (Universal Dependencies English Web Treebank)"
CONLL2002_LICENCE = ("research use: CoNLL-2002 shared task data (EFE newswire, Spanish; De Morgen, Dutch); "
                     "the corpus terms allow research use only")


@dataclass(frozen=True)
class Recipe:
    """How one shipped model is built. ``train`` is the `structperc train` command's arguments with
    ``{C}`` for the corpora folder, ``{W}`` for the work folder (files a ``prepare`` step wrote) and ``{R}`` for
    the repository (a template file of ``scripts/templates``);
    ``tests`` names each test file scored (the first is the model's headline score)."""

    task: str
    language: str
    corpus: str
    licence: str
    train: tuple[str, ...]
    tests: dict[str, str]
    description: str
    reads: dict[str, str] = field(default_factory=dict)  # column -> shipped model that predicts it


def ewt_pos(description: str, *options: str) -> Recipe:
    """A tagger of EWT's parts of speech (en-upos, en-xpos): trained on EWT train, dev picking the epoch,
    scored on EWT test; ``options`` (e.g. ``"--tag-column", "xpos"``) go right after ``--task pos``,
    where the built models' cards record them."""
    return Recipe(
        "pos", "en", "UD English EWT (train; dev picks the epoch)", EWT_LICENCE,
        ("--train", "{C}/ud_en_ewt/en_ewt-ud-train.conllu", "--task", "pos", *options,
         "--dev", "{C}/ud_en_ewt/en_ewt-ud-dev.conllu", "--epochs", "20", "--lang", "en"),
        {"EWT test": "{C}/ud_en_ewt/en_ewt-ud-test.conllu"},
        description)


RECIPES: dict[str, Recipe] = {
    "en-upos": ewt_pos("English universal parts of speech (UPOS)"),
    "en-xpos": ewt_pos("English Penn Treebank tags (EWT's XPOS), as NLTK's tagger gives", "--tag-column", "xpos",
                       "--template", "{R}/scripts/templates/en-xpos.txt"),
    "en-chunk": Recipe(
        "chunk", "en", "CoNLL-2000 (WSJ; POS column from en-xpos; 10% of train picks the epochs; 3 seeds averaged)",
        "research use: CoNLL-2000 shared task data (Penn Treebank WSJ sections 15-18, 20)",
        ("--train", "{W}/conll2000-train.xpos.txt", "--columns", "word,pos,chunk", "--dev-split", "0.1",
         "--epochs", "15", "--lang", "en", "--seeds", "0,1,2"),
        {"CoNLL-2000 test, POS from en-xpos": "{W}/conll2000-test.xpos.txt",
         "CoNLL-2000 test, gold POS": "{C}/conll2000/test.txt"},
        "English base phrase chunks (IOB2), reading en-xpos's tags", reads={"pos": "en-xpos"}),
    "es-ner": Recipe(
        "ner", "es", "CoNLL-2002 Spanish (esp.train, words only; esp.testa picks the epoch and the settings)",
        CONLL2002_LICENCE,
        ("--train", "{C}/conll2002/esp.train", "--task", "ner", "--columns", "word,_,ner",
         "--dev", "{C}/conll2002/esp.testa", "--epochs", "15", "--order", "2", "--two-stage", "--lang", "es"),
        {"esp.testb": "{C}/conll2002/esp.testb"},
        "Spanish named entities (PER, LOC, ORG, MISC), from words alone"),
    "nl-ner": Recipe(
        "ner", "nl", "CoNLL-2002 Dutch (ned.train, words only; ned.testa picks the epoch and the settings)",
        CONLL2002_LICENCE,
        ("--train", "{C}/conll2002/ned.train", "--task", "ner", "--columns", "word,_,ner",
         "--dev", "{C}/conll2002/ned.testa", "--epochs", "15", "--order", "2", "--two-stage",
         "--lang", "de"),
        {"ned.testb": "{C}/conll2002/ned.testb"},
        "Dutch named entities (PER, LOC, ORG, MISC), from words alone (with spaCy's German word clusters)"),
    "zh-seg": Recipe(
        "cws", "zh", "SIGHAN 2008 SXU (train; 10% of it picks the epochs)",
        "research use: SIGHAN 2008 Chinese word segmentation bakeoff, Shanxi University (SXU) corpus",
        ("--train", "{C}/sighan2008_sxu/train.txt", "--task", "cws", "--dev-split", "0.1", "--epochs", "15",
         "--lang", "zh"),
        {"SXU test": "{C}/sighan2008_sxu/test.txt"},
        "Chinese word segmentation (with jieba's dictionary as lexicon columns)"),
}


def structperc(*args: str) -> None:
    """Run the command line (a child process: what a user runs, with its one-line errors)."""
    subprocess.run([sys.executable, "-m", "structperc.cli", *args], check=True)


def sample_file(src: Path, dst: Path, sentences: int) -> Path:
    """The first ``sentences`` sentences (blank-line separated; for segmented text: lines) of ``src``."""
    text = src.read_text(encoding="utf-8")
    if "\n\n" in text:
        parts = [p for p in text.split("\n\n") if p.strip()][:sentences]
        dst.write_text("\n\n".join(parts) + "\n\n", encoding="utf-8")
    else:
        dst.write_text("\n".join(text.splitlines()[:sentences]) + "\n", encoding="utf-8")
    return dst


def with_predicted_pos(src: Path, dst: Path, tagger) -> Path:
    """CoNLL-2000 ``word pos chunk`` lines with the POS column replaced by ``tagger``'s tags."""
    sents: list[list[list[str]]] = [[]]
    for line in src.read_text(encoding="utf-8").splitlines():
        if line.strip():
            sents[-1].append(line.split())
        elif sents[-1]:
            sents.append([])
    sents = [s for s in sents if s]
    tags = tagger.predict([[row[0] for row in s] for s in sents])
    out = ["\n".join(f"{row[0]} {t} {row[-1]}" for row, t in zip(s, ts)) for s, ts in zip(sents, tags)]
    dst.write_text("\n\n".join(out) + "\n\n", encoding="utf-8")
    return dst


def headline(report: dict) -> tuple[str, float]:
    """The metric and score a report leads with: span or word F1, else token accuracy (percent)."""
    micro = report.get("micro")
    for key, value in (("f1", micro.get("f1") if isinstance(micro, dict) else None), ("f1", report.get("f1")),
                       ("accuracy", report.get("accuracy"))):
        if isinstance(value, (int, float)):
            return key, round(100 * value, 2)
    raise KeyError(f"no f1 or accuracy in the report: {sorted(report)}")


def scrub(value, places: dict[str, str]):
    """``value`` with the build's folders written as ``$C`` and ``$W``: a model records where its files
    were, and a temporary folder's name would make every build's bytes differ."""
    if isinstance(value, str):
        for place, shown in places.items():
            value = value.replace(place, shown)
        return value
    if isinstance(value, dict):
        return {k: scrub(v, places) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, places) for v in value]
    return value


def build(name: str, out: Path, corpora: Path, sample: int | None = None) -> Path:
    from structperc import commands
    from structperc.model import schema
    from structperc.model.compress import compress
    from structperc.model.dates import record_date

    recipe = RECIPES[name]
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"structperc-build-{name}-") as tmp:
        work = Path(tmp)
        C = corpora
        if sample is not None:  # a small copy of every corpus file the recipe reads
            C = work / "corpora"
            for arg in (*recipe.train, *recipe.tests.values(), "{C}/conll2000/train.txt"):
                if arg.startswith("{C}/") and (corpora / arg[4:]).exists():
                    dst = C / arg[4:]
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    sample_file(corpora / arg[4:], dst, sample)
        if recipe.reads:
            upstream = commands.load(resolve_in(out, recipe.reads["pos"]))
            with_predicted_pos(C / "conll2000" / "train.txt", work / "conll2000-train.xpos.txt", upstream)
            with_predicted_pos(C / "conll2000" / "test.txt", work / "conll2000-test.xpos.txt", upstream)
        args = [a.replace("{C}", str(C)).replace("{W}", str(work)).replace("{R}", str(REPO)) for a in recipe.train]
        trained = work / "model"
        structperc("train", *args, "--model", str(trained))
        train_seconds = time.perf_counter() - start
        model = compress(schema.read(trained), keep=1.0)
        for part in model.parts():  # dropping all-zero attributes changes no prediction
            part.provenance.pop("compressed", None)
        places = {str(work): "$W", str(C): "$C", str(REPO): "."}
        model.provenance = scrub(model.provenance, places)
        if model.calibration is not None:
            model.calibration = scrub(model.calibration, places)
        scores = {}
        for label, test in recipe.tests.items():
            path = test.replace("{C}", str(C)).replace("{W}", str(work))
            schema.write(work / "scoring", model)
            metric, score = headline(commands.evaluate(work / "scoring", path))
            scores[label] = {"metric": metric, "score": score}
        shown = [a.replace("{C}", "$C").replace("{W}", "$W").replace("{R}/", "") for a in recipe.train]
        model.provenance["card"] = {
            "name": name, "task": recipe.task, "language": recipe.language, "description": recipe.description,
            "corpus": recipe.corpus, "licence": recipe.licence,
            "command": f"python scripts/build_models.py {name}" + (f" --sample {sample}" if sample else ""),
            "train": "structperc train " + " ".join(shown) + " --model M",
            "test": scores, "date": record_date(), "reads": dict(recipe.reads),
        }
        target = out / f"{name}.zip"
        schema.write(target, model, deflate=True)
    shown_scores = ", ".join(f"{k}: {v['metric']} {v['score']:.2f}" for k, v in scores.items())
    print(f"{name}: {target} {target.stat().st_size / 1e6:.2f} MB; {shown_scores}; trained in "
          f"{train_seconds:.0f} s", flush=True)
    return target


def resolve_in(out: Path, name: str) -> str:
    """An upstream model: the one just built in ``out`` if there, else the shipped one."""
    local = out / f"{name}.zip"
    return str(local) if local.exists() else name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="+", metavar="NAME", help=f"{', '.join(RECIPES)}, or all")
    ap.add_argument("--out", type=Path, default=SHIPPED, help="Where to write NAME.zip [the package's shipped/].")
    ap.add_argument("--corpora", type=Path, default=CORPORA)
    ap.add_argument("--sample", type=int, help="Build from the first N sentences of each file (a quick check).")
    args = ap.parse_args()
    names = list(RECIPES) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in RECIPES]
    if unknown:
        ap.error(f"unknown model {', '.join(unknown)} (known: {', '.join(RECIPES)})")
    if not args.corpora.is_dir():
        ap.error(f"{args.corpora}: no corpora there (--corpora)")
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for name in names:
        build(name, args.out, args.corpora, args.sample)


if __name__ == "__main__":
    main()
