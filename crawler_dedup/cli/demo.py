"""`crawler-dedup demo`: crawl a bundled demo site on 127.0.0.1 with dedup on."""

from __future__ import annotations

from ..config import MAX_K
from .common import CliError


def add_parser(sub):
    p = sub.add_parser(
        "demo", help="crawl a bundled demo site on 127.0.0.1 with dedup on (offline)",
        description="Serve a demo site of real pages and their near-duplicates on 127.0.0.1, crawl it "
        "with dedup on, and print what was kept and dropped. Needs no network.",
    )
    p.add_argument("--out", metavar="DIR", help="where the site, index and drop log go (default: a new "
                   "temp dir); an existing DIR must be empty or an earlier demo's, whose results are replaced")
    p.add_argument("--k", type=int, metavar="BITS", choices=range(0, MAX_K + 1), help=f"DEDUP_K for this run (0-{MAX_K})")
    return p


def run(args) -> int:
    from ..demo.run import DemoError, print_result, run_demo

    settings = {"DEDUP_K": args.k} if args.k is not None else None
    try:
        result = run_demo(args.out, settings)
    except DemoError as exc:
        raise CliError(str(exc), exc.exit_code) from None
    print_result(result)
    return 0
