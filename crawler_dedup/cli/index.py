"""`crawler-dedup index stats|expire|compact|remove|plan|verify|rebuild`: looking at and maintaining an LMDB index."""

from __future__ import annotations

import os
import re

from ..config import MAX_K
from .common import (
    DIR_HELP,
    CliError,
    add_index,
    add_json,
    add_legacy,
    add_settings,
    add_yes,
    backend_settings,
    confirm,
    index_location,
    open_index,
    term,
)
from .out import Progress

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
                         "the old file stays beside it as data.mdb.damaged-TIME. Learned template lines "
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
    from .scan import add_inputs

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
    return {"stats": stats, "expire": expire, "compact": compact, "remove": remove, "plan": plan,
            "verify": verify, "rebuild": rebuild, "add": add}[args.index_command](args)


def add(args) -> int:
    import json

    from ..tools import seed
    from ..tools.sources import SourceError
    from .common import default_dir, make_config
    from .scan import fields_of, jobs_of, run_with_progress

    settings = backend_settings(args)
    if not getattr(args, "redis", None) and str(settings.get("DEDUP_BACKEND", "lmdb")) == "lmdb":
        settings["DEDUP_DIR"] = args.dir or settings.get("DEDUP_DIR") or default_dir()
    config = make_config(settings)
    try:
        counts = run_with_progress(lambda progress: seed.add(list(args.inputs), config, fields_of(args, config),
                                                             jobs_of(args.jobs), progress))
    except SourceError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(json.dumps(counts, indent=1, ensure_ascii=False))
        return 0
    pages = counts["pages"]
    print(f"{term(str(counts['index']))}: {pages} pages read from {len(args.inputs)} input"
          f"{'' if len(args.inputs) == 1 else 's'} in {counts['seconds']:.1f} s: {counts['added']} filed, "
          f"{counts['unchanged']} already there, {counts['updated']} updated, {counts['copies']} copies of a page "
          f"filed before (not filed)")
    if counts["unchecked"]:
        print("  not filed, unchecked: " + ", ".join(f"{k} {v}" for k, v in sorted(counts["unchecked"].items())))
    if counts["passed"]:
        print("  other records: " + ", ".join(f"{k} {v}" for k, v in sorted(counts["passed"].items())))
    if counts["by_bytes"]:
        print(f"  {counts['by_bytes']} pages had the bytes of a filed page (decided without extraction)")
    for path, why in counts["damaged"].items():
        print(f"  {term(path)}: damaged, the rest of the file was skipped: {term(why)}")
    return 0


def stats(args) -> int:
    import json

    from ..stores.base import FORMAT_VERSION, from_u64
    from ..tools.indexes import is_lmdb

    index = _open(args, readonly=True)
    plan = index.plan
    try:
        meta = index.read(lambda t: {n: t.meta_get(n) for n in ("format", "params", "runs", "next_id", "df", "lsi")})
        if hasattr(index.store, "table_stats"):  # LMDB: entries and bytes a table
            sizes, disk = index.store.table_stats(), index.store.disk_bytes()
        else:  # another backend: entries only
            sizes = index.read(lambda t: {"docs": (t.doc_count(), 0), "urls": (t.url_count(), 0), "mins": (0, 0)})
            disk = None
        text = index.read(_text_cost)
        pages = sizes["docs"][0]
        table_bytes = sum(b for n, (_, b) in sizes.items() if re.fullmatch(r"t\d{3}", n))  # (not times, tpl)
        per_page = bool(pages and disk)
        info = {
            "dir": index.store.location if not is_lmdb(backend_settings(args)) else os.path.abspath(index_location(args)), "format": int(meta["format"]), "pages": pages,
            "urls": sizes.get("urls", (0, 0))[0],
            "runs": from_u64(meta["runs"]) if meta["runs"] else 0,
            "plan": {"k": plan.k, "r": plan.r, "tables": len(plan.tables),
                     "prefix_bits": sorted({plan.prefix_bits(t) for t in range(len(plan.tables))}),
                     "expected_entries_per_query": round(plan.expected_entries(max(pages, 1)), 3)},
            "params": json.loads(meta["params"]) if meta["params"] else {},
            "disk_bytes": disk,
            "bytes_per_page": {"all": round((disk or 0) / pages) if per_page else None,
                               "tables": round(table_bytes / pages, 1) if per_page else None,
                               "records": round(sizes["docs"][1] / pages) if per_page else None,
                               "sketch_postings": round(sizes["mins"][1] / pages, 1) if per_page else None,
                               "site_lines": round(sum(sizes.get(n, (0, 0))[1] for n in ("site", "titles")) / pages, 1)
                               if per_page else None},
            "document_frequencies": meta["df"] is not None, "lsi_model": meta["lsi"] is not None,
            "stored_text": text,
        }
    finally:
        index.store.close()
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    bpp = info["bytes_per_page"]
    migrate = f" (migrated to {FORMAT_VERSION} when a crawl or `index remove` next opens it)" if info["format"] < FORMAT_VERSION else ""
    print(f"index {info['dir']}: format {info['format']}{migrate}, {pages} pages kept over {info['runs']} run{'' if info['runs'] == 1 else 's'}, "
          f"{info['urls']} URLs")
    p = info["plan"]
    print(f"plan: k={p['k']}, r={p['r']} blocks, {p['tables']} tables keyed by {'/'.join(map(str, p['prefix_bits']))} "
          f"bits; expected {p['expected_entries_per_query']} stored fingerprints read per lookup at this size")
    print("settings fixed by the index: " + ", ".join(f"DEDUP_{k.upper()}={v}" for k, v in info["params"].items()))
    if disk is None:
        print("disk: not measured for this backend (byte figures are LMDB's)")
    elif pages:
        print(f"disk: {disk / 2**20:.1f} MiB in data.mdb and lock.mdb; per page: {bpp['all']} B in all, "
              f"{bpp['records']} B record, {bpp['tables']} B tables, {bpp['sketch_postings']} B postings, "
              f"{bpp['site_lines']} B site lines and headlines (DEDUP_SITE_BOILERPLATE)")
    else:
        print(f"disk: {disk / 2**20:.1f} MiB in data.mdb and lock.mdb; no pages")
    if text["pages"]:
        sampled = f" (a sample of the first {text['pages']} records)" if text["pages"] < pages else ""
        if text["with_text"]:
            print(f"stored text (DEDUP_STORE_TEXT): {text['with_text']} of {text['pages']} pages, "
                  f"{text['bytes_per_page']} B a page compressed from {text['raw_bytes_per_page']} B "
                  f"({text['share_of_record']:.0%} of a record){sampled}")
        else:
            print(f"stored text (DEDUP_STORE_TEXT): none{sampled}")
    return 0


def _text_cost(txn, sample: int = 20_000) -> dict:
    """Bytes of stored text (DEDUP_STORE_TEXT) a page, from the first `sample` records."""
    import zlib

    from ..core.index import DocRecord

    pages = with_text = stored = raw = record = 0
    for _, value in txn.doc_scan(0, sample):
        doc = DocRecord.decode(value)
        pages += 1
        record += len(value)
        data = doc.extras.get(DocRecord.TEXT)
        if data is not None:
            with_text += 1
            stored += len(data)
            try:
                raw += len(zlib.decompress(data))
            except zlib.error:
                pass
        if pages >= sample:
            break
    return {"pages": pages, "with_text": with_text,
            "bytes_per_page": round(stored / with_text) if with_text else 0,
            "raw_bytes_per_page": round(raw / with_text) if with_text else 0,
            "share_of_record": round(stored / record, 3) if record else 0.0}


def expire(args) -> int:
    import json
    import time

    from ..tools.indexes import is_lmdb

    if args.window <= 0:  # DEDUP_WINDOW=0 means "forever": here it would remove every page
        raise CliError(f"--window takes a number of seconds >= 1, not {args.window} "
                       f"(pages kept more than that long ago are removed)")
    if args.batch < 1:  # 0 would loop for ever: no batch is ever shorter than it
        raise CliError(f"--batch takes 1 or more, not {args.batch}")
    index = _open(args)
    cutoff = time.time() - args.window
    removed, progress = 0, Progress("expiring")
    try:
        old = index.read(lambda t: t.time_oldest(int(cutoff), 10**9))
        total, pages = len(old), index.read(lambda t: t.doc_count())
        where = index.store.location
        if args.dry_run or not total:
            info = {"dir": where, "window": args.window, "would_remove": total, "pages": pages, "removed": 0}
            if args.json:
                print(json.dumps(info, indent=1))
            else:
                print(f"{where}: {total} of {pages} pages were kept more than {args.window} s ago"
                      + (" (nothing removed: --dry-run)" if args.dry_run and total else "; nothing to remove" if not total else ""))
            return 0
        if not confirm(args, f"remove {total} of {pages} pages kept more than {args.window} s ago from {where}"):
            print("nothing changed")
            return 1
        while True:
            n = index.write(lambda txn: index.expire(txn, cutoff, args.batch))
            removed += n
            progress(removed, max(total, 1))
            if n < args.batch:
                break
        left = index.read(lambda t: t.doc_count())
    finally:
        progress.close()
        index.store.close()
    if args.json:
        print(json.dumps({"dir": where, "window": args.window, "would_remove": total, "pages": left,
                          "removed": removed}, indent=1))
        return 0
    hint = "" if not is_lmdb(backend_settings(args)) else " (run `crawler-dedup index compact` to give the space back to the file system)"
    print(f"removed {removed} pages kept more than {args.window} s ago; {left} pages left{hint}")
    return 0


def compact(args) -> int:
    from ..stores.lmdb import LmdbStore

    where = index_location(args)
    _open(args, readonly=True).store.close()  # an index, and one that can be read
    size = os.path.getsize(os.path.join(where, "data.mdb"))
    if not confirm(args, f"rewrite {os.path.join(where, 'data.mdb')} ({size / 2**20:.1f} MiB) without its free "
                   "pages (no crawl may have it open)"):
        print("nothing changed")
        return 1
    before, after = LmdbStore(where).compact()
    print(f"{where}: data.mdb {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    return 0


def verify(args) -> int:
    import json

    from ..core.integrity import verify as check

    from ..exceptions import StoreDamaged

    where = index_location(args)
    try:
        index = _open(args, readonly=True)
        try:
            report = check(index, Progress("verifying", unit="entries"))
        finally:
            index.store.close()
    except (CliError, StoreDamaged) as exc:
        message = exc.message if isinstance(exc, CliError) else str(exc)
        if not isinstance(exc, StoreDamaged) and "damaged" not in message:
            raise  # no index there, a bad setting: not a verdict on an index
        if args.json:
            print(json.dumps({"dir": where, "whole": False, "error": message}, indent=1))
        else:
            print(f"{where}: not whole, it cannot be read: {message.split('; `crawler-dedup index verify', 1)[0]}")
            print(f"to repair: `crawler-dedup index rebuild --dir {where}` files the kept pages it can read into a new index")
        return 1
    location = index.store.location
    if args.json:
        print(json.dumps({"dir": location, "whole": report.ok, "pages": report.pages, "entries": report.entries,
                          "problems": report.count, "listed": report.problems}, indent=1))
    elif not report.ok:
        print(f"{location}: {report.count} problem{'' if report.count == 1 else 's'} in {report.pages} kept pages "
              f"and {report.entries} entries:")
        for line in report.problems:
            print(f"  {term(line)}")
        if report.count > len(report.problems):
            print(f"  ... and {report.count - len(report.problems)} more")
        hint = f"`crawler-dedup index rebuild --dir {where}`" if os.path.isfile(os.path.join(where, "data.mdb")) else "a new index"
        print(f"to repair: {hint} files the kept pages into a new index with every table rebuilt")
    elif not args.quiet:
        print(f"{location}: whole ({report.pages} kept pages, {report.entries} entries checked)")
    return 0 if report.ok else 1


def rebuild(args) -> int:
    import sys

    from ..core.integrity import rebuild as rebuild_index
    from ..stores.lmdb import LmdbStore

    where = index_location(args)
    data = os.path.join(where, "data.mdb")
    if os.path.isdir(data):
        raise CliError(f"{data} is a folder, not an index file: nothing to rebuild; give another DEDUP_DIR")
    if not os.path.isfile(data):
        raise CliError(f"no LMDB index in {where} (no data.mdb)" + ("" if args.dir else ": give --dir DIR"))
    if not confirm(args, f"rebuild {data} from its kept pages (the old file is kept beside it; no crawl may be using it)"):
        print("nothing changed")
        return 1
    got = rebuild_index(LmdbStore(where), progress=Progress("rebuilding", unit="ids"))
    lost = sum(hi - lo + 1 for lo, hi in got.lost_ranges)
    if not got.walked:
        how = "; its tables could not be walked, so they were all found on the file's pages"
    elif got.lost_ranges:
        how = f"; damaged parts of the file hid up to {lost} doc ids, of which {got.scavenged} were found on its pages"
    else:
        how = ""
    print(f"{where}: {got.pages} kept pages filed into a new index; {got.unreadable} unreadable records{how}"
          + f"; the old file is {got.damaged_copy} (delete it when the new index serves)")
    return 0


def remove(args) -> int:
    import datetime
    import json

    index = _open(args)
    try:
        doc = index.read(lambda txn: index.by_url(txn, args.url))  # a key lookup in the URL table
        where = index.store.location
        if doc is None:
            raise CliError(f"no kept page at {term(args.url)} in {where}", 1)
        kept = datetime.datetime.fromtimestamp(doc.time, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
        info = {"dir": where, "url": doc.url, "doc_id": doc.doc_id, "fingerprint": f"{doc.fingerprint:016x}",
                "kept": kept, "removed": False}
        if args.dry_run:
            _say_remove(args, info, "would remove")
            return 0
        if not confirm(args, term(f"remove the kept page {doc.url} (kept {kept}) from {where}")):
            print("nothing changed")
            return 1

        def remove_doc(txn):  # looked up again: the page may have changed since it was shown
            again = index.by_url(txn, args.url)
            return 0 if again is None else int(index.remove(txn, again.doc_id))

        info["removed"] = bool(index.write(remove_doc))
    finally:
        index.store.close()
    if not info["removed"]:
        raise CliError(f"no kept page at {term(args.url)} in {where} (removed meanwhile)", 1)
    _say_remove(args, info, "removed")
    return 0


def _say_remove(args, info: dict, verb: str) -> None:
    import json

    if args.json:
        print(json.dumps(info, indent=1))
    elif verb == "removed":
        print(term(f"removed the kept page at {info['url']} from {info['dir']}: its copies will be kept from now on"))
    else:
        print(term(f"would remove the kept page at {info['url']} (kept {info['kept']}, fingerprint "
                   f"{info['fingerprint']}) from {info['dir']} (nothing changed: --dry-run)"))


def plan(args) -> int:
    import json

    from ..core.tables import _CANDIDATE_COST, _DISK_COST, plan_rows
    from .out import lines, table

    rows = list(plan_rows(args.k))
    if args.json:
        print(json.dumps({"k": args.k, "rows": rows}, indent=1))
        return 0
    lines(f"Manku plans for k={args.k} (f=64), computed by crawler_dedup.core.tables.choose_plan: cost = 1 per table "
          f"probed + {_CANDIDATE_COST} per stored fingerprint read + {_DISK_COST} per byte of table a page")
    out = []
    for row in rows:
        lo, hi = row["prefix_bits"]
        two_tables, two_cost = row["two_level"]
        out.append([f"{row['pages']:,}", row["r"], row["tables"], f"{lo}-{hi}" if lo != hi else lo,
                    f"{row['entries_per_query']:.2f}", f"{row['table_bytes_per_page']:.0f}", f"{row['cost']:.1f}",
                    f"{two_tables} tables, {two_cost:.1f}"])
    table([("pages", "right"), ("r", "right"), ("tables", "right"), ("prefix bits", "right"),
           ("entries read / lookup", "right"), ("table B/page", "right"), ("cost", "right"),
           ("best two-level", "right")], out)
    lines("table B/page is estimated from the LMDB bytes measured at 10^5..10^7 pages (benchmarks/speed.py)")
    return 0
