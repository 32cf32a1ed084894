"""Conditional requests (DEDUP_CONDITIONAL) as a user meets them: real `scrapy crawl` runs over one
index against servers on 127.0.0.1 that honour validators, ignore them, send none, or lie."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.core.index.fetches import Fetch, from_response
from crawler_dedup.core.index.integrity import verify
from crawler_dedup.core.index.records import url_key
from crawler_dedup.droplog import read_droplog

from .conftest import ROOT, dedup_stats, scrapy_crawl, write_urls

SPIDER = os.path.join(ROOT, "tests", "spiders", "conditional_spider.py")


def site(tmp_path, articles, n, chain=False):
    """n real article pages a0..a{n-1}.html; with `chain`, each links to the next."""
    root = tmp_path / "site"
    root.mkdir(exist_ok=True)
    for i in range(n):
        html = articles[i][0]
        if chain and i + 1 < n:
            at = html.lower().rindex(b"</body>")
            html = html[:at] + f'<p><a href="/a{i + 1}.html">next</a></p>'.encode() + html[at:]
        (root / f"a{i}.html").write_bytes(html)
    return root


def edited(article):
    """The page with a word of its article text changed (an update a recrawl must keep)."""
    html, gold = article
    for word in re.findall(r"[A-Za-z]{6,}", gold)[5:]:
        if f" {word} ".encode() in html:
            return html.replace(f" {word} ".encode(), b" REVISED ")
    raise AssertionError("no word of the article to change")


def crawl(tmp_path, urls, *extra, name="out"):
    out = tmp_path / f"{name}.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "ROBOTSTXT_OBEY=0",
                        "-s", "CONCURRENT_REQUESTS=2", "-o", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc, _items(out)


def run_spider(tmp_path, urls, *extra, name="out"):
    out = tmp_path / f"{name}.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", SPIDER, "-a", f"urls={urls}",
         "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=2",
         "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}", "-o", str(out), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc, _items(out)


def _items(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def entry(tmp_path, url, **settings):
    with Deduplicator(dir=str(tmp_path / "idx"), **settings) as dedup:
        raw = dedup.index.read(lambda txn: txn.fetch_get(url_key(url)))
    return None if raw is None else Fetch.decode(raw)


def lines_of(tmp_path, measure=None):
    lines = read_droplog(str(tmp_path / "idx" / "droplog.jsonl"))
    return [r for r in lines if measure is None or r.get("measure") == measure]


# -- what is kept of a response --------------------------------------------------------------------

def test_validators_kept_as_a_careful_crawler_keeps_them():
    date = "Thu, 26 Nov 2026 06:00:00 GMT"
    f = from_response({"ETag": 'W/"v1"', "Last-Modified": "Wed, 25 Nov 2026 10:00:00 GMT", "Date": date,
                       "Content-Type": "text/html"}, 200, b"<p>x</p>", b"d" * 16, 0, copy=True)
    assert f.headers() == {"If-None-Match": 'W/"v1"', "If-Modified-Since": "Wed, 25 Nov 2026 10:00:00 GMT"}
    f.doc_id = 7
    back = Fetch.decode(f.encode())
    assert (back.etag, back.last_modified, back.doc_id, back.page()) == (f.etag, f.last_modified, 7, b"<p>x</p>")
    # a Last-Modified after the response's Date (a lying clock), or no date at all: not kept
    assert from_response({"Last-Modified": "Fri, 27 Nov 2026 06:00:00 GMT", "Date": date}, 200, b"x", b"d" * 16,
                         0, copy=False).last_modified is None
    assert from_response({"Last-Modified": "yesterday"}, 200, b"x", b"d" * 16, time.time(), False).validators is False
    # a value that would smuggle a header into the next request: not kept
    assert from_response({"ETag": '"a"\r\nX-Evil: 1'}, 200, b"x", b"d" * 16, 0, False).validators is False
    # no-store: validators kept, the body not copied
    kept = from_response({"ETag": '"a"', "Cache-Control": "private, no-store"}, 200, b"x", b"d" * 16, 0, True)
    kept.doc_id = 1
    assert kept.validators and Fetch.decode(kept.encode()).copy is None
    # an HTTP date and nothing else: not one with more after it; asctime is one
    assert from_response({"Last-Modified": "Mon, 01 Jan 2024 00:00:00 GMT X-Injected: 1"}, 200, b"x", b"d" * 16,
                         time.time(), False).last_modified is None
    assert from_response({"Last-Modified": "Sun Nov  6 08:49:37 1994"}, 200, b"x", b"d" * 16, time.time(),
                         False).last_modified == "Sun Nov  6 08:49:37 1994"
    # a 304 with new validators renews them (RFC 9111 4.3.4), the copy and the download's time stay
    fresh = f.renewed({"ETag": '"v2"'})
    assert fresh.etag == '"v2"' and fresh.last_modified == f.last_modified and fresh.copy == f.copy
    assert f.renewed({"ETag": 'W/"v1"'}) is None and f.renewed({}) is None
    # a date that formats back to itself is kept in 4 bytes; another form as it came
    odd = from_response({"Last-Modified": "Wednesday, 25-Nov-26 10:00:00 GMT"}, 200, b"x", b"d" * 16, time.time(), False)
    odd.doc_id = 1
    assert Fetch.decode(odd.encode()).last_modified == "Wednesday, 25-Nov-26 10:00:00 GMT"
    assert len(f.encode()) - len(f.copy or b"") < len(odd.encode()) + 40


# -- a server that honours validators ----------------------------------------------------------------

def test_second_crawl_asks_and_an_unchanged_page_costs_no_body(tmp_path, articles, serve):
    root = site(tmp_path, articles, 4)
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(4)])
    proc, first = crawl(tmp_path, urls, name="first")
    assert len(first) == 4 and server.served.get(304, 0) == 0
    kept = entry(tmp_path, f"{server.base_url}/a3.html")
    assert kept is not None and kept.etag and kept.last_modified and kept.copy is None  # pages spider: leaves
    time.sleep(1.1)  # a new Last-Modified second
    (root / "a3.html").write_bytes(edited(articles[3]))
    sent_before = server.served["bytes"]
    proc, second = crawl(tmp_path, urls, name="second")
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/conditional"] == 4 and stats["dedup/not_modified"] == 3
    assert server.served[304] == 3
    assert [i["url"] for i in second] == [f"{server.base_url}/a3.html"]  # the update, and only it
    assert stats["dedup/revisits/updated"] == 1 and stats["dedup/revisits/unchanged"] == 3
    assert server.served["bytes"] - sent_before == len((root / "a3.html").read_bytes())
    assert stats["dedup/not_modified/bytes"] == sum(len((root / f"a{i}.html").read_bytes()) for i in range(3))
    lines = lines_of(tmp_path, "not-modified")
    assert len(lines) == 3 and all(r["reason"] == "unchanged" and r["duplicate_of"] == r["url"] for r in lines)
    assert not any("text" in r for r in lines)  # (the kept page's own text: not written again)
    assert "4 conditional requests, 3 answered 304" in proc.stderr
    shown = subprocess.run([sys.executable, "-m", "crawler_dedup", "show", lines[0]["url"], "--dir",
                            str(tmp_path / "idx")], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "304 Not Modified" in shown.stdout, shown.stdout + shown.stderr
    assert "has no `text`" not in shown.stdout  # (the kept text stands for the page: no diff to show)
    updated = entry(tmp_path, f"{server.base_url}/a3.html")
    assert updated.etag != kept.etag and updated.doc_id != kept.doc_id  # the update's validators replaced them
    proc, third = crawl(tmp_path, urls, name="third")
    assert third == [] and dedup_stats(proc.stderr)["dedup/not_modified"] == 4


def test_links_on_an_unchanged_page_are_still_followed_from_its_kept_copy(tmp_path, articles, serve):
    root = site(tmp_path, articles, 5, chain=True)
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a0.html"])
    proc, first = run_spider(tmp_path, urls, "-a", "follow=1", name="first")
    assert sorted(i["url"].rsplit("/", 1)[1] for i in first) == [f"a{i}.html" for i in range(5)]
    kept = entry(tmp_path, f"{server.base_url}/a2.html")
    assert kept.page() == (root / "a2.html").read_bytes()  # LMDB: a copy of each body with validators
    bodies = server.served[200]
    proc, second = run_spider(tmp_path, urls, "-a", "follow=1", name="second")
    stats = dedup_stats(proc.stderr)
    assert server.served[200] == bodies and server.served[304] == 5  # nothing downloaded again
    assert stats["dedup/not_modified"] == 5 and second == []  # every page parsed, its items dropped
    assert stats["dedup/dropped_items/unchanged"] == 5
    # the last page was reached through the copies of the four before it
    assert {r["url"] for r in lines_of(tmp_path, "not-modified")} == {f"{server.base_url}/a{i}.html" for i in range(5)}


def test_a_hub_page_is_handed_on_whole_from_its_copy(tmp_path, articles, serve):
    root = site(tmp_path, articles, 3, chain=True)
    server = serve(str(root), validators="weak")  # W/ ETags: compared weakly, as If-None-Match is
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a0.html"])
    crawl(tmp_path, urls, "-a", "follow=1", name="first")
    proc, second = crawl(tmp_path, urls, "-a", "follow=1", name="second")
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/not_modified"] == 3 and server.served[304] == 3
    assert [i["url"] for i in second] == [f"{server.base_url}/a0.html"]  # the start page: never dropped
    assert stats["dedup/revisits/unchanged"] == 3


# -- servers that do not help --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["none", "ignore"])
def test_a_server_without_validators_or_ignoring_them_is_decided_by_text(tmp_path, articles, serve, kind):
    root = site(tmp_path, articles, 3)
    server = serve(str(root), validators=kind)
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(3)])
    crawl(tmp_path, urls, name="first")
    (root / "a2.html").write_bytes(edited(articles[2]))
    proc, second = crawl(tmp_path, urls, name="second")
    stats = dedup_stats(proc.stderr)
    assert server.served.get(304, 0) == 0 and "dedup/not_modified" not in stats
    assert stats.get("dedup/conditional", 0) == (3 if kind == "ignore" else 0)
    assert [i["url"] for i in second] == [f"{server.base_url}/a2.html"]
    assert stats["dedup/revisits/unchanged"] == 2 and stats["dedup/revisits/updated"] == 1
    kept = entry(tmp_path, f"{server.base_url}/a0.html")
    assert (kept is None) if kind == "none" else (kept.etag is not None)  # nothing to ask with, or asked in vain


def test_a_lying_server_is_believed_until_the_max_age_then_caught(tmp_path, articles, serve):
    root = site(tmp_path, articles, 2)
    server = serve(str(root), validators="lie")  # a 304 to every conditional request
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(2)])
    crawl(tmp_path, urls, name="first")
    (root / "a1.html").write_bytes(edited(articles[1]))
    proc, second = crawl(tmp_path, urls, name="second")
    assert second == [] and dedup_stats(proc.stderr)["dedup/not_modified"] == 2  # the server's word
    time.sleep(1.2)
    proc, third = crawl(tmp_path, urls, "-s", "DEDUP_CONDITIONAL_MAX_AGE=1", name="third")
    stats = dedup_stats(proc.stderr)
    assert "dedup/conditional" not in stats  # older than the max age: downloaded in full
    assert [i["url"] for i in third] == [f"{server.base_url}/a1.html"]  # the hidden change, caught
    assert stats["dedup/revisits/updated"] == 1 and stats["dedup/revisits/unchanged"] == 1


# -- turning it off --------------------------------------------------------------------------------------

def test_meta_and_the_setting_turn_it_off(tmp_path, articles, serve):
    root = site(tmp_path, articles, 2)
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(2)])
    run_spider(tmp_path, urls, name="first")
    bodies = server.served[200]
    proc, second = run_spider(tmp_path, urls, "-a", 'meta={"dedup_conditional": false}', name="second")
    assert server.served.get(304, 0) == 0 and "dedup/conditional" not in dedup_stats(proc.stderr)
    assert server.served[200] == bodies + 2  # downloaded in full, and still unchanged by their text
    assert dedup_stats(proc.stderr)["dedup/revisits/unchanged"] == 2 and second == []
    proc, third = run_spider(tmp_path, urls, "-s", "DEDUP_CONDITIONAL=False", name="third")
    assert server.served.get(304, 0) == 0 and "dedup/conditional" not in dedup_stats(proc.stderr)
    assert dedup_stats(proc.stderr)["dedup/fast/same_bytes"] == 2  # (the bytes' digest filed whole either way)
    proc, fourth = run_spider(tmp_path, urls, name="fourth")  # on again: the copies kept meanwhile are used
    assert server.served[304] == 2 and dedup_stats(proc.stderr)["dedup/not_modified"] == 2
    # a request with validators of its own is left as it is
    proc, fifth = run_spider(tmp_path, urls, "-a", 'meta={"dedup_leaf": true}', "-a",
                             'headers={"If-None-Match": "\\"mine\\""}', name="fifth")
    assert "dedup/conditional" not in dedup_stats(proc.stderr) and server.served[304] == 2


def test_a_304_whose_copy_cannot_be_read_is_downloaded_again(tmp_path, articles, serve):
    root = site(tmp_path, articles, 3, chain=True)
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a0.html"])
    run_spider(tmp_path, urls, "-a", "follow=1", name="first")
    url = f"{server.base_url}/a1.html"
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:  # the copy of a1 rots (or went meanwhile)
        kept = dedup.fetch_entry(url)[0]
        kept.copy = b"not zlib"
        dedup.index.write(lambda txn: txn.fetch_put(url_key(url), kept.encode()))
    proc, second = run_spider(tmp_path, urls, "-a", "follow=1", name="second")
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/conditional/refetched"] == 1 and stats["dedup/not_modified"] == 2
    assert stats["dedup/revisits/unchanged"] == 3  # a1 downloaded and decided by its text
    assert f"{server.base_url}/a2.html" in {r["url"] for r in lines_of(tmp_path)}  # reached through a1


def test_unchanged_keep_and_dry_run_hand_the_copy_on_or_download(tmp_path, articles, serve):
    root = site(tmp_path, articles, 2)
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(2)])
    run_spider(tmp_path, urls, name="first")  # (not leaves: copies kept)
    proc, kept = run_spider(tmp_path, urls, "-s", "DEDUP_UNCHANGED=keep", name="keep")
    assert len(kept) == 2 and all("dedup_copy" in i["flags"] and i["status"] == 200 for i in kept)
    proc, dry = run_spider(tmp_path, urls, "-s", "DEDUP_DRY_RUN=True", name="dry")
    assert len(dry) == 2 and dedup_stats(proc.stderr)["dedup/flagged"] == 2
    # a leaf's 304 is dropped without calling the spider, even where a copy is kept
    proc, _ = run_spider(tmp_path, urls, "-a", 'meta={"dedup_leaf": true}', name="leaf0")
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/not_modified"] == 2 and "dedup/dropped_items/unchanged" not in stats
    # leaves have no copy: with DEDUP_UNCHANGED=keep their requests go out unconditional
    leaf = ["-a", 'meta={"dedup_leaf": true}', "-s", f"DEDUP_DIR={tmp_path / 'leaves'}"]
    run_spider(tmp_path, urls, *leaf, name="leaf1")
    served = server.served.get(304, 0)
    proc, keep_leaf = run_spider(tmp_path, urls, *leaf, "-s", "DEDUP_UNCHANGED=keep", name="leaf2")
    assert len(keep_leaf) == 2 and server.served.get(304, 0) == served


# -- with Scrapy's HTTP cache, across a redirect, on Redis ---------------------------------------------

@pytest.mark.parametrize("policy", ["scrapy.extensions.httpcache.DummyPolicy",
                                    "scrapy.extensions.httpcache.RFC2616Policy"])
def test_with_scrapys_http_cache(tmp_path, articles, serve, policy):
    root = site(tmp_path, articles, 3)
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(3)])
    cache = ["-s", "HTTPCACHE_ENABLED=True", "-s", f"HTTPCACHE_DIR={tmp_path / 'cache'}", "-s", f"HTTPCACHE_POLICY={policy}"]
    crawl(tmp_path, urls, name="first")  # no cache yet: the index holds the pages' validators
    proc, second = crawl(tmp_path, urls, *cache, name="second")  # an empty cache in front of the server
    stats = dedup_stats(proc.stderr)
    assert second == [] and stats["dedup/revisits/unchanged"] == 3 and stats["dedup/dropped/unchanged"] == 3
    # the cache answers revisits itself: DummyPolicy would store a 304 as the page, RFC2616Policy
    # hand on its own older copy for a 304 to the index's newer validators
    assert "dedup/conditional" not in stats and "no conditional requests in this crawl" in proc.stderr
    proc, fresh = crawl(tmp_path, urls, *cache, "-s", f"DEDUP_DIR={tmp_path / 'fresh'}", name="fresh")
    assert len(fresh) == 3, proc.stderr[-2000:]  # the cache gives back pages, never a bodiless 304
    time.sleep(1.1)
    (root / "a0.html").write_bytes(edited(articles[0]))
    proc, third = crawl(tmp_path, urls, *cache, "-s", "HTTPCACHE_ENABLED=False", name="third")
    assert [i["url"] for i in third] == [f"{server.base_url}/a0.html"]


def test_validators_a_redirect_carried_are_taken_off(tmp_path, articles, serve):
    root = site(tmp_path, articles, 2)
    server = serve(str(root), validators="lie")  # (a 304 to any request that carries validators)
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a0.html"])
    crawl(tmp_path, urls, name="first")
    server.routes["/a0.html"] = (301, {"Location": "/a1.html"}, b"")  # the kept URL now redirects
    proc, second = crawl(tmp_path, urls, name="second")
    assert [i["url"] for i in second] == [f"{server.base_url}/a1.html"]  # a new page, downloaded and kept
    assert server.served.get(304, 0) == 0


def test_validators_go_back_as_they_came_and_a_304_renews_them(tmp_path, articles, serve):
    html = articles[0][0]
    etag = '"caf\xe9"'  # (obs-text: a byte over 127, latin-1 on the wire)
    server = serve(routes={"/x.html": (200, {"Content-Type": "text/html; charset=utf-8", "ETag": etag}, html)})
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/x.html"])
    crawl(tmp_path, urls, "-s", "DEDUP_CONDITIONAL_MAX_AGE=0", name="first")
    crawl(tmp_path, urls, name="second")  # (this server never answers 304)
    assert server.asked == [("/x.html", etag, None)]  # the same bytes, not their UTF-8
    server.routes["/x.html"] = (301, {"Location": "/y.html"}, b"")
    server.routes["/y.html"] = (200, {"Content-Type": "text/html; charset=utf-8"}, articles[1][0])
    crawl(tmp_path, urls, name="third")
    assert [a[0] for a in server.asked] == ["/x.html", "/x.html"]  # none carried on to /y.html
    # a lying server's 304 carries the ETag of what it serves now: it replaces the one kept
    root = tmp_path / "liar"
    root.mkdir()
    (root / "a2.html").write_bytes(articles[2][0])
    liar = serve(str(root), validators="lie")
    urls = write_urls(tmp_path / "liar.txt", [f"{liar.base_url}/a2.html"])
    crawl(tmp_path, urls, name="liar1")
    before = entry(tmp_path, f"{liar.base_url}/a2.html")
    (root / "a2.html").write_bytes(edited(articles[2]))
    proc, _ = crawl(tmp_path, urls, name="liar2")
    after = entry(tmp_path, f"{liar.base_url}/a2.html")
    assert dedup_stats(proc.stderr)["dedup/not_modified"] == 1
    assert after.etag != before.etag and (after.doc_id, after.fetched) == (before.doc_id, before.fetched)
    proc, _ = crawl(tmp_path, urls, name="liar3")
    assert liar.asked[-1][1] == after.etag


def test_on_redis_leaves_are_asked_and_copies_are_off_by_default(tmp_path, articles, serve, redis_server):
    root = site(tmp_path, articles, 3, chain=True)
    server = serve(str(root), validators="honour")
    redis = ["-s", "DEDUP_BACKEND=redis", "-s", f"DEDUP_REDIS_URL={redis_server}", "-s",
             f"DEDUP_REDIS_PREFIX=cond-{os.getpid()}", "-s", f"DEDUP_DROPLOG={tmp_path / 'drops.jsonl'}"]
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(3)])
    crawl(tmp_path, urls, *redis, name="first")
    proc, second = crawl(tmp_path, urls, *redis, name="second")
    assert dedup_stats(proc.stderr)["dedup/not_modified"] == 3 and second == []
    start = write_urls(tmp_path / "start.txt", [f"{server.base_url}/a0.html"])
    served = server.served[304]
    proc, _ = run_spider(tmp_path, start, "-a", "follow=1", *redis, name="follow")  # not leaves, no copies
    assert "dedup/conditional" not in dedup_stats(proc.stderr) and server.served[304] == served
    copies = ["-s", "DEDUP_CONDITIONAL_COPY=True"]
    run_spider(tmp_path, start, "-a", "follow=1", *redis, *copies, name="copy1")
    proc, _ = run_spider(tmp_path, start, "-a", "follow=1", *redis, *copies, name="copy2")
    assert dedup_stats(proc.stderr)["dedup/not_modified"] == 3  # reached a2 through the copies


# -- the index's side ---------------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["lmdb", "redis_server", "redis_cluster"])
def test_a_304_that_cannot_stand_for_the_page_is_refused(tmp_path, articles, request, where):
    html = articles[0][0]
    url = "http://example.com/a"
    f = from_response({"ETag": '"v1"'}, 200, html, b"d" * 16, time.time(), copy=True)
    settings = {} if where == "lmdb" else dict(backend="redis", redis_url=request.getfixturevalue(where),
                                                   redis_prefix=f"refused-{os.getpid()}-{time.time_ns()}")
    with Deduplicator(dir=str(tmp_path / "idx"), **settings) as dedup:
        assert dedup.check(url, html=html, fetched=f).action == "keep"
        got = dedup.not_modified(url, {"If-None-Match": '"v1"'})
        assert got is not None and got[0].not_modified and got[1].page() == html and got[2] is False
        assert dedup.not_modified(url, {"If-None-Match": '"v0"'}) is None  # validators it did not send
        report = verify(dedup.index)  # (the entry is a kept page's: index verify counts it whole)
        assert report.ok and report.entries >= 1, report
        doc_id = got[1].doc_id
        dedup.index.write(lambda txn: dedup.index.remove(txn, doc_id))  # (index remove, expire)
        assert dedup.not_modified(url, {"If-None-Match": '"v1"'}) is None
        assert dedup.fetch_entry(url) is None  # the entry left with its page
    if where != "lmdb":
        return
    with Deduplicator(dir=str(tmp_path / "idx2"), window=60) as dedup:
        dedup.check(url, html=html, fetched=from_response({"ETag": '"v1"'}, 200, html, b"d" * 16, 0, True),
                    now=time.time() - 120)
        assert dedup.not_modified(url, {"If-None-Match": '"v1"'}) is None  # out of the window


def test_a_server_refusing_validators_gets_the_request_again_without_them(tmp_path, articles, serve):
    """A 412 (or a firewall's 4xx) to a conditional request: the request goes again without the
    validators and the page is decided by its text, and the URL keeps none, so the next crawl asks
    plainly (every recrawl of such a URL once failed until DEDUP_CONDITIONAL_MAX_AGE)."""
    root = site(tmp_path, articles, 3)
    server = serve(str(root), validators="refuse")  # sends validators, refuses them when they come back
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a{i}.html" for i in range(3)])
    crawl(tmp_path, urls, name="first")
    assert entry(tmp_path, f"{server.base_url}/a0.html").validators
    (root / "a2.html").write_bytes(edited(articles[2]))
    proc, second = crawl(tmp_path, urls, name="second")
    stats = dedup_stats(proc.stderr)
    assert server.served.get(412, 0) == 3 and stats["dedup/conditional/refused"] == 3
    assert [i["url"] for i in second] == [f"{server.base_url}/a2.html"]  # the update, found by its text
    assert stats["dedup/revisits/unchanged"] == 2 and stats["dedup/revisits/updated"] == 1
    kept = entry(tmp_path, f"{server.base_url}/a0.html")
    assert kept is None or not kept.validators  # none kept: asked plainly next time
    asked = len(server.asked)
    proc, third = crawl(tmp_path, urls, name="third")
    assert len(server.asked) == asked and server.served.get(412, 0) == 3  # no conditional request
    assert dedup_stats(proc.stderr)["dedup/revisits/unchanged"] == 3


def test_a_known_copy_is_asked_and_a_304_drops_it_again_without_a_download(tmp_path, articles, serve):
    root = site(tmp_path, articles, 3)
    for i in range(3):  # a third of the site's URLs are copies (another path, one byte more)
        (root / f"copy{i}.html").write_bytes(articles[i][0] + b"\n")
    server = serve(str(root), validators="honour")
    pages = [f"{server.base_url}/a{i}.html" for i in range(3)] + [f"{server.base_url}/copy{i}.html" for i in range(3)]
    urls = write_urls(tmp_path / "urls.txt", pages)
    proc, first = crawl(tmp_path, urls, name="first")
    assert len(first) == 3
    dropped = {r["url"]: r["duplicate_of"] for r in lines_of(tmp_path)}
    assert len(dropped) == 3
    copy_entry = entry(tmp_path, next(iter(dropped)))
    assert copy_entry is not None and copy_entry.copy_of and copy_entry.copy is None and copy_entry.etag
    assert len(copy_entry.encode()) < 80  # a few bytes a known copy
    sent_before = server.served["bytes"]
    proc, second = crawl(tmp_path, urls, name="second")
    stats = dedup_stats(proc.stderr)
    assert second == [] and stats["dedup/conditional"] == 6 and server.served[304] == 6
    assert server.served["bytes"] == sent_before  # not one body downloaded again
    again = [r for r in lines_of(tmp_path, "not-modified") if r["reason"] != "unchanged"]
    assert {r["url"]: r["duplicate_of"] for r in again} == dropped
    assert verify(Deduplicator(dir=str(tmp_path / "idx")).open().index).ok
    # a copy that changed is downloaded and decided by its text: now a page of its own
    changed = next(u for u in dropped if u.endswith("copy1.html") or u.endswith("a1.html"))
    time.sleep(1.1)
    (root / changed.rsplit("/", 1)[1]).write_bytes(articles[5][0])
    proc, third = crawl(tmp_path, urls, name="third")
    assert [i["url"] for i in third] == [changed] and server.served[304] == 6 + 5
    assert not entry(tmp_path, changed).copy_of  # kept now: its own entry


def test_a_copy_dropped_on_a_304_is_restored_by_allow_listing_it(tmp_path, articles, serve):
    """`restore` of a known copy a recrawl dropped on a 304 (its body not downloaded again, so no
    text in its line) says so instead of blaming settings, and `--allow-file` still lists it: the
    next crawl with that file downloads the copy and keeps it."""
    from .conftest import cli

    root = site(tmp_path, articles, 2)
    (root / "copy0.html").write_bytes(articles[0][0] + b"\n")
    server = serve(str(root), validators="honour")
    copy = f"{server.base_url}/copy0.html"
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/a0.html", f"{server.base_url}/a1.html", copy])
    crawl(tmp_path, urls, "-s", "CONCURRENT_REQUESTS=1", name="first")
    _, second = crawl(tmp_path, urls, "-s", "CONCURRENT_REQUESTS=1", name="second")
    assert second == [] and [r["measure"] for r in lines_of(tmp_path) if r["url"] == copy][-1] == "not-modified"
    allow = tmp_path / "allow.txt"
    proc = cli("restore", "--log", tmp_path / "idx" / "droplog.jsonl", "--url", copy, "-o", tmp_path / "back.jsonl",
               "--allow-file", allow)
    assert proc.returncode == 0, proc.stderr
    assert "1 selected drop was a copy decided on a 304 Not Modified" in proc.stdout, proc.stdout
    assert "DEDUP_STORE_TEXT were off" not in proc.stdout
    assert [p for p in allow.read_text(encoding="utf-8").split() if re.search(p, copy)] and (tmp_path / "back.jsonl").read_text() == ""
    _, third = crawl(tmp_path, urls, "-s", f"DEDUP_ALLOW_FILE={allow}", "-s", "CONCURRENT_REQUESTS=1", name="third")
    assert [(i["url"], i["status"]) for i in third] == [(copy, 200)]  # (downloaded in full, passed unchecked)


def test_without_revalidating_copies_every_recrawl_downloads_them(tmp_path, articles, serve):
    """The figure beside the one above: what the copies cost a recrawl when only kept URLs are asked."""
    root = site(tmp_path, articles, 2)
    (root / "copy0.html").write_bytes(articles[0][0] + b"\n")
    server = serve(str(root), validators="honour")
    urls = write_urls(tmp_path / "urls.txt", [f"{server.base_url}/{n}" for n in ("a0.html", "a1.html", "copy0.html")])
    crawl(tmp_path, urls, name="first")
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:  # as before this release: no entry for a dropped copy
        gone = [u for u in (f"{server.base_url}/a0.html", f"{server.base_url}/copy0.html")
                if dedup.index.read(lambda txn, u=u: dedup.index.by_url(txn, u)) is None]
        dedup.index.write(lambda txn: txn.fetch_delete(url_key(gone[0])))
    before = server.served["bytes"]
    crawl(tmp_path, urls, name="second")
    assert server.served["bytes"] - before == len((root / gone[0].rsplit("/", 1)[1]).read_bytes())


@pytest.mark.parametrize("where", ["lmdb", "redis_server", "redis_cluster"])
def test_a_known_copys_entry_stands_for_it_on_every_store(tmp_path, articles, request, where):
    settings = ({"dir": str(tmp_path / "idx")} if where == "lmdb" else
                dict(backend="redis", redis_url=request.getfixturevalue(where),
                     redis_prefix=f"copy-entry-{os.getpid()}-{time.time_ns()}"))
    html = articles[1][0]

    def response(etag):
        return from_response({"ETag": etag}, 200, html, b"\x01" * 16, time.time(), False)

    with Deduplicator(**settings) as dedup:
        assert dedup.check("https://a.example/story", html=html, fetched=response('"k"')).action == "keep"
        dropped = dedup.check("https://b.example/copy", html=html, fetched=response('"c"'))
        assert dropped.action == "drop" and dropped.duplicate_of == "https://a.example/story"
        found = dedup.fetch_entry("https://b.example/copy")
        assert found is not None and found[0].copy_of and found[0].etag == '"c"'
        fp, _, passed_on = dedup.not_modified("https://b.example/copy", {"If-None-Match": '"c"'})
        again = dedup.check("https://b.example/copy", fingerprinted=fp, title=fp.title)
        assert not passed_on and (again.action, again.measure, again.reason, again.duplicate_of) == (
            "drop", "not-modified", "exact", "https://a.example/story")
        assert again.text is None  # (its own text was not downloaded: the kept page's is not written as its)
        assert dedup.not_modified("https://b.example/copy", {"If-None-Match": '"other"'}) is None
        dedup.index.write(lambda txn: dedup.index.remove(txn, dedup.index.by_url(txn, "https://a.example/story").doc_id))
        assert dedup.not_modified("https://b.example/copy", {"If-None-Match": '"c"'}) is None  # its page left
        assert verify(dedup.index).ok


def test_a_near_copys_304_is_logged_as_the_near_copy_it_was(tmp_path, articles):
    html = articles[2][0]
    near = edited(articles[2])

    def response(etag, body):
        return from_response({"ETag": etag}, 200, body, b"\x02" * 16, time.time(), False)

    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        assert dedup.check("https://a.example/s", html=html, fetched=response('"k"', html)).action == "keep"
        first = dedup.check("https://b.example/s", html=near, fetched=response('"n"', near))
        assert (first.action, first.reason) == ("drop", "near")
        fp, found, _ = dedup.not_modified("https://b.example/s", {"If-None-Match": '"n"'})
        again = dedup.check("https://b.example/s", fingerprinted=fp, title=fp.title)
    assert found.near and (again.action, again.reason, again.measure) == ("drop", "near", "not-modified")
    assert again.text is None


def test_show_says_a_known_copy_was_dropped_again_on_a_304():
    from crawler_dedup.config import DedupConfig
    from crawler_dedup.tools.show import why

    line = why({"reason": "near", "measure": "not-modified", "similarity": 1.0, "url": "https://b/1",
                "duplicate_of": "https://a/1"}, DedupConfig())
    assert line.startswith("near: dropped again without a download") and "304" in line


def test_a_known_copys_re_pointed_entry_is_written_again_when_its_transaction_runs_again(tmp_path):
    """A transaction is run again after a conflict, a slot move or a grown map, with the page's
    entry as read for its 304: re-pointing that entry once changed the entry itself, so the run
    again found nothing to write, and the copy kept naming the record gone (a review's find)."""
    from crawler_dedup.core.index.revalidation import file_fetch
    from crawler_dedup.core.verdict import Action, Reason, Verdict

    url = "https://site.test/copy"
    entry = Fetch(etag='"e1"', doc_id=3, copy_of=True, asked=True)
    verdict = Verdict(url=url, action=Action.DROP, reason=Reason.EXACT, doc_id=6, duplicate_of="https://site.test/kept")

    def aborted(txn):
        file_fetch(txn, verdict, entry, 1_000.0, filed=None, run=2, max_age=0)
        raise RuntimeError("run again")
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        with pytest.raises(RuntimeError):
            d.index.write(aborted)
        d.index.write(lambda txn: file_fetch(txn, verdict, entry, 1_000.0, filed=None, run=2, max_age=0))
        got = d.index.read(lambda txn: txn.fetch_get(url_key(url)))
    assert got is not None and Fetch.decode(got).doc_id == 6 and Fetch.decode(got).copy_of
