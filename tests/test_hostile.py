"""Hostile input through extract -> fingerprint -> decide, in process (hypothesis) and in real
crawls from 127.0.0.1: nothing crashes, nothing hangs past a cap, and no page is dropped without a
drop-log line (each page is kept, skipped with a counted reason, or dropped with a line)."""

import glob
import gzip
import json
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.extract import extract
from tests.conftest import SHARED_DATA, dedup_stats, scrapy_crawl, write_urls

ARABIC = ("كانت المدينة هادئة في الصباح الباكر عندما بدأ الباعة يفتحون متاجرهم ويرتبون بضائعهم على الرفوف "
          "بينما كان الأطفال يسيرون إلى مدارسهم ")
CHINESE = "今天早上城市很安静，商店老板们开始打开店门，把货物整齐地摆放在货架上，孩子们背着书包走向学校。"
JAPANESE = "朝の町は静かで、店主たちは店を開け、棚に商品を並べ始めた。子どもたちはランドセルを背負って学校へ向かった。"


def _page(title: str, body: str) -> str:
    return f"<html><head><title>{title}</title></head><body><article><p>{body}</p></article></body></html>"


def _article(articles, n=0) -> bytes:
    return articles[n][0]


def hostile_pages(articles) -> dict[str, tuple[dict, bytes]]:
    """path -> (headers, body): every kind of bad page a crawl meets."""
    html = {"Content-Type": "text/html"}
    article = _article(articles)
    text = articles[1][1]
    pages = {
        "/random.html": (html, random.Random(1).randbytes(200_000)),
        "/nested.html": (html, b"<html><body>" + b"<div>" * 200_000 + b"deep text " * 50 + b"</div>" * 200_000
                         + b"</body></html>"),
        "/attribute.html": (html, b'<html><body><a title="' + b"x" * 8_000_000 + b'">link</a><p>'
                            + text.encode() + b"</p></body></html>"),
        "/nul.html": (html, article.replace(b"<p>", b"<p>\x00\x00", 50)),
        "/utf16-no-bom.html": ({"Content-Type": "text/html"}, _page("UTF-16", text).encode("utf-16-le")),
        "/utf16-declared.html": ({"Content-Type": "text/html; charset=utf-16"},
                                 _page("UTF-16", articles[2][1]).encode("utf-16")),
        "/mixed.html": (html, _page("mixed", articles[3][1]).encode("utf-8")[:3000]
                        + articles[3][1].encode("latin-1", "replace") + "é ü ß".encode("cp1252")),
        "/wrong-charset.html": ({"Content-Type": "text/html; charset=no-such-charset"},
                                _page("wrong", articles[4][1]).encode("utf-8")),
        "/rtl.html": (html, _page("عربي", ARABIC * 20).encode("utf-8")),
        "/cjk.html": (html, _page("中文", CHINESE * 15).encode("utf-8")),
        "/cjk-copy.html": (html, _page("中文", CHINESE * 15).encode("utf-8") + b"<!-- another url -->"),
        "/ja.html": (html, _page("日本語", JAPANESE * 15).encode("utf-8")),
        "/control.html": (html, _page("\x1b[31mred\x07", "".join(chr(c) for c in range(32)) * 40
                                      + articles[5][1]).encode("utf-8")),
        "/huge.html": (html, b"<html><body>" + b"<p>" + b"word " * 8_000_000 + b"</p></body></html>"),  # 40 MB
        "/script-only.html": (html, b"<html><head><script>" + b"var a=1;" * 200_000 + b"</script></head></html>"),
        "/empty.html": (html, b""),
        "/gzip-bomb.html": ({"Content-Type": "text/html", "Content-Encoding": "gzip"},
                            gzip.compress(b"<html><body>" + b"\0" * 200_000_000, 9)),
    }
    for path in sorted(glob.glob(os.path.join(SHARED_DATA, "warcio-samples", "test", "data", "*")))[:12]:
        with open(path, "rb") as fh:  # archives and broken archives served as if they were pages
            pages["/sample-" + os.path.basename(path)] = (html, fh.read()[:2_000_000])
    return pages


# -- in process -------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.one_of(st.binary(max_size=5000),
                      st.text(max_size=3000).map(lambda t: t.encode("utf-8", "surrogatepass")),
                      st.text(max_size=2000).map(lambda t: f"<html><body><p>{t}</p></body></html>".encode(
                          "utf-8", "surrogatepass"))))
def test_random_bytes_are_kept_or_skipped_never_raise(tmp_path_factory, body):
    path = tmp_path_factory.mktemp("fuzz")
    with Deduplicator(dir=str(path / "idx"), workers=0) as d:
        first = d.check("https://fuzz.test/a", html=body)
        again = d.check("https://fuzz.test/b", html=body)
    assert first.action == "keep"  # nothing before it to be a copy of
    # the same bytes again: a drop only with what a drop-log line needs
    if again.action == "drop":
        assert again.duplicate_of == "https://fuzz.test/a" and again.reason


@settings(max_examples=100, deadline=None)
@given(text=st.text(min_size=1, max_size=4000))
def test_any_text_fingerprints_or_is_skipped(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("text")
    with Deduplicator(dir=str(path / "idx"), workers=0) as d:
        v = d.check("https://t.test/", text=text)
    assert v.action == "keep"
    assert (v.fingerprint is None) == (v.skipped is not None)


# the CJK page again; example.arc: the whole 30-word text, under the same title, of the page the
# other capture of example.com was taken for (a second capture of one page, test below)
COPIES = {"/cjk-copy.html", "/sample-example.arc"}


def test_hostile_pages_in_process(tmp_path, articles):
    """Each page kept (checked or skipped), the copies dropped; right-to-left and CJK text are
    real text: a copy is found, another text is not taken for one."""
    got = {}
    with Deduplicator(dir=str(tmp_path / "idx"), workers=0) as d:
        for path, (_, body) in hostile_pages(articles).items():
            if path == "/gzip-bomb.html":
                continue  # (the crawl test: decompression is Scrapy's)
            first = d.check("https://h.test" + path, html=body)
            assert first.action == ("drop" if path in COPIES else "keep"), path
            got[path] = first
    assert got["/cjk.html"].fingerprint is not None and got["/rtl.html"].fingerprint is not None
    with Deduplicator(dir=str(tmp_path / "idx2"), workers=0) as d:
        pages = hostile_pages(articles)
        assert d.check("https://a.test/cjk", html=pages["/cjk.html"][1]).action == "keep"
        copy = d.check("https://b.test/cjk", html=pages["/cjk-copy.html"][1])
        assert copy.action == "drop" and copy.duplicate_of == "https://a.test/cjk"
        assert d.check("https://c.test/ja", html=pages["/ja.html"][1]).action == "keep"
        assert d.check("https://d.test/rtl", html=pages["/rtl.html"][1]).action == "keep"


def test_a_second_capture_of_a_tiny_page_is_its_copy(tmp_path, articles):
    # example.arc shows, under the same title, the whole text of the page the other archive of
    # example.com's page was taken for (that page shows nothing else): a second capture of one page
    pages = hostile_pages(articles)
    with Deduplicator(dir=str(tmp_path / "idx"), workers=0) as d:
        d.check("https://h.test/sample-example-space-in-url.arc", html=pages["/sample-example-space-in-url.arc"][1])
        got = d.check("https://h.test/sample-example.arc", html=pages["/sample-example.arc"][1])
    assert got.action == "drop" and got.duplicate_of == "https://h.test/sample-example-space-in-url.arc"


def test_extraction_of_a_huge_page_is_capped(articles):
    huge = b"<html><body><p>" + b"word " * 2_000_000 + b"</p></body></html>"  # 10 MB
    got = extract(huge)
    assert got is not None and len(got.text) <= 2_000_000


# -- in a real crawl ----------------------------------------------------------------------------

@pytest.mark.parametrize("workers", ["0", "auto"])
def test_hostile_pages_in_a_crawl(tmp_path, serve, articles, workers):
    pages = hostile_pages(articles)
    routes = {path: (200, headers, body) for path, (headers, body) in pages.items()}
    server = serve(routes=routes)
    urls = [server.base_url + p for p in pages]
    write_urls(tmp_path / "urls.txt", urls)
    out = tmp_path / "items.jsonl"
    result = scrapy_crawl("-a", f"urls={tmp_path / 'urls.txt'}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                          "-s", f"DEDUP_WORKERS={workers}", "-s", "DOWNLOAD_MAXSIZE=52428800",
                          "-s", "CONCURRENT_REQUESTS=4", "-O", str(out), timeout=600)
    log = result.stderr
    assert result.returncode == 0, log[-3000:]
    assert "Traceback" not in log, log[-5000:]
    assert "Spider closed (finished)" in log
    items = {json.loads(line)["url"] for line in out.read_text().splitlines() if line.strip()}
    droplog = tmp_path / "idx" / "droplog.jsonl"
    dropped = {json.loads(line)["url"] for line in droplog.read_text().splitlines()} if droplog.exists() else set()
    # the bomb inflates past DOWNLOAD_MAXSIZE: Scrapy cancels it, and says so
    assert "gzip-bomb" in log and ("DOWNLOAD_MAXSIZE" in log or "maxsize" in log.lower())
    for url in urls:
        if url.endswith("/gzip-bomb.html"):
            continue
        assert (url in items) != (url in dropped), url  # stored, or dropped with a line: never both, never neither
    stats = dedup_stats(log)
    assert stats.get("dedup/skipped/too_large", 0) >= 1  # the 40 MB page: kept unchecked, counted
    assert stats.get("dedup/errors/extract", 0) + stats.get("dedup/errors/internal", 0) == 0
    # (with 4 requests at once either may come first: one of the two is dropped as the other's copy)
    assert len({server.base_url + "/cjk.html", server.base_url + "/cjk-copy.html"} & dropped) == 1
