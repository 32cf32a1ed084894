"""Several `scrapy crawl pages` processes sharing one index on a real Redis Cluster, over the
benchmark's holdout pages, their drop logs merged and scored, and what the index costs in Redis.

    python benchmarks/cluster_crawl.py --holdout DIR [--scorer ../shared/holdout-dev] [--procs 4]
        [--nodes 3] [--one-host] [--limit N] [--settings DEDUP_STORE_TEXT=False ...]

DIR is an extracted holdout (manifest.json and site/, as `run_holdout.py` reads it). Each process
crawls every PROCS-th URL; the pages are served on 127.0.0.1 (as their own hosts through a proxy,
or all on one host with --one-host). Prints one JSON line: precision and recall of the merged
drop logs (the holdout's scorer), the keys on each node and the largest node's share, the
index's keys (MEMORY USAGE) a kept page, and Redis's used_memory_dataset growth a kept page, with
and without Redis's command statistics (latency histograms, about 25 KB a command name a node:
see docs/distributed.md, "Memory and sizing").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from redis_backend import start_redis  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--holdout", required=True, type=Path, help="an extracted holdout: manifest.json and site/")
    ap.add_argument("--scorer", type=Path, default=HERE.parent.parent / "shared" / "holdout-dev",
                    help="the folder of run_holdout.py and score.py")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--one-host", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="the first N pages of the manifest only")
    ap.add_argument("--settings", nargs="*", default=["DEDUP_STORE_TEXT=False"])
    args = ap.parse_args(argv)
    sys.path.insert(0, str(args.scorer))
    import redis
    from run_holdout import serve
    from score import score

    manifest = json.loads((args.holdout / "manifest.json").read_text())
    if args.limit:
        manifest["items"] = manifest["items"][:args.limit]
    server = serve(args.holdout / "site")
    port = server.server_address[1]
    work = Path(tempfile.mkdtemp(prefix="cluster-crawl-"))
    nodes, url = start_redis(str(work), args.nodes)
    try:
        cluster = redis.RedisCluster.from_url(url)
        clients = [cluster.get_redis_connection(n) for n in cluster.get_primaries()]

        def dataset() -> int:
            return sum(c.info("memory")["used_memory_dataset"] for c in clients)

        for c in clients:
            c.config_resetstat()
        before = dataset()
        hosts = not args.one_host
        lines = [f"http://{it['host'] if hosts else f'127.0.0.1:{port}'}/{it['path']}\n" for it in manifest["items"]]
        env = dict(os.environ, http_proxy=f"http://127.0.0.1:{port}", no_proxy="") if hosts else dict(os.environ)
        procs, started = [], time.time()
        for i in range(args.procs):
            urls = work / f"urls{i}.txt"
            urls.write_text("".join(lines[i::args.procs]))
            cmd = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}", "-s", "DEDUP_BACKEND=redis",
                   "-s", f"DEDUP_REDIS_URL={url}", "-s", "DEDUP_REDIS_PREFIX=bench", "-s",
                   f"DEDUP_DROPLOG={work}/drop{i}.jsonl", "-s", f"DEDUP_DIR={work}/idx{i}", "-s", "LOG_LEVEL=INFO",
                   "-s", "ROBOTSTXT_OBEY=False", "-s", "HTTPCACHE_ENABLED=False",
                   "-s", "DEDUP_CLEAN_REQUESTS=False"]  # (each URL counted as asked)
            for setting in args.settings:
                cmd += ["-s", setting]
            log = open(work / f"log{i}.txt", "w")
            procs.append(subprocess.Popen(cmd, cwd=str(HERE.parent), env=env, stdout=log, stderr=subprocess.STDOUT))
        exits = [p.wait() for p in procs]
        seconds = time.time() - started
        drops, rules = {}, {}
        for i in range(args.procs):
            path = work / f"drop{i}.jsonl"
            for line in path.read_text().splitlines() if path.exists() else []:
                record = json.loads(line)
                if record["action"] == "dropped":
                    drops[urlparse(record["url"]).path.lstrip("/")] = urlparse(record.get("duplicate_of") or "").path.lstrip("/")
                    rules[record.get("rule")] = rules.get(record.get("rule"), 0) + 1
        scored = score(manifest, drops)
        keys = [list(c.scan_iter(count=1000)) for c in clients]
        kinds: dict[str, int] = {}
        for c, ks in zip(clients, keys):
            for k in ks:
                kind = _kind(k)
                kinds[kind] = kinds.get(kind, 0) + (c.memory_usage(k, samples=0) or 0)
        used = sum(kinds.values())
        meta = cluster.hgetall("{bench}:m")
        kept = max(1, len(manifest["items"]) - len(drops))
        grown = dataset() - before
        for c in clients:
            c.config_resetstat()
        plain = dataset() - before
        print(json.dumps({
            "mode": "one host" if args.one_host else "broad", "pages": len(manifest["items"]), "procs": args.procs,
            "exits": exits, "seconds": round(seconds, 1), "precision": scored.get("precision"),
            "recall": scored.get("recall"), "false_drops": scored.get("false_drops"), "rules": rules,
            "keys_per_node": [len(k) for k in keys], "largest_share": round(max(map(len, keys)) / max(1, sum(map(len, keys))), 3),
            "key_bytes_per_kept": round(used / kept),
            "key_bytes_per_kept_by_kind": {k: round(v / kept) for k, v in sorted(kinds.items())},
            "shards": {f.decode(): int(meta[f]) for f in (b"shards", b"growing", b"sweeping") if f in meta},
            "dataset_per_kept": round(grown / kept),
            "dataset_per_kept_without_command_stats": round(plain / kept)}))
        return 0 if not any(exits) else 1
    finally:
        for node in nodes:
            node.kill()
        server.shutdown()


def _kind(key: bytes) -> str:
    """What a key of the spread index holds: records, fetch entries, a family of shards (its level
    aside), the meta hash and growth's keys."""
    if key.startswith(b"{"):
        return "meta"
    mark = key.split(b":")[1]
    if mark == b"d":
        return "records"
    if mark == b"f":
        return "fetches (own keys)"
    family = {b"h": "shards", b"hm": "shards: postings", b"hb": "shards: simhash buckets", b"hf": "shards: fetches"}
    return family.get(mark.rstrip(b"0123456789"), mark.decode("latin-1"))


if __name__ == "__main__":
    sys.exit(main())
