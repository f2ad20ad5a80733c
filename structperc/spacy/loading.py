"""How the spaCy faces (`structperc.spacy_component`) get their structperc model: read from a path
once, or — in a saved pipeline being loaded — from the copy saved inside it (`saved_copy`), and
turned to and from bytes (structperc's archive: no pickle)."""
# No `from __future__ import annotations` in this room: spaCy validates a factory's config against
# the factory's annotations, which must be real types, not strings.
import os
import sys
import tempfile
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import spacy
from spacy.language import Language

from structperc.errors import InputError

if TYPE_CHECKING:
    from structperc.tagger import Tagger

#: The key of a pipeline's meta listing (``"saved"``) the structperc models saved inside it, by
#: component name (``"tokenizer"``: the tokenizer).
META_KEY = "structperc"
#: The names under which structperc objects were made in each live pipeline (`saved_copy`).
_made: "weakref.WeakKeyDictionary[Language, set]" = weakref.WeakKeyDictionary()


def load_model(model: Any, what: str) -> "Tagger":
    """The structperc model ``model`` names (read once): a path, or the name of a shipped model
    (``"en-upos"``; a path that exists wins, `structperc.model.shipped.resolve`), with a one-line
    error for a bad path or an unknown name (listing the shipped names)."""
    from structperc.commands import load
    from structperc.model.shipped import looks_like_name, names, resolve

    if model is None or (isinstance(model, str) and not model.strip()):
        raise InputError(f"the {what} needs a model: config={{\"model\": \"en-upos\"}} (a shipped "
                         "model's name) or {\"model\": \"path/to/model/\"}")
    if not isinstance(model, (str, os.PathLike)):
        raise InputError(f"the {what}'s model must be a path or a shipped model's name, not "
                         f"{type(model).__name__}")
    text = os.fspath(model)
    if not Path(text).exists() and looks_like_name(text) and text not in names():
        known = ", ".join(names()) or "none installed"
        raise InputError(f"no structperc model {text!r} (for the {what}): not a path here and not a "
                         f"shipped model's name (shipped: {known})")
    path = resolve(text)
    if not path.exists():
        raise InputError(f"no structperc model at this path (for the {what})", text)
    return load(path)


def saved_copy(nlp: Language, name: str, model: Any = None) -> bool:
    """Whether ``nlp`` is a saved pipeline being loaded whose ``from_disk`` or ``from_bytes`` will give this
    model (``name``: a component, or ``"tokenizer"``) the copy saved with it, so that its config's ``model``
    must not be read: the pipeline is being built from its config (`Language.from_config`, which
    ``spacy.load`` and a bytes round trip call before ``from_disk``/``from_bytes``), and either its meta
    (``meta.json``) lists ``name`` with no structperc object made under that name in this ``nlp`` yet, or
    ``model`` names no model here (the folder it was saved from is gone) and the pipeline is not a new one
    (``spacy.blank``). A component added to a live pipeline (``nlp.add_pipe``, after a load that excluded or
    removed one of that name) reads its model.
    Lists ``name`` in the meta either way, for the pipeline's next ``to_disk``."""
    meta = nlp.meta
    entry = meta.get(META_KEY)
    if not isinstance(entry, dict) or not isinstance(entry.get("saved"), list):
        entry = meta[META_KEY] = {"saved": []}
    made = _made.setdefault(nlp, set())
    building = _called_from(Language.from_config.__func__.__code__)  # type: ignore[attr-defined]
    loading = building and ((name in entry["saved"] and name not in made) or (
        model is not None and not _found(model) and not _called_from(spacy.blank.__code__)))
    made.add(name)
    if name not in entry["saved"]:
        entry["saved"].append(name)
    return loading


def _called_from(code: Any) -> bool:
    """Whether this call comes from within the function of ``code``: `Language.from_config` (a pipeline built
    from its config, as spaCy does before loading its components' data: there is no flag for it), or
    ``spacy.blank`` (a new pipeline, whose config's model must be found at once)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _found(model: Any) -> bool:
    """Whether ``model`` names a model here: a path that exists, or a shipped model's name."""
    from structperc.model.shipped import names

    if not isinstance(model, (str, os.PathLike)):
        return True  # refused by `load_model`, in one line
    text = os.fspath(model)
    return Path(text).exists() or text in names()


def waiting(what: str) -> InputError:
    return InputError(f"the {what} has no model yet: it belongs to a saved pipeline whose from_disk "
                      "loads it (spacy.load(DIR))")


def model_bytes(tagger: "Tagger") -> bytes:
    """The model archive's bytes (the same zip `Tagger.save` writes)."""
    with tempfile.TemporaryDirectory() as tmp:
        return tagger.save(Path(tmp) / "model.zip").read_bytes()


def model_from_bytes(data: bytes) -> "Tagger":
    from structperc.commands import load

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "model.zip"
        target.write_bytes(data)
        return load(target)
