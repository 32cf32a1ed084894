"""Feeds written without the pages superseded later in the same crawl (scrapy/feeds.py, the
add-on's DEDUP_FEED_FILTER): real `scrapy crawl` runs with -o and FEEDS against pages served on
127.0.0.1, and the plugin alone over Scrapy's own exporters."""

import csv
import gzip
import io
import json
import logging

import pytest
from scrapy import signals
from scrapy.exporters import CsvItemExporter, JsonItemExporter, JsonLinesItemExporter, XmlItemExporter
from scrapy.extensions.postprocessing import PostProcessingManager
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawler_dedup.scrapy import feeds
from crawler_dedup.scrapy.addon import DedupAddon

from .conftest import dedup_stats, make_site, scrapy_crawl, write_urls

GZIP = "scrapy.extensions.postprocessing.GzipPlugin"


# -- a real crawl -------------------------------------------------------------------------------
@pytest.fixture
def site(tmp_path, articles, serve):
    """amp.html names story.html as its rel=canonical; t.html comes first under a session URL
    (which DEDUP_CLEAN_REQUESTS leaves on the request), then clean: in the urls file's order
    (CONCURRENT_REQUESTS=1), amp.html and t.html?sessionid=... are kept, then each superseded
    later in the crawl. other.html is a page of its own. (base URL, urls file)."""
    story = articles[3][0]
    head = story.index(b">", story.lower().index(b"<head")) + 1
    root = make_site(tmp_path / "site", {
        "story.html": story,
        "amp.html": story[:head] + b'<link rel="canonical" href="/story.html">' + story[head:],
        "t.html": articles[1][0],
        "other.html": articles[4][0],
    })
    base = serve(root).base_url
    names = ["amp.html", "t.html?sessionid=a1b2c3d4", "other.html", "story.html", "t.html"]
    return base, write_urls(tmp_path / "urls.txt", [f"{base}/{n}" for n in names])


def crawl(tmp_path, urls, *args):
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                        "-s", f"DEDUP_DROPLOG={tmp_path / 'drops.jsonl'}", "-s", "ROBOTSTXT_OBEY=0",
                        "-s", "CONCURRENT_REQUESTS=1", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def names(urls):
    return [u.rsplit("/", 1)[-1] for u in urls]


def jsonl_urls(data: bytes):
    return names(json.loads(line)["url"] for line in data.decode().splitlines())


def json_urls(data: bytes):
    return names(i["url"] for i in json.loads(data))


def csv_urls(data: bytes):
    return names(row["url"] for row in csv.DictReader(io.StringIO(data.decode(), newline="")))


KEPT = ["other.html", "story.html", "t.html"]  # in the crawl's order
EVERY = ["amp.html", "t.html?sessionid=a1b2c3d4", "other.html", "story.html", "t.html"]


def test_feeds_of_a_crawl_leave_out_the_pages_superseded_later_in_it(tmp_path, site):
    base, urls = site
    out = {name: tmp_path / name for name in ("out.jsonl", "out.json", "out.csv", "out.json.gz", "out.xml")}
    more = {str(out["out.json.gz"]): {"format": "json", "postprocessing": [GZIP]},  # the user's own chain
            str(out["out.xml"]): {"format": "xml"}}
    proc = crawl(tmp_path, urls, "-o", str(out["out.jsonl"]), "-o", str(out["out.json"]), "-o", str(out["out.csv"]),
                 "-s", f"FEEDS={json.dumps(more)}")
    drops = [json.loads(line) for line in (tmp_path / "drops.jsonl").read_text().splitlines()]
    assert sorted((names([d["url"]])[0], d["reason"], d.get("rule")) for d in drops) == [
        ("amp.html", "superseded", "canonical"), ("t.html?sessionid=a1b2c3d4", "superseded", "clean_url")]
    assert jsonl_urls(out["out.jsonl"].read_bytes()) == KEPT
    assert json_urls(out["out.json"].read_bytes()) == KEPT
    assert csv_urls(out["out.csv"].read_bytes()) == KEPT
    packed = out["out.json.gz"].read_bytes()
    assert packed[:2] == b"\x1f\x8b" and json_urls(gzip.decompress(packed)) == KEPT  # filtered, then compressed
    xml = out["out.xml"].read_text()  # not filtered: said at start
    assert all(f"{base}/{n}".replace("&", "&amp;") in xml for n in EVERY)
    assert f"Dedup: feed {out['out.xml']} is written as 'xml'" in proc.stderr
    for name in ("out.jsonl", "out.json", "out.csv", "out.json.gz"):
        assert f"Dedup: removed 2 superseded pages from feed {out[name]}" in proc.stderr
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/superseded"] == 2 and stats["dedup/feed/superseded_removed"] == 8


def test_with_the_feed_filter_off_feeds_hold_every_item(tmp_path, site):
    _, urls = site
    out = tmp_path / "out.jsonl"
    proc = crawl(tmp_path, urls, "-o", str(out), "-s", "DEDUP_FEED_FILTER=False")
    assert jsonl_urls(out.read_bytes()) == EVERY
    assert dedup_stats(proc.stderr)["dedup/superseded"] == 2
    assert "dedup/feed/superseded_removed" not in proc.stderr and "superseded pages from feed" not in proc.stderr


# -- the plugin alone -----------------------------------------------------------------------------
def new_crawler():
    return get_crawler(settings_dict={"MEMUSAGE_ENABLED": False})


ITEMS = [{"url": f"http://site.test/{i}", "title": f'line {i}, "quoted"\nand more, déjà', "n": i} for i in range(5)]


@pytest.fixture
def crawl_token():
    crawler = new_crawler()
    token = feeds.register(crawler)
    yield crawler, token
    crawler.signals.send_catch_log(signals.engine_stopped)


def exported(exporter, items, file, **kwargs) -> None:
    exp = exporter(file, **kwargs)
    exp.start_exporting()
    for item in items:
        exp.export_item(item)
    exp.finish_exporting()


def through_plugin(token, exporter, fmt, items, chain=(), **kwargs) -> tuple[bytes, io.BytesIO]:
    target = io.BytesIO()
    options = {"format": fmt, "postprocessing": [feeds.PLUGIN, *chain], feeds.TOKEN: token, feeds.URI: f"out.{fmt}",
               "fields": kwargs.get("fields_to_export"), "encoding": kwargs.get("encoding"),
               "item_export_kwargs": {k: v for k, v in kwargs.items() if k not in ("fields_to_export", "encoding")}}
    manager = PostProcessingManager(options["postprocessing"], target, options)
    exported(exporter, items, manager, **kwargs)
    manager.close()
    return target.getvalue(), target


FORMATS = [
    (JsonLinesItemExporter, "jsonl", {}),
    (JsonLinesItemExporter, "jl", {"encoding": "utf-8"}),
    (JsonItemExporter, "json", {}),
    (JsonItemExporter, "json", {"indent": 0}),
    (JsonItemExporter, "json", {"indent": 4, "encoding": "utf-8"}),
    (JsonItemExporter, "json", {"indent": 2, "encoding": "latin-1"}),
    (CsvItemExporter, "csv", {}),
    (CsvItemExporter, "csv", {"encoding": "cp1252"}),
    (CsvItemExporter, "csv", {"delimiter": ";", "quoting": csv.QUOTE_ALL, "lineterminator": "\n"}),
    (CsvItemExporter, "csv", {"fields_to_export": {"n": "Number", "url": "Link"}}),
    (CsvItemExporter, "csv", {"include_headers_line": False, "fields_to_export": ["title", "url"]}),
]


@pytest.mark.parametrize("exporter,fmt,kwargs", FORMATS)
def test_the_plugin_writes_what_the_exporter_writes_of_the_other_items(crawl_token, exporter, fmt, kwargs):
    crawler, token = crawl_token
    for gone in ({0}, {4}, {1, 3}, {0, 1, 2, 3, 4}):
        feeds.crawl_of(token).urls = {ITEMS[i]["url"] for i in gone} | {"http://site.test/not-in-the-feed"}
        got, _ = through_plugin(token, exporter, fmt, ITEMS, **kwargs)
        want = io.BytesIO()
        exported(exporter, [item for i, item in enumerate(ITEMS) if i not in gone], want, **kwargs)
        if fmt == "csv" and len(gone) == len(ITEMS) and kwargs.get("include_headers_line", True):
            # (the exporter writes its header with the first item: the header stays, with no row under it)
            exported(exporter, ITEMS[:1], want, **kwargs)
            assert got == want.getvalue().splitlines(keepends=True)[0]
            continue
        assert got == want.getvalue(), (fmt, kwargs, gone)
    assert crawler.stats.get_value("dedup/feed/superseded_removed") == 1 + 1 + 2 + 5


@pytest.mark.parametrize("exporter,fmt,kwargs", FORMATS)
def test_a_feed_with_nothing_superseded_and_an_empty_one_go_on_byte_for_byte(crawl_token, exporter, fmt, kwargs):
    crawler, token = crawl_token
    for superseded in (set(), {"http://site.test/not-in-the-feed"}):
        feeds.crawl_of(token).urls = set(superseded)
        for items in (ITEMS, []):
            got, _ = through_plugin(token, exporter, fmt, items, **kwargs)
            want = io.BytesIO()
            exported(exporter, items, want, **kwargs)
            assert got == want.getvalue()
    assert crawler.stats.get_value("dedup/feed/superseded_removed") is None


def test_a_compressor_after_it_is_closed_and_the_storage_file_is_not(crawl_token):
    _, token = crawl_token
    feeds.crawl_of(token).urls = {ITEMS[2]["url"]}
    packed, target = through_plugin(token, JsonLinesItemExporter, "jsonl", ITEMS, chain=(GZIP,))
    assert [json.loads(line)["n"] for line in gzip.decompress(packed).splitlines()] == [0, 1, 3, 4]
    assert not target.closed  # (Scrapy's storage reads it again: an S3 upload seeks to its start)
    _, target = through_plugin(token, JsonLinesItemExporter, "jsonl", ITEMS)
    assert not target.closed


def test_a_feed_it_cannot_read_goes_on_unchanged_with_a_warning(crawl_token, caplog):
    _, token = crawl_token
    feeds.crawl_of(token).urls = {ITEMS[0]["url"]}
    got, _ = through_plugin(token, JsonLinesItemExporter, "json", ITEMS)  # JSON lines under the name json
    want = io.BytesIO()
    exported(JsonLinesItemExporter, ITEMS, want)
    assert got == want.getvalue()
    assert "could not be read as json" in caplog.text and "may remain" in caplog.text


def test_a_feed_in_an_encoding_it_cannot_read_goes_on_unchanged(crawl_token, caplog):
    _, token = crawl_token
    feeds.crawl_of(token).urls = {ITEMS[0]["url"]}
    got, _ = through_plugin(token, JsonLinesItemExporter, "jsonl", ITEMS, encoding="utf-16")
    want = io.BytesIO()
    exported(JsonLinesItemExporter, ITEMS, want, encoding="utf-16")
    assert got == want.getvalue() and "could not be read as jsonlines" in caplog.text


def test_another_format_passes_through_with_one_warning(crawl_token, caplog):
    _, token = crawl_token
    feeds.crawl_of(token).urls = {ITEMS[0]["url"]}
    caplog.set_level(logging.WARNING)
    for _ in range(2):  # two batches of one feed: one warning
        got, _ = through_plugin(token, XmlItemExporter, "xml", ITEMS)
        want = io.BytesIO()
        exported(XmlItemExporter, ITEMS, want)
        assert got == want.getvalue()
    assert caplog.text.count("may remain") == 1 and "out.xml" in caplog.text


def test_each_batch_is_filtered_and_named_in_its_log_line(crawl_token, caplog):
    _, token = crawl_token
    caplog.set_level(logging.INFO)
    feeds.crawl_of(token).urls = {ITEMS[1]["url"]}
    for batch in (ITEMS[:2], ITEMS[2:]):
        target = io.BytesIO()
        options = {"format": "jsonl", "postprocessing": [feeds.PLUGIN], feeds.TOKEN: token,
                   feeds.URI: "out-%(batch_id)d.jsonl", "encoding": None}
        manager = PostProcessingManager(options["postprocessing"], target, options)
        exported(JsonLinesItemExporter, batch, manager)
        manager.close()
    assert "Dedup: removed 1 superseded pages from feed out-%(batch_id)d.jsonl (batch 1)" in caplog.text
    assert "Dedup: removed 0 superseded pages from feed out-%(batch_id)d.jsonl (batch 2)" in caplog.text


def test_a_url_kept_again_after_it_was_superseded_is_not_left_out():
    crawler = new_crawler()
    token = feeds.register(crawler)
    feeds.mark(crawler, "http://a/?sid=1", "http://a/")
    feeds.mark(crawler, "http://a/", "http://a/?sid=1")  # (as droplog.kept_now reads the log)
    assert feeds.crawl_of(token).urls == {"http://a/"}
    feeds.mark(new_crawler(), "http://b/", "http://c/")  # a crawler without feeds: nothing


def test_the_crawls_set_is_dropped_when_its_engine_stops():
    crawler = new_crawler()
    token = feeds.register(crawler)
    assert feeds.register(crawler) == token and feeds.crawl_of(token) is not None
    crawler.signals.send_catch_log(signals.engine_stopped)
    assert feeds.crawl_of(token) is None


# -- the add-on's FEEDS -----------------------------------------------------------------------------
def addon_feeds(feeds_setting, **settings):
    crawler = new_crawler()
    values = Settings({**settings})
    values.set("FEEDS", feeds_setting, priority="cmdline")
    DedupAddon.from_crawler(crawler).update_settings(values)
    return values.getdict("FEEDS"), values.getpriority("FEEDS")


def test_the_addon_puts_the_plugin_first_in_each_feeds_chain(caplog):
    given = {"a.jsonl": {"format": "jsonl"},
             "b.csv.gz": {"format": "csv", "postprocessing": [GZIP]},
             "c.xml": {"format": "xml"}}
    out, priority = addon_feeds(given)
    assert priority == 40  # cmdline, as -o set it
    assert out["a.jsonl"]["postprocessing"] == [feeds.PLUGIN]
    assert out["b.csv.gz"]["postprocessing"] == [feeds.PLUGIN, GZIP]  # before the compressor
    assert "postprocessing" not in out["c.xml"] and "c.xml is written as 'xml'" in caplog.text
    tokens = {o[feeds.TOKEN] for o in out.values()}
    assert len(tokens) == 1 and feeds.crawl_of(tokens.pop()) is not None
    assert {u: o[feeds.URI] for u, o in out.items()} == {u: u for u in given}
    assert given["b.csv.gz"]["postprocessing"] == [GZIP]  # the user's dict is not changed


@pytest.mark.parametrize("setting", [{"DEDUP_FEED_FILTER": "False"}, {"DEDUP_ENABLED": False}])
def test_the_addon_leaves_feeds_alone_when_the_filter_is_off(setting):
    out, _ = addon_feeds({"a.jsonl": {"format": "jsonl"}}, **setting)
    assert out == {"a.jsonl": {"format": "jsonl"}}
