"""The README and the docs site: links that resolve, a short README, a site that builds with
--strict, and a command reference that is the commands' own --help."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
README_MAX_LINES = 250

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _prose(text: str) -> str:
    """`text` without fenced code blocks and code spans, where a [x](y) is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _mkdocs_slug(title: str) -> str:
    """The id Python-Markdown's toc extension (mkdocs) gives a heading."""
    value = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def _github_slug(title: str) -> str:
    """The id GitHub gives a heading (for the README, read on GitHub)."""
    return re.sub(r"[^\w\- ]", "", title.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    anchors: set[str] = set()
    for line in text.splitlines():
        match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if match:
            title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", match.group(1))  # a link: its text
            title = re.sub(r"[`*]", "", title)  # code and emphasis marks (an _ stays: DEDUP_WINDOW)
            anchors |= {_mkdocs_slug(title), _github_slug(title)}
    return anchors


def _links(path: Path) -> list[str]:
    return [m.group(1) for m in LINK.finditer(_prose(path.read_text(encoding="utf-8")))]


def _relative(target: str) -> bool:
    return not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) and not target.startswith("//")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_and_headings_that_exist(page):
    broken = []
    for target in filter(_relative, _links(page)):
        file_part, _, anchor = target.partition("#")
        dest = (page.parent / file_part).resolve() if file_part else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor and dest.is_file() and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(f"{target}: no heading with the anchor #{anchor} in {dest.relative_to(ROOT)}")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_link_check_finds_links_and_headings():
    """The checks above see what they should: a link in prose, not one in code, and slugs."""
    text = "see [a](x.md#b) and `[c](y.md)`\n\n```\n[d](z.md)\n```\n"
    assert [m.group(1) for m in LINK.finditer(_prose(text))] == ["x.md#b"]
    assert _mkdocs_slug("The index: --dir or --redis") == "the-index-dir-or-redis"
    assert _mkdocs_slug("Which copy is kept: rel=canonical") == "which-copy-is-kept-relcanonical"
    assert len(_links(ROOT / "README.md")) > 10


def test_readme_is_short_and_points_at_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MAX_LINES, "move detail to a page in docs/"
    assert "make test" in readme  # CI runs the README's test command
    linked = {t.partition("#")[0] for t in _links(ROOT / "README.md") if t.startswith("docs/")}
    pages = {f"docs/{p.name}" for p in DOCS.glob("*.md")}
    assert pages <= linked, f"pages the README does not link to: {sorted(pages - linked)}"


def test_every_docs_page_is_in_the_nav():
    nav = set(re.findall(r"^\s*-\s*[^:\n]+:\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    pages = {p.name for p in DOCS.glob("*.md")}
    assert nav == pages


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs is not installed (the dev extras)")
def test_the_site_builds_with_strict(tmp_path):
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_cli_reference_is_the_commands_help():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_reference.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_decision_chain_and_the_stats_table_are_the_codes():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "code_tables.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_stats_key_the_package_counts_is_declared():
    """A key counted with a literal instead of a stats.py name would miss the table."""
    import re

    from crawler_dedup.scrapy.stats import ALIASES, STATS, prefix

    declared = [prefix(s.key) if "<" in s.key else s.key for s in STATS] + list(ALIASES.values())
    literals = set()
    for path in (ROOT / "crawler_dedup").rglob("*.py"):
        if path.name != "stats.py":
            literals |= set(re.findall(r"""["'](dedup/[a-z_/]+)""", path.read_text(encoding="utf-8")))
    unknown = {k for k in literals if not any(k == d or (d.endswith("/") and k.startswith(d)) for d in declared)}
    assert not unknown, f"declare these in crawler_dedup/stats.py: {sorted(unknown)}"
