#!/usr/bin/env python
"""Benchmark structperc against python-crfsuite's averaged perceptron, side by side, in one run.

Both systems get the same corpus, the same feature template and the same number of epochs:

* CRFsuite: ``pycrfsuite.Trainer(algorithm="ap")`` with ``max_iterations = epochs``; the attributes
  are built in Python (one list of strings per token, appended sentence by sentence).
* structperc: the equivalent template (a preset, or a template file written to the work directory),
  via its CLI/API.

Tasks (``--task``):

* ``chunk`` — CoNLL-2000; CRFsuite's example/chunking.py + crfutils.py features plus ``bias`` vs
  structperc's ``crfsuite`` preset; IOB2, unconstrained on both sides. Span F1.
* ``ner`` — CoNLL-2002 Spanish (esp.train / esp.testb); the sklearn-crfsuite tutorial's features on
  both sides (structperc: a template file; ``--task ner --encoding iob2 --unconstrained``). Span F1.
* ``pos`` — UD English-EWT (CoNLL-U, UPOS); the tutorial's word features without POS. Token accuracy.
* ``cws`` — SIGHAN 2008 SXU; characters tagged B/M/E/S with HanLP's seven templates (structperc's
  ``hanlp-cws`` preset via ``Segmenter``/``structperc segment``). Tagging is segmentation of raw lines,
  counted in characters/s (target ≥ 3×). Word F1 on word character spans. Info rows also report
  structperc's default ``cws`` preset (dictionary features: a different template).

What is measured, and why (each timed figure is the median of ``--repeat`` runs; every run is a
fresh subprocess, run one after another because the machine is small and shared):

1. training throughput, token·epochs/s — the speed of the learning loop itself. CRFsuite: the time
   of ``trainer.train()`` (which includes its own feature generation and model writing);
   structperc: the sum of the epochs' ``EpochReport.seconds`` (pure training loop). Target ≥ 3×.
2. end-to-end training wall time, corpus file → saved model, process start-up included — what a
   user waits for. CRFsuite: a small worker (read, build features, append, train, save);
   structperc: ``structperc train``. Target ≤ 0.33×.
3. tagging throughput, tokens/s, token file → tagged file, start-up and feature extraction
   included; on the test file and on the test file repeated ``--tag-repeat`` times (the headline:
   start-up weighs less there). Target ≥ 5× (cws: characters/s, raw file → segmented file, ≥ 3×).
4. peak RSS of the training processes (``ru_maxrss`` from ``os.wait4``) — whether the model fits
   where CRFsuite's does. Compared with the streaming CRFsuite worker and with a variant that first
   materialises all feature lists (python-crfsuite's tutorial notebook style). Target ≤ 0.5×.
5. model size on disk. Target ≤ 1×.
6. test accuracy of both outputs — speed must not be bought with accuracy: span F1 (seqeval; chunk,
   ner), token accuracy (pos), word F1 on word character spans (cws).
7. numba start-up: ``structperc train`` with an empty ``NUMBA_CACHE_DIR`` vs the same, warm, cache.
   All other structperc runs use a private cache warmed by that first run, so the figures neither
   depend on nor touch the package's own ``__pycache__``.

A further task is an entry in ``TASKS`` plus, if its features differ, a feature function in
``_bench_crfsuite_worker.FEATURES``.

    python scripts/bench/bench_crfsuite.py [--task chunk|ner|pos|cws] [--repeat 3] [--tag-repeat 5]
                                     [--json out.json]
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _kernels import require_current_build  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "_bench_crfsuite_worker.py"


# ============================================================================ task configuration

#: The sklearn-crfsuite tutorial's word2features as structperc templates (NER: with POS).
TUTORIAL_NER = (
    "bias", "lower(w[0])", "suffix3(w[0])", "suffix2(w[0])", "isupper(w[0])", "istitle(w[0])",
    "isdigit(w[0])", "pos[0]", "prefix2(pos[0])",
    "lower(w[-1])", "istitle(w[-1])", "isupper(w[-1])", "pos[-1]", "prefix2(pos[-1])",
    "lower(w[1])", "istitle(w[1])", "isupper(w[1])", "pos[1]", "prefix2(pos[1])",
)
TUTORIAL_POS = (
    "bias", "lower(w[0])", "suffix3(w[0])", "suffix2(w[0])", "isupper(w[0])", "istitle(w[0])",
    "isdigit(w[0])",
    "lower(w[-1])", "istitle(w[-1])", "isupper(w[-1])",
    "lower(w[1])", "istitle(w[1])", "isupper(w[1])",
)


@dataclass(frozen=True)
class TaskConfig:
    """Everything that differs between tasks."""

    train: Path                       # default corpora
    test: Path
    columns: tuple[str, ...]          # structperc --columns (empty: the task preset's)
    template: str                     # structperc --template: a preset name, or "" for template_lines
    crf_features: str                 # feature function name in the worker's FEATURES
    crf_fields: tuple[str, ...]       # CRFsuite field names of the training columns ("name=col" for CoNLL-U)
    crf_label: str                    # the CRFsuite field holding the gold label
    crf_input_fields: tuple[str, ...]  # fields read when tagging (no gold needed)
    sp_train_args: tuple[str, ...] = ()  # extra `structperc train` arguments
    sp_api_params: tuple[tuple[str, object], ...] = ()  # the same as Tagger.train keyword arguments
    template_lines: tuple[str, ...] = ()  # written to a template file when ``template`` is ""
    fmt: str = "conll"                # corpus format: conll, conllu, segmented (Chinese, one line a sentence)
    sp_api: str = "tagger"            # the worker's structperc API: tagger or segmenter
    metric: str = "span"              # span (seqeval F1), accuracy (token), words (word F1 on spans)
    unit: str = "tok"                 # what the throughput figures count: tok (tokens) or char
    tag_target: float = 5.0           # tagging throughput target, × CRFsuite
    eval_key: tuple[str, ...] = ("micro", "f1")  # the figure in `structperc eval --json`
    notes: tuple[str, ...] = ()       # task-specific lines for the report
    crf_lang: str | None = None       # CRFsuite also gets the language's cluster attributes (--lang)

    def template_arg(self, work: Path) -> str:
        """The --template value: the preset name, or a template file written into ``work``."""
        if self.template:
            return self.template
        path = work / "template.txt"
        if not path.exists():
            path.write_text("\n".join(self.template_lines) + "\n", encoding="utf-8")
        return str(path)

    def sp_cli_args(self, work: Path) -> list[str]:
        cols = ["--columns", ",".join(self.columns)] if self.columns else []
        return [*cols, "--template", self.template_arg(work), *self.sp_train_args]

    @property
    def segmenter(self) -> bool:
        return self.sp_api == "segmenter"

    @property
    def metric_label(self) -> str:
        return {"span": "test span F1, %", "accuracy": "test token accuracy, %",
                "words": "test word F1, %"}[self.metric]


CORPORA = REPO.parent / "shared/corpora"

TASKS: dict[str, TaskConfig] = {
    "chunk": TaskConfig(
        train=CORPORA / "conll2000/train.txt",
        test=CORPORA / "conll2000/test.txt",
        columns=("word", "pos", "chunk"), template="crfsuite",
        crf_features="chunk", crf_fields=("w", "pos", "y"), crf_label="y",
        crf_input_fields=("w", "pos"),
        # Like for like: CRFsuite learns the file's IOB2 tags with no transition constraints, so
        # structperc does too (its chunk task defaults to IOBES + constraints: more labels, more work).
        sp_train_args=("--task", "chunk", "--encoding", "iob2", "--unconstrained"),
        sp_api_params=(("encoding", "iob2"), ("constrained", False)),
        notes=("template: CRFsuite example/chunking.py (+ bias) = structperc's `crfsuite` preset; both "
               "learn the file's IOB2 tags without transition constraints.",),
    ),
    "ner": TaskConfig(
        train=CORPORA / "conll2002/esp.train",
        test=CORPORA / "conll2002/esp.testb",
        columns=("word", "pos", "ner"), template="", template_lines=TUTORIAL_NER,
        crf_features="ner", crf_fields=("w", "pos", "y"), crf_label="y",
        crf_input_fields=("w", "pos"),
        # Like for like: the NER preset otherwise trains in IOBES with constraints (and would build
        # the gazetteer column only if the template read `gaz`, which this one does not).
        sp_train_args=("--task", "ner", "--encoding", "iob2", "--unconstrained"),
        sp_api_params=(("task", "ner"), ("encoding", "iob2"), ("constrained", False)),
        tag_target=3.0,  # ≥ 3× in training and tagging
        notes=("template: the sklearn-crfsuite tutorial's word2features on both sides (bias, lower, "
               "suffix3, suffix2, isupper/istitle/isdigit, POS and POS[:2]; lower/istitle/isupper/POS/"
               "POS[:2] of the previous and next word). Differences: CRFsuite adds BOS/EOS flags and "
               "skips the ±1 features at the sentence ends, structperc reads the __BOS__/__EOS__ "
               "padding instead (each ±1 template fires its own padding value); the flags are 0/1 "
               "attribute strings on both sides.",
               "structperc: `--task ner --encoding iob2 --unconstrained`, i.e. IOB2 without "
               "transition constraints like CRFsuite; the gazetteer column is not built because the "
               "template does not read `gaz` (Tagger.fit builds it only then).",),
    ),
    "pos": TaskConfig(
        train=CORPORA / "ud_en_ewt/en_ewt-ud-train.conllu",
        test=CORPORA / "ud_en_ewt/en_ewt-ud-test.conllu",
        columns=(), template="", template_lines=TUTORIAL_POS,
        crf_features="pos", crf_fields=("w=2", "y=4"), crf_label="y", crf_input_fields=("w=2",),
        fmt="conllu", metric="accuracy", eval_key=("accuracy",),
        sp_train_args=("--task", "pos"), sp_api_params=(("task", "pos"),),
        tag_target=3.0,  # ≥ 3× in training and tagging
        notes=("template: the sklearn-crfsuite tutorial's word features without POS (bias, lower, "
               "suffix3, suffix2, isupper/istitle/isdigit; lower/istitle/isupper of ±1) on both "
               "sides; CRFsuite adds BOS/EOS flags, structperc reads __BOS__/__EOS__ padding. Tags: "
               "UPOS (column 4); POS is unconstrained, no scheme, on both sides.",),
    ),
    "cws": TaskConfig(
        train=CORPORA / "sighan2008_sxu/train.txt",
        test=CORPORA / "sighan2008_sxu/test.txt",
        columns=(), template="hanlp-cws",
        crf_features="cws", crf_fields=(), crf_label="y", crf_input_fields=(),
        fmt="segmented", sp_api="segmenter", metric="words", unit="char", tag_target=3.0,
        eval_key=("f1",), sp_train_args=("--task", "cws"),
        notes=("template: HanLP's seven character templates C-1, C0, C+1, C-2C-1, C-1C0, C0C+1, "
               "C+1C+2 on both sides (structperc's `hanlp-cws` preset). CRFsuite skips templates "
               "reaching outside the sentence (crfutils) and has a bias attribute; structperc reads "
               "__BOS__/__EOS__ padding and its `hanlp-cws` preset has no bias template. Both learn "
               "B/M/E/S; structperc's cws task decodes with B/M/E/S transition constraints, CRFsuite "
               "without.",
               "tagging = segmentation: raw lines (the test file's words joined) → one segmented line "
               "each, start-up included; throughput in characters/s (target ≥ 3×).",),
    ),
}


# ============================================================================ running subprocesses

class BenchError(RuntimeError):
    pass


@dataclass
class Measured:
    """One subprocess: wall seconds, peak RSS bytes, CPU seconds, its stderr and last stdout line."""

    wall: float
    maxrss: int
    cpu: float
    stderr: str = field(repr=False, default="")
    result: dict = field(default_factory=dict)


def run_measured(cmd: list[str], *, env: dict | None = None, stdout_path: Path | None = None,
                 json_stdout: bool = False) -> Measured:
    """Run ``cmd`` to completion; time it from spawn to exit and read its rusage with os.wait4."""
    if stdout_path is None:
        fd, name = tempfile.mkstemp(prefix="bench-out-")
        os.close(fd)
    out_path = stdout_path or Path(name)
    with open(out_path, "wb") as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    try:
        if proc.returncode != 0:
            raise BenchError(f"command failed with status {proc.returncode}: {' '.join(cmd)}\n"
                             f"{stderr[-3000:]}")
        result = {}
        if json_stdout:
            lines = out_path.read_text(encoding="utf-8").strip().splitlines()
            result = json.loads(lines[-1])
    finally:
        if stdout_path is None:
            out_path.unlink(missing_ok=True)
    # Linux reports ru_maxrss in KiB.
    return Measured(wall, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime, stderr, result)


def structperc_cmd() -> list[str]:
    """The `structperc` console script of this interpreter (or `python -m structperc.cli`)."""
    beside = Path(sys.executable).parent / "structperc"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("structperc")
    return [found] if found else [sys.executable, "-m", "structperc.cli"]


def child_env(numba_cache: Path | None = None) -> dict:
    env = dict(os.environ)
    if numba_cache is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_cache)
    return env


def dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# ============================================================================ the measurements

def crf_train(cfg: TaskConfig, train: Path, model: Path, epochs: int, materialise: bool) -> dict:
    cmd = [sys.executable, str(WORKER), "crf-train", "--train", str(train), "--model", str(model),
           "--epochs", str(epochs), "--features", cfg.crf_features, "--format", cfg.fmt,
           "--fields", ",".join(cfg.crf_fields), "--label", cfg.crf_label]
    if materialise:
        cmd.append("--materialise")
    if cfg.crf_lang:
        cmd += ["--lang", cfg.crf_lang]
    m = run_measured(cmd, env=child_env(), json_stdout=True)
    r = m.result
    return {"wall": m.wall, "maxrss": m.maxrss, "cpu": m.cpu, "model_bytes": dir_bytes(model),
            "train_seconds": r["train_seconds"], "prepare_seconds": r["prepare_seconds"],
            "iteration_seconds": sum(t for t in r["iteration_seconds"] if t is not None),
            "featgen_seconds": r["featgen_seconds"], "iterations": r["iterations"],
            "n_tokens": r["n_tokens"], "n_features": r["n_features"],
            "token_epochs_per_s": r["n_tokens"] * r["iterations"] / r["train_seconds"]}


def sp_train_cli(cfg: TaskConfig, train: Path, model: Path, epochs: int, numba_cache: Path,
                 quiet: bool = True, cli_args: list[str] | None = None) -> dict:
    """`structperc train` with the task's arguments (``cli_args`` replaces them)."""
    args = cfg.sp_cli_args(model.parent) if cli_args is None else cli_args
    cmd = structperc_cmd() + ["train", "--train", str(train), *args,
                              "--epochs", str(epochs), "--model", str(model)]
    if quiet:
        cmd.append("-q")
    m = run_measured(cmd, env=child_env(numba_cache))
    first = re.search(r"^epoch 1/\d+\s.*?\s([0-9.]+) s\s", m.stderr, re.M)
    return {"wall": m.wall, "maxrss": m.maxrss, "cpu": m.cpu, "model_bytes": dir_bytes(model),
            "first_epoch_seconds": float(first.group(1)) if first else None}


def sp_train_api(cfg: TaskConfig, train: Path, model: Path, epochs: int, numba_cache: Path) -> dict:
    cmd = [sys.executable, str(WORKER), "sp-train", "--api", cfg.sp_api, "--train", str(train),
           "--model", str(model), "--epochs", str(epochs), "--columns", ",".join(cfg.columns),
           "--template", cfg.template_arg(model.parent),
           "--params", json.dumps(dict(cfg.sp_api_params))]
    m = run_measured(cmd, env=child_env(numba_cache), json_stdout=True)
    r = m.result
    seconds = sum(r["epoch_seconds"])
    return {"wall": m.wall, "maxrss": m.maxrss, "epoch_seconds": r["epoch_seconds"],
            "train_seconds": seconds, "n_labels": r["n_labels"], "n_attributes": r["n_attributes"],
            "token_epochs_per_s": r["n_tokens"] / seconds}


def crf_tag(cfg: TaskConfig, model: Path, source: Path, output: Path, n_tokens: int) -> dict:
    """Tag (cws: segment raw lines) with the CRFsuite worker; ``n_tokens`` counts cfg.unit."""
    fmt = "raw" if cfg.fmt == "segmented" else cfg.fmt
    cmd = [sys.executable, str(WORKER), "crf-tag", "--model", str(model), "--input", str(source),
           "--output", str(output), "--features", cfg.crf_features, "--format", fmt,
           "--fields", ",".join(cfg.crf_input_fields)]
    if cfg.crf_lang:
        cmd += ["--lang", cfg.crf_lang]
    m = run_measured(cmd, env=child_env(), json_stdout=True)
    return {"wall": m.wall, "maxrss": m.maxrss, "tokens_per_s": n_tokens / m.wall}


def sp_tag(model: Path, source: Path, output: Path, n_tokens: int, numba_cache: Path,
           segment: bool = False) -> dict:
    """`structperc tag` (or `structperc segment` for a cws model) to ``output``, on one thread as CRFsuite tags
    (``--threads 1``; the command's default uses every CPU)."""
    cmd = structperc_cmd() + ["segment" if segment else "tag", "--model", str(model), "--threads", "1", str(source)]
    m = run_measured(cmd, env=child_env(numba_cache), stdout_path=output)
    return {"wall": m.wall, "maxrss": m.maxrss, "tokens_per_s": n_tokens / m.wall}


def numba_startup(cfg: TaskConfig, train: Path, model: Path, epochs: int, cache: Path) -> dict:
    """`structperc train` twice with one NUMBA_CACHE_DIR: empty the first time, warm the second."""
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    cold = sp_train_cli(cfg, train, model, epochs, cache, quiet=False)
    warm = sp_train_cli(cfg, train, model, epochs, cache, quiet=False)
    return {"cold_wall": cold["wall"], "warm_wall": warm["wall"],
            "cold_first_epoch": cold["first_epoch_seconds"],
            "warm_first_epoch": warm["first_epoch_seconds"]}


# ============================================================================ helpers on files

def count_tokens(path: Path, fmt: str = "conll") -> int:
    """Tokens of a CoNLL file (non-blank lines), words of a CoNLL-U file (no comments, multi-word
    tokens or empty nodes), or characters of raw text (whitespace excluded)."""
    with open(path, encoding="utf-8") as fh:
        if fmt == "conllu":
            return sum(1 for line in fh if line.strip() and not line.startswith("#")
                       and line.split("\t", 1)[0].isdigit())
        if fmt == "raw":
            return sum(len("".join(line.split())) for line in fh)
        return sum(1 for line in fh if line.strip())


def repeat_file(source: Path, times: int, target: Path, raw: bool = False) -> Path:
    """``source`` concatenated ``times`` times (sentences separated by a blank line, unless raw)."""
    text = source.read_text(encoding="utf-8").rstrip("\n") + ("\n" if raw else "\n\n")
    target.write_text(text * times, encoding="utf-8")
    return target


def raw_text(segmented: Path, target: Path) -> Path:
    """The words of every line of a segmented file joined without spaces (one line per line)."""
    with open(segmented, encoding="utf-8") as fh, open(target, "w", encoding="utf-8") as out:
        for line in fh:
            out.write("".join(line.split()) + "\n")
    return target


def read_gold_pred(path: Path, sep: str | None = None,
                   gold_col: int = -2) -> tuple[list[list[str]], list[list[str]]]:
    """Sentences of (gold, predicted) tags from tagged output: gold in column ``gold_col`` (second to
    last by default), prediction last; ``sep`` splits the columns (None: any whitespace)."""
    gold, pred, g, p = [], [], [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            fields = line.split(sep) if line.strip() else []
            if not fields:
                if g:
                    gold.append(g)
                    pred.append(p)
                g, p = [], []
                continue
            g.append(fields[gold_col])
            p.append(fields[-1])
    if g:
        gold.append(g)
        pred.append(p)
    return gold, pred


def span_f1(tagged: Path) -> float:
    from seqeval.metrics import f1_score
    gold, pred = read_gold_pred(tagged)
    return float(f1_score(gold, pred))


def token_accuracy(tagged: Path, sep: str | None = None, gold_col: int = -2) -> float:
    gold, pred = read_gold_pred(tagged, sep, gold_col)
    pairs = [(a, b) for g, p in zip(gold, pred) for a, b in zip(g, p)]
    return sum(a == b for a, b in pairs) / len(pairs)


def word_f1(gold_file: Path, segmented: Path) -> float:
    """Word F1 comparing word character spans, line by line (structperc.metrics.word_scores)."""
    from structperc.metrics import word_scores
    with open(gold_file, encoding="utf-8") as fh:
        gold = [line.split() for line in fh]
    with open(segmented, encoding="utf-8") as fh:
        pred = [line.split() for line in fh]
    if len(gold) != len(pred):
        raise BenchError(f"{segmented}: {len(pred)} lines for {len(gold)} input lines")
    return float(word_scores(gold, pred)["f1"])


def test_score(cfg: TaskConfig, test: Path, output: Path) -> float:
    """The task's accuracy figure (0–1) of a tagged / segmented test output."""
    if cfg.metric == "words":
        return word_f1(test, output)
    if cfg.metric == "accuracy":  # CoNLL-U: UPOS is column 4, the prediction the appended last one
        return token_accuracy(output, "\t", 3)
    return span_f1(output)


def structperc_eval_f1(cfg: TaskConfig, model: Path, test: Path, numba_cache: Path) -> float | None:
    """Cross-check: `structperc eval --json` on the same model and test file (cfg.eval_key)."""
    cmd = structperc_cmd() + ["eval", "--model", str(model), "--json", str(test)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=child_env(numba_cache))
    if out.returncode != 0:
        return None
    value = json.loads(out.stdout)
    for key in cfg.eval_key:
        value = value[key]
    return float(value)


# ============================================================================ the benchmark

def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_benchmark(cfg: TaskConfig, train: Path, test: Path, args, work: Path) -> dict:
    """All runs, in a fixed sequential order, ``args.repeat`` times. Returns the raw figures."""
    runs: dict[str, list[dict]] = {k: [] for k in (
        "numba", "crf_train", "crf_train_materialised", "sp_train_cli", "sp_train_api",
        "crf_tag_test", "sp_tag_test", "crf_tag_big", "sp_tag_big")}
    loadavg_start = os.getloadavg()[0]
    seg = cfg.segmenter
    if seg:  # segmentation reads raw text: the test file's words joined without spaces
        source = raw_text(test, work / "test_raw.txt")
        count_fmt = "raw"
    else:
        source = test
        count_fmt = cfg.fmt
    # The repeated file keeps the test file's suffix: `structperc tag` reads .conllu as CoNLL-U.
    big = repeat_file(source, args.tag_repeat, work / f"test_x{args.tag_repeat}{test.suffix}", raw=seg)
    n_test, n_big = count_tokens(source, count_fmt), count_tokens(big, count_fmt)
    crf_model, sp_model = work / "crf.model", work / "sp_model"
    warm_cache = work / "numba-cache-0"
    for r in range(args.repeat):
        tag = f"[{r + 1}/{args.repeat}]"
        cache = work / f"numba-cache-{r}"
        runs["numba"].append(numba_startup(cfg, train, work / "sp_numba", args.epochs, cache))
        log(f"{tag} numba cold/warm train: {runs['numba'][-1]['cold_wall']:.1f} s / "
            f"{runs['numba'][-1]['warm_wall']:.1f} s")
        steps = [
            ("crf_train", lambda: crf_train(cfg, train, crf_model, args.epochs, False)),
            ("sp_train_cli", lambda: sp_train_cli(cfg, train, sp_model, args.epochs, warm_cache)),
            ("crf_train_materialised",
             lambda: crf_train(cfg, train, work / "crf_mat.model", args.epochs, True)),
            ("sp_train_api", lambda: sp_train_api(cfg, train, work / "sp_api", args.epochs, warm_cache)),
            ("crf_tag_test", lambda: crf_tag(cfg, crf_model, source, work / "crf_test.out", n_test)),
            ("sp_tag_test",
             lambda: sp_tag(sp_model, source, work / "sp_test.out", n_test, warm_cache, seg)),
            ("crf_tag_big", lambda: crf_tag(cfg, crf_model, big, work / "crf_big.out", n_big)),
            ("sp_tag_big", lambda: sp_tag(sp_model, big, work / "sp_big.out", n_big, warm_cache, seg)),
        ]
        if seg:
            # Info only: structperc's default `cws` preset (characters, types, reduplication and
            # jackknifed dictionary features): a different, richer template. Trained once.
            runs.setdefault("sp_preset_train", [])
            runs.setdefault("sp_preset_seg_big", [])
            preset_model = work / "sp_preset"
            if r == 0:
                steps.append(("sp_preset_train", lambda m=preset_model: sp_train_cli(
                    cfg, train, m, args.epochs, warm_cache, cli_args=["--task", "cws"])))
                steps.append(("sp_preset_seg_test", lambda m=preset_model: sp_tag(
                    m, source, work / "sp_preset_test.out", n_test, warm_cache, True)))
                runs["sp_preset_seg_test"] = []
            steps.append(("sp_preset_seg_big", lambda m=preset_model: sp_tag(
                m, big, work / "sp_preset_big.out", n_big, warm_cache, True)))
        for name, step in steps:
            runs[name].append(step())
            log(f"{tag} {name}: {runs[name][-1]['wall']:.2f} s wall")
    out = {
        "runs": runs, "loadavg_start": loadavg_start, "n_test_tokens": n_test, "n_big_tokens": n_big,
        "crf_f1": test_score(cfg, test, work / "crf_test.out"),
        "sp_f1": test_score(cfg, test, work / "sp_test.out"),
        "sp_eval_f1": structperc_eval_f1(cfg, sp_model, test, warm_cache),
    }
    if seg:
        out["sp_preset_f1"] = test_score(cfg, test, work / "sp_preset_test.out")
    return out


# ============================================================================ the report

@dataclass
class Row:
    label: str
    crf: float | None
    sp: float | None
    fmt: str                          # format of the values
    target: tuple[str, float] | None  # (">=" or "<=", ratio)

    @property
    def ratio(self) -> float | None:
        return self.sp / self.crf if self.crf and self.sp is not None else None

    @property
    def verdict(self) -> str:
        if self.target is None or self.ratio is None:
            return "info"
        op, value = self.target
        ok = self.ratio >= value if op == ">=" else self.ratio <= value
        return "PASS" if ok else "FAIL"


def med(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def build_rows(raw: dict, tag_repeat: int, cfg: TaskConfig = TASKS["chunk"]) -> list[Row]:
    R = raw["runs"]
    MB = 1 / 2 ** 20
    crf_mat = R["crf_train_materialised"]
    unit = "chars/s" if cfg.unit == "char" else "tok/s"
    what = "seg" if cfg.segmenter else "tag"
    tgt = cfg.tag_target
    rows = [
        Row(f"train throughput, {'char' if cfg.unit == 'char' else 'token'}·epochs/s",
            med(R["crf_train"], "token_epochs_per_s"),
            med(R["sp_train_api"], "token_epochs_per_s"), "{:,.0f}", (">=", 3.0)),
        Row("end-to-end train wall, s", med(R["crf_train"], "wall"), med(R["sp_train_cli"], "wall"),
            "{:.2f}", ("<=", 0.33)),
        Row("  … vs CRFsuite materialised", med(crf_mat, "wall"), med(R["sp_train_cli"], "wall"),
            "{:.2f}", ("<=", 0.33)),
        Row(f"{what} throughput, test ×1, {unit}", med(R["crf_tag_test"], "tokens_per_s"),
            med(R["sp_tag_test"], "tokens_per_s"), "{:,.0f}", (">=", tgt)),
        Row(f"{what} throughput, test ×{tag_repeat}, {unit} *", med(R["crf_tag_big"], "tokens_per_s"),
            med(R["sp_tag_big"], "tokens_per_s"), "{:,.0f}", (">=", tgt)),
        Row("peak RSS train, MB (CRFsuite streaming)", _scale(med(R["crf_train"], "maxrss"), MB),
            _scale(med(R["sp_train_cli"], "maxrss"), MB), "{:,.1f}", ("<=", 0.5)),
        Row("peak RSS train, MB (CRFsuite materialised)", _scale(med(crf_mat, "maxrss"), MB),
            _scale(med(R["sp_train_cli"], "maxrss"), MB), "{:,.1f}", ("<=", 0.5)),
        Row("model size, MB", _scale(med(R["crf_train"], "model_bytes"), MB),
            _scale(med(R["sp_train_cli"], "model_bytes"), MB), "{:.2f}", ("<=", 1.0)),
        Row(cfg.metric_label, 100 * raw["crf_f1"], 100 * raw["sp_f1"], "{:.2f}", None),
    ]
    if cfg.segmenter and "sp_preset_f1" in raw:
        # Info rows: structperc's default `cws` preset (a different template) against CRFsuite's
        # hanlp-template figures.
        rows += [
            Row("[info] sp `cws` preset (dict feats, other template): word F1, %",
                100 * raw["crf_f1"], 100 * raw["sp_preset_f1"], "{:.2f}", None),
            Row(f"[info] sp `cws` preset: seg throughput, test ×{tag_repeat}, {unit}",
                med(R["crf_tag_big"], "tokens_per_s"), med(R["sp_preset_seg_big"], "tokens_per_s"),
                "{:,.0f}", None),
            Row("[info] sp `cws` preset: end-to-end train wall, s", med(R["crf_train"], "wall"),
                med(R["sp_preset_train"], "wall"), "{:.2f}", None),
            Row("[info] sp `cws` preset: model size, MB", _scale(med(R["crf_train"], "model_bytes"), MB),
                _scale(med(R["sp_preset_train"], "model_bytes"), MB), "{:.2f}", None),
        ]
    return rows


def _scale(value: float | None, factor: float) -> float | None:
    return value * factor if value is not None else None


def _fmt(fmt: str, value: float | None) -> str:
    return "—" if value is None else fmt.format(value)


def format_table(rows: list[Row]) -> str:
    head = ("figure", "CRFsuite", "structperc", "ratio", "target", "result")
    body = [(r.label, _fmt(r.fmt, r.crf), _fmt(r.fmt, r.sp),
             _fmt("{:.2f}×", r.ratio), f"{r.target[0]} {r.target[1]:g}×" if r.target else "—",
             r.verdict) for r in rows]
    widths = [max(len(x[i]) for x in [head, *body]) for i in range(len(head))]
    align = ["<", ">", ">", ">", ">", "<"]
    def line(cells):
        return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(cells, align, widths))
    return "\n".join([line(head), "  ".join("-" * w for w in widths), *map(line, body)])


_METRIC_HOW = {
    "span": "seqeval on both tagged outputs",
    "accuracy": "token accuracy over words, UPOS, on both tagged outputs",
    "words": "word F1 comparing word character spans, structperc.metrics.word_scores, on both "
             "segmented outputs",
}


def format_details(raw: dict, args, cfg: TaskConfig = TASKS["chunk"]) -> str:
    R = raw["runs"]
    units = "characters" if cfg.unit == "char" else "tokens"
    n = R["numba"]
    crf_it, crf_tr = med(R["crf_train"], "iteration_seconds"), med(R["crf_train"], "train_seconds")
    api = R["sp_train_api"][-1]
    crf = R["crf_train"][-1]
    lines = [
        f"* headline {'segmentation' if cfg.segmenter else 'tagging'} row: the test file "
        f"{'(raw text) ' if cfg.segmenter else ''}repeated {args.tag_repeat}× "
        f"({raw['n_big_tokens']:,} {units}; test ×1 = {raw['n_test_tokens']:,} {units}).",
        *cfg.notes,
        f"train throughput: CRFsuite = {units} × iterations / trainer.train() "
        f"({crf_tr:.2f} s, of which iterations {crf_it:.2f} s, feature generation "
        f"{med(R['crf_train'], 'featgen_seconds'):.2f} s); structperc = Σ epoch seconds "
        f"({api['train_seconds']:.2f} s last run); ratio against CRFsuite's iterations alone "
        f"{(crf_it / med(R['sp_train_api'], 'train_seconds')) if crf_it else float('nan'):.2f}×.",
        f"end-to-end train CPU seconds (user+sys, less sensitive to other load than wall): CRFsuite "
        f"{med(R['crf_train'], 'cpu'):.2f}, structperc {med(R['sp_train_cli'], 'cpu'):.2f} "
        f"({med(R['sp_train_cli'], 'cpu') / med(R['crf_train'], 'cpu'):.2f}×).",
        f"labels: structperc {api['n_labels']}, CRFsuite "
        f"{'4 (B/M/E/S)' if cfg.segmenter else 'the file' + chr(39) + 's tags'}. Features: CRFsuite "
        f"{crf['n_features']:,} (its feature count: attribute–label pairs and transitions), "
        f"structperc {api['n_attributes']:,} "
        f"attributes.",
        f"numba start-up (structperc train, fresh NUMBA_CACHE_DIR vs the same cache warm): wall "
        f"{med(n, 'cold_wall'):.2f} s cold vs {med(n, 'warm_wall'):.2f} s warm "
        f"(+{med(n, 'cold_wall') - med(n, 'warm_wall'):.2f} s); first epoch "
        f"{_fmt('{:.2f}', med(n, 'cold_first_epoch'))} s cold vs "
        f"{_fmt('{:.2f}', med(n, 'warm_first_epoch'))} s warm.",
        f"{cfg.metric_label.split(',')[0]}: structperc − CRFsuite = "
        f"{100 * (raw['sp_f1'] - raw['crf_f1']):+.2f} points ({_METRIC_HOW[cfg.metric]}; "
        f"cross-check `structperc eval --json` {'.'.join(cfg.eval_key)} = "
        f"{_fmt('{:.2f}', raw['sp_eval_f1'] * 100 if raw['sp_eval_f1'] is not None else None)}).",
        f"medians of {args.repeat} run(s); {args.epochs} epochs; {os.cpu_count()} CPUs; "
        f"1-min load average at start {raw['loadavg_start']:.2f}, at end {os.getloadavg()[0]:.2f} "
        f"(other processes share the machine: wall-clock figures are noisy).",
    ]
    return "\n".join(lines)


def environment() -> dict:
    from importlib.metadata import version

    import numpy
    import pycrfsuite  # noqa: F401
    return {"python": platform.python_version(), "platform": platform.platform(),
            "cpus": os.cpu_count(), "numpy": numpy.__version__,
            "python-crfsuite": version("python-crfsuite"), "structperc": version("structperc"),
            "numba": version("numba"), "loadavg": os.getloadavg()}


# ============================================================================ command line

def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog="See the module docstring for what each figure means.")
    ap.add_argument("--task", choices=sorted(TASKS), default="chunk")
    ap.add_argument("--train", type=Path, help="training corpus [default: the task's]")
    ap.add_argument("--test", type=Path, help="test corpus [default: the task's]")
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3, help="runs per timed figure (median reported)")
    ap.add_argument("--tag-repeat", type=int, default=5,
                    help="the larger tagging input is the test file concatenated this many times")
    ap.add_argument("--feature-set", choices=("observed", "all"), default="observed",
                    help="structperc's state feature set: 'observed' is CRFsuite's own (the pairs "
                         "seen in training), 'all' every attribute × label pair [default: observed]")
    ap.add_argument("--lang", metavar="CODE", default=None,
                    help="both sides also read the language's Brown clusters: structperc through --lang CODE, "
                         "CRFsuite as the same attributes (chunk, ner, pos) [default: none]")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write all figures as JSON")
    args = ap.parse_args(argv)
    for name in ("epochs", "repeat", "tag_repeat"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    cfg = TASKS[args.task]
    # Like for like by default: CRFsuite keeps a weight only for the (attribute, label) pairs seen
    # in training (feature.possible_states=0); structperc's --feature-set observed does the same.
    cfg = dataclasses.replace(
        cfg, sp_train_args=cfg.sp_train_args + ("--feature-set", args.feature_set),
        sp_api_params=cfg.sp_api_params + (("feature_set", args.feature_set),),
        notes=cfg.notes + (f"structperc feature set: {args.feature_set}"
                           + (" (CRFsuite's: pairs seen in training)" if args.feature_set == "observed"
                              else " (every attribute × label pair; CRFsuite keeps the seen ones)"),))
    if args.lang:
        from structperc.features.resources.language import tagger_kinds
        from structperc.features.templates import CLUSTER_WINDOW, language_lines

        added = language_lines(cfg.template, cfg.template, tagger_kinds(args.lang)) if cfg.template \
            else list(CLUSTER_WINDOW)
        if cfg.segmenter or added != CLUSTER_WINDOW:
            print(f"bench_crfsuite: --lang mirrors the cluster window on both sides; the {args.task} benchmark's "
                  "template would add other columns", file=sys.stderr)
            return 2
        cfg = dataclasses.replace(
            cfg, sp_train_args=cfg.sp_train_args + ("--lang", args.lang), crf_lang=args.lang,
            sp_api_params=cfg.sp_api_params + (("lang", args.lang),),
            template_lines=cfg.template_lines + tuple(CLUSTER_WINDOW) if not cfg.template else cfg.template_lines,
            notes=cfg.notes + (f"--lang {args.lang}: both sides also read the language's Brown cluster paths "
                               "(prefixes of 4, 6, 10, 20 bits at offsets -1, 0, +1; structperc through --lang, "
                               "CRFsuite as attributes from the same table)",))
    train, test = args.train or cfg.train, args.test or cfg.test
    missing = [str(p) for p in (train, test) if not p.is_file()]
    if missing:
        print(f"bench_crfsuite: corpus not found: {', '.join(missing)}\n"
              f"(expected the {args.task} corpora; pass --train/--test)", file=sys.stderr)
        return 2
    if importlib.util.find_spec("pycrfsuite") is None:  # the workers run this interpreter
        print("bench_crfsuite: python-crfsuite is not installed in this environment "
              f"({sys.executable}): pip install -e \".[bench]\"", file=sys.stderr)
        return 2
    require_current_build()  # timings of a stale build would measure numba's compiler
    try:
        with tempfile.TemporaryDirectory(prefix="bench-crfsuite-") as tmp:
            raw = run_benchmark(cfg, train, test, args, Path(tmp))
    except BenchError as exc:
        print(f"bench_crfsuite: {exc}", file=sys.stderr)
        return 1
    rows = build_rows(raw, args.tag_repeat, cfg)
    print(f"structperc vs python-crfsuite averaged perceptron — task {args.task}, "
          f"train {train}, test {test}")
    print(format_table(rows))
    print(format_details(raw, args, cfg))
    if args.json:
        # crf_f1 / sp_f1 hold the task's accuracy figure (0–1), named by "metric".
        payload = {"task": args.task, "metric": cfg.metric, "unit": cfg.unit,
                   "train": str(train), "test": str(test),
                   "settings": {"epochs": args.epochs, "repeat": args.repeat,
                                "tag_repeat": args.tag_repeat},
                   "environment": environment(),
                   "rows": [{**asdict(r), "ratio": r.ratio, "verdict": r.verdict} for r in rows],
                   **raw}
        args.json.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
