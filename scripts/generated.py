"""What the generators of docs/ share: the text between two marker lines of a page made from the
code, and the --write / --check command line around it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def between(page: str, start: str, end: str, body: str, name: str) -> str:
    """`page` with the text between the lines `start` and `end` replaced by `body`."""
    i, j = page.find(start), page.find(end)
    if i < 0 or j < i:
        raise SystemExit(f"{name} needs the lines {start} and {end} around its generated part")
    return page[:i + len(start)] + "\n" + body + page[j:]


def main(argv: list[str] | None, description: str, page: Path, render: Callable[[], str],
         fill: Callable[[str], str], what: str, script: str) -> int:
    parser = argparse.ArgumentParser(description=description)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"rewrite the {what} in {page.name}")
    group.add_argument("--check", action="store_true", help=f"exit 1 when {page.name}'s {what} is out of date")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        sys.stdout.write(render())
        return 0
    text = page.read_text(encoding="utf-8")
    new = fill(text)
    if args.check:
        if new != text:
            print(f"docs/{page.name}'s {what} differs from the code: run python scripts/{script} --write", file=sys.stderr)
            return 1
        return 0
    if new != text:
        page.write_text(new, encoding="utf-8")
    return 0
