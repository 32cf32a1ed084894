"""Decided pages a second with 1, 4 and 8 processes sharing one index: Redis beside LMDB, and the
CPU a page takes in the crawling processes and in the redis-servers (INFO cpu, every node), the
Redis round trips (and on a cluster the node round trips: each node a round trip reaches counts
one), commands and optimistic reruns (a conflict: another writer changed a key the page read) a
page takes, on one redis-server and on a 3-node Redis Cluster, and on the
cluster the kept pages' second looks skipped by a quiet claim (`quiet`), those skipped as the pages
claimed meanwhile wrote nothing the filing looked at (`apart`), and those whose read found nothing
changed since the filing (`same`: the rules not run again), a page (docs/distributed.md).

    python benchmarks/redis_backend.py [--pages 2000] [--procs 1,4,8] [--repeat 3] [--window SECONDS]
    python benchmarks/redis_backend.py --bytes 100000   # bytes a kept page: one server, a 3-node cluster
    python benchmarks/redis_backend.py --holdout DIR    # real pages instead: an extracted holdout's
    python benchmarks/redis_backend.py --batch 8        # pages decided 8 at a time, as a crawl's group commit
    python benchmarks/redis_backend.py --cluster-nodes 1,3   # a row for a 1-node cluster too (the layout's cost alone)

`--holdout DIR` (an extracted holdout, manifest.json and site/, as `run_holdout.py` reads it)
decides its pages' main texts and titles, extracted first by the package's own step 1, in the
manifest's order under their own hosts: real pages of ~1,000 sites with their copies, where the
bundled stream is a few articles copied over and over (many more candidates a page).

Each process decides its share of one stream of real texts (the bundled demo articles, each with
copies at other URLs) through `Deduplicator.check(url, text=...)`: steps 2-8, extraction left
out, as in a crawl whose workers extract. The redis-servers are started on 127.0.0.1 for the run.
`--batch N` decides a process's pages N at a time in one transaction (`Deduplicator.decide_many`),
as a Scrapy crawl does with DEDUP_COMMIT_BATCH when N pages arrive within DEDUP_COMMIT_DELAY of
each other (default 1: a page at a time, the case with the most round trips a page).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pages import demo_texts  # noqa: E402


def texts(n: int, seed: int = 3) -> list[tuple[str, str]]:
    """n (url, text) pairs: the demo's articles and texts, and copies of them at other URLs (a
    third of the pages), in a fixed random order."""
    bodies = demo_texts()
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        body = rnd.choice(bodies)
        words = body.split()
        if rnd.random() < 0.66:  # a page of its own: the article with a few hundred words changed
            for _ in range(max(1, len(words) // 3)):
                words[rnd.randrange(len(words))] = f"w{rnd.getrandbits(24):x}"
        out.append((f"https://site{i % 13}.example/p{i}", " ".join(words)))
    return out


def holdout_texts(folder: str) -> list[tuple[str, str, str | None]]:
    """(url, main text, title) of an extracted holdout's pages, in its manifest's order (pages
    with no main text left out)."""
    import json

    from crawler_dedup.core.page.fingerprint import extract_step
    from crawler_dedup.core.verdict import Step

    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as fh:
        items = json.load(fh)["items"]
    out = []
    for item in items:
        url = f"http://{item.get('host') or 'holdout.test'}/{item['path']}"
        with open(os.path.join(folder, "site", item["path"]), "rb") as fh:
            kind, text, title = extract_step(fh.read(), url, 5_000_000)
        if kind == Step.TEXT and text:
            out.append((url, str(text), title))
    return out


def _work(args) -> tuple[int, float, float, int, int, int, int, int, int, int]:
    backend, where, pages, window, *rest = args
    batch = rest[0] if rest else 1
    from crawler_dedup import Deduplicator

    settings = {"backend": backend, "lmdb_sync": True, "window": window}
    if backend != "lmdb":
        settings.update(backend="redis", redis_url=where, redis_prefix="bench")
    else:
        settings.update(dir=where)
    with Deduplicator(**settings) as d:
        store = d.index.store

        def counts() -> tuple[int, int, int, int, int, int, int]:
            if backend == "lmdb":
                return 0, 0, 0, 0, 0, 0, 0
            if getattr(store, "spread", False):  # (batches waited for: the nodes of one are written at once)
                nodes = store.nodes
                return nodes.waits, nodes.trips, nodes.commands, 0, store.quiet, store.unchanged, store.apart
            return store.trips, store.trips, store.commands, store.conflicts, 0, 0, 0

        before = counts()
        t0, cpu0 = time.perf_counter(), time.process_time()
        if batch == 1:
            for url, text, *title in pages:
                d.check(url, text=text, title=title[0] if title else None)
        else:
            for at in range(0, len(pages), batch):
                prepared = [d.prepare(url, text=text, title=title[0] if title else None)
                            for url, text, *title in pages[at:at + batch]]
                d.decide_many([pending for _, pending in prepared if pending is not None])
        took, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        after = counts()
    return len(pages), took, cpu, *(a - b for a, b in zip(after, before))


def _server_cpu(backend: str, where: str) -> float:
    """CPU seconds the redis-servers behind `where` have used (INFO cpu, every node); 0 for LMDB."""
    if backend == "lmdb":
        return 0.0
    import redis

    client = redis.Redis.from_url(where)
    try:
        if client.info("cluster").get("cluster_enabled"):
            cluster = redis.RedisCluster.from_url(where)
            nodes = [cluster.get_redis_connection(n) for n in cluster.get_primaries()]
        else:
            cluster, nodes = None, [client]
        total = 0.0
        for node in nodes:
            info = node.info("cpu")
            total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
        if cluster is not None:
            cluster.close()
        return total
    finally:
        client.close()


def run(backend: str, where: str, stream, procs: int, window: int = 0, batch: int = 1):
    shares = [stream[i::procs] for i in range(procs)]
    t0 = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        servers = _server_cpu(backend, where)  # (an index is made by the first process: the servers' start is not counted)
        results = pool.map(_work, [(backend, where, share, window, batch) for share in shares])
        servers = _server_cpu(backend, where) - servers
    wall = time.perf_counter() - t0
    pages = sum(r[0] for r in results)
    busy = max(r[1] for r in results)
    return (pages / busy, wall, 1000 * sum(r[2] for r in results) / pages, 1000 * servers / pages,
            *(sum(r[i] for r in results) / pages for i in (3, 4, 5, 6, 7, 8, 9)))


def median_run(backend: str, make_where, stream, procs: int, repeat: int, window: int = 0, batch: int = 1):
    """The run with the median pages/s of `repeat` runs, each on a fresh index."""
    runs = []
    for n in range(repeat):
        with make_where(n) as where:
            runs.append(run(backend, where, stream, procs, window, batch))
    return sorted(runs)[len(runs) // 2]


def _free_port() -> int:
    while True:
        with socket.socket() as s, socket.socket() as bus:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port > 55000:
                continue
            try:
                bus.bind(("127.0.0.1", port + 10000))  # a cluster node's bus port
            except OSError:
                continue
            return port


def _server(work: str, port: int, *args: str) -> subprocess.Popen:
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", work, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    import redis

    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return proc
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")


def start_redis(work: str, nodes: int, cluster: bool | None = None) -> tuple[list[subprocess.Popen], str]:
    """One redis-server (nodes=1) or a cluster of `nodes` masters on 127.0.0.1; a node's URL.
    `cluster=True` with nodes=1: a cluster of one master holding every slot (the spread layout
    in one redis-server, to tell the layout's cost from the nodes')."""
    cluster = nodes > 1 if cluster is None else cluster
    if not cluster:
        port = _free_port()
        return [_server(work, port)], f"redis://127.0.0.1:{port}/0"
    import redis

    ports = sorted({_free_port() for _ in range(nodes * 3)})[:nodes]
    procs = [_server(work, p, "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{p}.conf") for p in ports]
    if nodes == 1:  # (redis-cli --cluster create wants 3 masters)
        redis.Redis(port=ports[0]).execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 16383)
    else:
        subprocess.run([shutil.which("redis-cli") or "redis-cli", "--cluster", "create",
                        *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
    for _ in range(400):
        if all(redis.Redis(port=p).cluster("info").get("cluster_state") == "ok" for p in ports):
            return procs, f"redis://127.0.0.1:{ports[0]}/0"
        time.sleep(0.05)
    raise SystemExit("the Redis Cluster did not come up")


@contextlib.contextmanager
def _lmdb_dir(tmp: str, n: int):
    yield os.path.join(tmp, f"lmdb-{n}")


@contextlib.contextmanager
def _redis(tmp: str, nodes: int, cluster: bool | None = None):
    work = tempfile.mkdtemp(dir=tmp)
    servers, url = start_redis(work, nodes, cluster)
    try:
        yield url
    finally:
        for server in servers:
            server.kill()
            server.wait()


def bytes_table(pages: int, rows: str = "slot,cluster-slot,spread") -> None:
    """Bytes a kept page (DEDUP_STORE_TEXT=False; crawl-like URLs and titles): the one-slot layout
    on one server (the baseline) and on a 3-node cluster, and the spread layout on the cluster.
    Between the 10th and the last tenth of the pages (past the fixed costs): the index's keys
    (MEMORY USAGE), Redis's used_memory_dataset, and the same with Redis's command statistics
    reset at both ends (Redis 7 keeps about 25 KB of latency percentiles a command name a node,
    in its dataset: a cost per server, not per page); then keys a page and the largest node's share."""
    import redis as redis_py

    from crawler_dedup import Deduplicator

    stream = texts(pages)
    print(f"{pages} pages (texts, a third of them copies), DEDUP_STORE_TEXT=False; bytes a kept page between "
          f"page {pages // 10} and page {pages}")
    print(f"{'layout':<24} {'kept':>7} {'key B/page':>11} {'x one server':>13} {'dataset B/page':>15} "
          f"{'w/o cmd stats':>14} {'keys/page':>10} {'largest node':>13} {'pages/s':>8}")
    base = None
    every = {"slot": ("one server, one slot", 1, "slot"), "cluster-slot": ("3-node cluster, one slot", 3, "slot"),
             "spread": ("3-node cluster, spread", 3, "spread")}
    for name, nodes, layout in (every[r] for r in rows.split(",")):
        with tempfile.TemporaryDirectory() as tmp, _redis(tmp, nodes) as url:
            if nodes == 1:
                clients = [redis_py.Redis.from_url(url)]
            else:
                cluster = redis_py.RedisCluster.from_url(url)
                clients = [cluster.get_redis_connection(n) for n in cluster.get_primaries()]

            def measure() -> tuple[int, int, int, list[int]]:
                keys = [list(c.scan_iter(count=1000)) for c in clients]
                used = sum(c.memory_usage(k, samples=0) or 0 for c, ks in zip(clients, keys) for k in ks)
                dataset = sum(c.info("memory")["used_memory_dataset"] for c in clients)
                for c in clients:
                    c.config_resetstat()
                plain = sum(c.info("memory")["used_memory_dataset"] for c in clients)
                return used, dataset, plain, [len(k) for k in keys]

            kept, marks = 0, []
            t0 = time.perf_counter()
            with Deduplicator(backend="redis", redis_url=url, redis_prefix="bytes", store_text=False,
                              redis_layout=layout) as d:
                for n, (url_, text) in enumerate(stream, 1):
                    title = " ".join(text.split()[:9]).title() + " | The Example Daily"
                    page = f"https://news.example.com/2026/11/section/{url_.rsplit('/', 1)[1]}-story-slug.html"
                    kept += d.check(page, text=text, title=title).action == "keep"
                    if n in (pages // 10, pages):
                        marks.append((kept, *measure()))
            seconds = time.perf_counter() - t0
            (k0, u0, d0, p0, _), (k1, u1, d1, p1, counts) = marks
            per = (u1 - u0) / (k1 - k0)
            base = base or per  # (the first row given is the baseline)
            print(f"{name:<24} {k1:>7} {per:>11.0f} {per / base:>13.2f} {(d1 - d0) / (k1 - k0):>15.0f} "
                  f"{(p1 - p0) / (k1 - k0):>14.0f} {sum(counts) / k1:>10.2f} {max(counts) / sum(counts):>13.2f} "
                  f"{pages / seconds:>8.0f}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--procs", default="1,4,8")
    ap.add_argument("--repeat", type=int, default=3, help="runs of each row; the median is shown")
    ap.add_argument("--window", type=int, default=0, help="DEDUP_WINDOW in seconds (2: pages expire during the run)")
    ap.add_argument("--bytes", type=int, metavar="PAGES", help="instead: bytes a kept page at PAGES pages")
    ap.add_argument("--batch", type=int, default=1, metavar="N",
                    help="pages decided N at a time in one transaction, as a crawl's group commit (DEDUP_COMMIT_BATCH)")
    ap.add_argument("--holdout", metavar="DIR", help="decide an extracted holdout's pages instead of the bundled stream")
    ap.add_argument("--rows", default="slot,cluster-slot,spread", help="--bytes: which layouts, the first the baseline")
    ap.add_argument("--cluster-nodes", default="3", metavar="N,..",
                    help="the clusters' sizes, a row each (1: the spread layout in one redis-server holding every slot, "
                         "to tell what the layout costs from what more nodes cost)")
    args = ap.parse_args(argv)
    if args.batch < 1:
        ap.error("--batch: 1 or more pages")
    try:
        clusters = [int(n) for n in args.cluster_nodes.split(",")]
    except ValueError:
        clusters = []
    if not clusters or min(clusters) < 1 or 2 in clusters:
        ap.error("--cluster-nodes: masters a cluster, 1 or 3 and more, comma-separated (e.g. 1,3)")
    if args.bytes:
        bytes_table(args.bytes, args.rows)
        return 0
    stream = holdout_texts(args.holdout)[:args.pages] if args.holdout else texts(args.pages)
    where = f"the holdout {args.holdout}'s" if args.holdout else "the bundled stream's"
    print(f"{len(stream)} pages ({where} texts, steps 2-8), decided by P processes sharing one index; pages/s = all pages "
          f"over the slowest process's time; this machine has {os.cpu_count()} cores; the median of "
          f"{args.repeat} runs a row, each on a fresh index" + (f"; pages decided {args.batch} at a time" if args.batch > 1 else ""))
    print(f"{'backend':<16} {'P':>3} {'pages/s':>9} {'x LMDB':>7} {'wall s':>7} {'cpu ms/page':>12} {'redis ms/page':>14} "
          f"{'trips/page':>11} {'node trips/page':>16} {'commands/page':>14} {'reruns/page':>12} {'quiet/page':>11} {'same/page':>10} {'apart/page':>11}")
    for procs in [int(p) for p in args.procs.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            lmdb_rate, lmdb_wall, lmdb_cpu, *_ = median_run("lmdb", lambda n: _lmdb_dir(tmp, n), stream, procs,
                                                              args.repeat, args.window, args.batch)
            print(f"{'lmdb':<16} {procs:>3} {lmdb_rate:>9.0f} {1.0:>7.2f} {lmdb_wall:>7.1f} {lmdb_cpu:>12.2f}", flush=True)
            rows = [("redis", 1, False)] + [(f"redis cluster{'' if n == 3 else f' {n}'}", n, True) for n in clusters]
            for name, nodes, cluster in rows:
                rate, wall, cpu, servers, trips, node_trips, commands, reruns, quiet, same, apart = median_run(
                    name, lambda n, nodes=nodes, cluster=cluster: _redis(tmp, nodes, cluster), stream, procs,
                    args.repeat, args.window, args.batch)
                print(f"{name:<16} {procs:>3} {rate:>9.0f} {rate / lmdb_rate:>7.2f} {wall:>7.1f} {cpu:>12.2f} "
                      f"{servers:>14.2f} {trips:>11.1f} {node_trips:>16.1f} {commands:>14.1f} {reruns:>12.3f} {quiet:>11.2f} {same:>10.2f} {apart:>11.2f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
