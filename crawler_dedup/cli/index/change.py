"""`index add|expire|compact|remove|rebuild`: the commands that write into an index. Each verifies
an LMDB index first and refuses a damaged one (exit 2), so none writes into damage or copies it
(compact), and none reports success on an index that cannot be read."""

from __future__ import annotations

import os

from ...droplog import dumps
from ..common import CliError, backend_settings, confirm, index_location, term
from ..out import Progress
from . import _open


def add(args) -> int:

    from ...tools import seed
    from ...tools.sources import SourceError
    from ..common import make_config
    from ..scan import fields_of, jobs_of, run_with_progress

    from ...tools import files

    try:
        args.inputs = files.expand(list(args.inputs))
    except (SourceError, OSError) as exc:
        raise CliError(str(exc)) from None
    settings = backend_settings(args)
    if not getattr(args, "redis", None) and str(settings.get("DEDUP_BACKEND", "lmdb")) == "lmdb":
        settings["DEDUP_DIR"] = index_location(args, settings)
    config = make_config(settings)
    if config.backend == "lmdb" and os.path.isfile(os.path.join(str(config.dir), "data.mdb")):
        index = _open(args, readonly=True)
        try:
            refuse_damaged(index, "add", str(config.dir))
        finally:
            index.store.close()
    try:
        counts = run_with_progress(lambda progress: seed.add(list(args.inputs), config, fields_of(args, config),
                                                             jobs_of(args.jobs), progress))
    except SourceError as exc:
        raise CliError(str(exc)) from None
    if args.json:
        print(dumps(counts, indent=1))
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


def expire(args) -> int:
    import time

    from ...tools.indexes import is_lmdb

    if args.window <= 0:  # DEDUP_WINDOW=0 means "forever": here it would remove every page
        raise CliError(f"--window takes a number of seconds >= 1, not {args.window} "
                       f"(pages kept more than that long ago are removed)")
    if args.batch < 1:  # 0 would loop for ever: no batch is ever shorter than it
        raise CliError(f"--batch takes 1 or more, not {args.batch}")
    index = _open(args)
    if not index.ordered:
        where = index.store.location
        index.store.close()
        raise CliError(f"{where} keeps no time index (the Redis Cluster's spread layout): its pages cannot be listed "
                       "by age; with DEDUP_WINDOW every key of a page expires by itself at twice the window", 2)
    cutoff = time.time() - args.window
    removed, progress = 0, Progress("expiring")
    try:
        refuse_damaged(index, "expire", index.store.location)
        old = index.read(lambda t: t.time_oldest(int(cutoff), 10**9))
        total, pages = len(old), index.read(lambda t: t.doc_count())
        where = index.store.location
        if args.dry_run or not total:
            info = {"dir": where, "window": args.window, "would_remove": total, "pages": pages, "removed": 0}
            if args.json:
                print(dumps(info, indent=1))
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
        print(dumps({"dir": where, "window": args.window, "would_remove": total, "pages": left,
                          "removed": removed}, indent=1))
        return 0
    hint = "" if not is_lmdb(backend_settings(args)) else " (run `crawler-dedup index compact` to give the space back to the file system)"
    print(f"removed {removed} pages kept more than {args.window} s ago; {left} pages left{hint}")
    return 0


def compact(args) -> int:
    from ...stores.lmdb import LmdbStore

    where = index_location(args)
    index = _open(args, readonly=True)  # an index, and a whole one: compacting copies damage
    try:
        refuse_damaged(index, "compact", where)
    finally:
        index.store.close()
    size = os.path.getsize(os.path.join(where, "data.mdb"))
    if not confirm(args, f"rewrite {os.path.join(where, 'data.mdb')} ({size / 2**20:.1f} MiB) without its free "
                   "pages (no crawl may have it open)"):
        print("nothing changed")
        return 1
    before, after = LmdbStore(where).compact()
    print(f"{where}: data.mdb {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    return 0


def rebuild(args) -> int:
    from ...core.index.integrity import rebuild as rebuild_index
    from ...stores.lmdb import LmdbStore

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
    if got.stale:
        how += (f" ({got.stale} found there were older versions of pages kept under a later id, replaced by an "
                "update: not filed)")
    print(f"{where}: {got.pages} kept pages filed into a new index; {got.unreadable} unreadable records{how}"
          + f"; the old file is {got.damaged_copy} (delete it when the new index serves)")
    return 0


def remove(args) -> int:
    import datetime

    index = _open(args)
    try:
        refuse_damaged(index, "remove", index.store.location)
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

    if args.json:
        print(dumps(info, indent=1))
    elif verb == "removed":
        print(term(f"removed the kept page at {info['url']} from {info['dir']}: its copies will be kept from now on"))
    else:
        print(term(f"would remove the kept page at {info['url']} (kept {info['kept']}, fingerprint "
                   f"{info['fingerprint']}) from {info['dir']} (nothing changed: --dry-run)"))


def refuse_damaged(index, command: str, where: str) -> None:
    """Verify an LMDB index (core/index/integrity.py, what `index verify` does); CliError exit 2 when it is
    not whole, naming the command that lists the problems and the one that repairs them."""
    from ...core.index.integrity import verify
    from ...exceptions import StoreDamaged
    from ...stores.lmdb import LmdbStore

    if not isinstance(index.store, LmdbStore):
        return  # (Redis keeps its keys whole; a scan of a big shared index is no pre-check)
    progress = Progress("checking the index", unit="entries")
    try:
        report = verify(index, progress)
    except StoreDamaged as exc:
        raise CliError(_refusal(command, where, str(exc).split("; `crawler-dedup index verify", 1)[0]), 2) from None
    finally:
        progress.close()
    if not report.ok:
        first = report.problems[0] if report.problems else "see `index verify`"
        raise CliError(_refusal(command, where, f"{report.count} problem{'' if report.count == 1 else 's'}, "
                                                f"the first: {first}"), 2)


def _refusal(command: str, where: str, what: str) -> str:
    return (f"{where} is damaged ({what}); `index {command}` would write into the damage, so nothing was "
            f"changed. `crawler-dedup index verify --dir {where}` lists what is wrong, `crawler-dedup index "
            f"rebuild --dir {where}` files the readable kept pages into a new index")
