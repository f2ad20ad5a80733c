"""The models that ship with the package, by name (``en-upos``, ``zh-seg``, ...), and how a name or a
path given wherever a model goes (``--model``, `structperc.load`, the service, the spaCy component)
becomes a model file.

The registry is the folder itself: every ``<name>.zip`` in ``structperc/shipped/`` is a shipped model,
built by ``scripts/build_models.py <name>``. What a model is (task, language, corpus and its licence,
the command that built it, its test score, the models it reads from) is its *card*, stored in the
model's own metadata (``provenance["card"]``) so that a copied file keeps it. A path that exists always
wins over a name (a user's ``en-upos/`` directory is theirs).
"""
from __future__ import annotations

import os
from pathlib import Path

from structperc.errors import InputError, ModelFormatError

#: Where the shipped models live (package data).
FOLDER = Path(__file__).resolve().parents[1] / "shipped"
SUFFIX = ".zip"


def names() -> list[str]:
    """The shipped models' names, sorted."""
    if not FOLDER.is_dir():
        return []
    return sorted(p.name[:-len(SUFFIX)] for p in FOLDER.iterdir() if p.name.endswith(SUFFIX))


def path_of(name: str) -> Path:
    """The file of shipped model ``name`` (`InputError` listing the known names if there is none)."""
    p = FOLDER / f"{name}{SUFFIX}"
    if "/" in name or os.sep in name or not p.is_file():
        known = ", ".join(names()) or "none installed"
        raise InputError(f"no shipped model named {name!r} (shipped: {known}; 'structperc models' lists them)")
    return p


def looks_like_name(text: str) -> bool:
    """A bare word such as ``en-upos``: no folder separator, no ``.zip``, not ``.`` or ``..``."""
    return bool(text) and "/" not in text and os.sep not in text and not text.endswith(SUFFIX) \
        and text not in (".", "..")


def resolve(model: str | os.PathLike) -> Path:
    """The path a ``--model`` value means: itself if it exists, else the shipped model of that name;
    a bare name that is neither raises `InputError` listing the shipped names, anything else is
    returned as given (its reader then says that no model is there)."""
    p = Path(model)
    if p.exists():
        return p
    text = os.fspath(model)
    if looks_like_name(text):
        if text in names():
            return path_of(text)
        known = ", ".join(names()) or "none installed"
        raise InputError(f"no model directory {text!r} here and no shipped model of that name "
                         f"(shipped: {known})")
    return p


def is_shipped(model: str | os.PathLike) -> bool:
    """Whether ``model`` names a shipped model (and no path of that name exists)."""
    text = os.fspath(model)
    return not Path(text).exists() and looks_like_name(text) and text in names()


def card(name: str) -> dict:
    """The card of shipped model ``name``, read from its metadata alone (not its arrays)."""
    import zipfile

    # Lazy: the archive module imports numpy (and this one), and listing names needs neither.
    from structperc.model.archive import read_metadata

    p = path_of(name)
    try:
        meta = read_metadata(p)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise ModelFormatError(f"{p}: damaged shipped model ({type(exc).__name__}: {exc})") from None
    found = meta.get("provenance", {}).get("card") if isinstance(meta, dict) else None
    return dict(found) if isinstance(found, dict) else {"name": name}


def cards() -> list[dict]:
    """Every shipped model's card, with its file size in bytes (``bytes``), by name."""
    return [dict(card(n), name=n, bytes=path_of(n).stat().st_size) for n in names()]
