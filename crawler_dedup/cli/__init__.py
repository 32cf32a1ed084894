"""`crawler-dedup`: the demo, a check of a project's set-up, measuring detection quality, looking at
an index and at what was dropped.

Inside a Scrapy project the commands read its settings.py (DEDUP_DIR, DEDUP_DROPLOG, thresholds);
-s DEDUP_NAME=VALUE goes over them. The index is --dir DIR or --redis URL, the drop log --log FILE."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ..exceptions import DedupError, ToolError
from .common import _PROJECT, parse_settings, take_legacy

# one module per command, in the order of `crawler-dedup --help`; each has add_parser(subparsers)
# and run(args) -> int
COMMANDS = ("demo", "doctor", "eval", "scan", "inspect", "show", "compare", "report", "restore", "index")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crawler-dedup", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f".{name}", __name__)
        module.add_parser(sub).set_defaults(run=module.run)
    return parser


def _version() -> str:
    from .. import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help(sys.stderr)
        return 2
    _PROJECT.clear()  # a new command reads settings.py afresh
    try:
        take_legacy(args)
        if hasattr(args, "set") and args.command != "doctor":  # (doctor reports them as a finding)
            parse_settings(args.set)
        return args.run(args)
    except ToolError as exc:  # CliError, ShowError, ScanError, ...: said to the user, with its exit code
        print(f"crawler-dedup {args.command}: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except DedupError as exc:  # a setting or an index the command found unusable: a message, no traceback
        print(f"crawler-dedup {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `crawler-dedup eval ... | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print(f"\ncrawler-dedup {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - the CLI prints one line, never a traceback
        if os.environ.get("CRAWLER_DEDUP_TRACEBACK"):
            raise
        where = _index_hint(args)
        print(f"crawler-dedup {args.command}: unexpected {type(exc).__name__}: {str(exc)[:300]}{where} "
              f"(CRAWLER_DEDUP_TRACEBACK=1 shows where)", file=sys.stderr)
        return 1


def _index_hint(args) -> str:
    """For an unexpected error while an index was open: it may be damaged, and how to check."""
    path = getattr(args, "dir", None)
    if not path or not os.path.isfile(os.path.join(path, "data.mdb")):
        return ""
    return (f"; if the index is damaged, `crawler-dedup index verify --dir {path}` checks it and "
            f"`crawler-dedup index rebuild --dir {path}` files its readable pages into a new one")


if __name__ == "__main__":
    sys.exit(main())
