"""The READMEs' links lead somewhere: every relative link names a file of the repository and every ``#anchor`` a
heading of its file, as GitHub renders them. Both READMEs are edited often and link into each other; a renamed
heading would otherwise leave a dead link behind, unnoticed."""
from __future__ import annotations

import re
from pathlib import Path

from testkit import REPO

READMES = ("README.md", "scripts/README.md")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text: lowercased, punctuation dropped, each space a hyphen."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """The anchors of a Markdown text's headings (a repeated one gets ``-1``, ``-2`` …, as GitHub numbers them)."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    for m in re.finditer(r"^#+\s+(.*)$", _prose(text), flags=re.M):
        s = slug(m.group(1))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (a ``# comment`` there is no heading, a ``](x)`` no link)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def dead_links(path: Path, root: Path) -> list[str]:
    """The links of the Markdown file ``path`` that lead nowhere: a missing file, or an anchor its target lacks."""
    dead = []
    for target in re.findall(r"\]\(([^)\s]+)\)", _prose(path.read_text(encoding="utf-8"))):
        file, _, anchor = target.partition("#")
        if re.match(r"[a-z]+:", file):  # https:, mailto:
            continue
        linked = (path.parent / file).resolve() if file else path
        if not linked.exists() or not linked.is_relative_to(root.resolve()):
            dead.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked.read_text(encoding="utf-8")):
            dead.append(target)
    return dead


def test_github_anchors_by_hand():
    assert slug("Language resources (`--lang`)") == "language-resources---lang"
    assert slug("Speed and memory against CRFsuite and against no `--lang`") == \
        "speed-and-memory-against-crfsuite-and-against-no---lang"
    assert anchors("# A\n## B: c\n```sh\n# not a heading\n```\n## A\n") == {"a", "b-c", "a-1"}


def test_a_dead_link_is_found(tmp_path):
    (tmp_path / "other.md").write_text("# Here\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("# Top\n[ok](other.md#here) [self](#top) [web](https://example.org/#x)\n"
                    "[gone](missing.md) [no anchor](other.md#there) [nor here](#bottom)\n", encoding="utf-8")
    assert dead_links(page, tmp_path) == ["missing.md", "other.md#there", "#bottom"]


def test_the_readmes_links_lead_somewhere():
    dead = {name: dead_links(REPO / name, REPO) for name in READMES}
    assert dead == {name: [] for name in READMES}
