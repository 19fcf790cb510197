"""Every relative link in README.md and docs/*.md reaches a file that exists, and its #anchor a heading there."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _prose(path: Path) -> str:
    return CODE.sub("", FENCE.sub("", path.read_text()))


def anchors(path: Path) -> set[str]:
    """The #fragments GitHub gives a Markdown file's headings (repeats get -1, -2, ...)."""
    seen: Counter[str] = Counter()
    found = set()
    for line in FENCE.sub("", path.read_text()).splitlines():
        if heading := re.match(r"#{1,6} (.+)", line):
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if seen[slug] else slug)
            seen[slug] += 1
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(path)):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        resolved = (path.parent / file).resolve() if file else path
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            broken.append(f"{target}: no such heading")
    return broken


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert broken_links(path) == []


def test_the_check_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading: `with` code\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-heading-with-code) [gone](missing.md) [bad](there.md#nope) "
        "[web](https://example.com) `[code](missing.md)`\n"
    )
    assert broken_links(page) == ["missing.md: no such file", "there.md#nope: no such heading"]
