"""`crawler-dedup`: the demo, measuring detection quality, looking at an index and at what was dropped."""

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


class Progress:
    """A one-line progress bar on a terminal's stderr; silent when stderr is not a terminal."""

    def __init__(self, label: str, stream=None):
        self.label, self.stream = label, stream or sys.stderr
        self.on = self.stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.on or (done % 10 and done != total):
            return
        width = 30
        filled = width * done // max(total, 1)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


def _settings(items: list[str] | None) -> dict:
    """-s DEDUP_NAME=VALUE options as a settings dict; an unknown name is a usage error (ConfigError,
    with the crawl's "did you mean" suggestion)."""
    from dataclasses import fields

    from .config import DedupConfig, _did_you_mean
    from .exceptions import ConfigError

    known = {"DEDUP_" + f.name.upper() for f in fields(DedupConfig) if f.name != "extra"}
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"-s takes a DEDUP_ setting as NAME=VALUE, not {item!r} (see the README's settings table)")
        if name not in known:  # as a crawl says it: "... a known setting: did you mean DEDUP_THRESHOLD?"
            raise ConfigError(name, value, _did_you_mean(name, known))
        out[name] = value
    return out


class UsageError(Exception):
    pass


def _eval(args) -> int:
    from collections import Counter

    from .tools import pairs as ev
    from .config import DedupConfig
    from .exceptions import ConfigError

    try:
        settings = _settings(args.set)
        DedupConfig.from_settings(settings)
    except (ConfigError, UsageError) as exc:
        print(f"crawler-dedup eval: {exc}", file=sys.stderr)
        return 2
    try:
        pairs = ev.read_pairs(args.pairs)
    except (OSError, ValueError) as exc:
        print(f"crawler-dedup eval: {exc}", file=sys.stderr)
        return 2
    labels = [p["duplicate"] for p in pairs]
    texts = ev.pair_texts(pairs, progress=Progress("extracting"))
    decided = ev.decide_pairs(texts, settings)
    skipped = Counter(why for said, why in decided if said is None)
    p, r, f, used = ev.pr([said for said, _ in decided], labels)
    num = lambda x: "n/a" if x is None else f"{x:.3f}"  # noqa: E731
    print(f"{len(pairs)} pairs, {sum(labels)} labelled duplicate; {used} decided"
          + (f", {len(pairs) - used} skipped ({', '.join(f'{n} {w}' for w, n in skipped.items())}; "
             "a skipped pair counts as kept, as a crawl keeps such a page)" if skipped else ""))
    print(f"\nthese settings: P {num(p)}  R {num(r)}  F1 {num(f)}"
          + ("  (nothing was dropped: no precision)" if p is None else ""))
    scores_all = ev.score_pairs(pairs, DedupConfig.from_settings(settings))
    for title, wrong in (("missed duplicates (labelled duplicate, kept)", lambda said, dup: dup and not said),
                         ("false drops (labelled distinct, dropped)", lambda said, dup: said and not dup)):
        rows = [(pair, why, sc) for pair, (said, why), sc in zip(pairs, decided, scores_all)
                if wrong(bool(said), pair["duplicate"])]
        if not rows:
            continue
        print(f"\n{title}: {len(rows)}" + (" (the first 20)" if len(rows) > 20 else ""))
        for pair, why, sc in rows[:20]:
            how = why if why and not why.startswith(("kept", "dropped")) else None
            scores = (f"; resemblance {sc.resemblance:.2f}, containment {sc.containment:.2f}" if sc else "")
            print(f"  {args.pairs}:{pair['_line']}: {('skipped: ' + how) if how else why}{scores}")
    name = "DEDUP_THRESHOLD"
    print(f"\n{name} swept, the other settings as given (what a crawl would drop):")
    print(f"  {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6}")
    rows = []
    for step in range(2, 20):
        t = round(0.05 * step, 2)
        said = [d for d, _ in ev.decide_pairs(texts, {**settings, name: t})]
        rows.append((t, *ev.pr(said, labels)[:3]))
    good = [row for row in rows if row[1] is not None and row[1] >= 0.995 and row[3] is not None]
    best = max(good, key=lambda row: (row[3], row[0])) if good else None
    for row in rows:
        mark = "  <- best F1 at P >= 0.995" if row == best else ""
        print(f"  {row[0]:>9.2f} {num(row[1]):>6} {num(row[2]):>6} {num(row[3]):>6}{mark}")
    if best is None:
        print("  no threshold reaches precision 0.995 on these pairs")
    scored = [s for s in scores_all if s is not None]
    for measure in ("resemblance", "containment", "qgram", "swlr"):
        rows = ev.sweep(scored, measure)
        print(f"\n{measure} alone (the verifier's score, no guards):")
        print("  " + "  ".join(f"{t:.2f}: P {p:.2f} R {r:.2f}" for t, p, r, _ in rows[::3]))
    return 0


def _index_stats(args) -> int:
    import json
    import os

    from .stores.base import from_u64
    from .stores.lmdb import LmdbStore
    from .tables import Plan

    if not os.path.isfile(os.path.join(args.dir, "data.mdb")):
        print(f"crawler-dedup index: no LMDB index in {args.dir}", file=sys.stderr)
        return 2
    store = LmdbStore(args.dir, map_size=1 << 20, sync=False)
    store.open()
    try:
        meta = store.read(lambda t: {n: t.meta_get(n) for n in ("format", "plan", "params", "runs", "next_id", "df", "lsi")})
        if meta["plan"] is None:
            print(f"crawler-dedup index: {args.dir} has no plan yet (never used)", file=sys.stderr)
            return 2
        plan = Plan.from_json(meta["plan"])
        store.open_tables(len(plan.tables))
        env = store.env
        sizes = {}
        with env.begin() as txn:
            for name, db in [("docs", store.docs), ("fps", store.fps), ("exact", store.exact), ("mins", store.mins),
                             ("urls", store.urls)] + [
                    (f"t{t:03d}", db) for t, db in enumerate(store.tables)]:
                st = txn.stat(db)
                sizes[name] = (st["entries"], (st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]) * st["psize"])
            text = _text_cost(txn, store.docs)
        pages = sizes["docs"][0]
        table_bytes = sum(b for n, (_, b) in sizes.items() if n.startswith("t"))
        disk = store.disk_bytes()
        info = {
            "dir": os.path.abspath(args.dir), "format": int(meta["format"]), "pages": pages, "urls": sizes["urls"][0],
            "runs": from_u64(meta["runs"]) if meta["runs"] else 0,
            "plan": {"k": plan.k, "r": plan.r, "tables": len(plan.tables),
                     "prefix_bits": sorted({plan.prefix_bits(t) for t in range(len(plan.tables))}),
                     "expected_entries_per_query": round(plan.expected_entries(max(pages, 1)), 3)},
            "params": json.loads(meta["params"]) if meta["params"] else {},
            "disk_bytes": disk,
            "bytes_per_page": {"all": round(disk / pages) if pages else None,
                               "tables": round(table_bytes / pages, 1) if pages else None,
                               "records": round(sizes["docs"][1] / pages) if pages else None,
                               "sketch_postings": round(sizes["mins"][1] / pages, 1) if pages else None},
            "document_frequencies": meta["df"] is not None, "lsi_model": meta["lsi"] is not None,
            "stored_text": text,
        }
    finally:
        store.close()
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    bpp = info["bytes_per_page"]
    from .stores.base import FORMAT_VERSION

    migrate = f" (migrated to {FORMAT_VERSION} when a crawl or `index remove` next opens it)" if info["format"] < FORMAT_VERSION else ""
    print(f"index {info['dir']}: format {info['format']}{migrate}, {pages} pages kept over {info['runs']} runs, "
          f"{info['urls']} URLs")
    p = info["plan"]
    print(f"plan: k={p['k']}, r={p['r']} blocks, {p['tables']} tables keyed by {'/'.join(map(str, p['prefix_bits']))} "
          f"bits; expected {p['expected_entries_per_query']} stored fingerprints read per lookup at this size")
    print(f"settings fixed by the index: " + ", ".join(f"DEDUP_{k.upper()}={v}" for k, v in info["params"].items()))
    if pages:
        print(f"disk: {disk / 2**20:.1f} MiB in data.mdb and lock.mdb; per page: {bpp['all']} B in all, "
              f"{bpp['records']} B record, {bpp['tables']} B tables, {bpp['sketch_postings']} B postings")
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


def _text_cost(txn, docs, sample: int = 20_000) -> dict:
    """Bytes of stored text (DEDUP_STORE_TEXT) a page, from the first `sample` records."""
    import zlib

    from .index import DocRecord

    pages = with_text = stored = raw = record = 0
    for _, value in txn.cursor(db=docs):
        doc = DocRecord.decode(bytes(value))
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


def _open_index(path: str):
    """The LMDB index at `path` with its own plan, or (None, message)."""
    import os

    from .index import NearDupIndex
    from .stores.lmdb import LmdbStore
    from .tables import Plan

    if not os.path.isfile(os.path.join(path, "data.mdb")):
        return None, f"no LMDB index in {path}"
    store = LmdbStore(path, map_size=1 << 20, sync=True)
    store.open()
    plan_json = store.read(lambda t: t.meta_get("plan"))
    store.close()
    if plan_json is None:
        return None, f"{path} has no plan yet (never used)"
    plan = Plan.from_json(plan_json)
    return NearDupIndex.open(LmdbStore(path, map_size=1 << 20, sync=True), plan.k, lambda: plan), None


def _index_expire(args) -> int:
    import time

    if args.window <= 0:  # DEDUP_WINDOW=0 means "forever": here it would remove every page
        return _fail("index", f"--window takes a number of seconds >= 1, not {args.window} "
                     f"(pages kept more than that long ago are removed)")
    if args.batch < 1:  # 0 would loop for ever: no batch is ever shorter than it
        return _fail("index", f"--batch takes 1 or more, not {args.batch}")
    index, problem = _open_index(args.dir)
    if index is None:
        print(f"crawler-dedup index: {problem}", file=sys.stderr)
        return 2
    cutoff = time.time() - args.window
    removed, progress = 0, Progress("expiring")
    try:
        total = len(index.store.read(lambda t: t.time_oldest(int(cutoff), 10**9)))
        while True:
            n = index.store.write(lambda txn: index.expire(txn, cutoff, args.batch))
            removed += n
            progress(removed, max(total, 1))
            if n < args.batch:
                break
        left = index.store.read(lambda t: t.doc_count())
    finally:
        index.store.close()
    print(f"removed {removed} pages kept more than {args.window} s ago; {left} pages left "
          f"(run `crawler-dedup index compact` to give the space back to the file system)")
    return 0


def _index_compact(args) -> int:
    import os
    import shutil
    import tempfile

    import lmdb

    if not os.path.isfile(os.path.join(args.dir, "data.mdb")):
        print(f"crawler-dedup index: no LMDB index in {args.dir}", file=sys.stderr)
        return 2
    before = os.path.getsize(os.path.join(args.dir, "data.mdb"))
    env = lmdb.open(args.dir, max_dbs=1100, readonly=False)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(os.path.abspath(args.dir)), prefix=".compact-")
    try:
        env.copy(tmp, compact=True)  # a consistent snapshot without the free pages
        env.close()
        os.replace(os.path.join(tmp, "data.mdb"), os.path.join(args.dir, "data.mdb"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    after = os.path.getsize(os.path.join(args.dir, "data.mdb"))
    print(f"{args.dir}: data.mdb {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    return 0


def _index_plan(args) -> int:
    from .tables import _CANDIDATE_COST, _DISK_COST, plan_rows

    print(f"Manku plans for k={args.k} (f=64), computed by crawler_dedup.tables.choose_plan: cost = 1 per table "
          f"probed + {_CANDIDATE_COST} per stored fingerprint read + {_DISK_COST} per byte of table a page")
    print(f"{'pages':>14} {'r':>3} {'tables':>7} {'prefix bits':>12} {'entries read / lookup':>22} "
          f"{'table B/page':>13} {'cost':>6} {'best two-level':>19}")
    for row in plan_rows(args.k):
        lo, hi = row["prefix_bits"]
        two_tables, two_cost = row["two_level"]
        print(f"{row['pages']:>14,} {row['r']:>3} {row['tables']:>7} {f'{lo}-{hi}' if lo != hi else lo:>12} "
              f"{row['entries_per_query']:>22.2f} {row['table_bytes_per_page']:>13.0f} {row['cost']:>6.1f} "
              f"{f'{two_tables} tables, {two_cost:.1f}':>19}")
    print("table B/page is estimated from the LMDB bytes measured at 10^5..10^7 pages (benchmarks/speed.py)")
    return 0


# -- looking at what was dropped (issue 5) ---------------------------------------------------

def _add_filters(p, url_help: str = "URL substring, or a glob when it holds * (repeatable: any of them)") -> None:
    g = p.add_argument_group("filters (a drop must pass all of them)")
    g.add_argument("--domain", action="append", metavar="HOST", help="the dropped URL's host or a subdomain of it (repeatable)")
    g.add_argument("--reason", action="append", choices=("exact", "near", "conceptual", "unchanged", "superseded"),
                   help="repeatable")
    g.add_argument("--since", metavar="ISO_TIME", help="drops at or after this time, e.g. 2026-11-22T04:00Z or 2026-11-22")
    g.add_argument("--url", action="append", metavar="PATTERN", help=url_help)
    g.add_argument("--min-similarity", type=float, metavar="S", help="similarity at least S (0..1)")


def _filters(args):
    from .tools.inspect import Filters, parse_time

    since = None
    if args.since:
        try:
            since = parse_time(args.since)
        except ValueError:
            raise UsageError(f"--since takes an ISO 8601 time such as 2026-11-22T04:00:00Z, not {args.since!r}") from None
    if args.min_similarity is not None and not 0 <= args.min_similarity <= 1:
        raise UsageError(f"--min-similarity takes a number from 0 to 1, not {args.min_similarity}")
    return Filters(domains=tuple(d.lower().strip(".") for d in args.domain or ()), reasons=tuple(args.reason or ()),
                   since=since, urls=tuple(args.url or ()), min_similarity=args.min_similarity)


def _same_file(a: str, b: str) -> bool:
    """Whether paths `a` and `b` name one file (symlinks and hard links too; a missing `b` by path)."""
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _term(text) -> str:
    from .tools.inspect import terminal_safe

    return terminal_safe(text)


def _index_hint(dir_: str | None) -> str:
    """'; DIR/index holds one: ...' when DIR is not an index but its `index` folder is (the demo's layout)."""
    import os

    if dir_ and not os.path.isfile(os.path.join(dir_, "data.mdb")) and \
            os.path.isfile(os.path.join(dir_, "index", "data.mdb")):
        return f"; {os.path.join(dir_, 'index')} holds one: give --dir {os.path.join(dir_, 'index')}"
    return ""


def _fail(command: str, message: str, code: int = 2) -> int:
    print(f"crawler-dedup {command}: {message}", file=sys.stderr)
    return code


def _inspect(args) -> int:
    import json
    import shutil

    from .tools.inspect import LogError, format_summary, summarize

    try:
        filters = _filters(args)
        if args.limit < 0 or args.top < 1:
            raise UsageError("--limit takes 0 or more, --top 1 or more")
        summary = summarize(args.log, filters, limit=args.limit, top=args.top, progress="reading")
    except (UsageError, LogError) as exc:
        return _fail("inspect", str(exc))
    if args.json:
        print(json.dumps(summary.to_json(args.log, filters), ensure_ascii=False, indent=1))
    else:
        print(format_summary(summary, args.log, filters, width=shutil.get_terminal_size((120, 24)).columns))
    return 0


def _default_dir() -> str:
    from scrapy.utils.project import data_path

    return data_path("dedup", createdir=False)


def _resolve_log_dir(log: str | None, dir_: str | None) -> tuple[str, str]:
    """Where a crawl put them: DEDUP_DROPLOG defaults to <DEDUP_DIR>/droplog.jsonl, DEDUP_DIR to
    <scrapy data dir>/dedup; `crawler-dedup demo --out D` writes D/droplog.jsonl and D/index."""
    import os

    if dir_ is None and log is not None:
        here = os.path.dirname(os.path.abspath(log))
        for guess in (here, os.path.join(here, "index")):
            if os.path.isfile(os.path.join(guess, "data.mdb")):
                dir_ = guess
                break
    if dir_ is None:
        dir_ = _default_dir()
    if log is None:
        log = os.path.join(dir_, "droplog.jsonl")
        if not os.path.exists(log) and os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(dir_)), "droplog.jsonl")):
            log = os.path.join(os.path.dirname(os.path.abspath(dir_)), "droplog.jsonl")  # the demo's layout
    return log, dir_


def _show(args) -> int:
    import shutil

    from .config import DedupConfig
    from .exceptions import ConfigError
    from .tools.inspect import LogError, Malformed, stream
    from .tools.show import ReadOnlyIndex, ShowError, side_by_side, unified, why, xor_line
    from .tokens import tokenize

    try:
        config = DedupConfig.from_settings(_settings(args.set))
    except (ConfigError, UsageError) as exc:
        return _fail("show", str(exc))
    log, dir_ = _resolve_log_dir(args.log, args.dir)
    width = args.width or shutil.get_terminal_size((120, 24)).columns
    if width < 40:
        return _fail("show", f"--width takes 40 or more, not {width}")
    rec, malformed, bad = None, Malformed(), []

    def rejected(number, r, why):  # a line about this URL that cannot be shown
        if isinstance(r, dict) and r.get("url") == args.url:
            bad.append((number, why))

    try:
        for r in stream(log, malformed, progress="searching", rejected=rejected):
            if r["url"] == args.url:
                rec = r  # the latest decision about this URL
    except LogError as exc:
        return _fail("show", f"{exc}{_index_hint(args.dir)} (give --log, or --dir where the crawl kept its index)")
    if rec is None and bad:
        number, why = bad[-1]
        return _fail("show", f"the drop-log line for {_term(args.url)} is malformed ({log} line {number}: {why})")
    if rec is None:
        return _fail("show", f"{_term(args.url)} is not in the drop log {log}", 1)
    kept, note = None, None
    try:
        with ReadOnlyIndex(dir_) as index:
            kept = index.kept(rec.get("duplicate_of_fingerprint"), rec.get("duplicate_of"))
            now = index.by_url(rec["duplicate_of"]) if kept is None and isinstance(rec.get("duplicate_of"), str) else []
        if kept is None and now:
            note = (f"the kept page's entry in {dir_} was updated since: a later crawl kept a changed text at "
                    f"{rec['duplicate_of']} (fingerprint {now[0].fingerprint:016x}), which is not the text this drop was compared with")
        elif kept is None:
            note = f"the kept page is no longer in the index {dir_} (expired or removed)"
    except ShowError as exc:
        note = str(exc) + _index_hint(dir_)
    dropped_text = rec.get("text") if isinstance(rec.get("text"), str) else None
    kept_text = kept.text if kept is not None else None
    if dropped_text is None and rec.get("reason") == "unchanged" and rec.get("measure") == "exact":
        dropped_text = kept_text  # the same words: the line does not repeat them
    p = lambda label, value: print(_term(f"{label:<13} {value}"))  # noqa: E731
    exact = rec.get("reason") == "exact" or rec.get("measure") == "exact"
    p("dropped", rec["url"])
    if rec.get("title"):
        p("", f"title: {rec['title']}")
    p("kept", rec.get("duplicate_of"))
    title = rec.get("duplicate_of_title") or (kept.title if kept else None)
    if title:
        p("", f"title: {title}")
    p("fingerprints", f"{rec.get('fingerprint')} dropped, {rec.get('duplicate_of_fingerprint')} kept")
    p("xor", xor_line(rec.get("fingerprint"), rec.get("duplicate_of_fingerprint")))
    p("distance", f"{rec.get('distance')} bits")
    sim = rec.get("similarity")
    p("similarity", f"{sim} ({rec.get('measure') or 'measure not logged'})")
    p("decision", f"{rec.get('action')} at the {rec.get('stage')} stage by spider {rec.get('spider')}, {rec.get('time')}")
    p("why", why(rec, config, len(tokenize(dropped_text)) if dropped_text else None))
    if exact or rec.get("reason") in ("unchanged", "superseded"):
        pass  # no threshold decides an exact match, nor a revisit's sameness
    elif args.set:
        p("", "(thresholds as given by -s; the rest are defaults)")
    else:
        p("", "(thresholds are today's defaults; give the crawl's with -s DEDUP_X=V)")
    if malformed.count:
        p("drop log", f"{malformed.count} malformed lines skipped")
    if note:
        p("index", note)
    print()
    if dropped_text is None or kept_text is None:
        missing = []
        if dropped_text is None:
            missing.append("the drop-log line has no `text`")
        if kept is not None and kept_text is None:
            missing.append("the index holds no text for the kept page")
        if missing and kept is None and note:
            print("no diff: " + note)
        elif missing:
            print("no diff: " + " and ".join(missing) + " (crawled with DEDUP_STORE_TEXT off, or by an older "
                  "crawler-dedup); turn DEDUP_STORE_TEXT on to keep texts for later crawls")
        else:
            print("no diff: " + (note or "the kept page's text is not available"))
        if rec.get("excerpt"):
            print(_term(f"excerpt of the dropped page: {rec['excerpt']}"))
        return 0
    name_k, name_d = rec.get("duplicate_of"), rec["url"]
    lines = (side_by_side(kept_text, dropped_text, width) if args.side_by_side
             else unified(kept_text, dropped_text, name_k, name_d, width))
    print(_term("\n".join(lines)))
    return 0


def _compare(args) -> int:
    from .config import DedupConfig
    from .dedup import Deduplicator
    from .tools.pairs import score_pairs
    from .exceptions import ConfigError
    from .tools.show import ShowError, load_source, xor_line
    from .tokens import tokenize

    try:
        settings = _settings(args.set)
        config = DedupConfig.from_settings({**settings, "DEDUP_BACKEND": "memory"})
    except (ConfigError, UsageError) as exc:
        return _fail("compare", str(exc))
    try:
        a, b = (load_source(x, config.max_bytes, config.extract_mode) for x in (args.a, args.b))
    except ShowError as exc:
        return _fail("compare", str(exc), exc.exit_code)
    dedup = Deduplicator(config).open()
    fps = {}
    for label, src in (("A", a), ("B", b)):
        print(f"{label}: {src.name}")
        if src.title:
            print(f"   title: {src.title}")
        if src.text is None:
            print(f"   {src.problem}")
            continue
        words = len(tokenize(src.text))
        lines = [line.strip() for line in src.text.splitlines() if line.strip()]
        print(f"   text: {len(src.text)} characters, {words} words, {len(lines)} lines")
        for line in lines[: args.lines]:
            print(f"   | {line[:110]}{'…' if len(line) > 110 else ''}")
        fp = dedup.fingerprint(src.text)
        if isinstance(fp, str):
            print(f"   not fingerprinted: {fp} (DEDUP_MIN_TOKENS={config.min_tokens})")
        else:
            fps[label] = fp
            print(f"   fingerprint {fp.fingerprint:016x}, {fp.shingles} distinct shingles")
    print()
    if len(fps) == 2:
        fa, fb = f"{fps['A'].fingerprint:016x}", f"{fps['B'].fingerprint:016x}"
        dist = (fps["A"].fingerprint ^ fps["B"].fingerprint).bit_count()
        print(f"xor {xor_line(fa, fb)}")
        print(f"distance {dist} bits: {'within' if dist <= config.k else 'beyond'} DEDUP_K={config.k}"
              f"{'' if dist <= config.k else ' (a candidate only through the sketch postings)'}")
        print(f"same words (exact): {'yes' if fps['A'].digest == fps['B'].digest else 'no'}")
        # B scored against A, the way a crawl that kept A first checks B
        scores = score_pairs([{"a": b.text, "b": a.text, "duplicate": False}], config)[0]
        if scores is not None:
            print("scores of B against A (every verifier):")
            print(f"   resemblance {scores.resemblance:.3f}   containment (of B in A) {scores.containment:.3f}   "
                  f"qgram {scores.qgram:.3f}   swlr {scores.swlr:.3f}")
    va = dedup.check("A", text=a.text, title=a.title) if a.text is not None else None
    vb = dedup.check("B", text=b.text, title=b.title) if b.text is not None else None
    dedup.close()
    print(f"\nverdict with these settings (DEDUP_VERIFIER={config.verifier}, DEDUP_THRESHOLD={config.threshold}, "
          f"DEDUP_CONTAINMENT={config.containment}), A crawled first, then B:")
    if va is None or vb is None:
        print("   none: a side has no text")
        return 0
    if va.skipped:
        print(f"   A is kept unchecked ({va.skipped}), so B cannot match it")
    if vb.skipped or vb.error:
        print(f"   B kept unchecked: {vb.skipped or vb.error}")
    elif vb.action == "keep":
        guard = " (the title guard kept it: the titles disagree)" if vb.guard else ""
        print(f"   B kept: not a duplicate of A{guard}")
    else:
        print(f"   B {'dropped' if vb.action == 'drop' else 'flagged'}: {vb.reason} duplicate of A, "
              f"{vb.measure} {vb.similarity}, distance {vb.distance} bits")
    return 0


def _restore(args) -> int:
    import contextlib
    from dataclasses import replace

    from .tools.inspect import LogError
    from .tools.restore import allow_pattern, restore

    try:
        filters = replace(_filters(args), exact_urls=True)  # restoring more than asked is worse than less
        if not (args.all or filters.active):
            raise UsageError("say what to restore: --url U, a filter (--domain, --reason, --since, "
                             "--min-similarity) or --all")
        if args.all and filters.active:
            raise UsageError("--all restores every drop: give it without filters")
        if args.allow_file and not args.allow:
            args.allow = True
    except UsageError as exc:
        return _fail("restore", str(exc))
    import os

    if not os.path.isfile(args.log):  # before -o is created: no empty output for a wrong path
        return _fail("restore", f"no drop log at {args.log}" if not os.path.exists(args.log) else
                     f"{args.log} is not a drop log file")
    # before anything is opened for writing: `-o LOG` would empty the log, `--allow-file LOG` append to it
    for option, path in (("-o", args.output), ("--allow-file", args.allow_file)):
        if path not in (None, "-") and _same_file(args.log, path):
            return _fail("restore", f"{option} {path} is the drop log itself: give another file")
    try:
        with contextlib.ExitStack() as stack:
            out = sys.stdout if args.output in (None, "-") else stack.enter_context(open(args.output, "w", encoding="utf-8"))
            result = restore(args.log, filters, out, select_all=args.all, progress="reading")
    except LogError as exc:
        return _fail("restore", str(exc))
    except OSError as exc:
        return _fail("restore", f"cannot write {args.output}: {exc.strerror or exc}", 1)
    report = sys.stderr if args.output in (None, "-") else sys.stdout
    print(f"restored {result.written} of {result.selected} selected drops ({result.from_items} items, "
          f"{result.from_text} from the extracted text) to {args.output or 'stdout'}", file=report)
    for url in filters.urls:
        if "*" not in url and url not in result.found:
            print(f"crawler-dedup restore: warning: no drop-log line for {_term(url)}", file=sys.stderr)
    if result.unchanged:
        print(f"{result.unchanged} selected drops are unchanged revisits with the very words of the page kept "
              "before (storage holds it): nothing to restore", file=report)
    if result.nothing:
        print(_term(f"{result.nothing} selected drops had nothing to restore (no `item` nor `text` in the line; "
                    f"DEDUP_DROPLOG_ITEMS / DEDUP_STORE_TEXT were off), e.g. {', '.join(result.nothing_examples)}"),
              file=report)
    if result.malformed.count:
        print(f"{result.malformed.count} malformed lines skipped", file=report)
    if args.allow:
        patterns = [allow_pattern(u) for u in result.urls]
        if args.allow_file:
            try:
                with open(args.allow_file, "a", encoding="utf-8") as fh:
                    fh.writelines(p + "\n" for p in patterns)
            except OSError as exc:
                return _fail("restore", f"cannot append to {args.allow_file}: {exc.strerror or exc}", 1)
            print(f"appended {len(patterns)} DEDUP_ALLOW patterns to {args.allow_file}", file=report)
        else:
            print("DEDUP_ALLOW entries (these URLs will never be dropped again):", file=report)
            for pattern in patterns:
                print(f"  {_term(pattern)}", file=report)
    return 0


def _index_remove(args) -> int:
    index, problem = _open_index(args.dir)
    if index is None:
        return _fail("index", problem)

    def remove(txn):  # a key lookup in the URL table, the removal in the same transaction
        doc = index.by_url(txn, args.url)
        return 0 if doc is None else int(index.remove(txn, doc.doc_id))

    try:
        removed = index.store.write(remove)
    finally:
        index.store.close()
    if not removed:
        return _fail("index", f"no kept page at {_term(args.url)} in {args.dir}", 1)
    print(f"removed the kept page at {_term(args.url)} from {args.dir}: its copies will be kept from now on")
    return 0


def _report(args) -> int:
    from .tools.inspect import LogError
    from .tools.report import write_report

    try:
        filters = _filters(args)
        if args.rows < 0:
            raise UsageError("--rows takes 0 or more")
    except UsageError as exc:
        return _fail("report", str(exc))
    import os

    log, dir_ = _resolve_log_dir(args.log, args.dir)
    if os.path.exists(log) and _same_file(log, args.output):  # before the HTML overwrites it
        return _fail("report", f"-o {args.output} is the drop log itself: give another file, e.g. report.html")
    if not os.path.isfile(os.path.join(dir_, "data.mdb")):
        if args.dir:
            return _fail("report", f"no LMDB index in {args.dir}{_index_hint(args.dir)}")
        dir_ = None  # no index: the diff view has the dropped texts only
    try:
        info = write_report(log, args.output, filters=filters, dir_=dir_, max_rows=args.rows, progress="reading")
    except LogError as exc:
        return _fail("report", str(exc))
    except OSError as exc:
        return _fail("report", f"cannot write {args.output}: {exc.strerror or exc}", 1)
    print(f"{args.output}: {info['rows']} of {info['matched']} drops in the table"
          f"{' (the latest; plots use all)' if info['rows'] < info['matched'] else ''}, "
          f"{info['texts']} with texts for the diff view; {info['malformed']} malformed lines skipped")
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
    ev = sub.add_parser(
        "eval", help="measure precision and recall on labelled pairs of your own",
        description="With --pairs FILE (JSONL: {\"a\": text, \"b\": text, \"duplicate\": true}, or a_html/b_html), "
        "print each verifier's precision/recall/F1 for a sweep of thresholds, to tune DEDUP_* for your sites. "
        "(The labelled stream of real pages is scored by python benchmarks/quality.py.)",
    )
    ev.add_argument("--pairs", required=True, metavar="FILE", help="your labelled pairs (JSONL)")
    ev.add_argument("-s", "--set", action="append", metavar="DEDUP_NAME=VALUE", help="a setting, as with scrapy -s")
    ev.set_defaults(func=_eval)
    ins = sub.add_parser(
        "inspect", help="summarize a drop log: counts, top kept pages, histograms, latest drops",
        description="Summarize a drop log in one streaming pass: drops by reason, action, stage and domain, "
        "the kept pages with the most duplicates, similarity and distance histograms, and the latest drops. "
        "Malformed lines are counted and skipped.")
    ins.add_argument("log", metavar="LOG", help="the JSONL drop log (DEDUP_DROPLOG)")
    _add_filters(ins)
    ins.add_argument("--limit", type=int, default=20, metavar="N", help="latest matching drops listed (default 20)")
    ins.add_argument("--top", type=int, default=10, metavar="N", help="rows of the domain and kept-page tables (default 10)")
    ins.add_argument("--json", action="store_true", help="machine-readable output")
    ins.set_defaults(func=_inspect)
    sh = sub.add_parser(
        "show", help="one drop explained: the page it matched, fingerprints, scores, why, a diff of the texts",
        description="Find URL's line in the drop log and the kept page it matched in the index, and print both "
        "URLs and titles, the fingerprints and their XOR, the similarity, the rule that decided and a diff of "
        "the two extracted texts (kept with DEDUP_STORE_TEXT). Defaults: --dir the crawl's default DEDUP_DIR "
        "(or the index beside --log), --log <DIR>/droplog.jsonl.")
    sh.add_argument("url", metavar="URL", help="the dropped page's URL, as in the drop log")
    sh.add_argument("--log", metavar="LOG", help="the drop log")
    sh.add_argument("--dir", metavar="DEDUP_DIR", help="the LMDB index (opened read-only)")
    how = sh.add_mutually_exclusive_group()
    how.add_argument("--unified", action="store_true", help="a unified diff (the default)")
    how.add_argument("--side-by-side", action="store_true", help="two columns: kept page left, dropped page right")
    sh.add_argument("--width", type=int, metavar="N", help="output width (default: the terminal's)")
    sh.add_argument("-s", "--set", action="append", metavar="DEDUP_NAME=VALUE", help="the crawl's settings, for the 'why' line")
    sh.set_defaults(func=_show)
    cmp_ = sub.add_parser(
        "compare", help="two URLs or files: texts, fingerprints, every verifier's score, the verdict",
        description="Fetch (plain HTTP GET) or read two pages (.html or .txt files, or http(s) URLs), and print "
        "their extracted texts, fingerprints and distance, every verifier's score of B against A, and what "
        "these settings would decide for B after keeping A.")
    cmp_.add_argument("a", metavar="A", help="URL or file kept first")
    cmp_.add_argument("b", metavar="B", help="URL or file checked against A")
    cmp_.add_argument("--lines", type=int, default=3, metavar="N", help="first lines of each text shown (default 3)")
    cmp_.add_argument("-s", "--set", action="append", metavar="DEDUP_NAME=VALUE", help="a setting, as with scrapy -s")
    cmp_.set_defaults(func=_compare)
    rep = sub.add_parser(
        "report", help="one self-contained HTML file: plots, a sortable and filterable table, a diff per drop",
        description="Write one static HTML file (no network needed to view it) with similarity and distance "
        "histograms, drops over time and per domain, a sortable, filterable table of drops and a diff view "
        "for each. Plots use every line; the table holds at most --rows drops (the latest).")
    rep.add_argument("log", metavar="LOG", nargs="?", help="the drop log (default: <DIR>/droplog.jsonl)")
    rep.add_argument("-o", "--output", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--dir", metavar="DEDUP_DIR", help="the index, for the kept pages' texts in the diff view")
    rep.add_argument("--rows", type=int, default=20_000, metavar="N", help="drops in the table at most (default 20000)")
    _add_filters(rep)
    rep.set_defaults(func=_report)
    rs = sub.add_parser(
        "restore", help="write dropped items back as JSONL for re-ingestion; allow-list them",
        description="Write the selected drops' items (the drop log's `item`, kept with DEDUP_DROPLOG_ITEMS; "
        "else {url, text, title} from its `text` and `title`) as JSONL. Select with --url, the filters, or "
        "--all; without any, nothing is restored. --allow prints a DEDUP_ALLOW regex per restored URL so it is never dropped "
        "again; `crawler-dedup index remove URL` instead takes the kept page out of the index.")
    rs.add_argument("log", metavar="LOG", help="the drop log")
    rs.add_argument("-o", "--output", metavar="OUT.jsonl", help="where the items go (default: stdout)")
    _add_filters(rs, url_help="a URL to restore (that URL only), or a glob when it holds * (repeatable)")
    rs.add_argument("--all", action="store_true", help="restore every drop in the log")
    rs.add_argument("--allow", action="store_true", help="print a DEDUP_ALLOW regex per restored URL")
    rs.add_argument("--allow-file", metavar="FILE", help="append those regexes to FILE instead (implies --allow)")
    rs.set_defaults(func=_restore)
    idx = sub.add_parser("index", help="look at an LMDB index", description="Look at an LMDB index.")
    isub = idx.add_subparsers(dest="index_command", metavar="SUBCOMMAND", required=True)
    st = isub.add_parser("stats", help="pages, plan, settings fixed by the index, disk per page",
                         description="Pages, plan, the settings fixed by the index, and disk per page.")
    st.add_argument("dir", metavar="DEDUP_DIR")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    st.set_defaults(func=_index_stats)
    ex = isub.add_parser("expire", help="remove pages kept more than --window seconds ago",
                         description="Remove pages kept more than --window seconds ago, in batches. A crawl "
                         "with DEDUP_WINDOW does this as it goes; this is for an index no crawl writes to now.")
    ex.add_argument("dir", metavar="DEDUP_DIR")
    ex.add_argument("--window", type=int, required=True, metavar="SECONDS",
                    help="pages kept more than SECONDS ago go (1 or more)")
    ex.add_argument("--batch", type=int, default=1000, metavar="N", help="pages per transaction (default 1000)")
    ex.set_defaults(func=_index_expire)
    co = isub.add_parser("compact", help="rewrite the index file without its free pages (no crawl may use it)",
                         description="Rewrite data.mdb without its free pages. LMDB reuses freed pages but "
                         "never shrinks the file; run this when no crawl has the index open.")
    co.add_argument("dir", metavar="DEDUP_DIR")
    co.set_defaults(func=_index_compact)
    rm = isub.add_parser("remove", help="take the kept page at URL out of the index (no wrong match recurs)",
                         description="Remove the kept page at URL (or at a URL of the same canonical form) from "
                         "the index, so its copies are kept from now on; the next crawl of URL keeps it as new.")
    rm.add_argument("url", metavar="URL", help="the kept page's URL (a drop-log line's duplicate_of)")
    rm.add_argument("--dir", required=True, metavar="DEDUP_DIR")
    rm.set_defaults(func=_index_remove)
    pl = isub.add_parser("plan", help="the permuted-table plan chosen for 10^5 .. 10^9 pages",
                         description="The permuted-table plan chosen for 10^5 .. 10^9 pages (computed).")
    pl.add_argument("--k", type=int, default=3, choices=range(0, MAX_K + 1), metavar="BITS", help="DEDUP_K (default 3)")
    pl.set_defaults(func=_index_plan)
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
    try:
        return args.func(args)
    except BrokenPipeError:  # `crawler-dedup eval ... | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
