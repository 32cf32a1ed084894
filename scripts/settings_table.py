"""Print the settings table of docs/settings.md, made from the registry in crawler_dedup/config/registry.py.

    python scripts/settings_table.py           # the Markdown table
    python scripts/settings_table.py --write   # put it into docs/settings.md between the markers
    python scripts/settings_table.py --check   # exit 1 when docs/settings.md's table is not this one
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # generated.py beside this file
sys.path.insert(0, str(ROOT))  # this checkout's package, installed or not

from crawler_dedup.config import SETTINGS, Setting  # noqa: E402

from generated import between, main as run  # noqa: E402

PAGE = ROOT / "docs" / "settings.md"
START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"

# The registry's docs were written for one long README; on the docs site the sections they
# link to are pages of their own. An anchor not listed here stops the script, so a new one is
# mapped before it can become a dead link.
ANCHORS = {
    "recrawls": "recrawls.md",
    "speed": "benchmarks.md#speed",
    "detection-quality": "benchmarks.md#detection-quality",
    "inspecting-what-was-dropped": "inspecting.md#the-cost-of-keeping-texts",
}
PLAIN = (  # plain-text references made links
    ("see docs/distributed.md", "see [Distributed crawls](distributed.md)"),
    ("(see Detection quality)", "(see [Detection quality](benchmarks.md#detection-quality))"),
)


def default_cell(setting: Setting) -> str:
    if setting.shown is not None:
        return setting.shown
    value = setting.default
    return f'"{value}"' if isinstance(value, str) else repr(value)


def doc_cell(setting: Setting) -> str:
    """The setting's doc with its README anchors pointing at the docs pages."""
    def page(match: re.Match) -> str:
        anchor = match.group(1)
        if anchor not in ANCHORS:
            raise SystemExit(f"{setting.name}'s doc links to #{anchor}: add it to ANCHORS in {Path(__file__).name}")
        return f"]({ANCHORS[anchor]})"

    doc = re.sub(r"\]\(#([^)\s]+)\)", page, setting.doc)
    for old, new in PLAIN:
        doc = doc.replace(old, new)
    return doc


def table() -> str:
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | `{default_cell(s)}` | {doc_cell(s)} |" for s in SETTINGS]
    return "\n".join(rows) + "\n"


def with_table(page: str) -> str:
    """`page` with the text between the markers replaced by today's table."""
    return between(page, START, END, table(), "docs/" + PAGE.name)


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__.splitlines()[0], PAGE, table, with_table, "settings table", Path(__file__).name)


if __name__ == "__main__":
    sys.exit(main())
