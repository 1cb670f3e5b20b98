"""The documentation's links lead somewhere: README.md and docs/*.md, and the examples' README pointers.

* every relative Markdown link resolves to a file or folder inside the repository (never to
  ``../shared`` or anything else outside it, which readers of the repository do not have);
* every ``#anchor`` (in the same file or ``other.md#anchor``) is a heading there, slugged the
  way GitHub does;
* a comment in ``examples/*.yaml`` that says ``README "Section"`` names a README heading.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
_INLINE = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'(][^)]*)?\)")
_REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$", re.M)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def _prose(text: str) -> str:
    """The text without fenced blocks and inline code (a link there is not a link)."""
    return _CODE.sub("", _FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lowercased, punctuation removed, spaces → '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # [text](url) → text
    text = re.sub(r"[`*_~]|<[^>]+>", "", text).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for m in _HEADING.finditer(_FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    return [m.group(1) for m in _INLINE.finditer(text)] + [m.group(1) for m in _REFDEF.finditer(text)]


def problems(doc: Path, repo: Path = REPO) -> list[str]:
    found: list[str] = []
    for target in links(doc):
        if not target or _SCHEME.match(target) or target.startswith("//"):
            continue  # web and mail links are out of scope (no network in tests)
        where, _, anchor = target.partition("#")
        dest = (doc.parent / where).resolve() if where else doc
        if "shared" in Path(where).parts and ".." in Path(where).parts:
            found.append(f"{target}: points into ../shared, which the repository does not ship")
            continue
        if not dest.is_relative_to(repo):
            found.append(f"{target}: leaves the repository")
            continue
        if not dest.exists():
            found.append(f"{target}: {dest.relative_to(repo)} does not exist")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            found.append(f"{target}: no heading #{anchor} in {dest.relative_to(repo)}")
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve_inside_the_repository(doc: Path) -> None:
    assert problems(doc) == []


def test_examples_name_readme_sections_that_exist() -> None:
    headings = {m.group(2).strip() for m in _HEADING.finditer(_FENCE.sub("", (REPO / "README.md").read_text()))}
    named = [(p.name, m.group(1)) for p in sorted((REPO / "examples").glob("*.yaml"))
             for m in re.finditer(r'README "([^"]+)"', p.read_text())]
    assert named, "the examples no longer point to README sections: drop or adapt this test"
    assert [(f, s) for f, s in named if s not in headings] == []


def test_the_checker_catches_what_it_should(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# Big `Title`: v2.0!\n## Again\n## Again\n")
    doc = tmp_path / "README.md"
    doc.write_text(
        "## Task specs\n[ok](docs/b.md) [ok](docs/b.md#big-title-v20) [ok](#task-specs)\n"
        "[ok](docs/b.md#again-1) [web](https://example.org/x) `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
        "[bad](missing.md) [bad](#nope) [bad](../shared/notes.md) [bad](../../etc/passwd)\n"
        "[ref]: docs/gone.md\n")
    got = problems(doc, tmp_path)
    assert [g.split(":")[0] for g in got] == ["missing.md", "#nope", "../shared/notes.md",
                                               "../../etc/passwd", "docs/gone.md"], got
