"""`crawler-dedup inspect LOG`: a drop log summarized in one streaming pass."""

from __future__ import annotations

from .common import CliError, Progress, add_filters, filters


def add_parser(sub):
    p = sub.add_parser(
        "inspect", help="summarize a drop log: counts, top kept pages, histograms, latest drops",
        description="Summarize a drop log in one streaming pass: drops by reason, action, stage and domain, "
        "the kept pages with the most duplicates, similarity and distance histograms, and the latest drops. "
        "Malformed lines are counted and skipped.")
    p.add_argument("log", metavar="LOG", help="the JSONL drop log (DEDUP_DROPLOG)")
    add_filters(p)
    p.add_argument("--limit", type=int, default=20, metavar="N", help="latest matching drops listed (default 20)")
    p.add_argument("--top", type=int, default=10, metavar="N", help="rows of the domain and kept-page tables (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return p


def run(args) -> int:
    import json
    import shutil

    from ..tools.inspect import LogError, summarize
    from ..tools.summary_text import format_summary

    selected = filters(args)
    if args.limit < 0 or args.top < 1:
        raise CliError("--limit takes 0 or more, --top 1 or more")
    try:
        summary = summarize(args.log, selected, limit=args.limit, top=args.top,
                            progress=Progress("reading", unit="MiB"))
    except LogError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps(summary.to_json(args.log, selected), indent=1))
    else:
        print(format_summary(summary, args.log, selected, width=shutil.get_terminal_size((120, 24)).columns))
    return 0
