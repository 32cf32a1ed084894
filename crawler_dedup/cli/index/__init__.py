"""`crawler-dedup index stats|expire|compact|remove|plan|verify|rebuild|add`: looking at (look.py)
and maintaining (change.py) an index, LMDB or Redis."""

from __future__ import annotations

from ...config import MAX_K
from ..common import (DIR_HELP, CliError, add_index, add_json, add_legacy, add_settings, add_yes, backend_settings,
                      index_location, open_index)


def add_parser(sub):
    idx = sub.add_parser("index", help="look at and maintain an index (LMDB, or Redis with --redis)",
                         description="Look at and maintain an index. Each subcommand takes the index as --dir DIR "
                         "(default: the Scrapy project's DEDUP_DIR, else .scrapy/dedup) or --redis URL.")
    isub = idx.add_subparsers(dest="index_command", metavar="SUBCOMMAND", required=True)
    st = isub.add_parser("stats", help="pages, plan, settings fixed by the index, disk per page",
                         description="Pages, plan, the settings fixed by the index, and disk per page.")
    add_index(st)
    add_json(st)
    add_legacy(st, "dir")
    ex = isub.add_parser("expire", help="remove pages kept more than --window seconds ago (asks first)",
                         description="Remove pages kept more than --window seconds ago, in batches. A crawl "
                         "with DEDUP_WINDOW does this as it goes; this is for an index no crawl writes to now. "
                         "Says how many pages would go and asks first (--yes: do not ask; --dry-run: only say).")
    ex.add_argument("--window", type=int, required=True, metavar="SECONDS",
                    help="pages kept more than SECONDS ago go (1 or more)")
    ex.add_argument("--batch", type=int, default=1000, metavar="N", help="pages per transaction (default 1000)")
    add_index(ex)
    add_yes(ex, dry_run="say how many pages would go, and the oldest of them; change nothing")
    add_json(ex)
    add_legacy(ex, "dir")
    co = isub.add_parser("compact", help="rewrite the index file without its free pages (asks first; no crawl may use it)",
                         description="Rewrite data.mdb without its free pages. LMDB reuses freed pages but "
                         "never shrinks the file; run this when no crawl has the index open (one that has it "
                         "open is named and nothing is changed).")
    co.add_argument("--dir", metavar="DIR", help=DIR_HELP)
    add_yes(co)
    add_settings(co)
    add_legacy(co, "dir")
    rm = isub.add_parser("remove", help="take the kept page at URL out of the index (asks first; no wrong match recurs)",
                         description="Remove the kept page at URL (or at a URL of the same canonical form) from "
                         "the index, so its copies are kept from now on; the next crawl of URL keeps it as new. "
                         "Shows the page and asks first (--yes: do not ask; --dry-run: only show).")
    rm.add_argument("url", metavar="URL", help="the kept page's URL (a drop-log line's duplicate_of)")
    add_index(rm)
    add_yes(rm, dry_run="show the kept page that would go; change nothing")
    add_json(rm)
    ve = isub.add_parser("verify", help="check that every entry of the index is where its kept pages say",
                         description="Check both ways that each kept page's entries are in the index (URL, time, "
                         "fingerprint, permuted tables, response digest) and that each entry (content digests too) points "
                         "at a kept page, and that new doc ids come after the kept ones (the sketch postings are "
                         "capped lists and not checked). Exit status 0 when whole, 1 when not (or when the file "
                         "cannot be read), 2 when there is no index. Reads only: a crawl may go on meanwhile.")
    add_index(ve)
    add_json(ve)
    ve.add_argument("--quiet", action="store_true", help="print nothing when the index is whole")
    add_legacy(ve, "dir")
    rb = isub.add_parser("rebuild", help="file the kept pages that can be read into a new index (asks first; no crawl may use it)",
                         description="Read every kept page that can still be read from DIR/data.mdb, past "
                         "damaged parts, file them into a new index with every table rebuilt, and put it in place; "
                         "the old file stays beside it as data.mdb.damaged-TIME (data.mdb.old-TIME for a whole file of an older format). Learned template lines "
                         "(DEDUP_BOILERPLATE) start again. No crawl may have the index open: a process that has "
                         "it open is named and nothing is changed.")
    rb.add_argument("--dir", metavar="DIR", help=DIR_HELP + "; work space is made inside it")
    add_yes(rb)
    add_settings(rb)
    add_legacy(rb, "dir")
    ad = isub.add_parser("add", help="file an existing corpus (JSON lines, WARC/ARC) into an index before a crawl",
                         description="File the pages of JSON-lines feed exports and WARC/ARC files into an index, in "
                         "input order, as a crawl would meet them, so a crawl over that index drops what is already "
                         "stored (its unchanged pages and their copies). A copy of a page filed before is not filed "
                         "again; a URL already in the index is a revisit. Running it again over the same inputs files "
                         "nothing twice. The index is made when missing.")
    from ..scan import add_inputs

    add_inputs(ad, time_help="fetch time, ISO 8601 or seconds (filed as the page's time)", score=False)
    add_index(ad)
    pl = isub.add_parser("plan", help="the permuted-table plan chosen for 10^5 .. 10^9 pages",
                         description="The permuted-table plan chosen for 10^5 .. 10^9 pages (computed).")
    pl.add_argument("--k", type=int, default=3, choices=range(0, MAX_K + 1), metavar="BITS", help="DEDUP_K (default 3)")
    add_json(pl)
    return idx


def _open(args, readonly: bool = False):
    """The index, or a CliError that says where it looked and how to point elsewhere."""
    settings = backend_settings(args)
    where = index_location(args, settings)
    try:
        return open_index(where, readonly=readonly, settings=settings)
    except CliError as exc:
        if args.dir is None and exc.message.startswith("no LMDB index"):
            exc.message += (" (the project's DEDUP_DIR, or Scrapy's default when outside a project): "
                            "give --dir DIR or --redis URL")
        raise


def run(args) -> int:
    from . import change, look

    return {"stats": look.stats, "expire": change.expire, "compact": change.compact, "remove": change.remove,
            "plan": look.plan, "verify": look.verify, "rebuild": change.rebuild, "add": change.add}[args.index_command](args)
