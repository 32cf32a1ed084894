"""Print the command reference of docs/cli.md: every command's --help, made from the parser.

    python scripts/cli_reference.py           # the Markdown
    python scripts/cli_reference.py --write   # put it into docs/cli.md between the markers
    python scripts/cli_reference.py --check   # exit 1 when docs/cli.md's reference is not this one

It walks crawler_dedup.cli.build_parser() and its subparsers (the `index` subcommands too), and
formats each help at a width of 100 columns without colour, whatever the terminal, so the page
is the same on every machine.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

WIDTH = 100
# before anything reads them: argparse, rich and the commands' own code size and colour by these
os.environ.update(COLUMNS=str(WIDTH), LINES="50", NO_COLOR="1", TERM="dumb")
os.environ.pop("FORCE_COLOR", None)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))  # generated.py beside this file
sys.path.insert(0, str(ROOT))  # this checkout's package, installed or not

from generated import between, main as run  # noqa: E402

PAGE = ROOT / "docs" / "cli.md"
START, END = "<!-- cli-reference:start -->", "<!-- cli-reference:end -->"
NOTE = ("<!-- made from crawler_dedup.cli.build_parser() by scripts/cli_reference.py --write: "
        "edit the commands' help, not this -->")


def _stable(formatter_class: type) -> type:
    """`formatter_class` at WIDTH columns, and for argparse's own formatters one way of showing an
    option with a value on every Python version (3.13 changed it): `-s, --set NAME=VALUE`."""
    own = getattr(formatter_class, "_format_action_invocation", None) is argparse.HelpFormatter._format_action_invocation

    class Stable(formatter_class):  # type: ignore[misc, valid-type]
        def __init__(self, prog: str, *args, **kwargs) -> None:
            kwargs["width"] = WIDTH
            super().__init__(prog, *args, **kwargs)

        if own:
            def _format_action_invocation(self, action: argparse.Action) -> str:
                if not action.option_strings or action.nargs == 0:
                    return super()._format_action_invocation(action)
                args = self._format_args(action, self._get_default_metavar_for_optional(action))
                return ", ".join(action.option_strings) + " " + args

    Stable.__name__ = f"Stable{formatter_class.__name__}"
    return Stable


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen: set[int] = set()
            for choice in action._choices_actions:  # the order of --help, one per command
                sub = action.choices[choice.dest]
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield choice.dest, sub


def walk(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(`crawler-dedup index stats`, its parser) for the program and every (sub)command, depth first."""
    yield name, parser
    for sub_name, sub in _subparsers(parser):
        yield from walk(sub, f"{name} {sub_name}")


def help_text(parser: argparse.ArgumentParser) -> str:
    parser.formatter_class = _stable(parser.formatter_class)
    if hasattr(parser, "color"):  # Python 3.14
        parser.color = False
    return parser.format_help().rstrip() + "\n"


def reference() -> str:
    from crawler_dedup.cli import build_parser

    parts = [NOTE, ""]
    for name, parser in walk(build_parser(), "crawler-dedup"):
        text = help_text(parser)
        if "```" in text:
            raise SystemExit(f"{name}'s help holds ``` and would end its code block")
        parts += [f"### {name}", "", "```text", text.rstrip("\n"), "```", ""]
    return "\n".join(parts)


def with_reference(page: str) -> str:
    """`page` with the text between the markers replaced by today's reference."""
    return between(page, START, END, reference(), "docs/" + PAGE.name)


def main(argv: list[str] | None = None) -> int:
    return run(argv, __doc__.splitlines()[0], PAGE, reference, with_reference, "command reference", Path(__file__).name)


if __name__ == "__main__":
    sys.exit(main())
