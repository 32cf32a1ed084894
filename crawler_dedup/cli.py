"""`crawler-dedup`: the demo, measuring detection quality, and looking at an index."""

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
    """-s DEDUP_NAME=VALUE options as a settings dict; an unknown name is a usage error."""
    from dataclasses import fields

    from .config import DedupConfig

    known = {"DEDUP_" + f.name.upper() for f in fields(DedupConfig) if f.name != "extra"}
    out = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not sep or name not in known:
            raise UsageError(f"-s takes a DEDUP_ setting as NAME=VALUE, not {item!r} (see the README's settings table)")
        out[name] = value
    return out


class UsageError(Exception):
    pass


def _eval(args) -> int:
    from collections import Counter

    from . import evaluation as ev
    from .config import DedupConfig
    from .exceptions import ConfigError

    try:
        settings = _settings(args.set)
        DedupConfig.from_settings(settings)
    except (ConfigError, UsageError) as exc:
        print(f"crawler-dedup eval: {exc}", file=sys.stderr)
        return 2
    if args.pairs:
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
        print(f"{len(pairs)} pairs, {sum(labels)} labelled duplicate; {used} decided"
              + (f", {len(pairs) - used} skipped ({', '.join(f'{n} {w}' for w, n in skipped.items())})" if skipped else ""))
        print(f"\nthese settings: P {p:.3f}  R {r:.3f}  F1 {f:.3f}")
        name = "DEDUP_THRESHOLD"
        print(f"\n{name} swept, the other settings as given (what a crawl would drop):")
        print(f"  {'threshold':>9} {'P':>6} {'R':>6} {'F1':>6}")
        rows = []
        for step in range(2, 20):
            t = round(0.05 * step, 2)
            said = [d for d, _ in ev.decide_pairs(texts, {**settings, name: t})]
            rows.append((t, *ev.pr(said, labels)[:3]))
        good = [row for row in rows if row[1] >= 0.995]
        best = max(good, key=lambda row: (row[3], row[0])) if good else None
        for row in rows:
            mark = "  <- best F1 at P >= 0.995" if row == best else ""
            print(f"  {row[0]:>9.2f} {row[1]:>6.3f} {row[2]:>6.3f} {row[3]:>6.3f}{mark}")
        if best is None:
            print("  no threshold reaches precision 0.995 on these pairs")
        scored = [s for s in ev.score_pairs(pairs, DedupConfig.from_settings(settings)) if s is not None]
        for measure in ("resemblance", "containment", "qgram", "swlr"):
            rows = ev.sweep(scored, measure)
            print(f"\n{measure} alone (the verifier's score, no guards):")
            print("  " + "  ".join(f"{t:.2f}: P {p:.2f} R {r:.2f}" for t, p, r, _ in rows[::3]))
        return 0
    bases = ev.load_bases(args.data)
    if not bases:
        print(f"crawler-dedup eval: no labelled data under {args.data} (give --data DIR or --pairs FILE)",
              file=sys.stderr)
        return 2
    stream = ev.build_stream(bases, seed=args.seed)
    texts = ev.extract_all(stream, progress=Progress("extracting"))
    methods = [ev.ours("crawler-dedup, these settings", texts, settings)]
    try:
        import datasketch  # noqa: F401

        methods.append(ev.minhash_lsh("datasketch MinHashLSH t=0.5", texts, 0.5))
    except ImportError:
        pass
    scores = [ev.score_stream(name, stream, decide) for name, decide in methods]
    print(f"stream: {len(bases)} real pages from {args.data}, {len(stream)} pages in all")
    print(ev.format_table(scores, ev.kinds_present(stream)))
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
            for name, db in [("docs", store.docs), ("fps", store.fps), ("exact", store.exact), ("mins", store.mins)] + [
                    (f"t{t:03d}", db) for t, db in enumerate(store.tables)]:
                st = txn.stat(db)
                sizes[name] = (st["entries"], (st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]) * st["psize"])
        pages = sizes["docs"][0]
        table_bytes = sum(b for n, (_, b) in sizes.items() if n.startswith("t"))
        disk = store.disk_bytes()
        info = {
            "dir": os.path.abspath(args.dir), "format": int(meta["format"]), "pages": pages,
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
        }
    finally:
        store.close()
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    bpp = info["bytes_per_page"]
    print(f"index {info['dir']}: format {info['format']}, {pages} pages kept over {info['runs']} runs")
    p = info["plan"]
    print(f"plan: k={p['k']}, r={p['r']} blocks, {p['tables']} tables keyed by {'/'.join(map(str, p['prefix_bits']))} "
          f"bits; expected {p['expected_entries_per_query']} stored fingerprints read per lookup at this size")
    print(f"settings fixed by the index: " + ", ".join(f"DEDUP_{k.upper()}={v}" for k, v in info["params"].items()))
    if pages:
        print(f"disk: {disk / 2**20:.1f} MiB in data.mdb and lock.mdb; per page: {bpp['all']} B in all, "
              f"{bpp['records']} B record, {bpp['tables']} B tables, {bpp['sketch_postings']} B postings")
    else:
        print(f"disk: {disk / 2**20:.1f} MiB in data.mdb and lock.mdb; no pages")
    return 0


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
    from .tables import plan_rows

    print(f"Manku plans for k={args.k} (f=64): computed by crawler_dedup.tables.choose_plan, which weighs one probe "
          f"per table against reading {0.05:.2f} probe's worth per stored fingerprint returned")
    print(f"{'pages':>14} {'r':>3} {'tables':>7} {'prefix bits':>12} {'entries read / lookup':>22}")
    for row in plan_rows(args.k):
        lo, hi = row["prefix_bits"]
        print(f"{row['pages']:>14,} {row['r']:>3} {row['tables']:>7} {f'{lo}-{hi}' if lo != hi else lo:>12} "
              f"{row['entries_per_query']:>22.2f}")
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
        "eval", help="measure precision and recall: on labelled pairs of your own, or on a labelled stream",
        description="With --pairs FILE (JSONL: {\"a\": text, \"b\": text, \"duplicate\": true}, or a_html/b_html), "
        "print each verifier's precision/recall/F1 for a sweep of thresholds, to tune DEDUP_* for your sites. "
        "Without it, build the labelled stream of real pages and their variants from --data and score the "
        "current settings on it.",
    )
    ev.add_argument("--pairs", metavar="FILE", help="your labelled pairs (JSONL)")
    ev.add_argument("--data", metavar="DIR", default="../shared/data", help="folder of the page sets (default: %(default)s)")
    ev.add_argument("--seed", type=int, default=7, help="stream order and variants (default: %(default)s)")
    ev.add_argument("-s", "--set", action="append", metavar="DEDUP_NAME=VALUE", help="a setting, as with scrapy -s")
    ev.set_defaults(func=_eval)
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
    ex.add_argument("--window", type=int, required=True, metavar="SECONDS")
    ex.add_argument("--batch", type=int, default=1000, metavar="N", help="pages per transaction (default 1000)")
    ex.set_defaults(func=_index_expire)
    co = isub.add_parser("compact", help="rewrite the index file without its free pages (no crawl may use it)",
                         description="Rewrite data.mdb without its free pages. LMDB reuses freed pages but "
                         "never shrinks the file; run this when no crawl has the index open.")
    co.add_argument("dir", metavar="DEDUP_DIR")
    co.set_defaults(func=_index_compact)
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
