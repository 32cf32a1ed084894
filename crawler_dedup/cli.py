"""`crawler-dedup`: the demo (more tools around a crawl's index and drop log will follow)."""

from __future__ import annotations

import argparse
import sys

from .config import MAX_K


def _demo(args) -> int:
    from .demo.run import DemoError, print_result, run_demo

    settings = {"DEDUP_K": args.k} if args.k is not None else None
    try:
        result = run_demo(args.out, settings)
    except DemoError as exc:
        print(f"crawler-dedup demo: {exc}", file=sys.stderr)
        return exc.exit_code
    print_result(result)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="crawler-dedup", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo", help="crawl a bundled demo site on 127.0.0.1 with dedup on (offline)",
        description="Serve a demo site of real pages and their near-duplicates on 127.0.0.1, crawl it "
        "with dedup on, and print what was kept and dropped. Needs no network.",
    )
    demo.add_argument("--out", metavar="DIR", help="where the site, index and drop log go (default: a new "
                      "temp dir); an existing DIR must be empty or an earlier demo's, whose results are replaced")
    demo.add_argument("--k", type=int, metavar="BITS", choices=range(0, MAX_K + 1), help=f"DEDUP_K for this run (0-{MAX_K})")
    demo.set_defaults(func=_demo)
    return parser


def _version() -> str:
    from . import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
