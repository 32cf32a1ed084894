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
    """serve(root=None, routes=None, validators="none") -> started PageServer on 127.0.0.1, stopped after the test."""
    servers = []

    def start(root=None, routes=None, validators="none"):
        server = PageServer(root, routes, validators).start()
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


def start_redis(port: int, work, *args: str):
    """redis-server on 127.0.0.1:port (its files in `work`), started and answering; skips the
    test when redis-server is not installed (.ci/run installs it)."""
    import shutil
    import time

    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    proc = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(work), *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    import redis

    client = redis.Redis(port=port)
    try:
        for _ in range(200):
            try:
                client.ping()
                return proc
            except redis.ConnectionError:
                time.sleep(0.05)
    finally:
        client.close()
    proc.kill()
    pytest.fail(f"redis-server did not start on port {port}")


def free_port(bus: bool = False) -> int:
    """A free 127.0.0.1 port; bus: with port + 10000 free too (a cluster node's bus)."""
    import socket

    while True:
        with socket.socket() as s, socket.socket() as other:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            if not bus:
                return port
            if port > 55000:
                continue
            try:
                other.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
            return port


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server on a free 127.0.0.1 port for the session; yields its URL."""
    port = free_port()
    proc = start_redis(port, tmp_path_factory.mktemp("redis"), "--appendonly", "no")
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(timeout=10)


def start_cluster(work, *args: str) -> tuple[list, list[int], str]:
    """A 3-node Redis Cluster on 127.0.0.1 (no replicas): its processes, ports and a node's URL;
    `args` go to every redis-server (e.g. "--appendonly", "yes" for a node that restarts whole)."""
    import shutil
    import time

    import redis

    cli_exe = shutil.which("redis-cli")
    if cli_exe is None:
        pytest.skip("redis-cli is not installed (apt-get install redis-server; .ci/run does)")
    ports: list[int] = []
    while len(ports) < 3:
        port = free_port(bus=True)
        if port not in ports:
            ports.append(port)
    procs = []
    try:
        for port in ports:
            procs.append(cluster_node(port, work, *args))
        subprocess.run([cli_exe, "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports], "--cluster-replicas", "0",
                        "--cluster-yes"], check=True, capture_output=True, timeout=30)
        wait_cluster_ok(ports)
    except BaseException:
        for proc in procs:
            proc.kill()
        raise
    return procs, ports, f"redis://127.0.0.1:{ports[0]}/0"


def cluster_node(port: int, work, *args: str):
    return start_redis(port, work, "--appendonly", "no", "--cluster-enabled", "yes",
                       "--cluster-config-file", f"nodes-{port}.conf", *args)


def wait_cluster_ok(ports: list[int], tries: int = 400) -> None:
    import time

    import redis

    for _ in range(tries):
        try:
            if all(redis.Redis(port=p).cluster("info").get("cluster_state") == "ok" for p in ports):
                return
        except redis.ConnectionError:
            pass
        time.sleep(0.05)
    pytest.fail("the Redis Cluster did not come up")


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory):
    """A real 3-node Redis Cluster on 127.0.0.1 (no replicas) for the session; yields a node's URL."""
    procs, _, url = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)


def write_plain_model(folder) -> str:
    """A model file (DEDUP_MODEL) that calls a weighed pair a copy when its resemblance is 0.5 or
    more, as a plain near-duplicate check does: for tests of what surrounds the decision (claims,
    revisits, canonicals, the shell) on made-up texts the shipped score was never fitted on (it
    keeps many of them apart: two made-up texts of 120 words with no title to weigh)."""
    import os

    from crawler_dedup.core.decide.model import Model, Term
    from crawler_dedup.tools import fit

    path = os.path.join(str(folder), "plain.json")
    fit.write(Model(None, 0.0, 0.5, (Term("resemblance", "value", "resemblance"),), (50.0,), -25.0), path)
    return path


@pytest.fixture(scope="session")
def plain_model(tmp_path_factory) -> str:
    return write_plain_model(tmp_path_factory.mktemp("model"))


@pytest.fixture
def zombie():
    """The pid of a process that has exited and is not reaped yet: a zombie, as a crawler just
    killed is until its parent reaps it (`kill -0` still finds it)."""
    import time

    child = subprocess.Popen(["true"])
    try:
        for _ in range(500):
            with open(f"/proc/{child.pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.01)
        else:
            raise AssertionError("the child never exited")
        yield child.pid
    finally:
        child.wait()
