"""`structperc tag` and `structperc segment` on hostile files, run as a user runs them: never a crash.

`structperc tag --input-format tokens` once aborted with ``free(): invalid next size`` on a line holding
tabs: a caller handed an ahead-of-time compiled kernel more spans than its output array held, and
pycc-compiled code checks neither types nor bounds, so the process corrupted its heap and died by a
signal (SIGABRT, SIGSEGV), after printing part of its output and leaving ``-o``'s temporary file behind.
This module closes that class of defect from the outside:

1. regression cases, each in a fresh ``structperc`` process: the inputs that crashed;
2. a property: generated files (tabs, runs of spaces, CR and CRLF, NUL, a BOM, invalid UTF-8, tokens of
   thousands of characters, comments, ``-DOCSTART-``, 0-12 fields, CoNLL-U given as tokens and tokens as
   CoNLL-U, no final newline...: `fuzz_inputs.input_file`) tagged with small POS, chunk and NER models in
   every input and output format, and segmented with a small segmenter: the command exits 0, 1 or 2,
   never by a signal, never with a traceback; a failure prints one ``Error:`` line (and no kernel
   contract error: `structperc.compiled.boundary` turns a bad kernel call into one, but that is still
   the caller's defect) and leaves neither the output nor a temporary file; a success leaves the output;
3. a property: the same inputs give the same exit status and the same bytes on standard output with
   the ahead-of-time kernels and with ``STRUCTPERC_KERNELS=jit-kernels NUMBA_BOUNDSCHECK=1`` (the very
   kernel functions through numba's JIT, every index checked), and the JIT run never raises IndexError;
4. a property: the same inputs give the same exit status and output whether the readers
   cut them into 4 MiB pieces and the tagger takes 20,000 sentences at a time, or 61 bytes and 2
   sentences (`fuzz_inputs.SMALL_PIECE`): small files cross the boundaries large ones cross.

The generated cases run in the children of a fork server (`fuzz_inputs.ForkServer`), one forked child a
case: a crash is the case's own exit status (minus the signal), attributable to one input, and a case
costs a fork instead of an interpreter start (and, for the JIT, instead of compiling the kernels). The
AOT server runs under glibc's malloc checks where the system has them (``libc_malloc_debug.so``,
``MALLOC_CHECK_=3``): a write past an array is caught at its ``free``, not only when it happens to
break the heap's lists (without them a forked child let most small overflows pass). A failing case is
re-run in a fresh ``structperc`` process for the report, plain and under the malloc checks.

The examples are the same every run (``derandomize``); for a longer campaign,
``STRUCTPERC_FUZZ_SCALE=10 STRUCTPERC_FUZZ_RANDOM=1 pytest tests/cli/test_fuzz_cli.py``.
"""
from __future__ import annotations

import ctypes
import gzip
import itertools
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from fuzz_inputs import NAMES, SEGMENT_FILE, WORDS, ForkServer, input_file, shown, write_input
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from testkit import SAMPLE_TRAIN

#: Segmented Chinese with full-width digits, Latin letters, an emoji and a supplementary-plane character.
CWS_TRAIN = ["上海 体育局 召开 会议", "我 爱 北京 天安门", "北京 体育局 召开 大会", "我们 爱 上海",
             "２０２４ 年 ， 我们 去 北京 。", "ABC 公司 😀 𠀋"]

#: Examples per property: the module runs in about two minutes on two busy cores.
EXAMPLES = {"tag": 100, "segment": 40, "aot_jit": 84, "small_pieces": 60}
#: A case running longer than this is a hang (the inputs are small; a JIT child may compile a kernel
#: the warm-up did not).
CASE_TIMEOUT, JIT_CASE_TIMEOUT = 10.0, 90.0
#: Options of the AOT/JIT comparison: plain tagging only, unless STRUCTPERC_FUZZ_JIT_ALL=1 adds
#: --marginals and --nbest (their kernels cost ~45 s more CPU to JIT-compile, once per session).
JIT_EXTRAS = [[]] + ([["--marginals"], ["--nbest", "2"]] if os.environ.get("STRUCTPERC_FUZZ_JIT_ALL") else [])

INPUT_FORMATS = ["auto", "conll", "conllu", "tokens", "lines"]
OUTPUT_FORMATS = [None, "conll", "conllu", "tokens", "jsonl"]
TAGGERS = ["pos", "chunk", "ner"]


def fuzz_settings(name: str, parts: int = 1):
    """`EXAMPLES` [name] examples over ``parts`` parametrizations, the same every run;
    ``STRUCTPERC_FUZZ_SCALE=K`` runs K times as many, ``STRUCTPERC_FUZZ_RANDOM=1`` new ones each run
    (a longer fuzzing campaign)."""
    scale = float(os.environ.get("STRUCTPERC_FUZZ_SCALE", "1"))
    return settings(max_examples=max(1, round(EXAMPLES[name] * scale / parts)), deadline=None, database=None,
                    derandomize=not os.environ.get("STRUCTPERC_FUZZ_RANDOM"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.large_base_example, HealthCheck.filter_too_much])


# ------------------------------------------------------------------------------------- models
POS_CONLLU = """\
# sent_id = 1
# text = The cat sat.
1	The	the	DET	DT	_	2	det	_	_
2	cat	cat	NOUN	NN	_	3	nsubj	_	_
3	sat	sit	VERB	VBD	_	0	root	_	SpaceAfter=No
4	.	.	PUNCT	.	_	3	punct	_	_

# sent_id = 2
1	A	a	DET	DT	_	2	det	_	_
2	dog	dog	NOUN	NN	_	3	nsubj	_	_
3	ran	run	VERB	VBD	_	0	root	_	_
4	home	home	ADV	RB	_	3	advmod	_	_

# sent_id = 3
1-2	Vámonos	_	_	_	_	_	_	_	_
1	Vamos	ir	VERB	VB	_	0	root	_	_
2	nos	nos	PRON	PRP	_	1	obj	_	_
2.1	x	x	X	XX	_	_	_	_	_
3	a	a	ADP	IN	_	4	case	_	_
4	北京	北京	PROPN	NNP	_	1	obl	_	_

# sent_id = 4
1	She	she	PRON	PRP	_	2	nsubj	_	_
2	saw	see	VERB	VBD	_	0	root	_	_
3	the	the	DET	DT	_	4	det	_	_
4	naïve	naïve	ADJ	JJ	_	5	amod	_	_
5	😀	😀	SYM	NFP	_	2	obj	_	_

"""
NER_CONLL = """\
-DOCSTART- O

Juan B-PER
vive O
en O
Madrid B-LOC

Ana B-PER
Pérez I-PER
habló O
con O
el O
Banco B-ORG
de I-ORG
España I-ORG

-DOCSTART- O

Ayer O
Ana B-PER
vino O
a O
Zürich B-LOC
.\tO

"""


def cli(*args: object, stdin: bytes | None = None, env: dict | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    """``structperc ARGS`` in a fresh process (bytes out, stderr decoded); one that runs past
    ``timeout`` is killed and reported as status -9 (a corrupted heap can deadlock glibc's abort)."""
    command = [sys.executable, "-m", "structperc.cli", *map(str, args)]
    try:
        proc = subprocess.run(command, input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                              capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        err = (exc.stderr or b"").decode("utf-8", "replace")
        return subprocess.CompletedProcess(command, -9, exc.stdout or b"", f"{err}\n(killed after {timeout:g} s)")
    proc.stderr = proc.stderr.decode("utf-8", "replace")
    return proc


@pytest.fixture(scope="session")
def fuzz_models(tmp_path_factory) -> dict[str, Path]:
    """Tiny POS (CoNLL-U), chunk (200 sentences of the shipped sample), NER (word, ner) and Chinese
    segmentation models, trained by the command line, all four at once."""
    root = tmp_path_factory.mktemp("fuzz_models")
    (root / "pos.conllu").write_text(POS_CONLLU, encoding="utf-8")
    with gzip.open(SAMPLE_TRAIN, "rt", encoding="utf-8") as fh:
        blocks = fh.read().strip("\n").split("\n\n")[:200]
    (root / "chunk.txt").write_text("\n\n".join(blocks) + "\n\n", encoding="utf-8")
    (root / "ner.txt").write_text(NER_CONLL, encoding="utf-8")
    (root / "cws.txt").write_text("\n".join(CWS_TRAIN) + "\n", encoding="utf-8")
    commands = {
        "pos": ["--train", root / "pos.conllu", "--task", "pos", "--epochs", "3"],
        "chunk": ["--train", root / "chunk.txt", "--columns", "word,pos,chunk", "--epochs", "2"],
        "ner": ["--train", root / "ner.txt", "--columns", "word,ner", "--task", "ner", "--epochs", "3"],
        "cws": ["--train", root / "cws.txt", "--task", "cws", "--epochs", "3"],
    }
    procs = {name: subprocess.Popen([sys.executable, "-m", "structperc.cli", "train", *map(str, args), "-q",
                                     "--model", str(root / name)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for name, args in commands.items()}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"training the {name} model failed: {err.decode(errors='replace')}"
    return {name: root / name for name in commands} | {"data": root}


def _malloc_checks() -> dict[str, str]:
    """Environment that makes glibc check every ``free`` for writes past the block (empty where the
    debugging malloc is not installed)."""
    try:
        ctypes.CDLL("libc_malloc_debug.so.0")
    except OSError:
        return {}
    return {"LD_PRELOAD": "libc_malloc_debug.so.0", "MALLOC_CHECK_": "3"}


def _plain_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("STRUCTPERC_KERNELS", "NUMBA_BOUNDSCHECK")}
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


@pytest.fixture(scope="session")
def aot_server(tmp_path_factory, fuzz_models):
    """The fork server with the default (ahead-of-time) kernels, under glibc's malloc checks."""
    server = ForkServer(tmp_path_factory.mktemp("aot_server"), _plain_env() | _malloc_checks())
    server.start()
    stale = sorted(group for group, current in server.aot_groups.items() if not current)
    if stale:
        warnings.warn(f"ahead-of-time kernel builds absent or stale (their JIT runs instead): {', '.join(stale)}",
                      stacklevel=1)
    yield server
    server.close()


def _warm_up_cases(models: dict[str, Path], root: Path) -> list[list[str]]:
    """Benign inputs in every format each model takes: what the JIT server compiles before it forks."""
    (root / "warm.tokens").write_text("The\ncat\nsat\n\nJuan\nvive\n", encoding="utf-8")
    (root / "warm.txt").write_text("The cat sat .\nJuan vive en Madrid\n", encoding="utf-8")
    (root / "warm.chunk").write_text("He PRP B-NP\nruns VBZ B-VP\n\n", encoding="utf-8")
    (root / "warm.ner").write_text("Juan B-PER\nvive O\n\n", encoding="utf-8")
    (root / "warm.cws").write_text("我爱北京天安门\n\nABC公司\n", encoding="utf-8")
    tokens, text = ("tokens", root / "warm.tokens"), ("lines", root / "warm.txt")
    inputs = {"pos": [tokens, text, ("conllu", models["data"] / "pos.conllu")],
              "chunk": [("conll", root / "warm.chunk")], "ner": [tokens, text, ("conll", root / "warm.ner")]}
    out = root / "warm.out"
    cases = [["segment", "--model", models["cws"], root / "warm.cws", "-o", out]]
    for model, formats in inputs.items():
        for (fmt, path), extra, to in itertools.product(formats, JIT_EXTRAS, ["tokens", "jsonl", None]):
            to = to or ("conllu" if fmt == "conllu" else "conll")
            if ("--nbest" in extra and to != "jsonl") or ("--marginals" in extra and to == "conllu"):
                continue  # refused before any kernel runs
            cases.append(["tag", "--model", models[model], "--input-format", fmt, *extra,
                          "--output-format", to, path, "-o", out])
    if len(JIT_EXTRAS) > 1:  # the constrained decoders too
        (root / "forced.pos").write_text("1\tThe\t_\t?\t_\t_\t0\tdep\t_\t_\n2\tcat\t_\tNOUN\t_\t_\t0\tdep\t_\t_\n\n")
        (root / "forced.chunk").write_text("He PRP ?\nruns VBZ B-VP\n\n")
        (root / "forced.ner").write_text("Juan ?\nvive O\n\n")
        for model, extra in itertools.product(TAGGERS, JIT_EXTRAS):
            to = ["--output-format", "jsonl"] if extra else []
            cases.append(["tag", "--model", models[model], "--forced-column", FORCED[model][0], *extra, *to,
                          root / f"forced.{model}", "-o", out])
    return [[str(a) for a in case] for case in cases]


@pytest.fixture(scope="session")
def small_server(tmp_path_factory, fuzz_models):
    """The AOT fork server with pieces of `fuzz_inputs.SMALL_PIECE` bytes and chunks of
    `fuzz_inputs.SMALL_CHUNK` sentences: a small file crosses as many boundaries as a large one."""
    server = ForkServer(tmp_path_factory.mktemp("small_server"), _plain_env() | _malloc_checks(), small=True)
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def jit_server(tmp_path_factory, fuzz_models):
    """The fork server with ``STRUCTPERC_KERNELS=jit-kernels`` and numba's bounds checks, its kernels
    compiled once (into a numba cache of the session) before it forks."""
    root = tmp_path_factory.mktemp("jit_server")
    env = _plain_env() | {"STRUCTPERC_KERNELS": "jit-kernels", "NUMBA_BOUNDSCHECK": "1",
                          "NUMBA_CACHE_DIR": str(tmp_path_factory.mktemp("numba_cache"))}
    server = ForkServer(root, env, warm=_warm_up_cases(fuzz_models, root), freeze=True)
    server.start()
    assert not server.problems, "the JIT kernels fail on benign input:\n" + "\n".join(server.problems)
    yield server
    server.close()


# --------------------------------------------------------------------------------- the checks
def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("Error:")]


def problems_of(status: int, stderr: str, out_dir: Path | None, out: Path | None) -> list[str]:
    """What is wrong with one run (nothing for a clean success or a clean one-line error)."""
    found = []
    if status < 0 or status not in (0, 1, 2):
        found.append(f"exit status {status}" + (" (killed by a signal)" if status < 0 else ""))
    if "Traceback" in stderr:
        found.append("a traceback on stderr")
    if status in (1, 2) and len(error_lines(stderr)) != 1:
        found.append(f"{len(error_lines(stderr))} 'Error' lines on stderr, not one")
    elif status == 1:  # the error and nothing else (warnings aside): one line, not a message on several
        other = [line for line in stderr.splitlines() if line.strip() and not line.startswith(("Error: ", "Warning"))]
        if other:
            found.append(f"stderr holds more than the one 'Error:' line: {other[:3]!r}")
    if any(re.match(r"Error: (.*: )?kernel \w+: ", line) for line in error_lines(stderr)):
        # `structperc.compiled.boundary`: a kernel called outside its contract is the caller's defect
        found.append("a compiled kernel's contract was broken (the boundary caught it)")
    if out is not None and out_dir is not None:
        left = sorted(p.name for p in out_dir.iterdir())
        if status == 0 and not out.exists():
            found.append("exit 0 but no output file")
        if status != 0 and out.exists():
            found.append("failed but the output file exists")
        stray = [name for name in left if name != out.name]
        if stray:
            found.append(f"files left beside the output: {stray}")
    return found


class Cases:
    """Numbered case folders under one session folder."""

    def __init__(self, root: Path):
        self.root, self.n = root, 0

    def new(self) -> Path:
        self.n += 1
        path = self.root / f"case{self.n}"
        path.mkdir()
        return path


@pytest.fixture(scope="session")
def cases(tmp_path_factory) -> Cases:
    return Cases(tmp_path_factory.mktemp("fuzz_cases"))


def shell(args: list[str], stdin: Path | None) -> str:
    return "structperc " + " ".join(args) + (f" < {stdin}" if stdin is not None else "")


def report(what: list[str], args: list[str], data: bytes, status: int, stderr: str, stdin: Path | None,
           rerun: list[str] | None = None) -> str:
    lines = [f"{'; '.join(what)}", f"  command: {shell(args, stdin)}", f"  input ({len(data)} bytes): {shown(data)}",
             f"  status {status}, stderr: {stderr.strip()[-1500:]}"]
    if rerun is not None:
        lines.append(f"  in a fresh process: {'; '.join(rerun)}")
    return "\n".join(lines)


def fresh_rerun(args: list[str], stdin: Path | None) -> list[str]:
    """The case again in a fresh ``structperc`` process, for the report: in the plain environment, and
    under glibc's malloc checks when that one ends cleanly (a small overflow often goes unseen)."""
    data = stdin.read_bytes() if stdin is not None else None
    said = []
    for what, env in (("plain", _plain_env()), ("malloc checks", _plain_env() | _malloc_checks())):
        proc = cli(*args, stdin=data, env=env, timeout=30)
        said.append(f"{what}: status {proc.returncode}, stderr {proc.stderr.strip()[-300:]!r}")
        if proc.returncode < 0 or not _malloc_checks():
            break
    return said


#: The file styles (`fuzz_inputs.STYLES`) that fit a model and an input format: a case draws its file
#: mostly in one of them, so that most cases get past the reader and are tagged.
FITTING = {("pos", "conll"): ("conllu", "conll10"), ("chunk", "conll"): ("conll3", "conll2"),
           ("ner", "conll"): ("conll2", "conll1"), "conllu": ("conllu",), "lines": ("text",),
           # one token per line, and what was fed as tokens when it crashed: CoNLL-U, tabbed lines
           "tokens": ("conll1", "ragged", "conllu", "conll4")}


#: ``--forced-column``: the column of known tags and tags to write there (some the model's, some not).
FORCED = {"pos": ("upos", ["DET", "NOUN", "VERB", "PUNCT", "ADV", "PRON", "ADJ", "X"]),
          "chunk": ("chunk", ["B-NP", "I-NP", "B-VP", "I-VP", "B-PP", "O", "B-ADJP", "I-ADJP", "E-NP"]),
          "ner": ("ner", ["B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG", "O", "S-PER"])}
UNKNOWN_TAGS = ["B-XYZ", "I-", "??", "NOUN ", "o", "B-PER\u00a0"]


@st.composite
def forced_file(draw, model: str) -> bytes:
    """Sentences whose tag column holds known tags for ``--forced-column``: mostly ``?`` (free), else
    one of the model's tags (in any order, so in spans a scheme forbids) or one it does not know."""
    known = FORCED[model][1]
    tag = st.integers(0, 19).flatmap(lambda i: st.just("?") if i < 10 else st.sampled_from(known) if i < 19
                                     else st.sampled_from(UNKNOWN_TAGS))
    word = st.sampled_from([w for w in WORDS if w.strip() and not w.startswith(('#', '-DOCSTART-'))])
    blocks = []
    for _ in range(draw(st.integers(1, 6))):
        rows = []
        for i in range(1, draw(st.integers(1, 7)) + 1):
            w, t = draw(word), draw(tag)
            rows.append(f"{i}\t{w}\t_\t{t}\t_\t_\t0\tdep\t_\t_" if model == "pos"
                        else f"{w} NN {t}" if model == "chunk" else f"{w} {t}")
        blocks.append("\n".join(rows) + "\n\n")
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return "".join(blocks).replace("\n", newline).encode("utf-8")


@st.composite
def tag_case(draw, fmt: str, extras=([], [], [], [], ["--marginals"], ["--nbest", "2"]),
             forced: bool = True) -> dict:
    """A ``structperc tag`` case with input format ``fmt`` (a parameter of the tests, not drawn: the
    derandomized examples cluster, and a format drawn could be missing from a whole run)."""
    # the chunk model reads the pos column: given tokens or text it stops at once (now and then)
    model = draw(st.sampled_from(TAGGERS if fmt not in ("tokens", "lines") else ["pos", "ner"] * 2 + ["chunk"]))
    if forced and fmt in ("auto", "conll", "conllu") and draw(st.integers(0, 5)) == 0:
        # the constrained decoders, on known tags
        if fmt != "auto":
            model = "pos" if fmt == "conllu" else draw(st.sampled_from(["chunk", "ner"]))
        extra = ["--forced-column", FORCED[model][0]] + draw(st.sampled_from(extras))
        outputs = [None, "jsonl"] if "--nbest" in extra else [None, "conll", "tokens", "jsonl"]
        return {"model": model, "input_format": fmt, "output_format": draw(st.sampled_from(outputs)),
                "extra": extra, "name": "in.txt", "stdin": draw(st.integers(0, 9)) == 0,
                "data": draw(forced_file(model))}
    extra = draw(st.sampled_from(extras))
    if "--nbest" in extra:
        outputs = [None, "jsonl"]
    elif model != "pos":  # CoNLL-U output needs a model predicting a CoNLL-U column: now and then
        outputs = [f for f in OUTPUT_FORMATS if f != "conllu"] * 2 + ["conllu"]
    else:
        outputs = OUTPUT_FORMATS
    likely = FITTING.get((model, fmt)) or FITTING.get(fmt) or \
        sum((FITTING.get((model, f), FITTING.get(f, ())) for f in INPUT_FORMATS[1:]), ())
    return {"model": model, "input_format": fmt, "output_format": draw(st.sampled_from(outputs)), "extra": extra,
            "name": draw(NAMES), "stdin": draw(st.integers(0, 9)) == 0, "data": draw(input_file(likely=likely))}


def segment_case():
    return st.fixed_dictionaries({"name": NAMES, "data": SEGMENT_FILE, "stdin": st.just(False)})


def tag_args(case: dict, models: dict[str, Path], path: Path) -> list[str]:
    args = ["tag", "--model", str(models[case["model"]]), "--input-format", case["input_format"]]
    if case["output_format"] is not None:
        args += ["--output-format", case["output_format"]]
    return args + case["extra"] + (["-"] if case["stdin"] else [str(path)])


def run_checked(server: ForkServer, args: list[str], data: bytes, folder: Path, stdin: Path | None) -> None:
    out_dir = folder / "out"
    out_dir.mkdir()
    out = out_dir / "tagged.out"
    full = args + ["-o", str(out)]
    status, _, stderr = server.run(full, stdin=stdin, timeout=CASE_TIMEOUT)
    found = problems_of(status, stderr, out_dir, out)
    if server.last.get("timeout"):
        # glibc's malloc checks can deadlock in the child they abort (an assertion's message needs
        # malloc): a hang here is a corrupted heap as often as a slow case
        found.insert(0, f"no exit after {CASE_TIMEOUT:g} s (killed)")
    if found:
        for p in out_dir.iterdir():
            p.unlink()
        pytest.fail(report(found, full, data, status, stderr, stdin, fresh_rerun(full, stdin)), pytrace=False)


# ------------------------------------------------------------------------------- 2: properties

@pytest.mark.slow
@pytest.mark.parametrize("fmt", INPUT_FORMATS)
@fuzz_settings("tag", len(INPUT_FORMATS))
@given(data=st.data())
def test_tag_never_crashes_on_generated_input(fmt, data, fuzz_models, aot_server, cases):
    case = data.draw(tag_case(fmt), label="case")
    folder = cases.new()
    path = write_input(folder / case["name"], case["data"])
    run_checked(aot_server, tag_args(case, fuzz_models, path), case["data"], folder,
                path if case["stdin"] else None)


@pytest.mark.slow
@fuzz_settings("segment")
@given(data=SEGMENT_FILE, name=NAMES)
def test_segment_never_crashes_on_generated_input(data, name, fuzz_models, aot_server, cases):
    folder = cases.new()
    path = write_input(folder / name, data)
    run_checked(aot_server, ["segment", "--model", str(fuzz_models["cws"]), str(path)], data, folder, None)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", INPUT_FORMATS + ["segment"])
@fuzz_settings("aot_jit", len(INPUT_FORMATS) + 1)
@given(data=st.data())
def test_aot_and_bounds_checked_jit_kernels_agree(fmt, data, fuzz_models, aot_server, jit_server, cases):
    """The same input through the ahead-of-time kernels and through the same kernels JIT-compiled with
    bounds checks: no IndexError (no index out of range that the AOT code would silently take), and the
    same exit status and the same bytes on standard output."""
    segment = fmt == "segment"
    case = data.draw(segment_case() if segment else
                     tag_case(fmt, JIT_EXTRAS, forced=bool(os.environ.get("STRUCTPERC_FUZZ_JIT_ALL"))), label="case")
    folder = cases.new()
    path = write_input(folder / case["name"], case["data"])
    if segment:
        args, stdin = ["segment", "--model", str(fuzz_models["cws"]), str(path)], None
    else:
        args, stdin = tag_args(case, fuzz_models, path), (path if case["stdin"] else None)
    aot = aot_server.run(args, stdin=stdin, timeout=CASE_TIMEOUT)
    jit = jit_server.run(args, stdin=stdin, timeout=JIT_CASE_TIMEOUT)
    found = [f"JIT: {p}" for p in problems_of(jit[0], jit[2], None, None)]
    if "IndexError" in jit[2]:
        found.append("JIT: IndexError (an index out of bounds)")
    found += [f"AOT: {p}" for p in problems_of(aot[0], aot[2], None, None)]
    if aot[0] != jit[0]:
        found.append(f"exit status {aot[0]} (AOT) != {jit[0]} (JIT)")
    if aot[1] != jit[1]:
        at = next((i for i, (a, b) in enumerate(zip(aot[1], jit[1])) if a != b), min(len(aot[1]), len(jit[1])))
        found.append(f"stdout differs from byte {at}: AOT {aot[1][at:at + 80]!r} / JIT {jit[1][at:at + 80]!r}")
    if found:
        both = f"AOT: {aot[2].strip()[-400:]!r}; JIT (status {jit[0]}): {jit[2].strip()[-900:]}"
        pytest.fail(report(found, args, case["data"], aot[0], both, stdin), pytrace=False)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", INPUT_FORMATS + ["segment"])
@fuzz_settings("small_pieces", len(INPUT_FORMATS) + 1)
@given(data=st.data())
def test_piece_and_chunk_boundaries_change_nothing(fmt, data, fuzz_models, aot_server, small_server, cases):
    """The same input read in 4 MiB pieces and tagged 20,000 sentences at a time, and read in pieces of
    61 bytes and tagged 2 sentences at a time (the context a model reads across sentences included):
    the same exit status and the same bytes on standard output."""
    segment = fmt == "segment"
    case = data.draw(segment_case() if segment else tag_case(fmt), label="case")
    folder = cases.new()
    path = write_input(folder / case["name"], case["data"])
    if segment:
        args, stdin = ["segment", "--model", str(fuzz_models["cws"]), str(path)], None
    else:
        args, stdin = tag_args(case, fuzz_models, path), (path if case["stdin"] else None)
    big = aot_server.run(args, stdin=stdin, timeout=CASE_TIMEOUT)
    small = small_server.run(args, stdin=stdin, timeout=CASE_TIMEOUT)
    found = [f"small pieces: {p}" for p in problems_of(small[0], small[2], None, None)]
    found += [f"default: {p}" for p in problems_of(big[0], big[2], None, None)]
    if big[0] != small[0]:
        found.append(f"exit status {big[0]} (default) != {small[0]} (small pieces)")
    # On an error, standard output holds the chunks tagged before it (streamed): fewer with larger
    # chunks, so one output is the start of the other. Which error is reported may differ too: a piece
    # is checked for UTF-8 before its lines are parsed, so a bad byte on line 12 can be reported
    # before a bad line 2 of the same piece (not a crash; left out of this property).
    same = big[1] == small[1] if big[0] == 0 else (big[1].startswith(small[1]) or small[1].startswith(big[1]))
    if not same:
        at = next((i for i, (a, b) in enumerate(zip(big[1], small[1])) if a != b), min(len(big[1]), len(small[1])))
        found.append(f"stdout differs from byte {at}: default {big[1][at:at + 80]!r} / small pieces "
                     f"{small[1][at:at + 80]!r}")
    if found:
        both = f"default: {big[2].strip()[-400:]!r}; small pieces (status {small[0]}): {small[2].strip()[-900:]}"
        pytest.fail(report(found, args, case["data"], big[0], both, stdin), pytrace=False)


# ------------------------------------------------------------------------- 1: regression cases
#: One token per line, then lines holding tabs (read as one token each), repeated so that a write past
#: an array is far past it.
TABS_AFTER_TOKENS = b"The\ncat\nsat\n\n" + b"a\tb\tc\td\nx\n\n" * 300


def assert_no_crash(proc: subprocess.CompletedProcess, out: Path | None = None) -> None:
    """Exit 0, or 1 with one 'Error' line; never a signal, never a traceback; ``-o``: the output only
    on success, and no temporary file beside it."""
    found = problems_of(proc.returncode, proc.stderr, out.parent if out else None, out)
    assert proc.returncode in (0, 1) and not found, (proc.returncode, found, proc.stderr[-2000:])


@pytest.mark.parametrize("model", ["pos", "ner"])
def test_tabbed_line_on_stdin_as_tokens(fuzz_models, model):
    """``printf 'a\\tb\\tc\\td\\n' | structperc tag --model POS --input-format tokens`` aborted with
    ``free(): invalid next size (fast)``."""
    proc = cli("tag", "--model", fuzz_models[model], "--input-format", "tokens", stdin=b"a\tb\tc\td\n")
    assert_no_crash(proc)
    if proc.returncode == 0:
        assert proc.stdout.decode().startswith("a\tb\tc\td\t"), proc.stdout


@pytest.mark.parametrize("model", ["pos", "ner"])
def test_conllu_file_given_as_tokens(fuzz_models, tmp_path, model):
    """A CoNLL-U file with ``--input-format tokens`` (each line one token holding nine tabs) aborted
    (POS: SIGABRT; NER: SIGSEGV after the output was printed)."""
    path = tmp_path / "test.conllu"
    path.write_text(POS_CONLLU * 50, encoding="utf-8")
    assert_no_crash(cli("tag", "--model", fuzz_models[model], "--input-format", "tokens", path))


@pytest.mark.parametrize("model, fmt", [("pos", "auto"), ("ner", "auto"), ("ner", "tokens"), ("pos", "tokens")])
@pytest.mark.parametrize("repeat", [1, 300])
def test_tokens_then_a_line_with_three_tabs(fuzz_models, tmp_path, model, fmt, repeat):
    """``auto`` reads a file starting one token per line as tokens; a later line with three tabs gave
    ``double free or corruption`` (and its friends)."""
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"The\ncat\nsat\n\n" + b"a\tb\tc\td\nx\n\n" * repeat)
    assert_no_crash(cli("tag", "--model", fuzz_models[model], "--input-format", fmt, path))


@pytest.mark.parametrize("model", ["pos", "ner"])
def test_output_file_left_whole_or_absent_never_a_temporary_file(fuzz_models, tmp_path, model):
    """With ``-o``, the crash left ``.tagged.out.PID.tmp`` behind."""
    path = tmp_path / "test.conllu"
    path.write_text(POS_CONLLU * 50, encoding="utf-8")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    out = out_dir / "tagged.out"
    proc = cli("tag", "--model", fuzz_models[model], "--input-format", "tokens", path, "-o", out)
    assert_no_crash(proc, out)
    assert sorted(p.name for p in out_dir.iterdir()) == (["tagged.out"] if proc.returncode == 0 else [])


def test_fork_server_reports_a_crash_as_the_case_status(aot_server, tmp_path):
    """The harness itself: a child killed by a signal is that case's status, and the server goes on."""
    assert aot_server.run([], code="import os; os.abort()", timeout=CASE_TIMEOUT)[0] == -6
    assert aot_server.run([], code="import ctypes; ctypes.string_at(0)", timeout=CASE_TIMEOUT)[0] == -11
    assert aot_server.run([], code="raise SystemExit(3)", timeout=CASE_TIMEOUT)[0] == 3
    assert aot_server.run([], code="import time; time.sleep(60)", timeout=1)[0] == -9
    assert aot_server.run(["--version"], timeout=CASE_TIMEOUT)[0] == 0


def test_small_server_reads_in_small_pieces(small_server, fuzz_models, tmp_path):
    from fuzz_inputs import SMALL_CHUNK, SMALL_PIECE

    code = ("from structperc.io import text; from structperc.commands import streaming; "
            "print(text._PIECE, streaming.tag_files.__kwdefaults__['sentences'])")
    assert small_server.run([], code=code, timeout=CASE_TIMEOUT)[1].split() == [b"%d" % SMALL_PIECE,
                                                                                 b"%d" % SMALL_CHUNK]
    # and a file of many pieces comes out whole
    path = tmp_path / "ner.txt"
    path.write_text(NER_CONLL * 20, encoding="utf-8")
    status, out, err = small_server.run(["tag", "--model", fuzz_models["ner"], path], timeout=CASE_TIMEOUT)
    assert status == 0, err
    assert out.decode().count("\n") == (NER_CONLL * 20).count("\n")


def test_failure_report_names_the_input(tmp_path):
    text = report(["exit status -6 (killed by a signal)"], ["tag", "--model", "m", "f"], b"a\tb" + b"x" * 5000,
                  -6, "free(): invalid next size (fast)", None, ["status -6"])
    assert "structperc tag --model m f" in text and "a\\tb" in text and "×5000" in text
    json.dumps(text)
