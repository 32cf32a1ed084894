"""Decided pages a second with 1, 4 and 8 processes sharing one index: Redis beside LMDB, and the
Redis round trips and commands a page takes.

    python benchmarks/redis_backend.py [--pages 2000] [--procs 1,4,8]

Each process decides its share of one stream of real texts (the bundled demo articles, each with
copies at other URLs) through `Deduplicator.check(url, text=...)`: steps 2-8, extraction left
out, as in a crawl whose workers extract. A redis-server is started on 127.0.0.1 for the run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from importlib import resources


def texts(n: int, seed: int = 3) -> list[tuple[str, str]]:
    """n (url, text) pairs: the demo's articles and texts, and copies of them at other URLs (a
    third of the pages), in a fixed random order."""
    root = resources.files("crawler_dedup.demo") / "pages"
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    bodies = [a["body"] for a in manifest["articles"]] + [t["body"] for t in manifest["texts"]]
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


def _work(args) -> tuple[int, float, int, int]:
    backend, where, pages = args
    from crawler_dedup import Deduplicator

    settings = {"backend": backend, "lmdb_sync": True}
    if backend == "redis":
        settings.update(redis_url=where, redis_prefix="bench")
    else:
        settings.update(dir=where)
    with Deduplicator(**settings) as d:
        counter = _count_round_trips(d) if backend == "redis" else None
        t0 = time.perf_counter()
        for url, text in pages:
            d.check(url, text=text)
        took = time.perf_counter() - t0
        trips = counter() if counter else (0, 0)
    return len(pages), took, trips[0], trips[1]


def _count_round_trips(dedup):
    """Count the client's round trips (a command, or a pipeline) and the commands they carried."""
    client = dedup.index.store.client
    seen = {"trips": 0, "commands": 0}
    plain, pipe_cls = client.execute_command, client.pipeline

    def execute_command(*a, **kw):
        seen["trips"] += 1
        seen["commands"] += 1
        return plain(*a, **kw)

    def pipeline(*a, **kw):
        pipe = pipe_cls(*a, **kw)
        run = pipe.execute

        def execute(*ea, **ekw):
            seen["trips"] += 1
            seen["commands"] += len(pipe.command_stack)
            return run(*ea, **ekw)

        pipe.execute = execute
        return pipe

    client.execute_command, client.pipeline = execute_command, pipeline
    return lambda: (seen["trips"], seen["commands"])


def run(backend: str, where: str, stream, procs: int):
    shares = [stream[i::procs] for i in range(procs)]
    t0 = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(procs) as pool:
        results = pool.map(_work, [(backend, where, share) for share in shares])
    wall = time.perf_counter() - t0
    pages = sum(r[0] for r in results)
    busy = max(r[1] for r in results)
    return pages / busy, wall, sum(r[2] for r in results) / pages, sum(r[3] for r in results) / pages


def start_redis(work: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", work],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    import redis

    client = redis.Redis(port=port)
    for _ in range(200):
        try:
            client.ping()
            return proc, f"redis://127.0.0.1:{port}/0"
        except redis.ConnectionError:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit("redis-server did not start")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--procs", default="1,4,8")
    args = ap.parse_args(argv)
    stream = texts(args.pages)
    print(f"{args.pages} pages (texts, steps 2-8), decided by P processes sharing one index; pages/s = all pages "
          f"over the slowest process's time; this machine has {os.cpu_count()} cores")
    print(f"{'backend':<8} {'P':>3} {'pages/s':>9} {'x LMDB':>7} {'wall s':>7} {'trips/page':>11} {'commands/page':>14}")
    for procs in [int(p) for p in args.procs.split(",")]:
        with tempfile.TemporaryDirectory() as tmp:
            lmdb_rate, lmdb_wall, _, _ = run("lmdb", os.path.join(tmp, "lmdb"), stream, procs)
            server, url = start_redis(tmp)
            try:
                rate, wall, trips, commands = run("redis", url, stream, procs)
            finally:
                server.kill()
                server.wait()
        print(f"{'lmdb':<8} {procs:>3} {lmdb_rate:>9.0f} {1.0:>7.2f} {lmdb_wall:>7.1f} {'':>11} {'':>14}")
        print(f"{'redis':<8} {procs:>3} {rate:>9.0f} {rate / lmdb_rate:>7.2f} {wall:>7.1f} {trips:>11.1f} {commands:>14.1f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
