"""Each index its own drop log: a Redis index's default drop log is named after its prefix, never
the LMDB index's, and the commands name the index they read (config.default_droplog)."""

from __future__ import annotations

import json
import os

from crawler_dedup import Deduplicator
from crawler_dedup.config import DedupConfig, default_droplog
from crawler_dedup.droplog import DropLog, make_record

from .conftest import cli


def test_a_redis_crawls_default_drop_log_is_named_after_its_prefix(tmp_path, monkeypatch):
    from crawler_dedup.scrapy.extension import DedupExtension

    monkeypatch.chdir(tmp_path)  # outside a project: Scrapy's data dir is ./.scrapy
    lmdb = DedupExtension._configure(DedupConfig())
    news = DedupExtension._configure(DedupConfig(backend="redis", redis_prefix="news"))
    shop = DedupExtension._configure(DedupConfig(backend="redis", redis_prefix="shop:eu"))
    assert os.path.basename(str(lmdb.droplog)) == "droplog.jsonl"
    assert os.path.basename(str(news.droplog)) == "droplog-redis-news.jsonl"
    assert os.path.basename(str(shop.droplog)) == "droplog-redis-shop_eu.jsonl"
    assert len({str(lmdb.droplog), str(news.droplog), str(shop.droplog)}) == 3
    # a drop log the settings name stays where they say
    given = DedupExtension._configure(DedupConfig(backend="redis", droplog=str(tmp_path / "mine.jsonl")))
    assert str(given.droplog) == str(tmp_path / "mine.jsonl")


def test_doctor_names_the_redis_indexs_drop_log(redis_server, tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "scrapy", "startproject", "shop", str(tmp_path / "shop")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    proc = cli("doctor", "--json", "-s", "DEDUP_BACKEND=redis", "-s", f"DEDUP_REDIS_URL={redis_server}",
               "-s", "DEDUP_REDIS_PREFIX=news", cwd=tmp_path / "shop")
    report = json.loads(proc.stdout)
    where = report["where"]["droplog"]
    assert where.endswith(os.path.join(".scrapy", "dedup", "droplog-redis-news.jsonl")), where
    assert "None" not in json.dumps(report["where"])


def test_show_finds_the_redis_drop_log_and_names_the_redis_index(redis_server, tmp_path, articles):
    with Deduplicator(backend="redis", redis_url=redis_server, redis_prefix="shown") as d:
        assert d.check("https://a/1", text=articles[3][1]).action == "keep"
        v = d.check("https://b/1", text=articles[3][1].replace(" the ", " a ", 3))
    log = default_droplog(str(tmp_path / ".scrapy" / "dedup"), "redis", "shown")
    os.makedirs(os.path.dirname(log))
    with DropLog(log) as drops:
        drops.write(make_record(v, "response", "t"))
    where = ["--redis", redis_server, "-s", "DEDUP_REDIS_PREFIX=shown"]
    proc = cli("show", "https://b/1", *where, "--dir", tmp_path / ".scrapy" / "dedup", cwd=tmp_path)
    assert proc.returncode == 0 and "kept          https://a/1" in proc.stdout, proc.stderr
    with Deduplicator(backend="redis", redis_url=redis_server, redis_prefix="shown") as d:
        d.index.write(lambda txn: d.index.remove(txn, d.index.by_url(txn, "https://a/1").doc_id))
    proc = cli("show", "https://b/1", *where, "--dir", tmp_path / ".scrapy" / "dedup", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no longer in the Redis index redis://127.0.0.1" in proc.stdout and "(prefix shown)" in proc.stdout
    assert ".scrapy/dedup" not in proc.stdout.split("no longer in", 1)[1].splitlines()[0]


def test_a_crawl_that_cannot_open_its_redis_index_stops_with_one_line_that_says_what_to_do(tmp_path, serve,
                                                                                          articles):
    from .conftest import make_site, scrapy_crawl, write_urls

    root = make_site(tmp_path / "site", {"a.html": articles[0][0]})
    web = serve(root).base_url  # an HTTP server where the Redis URL points
    urls = write_urls(tmp_path / "urls.txt", [f"{web}/a.html"])
    redis_url = "redis://" + web.split("://", 1)[1] + "/0"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", "DEDUP_BACKEND=redis", "-s", f"DEDUP_REDIS_URL={redis_url}",
                        "-s", "DEDUP_REDIS_RETRY=0", "-s", f"DEDUP_DIR={tmp_path / 'd'}", "-O", str(tmp_path / "out.jsonl"))
    assert "Traceback" not in proc.stderr and proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if " ERROR: " in line]
    assert len(errors) == 1 and "does not speak Redis" in errors[0] and "check the port" in errors[0], errors
    assert not (tmp_path / "out.jsonl").exists() or not (tmp_path / "out.jsonl").read_text()


def test_a_database_number_on_a_cluster_is_told_to_be_0(redis_cluster):
    import pytest

    from crawler_dedup.exceptions import StoreError

    url = redis_cluster.rsplit("/", 1)[0] + "/3" if redis_cluster.count("/") > 2 else redis_cluster + "/3"
    with pytest.raises(StoreError, match="end DEDUP_REDIS_URL with /0"):
        Deduplicator(backend="redis", redis_url=url, redis_prefix="db3").open()


def test_kept_now_follows_superseded_lines_in_the_logs_order():
    """A URL replaced by another and later replacing it back (the site's rel=canonical changed) is
    the kept one: a drop that named either finds it (the chain once went round in a circle and
    named the URL that left storage). Found by tests/test_crawl_model.py."""
    from crawler_dedup.droplog import kept_now

    sup = lambda url, by: {"reason": "superseded", "url": url, "duplicate_of": by}  # noqa: E731
    now = kept_now([sup("https://s/a", "https://s/a?utm_source=x"), sup("https://s/a?utm_source=x", "https://s/a")])
    assert now("https://s/a?utm_source=x") == "https://s/a" and now("https://s/a") == "https://s/a"
    chain = kept_now([sup("https://s/1", "https://s/2"), sup("https://s/2", "https://s/3")])
    assert chain("https://s/1") == "https://s/3" and chain("https://s/4") == "https://s/4"
