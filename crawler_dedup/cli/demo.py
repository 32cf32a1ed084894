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
    from ..demo.run import DemoError, run_demo

    settings = {"DEDUP_K": args.k} if args.k is not None else None
    try:
        result = run_demo(args.out, settings)
    except DemoError as exc:
        raise CliError(str(exc), exc.exit_code) from None
    _print(result)
    return 0


def _print(r) -> None:
    from ..demo.run import summary_lines
    from .out import lines, table

    rows = []
    for p, got, of in r.rows():
        wrong = (got == "dropped") != (p.expect == "drop")
        rows.append([p.path, p.kind, got, of or "", f"<- expected {p.expect}" if wrong else ""])
    table(["page", "kind", "result", "duplicate of", ""], rows, styles=[None, "dim", None, "dim", "bold red"])
    lines("\n" + "\n".join(summary_lines(r)))
    log = r.droplog
    near = next((rec["url"] for rec in r.records if rec.get("reason") == "near"), "URL")
    lines(f"\nnext: crawler-dedup inspect --log {log}\n"
          f"      crawler-dedup show {near} --log {log}\n"
          f"      crawler-dedup report --log {log} -o report.html   (the index beside the log is found)")
