"""The house stays layered: a module imports only floors below its own in the data flow
(io -> labels -> features -> model -> decode -> predict -> train -> faces), nothing imports the CLI,
and `io` and `labels` import nothing of the package but `structperc.errors` (and the compiled
loader, which only finds the ahead-of-time build).

Training sits above prediction: a run scores its dev set and two-stage training tags its first stage
through `structperc.predict`. The `dask` room holds two floors, each module with its own: training on
a cluster below the faces (`Tagger.fit(dask=...)` uses it), tagging on a cluster over them."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "structperc"

#: Floor of every unit (a folder, a top-level module, or a module of a room that spans two floors).
#: A module may import its own unit and units on lower floors; units on one floor do not import each
#: other.
FLOORS: dict[str, float] = {
    "errors": -1, "version": 0, "compiled": 0, "_aot": 0, "_aot_read": 0, "_aot_fb": 0, "_aot_nbest": 0,
    "_aot_constrained": 0, "_aot_order2": 0,
    "io": 1,
    "labels": 2,
    "features": 3,
    "model": 4,
    "decode": 5, "metrics": 5,
    "predict": 6,
    "train": 7,
    "dask.__init__": 7, "dask.client": 8, "dask.training": 9, "dask.parts": 10,
    "dask.changes": 8, "dask.shard_tasks": 8.5,  # below dask.training, which runs them; tasks use changes
    "tagger": 11, "binary": 11,
    "segmenter": 12, "ensemble": 12, "sklearn": 12, "cws": 13,
    "commands": 14,
    "dask.worker": 15, "spacy": 15,
    "dask.tagging": 16, "service": 16, "spacy_component": 16,
    "cli": 17,
    "__init__": 18, "__main__": 18,
}
#: Rooms whose modules have floors of their own (`FLOORS` names them ``room.module``).
SPLIT_ROOMS = {"dask"}
#: `io` and `labels` import nothing of the package but these.
BASE_ONLY = {"io": {"errors", "compiled", "io"}, "labels": {"errors", "labels"}}


def unit_of(module: str) -> str:
    """``structperc.model.schema`` -> ``model``; ``structperc`` itself -> ``__init__``."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in SPLIT_ROOMS:
        return f"{parts[1]}.{parts[2]}"
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
            if base == "structperc" or base.removeprefix("structperc.") in SPLIT_ROOMS:
                # `from structperc import x`, `from structperc.dask import x`: x is a unit
                out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
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
        if own in SPLIT_ROOMS:  # a split room's __init__ is below all of its modules
            own = f"{own}.__init__"
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
             if (p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists()))} - SPLIT_ROOMS
    units |= {f"{room}.{p.stem}" for room in SPLIT_ROOMS for p in (PACKAGE / room).glob("*.py")}
    assert units <= set(FLOORS), sorted(units - set(FLOORS))


@pytest.mark.parametrize("module, line", [
    ("io/corpus.py", "from structperc.model.weights import Weights\n"),       # io reaches up
    ("model/weights.py", "from structperc.decode.viterbi import viterbi_batch\n"),  # model -> decode
    ("tagger.py", "from structperc.segmenter import Segmenter\n"),            # face -> face above
    ("features/index.py", "from structperc.cli import main\n"),                # anything -> CLI
    ("labels/label_set.py", "import structperc.features.templates\n"),
    ("predict/__init__.py", "from structperc.train.run import fit\n"),               # predict -> train
    ("train/run.py", "from structperc.dask.training import dask_runner\n"),      # train -> dask
    ("dask/training.py", "from structperc.tagger import Tagger\n"),               # dask training -> a face
    ("dask/client.py", "from structperc.dask import tagging\n"),                 # within the room, upwards
    ("commands/models.py", "from structperc.service import serving\n"),          # commands -> service
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
