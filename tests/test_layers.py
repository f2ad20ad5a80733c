"""The house stays layered: a module imports only floors below its own in the data flow
(io -> labels -> features -> model -> decode/train -> pipeline -> faces), nothing imports the CLI,
and `io` and `labels` import nothing of the package but `structperc.errors` (and the compiled
loader, which only finds the ahead-of-time build)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "structperc"

#: Floor of every unit (a folder or a top-level module). A module may import its own unit and
#: units on lower floors; units on the same floor do not import each other.
FLOORS: dict[str, int] = {
    "errors": -1, "version": 0, "compiled": 0, "forking": 0, "_aot": 0, "_aot_read": 0, "_aot_fb": 0, "_aot_nbest": 0,
    "_aot_constrained": 0, "_aot_order2": 0,
    "io": 1,
    "labels": 2,
    "features": 3,
    "model": 4,
    "decode": 5, "train": 5,
    "pipeline": 6, "inputs": 6, "params": 6, "metrics": 6,
    "inference": 7, "plot": 7, "parallel": 7, "fitting": 8, "assessment": 9,
    "tagger": 10,
    "segmenter": 11, "ensemble": 11, "sklearn": 11, "cws": 12,
    "workflows": 13, "streaming": 14, "spacy_component": 14, "serving": 14,
    "cluster": 14,
    "service": 15,
    "cli": 16,
    "binary": 10,
    "__init__": 17, "__main__": 17,
}
#: `io` and `labels` import nothing of the package but these.
BASE_ONLY = {"io": {"errors", "compiled", "io"}, "labels": {"errors", "labels"}}


def unit_of(module: str) -> str:
    """``structperc.model.schema`` -> ``model``; ``structperc`` itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def module_name(path: Path, root: Path = PACKAGE) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__" and len(parts) > 2:
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, imported module) of every import of the package in ``path``, lazy ones included."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("structperc")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            if not base.startswith("structperc"):
                continue
            if base == "structperc":  # `from structperc import x`: x is a unit
                out += [(node.lineno, f"structperc.{a.name}") for a in node.names]
            else:
                out.append((node.lineno, base))
    return out


def violations(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        own = unit_of(module_name(path, root))
        if own == "__init__" and path.parent != root:
            own = path.parent.name
        for line, target in imports_of(path, root):
            unit = unit_of(target)
            where = f"{path.relative_to(root.parent)}:{line} imports {target}"
            if unit not in FLOORS:
                found.append(f"{where}: unknown unit {unit!r} (give it a floor in FLOORS)")
            elif unit == "cli" and own not in ("cli", "__main__"):  # `python -m structperc` runs it
                found.append(f"{where}: nothing imports the command line")
            elif own in BASE_ONLY and unit not in BASE_ONLY[own]:
                found.append(f"{where}: {own} imports only {sorted(BASE_ONLY[own])}")
            elif unit != own and FLOORS[unit] >= FLOORS.get(own, 99):
                found.append(f"{where}: runs back up the data flow ({own} is on floor "
                             f"{FLOORS.get(own)}, {unit} on {FLOORS[unit]})")
    return found


def test_every_import_runs_down_the_data_flow():
    assert violations() == []


def test_every_unit_has_a_floor():
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))}
    assert units <= set(FLOORS), sorted(units - set(FLOORS))


@pytest.mark.parametrize("module, line", [
    ("io/corpus.py", "from structperc.model.weights import Weights\n"),       # io reaches up
    ("model/weights.py", "from structperc.decode.viterbi import viterbi_batch\n"),  # model -> decode
    ("tagger.py", "from structperc.segmenter import Segmenter\n"),            # face -> face above
    ("features/index.py", "from structperc.cli import main\n"),                # anything -> CLI
    ("labels/label_set.py", "import structperc.features.templates\n"),
])
def test_a_back_import_is_caught(tmp_path, module, line):
    """The check can fail: each planted back-import in a copy of the package is reported."""
    import shutil

    copy = tmp_path / "structperc"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    assert violations(copy) == []
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + "\n" + line, encoding="utf-8")
    found = violations(copy)
    assert len(found) == 1 and module in found[0], found
