"""Print the README's settings table, made from the registry in crawler_dedup/config.py.

    python scripts/settings_table.py           # the Markdown table
    python scripts/settings_table.py --write   # put it into README.md between the markers
    python scripts/settings_table.py --check   # exit 1 when README.md's table is not this one
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's package, installed or not

from crawler_dedup.config import SETTINGS, Setting  # noqa: E402

README = ROOT / "README.md"
START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"


def default_cell(setting: Setting) -> str:
    if setting.shown is not None:
        return setting.shown
    value = setting.default
    return f'"{value}"' if isinstance(value, str) else repr(value)


def table() -> str:
    rows = ["| setting | default | meaning |", "|---|---|---|"]
    rows += [f"| `{s.name}` | `{default_cell(s)}` | {s.doc} |" for s in SETTINGS]
    return "\n".join(rows) + "\n"


def with_table(readme: str) -> str:
    """`readme` with the text between the markers replaced by today's table."""
    start, end = readme.find(START), readme.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"README.md needs the lines {START} and {END} around the settings table")
    return readme[:start + len(START)] + "\n" + table() + readme[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the table in README.md")
    group.add_argument("--check", action="store_true", help="exit 1 when README.md's table is out of date")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(table())
        return 0
    text = README.read_text(encoding="utf-8")
    new = with_table(text)
    if args.check:
        if new != text:
            print("README.md's settings table differs from the registry: run scripts/settings_table.py --write",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
