"""Speed and size of crawler-dedup, against baselines run in the same process.

    python benchmarks/speed.py [--sizes 100000,1000000] [--crawl-pages 300] [--skip-crawl]

Prints three tables:
1. per-page cost of each step on real pages (p50/p99): extract, fingerprint, decide (lookup,
   verify and durable insert in one LMDB transaction);
2. the index at N stored pages (synthetic fingerprints in near-duplicate clusters): simhash
   lookup and sketch-posting lookup p50/p99, lookups/s, inserts/s, disk and RSS per page, with
   numpy brute force and an in-memory sorted-array index as baselines;
3. whole crawls of the same pages from a local server: Scrapy alone, trafilatura extraction
   alone, dedup in the crawler thread, and with DEDUP_WORKERS=1 and 2 — pages/s, median of runs.
"""

from __future__ import annotations

import argparse
import gzip
import glob
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from crawler_dedup import DedupConfig, Deduplicator  # noqa: E402
from crawler_dedup.extract import extract  # noqa: E402
from crawler_dedup.index import DocRecord, NearDupIndex  # noqa: E402
from crawler_dedup.sketch import SKETCH_SIZE  # noqa: E402
from crawler_dedup.stores import LmdbStore  # noqa: E402
from crawler_dedup.tables import choose_plan, plan_for  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def real_pages(limit: int) -> list[bytes]:
    files = sorted(glob.glob(os.path.join(DATA, "article-extraction-benchmark", "html", "*.html.gz")))
    pages = [gzip.open(f).read() for f in files]
    if not pages:  # no shared data: the bundled demo pages
        from crawler_dedup.demo.site import _bundle

        root, manifest = _bundle()
        pages = [gzip.decompress((root / a["file"]).read_bytes()) for a in manifest["articles"]]
    return (pages * (limit // len(pages) + 1))[:limit]


# -- 1. steps ------------------------------------------------------------------------------

def steps_table(pages: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Deduplicator(DedupConfig(dir=tmp)).open()
        t_ext, t_fp, t_dec = [], [], []
        for i, html in enumerate(pages):
            t0 = time.perf_counter()
            got = extract(html)
            t1 = time.perf_counter()
            if got is None:
                continue
            fp = d.fingerprint(got.text)
            t2 = time.perf_counter()
            if isinstance(fp, str):
                continue
            # the decide step as check() runs it: one write transaction, fsync on commit
            from crawler_dedup.dedup import Verdict

            v = Verdict(url=f"https://bench/{i}", title=got.title)
            d.index.store.write(lambda txn: d._decide(txn, v, fp, "response"))
            t3 = time.perf_counter()
            t_ext.append(t1 - t0)
            t_fp.append(t2 - t1)
            t_dec.append(t3 - t2)
        d.close()
    after = [a + b for a, b in zip(t_fp, t_dec)]
    print(f"\n1. per page, {len(t_ext)} real pages (a second pass over them is all duplicates)")
    print(f"{'step':<44} {'p50 ms':>8} {'p99 ms':>8}")
    for name, vals in (("extract (trafilatura)", t_ext), ("fingerprint (tokens, shingles, simhash, sketch)", t_fp),
                       ("decide (lookup, verify, durable insert)", t_dec), ("everything after extraction", after)):
        print(f"{name:<44} {1000 * pct(vals, 0.5):>8.3f} {1000 * pct(vals, 0.99):>8.3f}")


# -- 2. the index at size N -------------------------------------------------------------------

def synthetic(n: int, seed: int = 1):
    """n fingerprints: 80% random, 20% within 1-3 bits of an earlier one (near-duplicate clusters)."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**63, size=n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, size=n, dtype=np.uint64)
    near = rng.random(n) < 0.2
    src = rng.integers(0, np.maximum(np.arange(n), 1))
    for flips in range(3):
        bit = rng.integers(0, 64, size=n).astype(np.uint64)
        mask = near & (rng.random(n) < 0.8)
        fps[mask] = fps[src[mask]] ^ (np.uint64(1) << bit[mask])
    return fps


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def index_table(sizes: list[int], sketch_size: int = SKETCH_SIZE, blocks: int | None = None) -> None:
    print(f"\n2. the index at N pages (k=3, 8 sketch probes, {sketch_size}-value sketch per page; LMDB, fsync off "
          f"while loading)")
    head = (f"{'N':>10} {'plan':>12} {'insert/s':>9} {'simhash p50/p99 us':>19} {'+postings p50/p99 us':>21} "
            f"{'lookups/s':>10} {'brute us':>9} {'sorted us':>10} {'table B/page':>13} {'all B/page':>11} {'RSS MB':>7}")
    print(head)
    for n in sizes:
        fps = synthetic(n)
        rng = np.random.default_rng(2)
        with tempfile.TemporaryDirectory() as tmp:
            plan = plan_for(3, blocks) if blocks else choose_plan(3, n)
            store = LmdbStore(tmp, map_size=1 << 32, sync=False)
            index = NearDupIndex.open(store, 3, lambda: plan)
            sketches = rng.integers(0, 2**63, size=(min(n, 4096), sketch_size), dtype=np.uint64)
            sketches.sort(axis=1)
            t0 = time.perf_counter()
            batch = 10_000
            for start in range(0, n, batch):
                def load(txn, start=start):
                    for i in range(start, min(n, start + batch)):
                        rec = DocRecord(url=f"https://site{i % 997}.example/page/{i}", fingerprint=int(fps[i]),
                                        sketch=sketches[i % len(sketches)], tokens=800, time=1.0, shingles=700)
                        index.add(txn, rec, i.to_bytes(16, "big"), probes=8)
                store.write(load)
            insert_rate = n / (time.perf_counter() - t0)
            queries = [int(fps[i]) ^ (1 << int(rng.integers(0, 64))) for i in rng.integers(0, n, size=2000)]
            sims, posts = [], []
            sk = sketches[0]
            with store.env.begin() as raw:  # one read transaction, as a batch of lookups would use
                from crawler_dedup.stores.lmdb import _LmdbTxn

                txn = _LmdbTxn(store, raw)
                for q in queries[:200]:  # warm
                    index.candidates(txn, q)
                for q in queries:
                    t1 = time.perf_counter()
                    index.candidates(txn, q)
                    t2 = time.perf_counter()
                    index.sketch_candidates(txn, sk, 8)
                    t3 = time.perf_counter()
                    sims.append(t2 - t1)
                    posts.append(t3 - t1)
            t0 = time.perf_counter()
            for q in queries[:500]:
                store.read(lambda txn, q=q: index.candidates(txn, q))
            one_by_one = 500 / (time.perf_counter() - t0)
            # baselines, same queries: numpy brute force, and sorted arrays per table in memory
            t0 = time.perf_counter()
            for q in queries[:50]:
                np.flatnonzero(np.bitwise_count(fps ^ np.uint64(q)) <= 3)
            brute = (time.perf_counter() - t0) / 50
            keys = [np.array([plan.prefix(t, int(f)) for f in fps[:200_000]], dtype=np.uint64) for t in range(len(plan.tables))]
            order = [np.argsort(k, kind="stable") for k in keys]
            sorted_keys = [k[o] for k, o in zip(keys, order)]
            t0 = time.perf_counter()
            for q in queries[:500]:
                for t in range(len(plan.tables)):
                    p = np.uint64(plan.prefix(t, q))
                    lo, hi = np.searchsorted(sorted_keys[t], [p, p], side="left")[0], np.searchsorted(sorted_keys[t], p, side="right")
                    cand = fps[:200_000][order[t][lo:hi]]
                    np.bitwise_count(cand ^ np.uint64(q))
            sorted_us = (time.perf_counter() - t0) / 500 * 1e6 * (1 if n <= 200_000 else float("nan"))
            stat = store.env.stat()
            with store.env.begin() as raw:
                table_bytes = sum(
                    (lambda s: (s["branch_pages"] + s["leaf_pages"] + s["overflow_pages"]) * s["psize"])(raw.stat(db))
                    for db in store.tables)
            disk = store.disk_bytes()
            store.close()
        print(f"{n:>10} {f'r={plan.r} {len(plan.tables)} tbl':>12} {insert_rate:>9.0f} "
              f"{1e6 * pct(sims, 0.5):>9.1f}/{1e6 * pct(sims, 0.99):<9.1f} {1e6 * pct(posts, 0.5):>10.1f}/{1e6 * pct(posts, 0.99):<10.1f} "
              f"{one_by_one:>10.0f} {1e6 * brute:>9.0f} {sorted_us:>10.1f} {table_bytes / n:>13.1f} {disk / n:>11.0f} "
              f"{rss_mb():>7.0f}", flush=True)
        del stat
    print("brute: numpy Hamming over all N; sorted: the same tables as sorted numpy arrays in memory "
          "(built for N <= 200,000 only); table B/page: the permuted tables' pages in LMDB; all B/page: the "
          "whole LMDB file, page records included")


def window_table(total: int = 60_000, window: int = 10_000, every: int = 10_000) -> None:
    """A steady stream, one page a second, with DEDUP_WINDOW: the index size over time."""
    from crawler_dedup.dedup import EXPIRE_BATCH

    fps = synthetic(total, seed=5)
    rng = np.random.default_rng(6)
    sketches = np.sort(rng.integers(0, 2**63, size=(1024, SKETCH_SIZE), dtype=np.uint64), axis=1)
    print(f"\n2b. a steady stream of {total} pages, one a second, DEDUP_WINDOW={window} s "
          f"({EXPIRE_BATCH} expired pages removed per page kept)")
    print(f"{'pages seen':>11} {'pages in index':>15} {'data.mdb MiB':>13}")
    with tempfile.TemporaryDirectory() as tmp:
        plan = choose_plan(3, window)
        store = LmdbStore(tmp, map_size=1 << 30, sync=False)
        index = NearDupIndex.open(store, 3, lambda: plan)
        for start in range(0, total, 1000):
            def load(txn, start=start):
                for i in range(start, start + 1000):
                    rec = DocRecord(url=f"https://s/{i}", fingerprint=int(fps[i]), sketch=sketches[i % 1024],
                                    tokens=800, time=float(1_000_000 + i), shingles=700)
                    index.add(txn, rec, i.to_bytes(16, "big"), probes=8)
                    index.expire(txn, 1_000_000 + i - window, EXPIRE_BATCH)
            store.write(load)
            seen = start + 1000
            if seen % every == 0:
                live = store.read(lambda t: t.doc_count())
                print(f"{seen:>11} {live:>15} {os.path.getsize(os.path.join(tmp, 'data.mdb')) / 2**20:>13.1f}", flush=True)
        store.close()


# -- 3. whole crawls ---------------------------------------------------------------------------

class ExtractOnly:
    """A downloader middleware that runs trafilatura on each HTML response and nothing else."""

    def process_response(self, request, response):
        from scrapy.http import HtmlResponse

        if isinstance(response, HtmlResponse):
            extract(response.text)
        return response


def crawl_once(mode: str, site: str, urls: str, out: str) -> None:
    from scrapy.crawler import CrawlerProcess

    from crawler_dedup.spider import PagesSpider

    settings = {"LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False,
                "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "HTTPCACHE_ENABLED": False}
    if mode == "extract":
        settings["DOWNLOADER_MIDDLEWARES"] = {"speed.ExtractOnly": 100}
    elif mode.startswith("dedup"):
        workers = int(mode.split("-")[1]) if "-" in mode else 0
        settings.update({"ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": os.path.join(out, "idx"),
                         "DEDUP_WORKERS": workers})
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(PagesSpider)
    process.crawl(crawler, urls=urls)
    t0 = time.perf_counter()
    process.start()
    elapsed = time.perf_counter() - t0
    stats = crawler.stats.get_stats()
    print(json.dumps({"pages": stats.get("response_received_count", 0), "seconds": elapsed}))


def crawl_table(n_pages: int, runs: int) -> None:
    from crawler_dedup.demo.server import PageServer

    pages = real_pages(n_pages)
    with tempfile.TemporaryDirectory() as tmp:
        site = os.path.join(tmp, "site")
        os.makedirs(site)
        for i, html in enumerate(pages):
            with open(os.path.join(site, f"p{i}.html"), "wb") as fh:
                fh.write(html)
        with PageServer(site) as server:
            urls = os.path.join(tmp, "urls.txt")
            with open(urls, "w") as fh:
                fh.writelines(f"{server.base_url}/p{i}.html\n" for i in range(len(pages)))
            modes = ["scrapy", "extract", "dedup", "dedup-1", "dedup-2"]
            results = {m: [] for m in modes}
            for _ in range(runs):
                for mode in modes:
                    out = tempfile.mkdtemp(dir=tmp)
                    proc = subprocess.run([sys.executable, __file__, "--crawl-one", mode, site, urls, out],
                                          capture_output=True, text=True, cwd=HERE, timeout=900)
                    if proc.returncode != 0:
                        print(proc.stderr[-2000:], file=sys.stderr)
                        continue
                    got = json.loads(proc.stdout.strip().splitlines()[-1])
                    results[mode].append(got["pages"] / got["seconds"])
    print(f"\n3. whole crawls of {len(pages)} real pages from 127.0.0.1, {os.cpu_count()} cores, median of {runs} runs")
    print(f"{'crawl':<44} {'pages/s':>8} {'vs extraction alone':>20}")
    base = statistics.median(results["extract"]) if results["extract"] else float("nan")
    names = {"scrapy": "Scrapy alone", "extract": "trafilatura extraction alone (crawler thread)",
             "dedup": "dedup, extraction in the crawler thread", "dedup-1": "dedup, DEDUP_WORKERS=1",
             "dedup-2": "dedup, DEDUP_WORKERS=2"}
    for mode, vals in results.items():
        if vals:
            med = statistics.median(vals)
            print(f"{names[mode]:<44} {med:>8.1f} {med / base:>19.2f}x")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="index sizes N, comma-separated")
    ap.add_argument("--steps-pages", type=int, default=181)
    ap.add_argument("--crawl-pages", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-crawl", action="store_true")
    ap.add_argument("--blocks", type=int, metavar="R", help="force a plan of R blocks (C(R,3) tables) instead of the chosen one")
    ap.add_argument("--sketch-size", type=int, default=SKETCH_SIZE,
                    help="values per synthetic page record (smaller for a 10^7 run that fits the disk)")
    ap.add_argument("--skip-index", action="store_true")
    ap.add_argument("--crawl-one", nargs=4, metavar=("MODE", "SITE", "URLS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.crawl_one:
        crawl_once(*args.crawl_one)
        return 0
    if args.steps_pages:
        steps_table(real_pages(args.steps_pages) * 2)
    if not args.skip_index:
        index_table([int(float(s)) for s in args.sizes.split(",")], args.sketch_size, args.blocks)
        if not args.blocks:
            window_table()
    if not args.skip_crawl:
        crawl_table(args.crawl_pages, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
