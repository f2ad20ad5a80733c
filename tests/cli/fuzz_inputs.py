"""Helpers of `test_fuzz_cli.py`: hypothesis strategies of hostile input files for ``structperc tag``
and ``structperc segment``, and a fork server that runs the command on them, one child per case.

The fork server (``python tests/cli/fuzz_inputs.py serve``) imports the command line once (and, for the
JIT mode, compiles the kernels once on benign input), then, for every case it is sent, forks a child
that runs ``structperc ARGS`` exactly as the installed script does (``main()``, whose `SystemExit`
ends the child through the interpreter's normal shutdown, so a heap corrupted during the run is
still freed and detected). A case that kills its child (SIGABRT from glibc's heap checks, SIGSEGV)
is reported as that case's status, minus the signal number, so a crash is attributable to one input
and never takes the server (or pytest) down, and a case costs a fork, not an interpreter start.

Protocol: one JSON object a line on the server's standard input, ``{"args": [...], "stdin": PATH|null,
"stdout": PATH, "stderr": PATH, "timeout": SECONDS}``; one JSON line back, ``{"status": N,
"seconds": S}`` (``status`` is the exit status, or ``-SIGNAL``; ``"timeout": true`` when it was killed
for running too long). The first line the server writes is ``{"ready": true, "warm": [...]}``.
"""
from __future__ import annotations

import gzip
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import strategies as st

HERE = Path(__file__).resolve()

# --------------------------------------------------------------------------------------- tokens
#: Tokens a model may know (Latin with accents, Chinese, full-width, emoji, a supplementary-plane
#: character), CoNLL/CoNLL-U markers, no-break and ideographic spaces (not separators: README).
WORDS = ["The", "cat", "sat", "dog", "ran", "home", ".", ",", "Juan", "Madrid", "Ana", "Pérez", "Banco",
         "España", "Confidence", "in", "the", "pound", "is", "北京", "欢迎", "你", "上海", "体育局", "我们",
         "😀", "𠀋", "naïve", "Zürich", "２０２４", "ＡＢＣ", "New\xa0York", "a\u3000b", "_", "#", "##", "#x",
         "-DOCSTART-", "B-NP", "I-NP", "B-PER", "I-ORG", "O", "NN", "DT", "VBD", "NOUN", "PUNCT", "1", "2",
         "1-2", "2.1", "0", "e\u0301", "?", "-X-", "'", '"', "\\", "{", "}", '["x"]', "null", "nan", "٣"]
#: Characters other splitters treat as line or field breaks (U+0085, U+2028, U+001C-U+001F: Python's
#: `str.splitlines`; VT and FF: ASCII whitespace, `bytes.split` breaks there), NUL, zero-width and
#: noncharacters, inside a token.
ODD = ["x\u2028y", "x\x85y", "x\x1cy", "x\x1fy", "x\x0by", "x\x0cy", "\u200b", "x\x00y", "\ufeff",
       "\ufffe", "\U0010fffd", "ﷺ", "\u202e"]
LETTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\t\n\r ")
#: Very long tokens (thousands of characters), of one, two, three and four UTF-8 bytes a character.
LONG = st.builds(lambda c, n: c * n, st.sampled_from(["a", "é", "北", "😀", "ab北"]), st.integers(1000, 6000))


def token(level: int):
    """A token of a file of hostility ``level``: 0 known words; 1 also random characters; 2 also odd
    characters and now and then thousands of characters."""
    if level == 0:
        return st.sampled_from(WORDS)
    if level == 1:
        return st.integers(0, 5).flatmap(
            lambda i: st.text(LETTERS, min_size=1, max_size=8) if i == 0 else st.sampled_from(WORDS))
    return st.integers(0, 39).flatmap(
        lambda i: LONG if i == 0 else st.text(LETTERS, min_size=1, max_size=8) if i < 6
        else st.sampled_from(ODD) if i < 9 else st.sampled_from(WORDS))


SEPARATOR = st.sampled_from(["\t", "\t", " ", " ", "  ", " \t ", "\t\t", "\t ", "   \t"])
EDGE = st.sampled_from(["", "", "", "", "", "", " ", "\t", "  "])


@st.composite
def column_line(draw, k: int | None = None, level: int = 2) -> str:
    """A line of ``k`` fields (0-12 when None) at any separators, maybe with leading/trailing blanks."""
    if k is None:
        k = draw(st.integers(0, 12))
    tokens = draw(st.lists(token(level), min_size=k, max_size=k))
    seps = draw(st.lists(SEPARATOR, min_size=max(k - 1, 0), max_size=max(k - 1, 0)))
    body = "".join(t + s for t, s in zip(tokens, seps + [""]))
    return draw(EDGE) + body + draw(EDGE)


def conllu_field(level: int):
    return st.one_of(st.just("_"), token(level), st.sampled_from(
        ["NOUN", "VERB", "DT", "NN", "0", "root", "SpaceAfter=No", "Number=Sing|Case=Nom"]))


@st.composite
def conllu_line(draw, ident: str | None = None, level: int = 2) -> str:
    """A CoNLL-U line: an ID (a word, a multi-word range ``1-2``, an empty node ``1.1``, or junk) and
    nine more tab-separated fields (now and then one too few or too many)."""
    if ident is None:
        ident = draw(st.one_of(st.integers(0, 40).map(str),
                               st.tuples(st.integers(0, 9), st.integers(0, 9)).map(lambda t: f"{t[0]}-{t[1]}"),
                               st.tuples(st.integers(0, 9), st.integers(0, 3)).map(lambda t: f"{t[0]}.{t[1]}"),
                               st.sampled_from(["_", "x", "1-", "-1", "1.", "01", "1e3", " 1", "１"])))
    n = draw(st.sampled_from([9] * 100 + [8, 10, 11, 0])) if level == 2 else 9
    return "\t".join([ident] + draw(st.lists(conllu_field(level), min_size=n, max_size=n)))


COMMENT = st.one_of(st.just("#"), st.text(LETTERS, max_size=12).map(lambda t: "# " + t),
                    st.sampled_from(["# sent_id = 1", "# text = The cat sat.", "#\tx\ty", "# newdoc"]))
DOCSTART = st.sampled_from(["-DOCSTART-", "-DOCSTART- -X- O O", "-DOCSTART- O", "-DOCSTART-\t-X-\tO"])
BLANKISH = st.sampled_from(["", "", "", "", "", " ", "\t", "  \t "])


def any_line(level: int):
    return st.one_of(column_line(level=level), column_line(1, level), conllu_line(level=level), COMMENT,
                     DOCSTART, BLANKISH)


@st.composite
def sentence(draw, style: str, level: int = 2) -> list[str]:
    """The lines of one sentence in ``style``: ``conllK`` (K fields a line), ``conllu`` (ordered IDs with
    comments, multi-word tokens and empty nodes), ``ragged`` (1-10 fields a line, mostly 1), ``text``
    (one line), ``chaos`` (any lines)."""
    if style == "chaos":
        return draw(st.lists(any_line(level), min_size=1, max_size=8))
    if style == "text":
        return [draw(column_line(draw(st.integers(1, 12)), level))]
    n = draw(st.integers(1, 8))
    if style == "conllu":
        lines = draw(st.lists(COMMENT, max_size=2))
        for i in range(1, n + 1):
            if draw(st.integers(0, 9)) == 0 and i < n:
                lines.append(draw(conllu_line(f"{i}-{i + 1}", level)))
            lines.append(draw(conllu_line(str(i), level)))
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(conllu_line(f"{i}.1", level)))
        return lines
    if style == "ragged":  # mostly one field a line, some lines several (CoNLL columns given as tokens)
        return [draw(column_line(draw(st.sampled_from([1, 1, 1, 2, 3, 4, 10])), level)) for _ in range(n)]
    k = int(style[len("conll"):])
    lines = [draw(column_line(k, level)) for _ in range(n)]
    if level and draw(st.integers(0, 9)) == 0:  # a ragged line
        lines.insert(draw(st.integers(0, n)), draw(column_line(level=level)))
    return lines


NEWLINES = ["\n", "\n", "\n", "\r\n", "\r"]
#: Bytes spliced into a file anywhere: NUL, invalid UTF-8 (a lone continuation byte, a truncated
#: sequence, an encoded surrogate, an overlong form), stray line ends and tabs, a BOM mid-file.
SPLICES = [b"\x00", b"\xff", b"\x80", b"\xc3", b"\xe5\x8c", b"\xed\xa0\x80", b"\xc0\xaf", b"\r", b"\t",
           b"\n", b"\xef\xbb\xbf", b"\x00\x00\x00\x00"]
STYLES = ("conll1", "conll2", "conll3", "conll4", "conll10", "conllu", "ragged", "text", "chaos")


@st.composite
def input_file(draw, styles=STYLES, likely: tuple[str, ...] = ()) -> bytes:
    """The bytes of an input file: sentences mostly in one style (one of ``likely`` more often than
    not, when given), separated by runs of blank lines, with comments and ``-DOCSTART-`` between.

    Its hostility level (0-2, see `token`) decides the rest: at 0 the file is well formed, so that
    many cases are tagged; from 1 on a sentence may come in another style, a line may be ragged, and
    the file may use CR or CRLF line ends, start with a BOM, lack a final newline, and have bytes
    spliced in (at 2, more often)."""
    level = draw(st.sampled_from([0, 0, 1, 1, 2]))
    main = draw(st.sampled_from(likely if likely and draw(st.integers(0, 2)) else styles))
    lines: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        extra = draw(st.integers(0, 9))
        if extra == 0:
            lines.append(draw(DOCSTART))
        elif extra == 1:
            lines.append(draw(COMMENT))
        style = draw(st.sampled_from(styles)) if level and draw(st.integers(0, 11)) == 0 else main
        lines.extend(draw(sentence(style, level)))
        lines.extend(draw(st.lists(BLANKISH if level else st.just(""), min_size=0 if main == "text" else 1,
                                   max_size=3)))
    newline = draw(st.sampled_from(NEWLINES + ["mixed"])) if level else "\n"
    if newline == "mixed":
        ends = draw(st.lists(st.sampled_from(NEWLINES), min_size=len(lines), max_size=len(lines)))
    else:
        ends = [newline] * len(lines)
    text = "".join(line + end for line, end in zip(lines, ends))
    if text and level and draw(st.integers(0, 2)) == 0:
        text = text.rstrip("\r\n")  # no final newline
    data = text.encode("utf-8")
    if level and draw(st.integers(0, 4)) == 0:
        data = b"\xef\xbb\xbf" + data
    for _ in range(draw(st.sampled_from([0] * 6 + [1, 1, 2, 3])) if level == 2 else 0):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(SPLICES)) + data[at:]
    return data


#: Raw text for `structperc segment`: Chinese lines, mixed scripts, blank lines, the same hostile bytes.
SEGMENT_FILE = input_file(styles=("text", "text", "chaos", "conll1", "conll3"))
NAMES = st.sampled_from(["in.txt", "in.txt", "in.txt", "in.conllu", "in.conll", "in.txt.gz", "in"])


def write_input(path: Path, data: bytes) -> Path:
    """Write ``data`` at ``path`` (gzip-compressed when the name ends in ``.gz``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(data, mtime=0) if path.name.endswith(".gz") else data)
    return path


def shown(data: bytes, limit: int = 800) -> str:
    """``data`` for an assertion message: decoded (bytes that are not UTF-8 as ``\\xNN``), runs of one
    short unit shortened (``<x×5000>``)."""
    import re

    text = repr(data.decode("utf-8", "backslashreplace"))
    text = re.sub(r"(.{1,12}?)\1{15,}", lambda m: f"<{m.group(1)}×{len(m.group(0)) // len(m.group(1))}>", text)
    return text if len(text) <= limit else text[:limit] + f"… ({len(data)} bytes)"


# ---------------------------------------------------------------------------------- fork server
def _child(req: dict) -> None:
    """In the forked child: become ``structperc ARGS`` with the case's standard streams."""
    fd = os.open(req.get("stdin") or os.devnull, os.O_RDONLY)
    os.dup2(fd, 0)
    for target, path in ((1, req["stdout"]), (2, req["stderr"])):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, target)
    os.closerange(3, 256)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if req.get("exec"):  # the harness's own test: a child that crashes on purpose
        exec(req["exec"])
        raise SystemExit(0)
    sys.argv = ["structperc", *req["args"]]
    from structperc.cli import main

    main(args=req["args"], prog_name="structperc")  # raises SystemExit: the interpreter exits with it
    raise SystemExit(0)


#: `serve(small=True)`: the readers' pieces (4 MiB) and the tagger's chunks (20,000 sentences) made tiny,
#: so that small files cross as many piece and chunk boundaries as large ones do.
SMALL_PIECE, SMALL_CHUNK = 61, 2


def _small_pieces() -> None:
    from structperc.commands import streaming
    from structperc.io import text

    assert isinstance(text._PIECE, int) and "sentences" in (streaming.tag_files.__kwdefaults__ or {})
    text._PIECE = SMALL_PIECE
    streaming.tag_files.__kwdefaults__["sentences"] = SMALL_CHUNK


def _warm(cases: list[list[str]]) -> list[str]:
    """Run ``cases`` (command lines) in this process, so that the forked children inherit what they
    compiled; return what went wrong (nothing, on benign input)."""
    from structperc.cli import main

    problems = []
    for args in cases:
        try:
            main(args=args, prog_name="structperc", standalone_mode=False)
        except BaseException as exc:  # noqa: BLE001 - reported back, not hidden
            problems.append(f"{' '.join(args)}: {type(exc).__name__}: {exc}")
    return problems


def serve(warm: list[list[str]], freeze: bool = False, small: bool = False) -> None:
    import structperc.cli  # noqa: F401 - the import every child would otherwise repeat
    import structperc.commands.streaming  # noqa: F401
    import structperc.io.formats  # noqa: F401
    import structperc.predict  # noqa: F401

    if small:
        _small_pieces()

    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.dup(1)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)  # anything printed here goes to the server's log (its stderr), never into the protocol
    problems = _warm(warm)
    if freeze:  # the children's collections skip (and so do not copy) what the server holds: a JIT
        import gc  # child costs 0.15 s of CPU instead of 1 s; but a heap overflow goes unseen more often

        gc.collect()
        gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    try:  # which ahead-of-time groups are current (a stale one is replaced by the JIT)
        from structperc.compiled import loader

        built = {group: module is not None for group, module in loader._BUILT.items()}
    except Exception:  # noqa: BLE001 - only informative
        built = {}
    hello = {"ready": True, "problems": problems, "aot_groups": built}
    os.write(proto_out, (json.dumps(hello) + "\n").encode())
    buf = b""
    while True:
        while b"\n" not in buf:
            got = proto_in.read(65536)
            if not got:
                return
            buf += got
        line, buf = buf.split(b"\n", 1)
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:
            proto_in.close()
            _child(req)
        deadline = start + float(req.get("timeout", 120))
        timed_out, cpu = False, 0.0
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                cpu = usage.ru_utime + usage.ru_stime
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                status, timed_out = -signal.SIGKILL, True
                break
            time.sleep(0.002)
        code = status if timed_out else os.waitstatus_to_exitcode(status)
        reply = {"status": code, "seconds": round(time.monotonic() - start, 3), "cpu": round(cpu, 3),
                 "timeout": timed_out}
        os.write(proto_out, (json.dumps(reply) + "\n").encode())


class ForkServer:
    """The pytest side of `serve`: ``run(args, stdin=None)`` -> (status, stdout bytes, stderr text)."""

    def __init__(self, workdir: Path, env: dict[str, str], warm: list[list[str]] = (), freeze: bool = False,
                 small: bool = False, start_timeout: float = 600):
        self.workdir, self.env, self.warm, self.start_timeout = workdir, env, list(warm), start_timeout
        self.freeze, self.small = freeze, small
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc: subprocess.Popen | None = None
        self.problems: list[str] = []
        self.aot_groups: dict[str, bool] = {}
        self.last: dict = {}
        self.count = 0

    def start(self) -> None:
        self.log = open(self.workdir / "server.log", "ab")
        command = [sys.executable, str(HERE), "serve", json.dumps(self.warm), str(int(self.freeze)),
                   str(int(self.small))]
        self.proc = subprocess.Popen(command, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, cwd=self.workdir)
        hello = self._read_line(self.start_timeout)
        if hello is None or not hello.get("ready"):
            log = (self.workdir / "server.log").read_text(errors="replace")[-4000:]
            self.close()
            raise RuntimeError(f"the fork server did not start: {hello!r}\n{log}")
        self.problems, self.aot_groups = hello["problems"], hello.get("aot_groups", {})

    def _read_line(self, timeout: float) -> dict | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        data = b""
        end = time.monotonic() + timeout
        while not data.endswith(b"\n"):
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            got = os.read(fd, 65536)
            if not got:
                return None
            data += got
        return json.loads(data)

    def run(self, args: list[str], stdin: str | os.PathLike | None = None, timeout: float = 120,
            code: str | None = None):
        """Run ``structperc ARGS`` (or Python ``code``) in a forked child: (status, stdout bytes, stderr text)."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self.count += 1
        out, err = self.workdir / f"case{self.count}.out", self.workdir / f"case{self.count}.err"
        req = {"args": [str(a) for a in args], "stdin": None if stdin is None else str(stdin),
               "stdout": str(out), "stderr": str(err), "timeout": timeout, "exec": code}
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        reply = self._read_line(timeout + 30)
        if reply is None:
            self.close()
            raise RuntimeError(f"the fork server died running {args}")
        self.last = reply
        result = reply["status"], out.read_bytes(), err.read_text(encoding="utf-8", errors="replace")
        out.unlink()
        err.unlink()
        return result

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None
        if getattr(self, "log", None) is not None:
            self.log.close()
            self.log = None


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"]:
        sys.exit("usage: fuzz_inputs.py serve [WARM-UP JSON]")
    serve(json.loads(sys.argv[2]) if len(sys.argv) > 2 else [], sys.argv[3:4] == ["1"], sys.argv[4:5] == ["1"])
