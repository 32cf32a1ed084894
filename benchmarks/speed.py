"""Speed and size of crawler-dedup, against baselines run in the same process.

    python benchmarks/speed.py [--sizes 100000,1000000] [--crawl-pages 300] [--skip-crawl]

Prints three tables:
1. per-page cost of each step on real pages (p50/p99): extract, fingerprint, decide (lookup,
   verify and durable insert in one LMDB transaction);
2. the index at N stored pages (synthetic fingerprints in near-duplicate clusters): simhash
   lookup and sketch-posting lookup p50/p99, lookups/s, inserts/s, disk and RSS per page, with
   numpy brute force and an in-memory sorted-array index as baselines;
3. whole crawls of distinct real pages from a local server: Scrapy alone, trafilatura alone (in
   the crawler's thread: the baseline, and in 2 worker processes), crawler-dedup in the crawler's
   thread and with its defaults (DEDUP_WORKERS=auto) — pages/s and the ratio to trafilatura alone,
   median of runs, on the machine's cores and with the server, the crawler and its workers all
   pinned to 1 core (--skip-one-core leaves that out);
   3c. the fast path: a crawl with 20% byte-identical copies against one whose copies are one
   byte longer.
"""

from __future__ import annotations

import argparse
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
sys.path.insert(0, HERE)

from crawler_dedup import DedupConfig, Deduplicator  # noqa: E402
from crawler_dedup.core.page.extract import extract  # noqa: E402
from crawler_dedup.core.page.fingerprint import body_digest  # noqa: E402
from crawler_dedup.core.page.site import lines_of  # noqa: E402
from crawler_dedup.core.index.neardup import DocRecord, NearDupIndex  # noqa: E402
from crawler_dedup.core.page.sketch import SKETCH_SIZE  # noqa: E402
from crawler_dedup.stores import LmdbStore  # noqa: E402
from crawler_dedup.core.index.tables import choose_plan, plan_for  # noqa: E402
from pages import real_pages  # noqa: E402  (the shared data's pages, else the demo's)


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


# -- 1. steps ------------------------------------------------------------------------------

class _Timed:
    """Wraps a method and adds the time spent in it to a shared counter."""

    def __init__(self, fn, counter: list):
        self.fn, self.counter = fn, counter

    def __call__(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.counter[0] += time.perf_counter() - t


def steps_table(pages: list[bytes], sync: bool = True, groups: tuple[int, ...] = (1, 2, 8)) -> None:
    """Each page as the middleware runs it: extract, fingerprint, then decide in a group commit
    of `group` pages (one write transaction: lookup, verify, insert each, one fsync'd commit).
    A group's decide and commit times are shared equally by its pages."""
    for group in groups:
        _steps_one(pages, sync, group)


def _steps_one(pages: list[bytes], sync: bool, group: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Deduplicator(DedupConfig(dir=tmp, lmdb_sync=sync)).open()
        index = d.index
        # time the lookup (exact digest, tables, postings, records) and the verifier inside _decide
        looked, verified, decided = [0.0], [0.0], [0.0]
        for name in ("exact", "candidates", "sketch_candidates", "doc"):
            setattr(index, name, _Timed(getattr(index, name), looked))
        d.verifier = type("TimedVerifier", (), {"name": d.verifier.name, "keep": d.verifier.keep,
                                                "score": _Timed(d.verifier.score, verified)})()
        d._decide = _Timed(d._decide, decided)
        rows: dict[str, list[float]] = {k: [] for k in ("known", "extract", "fingerprint", "lookup", "verify", "insert",
                                                           "commit")}
        waiting = []  # (pending, extract s, fingerprint s, fast-path lookup s)

        def decide_group():
            looked[0] = verified[0] = decided[0] = 0.0
            t = time.perf_counter()
            d.decide_many([p for p, *_ in waiting])
            whole, n = time.perf_counter() - t, len(waiting)
            for _, ext, fpr, known in waiting:
                rows["known"].append(known)
                rows["extract"].append(ext)
                rows["fingerprint"].append(fpr)
                rows["lookup"].append(looked[0] / n)
                rows["verify"].append(verified[0] / n)
                rows["insert"].append((decided[0] - looked[0] - verified[0]) / n)
                rows["commit"].append((whole - decided[0]) / n)
            waiting.clear()

        for i, html in enumerate(pages):
            url = f"https://bench{i % 40}.example/{i}"  # 40 sites
            tk = time.perf_counter()
            body = body_digest(html + str(i).encode())  # (each page its own bytes: the fast path never hits here)
            d.known(body)
            t0 = time.perf_counter()
            got = extract(html)
            t1 = time.perf_counter()
            if got is None:
                continue
            fp = d.fingerprint(got.text)
            if isinstance(fp, str):
                continue
            fp.lines = lines_of(fp.text, url, fp.title)  # (in a worker, with the fingerprint)
            _, pending = d.prepare(url, title=got.title, fingerprinted=fp, body=body)
            t2 = time.perf_counter()
            waiting.append((pending, t1 - t0, t2 - t1, t0 - tk))
            if len(waiting) == group:
                decide_group()
        if waiting:
            decide_group()
        d.close()
    after = [sum(vals) for vals in zip(*(rows[k] for k in ("known", "fingerprint", "lookup", "verify", "insert", "commit")))]
    crawler = [sum(vals) for vals in zip(*(rows[k] for k in ("known", "lookup", "verify", "insert", "commit")))]
    label = "fsync per commit" if sync else "DEDUP_LMDB_SYNC=False"
    share = "a commit a page" if group == 1 else f"group commits of {group} pages, their time shared"
    print(f"\n1. per page, {len(rows['extract'])} real pages (a second pass over them is all duplicates); "
          f"{label}; {share}")
    print(f"{'step':<56} {'p50 ms':>8} {'p99 ms':>8}")
    names = {"known": "fast path (bytes digest, bodies table)", "extract": "extract (trafilatura)",
             "fingerprint": "fingerprint (tokens, shingles, simhash, sketch, lines)",
             "lookup": "lookup (digest, tables, sketch postings, records)", "verify": "verify (candidates scored)",
             "insert": "insert (kept pages; rest of the transaction)", "commit": "commit"}
    for key, name in names.items():
        print(f"{name:<56} {1000 * pct(rows[key], 0.5):>8.3f} {1000 * pct(rows[key], 0.99):>8.3f}")
    print(f"{'everything but extraction':<56} {1000 * pct(after, 0.5):>8.3f} {1000 * pct(after, 0.99):>8.3f}")
    print(f"{'in the crawler process, with workers (no fingerprint)':<56} {1000 * pct(crawler, 0.5):>8.3f} "
          f"{1000 * pct(crawler, 0.99):>8.3f}")


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


def _lsh_baseline(n: int, queries_from: np.ndarray, rng) -> float:
    """datasketch MinHashLSH (t=0.5, 128 permutations) over n synthetic pages: us per query."""
    from datasketch import LeanMinHash, MinHashLSH

    lsh = MinHashLSH(threshold=0.5, num_perm=128)
    values = rng.integers(0, 2**32, size=(n, 128), dtype=np.uint64)
    with lsh.insertion_session() as session:
        for i in range(n):
            session.insert(i, LeanMinHash(seed=1, hashvalues=values[i], scheme="legacy"), check_duplication=False)
    queries = []
    for i in queries_from[:500]:
        hv = values[i].copy()
        hv[rng.integers(0, 128, size=8)] = rng.integers(0, 2**32, size=8, dtype=np.uint64)  # a near copy
        queries.append(LeanMinHash(seed=1, hashvalues=hv, scheme="legacy"))
    t0 = time.perf_counter()
    for q in queries:
        lsh.query(q)
    return (time.perf_counter() - t0) / len(queries) * 1e6


def lookup_rss(path: str, count: int = 5000) -> None:
    """In a fresh process: open the index, run `count` lookups, print RssAnon and RssFile in MB."""
    store = LmdbStore(path, sync=False)
    index = NearDupIndex.open(store, 3, lambda: None)
    rng = np.random.default_rng(5)
    index.read(lambda txn: [index.candidates(txn, q) for q in rng.integers(0, 2**63, size=count).tolist()])
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    print(int(status["RssAnon"].split()[0]) / 1024, int(status["RssFile"].split()[0]) / 1024)


def index_table(sizes: list[int], sketch_size: int = SKETCH_SIZE, blocks: int | None = None,
                lsh_max: int = 1_000_000, keep: str | None = None) -> None:
    print(f"\n2. the index at N pages (k=3, 8 sketch postings and a {sketch_size}-value sketch per page; LMDB, "
          f"fsync off while loading; 2000 queries 1 bit off a stored page)")
    head = (f"{'N':>10} {'plan':>11} {'insert/s':>9} {'1st touch us':>15} {'warm p50/p99':>15} {'+postings':>16} "
            f"{'1-by-1/s':>9} {'brute x':>8} {'sorted x':>8} {'LSH x':>7} "
            f"{'table B/pg':>10} {'all B/pg':>8} {'RSS MB':>7}")
    print(head)

    for n in sizes:
        fps = synthetic(n)
        rng = np.random.default_rng(2)
        with tempfile.TemporaryDirectory() as tmp:
            if keep:  # a kept index of this size is reused: lookups can be re-measured without reloading
                tmp = os.path.join(keep, f"n{n}-s{sketch_size}-b{blocks or 0}")
            plan = plan_for(3, blocks) if blocks else choose_plan(3, n)
            store = LmdbStore(tmp, map_size=1 << 32, sync=False)
            index = NearDupIndex.open(store, 3, lambda: plan)
            plan = index.plan
            sketches = rng.integers(0, 2**63, size=(min(n, 4096), sketch_size), dtype=np.uint64)
            sketches.sort(axis=1)
            t0 = time.perf_counter()
            batch = 10_000
            loaded = index.read(lambda txn: txn.doc_count())
            for start in range(loaded, n, batch):
                def load(txn, start=start):
                    for i in range(start, min(n, start + batch)):
                        rec = DocRecord(url=f"https://site{i % 997}.example/page/{i}", fingerprint=int(fps[i]),
                                        sketch=sketches[i % len(sketches)], tokens=800, time=1.0, shingles=700)
                        index.add(txn, rec, i.to_bytes(16, "big"), probes=8)
                index.write(load)
            insert_rate = (n - loaded) / (time.perf_counter() - t0) if loaded < n else float("nan")
            # loading ran without fsync: flush now, as a crawl's per-commit fsync would have, so the
            # lookups below do not race the kernel writing gigabytes back
            store.env.sync(True)
            picks = rng.integers(0, n, size=2000)
            queries = [int(fps[i]) ^ (1 << int(rng.integers(0, 64))) for i in picks]
            sims, posts, first = [], [], []
            sk = sketches[0]
            def lookups(txn):  # one read transaction, as a batch of lookups would use
                for q in queries:  # first touch of their buckets, which may have to come from disk
                    t1 = time.perf_counter()
                    index.candidates(txn, q)
                    first.append(time.perf_counter() - t1)
                for q in queries:  # warm: the same buckets again
                    t1 = time.perf_counter()
                    index.candidates(txn, q)
                    t2 = time.perf_counter()
                    index.sketch_candidates(txn, sk, 8)
                    t3 = time.perf_counter()
                    sims.append(t2 - t1)
                    posts.append(t3 - t1)
            index.read(lookups)
            t0 = time.perf_counter()
            for q in queries:  # each in its own read transaction, as a crawl's lookups are
                index.read(lambda txn, q=q: index.candidates(txn, q))
            one_by_one = len(queries) / (time.perf_counter() - t0)
            ours = pct(sims, 0.5)
            # baselines, same queries: numpy brute force; the same tables as sorted arrays in memory
            t0 = time.perf_counter()
            for q in queries[:20]:
                np.flatnonzero(np.bitwise_count(fps ^ np.uint64(q)) <= 3)
            brute = (time.perf_counter() - t0) / 20
            prefixes = plan.prefixes(fps)
            order = [np.argsort(p, kind="stable") for p in prefixes]
            sorted_keys = [p[o] for p, o in zip(prefixes, order)]
            del prefixes
            times = []
            for q in queries:
                t1 = time.perf_counter()
                qp = plan.prefixes(np.array([q], dtype=np.uint64))[:, 0]
                cand = np.concatenate([fps[order[t][np.searchsorted(sorted_keys[t], qp[t], side="left"):
                                                    np.searchsorted(sorted_keys[t], qp[t], side="right")]]
                                       for t in range(len(plan.tables))])
                np.unique(cand[np.bitwise_count(cand ^ np.uint64(q)) <= 3])
                times.append(time.perf_counter() - t1)
            sorted_us = pct(times, 0.5)
            del order, sorted_keys
            lsh_us = _lsh_baseline(n, picks, rng) if n <= lsh_max else float("nan")
            table_bytes = sum(b for name, (_, b) in store.table_stats().items() if name.startswith("t"))
            disk = store.disk_bytes()
            store.close()
            out = subprocess.run([sys.executable, __file__, "--lookup-rss", tmp], capture_output=True, text=True,
                                 check=True).stdout.split()
            rss_anon = float(out[0])
        print(f"{n:>10} {f'{len(plan.tables)} tbl/{plan.prefix_bits(0)}b':>11} {insert_rate:>9.0f} "
              f"{1e6 * pct(first, 0.5):>7.1f}/{1e6 * pct(first, 0.99):<7.1f} "
              f"{1e6 * ours:>7.1f}/{1e6 * pct(sims, 0.99):<7.1f} {1e6 * pct(posts, 0.5):>7.1f}/{1e6 * pct(posts, 0.99):<8.1f} "
              f"{one_by_one:>9.0f} {brute / ours:>8.0f} {sorted_us / ours:>8.2f} "
              f"{lsh_us / 1e6 / ours:>7.2f} {table_bytes / n:>10.1f} {disk / n:>8.0f} {rss_anon:>7.0f}", flush=True)
    print("lookups: simhash candidates within 3 bits, p50/p99 in one read transaction; 1st touch: the first lookup "
          "of a bucket (its pages may have been paged out: this VM reclaims idle page cache); warm: the same "
          "2000 lookups again; +postings: warm, with the 8 sketch-posting probes; 1-by-1/s: each lookup in its own read transaction, as a crawl does. "
          "Ratios are the baseline's median time over ours "
          "(>1: we are faster): brute = numpy Hamming over all N; sorted = the same tables as sorted numpy "
          "arrays in memory; LSH = datasketch MinHashLSH t=0.5 over 128-value signatures (N <= "
          f"{lsh_max:,} only). table B/pg: the permuted tables' LMDB pages; all B/pg: the whole file; RSS MB: "
          "anonymous memory of a fresh process after 5000 lookups (the mapped file is shared page cache)")


def window_table(total: int = 60_000, window: int = 10_000, every: int = 10_000) -> None:
    """A steady stream, one page a second, with DEDUP_WINDOW: the index size over time."""
    from crawler_dedup.core.dedup import EXPIRE_BATCH

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
            index.write(load)
            seen = start + 1000
            if seen % every == 0:
                live = index.read(lambda t: t.doc_count())
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


class ExtractInWorkers:
    """Extraction alone in BENCH_WORKERS worker processes, awaited as DEDUP_WORKERS does."""

    def __init__(self, workers: int):
        from crawler_dedup.workers import WorkerPool

        self.pool = WorkerPool(workers)

    @classmethod
    def from_crawler(cls, crawler):
        from scrapy import signals

        mw = cls(crawler.settings.getint("BENCH_WORKERS"))
        crawler.signals.connect(lambda: mw.pool.shutdown(), signal=signals.spider_closed)
        return mw

    async def process_response(self, request, response):
        from scrapy.http import HtmlResponse

        from crawler_dedup.scrapy.batching import in_worker as _in_worker

        if isinstance(response, HtmlResponse):
            await _in_worker(self.pool, extract, response.text)  # as the dedup middleware sends it
        return response


def _affinity(*pids: int) -> dict:
    """The CPUs every thread of the processes `pids` and of all their descendants may run on:
    {"procs": processes, "threads": threads, "cpus": the distinct Cpus_allowed_list values}."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry))
    todo, procs, threads, cpus = list(pids), 0, 0, set()
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        procs += 1
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/status") as fh:
                    cpus.update(line.split(":", 1)[1].strip() for line in fh if line.startswith("Cpus_allowed_list:"))
                threads += 1
            except OSError:
                pass
        todo.extend(parents.get(pid, []))
    return {"procs": procs, "threads": threads, "cpus": sorted(cpus)}


def serve_site(site: str) -> None:
    """--serve SITE: the page server in a process of its own (so it can be pinned to a core with
    everything else), until stdin closes; prints its base URL first."""
    from crawler_dedup.demo.server import PageServer

    with PageServer(site) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


def crawl_once(mode: str, site: str, urls: str, out: str) -> None:
    from scrapy.crawler import CrawlerProcess

    from crawler_dedup.spider import PagesSpider

    settings = {"LOG_LEVEL": "ERROR", "ROBOTSTXT_OBEY": False, "TELNETCONSOLE_ENABLED": False,
                "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 16, "HTTPCACHE_ENABLED": False}
    if mode == "extract":
        settings["DOWNLOADER_MIDDLEWARES"] = {"speed.ExtractOnly": 100}
    elif mode.startswith("extract-"):
        settings["DOWNLOADER_MIDDLEWARES"] = {"speed.ExtractInWorkers": 100}
        settings["BENCH_WORKERS"] = int(mode.split("-")[1])
    elif mode == "defaults":  # the add-on with every setting at its default
        settings.update({"ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": os.path.join(out, "idx")})
    elif mode.startswith("dedup"):
        workers = int(mode.split("-")[1]) if "-" in mode else 0
        settings.update({"ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": os.path.join(out, "idx"),
                         "DEDUP_WORKERS": workers})
    from scrapy import signals

    process = CrawlerProcess(settings)
    crawler = process.create_crawler(PagesSpider)
    seen = []  # when each page came out of the downloader middlewares: start-up (worker spawn) excluded
    pinned = {}  # mid-crawl: the CPUs allowed to the server, this process, its workers, all their threads
    server_pid = int(os.environ.get("BENCH_SERVER_PID", "0"))
    with open(urls) as fh:
        probe_at = max(1, sum(1 for line in fh if line.strip()) // 4)  # workers long up by then

    def received(**kw):  # a named function: signal receivers are held by weak reference
        seen.append(time.time())
        if len(seen) == probe_at:
            pinned.update(crawler=_affinity(os.getpid()), server=_affinity(server_pid) if server_pid else None)

    crawler.signals.connect(received, signal=signals.response_received)
    process.crawl(crawler, urls=urls)
    process.start()
    # a dropped page never reaches response_received: its drop-log line has the time it was done
    log = os.path.join(out, "idx", "droplog.jsonl")
    drops = []
    if os.path.exists(log):
        from datetime import datetime

        from crawler_dedup.droplog import read_droplog

        drops = [datetime.fromisoformat(r["time"].replace("Z", "+00:00")).timestamp() for r in read_droplog(log)]
    done = sorted(seen + drops)
    # the rate between the first and the last page done: N pages done make N - 1 intervals
    commits = crawler.stats.get_value("dedup/commits") or 0
    checked = crawler.stats.get_value("dedup/checked") or 0
    print(json.dumps({"pages": len(done) - 1, "seconds": done[-1] - done[0], "done": len(done), **pinned,
                      "per_commit": checked / commits if commits else None,
                      "fast": crawler.stats.get_value("dedup/fast/same_bytes") or 0, "rss_mb": rss_mb()}))


ONE_CORE = {min(os.sched_getaffinity(0))}  # the 1-core runs: the server, the crawler and its workers on one CPU
CORES = len(os.sched_getaffinity(0))  # the CPUs this process may use (a container may allow fewer than exist)


def _pin(cpus):
    """A preexec_fn pinning the child to `cpus` before it execs: its threads and children inherit."""
    return None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))


def _cpu_busy(*running: int) -> tuple[float, float, float]:
    """(wall time, CPU seconds used by the whole machine, by this process, its waited-for children
    and the still running processes `running`)."""
    tick = os.sysconf("SC_CLK_TCK")
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    t = os.times()
    own = t.user + t.system + t.children_user + t.children_system
    for pid in running:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                own += sum(int(x) for x in fh.read().rsplit(")", 1)[1].split()[11:13]) / tick
        except (OSError, ValueError):
            pass
    busy = (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] if len(f) > 7 else 0)) / tick
    return time.time(), busy, own


def _start_server(site: str, cpus):
    proc = subprocess.Popen([sys.executable, __file__, "--serve", site], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=HERE, preexec_fn=_pin(cpus))
    return proc, proc.stdout.readline().strip()


def _crawls(sites: dict[str, list[bytes]], plan: list[tuple[str, str, object]], runs: int) -> dict:
    """Run every (label, site, mode, cpus) of `plan` `runs` times, interleaved, each crawl in a
    process of its own against a page server in another; {label: [results]}, and the load other
    processes put on the machine meanwhile."""
    results: dict[str, list[dict]] = {label: [] for label, *_ in plan}
    load: dict[str, list[float]] = {label: [] for label, *_ in plan}
    servers = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for name, pages in sites.items():
                site = os.path.join(tmp, name)
                os.makedirs(site)
                for i, html in enumerate(pages):
                    with open(os.path.join(site, f"p{i}.html"), "wb") as fh:
                        fh.write(html)
                # a server on both cores, and one pinned to CPU 0 (idle while the other serves)
                for cpus in (None, frozenset(ONE_CORE)):
                    server, base = _start_server(site, cpus)
                    urls = os.path.join(tmp, f"urls-{name}-{len(servers)}.txt")
                    with open(urls, "w") as fh:
                        fh.writelines(f"{base}/p{i}.html\n" for i in range(len(pages)))
                    servers[(name, cpus)] = (server, urls, site)
            for _ in range(runs):
                for label, name, mode, cpus in plan:
                    server, urls, site = servers[(name, None if cpus is None else frozenset(cpus))]
                    out = tempfile.mkdtemp(dir=tmp)
                    pids = [sv.pid for sv, _, _ in servers.values()]
                    start = _cpu_busy(*pids)
                    proc = subprocess.run([sys.executable, __file__, "--crawl-one", mode, site, urls, out],
                                          capture_output=True, text=True, cwd=HERE, timeout=900, preexec_fn=_pin(cpus),
                                          env=dict(os.environ, BENCH_SERVER_PID=str(server.pid)))
                    if proc.returncode != 0:
                        print(proc.stderr[-2000:], file=sys.stderr)
                        continue
                    wall, busy, own = (b - a for a, b in zip(start, _cpu_busy(*pids)))
                    load[label].append(max(0.0, busy - own) / wall)
                    # own: CPU seconds of the crawl, its workers (waited for) and the servers
                    results[label].append({**json.loads(proc.stdout.strip().splitlines()[-1]), "cpu": own})
        finally:
            for server, _, _ in servers.values():
                server.stdin.close()
                try:
                    server.wait(10)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
    return {"results": results, "load": load}


def _rate(got: list[dict]) -> float:
    return statistics.median(r["pages"] / r["seconds"] for r in got) if got else float("nan")


def crawl_table(n_pages: int, runs: int, one_core: bool = True) -> None:
    """3. Crawls of distinct real pages: the defaults against trafilatura alone over the same
    pages (in the crawler's thread: one process), on the machine's cores and on one core."""
    pages = real_pages(n_pages, distinct=True)
    plan = [("scrapy", "pages", "scrapy", None), ("extract", "pages", "extract", None),
            ("extract-2", "pages", "extract-2", None), ("dedup-0", "pages", "dedup-0", None),
            ("defaults", "pages", "defaults", None)]
    if one_core:
        plan += [("scrapy@1", "pages", "scrapy", ONE_CORE), ("extract@1", "pages", "extract", ONE_CORE),
                 ("dedup-0@1", "pages", "dedup-0", ONE_CORE), ("defaults@1", "pages", "defaults", ONE_CORE)]
    got = _crawls({"pages": pages}, plan, runs)
    rate = {label: _rate(v) for label, v in got["results"].items()}
    busy = {label: statistics.median(v) if v else float("nan") for label, v in got["load"].items()}
    from crawler_dedup.workers import usable_cores

    print(f"\n3. whole crawls of {len(pages)} distinct real pages from 127.0.0.1 (server in another process), "
          f"median of {runs} runs; pages/s, and the ratio to trafilatura alone over the same pages in the crawler "
          "(one process) on the same cores")
    print(f"{'':<66} {f'{CORES} cores':>9} {'ratio':>7}" + (f" {'1 core':>9} {'ratio':>7}" if one_core else ""))
    rows = (("Scrapy alone (no extraction)", "scrapy"), ("trafilatura alone, in the crawler's thread", "extract"),
            ("trafilatura alone, in 2 worker processes", "extract-2"),
            ("crawler-dedup, DEDUP_WORKERS=0 (in the crawler's thread)", "dedup-0"),
            (f"crawler-dedup, defaults (DEDUP_WORKERS=auto: {usable_cores()} here, 1 on 1 core)", "defaults"))
    for title, label in rows:
        line = f"{title:<66} {rate[label]:>9.1f} {rate[label] / rate['extract']:>6.2f}x"
        if one_core and f"{label}@1" in rate:
            line += f" {rate[label + '@1']:>9.1f} {rate[label + '@1'] / rate['extract@1']:>6.2f}x"
        print(line)
    peak = {label: max((r.get("rss_mb", 0) for r in v), default=0) for label, v in got["results"].items()}
    print(f"crawler RSS peak (MB): extraction alone {peak['extract']:.0f}, defaults {peak['defaults']:.0f}; "
          "other load (cores used by other processes during the crawls, median): "
          + ", ".join(f"{k} {busy[k]:.2f}" for k in ("extract", "defaults") + (("extract@1", "defaults@1") if one_core else ())))
    if one_core:
        cpus = "; ".join(f"{k}: {sorted(set((r['crawler']['procs'], ','.join(r['crawler']['cpus'])) for r in v if 'crawler' in r))}"
                         for k, v in got["results"].items() if k.endswith("@1"))
        print(f"1 core: the server, the crawler and its workers pinned to CPU {min(ONE_CORE)} before they exec "
              f"(seen a quarter into each crawl: processes, CPUs) {cpus}")


def fastpath_table(n_pages: int, runs: int, share: float = 0.2) -> None:
    """3c. A crawl where `share` of the pages are byte-identical copies of earlier pages at other
    URLs (tracking parameters, session ids), against the same crawl with each copy one byte
    longer (the same decisions, every page extracted): the fast path's share of pages and the
    time it saves."""
    distinct = real_pages(int(n_pages * (1 - share)), distinct=True)
    copies = int(len(distinct) * share / (1 - share))
    same = distinct + [distinct[i * len(distinct) // copies] for i in range(copies)]
    near = distinct + [distinct[i * len(distinct) // copies] + b"\n" for i in range(copies)]
    plan = [("same", "same", "defaults", None), ("near", "near", "defaults", None)]
    got = _crawls({"same": same, "near": near}, plan, runs)
    rate = {label: _rate(v) for label, v in got["results"].items()}
    fast = statistics.median(r["fast"] for r in got["results"]["same"]) if got["results"]["same"] else 0
    secs = {label: statistics.median(r["seconds"] for r in v) if v else float("nan") for label, v in got["results"].items()}
    cpu = {label: statistics.median(r["cpu"] for r in v) if v else float("nan") for label, v in got["results"].items()}
    print(f"\n3c. the fast path: {len(same)} pages, {copies} of them ({copies / len(same):.0%}) byte-identical copies "
          f"of others at other URLs; defaults, {CORES} cores, median of {runs} runs")
    print(f"{'':<46} {'pages/s':>8} {'seconds':>8} {'CPU s':>7} {'decided without extraction':>27}")
    print(f"{'copies byte-identical (the fast path)':<46} {rate['same']:>8.1f} {secs['same']:>8.1f} {cpu['same']:>7.1f} "
          f"{fast:>20.0f} ({fast / len(same):.0%})")
    print(f"{'copies one byte longer (every page extracted)':<46} {rate['near']:>8.1f} {secs['near']:>8.1f} "
          f"{cpu['near']:>7.1f} {0:>20}")
    print(f"saved by the fast path: {1 - secs['same'] / secs['near']:.0%} of the crawl's time, "
          f"{1 - cpu['same'] / cpu['near']:.0%} of the CPU it used (crawler, workers, page server; start-up included)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,1000000", help="index sizes N, comma-separated")
    ap.add_argument("--steps-pages", type=int, default=181)
    ap.add_argument("--crawl-pages", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--skip-crawl", action="store_true")
    ap.add_argument("--fastpath-pages", type=int, default=600, help="pages of table 3c, a fifth of them copies")
    ap.add_argument("--fastpath-only", action="store_true", help="of the crawls, table 3c only")
    ap.add_argument("--skip-one-core", action="store_true",
                    help="no table 3b (the crawls again with everything pinned to CPU 0)")
    ap.add_argument("--blocks", type=int, metavar="R", help="force a plan of R blocks (C(R,3) tables) instead of the chosen one")
    ap.add_argument("--sketch-size", type=int, default=SKETCH_SIZE,
                    help="values per synthetic page record (smaller for a 10^7 run that fits the disk)")
    ap.add_argument("--skip-index", action="store_true")
    ap.add_argument("--skip-window", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="build each index under DIR and reuse it on later runs "
                    "(insert/s is then only measured by the run that loads it)")
    ap.add_argument("--lsh-max", type=int, default=1_000_000, help="largest N for the MinHashLSH baseline")
    ap.add_argument("--lookup-rss", help=argparse.SUPPRESS)
    ap.add_argument("--crawl-one", nargs=4, metavar=("MODE", "SITE", "URLS", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--serve", metavar="SITE", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.crawl_one:
        crawl_once(*args.crawl_one)
        return 0
    if args.serve:
        serve_site(args.serve)
        return 0
    if args.lookup_rss:
        lookup_rss(args.lookup_rss)
        return 0
    if args.steps_pages:
        steps_table(real_pages(args.steps_pages) * 2)
    if not args.skip_index:
        index_table([int(float(s)) for s in args.sizes.split(",")], args.sketch_size, args.blocks, args.lsh_max, args.keep)
        if not args.blocks and not args.skip_window:
            window_table()
    if not args.skip_crawl:
        if not args.fastpath_only:
            crawl_table(args.crawl_pages, args.runs, not args.skip_one_core)
        fastpath_table(args.fastpath_pages, args.runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
