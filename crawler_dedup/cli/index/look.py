"""`index stats|verify|plan`: what an index holds, whether it is whole, the plans."""

from __future__ import annotations

import os
import re

from ..common import CliError, backend_settings, index_location, term
from ..out import Progress
from . import _open


def stats(args) -> int:
    import json

    from ...stores.base import FORMAT_VERSION, from_u64
    from ...tools.indexes import is_lmdb

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
                               if per_page else None,
                               "responses": round(sizes.get("fetches", (0, 0))[1] / pages, 1) if per_page else None},
            "responses": sizes.get("fetches", (0, 0))[0],
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
              f"{bpp['site_lines']} B site lines and headlines (DEDUP_SITE_BOILERPLATE), {bpp['responses']} B "
              f"validators and copies of {info['responses']} responses (DEDUP_CONDITIONAL)")
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

    from ...core.index.records import DocRecord

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


def verify(args) -> int:
    import json

    from ...core.index.integrity import verify as check
    from ...stores.base import FORMAT_VERSION

    from ...exceptions import StoreDamaged

    where = index_location(args)
    try:
        index = _open(args, readonly=True)
        try:
            report = check(index, Progress("verifying", unit="entries"))
            unfinished = _unfinished(index.store)
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
    older = index.version if index.version != FORMAT_VERSION else None
    if args.json:
        print(json.dumps({"dir": location, "whole": report.ok, "pages": report.pages, "entries": report.entries,
                          "problems": report.count, "listed": report.problems, "format": index.version,
                          "unfinished_commits": unfinished}, indent=1))
        return 0 if report.ok else 1
    if older is not None:
        print(f"{location}: format {older}, read as it is (the next crawl, or `crawler-dedup index stats --dir "
              f"{location}`, migrates it to format {FORMAT_VERSION} in place)")
    if not report.ok:
        print(f"{location}: {report.count} problem{'' if report.count == 1 else 's'} in {report.pages} kept pages "
              f"and {report.entries} entries:")
        for line in report.problems:
            print(f"  {term(line)}")
        if report.count > len(report.problems):
            print(f"  ... and {report.count - len(report.problems)} more")
        if unfinished:
            print(f"{unfinished} commit{'' if unfinished == 1 else 's'} of crawlers killed mid-commit not applied yet: "
                  "the next crawler to write to the index applies them (some of these problems may be theirs)")
        if os.path.isfile(os.path.join(where, "data.mdb")):
            print(f"to repair: `crawler-dedup index rebuild --dir {where}` files the kept pages into a new index "
                  "with every table rebuilt")
        else:  # (Redis: no rebuild in place; other crawlers may use the index)
            print("to repair: file the crawled pages (WARC files, or items with their text) into a new index with "
                  "`crawler-dedup index add`, under a new DEDUP_REDIS_PREFIX, and crawl on with that prefix")
    elif not args.quiet:
        print(f"{location}: whole ({report.pages} kept pages, {report.entries} entries checked)")
    return 0 if report.ok else 1


def _unfinished(store) -> int:
    """Commits a Redis Cluster index holds in write journals of gone crawlers (stores/redis/journal.py)."""
    try:
        return int(store.unfinished_commits()) if hasattr(store, "unfinished_commits") else 0
    except Exception:  # noqa: BLE001 - a note beside the verdict, never the verdict
        return 0


def plan(args) -> int:
    import json

    from ...core.index.tables import _CANDIDATE_COST, _DISK_COST, plan_rows
    from ..out import lines, table

    rows = list(plan_rows(args.k))
    if args.json:
        print(json.dumps({"k": args.k, "rows": rows}, indent=1))
        return 0
    lines(f"Manku plans for k={args.k} (f=64), computed by crawler_dedup.core.index.tables.choose_plan: cost = 1 per table "
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
