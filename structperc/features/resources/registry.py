"""The table of language resources: what exists for which language, where it lives, under what licence.

One row per resource (`Resource`): the Brown clusters (Brown et al. 1992) and word log probabilities
of ``spacy-lookups-data`` (the clusters Koo, Carreras & Collins 2008, Ratinov & Roth 2009 and
Turian, Ratinov & Bengio 2010 showed to help parsing, NER and chunking), and jieba's Chinese word
list. Every row names the pip package and the file inside it, the licence (recorded in a model that
uses the resource) and the reader of its format (`structperc.features.resources.formats`). The
packages are an optional extra (`EXTRA`): a missing one is one `InputError` line saying what to
install, never a download.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from structperc.errors import InputError
from structperc.features.resources.formats import (
    read_cluster_paths,
    read_jieba_dict,
    read_lemma_tables,
    read_log_probs,
)

#: The extra of ``pyproject.toml`` that installs every package below.
EXTRA = "resources"
INSTALL = f'pip install "structperc[{EXTRA}]"'
#: What a resource holds: Brown paths, log probabilities, or a word list with frequencies.
KINDS = ("clusters", "probabilities", "lemmas", "words")


@dataclass(frozen=True)
class Resource:
    """One language resource, read from a file inside an installed package."""
    name: str
    language: str
    kind: str
    #: the pip (distribution) name, for the version and the error message
    package: str
    #: the name it is imported under, to find its folder
    import_name: str
    #: the file, relative to the package's folder
    file: str
    licence: str
    extra: str
    reader: Callable[..., dict[str, Any]]

    def path(self) -> Path:
        """The file in the installed package; one `InputError` line if the package is missing."""
        try:
            spec = importlib.util.find_spec(self.import_name)
        except (ImportError, ValueError):
            spec = None
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
        if not folders:
            raise InputError(f"the {self.name} resource needs the package {self.package}, which is not "
                             f"installed: {INSTALL}")
        for folder in folders:
            candidate = Path(folder) / self.file
            if candidate.is_file():
                return candidate
        raise InputError(f"the {self.name} resource's file {self.file} is missing from the installed "
                         f"{self.package} {self.version()}: {INSTALL}")

    def version(self) -> str:
        """The installed version of the package ("unknown" without package metadata)."""
        try:
            return importlib.metadata.version(self.package)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    def read(self, **options: Any) -> dict[str, Any]:
        """The resource's content, parsed by its reader with ``options`` (a fresh dict on every call)."""
        return self.reader(self.path(), **options)


def _spacy(lang: str, kind: str, stem: str, reader: Callable[[Path], dict[str, Any]], licence: str = "MIT") \
        -> Resource:
    return Resource(name=f"{lang}-{kind}", language=lang, kind=kind, package="spacy-lookups-data",
                    import_name="spacy_lookups_data", file=f"data/{lang}_{stem}.json.gz", licence=licence,
                    extra=EXTRA, reader=reader)


#: Every resource, by name (``{language}-{kind}``).
RESOURCES: dict[str, Resource] = {r.name: r for r in (
    *(_spacy(lang, "clusters", "lexeme_cluster", read_cluster_paths) for lang in ("de", "en", "es")),
    *(_spacy(lang, "probabilities", "lexeme_prob", read_log_probs) for lang in ("de", "el", "en", "es")),
    # the lemmatizers' tables whose classes are parts of speech with suffix rules (English: WordNet 3.0's)
    _spacy("en", "lemmas", "lemma_index", read_lemma_tables, "WordNet 3.0 licence (Princeton University)"),
    _spacy("nl", "lemmas", "lemma_index", read_lemma_tables),
    Resource(name="zh-words", language="zh", kind="words", package="jieba", import_name="jieba",
             file="dict.txt", licence="MIT", extra=EXTRA, reader=read_jieba_dict),
)}


def languages() -> list[str]:
    """The languages with at least one resource, sorted."""
    return sorted({r.language for r in RESOURCES.values()})


def _language(lang: str) -> str:
    code = lang.strip().lower() if isinstance(lang, str) else lang
    if code not in languages():
        raise InputError(f"no language resources for {lang!r}: known languages are {', '.join(languages())}")
    return code


def resources_for(lang: str) -> list[Resource]:
    """The resources of one language (sorted by kind); one `InputError` line for an unknown one."""
    code = _language(lang)
    return sorted((r for r in RESOURCES.values() if r.language == code), key=lambda r: KINDS.index(r.kind))


def resource(key: str | tuple[str, str]) -> Resource:
    """A resource by name (``"en-clusters"``) or by ``(language, kind)``.

    One `InputError` line for an unknown name, language or kind, listing the known ones.
    """
    if isinstance(key, tuple):
        if len(key) != 2:
            raise InputError(f"expected (language, kind), not {key!r}")
        lang, kind = key
        if kind not in KINDS:
            raise InputError(f"unknown resource kind {kind!r}: known kinds are {', '.join(KINDS)}")
        have = resources_for(lang)
        for r in have:
            if r.kind == kind:
                return r
        raise InputError(f"no {kind} for language {lang!r}: it has {', '.join(r.kind for r in have)}")
    if key not in RESOURCES:
        raise InputError(f"unknown language resource {key!r}: known resources are {', '.join(sorted(RESOURCES))}")
    return RESOURCES[key]


def provenance(key: str | tuple[str, str]) -> dict[str, str]:
    """Where a resource comes from, for a model's record: name, package, version, file and licence."""
    r = resource(key)
    return {"name": r.name, "package": r.package, "version": r.version(), "file": r.file, "licence": r.licence}
