"""DEDUP_BACKEND=redis against a real redis-server: the shipped store-contract suite, and the
Deduplicator and the after-crawl commands on it."""

import os
import shutil
import sys

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.exceptions import StoreError
from crawler_dedup.stores.contract import StoreContract

redis = pytest.importorskip("redis")


class TestRedisStore(StoreContract):
    persistent = True  # the server keeps the data while it runs
    layout = "auto"

    @pytest.fixture(autouse=True)
    def _server(self, redis_server):
        self.url = redis_server

    def new_store(self, location=None, readonly=False):
        from crawler_dedup.stores.redis import RedisStore

        prefix = os.path.basename(location or self.fresh_location()) + os.path.basename(os.path.dirname(location or ""))
        return RedisStore(self.url, prefix=prefix or "x", readonly=readonly, layout=self.layout)

    def fresh_location(self):
        return os.path.join(super().fresh_location(), os.urandom(6).hex())


def test_a_duplicate_is_dropped_across_two_deduplicators_on_one_redis(redis_server, articles):
    settings = dict(backend="redis", redis_url=redis_server, redis_prefix="two-procs")
    with Deduplicator(**settings) as one, Deduplicator(**settings) as two:
        assert one.check("https://a/1", text=articles[0][1]).action == "keep"
        v = two.check("https://b/1", text=articles[0][1])
    assert (v.action, v.duplicate_of) == ("drop", "https://a/1")


def test_boilerplate_one_writer_learned_is_measured_by_another(redis_server):
    from .test_boilerplate import SHELL, THREADS, article

    settings = dict(backend="redis", redis_url=redis_server, redis_prefix="boilerplate", boilerplate=True)
    with Deduplicator(**settings) as one, Deduplicator(**settings) as two:
        assert not one.check("https://valley.example/a1", html=article(1, 1)).would_drop
        assert not one.check(f"https://valley.example/{THREADS[0][0]}", html=THREADS[0][1]).would_drop
        v = two.check(f"https://valley.example/{THREADS[1][0]}", html=THREADS[1][1])
        bare = two.check("https://valley.example/app/2", html=SHELL.replace(b"<main>", b"<main><!-- 2 -->"))
        copy = two.check("https://valley.example/a1?utm_source=x", html=article(1, 1))
    # the sign-up block one's page showed outside its text is the site's template for two's pages
    assert bare.weighing.measures["sitelines_page"] == bare.weighing.measures["sitelines_kept"] == 1.0
    assert not v.would_drop and v.scored_apart
    assert copy.would_drop


@pytest.mark.parametrize("where", ["redis_server", "redis_cluster"])
def test_writers_racing_on_every_group_keep_it_once(where, request, articles):
    """4 Deduplicators (each its own connection, as on 4 machines) check a copy of the same article
    at the same moment, group after group: the optimistic commit lets one keep it, the others run
    again and drop. (Without the WATCHes, most groups are kept twice or more.)"""
    import threading

    url = request.getfixturevalue(where)
    settings = dict(backend="redis", redis_url=url, redis_prefix="race-" + where)
    start = threading.Barrier(4)
    kept: dict[int, list[str]] = {g: [] for g in range(len(articles))}
    errors: list[BaseException] = []

    def writer(n):
        try:
            with Deduplicator(**settings) as d:
                for g, (_, body) in enumerate(articles):
                    words = body.split()
                    words[n * 7 % len(words)] = f"edit{n}"  # a near copy, not a byte copy
                    start.wait(timeout=60)
                    v = d.check(f"https://site{n}.example/{g}", text=" ".join(words))
                    if v.action == "keep":
                        kept[g].append(v.url)
        except BaseException as exc:  # (reported below, with the thread's traceback)
            errors.append(exc)
            start.abort()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert {g: len(urls) for g, urls in kept.items()} == {g: 1 for g in kept}, kept


def test_an_unreachable_redis_fails_clearly_and_a_crawl_keeps_its_pages(articles, caplog):
    """Opening waits a little for a server that may be restarting (DEDUP_REDIS_RETRY, at most
    10 s), saying so, then fails with one clear line."""
    import logging

    with caplog.at_level(logging.WARNING), \
            pytest.raises(StoreError, match=r"cannot open the Redis index redis://127.0.0.1:1/0.*tried for 1 s"):
        Deduplicator(backend="redis", redis_url="redis://127.0.0.1:1/0", redis_retry=1).open()
    assert "does not answer" in caplog.text and "waiting up to 1 s" in caplog.text


def test_scans_page_through_many_keys_and_see_the_transactions_own_changes(redis_server):
    from crawler_dedup.stores.base import MULTI, SINGLE, u64
    from crawler_dedup.stores.redis import RedisStore

    store = RedisStore(redis_server, prefix="scan-pages")
    store.open()
    store.ensure({"one": SINGLE, "many": MULTI})
    store.write(lambda t: [t.put("one", u64(i), b"v") for i in range(0, 300, 2)])  # 150 keys, even ids

    def check(t):
        for i in range(0, 40, 4):
            t.delete("one", u64(i))  # 10 gone
        for i in (1, 3, 301, 299, 151):
            t.put("one", u64(i), b"new")  # 5 new, between and after the stored ones
        want = sorted({i for i in range(0, 300, 2) if not (i < 40 and i % 4 == 0)} | {1, 3, 151, 299, 301})
        got = [int.from_bytes(k, "big") for k, _ in t.scan("one", b"", 1000)]
        assert got == want and t.count("one") == len(want)
        part = [int.from_bytes(k, "big") for k, _ in t.scan("one", u64(100), 20)]
        assert part == [i for i in want if i >= 100][:20]

    store.write(check)
    store.close()


def _start_redis(port, work):
    from .conftest import start_redis

    return start_redis(port, work, "--appendonly", "yes", "--appendfsync", "always")


def test_a_redis_restart_mid_crawl_keeps_pages_counts_errors_and_dedup_resumes(redis_server, tmp_path, articles):
    """In process, through the extension and the downloader middleware: the server is killed
    between pages and started again (its append-only file keeps the index)."""
    import asyncio

    from scrapy import Request
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from crawler_dedup.scrapy.extension import DedupExtension
    from crawler_dedup.middleware import DedupMiddleware

    from .conftest import free_port

    port = free_port()
    server = _start_redis(port, tmp_path)
    crawler = get_crawler(settings_dict={
        "ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_BACKEND": "redis", "DEDUP_DIR": str(tmp_path / "d"),
        "DEDUP_REDIS_URL": f"redis://127.0.0.1:{port}/0", "DEDUP_LOGSTATS_INTERVAL": 0, "DEDUP_COMMIT_BATCH": 1,
        "DEDUP_WORKERS": 0})  # (no reactor runs here to hear back from a worker)
    ext = DedupExtension.of(crawler)
    ext.spider_opened(None)
    mw = DedupMiddleware.from_crawler(crawler)

    def fetch(url, html):
        request = Request(url)
        response = HtmlResponse(url, body=html, request=request)
        try:
            asyncio.run(mw.process_response(request, response))
            return "kept"
        except IgnoreRequest:
            return "dropped"

    try:
        assert fetch("https://a/0", articles[0][0]) == "kept"
        server.kill()
        server.wait()
        # Redis is gone: pages are kept, the failure counted (and logged once)
        assert [fetch(f"https://a/{i}", articles[0][0]) for i in (1, 2)] == ["kept", "kept"]
        assert crawler.stats.get_value("dedup/errors/store") == 2
        server = _start_redis(port, tmp_path)
        # back: the index kept before the restart is there, copies are dropped again
        assert fetch("https://a/3", articles[0][0]) == "dropped"
        assert fetch("https://a/4", articles[1][0]) == "kept"
        assert fetch("https://a/5", articles[1][0]) == "dropped"
        assert crawler.stats.get_value("dedup/errors/store") == 2 and crawler.stats.get_value("dedup/dropped") == 2
    finally:
        ext.spider_closed(None, "finished")
        ext.engine_stopped()
        server.kill()
        server.wait()


def test_closing_with_redis_gone_does_not_raise(tmp_path, articles):
    from .conftest import free_port

    port = free_port()
    server = _start_redis(port, tmp_path)
    d = Deduplicator(backend="redis", redis_url=f"redis://127.0.0.1:{port}/0").open()
    assert d.check("https://a/1", text=articles[0][1]).action == "keep"
    server.kill()
    server.wait()
    d.close()  # logged, not raised: the run stays marked open, like a killed crawl's
    assert d.index is None


@pytest.mark.parametrize("where", ["redis_server", "redis_cluster"])
def test_four_crawler_processes_on_one_redis_keep_each_group_once(where, request, tmp_path, articles, serve):
    """4 `scrapy crawl pages` processes at once, each fed a quarter of one URL list in which every
    page has 3 copies at other URLs, spread so that all 4 processes race on every group; on one
    server and on a 3-node cluster."""
    import json
    import subprocess
    import sys
    import time

    from crawler_dedup.droplog import read_droplog

    from .conftest import ROOT, make_site, write_urls

    redis_server = request.getfixturevalue(where)
    groups = 10
    pages = {f"{v}{g}.html": articles[g][0] for g in range(groups) for v in "abcd"}
    base = serve(make_site(tmp_path / "site", pages)).base_url
    procs, outs = [], []
    settings = ["-s", "DEDUP_BACKEND=redis", "-s", f"DEDUP_REDIS_URL={redis_server}", "-s", "DEDUP_REDIS_PREFIX=four",
                "-s", "ROBOTSTXT_OBEY=0", "-s", "DEDUP_LOGSTATS_INTERVAL=0", "-s", "LOG_LEVEL=INFO"]
    for n, v in enumerate("abcd"):
        urls = write_urls(tmp_path / f"urls-{v}.txt", [f"{base}/{v}{g}.html" for g in range(groups)])
        out = tmp_path / f"items-{v}.jsonl"
        outs.append(out)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}", *settings,
             "-s", f"DEDUP_DIR={tmp_path / f'dir-{v}'}", "-s", f"DEDUP_DROPLOG={tmp_path / 'drops.jsonl'}", "-o", str(out)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 180
    for proc in procs:
        try:
            _, err = proc.communicate(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise
        assert proc.returncode == 0, err[-3000:]
    kept = [json.loads(line)["url"] for out in outs for line in open(out, encoding="utf-8")]
    by_group = {}
    for url in kept:
        by_group.setdefault(url.rsplit("/", 1)[1][1:], []).append(url)
    assert sorted(by_group) == sorted(f"{g}.html" for g in range(groups))
    assert all(len(urls) == 1 for urls in by_group.values()), by_group  # each group kept exactly once
    drops = list(read_droplog(str(tmp_path / "drops.jsonl")))
    assert len(drops) == 3 * groups and {d["duplicate_of"] for d in drops} == set(kept)


def test_show_report_and_index_commands_read_a_redis_index(redis_server, tmp_path, articles):
    import json

    from crawler_dedup.droplog import DropLog, make_record

    from .conftest import ROOT, cli

    log = tmp_path / "droplog.jsonl"
    with Deduplicator(backend="redis", redis_url=redis_server, redis_prefix="cli") as d, DropLog(str(log)) as drops:
        assert d.check("https://a/1", text=articles[2][1]).action == "keep"
        v = d.check("https://b/1", text=articles[2][1].replace(" the ", " a ", 3))
        drops.write(make_record(v, "response", "t"))
    where = ["--redis", redis_server, "-s", "DEDUP_REDIS_PREFIX=cli"]
    proc = cli("show", "https://b/1", "--log", log, *where, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "kept          https://a/1" in proc.stdout and "no longer in the index" not in proc.stdout
    proc = cli("index", "stats", "--json", *where, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["pages"] == 1 and info["urls"] == 1 and "prefix cli" in info["dir"]
    proc = cli("report", log, "-o", tmp_path / "r.html", *where, cwd=ROOT)
    assert proc.returncode == 0 and "1 with texts for the diff view" in proc.stdout, proc.stderr
    proc = cli("index", "remove", "https://a/1", *where, "--yes", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(cli("index", "stats", "--json", *where, cwd=ROOT).stdout)["pages"] == 0
    proc = cli("index", "stats", cwd=tmp_path)  # outside a project, no index at the default place
    assert proc.returncode == 2 and "give --dir DIR or --redis URL" in proc.stderr
    proc = cli("index", "stats", "--redis", redis_server, "-s", "DEDUP_REDIS_PREFIX=nothing-here", cwd=ROOT)
    assert proc.returncode == 2 and "no index in Redis" in proc.stderr
    for command in (["report", log, "-o", tmp_path / "r2.html"], ["show", "https://b/1", "--log", log]):
        proc = cli(*command, "--redis", redis_server, "-s", "DEDUP_REDIS_PREFIX=nothing-here", cwd=ROOT)
        assert proc.returncode == 2 and "no index in Redis" in proc.stderr and "LMDB" not in proc.stderr, proc.stderr


class TestRedisClusterStore(TestRedisStore):
    """The same suite on a 3-node Redis Cluster, the one-slot layout (DEDUP_REDIS_LAYOUT=slot)."""

    layout = "slot"

    @pytest.fixture(autouse=True)
    def _server(self, redis_cluster):
        self.url = redis_cluster


class TestRedisClusterSpreadStore(TestRedisClusterStore):
    """And the spread layout (the default on a cluster): keys over every slot, no transactions."""

    layout = "spread"
    serializable = False


def test_a_cluster_index_is_shared_and_keeps_a_group_once(redis_cluster, articles):
    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix="on-a-cluster")
    with Deduplicator(**settings) as one, Deduplicator(**settings) as two:
        assert one.index.store.cluster
        assert one.check("https://a/1", text=articles[3][1]).action == "keep"
        v = two.check("https://b/1", text=articles[3][1])
    assert (v.action, v.duplicate_of) == ("drop", "https://a/1")


def test_dedup_window_on_redis_forgets_old_pages_and_removes_them(redis_server, articles):
    settings = dict(backend="redis", redis_url=redis_server, redis_prefix="window", window=100)
    with Deduplicator(**settings) as d:
        assert d.check("https://a/1", text=articles[4][1], now=1000.0).action == "keep"
        assert d.check("https://b/1", text=articles[4][1], now=1050.0).action == "drop"  # within the window
        later = d.check("https://c/1", text=articles[4][1], now=1200.0)  # a/1 is out of it: no match
        assert later.action == "keep"
        d.check("https://d/1", text=articles[5][1], now=1400.0)  # each page kept removes expired ones
        assert d.index.read(lambda t: (t.doc_count(), t.url_count())) == (1, 1)


def test_dedup_window_maps_to_key_expiry_so_an_idle_index_empties_itself(redis_server, articles):
    """With DEDUP_WINDOW, every key a page writes expires at twice the window (the crawl removes
    pages at one window; expiry empties an index no crawl writes to any more); meta stays."""
    import time

    import redis as redis_py

    settings = dict(backend="redis", redis_url=redis_server, redis_prefix="ttl", window=1)
    client = redis_py.Redis.from_url(redis_server)
    with Deduplicator(**settings) as d:
        assert d.check("https://a/1", text=articles[6][1]).action == "keep"
        assert d.check("https://b/1", text=articles[6][1]).action == "drop"
        doc_keys = client.keys("{ttl}:s:docs:*")
        assert len(doc_keys) == 1 and 0 < client.pttl(doc_keys[0]) <= 2000
        assert all(0 < client.pttl(k) <= 2000 for k in client.keys("{ttl}:m:t0*"))  # the simhash buckets
        assert client.pttl(client.keys("{ttl}:s:meta:plan")[0]) == -1  # the index's plan never expires
        assert d.index.read(lambda t: t.doc_count()) == 1
    time.sleep(2.3)
    assert client.keys("{ttl}:s:docs:*") == [] and client.keys("{ttl}:m:*") == []
    # a reader without the window (index stats) counts the keys left, not the stale counts
    with Deduplicator(**{**settings, "window": 0}) as d:
        assert d.index.read(lambda t: (t.doc_count(), t.url_count())) == (0, 0)
    # nothing of the pages is left, the tables' key lists neither: only the index's meta and markers
    assert sorted(k for k in client.keys("{ttl}:*") if b":s:meta:" not in k) == [
        b"{ttl}:index", b"{ttl}:n", b"{ttl}:o:meta", b"{ttl}:q:meta:next_id", b"{ttl}:ttl"]
    # (a longer window here: c/1 must not expire while d/1 is checked, a second later on a busy machine)
    with Deduplicator(**{**settings, "window": 30}) as d:
        assert d.check("https://c/1", text=articles[6][1]).action == "keep"
        # a key Redis expired while its table's key list lives on (a crawl running): the next
        # expiry step that walks the time table takes it out of the list
        client.zadd("{ttl}:o:times", {b"\x00" * 8: 0})
        assert d.check("https://d/1", text=articles[7][1]).action == "keep"
        assert b"\x00" * 8 not in client.zrange("{ttl}:o:times", 0, -1)
        # (c/1 and d/1 may fall in two seconds: KEYS answers in no order, so compare sorted)
        assert sorted(client.zrange("{ttl}:o:times", 0, -1)) == sorted(
            k.split(b":", 3)[3] for k in client.keys("{ttl}:m:times:*"))
    client.close()


def _self_signed(where):
    """A certificate and key for 127.0.0.1, written to `where` (cert.pem, key.pem)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    (where / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (where / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()))
    return where / "cert.pem", where / "key.pem"


def test_rediss_with_tls_a_user_and_a_password(tmp_path, articles):
    """rediss:// to a TLS-only redis-server with an ACL user: the index works; a wrong password
    fails with a clear message that does not show it."""
    import shutil
    import subprocess
    import time

    import redis as redis_py

    from .conftest import free_port

    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    cert, key = _self_signed(tmp_path)
    port = free_port()
    (tmp_path / "users.acl").write_text("user default off\nuser crawler on >s3cret-pw ~* &* +@all\n")
    server = subprocess.Popen(
        [exe, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(tmp_path),
         "--tls-cert-file", str(cert), "--tls-key-file", str(key), "--tls-ca-cert-file", str(cert),
         "--tls-auth-clients", "no", "--aclfile", str(tmp_path / "users.acl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"rediss://crawler:s3cret-pw@127.0.0.1:{port}/0?ssl_ca_certs={cert}"
    try:
        for _ in range(200):
            try:
                redis_py.Redis.from_url(url).ping()
                break
            except redis_py.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("the TLS redis-server did not start")
        settings = dict(backend="redis", redis_url=url, redis_prefix="tls")
        with Deduplicator(**settings) as one, Deduplicator(**settings) as two:
            assert one.check("https://a/1", text=articles[7][1]).action == "keep"
            assert two.check("https://b/1", text=articles[7][1]).action == "drop"
        bad = url.replace("s3cret-pw", "wrong-pw")
        with pytest.raises(StoreError) as info:
            Deduplicator(**{**settings, "redis_url": bad}).open()
        assert "cannot open the Redis index rediss://crawler:***@127.0.0.1" in str(info.value)
        assert "wrong-pw" not in str(info.value)
        plain = f"redis://crawler:s3cret-pw@127.0.0.1:{port}/0"  # TLS-only: a plain connection fails
        with pytest.raises(StoreError, match="cannot open the Redis index"):
            Deduplicator(**{**settings, "redis_url": plain}).open()
    finally:
        server.kill()
        server.wait()


def test_beside_scrapy_redis_the_example_project_crawls_each_url_once_and_keeps_each_group_once(
        redis_server, tmp_path, articles, serve):
    """examples/distributed (the README's step-by-step): scrapy-redis shares the request queue,
    this index the near-duplicates, on one redis-server; 2 `scrapy crawl site` processes."""
    import json
    import subprocess
    import sys
    import time

    import redis as redis_py

    from crawler_dedup.droplog import read_droplog

    from .conftest import ROOT, make_site

    pytest.importorskip("scrapy_redis")
    groups = 10
    pages = {f"{v}{g}.html": articles[g][0] for g in range(groups) for v in "abcd"}
    base = serve(make_site(tmp_path / "site", pages)).base_url
    redis_server = redis_server.rsplit("/", 1)[0] + "/5"  # a database of its own: only these two tools' keys
    client = redis_py.Redis.from_url(redis_server)
    client.lpush("site:start_urls", *[json.dumps({"url": f"{base}/{name}"}) for name in sorted(pages)])
    env = {**os.environ, "REDIS_URL": redis_server, "MAX_IDLE_TIME_BEFORE_CLOSE": "3"}
    procs = []
    for n in range(2):
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "site", "-s", "ROBOTSTXT_OBEY=0", "-s", "DEDUP_REDIS_PREFIX=sr-test",
             "-s", f"DEDUP_DIR={tmp_path / f'dir-{n}'}", "-o", str(tmp_path / f"items-{n}.jsonl")],
            cwd=os.path.join(ROOT, "examples", "distributed"), env=env, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + 180
    errs = []
    for proc in procs:
        try:
            errs.append(proc.communicate(timeout=max(1, deadline - time.monotonic()))[1])
        except subprocess.TimeoutExpired:
            for other in procs:
                other.kill()
            raise
        assert proc.returncode == 0, errs[-1][-3000:]
    kept = [json.loads(line)["url"] for n in range(2) if (tmp_path / f"items-{n}.jsonl").exists()
            for line in open(tmp_path / f"items-{n}.jsonl", encoding="utf-8")]
    groups_kept = sorted(url.rsplit("/", 1)[1][1:] for url in kept)
    assert groups_kept == sorted(f"{g}.html" for g in range(groups))  # each group once, over both processes
    drops = [d for n in range(2) if (tmp_path / f"dir-{n}" / "droplog-redis-sr-test.jsonl").exists()
             for d in read_droplog(str(tmp_path / f"dir-{n}" / "droplog-redis-sr-test.jsonl"))]
    assert len(drops) == 3 * groups and {d["duplicate_of"] for d in drops} == set(kept)
    import re

    # (a process that got no URL from the queue, the other being quicker, has no such stat)
    checked = sum(int(m.group(1)) for s in errs for m in [re.search(r"'dedup/checked': (\d+)", s)] if m)
    assert checked == 4 * groups  # scrapy-redis gave each URL to one process only
    theirs = [k for k in client.scan_iter() if not k.startswith(b"{sr-test}")]
    assert all(k.startswith(b"site:") for k in theirs)  # scrapy-redis's keys; every key of ours is under the prefix
    assert len(theirs) < client.dbsize()
    client.close()


@pytest.mark.parametrize("retry", ["30", "0"])
def test_redis_killed_and_restarted_during_a_scrapy_crawl(tmp_path, articles, serve, retry):
    """A real `scrapy crawl pages` (one request at a time, 0.25 s apart): originals are filed,
    redis-server is killed, started again 1 s later on its append-only file. The crawl finishes.
    By default (DEDUP_REDIS_RETRY=30) the restart costs time, not recall: the page checked while
    Redis was down waits for it and every copy is dropped. With DEDUP_REDIS_RETRY=0 a copy checked
    while Redis was down is kept, counted as a store error and named in the log, never dropped
    without a line; the closing line counts it; the copies after the restart are dropped against
    the index kept before."""
    import json
    import subprocess
    import sys
    import time

    import redis as redis_py

    from crawler_dedup.droplog import read_droplog

    from .conftest import ROOT, free_port, make_site, write_urls

    port = free_port()
    server = _start_redis(port, tmp_path)
    url = f"redis://127.0.0.1:{port}/0"
    n = 5
    pages = {f"{phase}{g}.html": articles[g][0] for g in range(n) for phase in "abc"}  # b, c: copies of a
    base = serve(make_site(tmp_path / "site", pages)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{p}{g}.html" for p in "abc" for g in range(n)]
                      + [f"{base}/c{g}.html?again" for g in range(n)])
    crawl = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}", "-s", "DEDUP_BACKEND=redis",
         "-s", f"DEDUP_REDIS_URL={url}", "-s", "DEDUP_REDIS_PREFIX=restart", "-s", f"DEDUP_DIR={tmp_path / 'd'}",
         "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.25",
         "-s", "RANDOMIZE_DOWNLOAD_DELAY=0", "-s", "DEDUP_LOGSTATS_INTERVAL=0", "-s", f"DEDUP_REDIS_RETRY={retry}",
         "-o", str(tmp_path / "items.jsonl")],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    client = redis_py.Redis(port=port)
    try:
        deadline = time.monotonic() + 60
        while int(client.hget("{restart}:n", "docs") or 0) < n:  # the originals are in
            assert time.monotonic() < deadline and crawl.poll() is None, "the originals were not filed"
            time.sleep(0.02)
        client.close()
        server.kill()
        server.wait()
        time.sleep(1.0)
        server = _start_redis(port, tmp_path)
        _, err = crawl.communicate(timeout=120)
    finally:
        crawl.kill()
        server.kill()
        server.wait()
    assert crawl.returncode == 0, err[-3000:]
    stats = {k: int(v) for k, v in (p.split("': ") for p in err.split("'dedup/")[1:] for p in [p.split(",")[0]])}
    kept = {json.loads(line)["url"].rsplit("/", 1)[1] for line in open(tmp_path / "items.jsonl", encoding="utf-8")}
    dropped = {d["url"].rsplit("/", 1)[1] for d in read_droplog(str(tmp_path / "d" / "droplog-redis-restart.jsonl"))}
    copies = {f"{p}{g}.html{q}" for p in "bc" for g in range(n) for q in ("", "?again")} - {
        f"b{g}.html?again" for g in range(n)}
    assert {f"a{g}.html" for g in range(n)} <= kept
    assert copies == (kept | dropped) - {f"a{g}.html" for g in range(n)}  # every page: passed on or a line
    assert {f"c{g}.html?again" for g in range(n)} <= dropped  # well after the restart: deduplicated again
    assert err.count("Traceback") == 0
    if retry == "0":
        assert stats["errors/store"] >= 1 and len(copies & kept) == stats["errors/store"]  # kept only by an error
        assert "Redis" in err and f"{stats['errors/store']} kept unchecked" in err
        assert all(f"kept unchecked: {base}/{page}" in err for page in copies & kept), err[-3000:]
    else:  # waited through the restart: nothing kept unchecked
        assert "errors/store" not in stats and not copies & kept, (stats, copies & kept)


def test_the_demo_decisions_on_redis_are_the_recorded_lmdb_ones(redis_server):
    """Every decision and drop-log field of the demo site, twice over one index, as on LMDB."""
    import sys

    from .conftest import ROOT

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import decisions

    expected = {k: v for k, v in decisions.load(os.path.join(ROOT, "benchmarks", "decisions.json.gz")).items()
                if k.startswith("demo/")}
    got = decisions.demo_decisions(store={"backend": "redis", "redis_url": redis_server, "redis_prefix": "demo-decisions"})
    assert set(got) == set(expected) and decisions.compare(expected, got) == []


def _move_slot(cluster_url: str, key: bytes, midway=None) -> None:
    """Move the cluster slot of `key` to another node, its keys with it (as a resharding does);
    `midway()` runs when some of its keys have moved and others not (ASK redirections)."""
    from redis.cluster import RedisCluster

    import redis as redis_py

    cluster = RedisCluster.from_url(cluster_url)
    slot = cluster.keyslot(key)
    src = cluster.get_node_from_key(key)
    primaries = cluster.get_primaries()
    dst = next(n for n in primaries if n.name != src.name)
    s, d = redis_py.Redis(host=src.host, port=src.port), redis_py.Redis(host=dst.host, port=dst.port)
    src_id, dst_id = s.execute_command("CLUSTER MYID"), d.execute_command("CLUSTER MYID")
    d.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    s.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    s.set_response_callback("CLUSTER GETKEYSINSLOT", lambda r, **kw: r)  # the key names as bytes, not decoded
    for _ in range(1000):
        keys = s.execute_command("CLUSTER GETKEYSINSLOT", slot, 100)
        if not keys:
            break
        if midway is not None:  # half of them first (of one: none), then the caller's pages
            if len(keys) > 1:
                s.execute_command("MIGRATE", dst.host, dst.port, "", 0, 5000, "KEYS", *keys[: len(keys) // 2])
            midway()
            midway = None
            continue
        s.execute_command("MIGRATE", dst.host, dst.port, "", 0, 5000, "KEYS", *keys)
    else:
        raise AssertionError("the slot's keys did not move")
    for n in primaries:
        redis_py.Redis(host=n.host, port=n.port).execute_command("CLUSTER SETSLOT", slot, "NODE", dst_id)
    cluster.close()


@pytest.mark.parametrize("layout", ["slot", "spread"])
def test_a_cluster_slot_moved_mid_crawl_is_followed(redis_cluster, articles, layout):
    """A slot of the index (the one-slot layout's, or the spread layout's meta and claims) is
    resharded to another node between two pages: the next page is decided on the new node (no
    store error), against the pages kept before the move."""
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="moving-" + layout,
                      redis_layout=layout) as d:
        store = d.index.store
        key = store.meta_key if layout == "spread" else store.k("index")
        assert d.check("https://a/1", text=articles[8][1]).action == "keep"
        before = store.client.get_node_from_key(key).name
        _move_slot(redis_cluster, key)
        v = d.check("https://b/1", text=articles[8][1])
        assert (v.action, v.duplicate_of, v.error) == ("drop", "https://a/1", None)
        store.moved()
        assert store.client.get_node_from_key(key).name != before
        assert d.check("https://c/1", text=articles[9][1]).action == "keep"


def test_the_spread_layout_follows_a_slot_half_moved(redis_cluster, articles):
    """While a slot is moving (some of its keys on the new node, ASK redirections), pages are
    decided as before: kept, dropped against the kept ones, no store error."""
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="half-moved") as d:
        for n in range(6):
            assert d.check(f"https://a/{n}", text=articles[n][1]).action == "keep"
        store = d.index.store
        record = store.prefix_b + b":d:" + (1).to_bytes(8, "big")
        seen = []

        def pages_meanwhile(at: str, new: int):
            seen.extend(d.check(f"https://{at}/{n}", text=articles[n][1]) for n in range(6))
            seen.append(d.check(f"https://{at}/new", text=articles[new][1]))

        # the meta hash (counters, claims) moving: a new page takes its id and claim by ASK
        _move_slot(redis_cluster, store.meta_key, midway=lambda: pages_meanwhile("b", 7))
        # a kept page's record moving
        _move_slot(redis_cluster, record, midway=lambda: pages_meanwhile("c", 9))
        after = d.check("https://d/new", text=articles[7][1])
    assert [(v.action, v.error, v.duplicate_of) for v in seen[:6]] == [("drop", None, f"https://a/{n}") for n in range(6)]
    assert (seen[6].action, seen[6].error) == ("keep", None)
    assert [(v.action, v.error) for v in seen[7:13]] == [("drop", None)] * 6
    assert (seen[13].action, seen[13].error) == ("keep", None)
    assert (after.action, after.duplicate_of) == ("drop", "https://b/new")


def test_a_redis_password_never_shows_in_messages():
    from crawler_dedup import DedupConfig
    from crawler_dedup.exceptions import ConfigError
    from crawler_dedup.stores.redis import RedisStore

    with pytest.raises(ConfigError) as info:  # a typo in the scheme: the value is shown, its password not
        DedupConfig.from_settings({"DEDUP_REDIS_URL": "redsi://u:s3cret-pw@127.0.0.1:1/0"})
    assert "s3cret-pw" not in str(info.value) and "redsi://u:***@127.0.0.1:1/0" in str(info.value)
    store = RedisStore("redis://127.0.0.1:1/0?password=s3cret-pw", prefix="p", retry_s=0)
    assert "s3cret-pw" not in store.location and "password=***" in store.location
    with pytest.raises(StoreError) as info:
        store.open()
    assert "s3cret-pw" not in str(info.value)


def test_a_moved_slot_refreshes_the_slot_map(redis_cluster, articles):
    """After a resharding, a MOVED answer makes the spread layout learn the new owner of the slot
    (the next command goes there first), where it once followed MOVED as a one-off ASK and kept
    asking the old node for every key of the slot."""
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="moved-map") as d:
        assert d.check("https://a/1", text=articles[4][1]).action == "keep"
        store = d.index.store
        key = store.meta_key
        before = store.nodes.node_of(key).name
        _move_slot(redis_cluster, key)
        assert store.nodes.node_of(key).name == before  # (not learned yet)
        store.nodes.run([(key, ("HGET", key, b"shards"))])
        assert store.nodes.node_of(key).name != before
        v = d.check("https://b/1", text=articles[4][1])
        assert (v.action, v.duplicate_of, v.error) == ("drop", "https://a/1", None)


def test_the_docs_cluster_example_runs_as_written(tmp_path):
    """examples/distributed/try-cluster.sh (docs/distributed.md): the queue on a Redis server of
    its own, the index on a 3-node cluster whose nodes keep append-only files; two crawlers keep
    each of the demo's groups once and the index verifies whole."""
    import subprocess

    from .conftest import ROOT, free_port

    pytest.importorskip("scrapy_redis")
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    ports = []
    while len(ports) < 3:
        port = free_port(bus=True)
        if port not in ports:
            ports.append(port)
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), QUEUE_PORT=str(free_port()),
               NODE_PORTS=" ".join(map(str, ports)), HTTP_PORT=str(free_port()))
    got = subprocess.run(["bash", "try-cluster.sh"], cwd=os.path.join(ROOT, "examples", "distributed"), env=env,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-3000:]
    assert "kept (over both crawlers): 26" in got.stdout and "dropped: 27" in got.stdout, got.stdout
    assert "whole (26 kept pages" in got.stdout
