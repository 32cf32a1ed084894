import gzip
import json
import os
import re
import subprocess
import sys
from importlib import resources

import pytest

from crawler_dedup.demo.server import PageServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED_DATA = os.path.join(ROOT, "..", "shared", "data")


def _bundle():
    root = resources.files("crawler_dedup.demo") / "pages"
    return root, json.loads((root / "manifest.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def articles():
    """The bundled real article pages: list of (html bytes, gold article text)."""
    root, manifest = _bundle()
    return [(gzip.decompress((root / a["file"]).read_bytes()), a["body"]) for a in manifest["articles"]]


@pytest.fixture(scope="session")
def same_site_pairs():
    root, manifest = _bundle()
    return [tuple(gzip.decompress((root / f).read_bytes()) for f in p["files"]) for p in manifest["pairs"]]


@pytest.fixture
def serve():
    """serve(root=None, routes=None) -> started PageServer on 127.0.0.1, stopped after the test."""
    servers = []

    def start(root=None, routes=None):
        server = PageServer(root, routes).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def scrapy_crawl(*args, cwd=ROOT, timeout=180):
    """`scrapy crawl pages ...` in a subprocess, as a user runs it from the project folder."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "pages", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
    )


def scrapy_runspider(*args, timeout=180):
    """`scrapy runspider tests/spiders/items_spider.py ...` from the project folder."""
    spider = os.path.join(ROOT, "tests", "spiders", "items_spider.py")
    return subprocess.run([sys.executable, "-m", "scrapy", "runspider", spider, *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def make_site(folder, pages: dict) -> str:
    """Write {file name: bytes} into `folder` (created) and return its path."""
    folder.mkdir()
    for name, body in pages.items():
        (folder / name).write_bytes(body)
    return str(folder)


def dedup_stats(log: str) -> dict[str, int]:
    """The dedup/* counters from Scrapy's closing stats dump."""
    return {k: int(v) for k, v in re.findall(r"'(dedup/[^']+)': (\d+)", log)}


def write_urls(path, urls):
    path.write_text("".join(u + "\n" for u in urls), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="session")
def demo_out(tmp_path_factory):
    """`crawler-dedup demo --out DIR` run once: DIR holds droplog.jsonl, index/ and site/."""
    out = tmp_path_factory.mktemp("demo") / "out"
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "demo", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def cli(*args, timeout=120, **kw):
    """`crawler-dedup ARGS` in a subprocess, output piped (so no progress bar)."""
    return subprocess.run([sys.executable, "-m", "crawler_dedup", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, **kw)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server on a free 127.0.0.1 port for the session (`.ci/run` installs it);
    yields its URL."""
    import shutil
    import socket
    import time

    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    import redis

    client = redis.Redis.from_url(url)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    else:
        proc.kill()
        pytest.fail("redis-server did not start")
    yield url
    client.close()
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A real 3-node Redis Cluster on 127.0.0.1 (no replicas) for the session; yields a node's URL."""
    import shutil
    import socket
    import time

    exe, cli_exe = shutil.which("redis-server"), shutil.which("redis-cli")
    if exe is None or cli_exe is None:
        pytest.skip("redis-server / redis-cli are not installed (apt-get install redis-server; .ci/run does)")
    work = tmp_path_factory.mktemp("redis-cluster")
    ports: list[int] = []
    procs = []
    while len(ports) < 3:  # a node also listens on its port + 10000 (the cluster bus)
        with socket.socket() as s, socket.socket() as bus:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if port > 55000 or port in ports:
                continue
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
            ports.append(port)
    for port in ports:
        procs.append(subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes", "--cluster-config-file",
             f"nodes-{port}.conf", "--save", "", "--appendonly", "no", "--dir", str(work)],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))
    import redis

    try:
        for port in ports:
            client = redis.Redis(port=port)
            for _ in range(200):
                try:
                    client.ping()
                    break
                except redis.ConnectionError:
                    time.sleep(0.05)
        subprocess.run([cli_exe, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas", "0",
                        "--cluster-yes"], check=True, capture_output=True, timeout=30)
        for _ in range(200):
            if all(redis.Redis(port=p).cluster("info").get("cluster_state") == "ok" for p in ports):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the Redis Cluster did not come up")
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)
