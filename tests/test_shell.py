"""The Scrapy shell in process (get_crawler, real responses and items, a real LMDB index): the
add-on's components, what the middleware and the pipeline do with a page, and the stats and
drop-log lines the extension records. Real crawls over HTTP are in test_crawl.py."""

import asyncio
import json

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, TextResponse
from scrapy.utils.test import get_crawler

from crawler_dedup.pipeline import DuplicateItem
from crawler_dedup.scrapy.extension import DedupExtension
from crawler_dedup.middleware import DedupMiddleware
from crawler_dedup.pipeline import DedupPipeline

ARTICLE = ("The county board met on Tuesday to vote on a plan for new bus routes, a library branch and "
           "repairs to three bridges. Residents spoke for two hours, most of them in favour of the routes "
           "but worried about the cost of the bridges, which engineers said could double by next spring. ")


def _html(body: str, title: str = "Board votes on bus routes") -> bytes:
    return f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1><p>{body}</p><p>{body}</p></article></body></html>".encode()


@pytest.fixture
def shell(tmp_path, plain_model):
    crawler = get_crawler(settings_dict={
        "ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": str(tmp_path / "idx"),
        "DEDUP_MODEL": plain_model,  # (short made-up pages: decided by resemblance, the subject being the shell)
        "DEDUP_LOGSTATS_INTERVAL": 0, "DEDUP_COMMIT_BATCH": 1,
        "DEDUP_WORKERS": 0,  # (no reactor runs here to hear back from a worker)
    })
    ext = DedupExtension.of(crawler)
    ext.spider_opened(None)
    yield crawler, ext, DedupMiddleware.from_crawler(crawler), DedupPipeline.from_crawler(crawler)
    ext.spider_closed(None, "finished")
    ext.engine_stopped()


def _fetch(mw, url, body=None, status=200, cls=HtmlResponse, **meta):
    request = Request(url, meta=meta)
    response = cls(url, body=body if body is not None else _html(ARTICLE), status=status, request=request,
                   encoding="utf-8")
    return asyncio.run(mw.process_response(request, response))


def test_the_addon_enables_every_component():
    crawler = get_crawler(settings_dict={"ADDONS": {"crawler_dedup.addon.DedupAddon": 0}})
    s = crawler.settings
    assert "crawler_dedup.middleware.DedupMiddleware" in s.getdict("DOWNLOADER_MIDDLEWARES")
    assert "crawler_dedup.middleware.DedupSpiderMiddleware" in s.getdict("SPIDER_MIDDLEWARES")
    assert "crawler_dedup.pipeline.DedupPipeline" in s.getdict("ITEM_PIPELINES")
    assert "crawler_dedup.scrapy.extension.DedupExtension" in s.getdict("EXTENSIONS")


def test_the_middleware_keeps_the_first_page_and_drops_its_copy_with_a_drop_log_line(shell):
    crawler, ext, mw, _ = shell
    first = _fetch(mw, "https://a.example/story")
    assert first.request.meta["dedup_fingerprint"] is not None
    with pytest.raises(IgnoreRequest, match="duplicate of https://a.example/story"):
        _fetch(mw, "https://b.example/copy")
    lines = [json.loads(line) for line in open(ext.config.droplog, encoding="utf-8")]
    assert [(r["url"], r["duplicate_of"], r["action"], r["stage"]) for r in lines] == [
        ("https://b.example/copy", "https://a.example/story", "dropped", "response")]
    stats = crawler.stats.get_stats()
    assert (stats["dedup/checked"], stats["dedup/kept"], stats["dedup/dropped"]) == (2, 1, 1)
    assert stats["dedup/dropped/exact"] == 1


def test_the_middleware_skips_what_it_cannot_or_must_not_check_and_counts_it(shell):
    crawler, _, mw, _ = shell
    for url, kwargs in [("https://a/404", {"status": 404}), ("https://a/json", {"cls": TextResponse, "body": b"{}"}),
                        ("https://a/empty", {"body": b""}), ("https://a/mine", {"dont_dedup": True})]:
        _fetch(mw, url, **kwargs)
    _fetch(mw, "https://a/again", dont_dedup=True)  # a copy, but not to be checked: passed on
    stats = crawler.stats.get_stats()
    assert {k: v for k, v in stats.items() if k.startswith("dedup/skipped/")} == {
        "dedup/skipped/status": 1, "dedup/skipped/not_html": 1, "dedup/skipped/empty": 1,
        "dedup/skipped/dont_dedup": 2}
    assert "dedup/checked" not in stats


def test_an_items_title_field_is_weighed_with_its_text(tmp_path, articles):
    """DEDUP_ITEM_TITLE_FIELD: a text item's title reaches the score (the shipped one), so a short
    copy under the same headline is dropped; the same text under two unrelated titles is not."""
    crawler = get_crawler(settings_dict={
        "ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": str(tmp_path / "idx"),
        "DEDUP_LOGSTATS_INTERVAL": 0, "DEDUP_COMMIT_BATCH": 1, "DEDUP_WORKERS": 0})
    ext = DedupExtension.of(crawler)
    ext.spider_opened(None)
    try:
        pipeline = DedupPipeline.from_crawler(crawler)
        text = " ".join(articles[4][1].split()[:120])
        first = {"url": "https://agency.example/statement", "text": text, "title": "Statement on the tournament draw"}
        assert pipeline.process_item(first) is first
        with pytest.raises(DuplicateItem):
            pipeline.process_item({**first, "url": "https://wire.example/statement"})
        rec = [json.loads(line) for line in open(ext.config.droplog, encoding="utf-8")][-1]
        assert rec["title"] == first["title"] and rec["duplicate_of"] == first["url"]
        other = {"url": "https://shop.example/p/1", "text": text, "title": "Blue ceramic mug | Mug Shop"}
        assert pipeline.process_item(other) is other  # (a block of text under another page's title)
    finally:
        ext.spider_closed(None, "finished")
        ext.engine_stopped()


def test_the_pipeline_drops_a_duplicate_item_and_skips_a_page_the_middleware_decided(shell):
    crawler, _, mw, pipeline = shell
    _fetch(mw, "https://a.example/story")
    item = {"url": "https://a.example/story", "text": ARTICLE * 2}
    assert pipeline.process_item(item) is item  # decided as a response already
    assert crawler.stats.get_value("dedup/skipped/checked_as_response") == 1
    with pytest.raises(DuplicateItem):
        pipeline.process_item({"url": "https://c.example/feed-copy", "text": ARTICLE * 2})
    assert pipeline.process_item({"url": "https://c.example/other", "title": "no page"})["title"] == "no page"


def test_a_drop_that_cannot_be_logged_is_kept(shell, tmp_path):
    crawler, ext, mw, _ = shell
    _fetch(mw, "https://a.example/story")
    ext.recorder.droplog.close()
    ext.recorder.droplog = None  # the drop log went away
    response = _fetch(mw, "https://b.example/copy")  # no IgnoreRequest: kept, counted
    assert response.url == "https://b.example/copy"
    assert crawler.stats.get_value("dedup/errors/droplog") == 1 and crawler.stats.get_value("dedup/kept") == 2


def test_dedup_enabled_off_disables_every_component(tmp_path):
    from scrapy.exceptions import NotConfigured

    from crawler_dedup.middleware import DedupSpiderMiddleware

    crawler = get_crawler(settings_dict={"DEDUP_ENABLED": False, "DEDUP_DIR": str(tmp_path / "idx")})
    for component in (DedupExtension, DedupMiddleware, DedupSpiderMiddleware, DedupPipeline):
        with pytest.raises(NotConfigured):
            component.from_crawler(crawler)
    assert not (tmp_path / "idx").exists()  # nothing opened or created


def test_a_page_that_cannot_be_recorded_is_kept_by_the_pipeline(shell, monkeypatch):
    crawler, ext, _, pipeline = shell
    pipeline.process_item({"url": "https://a/1", "text": ARTICLE * 2})

    def broken(verdict, stage, item=None, run=0):
        raise KeyError("a broken stats collector")

    monkeypatch.setattr(ext.recorder, "record", broken)
    item = {"url": "https://b/copy", "text": ARTICLE * 2}
    assert pipeline.process_item(item) is item  # a copy, but not recorded: kept, never a failed item
    assert crawler.stats.get_value("dedup/errors/internal") == 1
