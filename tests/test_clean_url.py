"""The clean URL wins (DEDUP_PREFER_CLEAN_URL): of a page's URLs that differ in tracking and
session parameters only, the one a reader would cite is kept, whatever order they come in
(core/decide/cleaner.py, rules.clean_url)."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from crawler_dedup import Deduplicator
from crawler_dedup.core.decide.cleaner import cleaner, rank, same_page
from tests.test_visible import html, prose

CLEAN = "https://news.example/articles/bridge.html"
TRACKED = CLEAN + "?utm_source=newsletter&utm_medium=email"
SESSION = "https://news.example/articles/bridge.html;jsessionid=A1B2C3?ref_src=tw"
PAGE = html("Harbour bridge reopens after the storm", prose(70, 400))


def test_a_cleaner_url_is_the_same_page_without_tracking_or_session_parameters():
    assert same_page(CLEAN, TRACKED) and cleaner(CLEAN, TRACKED) and not cleaner(TRACKED, CLEAN)
    assert cleaner(CLEAN, SESSION) and cleaner(TRACKED, SESSION)  # a session id is worse than any tracking
    assert same_page("https://a.example/p?id=7&utm_campaign=x", "https://a.example/p?utm_source=y&id=7")
    # what names another page is never noise
    assert not same_page("https://a.example/p?id=7", "https://a.example/p?id=8")
    assert not same_page("https://a.example/p", "https://b.example/p")
    assert not same_page("https://a.example/p", "https://a.example/print/p")
    assert not cleaner(CLEAN, CLEAN)


def test_https_is_the_cleaner_of_a_pages_two_schemes(tmp_path):
    """http://... is one letter shorter, yet an http copy never replaces the https page (it once
    did: the scheme was left out of `same_page`, then the shorter URL won)."""
    plain = CLEAN.replace("https://", "http://")
    assert same_page(plain, CLEAN) and cleaner(CLEAN, plain) and not cleaner(plain, CLEAN)
    for n, order in enumerate(itertools.permutations([plain, CLEAN])):
        _, kept = _crawl(tmp_path / str(n), list(order))
        assert [u for u, k in zip(order, kept) if k] == [CLEAN], order


@settings(max_examples=200, deadline=None)
@given(st.permutations([CLEAN, TRACKED, SESSION, CLEAN + "?gclid=1", CLEAN + "?fbclid=22&utm_term=a",
                        CLEAN.replace("https://", "http://"), TRACKED.replace("https://", "http://")]))
def test_the_order_is_total_so_the_same_url_wins_in_any_order(urls):
    best = urls[0]
    for url in urls[1:]:
        if cleaner(url, best):
            best = url
    assert best == CLEAN == min(urls, key=rank)


def _crawl(tmp_path, urls, **settings):
    log = tmp_path / "droplog.jsonl"
    with Deduplicator(dir=str(tmp_path / "idx"), droplog=str(log), **settings) as dedup:
        verdicts = [dedup.check(url, html=PAGE) for url in urls]
        kept = dedup.index.read(lambda txn: [dedup.index.by_url(txn, u) is not None for u in urls])
    return verdicts, kept


def test_the_clean_url_is_kept_whatever_order_the_copies_come_in(tmp_path):
    for n, order in enumerate(itertools.permutations([CLEAN, TRACKED, SESSION])):
        verdicts, kept = _crawl(tmp_path / str(n), list(order))
        assert [u for u, k in zip(order, kept) if k] == [CLEAN], order
        clean = verdicts[order.index(CLEAN)]
        assert clean.action == "keep"
        if order[0] != CLEAN:  # a tracked copy was kept first: the clean URL replaced it
            assert clean.superseded is not None and clean.superseded["rule"] == "clean_url"


def test_a_superseded_tracking_url_gets_its_drop_log_line(tmp_path):
    from crawler_dedup.droplog import superseded_record

    verdicts, _ = _crawl(tmp_path, [TRACKED, CLEAN])
    record = superseded_record(verdicts[1], "response", "s")
    assert (record["url"], record["duplicate_of"], record["reason"], record["rule"]) == (
        TRACKED, CLEAN, "superseded", "clean_url")
    json.dumps(record)


def test_off_the_first_copy_stays(tmp_path):
    verdicts, kept = _crawl(tmp_path, [TRACKED, CLEAN], prefer_clean_url=False)
    assert kept == [True, False] and (verdicts[1].action, verdicts[1].duplicate_of) == ("drop", TRACKED)


def test_a_page_naming_the_kept_url_as_its_canonical_does_not_replace_it(tmp_path):
    page = PAGE.replace("<head>", f"<head><link rel='canonical' href='{TRACKED}'>")
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        first = dedup.check(TRACKED, html=page)
        second = dedup.check(CLEAN, html=page)
    assert first.action == "keep" and (second.action, second.duplicate_of) == ("drop", TRACKED)


def test_show_says_a_cleaner_url_replaced_the_page():
    from crawler_dedup.config import DedupConfig
    from crawler_dedup.tools.show import why

    line = why({"reason": "superseded", "rule": "clean_url", "measure": "exact", "similarity": 1.0,
                "duplicate_of": CLEAN}, DedupConfig())
    assert "cleaner URL" in line and "rel=canonical" not in line and "DEDUP_PREFER_CLEAN_URL" in line


def test_show_follows_a_kept_tracking_url_to_the_clean_url_that_replaced_it(tmp_path):
    from crawler_dedup.droplog import DropLog, make_record, superseded_record

    from .conftest import cli

    log = tmp_path / "droplog.jsonl"
    with Deduplicator(dir=str(tmp_path / "idx")) as dedup, DropLog(str(log)) as drops:
        assert dedup.check(TRACKED, html=PAGE).action == "keep"
        copy = dedup.check(SESSION, html=PAGE)  # dropped against the tracking URL, kept then
        drops.write(make_record(copy, "response", "t"))
        clean = dedup.check(CLEAN, html=PAGE)  # replaces it
        drops.write(superseded_record(clean, "response", "t"))
    assert copy.duplicate_of == TRACKED and clean.superseded["url"] == TRACKED
    proc = cli("show", SESSION, "--log", log, "--dir", tmp_path / "idx", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"was replaced later by {CLEAN}" in proc.stdout and "a cleaner URL of the same page" in proc.stdout
    assert "no longer in" not in proc.stdout


def test_a_replaced_tracking_url_is_asked_as_a_known_copy_on_the_next_crawl(tmp_path):
    import time

    from crawler_dedup.core.index.fetches import from_response

    def response(etag):
        return from_response({"ETag": etag}, 200, PAGE.encode(), b"\x03" * 16, time.time(), True)

    with Deduplicator(dir=str(tmp_path / "idx")) as dedup:
        assert dedup.check(TRACKED, html=PAGE, fetched=response('"t"')).action == "keep"
        clean = dedup.check(CLEAN, html=PAGE, fetched=response('"c"'))
        assert clean.superseded is not None and clean.superseded["url"] == TRACKED
        found, _ = dedup.fetch_entry(TRACKED)
        assert found.copy_of and found.etag == '"t"' and found.copy is None
        fp, _, passed_on = dedup.not_modified(TRACKED, {"If-None-Match": '"t"'})
        again = dedup.check(TRACKED, fingerprinted=fp, title=fp.title)
    assert not passed_on and (again.action, again.duplicate_of, again.measure) == ("drop", CLEAN, "not-modified")


def test_tracking_parameters_are_taken_out_before_download(tmp_path, serve):
    """DEDUP_CLEAN_REQUESTS: a URL that differs from another only by tracking parameters is sent as
    the clean URL, so a repeat is never downloaded and no item carries one; DEDUP_TRACKING_PARAMS
    adds names; off, every URL is fetched as it is."""
    from tests.conftest import dedup_stats, make_site, scrapy_crawl, write_urls

    site = make_site(tmp_path / "site", {f"{n}.html": html(f"Story {n} of the harbour", prose(80 + i, 300)).encode()
                                         for i, n in enumerate("abc")})
    server = serve(site)
    base = server.base_url
    urls = [f"{base}/a.html", f"{base}/a.html?utm_source=news&utm_medium=email", f"{base}/b.html?id=2&fbclid=x9",
            f"{base}/c.html?ref=home&id=3"]
    write_urls(tmp_path / "urls.txt", urls)
    proc = scrapy_crawl("-a", f"urls={tmp_path / 'urls.txt'}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                        "-s", "DEDUP_TRACKING_PARAMS=ref", "-o", f"{tmp_path / 'items.jsonl'}:jsonl")
    assert proc.returncode == 0, proc.stderr[-3000:]
    asked = sorted(p for p in server.paths if p != "/robots.txt")
    assert asked == ["/a.html", "/b.html?id=2", "/c.html?id=3"], asked
    items = [json.loads(line)["url"] for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert sorted(items) == [f"{base}/a.html", f"{base}/b.html?id=2", f"{base}/c.html?id=3"]
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/requests/cleaned"] == 3 and stats["dedup/requests/cleaned/utm_source"] == 1
    assert stats["dedup/requests/cleaned/ref"] == 1

    server.paths.clear()
    proc = scrapy_crawl("-a", f"urls={tmp_path / 'urls.txt'}", "-s", f"DEDUP_DIR={tmp_path / 'idx2'}",
                        "-s", "DEDUP_CLEAN_REQUESTS=False")
    assert proc.returncode == 0 and "dedup/requests/cleaned" not in proc.stderr
    assert "/a.html?utm_source=news&utm_medium=email" in server.paths


def test_a_redirects_target_and_dont_filter_requests_are_sent_as_they_are():
    """A site that adds tracking parameters by redirect: cleaning its target would send it back
    to the URL already asked, which the duplicate filter drops (the page never downloaded)."""
    from scrapy import Request
    from scrapy.utils.test import get_crawler

    from crawler_dedup.scrapy.middleware import DedupMiddleware

    crawler = get_crawler(settings_dict={"DEDUP_BACKEND": "memory", "DEDUP_WORKERS": 0})
    mw = DedupMiddleware.from_crawler(crawler)
    tracked = "https://news.example/a?id=1&utm_source=mail"
    cleaned = mw._cleaned(Request(tracked))
    assert cleaned is not None and cleaned.url == "https://news.example/a?id=1"
    assert mw._cleaned(Request(tracked, meta={"redirect_urls": ["https://news.example/a?id=1"]})) is None
    assert mw._cleaned(Request(tracked, dont_filter=True)) is None
    assert mw._cleaned(Request(tracked, meta={"dont_dedup": True})) is None
    assert mw._cleaned(Request("https://news.example/a?id=1")) is None
