"""Many crawlers deciding as one through faults, Jepsen-style: several `scrapy crawl` processes
share one index on a real 3-node Redis Cluster (every node with appendonly yes, appendfsync
always) while this harness SIGKILLs crawlers, restarts nodes and moves slots between nodes.

    python benchmarks/cluster_faults.py [--holdout DIR [--one-host]] [--limit 800] [--procs 4]
        [--kills 6] [--restarts 2] [--reshard 300] [--seed 1] [--settings NAME=VALUE ...]

The pages: the first --limit pages of an extracted holdout (manifest.json and site/, as
run_holdout.py reads it; each page served under its own host through a proxy, or all on
127.0.0.1 with --one-host), else real pages each under three URLs (the page, a tracking URL,
the same text in other markup). Each crawler crawls every PROCS-th URL. The faults come at
points of the crawl's progress (a share of the URLs decided), in an order drawn from --seed: a
crawler SIGKILLed (then run again on the URLs it had not decided: no item stored, no drop-log
line), a node SIGKILLed and started again on its append-only file, --reshard slots migrated
from one node to another (redis-cli --cluster reshard) while the crawlers go on.

Then it checks what must hold, each a count that must be 0: URLs lost (neither stored nor in a
drop log); self-drops (a page dropped as a copy of its own URL); dangling drops (a drop naming a
page the index does not keep); `crawler-dedup index verify` problems; and it scores the drops
(the holdout's scorer, or the groups) against one process crawling the same stream on LMDB with
no fault: recall must be within 0.01 of it. Prints one JSON object. tests/test_cluster_faults.py
runs it small; docs/distributed.md quotes a run at 800 pages.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from killtest import SPIDER  # noqa: E402  (its Store pipeline writes what reached storage)


def _stored(path: Path) -> set[str]:
    """The URLs killtest's Store pipeline wrote down (a URL and whether it was indexed, a line each)."""
    return {line.split("\t")[0] for line in path.read_text().splitlines()} if path.exists() else set()


# -- the pages ---------------------------------------------------------------------------------

class Site:
    """Files to serve and the pages' URLs, each with its duplicate group."""

    def __init__(self, root: Path, pages: list[tuple[str, str]], manifest: dict | None = None, hosts: bool = False):
        self.root, self.pages, self.manifest, self.hosts = root, pages, manifest, hosts  # pages: (url, group)

    @classmethod
    def holdout(cls, folder: Path, limit: int, one_host: bool, port: int) -> "Site":
        manifest = json.loads((folder / "manifest.json").read_text())
        if limit:
            manifest["items"] = manifest["items"][:limit]
        pages = [(f"http://{it['host'] if not one_host else f'127.0.0.1:{port}'}/{it['path']}", it["group"])
                 for it in manifest["items"]]
        return cls(folder / "site", pages, manifest, hosts=not one_host)

    @classmethod
    def real(cls, work: Path, groups: int, port: int) -> "Site":
        """Real pages (../shared/data, else the bundled demo pages), three URLs each."""
        from pages import real_pages

        root = work / "site"
        root.mkdir(parents=True, exist_ok=True)
        pages = []
        for g, page in enumerate(real_pages(groups, distinct=True)):
            (root / f"p{g}.html").write_bytes(page)
            variant = page.replace(b"</head>", b"<script>var v=%d</script><!-- variant --></head>" % g, 1)
            (root / f"v{g}.html").write_bytes(variant if variant != page else b"<!-- variant -->" + page)
            base = f"http://127.0.0.1:{port}"
            pages += [(f"{base}/p{g}.html", str(g)), (f"{base}/p{g}.html?utm_source=news", str(g)),
                      (f"{base}/v{g}.html", str(g))]
        rnd = random.Random(groups)
        rnd.shuffle(pages)  # (a group's URLs on several crawlers, at several moments)
        return cls(root, pages)

    def score(self, drops: dict[str, str], scorer: Path | None) -> dict:
        """Precision and recall of drops {url: duplicate_of} (the holdout's scorer when there is one)."""
        if self.manifest is not None and scorer is not None:
            sys.path.insert(0, str(scorer))
            from score import score

            paths = {urlsplit(u).path.lstrip("/"): urlsplit(d).path.lstrip("/") for u, d in drops.items()}
            got = score(self.manifest, paths)
            return {k: got.get(k) for k in ("precision", "recall", "true_drops", "false_drops", "expected")}
        group = dict(self.pages)
        sizes: dict[str, int] = {}
        for _, g in self.pages:
            sizes[g] = sizes.get(g, 0) + 1
        true = sum(1 for u, d in drops.items() if group.get(u) == group.get(d))
        expected = sum(n - 1 for n in sizes.values())
        return {"precision": round(true / len(drops), 4) if drops else 1.0,
                "recall": round(true / expected, 4) if expected else 1.0, "true_drops": true,
                "false_drops": len(drops) - true, "expected": expected}


# -- the cluster ---------------------------------------------------------------------------------

class Cluster:
    """Three masters on 127.0.0.1, each with its own folder, appendonly yes and appendfsync always."""

    def __init__(self, work: Path):
        from redis_backend import _free_port

        self.work = work
        self.ports = sorted({_free_port() for _ in range(9)})[:3]
        self.procs = [self._start(p) for p in self.ports]
        subprocess.run([shutil.which("redis-cli") or "redis-cli", "--cluster", "create",
                        *[f"127.0.0.1:{p}" for p in self.ports], "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        self.wait_ok()
        self.url = f"redis://127.0.0.1:{self.ports[0]}/0"

    def _start(self, port: int) -> subprocess.Popen:
        folder = self.work / f"node-{port}"
        folder.mkdir(exist_ok=True)
        proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--port", str(port), "--bind", "127.0.0.1",
                                 "--dir", str(folder), "--save", "", "--appendonly", "yes", "--appendfsync", "always",
                                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        import redis

        for _ in range(400):
            try:
                redis.Redis(port=port).ping()
                return proc
            except redis.exceptions.BusyLoadingError:
                time.sleep(0.05)
            except redis.ConnectionError:
                time.sleep(0.05)
        raise SystemExit(f"redis-server on port {port} did not start")

    def wait_ok(self, tries: int = 600) -> None:
        import redis

        for _ in range(tries):
            try:
                if all(redis.Redis(port=p).cluster("info").get("cluster_state") == "ok" for p in self.ports):
                    return
            except redis.RedisError:
                pass
            time.sleep(0.05)
        raise SystemExit("the Redis Cluster did not come back")

    def restart(self, n: int, down_s: float) -> None:
        """Node n SIGKILLed, down for `down_s`, started again on its append-only file."""
        self.procs[n].send_signal(signal.SIGKILL)
        self.procs[n].wait()
        time.sleep(down_s)
        self.procs[n] = self._start(self.ports[n])
        self.wait_ok()

    def reshard(self, src: int, dst: int, slots: int) -> None:
        import redis

        ids = [redis.Redis(port=p).execute_command("CLUSTER MYID") for p in self.ports]
        ids = [i.decode() if isinstance(i, bytes) else i for i in ids]
        subprocess.run([shutil.which("redis-cli") or "redis-cli", "--cluster", "reshard", f"127.0.0.1:{self.ports[0]}",
                        "--cluster-from", ids[src], "--cluster-to", ids[dst], "--cluster-slots", str(slots),
                        "--cluster-yes", "--cluster-pipeline", "20"], check=True, capture_output=True, timeout=600)

    def stop(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait()


# -- the crawlers -------------------------------------------------------------------------------

class Crawler:
    """One crawler process's share of the URLs, run again on what it had not decided after a kill."""

    def __init__(self, n: int, urls: list[str], work: Path, spider: Path, settings: list[str], env: dict):
        self.n, self.urls, self.work, self.spider, self.settings, self.env = n, urls, work, spider, settings, env
        self.stored = work / f"stored-{n}.txt"
        self.droplog = work / f"drop-{n}.jsonl"
        self.proc: subprocess.Popen | None = None
        self.runs = self.kills = 0
        self.tracebacks = 0
        self.killed = False  # the last run was killed: run it again on what it had not decided

    def decided(self) -> set[str]:
        from crawler_dedup.droplog import read_droplog

        out = _stored(self.stored)
        if self.droplog.exists():
            out |= {r["url"] for r in read_droplog(str(self.droplog))}
        return out

    def start(self) -> bool:
        """Run on the URLs not decided yet; False when none are left."""
        left = [u for u in self.urls if u not in self.decided()]
        if not left:
            return False
        self.runs += 1
        urls = self.work / f"urls-{self.n}-{self.runs}.txt"
        urls.write_text("".join(u + "\n" for u in left))
        cmd = [sys.executable, "-m", "scrapy", "runspider", str(self.spider), "-a", f"urls={urls}",
               "-s", f"KILLTEST_STORED={self.stored}", "-s", f"DEDUP_DROPLOG={self.droplog}",
               "-s", f"DEDUP_DIR={self.work / f'dir-{self.n}'}", "-s", f"LOG_FILE={self.work / f'log-{self.n}-{self.runs}.txt'}",
               "-s", "DEDUP_CLEAN_REQUESTS=False"]  # (each URL counted as asked: a tracking URL downloaded)
        for setting in self.settings:
            cmd += ["-s", setting]
        self.proc = subprocess.Popen(cmd, cwd=str(self.work), env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        return True

    def kill(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            return False
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.kills += 1
        self.killed = True
        return True

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def finish_run(self) -> None:
        """After a run ended: a traceback in a run that was not killed is a failure."""
        log = self.work / f"log-{self.n}-{self.runs}.txt"
        if log.exists() and "Traceback" in log.read_text(errors="replace"):
            self.tracebacks += 1


def run(site: Site, work: Path, procs: int, kills: int, restarts: int, reshard: int, seed: int,
        settings: list[str], scorer: Path | None, port_server, say=print, delay: float = 0.02) -> dict:
    """The fault run and its checks (see the module's docstring); the report."""
    rnd = random.Random(seed)
    cluster = Cluster(work)
    prefix = "faults"
    spider = work / "faultspider.py"
    spider.write_text(SPIDER)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if site.hosts:
        env.update(http_proxy=f"http://127.0.0.1:{port_server}", no_proxy="")
    common = [f"DEDUP_BACKEND=redis", f"DEDUP_REDIS_URL={cluster.url}", f"DEDUP_REDIS_PREFIX={prefix}",
              "CONCURRENT_REQUESTS=2", f"DOWNLOAD_DELAY={delay}", *settings]
    urls = [u for u, _ in site.pages]
    crawlers = [Crawler(i, urls[i::procs], work, spider, common, env) for i in range(procs)]
    faults = ["kill"] * kills + ["restart"] * restarts + (["reshard"] if reshard else [])
    rnd.shuffle(faults)
    marks = sorted(rnd.uniform(0.1, 0.85) for _ in faults)  # the share of URLs decided when each comes
    node_ops: list[threading.Thread] = []
    done_faults: list[str] = []
    started = time.monotonic()
    try:
        for c in crawlers:
            c.start()
        while True:
            decided = sum(len(c.decided() & set(c.urls)) for c in crawlers)
            while faults and decided >= marks[len(done_faults)] * len(urls):
                fault = faults.pop(0)
                if fault == "kill":
                    live = [c for c in crawlers if c.running()]
                    if live:
                        rnd.choice(live).kill()
                elif any(t.is_alive() for t in node_ops):
                    faults.insert(0, fault)  # (one node operation at a time)
                    break
                elif fault == "restart":
                    node_ops.append(threading.Thread(target=cluster.restart, args=(rnd.randrange(3), 1.0)))
                    node_ops[-1].start()
                else:
                    src, dst = rnd.sample(range(3), 2)
                    node_ops.append(threading.Thread(target=cluster.reshard, args=(src, dst, reshard)))
                    node_ops[-1].start()
                done_faults.append(fault)
                say(f"  {time.monotonic() - started:6.1f} s  {decided}/{len(urls)} decided: {fault}")
            for c in crawlers:
                if c.proc is not None and not c.running():
                    again = c.killed or c.proc.returncode != 0
                    c.finish_run()
                    c.proc, c.killed = None, False
                    if again and c.runs < 20:
                        c.start()  # (on what it had not decided; nothing when all is decided)
            if not faults and not any(c.running() for c in crawlers) and not any(t.is_alive() for t in node_ops):
                break
            if not any(c.running() for c in crawlers) and faults:
                faults, marks = [], marks[:len(done_faults)]  # the crawl ended before the rest came
            time.sleep(0.1)
        seconds = time.monotonic() - started
        report = check(site, crawlers, cluster, prefix, scorer)
    finally:
        for c in crawlers:
            c.kill()
        cluster.stop()
    report.update(seconds=round(seconds, 1), faults=done_faults, runs=sum(c.runs for c in crawlers),
                  kills=sum(c.kills for c in crawlers))
    return report


def check(site: Site, crawlers: list[Crawler], cluster: Cluster, prefix: str, scorer: Path | None) -> dict:
    from crawler_dedup.core.index.neardup import NearDupIndex
    from crawler_dedup.core.page.site import canonical_url
    from crawler_dedup.droplog import kept_now, read_droplog
    from crawler_dedup.stores.redis import RedisStore

    stored: set[str] = set()
    lines: list[dict] = []
    said: dict[str, str] = {}  # URL -> what became of it, and on which crawler (a recall miss's story)
    for c in crawlers:
        stored |= _stored(c.stored)
        said.update((u, f"stored by crawler {c.n}") for u in _stored(c.stored))
        mine = list(read_droplog(str(c.droplog))) if c.droplog.exists() else []
        said.update((r["url"], f"crawler {c.n}: {r.get('action')} {r.get('reason')}, rule {r.get('rule')}, "
                               f"of {r.get('duplicate_of')}") for r in mine)
        lines += mine
    dropped = {r["url"] for r in lines}
    lost = [u for u, _ in site.pages if u not in stored and u not in dropped]
    copies = [r for r in lines if r.get("reason") not in ("unchanged", "superseded")]
    selfdrops = [r for r in copies if canonical_url(r["url"]) == canonical_url(r.get("duplicate_of") or "")]
    now = kept_now(lines)  # (a drop naming a page replaced later by its clean URL names that page)

    store = RedisStore(cluster.url, prefix, readonly=True)
    index = NearDupIndex.open(store)
    try:
        named = sorted({now(r["duplicate_of"]) for r in copies if r.get("duplicate_of")})
        kept = index.read(lambda t: [index.by_url(t, u) is not None for u in named])
    finally:
        store.close()
    dangling = [u for u, k in zip(named, kept) if not k]
    twice: dict[str, list[str]] = {}  # (a group stored under more than one URL)
    for u, g in site.pages:
        if u in stored:
            twice.setdefault(g, []).append(u)
    group = dict(site.pages)
    true: dict[str, int] = {}  # group -> its URLs dropped as a copy of one of its URLs
    for r in lines:
        if r.get("reason") != "unchanged" and group.get(r["url"]) == group.get(r.get("duplicate_of") or ""):
            true[group[r["url"]]] = true.get(group[r["url"]], 0) + 1
    missed = [{u: said.get(u, "neither stored nor dropped") for u, g in site.pages if g == gg}
              for gg in dict.fromkeys(g for _, g in site.pages)
              if true.get(gg, 0) < sum(1 for _, g in site.pages if g == gg) - 1]
    verify = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "verify", "--redis", cluster.url,
                             "-s", f"DEDUP_REDIS_PREFIX={prefix}"], capture_output=True, text=True, timeout=600)
    # a superseded page left the kept set as a copy of its clean URL's: scored as that drop
    scored = site.score({r["url"]: r["duplicate_of"] for r in lines if r.get("reason") != "unchanged"}, scorer)
    return {"pages": len(site.pages), "urls lost": len(lost), "self-drops": len(selfdrops),
            "dangling drops": len(dangling), "verify": "clean" if verify.returncode == 0 else verify.stdout[-500:],
            "tracebacks": sum(c.tracebacks for c in crawlers), "claim drops": sum(r.get("rule") == "claim" for r in lines),
            **scored, "examples": {"lost": lost[:3], "dangling": dangling[:3], "self-drops": selfdrops[:3],
                                      "stored twice": [us for us in twice.values() if len(us) > 1][:3],
                                      "missed groups": missed[:3]}}


def one_process(site: Site, work: Path, settings: list[str], scorer: Path | None, port_server) -> dict:
    """The same stream crawled by one process on LMDB, no fault: the recall to hold."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if site.hosts:
        env.update(http_proxy=f"http://127.0.0.1:{port_server}", no_proxy="")
    urls = work / "urls-one.txt"
    urls.write_text("".join(u + "\n" for u, _ in site.pages))
    log = work / "drop-one.jsonl"
    cmd = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}", "-s", f"DEDUP_DIR={work / 'one'}",
           "-s", f"DEDUP_DROPLOG={log}", "-s", "ROBOTSTXT_OBEY=False", "-s", "LOG_LEVEL=WARNING", "-s", "CONCURRENT_REQUESTS=2",
           "-s", "DEDUP_CLEAN_REQUESTS=False"]
    for setting in settings:
        cmd += ["-s", setting]
    subprocess.run(cmd, cwd=str(ROOT), env=env, capture_output=True, timeout=3600, check=True)
    from crawler_dedup.droplog import read_droplog

    drops = {r["url"]: r["duplicate_of"] for r in read_droplog(str(log)) if r.get("reason") not in ("unchanged",)}
    return site.score(drops, scorer)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--holdout", type=Path, help="an extracted holdout: manifest.json and site/")
    ap.add_argument("--scorer", type=Path, default=ROOT.parent / "shared" / "holdout-dev")
    ap.add_argument("--one-host", action="store_true")
    ap.add_argument("--limit", type=int, default=800, help="the holdout's first N pages")
    ap.add_argument("--groups", type=int, default=40, help="without --holdout: real pages, three URLs each")
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--kills", type=int, default=6)
    ap.add_argument("--restarts", type=int, default=2)
    ap.add_argument("--reshard", type=int, default=300, help="slots moved once mid-crawl (0: none)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--settings", nargs="*", default=["DEDUP_STORE_TEXT=False"])
    ap.add_argument("--keep", action="store_true", help="keep the work folder (drop logs, stored URLs, logs) to read")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cluster-faults-"))
    report = faults_run(args.holdout, args.one_host, args.limit, args.groups, args.procs, args.kills, args.restarts,
                        args.reshard, args.seed, args.settings, args.scorer, work)
    print(json.dumps(report))
    if args.keep:
        print(f"work folder kept: {work}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)
    bad = report["urls lost"] or report["self-drops"] or report["dangling drops"] or report["verify"] != "clean"
    return 1 if bad else 0


def faults_run(holdout: Path | None, one_host: bool, limit: int, groups: int, procs: int, kills: int, restarts: int,
               reshard: int, seed: int, settings: list[str], scorer: Path | None, work: Path, say=print,
               delay: float = 0.02) -> dict:
    """Serve the pages, run the faults and the one process; the report with both."""
    import functools
    import http.server

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):  # (a proxied request's path is a whole URL: its path is the file)
            self.path = urlsplit(self.path).path or "/"
            super().do_GET()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(work / "site")))
    port = server.server_address[1]
    if holdout is not None:
        site = Site.holdout(holdout, limit, one_host, port)
        (work / "site").symlink_to(site.root)
    else:
        site = Site.real(work, groups, port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        say(f"{len(site.pages)} pages, {procs} crawlers, {kills} kills, {restarts} node restarts, {reshard} slots moved")
        report = run(site, work, procs, kills, restarts, reshard, seed, settings, scorer if holdout else None, port, say,
                     delay)
        one = one_process(site, work, settings, scorer if holdout else None, port)
        report["one process"] = one
        report["recall within 0.01 of one process"] = (report["recall"] or 0) >= (one["recall"] or 0) - 0.01
        return report
    finally:
        server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
