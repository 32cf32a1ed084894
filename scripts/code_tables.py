"""Print or check the tables of docs/ made from declarations in the code: the decision chain and
the measurements the score weighs in docs/internals.md (crawler_dedup/core/decide/rules.py RULES,
measures.py FEATURES) and the stats table in docs/usage.md (crawler_dedup/scrapy/stats.py STATS).

    python scripts/code_tables.py           # both tables, as Markdown
    python scripts/code_tables.py --write   # put them into their pages between the markers
    python scripts/code_tables.py --check   # exit 1 when a page's table is not the code's
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # generated.py beside this file
sys.path.insert(0, str(ROOT))  # this checkout's package, installed or not

from crawler_dedup.core.decide.measures import FEATURES  # noqa: E402
from crawler_dedup.core.decide.rules import describe  # noqa: E402
from crawler_dedup.tools.fit import MONOTONE  # noqa: E402
from crawler_dedup.scrapy.stats import ALIASES, STATS  # noqa: E402

from generated import between  # noqa: E402


def rules_table() -> str:
    rows = ["| # | rule | what it decides |", "|---|---|---|"]
    rows += [f"| {n} | `{name}` | {what} |" for n, (name, what) in enumerate(describe(), 1)]
    return "\n".join(rows) + "\n"


def measures_table() -> str:
    rows = ["| # | measurement | what it measures | the score grows with it |", "|---|---|---|---|"]
    rows += [f"| {n} | `{name}` | {what} | {'yes (monotone)' if name in MONOTONE else ''} |"
             for n, (name, what) in enumerate(FEATURES, 1)]
    return "\n".join(rows) + "\n"


def stats_table() -> str:
    rows = ["| stat | meaning |", "|---|---|"]
    rows += [f"| `{s.key}` | {s.meaning} |" for s in STATS]
    if ALIASES:
        old = ", ".join(f"`{alias}` (now `{name}`)" for name, alias in ALIASES.items())
        rows.append(f"| earlier names | {old}: still counted for this release |")
    return "\n".join(rows) + "\n"


TABLES = (  # (page, start marker, end marker, table)
    ("internals.md", "<!-- rules-chain:start -->", "<!-- rules-chain:end -->", rules_table),
    ("internals.md", "<!-- measures-table:start -->", "<!-- measures-table:end -->", measures_table),
    ("usage.md", "<!-- stats-table:start -->", "<!-- stats-table:end -->", stats_table),
)


def filled(name: str, page: str) -> str:
    for page_name, start, end, table in TABLES:
        if page_name == name:
            page = between(page, start, end, table(), "docs/" + name)
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="rewrite the tables in their pages")
    group.add_argument("--check", action="store_true", help="exit 1 when a page's table is out of date")
    args = parser.parse_args(argv)
    if not (args.write or args.check):
        for name, _, _, table in TABLES:
            sys.stdout.write(f"docs/{name}:\n{table()}\n")
        return 0
    status = 0
    for name in dict.fromkeys(t[0] for t in TABLES):
        path = ROOT / "docs" / name
        text = path.read_text(encoding="utf-8")
        new = filled(name, text)
        if new != text and args.check:
            print(f"docs/{name}'s table differs from the code: run python scripts/code_tables.py --write",
                  file=sys.stderr)
            status = 1
        elif new != text:
            path.write_text(new, encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
