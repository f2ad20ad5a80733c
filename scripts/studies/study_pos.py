#!/usr/bin/env python
"""The POS lever study: UD English-EWT UPOS accuracy of template variants on the dev file.

    python scripts/studies/study_pos.py                       # every variant, seeds 0 1 2, dev figures only
    python scripts/studies/study_pos.py --variants default,+amb+lamb --seeds 0 --curves
    python scripts/studies/study_pos.py --variants none --ensemble +amb+lamb --ensemble-epochs 10   # seed averaging
    python scripts/studies/study_pos.py --variants none --timing 3       # training time, default vs the chosen one
    python scripts/studies/study_pos.py --variants none --test           # the test figure of the chosen variant and
                                                                 # of the default (once, at the end)

Protocol (nothing is chosen on test):

* every variant trains on en_ewt-ud-train with ``Tagger(task="pos", template=..., epochs=E, seed=s,
  tag_dictionary=True).fit(train, dev=dev)``: the dev file picks the epoch (as the README's measured
  command does); the table gives the dev accuracy of that epoch without the tag dictionary (the
  probe's figure) and with it (the dictionary's settings are its defaults, min_count 2 and threshold
  0.01, chosen on the dev file), and the epoch picked; means over ``--seeds``;
* the seed-averaging rows (``structperc.ensemble.train_seed_average``) have no dev set inside: their
  number of epochs is fixed beforehand (``--ensemble-epochs``, read off the single-seed curves);
* ``--test`` scores the test file once for `CHOSEN` and for ``default``.

Extra value functions (word classes, hyphen parts, number classes, …) are registered at run time in
``structperc.features.templates.FUNCTIONS`` (this script's `EXTRA`), in this process only. The
``amb``/``lamb`` columns (jackknifed ambiguity classes) are the package's since this study adopted them
(`structperc.features.ambiguity`); ``default`` is the preset before that.
"""
from __future__ import annotations

import argparse
import re
import statistics
import time
import unicodedata
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpora" / "ud_en_ewt"

# ----------------------------------------------------------------------------- extra value functions
_SUFFIXES = sorted(
    ["ing", "ed", "ly", "ion", "ions", "er", "ers", "est", "s", "es", "ies", "al", "ity", "ive", "able", "ible",
     "ness", "ment", "ments", "ful", "less", "ous", "ic", "ical", "ize", "ise", "ized", "y", "en", "ian", "ist",
     "ism", "ship", "ward", "wise", "like", "th", "ee", "an", "ary", "ery", "ory", "ate", "ated", "ish"],
    key=len, reverse=True)
_URL = re.compile(r"^(https?://|www\.)|\.(com|org|net|edu|gov|co\.uk|html?)(/|$)", re.I)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", re.I)


def _word_class(s: str) -> str:
    """An unknown-word signature (as in the Berkeley and Stanford taggers): capitalisation, digits,
    hyphen, period, and the longest known English suffix of the lowercased word."""
    if not s:
        return "E"
    if _EMAIL.match(s):
        return "EMAIL"
    if _URL.search(s):
        return "URL"
    out = []
    if s.isupper() and sum(ch.isalpha() for ch in s) > 1:
        out.append("AC")
    elif s[0].isupper():
        out.append("C")
    elif any(ch.isupper() for ch in s):
        out.append("c")
    if s.isdigit():
        out.append("N")
    elif any(ch.isdigit() for ch in s):
        out.append("D")
    if "-" in s:
        out.append("H")
    if "." in s:
        out.append("P")
    if not any(ch.isalnum() for ch in s):
        out.append("S")
    lower = s.lower()
    if any(ch.isalpha() for ch in s):
        for suffix in _SUFFIXES:
            if lower.endswith(suffix) and len(lower) > len(suffix) + 1:
                out.append("-" + suffix)
                break
    return "".join(out) or "x"


def _hyphen_last(s: str) -> str:
    """The lowercased part after the last hyphen of a hyphenated word ("-" for others): the head of
    "well-known", "state-of-the-art"."""
    if "-" not in s.strip("-"):
        return "-"
    return s.rsplit("-", 1)[1].lower() or "-"


def _hyphen_first(s: str) -> str:
    if "-" not in s.strip("-"):
        return "-"
    return s.split("-", 1)[0].lower() or "-"


def _number_class(s: str) -> str:
    """Digit strings by kind: year, integer, decimal, with separators, ordinal, time, mixed."""
    if not any(ch.isdigit() for ch in s):
        return "-"
    if re.fullmatch(r"(1[5-9]|20)\d\d", s):
        return "year"
    if s.isdigit():
        return "int" + str(min(len(s), 3))
    if re.fullmatch(r"\d+(st|nd|rd|th)", s, re.I):
        return "ord"
    if re.fullmatch(r"[$£€]?\d{1,3}(,\d{3})+(\.\d+)?", s) or re.fullmatch(r"[$£€]?\d*\.\d+", s):
        return "num"
    if re.fullmatch(r"\d{1,2}:\d\d(:\d\d)?([ap]m)?", s, re.I):
        return "time"
    if re.fullmatch(r"\d+(/\d+)+", s) or re.fullmatch(r"\d+(-\d+)+", s):
        return "range"
    if re.fullmatch(r"\d+(s|'s)", s):
        return "decade"
    return "mixed"


def _punct_class(s: str) -> str:
    """Unicode category of a token made only of punctuation or symbols (its first character's), else "-"."""
    if not s or any(ch.isalnum() for ch in s):
        return "-"
    return unicodedata.category(s[0]) + ("1" if len(s) == 1 else "n")


EXTRA = {
    "wclass": _word_class,
    "hyphlast": _hyphen_last,
    "hyphfirst": _hyphen_first,
    "numclass": _number_class,
    "punctclass": _punct_class,
    "const": lambda s: "x",  # const(w[-1]) is __BOS__ at the sentence start, "x" elsewhere
}


# ----------------------------------------------------------------------------- ambiguity classes
def register() -> None:
    """Register `EXTRA` in the template language (for this process only). The ``amb``/``lamb`` columns
    come from the package (`structperc.features.ambiguity`, learnt whenever templates read them)."""
    from structperc.features import templates

    templates.FUNCTIONS.update(EXTRA)


# ----------------------------------------------------------------------------- variants
def _pos_default() -> list[str]:
    from structperc.features.templates import preset

    # the preset before this study: without the ambiguity-class lines this study chose
    return [line for line in preset("pos") if "amb[" not in line]


LONG_AFFIX = ["suffix5(w[0])", "suffix6(w[0])", "prefix5(w[0])"]
WORD_CLASS = ["wclass(w[0])", "rare(w[0])|wclass(w[0])"]
RARE_CONJ = ["rare(w[0])|suffix1(w[0])", "rare(w[0])|suffix2(w[0])", "rare(w[0])|suffix4(w[0])",
             "rare(w[0])|suffix5(w[0])", "rare(w[0])|prefix2(w[0])", "rare(w[0])|prefix3(w[0])",
             "rare(w[0])|shortshape(w[0])|suffix3(w[0])"]
HYPHEN = ["hyphlast(w[0])", "hyphfirst(w[0])", "suffix3(w[0])|hashyphen(w[0])"]
SENT_START = ["istitle(w[0])|const(w[-1])", "shape(w[0])|const(w[-1])", "rare(w[0])|istitle(w[0])|const(w[-1])"]
NUM_PUNCT = ["numclass(w[0])", "punctclass(w[0])", "numclass(w[-1])", "numclass(w[1])"]
NEIGHBOURS = ["lower(w[-1])|lower(w[0])|lower(w[1])", "lower(w[-2])|lower(w[-1])|lower(w[0])",
              "lower(w[0])|lower(w[1])|lower(w[2])", "suffix1(w[1])", "suffix4(w[1])", "suffix2(w[-2])",
              "suffix2(w[2])"]
NEXT_SUFFIX = ["suffix3(w[0])|suffix2(w[1])", "suffix3(w[0])|suffix2(w[-1])", "shortshape(w[0])|lower(w[1])"]
TRANS = ["y[-1]|y[0]|shortshape(w[0])", "y[-1]|y[0]|suffix3(w[0])", "y[-1]|y[0]|istitle(w[0])"]
TRANS_WORD = ["y[-1]|y[0]|lower(w[0])"]
AMB = ["amb[-2]", "amb[-1]", "amb[0]", "amb[1]", "amb[2]", "amb[-1]|amb[0]", "amb[0]|amb[1]", "amb[-1]|amb[1]"]
LAMB = ["lamb[0]", "lamb[0]|shortshape(w[0])", "lamb[-1]", "lamb[1]"]
AMB_WIDE = ["amb[-2]|amb[-1]", "amb[1]|amb[2]", "amb[-1]|amb[0]|amb[1]", "lamb[-2]", "lamb[2]", "lamb[-1]|lamb[1]"]
AMB_LITE = ["amb[-1]", "amb[0]", "amb[1]", "amb[-1]|amb[0]", "amb[0]|amb[1]", "lamb[0]", "lamb[0]|shortshape(w[0])"]
AMB_CONJ = ["lower(w[0])|amb[1]", "lower(w[0])|amb[-1]", "y[-1]|y[0]|amb[0]", "suffix3(w[0])|amb[1]"]


#: Variants that also change the ambiguity classes' settings (module globals, set for the run).
SETTINGS: dict[str, dict] = {
    "+amb+lamb mc1": {"AMB_MIN_COUNT": 1},
    "+amb+lamb mc3": {"AMB_MIN_COUNT": 3},
    "+amb+lamb th0": {"AMB_THRESHOLD": 0.0},
    "+amb+lamb th.05": {"AMB_THRESHOLD": 0.05},
}


def variants() -> dict[str, list[str]]:
    d = _pos_default()
    out = {
        "default": d,
        "+long_affix": d + LONG_AFFIX,
        "+word_class": d + WORD_CLASS,
        "+rare_conj": d + RARE_CONJ,
        "+hyphen": d + HYPHEN,
        "+sent_start": d + SENT_START,
        "+num_punct": d + NUM_PUNCT,
        "+neighbours": d + NEIGHBOURS,
        "+next_suffix": d + NEXT_SUFFIX,
        "+trans": d + TRANS,
        "+trans_word": d + TRANS_WORD,
        "+amb": d + AMB,
        "+amb+conj": d + AMB + AMB_CONJ,
        "+lamb": d + LAMB,
        "+amb+lamb": d + AMB + LAMB,
        "+amb+lamb+conj": d + AMB + LAMB + AMB_CONJ,
        "+amb+lamb+long_affix": d + AMB + LAMB + LONG_AFFIX,
        "+amb+lamb+small": d + AMB + LAMB + LONG_AFFIX + SENT_START + HYPHEN + WORD_CLASS,
        "+amb+lamb lite": d + AMB_LITE,
        "+amb+lamb+wide": d + AMB + LAMB + AMB_WIDE,
        "+amb+lamb+small+wide": d + AMB + LAMB + LONG_AFFIX + SENT_START + HYPHEN + WORD_CLASS + AMB_WIDE,
    }
    for name in SETTINGS:
        out[name] = out[name.split()[0]]
    return out


#: The variant recommended after the dev comparison (see the report); ``--test`` scores it and the default.
CHOSEN = "+amb+lamb"


# ----------------------------------------------------------------------------- runs
def run(name: str, lines: list[str], seed: int, epochs: int, files: dict[str, Path]) -> dict:
    from structperc import Tagger

    globals().update({"AMB_MIN_COUNT": 2, "AMB_THRESHOLD": 0.01, **SETTINGS.get(name, {})})
    t0 = time.perf_counter()
    tagger = Tagger(task="pos", template=lines, epochs=epochs, seed=seed, tag_dictionary=True).fit(
        str(files["train"]), dev=str(files["dev"]))
    seconds = time.perf_counter() - t0
    curve = [r.dev_score for r in tagger.history_]
    train_seconds = sum(r.seconds for r in tagger.history_)
    with_dict = tagger.evaluate(str(files["dev"]))["accuracy"]
    return dict(variant=name, seed=seed, best_epoch=tagger.best_epoch_, dev=max(curve), dev_dict=with_dict,
                fit_seconds=seconds, epoch_seconds=train_seconds, curve=curve, tagger=tagger)


def run_ensemble(name: str, lines: list[str], seeds: list[int], epochs: int, files: dict[str, Path],
                 parts: tuple[str, ...] = ("dev",)) -> dict:
    from structperc.ensemble import train_seed_average

    globals().update({"AMB_MIN_COUNT": 2, "AMB_THRESHOLD": 0.01, **SETTINGS.get(name.split(" avg")[0], {})})
    t0 = time.perf_counter()
    tagger = train_seed_average(str(files["train"]), task="pos", template=lines, epochs=epochs, seeds=seeds,
                                tag_dictionary=True)
    seconds = time.perf_counter() - t0
    out = dict(variant=name, seed="+".join(map(str, seeds)), best_epoch=epochs, fit_seconds=seconds,
               epoch_seconds=float("nan"), curve=[])
    for part in parts:
        out[f"{part}_dict"] = tagger.evaluate(str(files[part]))["accuracy"]
        kept, tagger.tag_dictionary_ = tagger.tag_dictionary_, None
        out[part] = tagger.evaluate(str(files[part]))["accuracy"]
        tagger.tag_dictionary_ = kept
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, default=CORPUS, help="folder holding en_ewt-ud-*.conllu")
    p.add_argument("--variants", default="", help="comma-separated variant names (default: all; none: no dev rows)")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--epochs", type=int, default=20, help="epochs to run (the dev file picks the best)")
    p.add_argument("--ensemble", default="", help="variants to also train as seed averages of --seeds")
    p.add_argument("--ensemble-epochs", type=int, default=20)
    p.add_argument("--curves", action="store_true", help="print each run's dev curve")
    p.add_argument("--timing", type=int, default=0, metavar="ROUNDS",
                   help=f"time the fit of 'default' and {CHOSEN!r} (20 epochs, no dev), interleaved, ROUNDS rounds")
    p.add_argument("--timing-also", default="", help="more variants to time beside 'default' and the chosen one")
    p.add_argument("--test", action="store_true", help=f"score the test file once: {CHOSEN!r} and 'default'")
    args = p.parse_args()

    register()
    files = {part: args.corpus / f"en_ewt-ud-{part}.conllu" for part in ("train", "dev", "test")}
    for path in files.values():
        if not path.exists():
            raise SystemExit(f"error: {path} not found")
    table = variants()
    names = [n for n in args.variants.split(",") if n] or list(table)
    if names == ["none"]:  # only the --ensemble rows, --timing or --test
        names = []
    unknown = [n for n in names + [n for n in args.ensemble.split(",") if n] if n not in table]
    if unknown:
        raise SystemExit(f"error: unknown variant(s) {unknown} (known: {', '.join(table)})")
    seeds = [int(s) for s in args.seeds.split(",")]

    print(f"UD EWT UPOS, dev file {files['dev'].name}; seeds {seeds}; up to {args.epochs} epochs, dev picks")
    header = f"{'variant':<28} {'dev':>6} {'dev+dict':>8} {'epoch':>6} {'fit s':>6} {'epochs s':>8}  seeds"
    print(header)
    rows = []
    for name in names:
        runs = []
        for seed in seeds:
            r = run(name, table[name], seed, args.epochs, files)
            r.pop("tagger")
            runs.append(r)
            if args.curves:
                print(f"  {name} seed {seed}: " + " ".join(f"{100 * x:.2f}" for x in r["curve"]), flush=True)
        row = _row(name, runs, seeds)
        rows.append(row)
        print(row, flush=True)
    for name in [n for n in args.ensemble.split(",") if n]:
        r = run_ensemble(f"{name} avg{len(seeds)}", table[name], seeds, args.ensemble_epochs, files)
        print(f"{r['variant']:<28} {100 * r['dev']:6.2f} {100 * r['dev_dict']:8.2f} {r['best_epoch']:6d} "
              f"{r['fit_seconds']:6.1f} {'':>8}  {r['seed']} (fixed epochs)", flush=True)

    if args.timing:
        _timing(table, args.timing, files, [n for n in args.timing_also.split(",") if n])

    if args.test:
        print(f"\ntest (once; the dev file picks the epoch; seeds {seeds}):")
        for name in dict.fromkeys([CHOSEN, "default"]):
            accs, accs_dict = [], []
            for seed in seeds:
                r = run(name, table[name], seed, args.epochs, files)
                tagger = r["tagger"]
                accs_dict.append(tagger.evaluate(str(files["test"]))["accuracy"])
                tagger.tag_dictionary_ = None
                accs.append(tagger.evaluate(str(files["test"]))["accuracy"])
            print(f"{name:<28} test {100 * statistics.mean(accs):6.2f}  with the tag dictionary "
                  f"{100 * statistics.mean(accs_dict):6.2f}  per seed "
                  + " ".join(f"{100 * a:.2f}/{100 * b:.2f}" for a, b in zip(accs, accs_dict)))


def _timing(table: dict[str, list[str]], rounds: int, files: dict[str, Path], also: list[str]) -> None:
    """Wall-clock of ``Tagger(task="pos", template=…, epochs=20).fit(train)`` (features, jackknifed
    columns and training) and of the training epochs alone; the minimum over interleaved rounds."""
    from structperc import Tagger

    fit: dict[str, list[float]] = {}
    epochs: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name in dict.fromkeys(["default", CHOSEN, *also]):
            globals().update({"AMB_MIN_COUNT": 2, "AMB_THRESHOLD": 0.01, **SETTINGS.get(name, {})})
            t0 = time.perf_counter()
            tagger = Tagger(task="pos", template=table[name], epochs=20, seed=0).fit(str(files["train"]))
            fit.setdefault(name, []).append(time.perf_counter() - t0)
            epochs.setdefault(name, []).append(sum(r.seconds for r in tagger.history_))
    base_fit, base_epochs = min(fit["default"]), min(epochs["default"])
    print(f"\ntraining time, 20 epochs, min of {rounds} interleaved rounds:")
    for name in fit:
        print(f"{name:<28} fit {min(fit[name]):6.1f} s ({min(fit[name]) / base_fit:.2f}x)   "
              f"epochs {min(epochs[name]):6.1f} s ({min(epochs[name]) / base_epochs:.2f}x)")


def _row(name: str, runs: list[dict], seeds: list[int]) -> str:
    mean = statistics.mean
    per_seed = " ".join(f"{100 * r['dev']:.2f}/{100 * r['dev_dict']:.2f}@{r['best_epoch']}" for r in runs)
    return (f"{name:<28} {100 * mean(r['dev'] for r in runs):6.2f} {100 * mean(r['dev_dict'] for r in runs):8.2f} "
            f"{mean(r['best_epoch'] for r in runs):6.1f} {mean(r['fit_seconds'] for r in runs):6.1f} "
            f"{mean(r['epoch_seconds'] for r in runs):8.1f}  {per_seed}")


if __name__ == "__main__":
    main()
