"""Real Scrapy crawls, in subprocesses, against pages served on 127.0.0.1."""

import html as htmllib
import json
import os
import subprocess
import sys

import pytest

from crawler_dedup.droplog import REQUIRED_KEYS, read_droplog

from .conftest import dedup_stats, make_site, scrapy_crawl, scrapy_runspider, write_urls

PRINT = "<html><head><title>{t}</title></head><body><article>{p}</article></body></html>"


def print_page(title, text):
    paras = "".join(f"<p>{htmllib.escape(p)}</p>" for p in text.split("\n") if p.strip())
    return PRINT.format(t=htmllib.escape(title), p=paras).encode()


def items(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture
def site(tmp_path, articles):
    root = tmp_path / "site"
    root.mkdir()
    for i, (html, _) in enumerate(articles[:4]):
        (root / f"a{i}.html").write_bytes(html)
    (root / "copy.html").write_bytes(articles[0][0])
    gold = articles[5][1]
    (root / "p.html").write_bytes(print_page("Printed", gold))
    words = gold.split(" ")
    words[len(words) // 3] = "CHANGED"
    words[2 * len(words) // 3] = "EDITED"
    (root / "p-edit.html").write_bytes(print_page("Printed", " ".join(words)))
    return root


def test_crawl_drops_near_duplicates_and_yields_the_unique_pages(tmp_path, site, serve):
    base = serve(str(site)).base_url
    pages = ["a0.html", "a1.html", "p.html", "a2.html", "copy.html", "a1.html?utm_source=x&utm_medium=y",
             "a3.html", "p-edit.html"]
    urls = write_urls(tmp_path / "urls.txt", ["# a comment", *[f"{base}/{p}" for p in pages]])
    out, drops = tmp_path / "out.jsonl", tmp_path / "drops.jsonl"
    # (DEDUP_CLEAN_REQUESTS off: the tracking URL is downloaded and dropped as the copy it is)
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
                        "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-s", "DEDUP_CLEAN_REQUESTS=False",
                        "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    kept = sorted(i["url"].rsplit("/", 1)[-1] for i in items(out))
    assert kept == ["a0.html", "a1.html", "a2.html", "a3.html", "p.html"]
    records = list(read_droplog(str(drops)))
    by_url = {r["url"].rsplit("/", 1)[-1]: r for r in records}
    assert set(by_url) == {"copy.html", "a1.html?utm_source=x&utm_medium=y", "p-edit.html"}
    for r in records:
        assert set(REQUIRED_KEYS) <= set(r) and r["stage"] == "response" and r["spider"] == "pages"
        assert r["action"] == "dropped" and len(r["fingerprint"]) == 16 and len(r["duplicate_of_fingerprint"]) == 16
        assert r["time"].endswith("Z") and 0 <= r["similarity"] <= 1
    assert by_url["copy.html"]["duplicate_of"] == f"{base}/a0.html" and by_url["copy.html"]["reason"] == "exact"
    edit = by_url["p-edit.html"]
    assert (edit["reason"], edit["duplicate_of"]) == ("near", f"{base}/p.html") and edit["distance"] <= 3
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/checked"] == 8 and stats["dedup/kept"] == 5 and stats["dedup/dropped"] == 3
    assert stats["dedup/dropped/exact"] == 2 and stats["dedup/dropped/near"] == 1
    assert "Dedup: 8 pages checked, 5 kept, 3 dropped" in proc.stderr

    # a second crawl with the same DEDUP_DIR: the kept pages are unchanged revisits, the copies copies
    out2 = tmp_path / "out2.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
                        "-s", "ROBOTSTXT_OBEY=0", "-s", "DEDUP_CLEAN_REQUESTS=False", "-o", str(out2))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not out2.exists() or items(out2) == []
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/dropped"] == 8 and stats["dedup/dropped/unchanged"] == 5 and stats["dedup/unchanged"] == 5
    second = list(read_droplog(str(drops)))[3:]
    assert len(second) == 8
    for r in second:
        name = r["url"].rsplit("/", 1)[-1]
        if name in kept:  # never "a copy of itself": unchanged, with the time it was kept
            assert (r["reason"], r["duplicate_of"], r["measure"]) == ("unchanged", r["url"], "exact") and r["kept_at"]
        else:
            assert r["duplicate_of"] != r["url"] and r["reason"] in ("exact", "near")


def test_extraction_in_worker_processes_decides_the_same(tmp_path, site, serve):
    base = serve(str(site)).base_url
    pages = ["a0.html", "p.html", "copy.html", "a1.html", "p-edit.html", "a0.html?x=1"]
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{p}" for p in pages])
    outcomes = []
    for workers in ("0", "2"):
        drops = tmp_path / f"drops-{workers}.jsonl"
        proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / ('idx' + workers)}",
                            "-s", f"DEDUP_DROPLOG={drops}", "-s", f"DEDUP_WORKERS={workers}",
                            "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1")
        assert proc.returncode == 0, proc.stderr[-3000:]
        outcomes.append(sorted((r["url"], r["duplicate_of"], r["reason"], r["distance"], r["similarity"],
                                r["fingerprint"]) for r in read_droplog(str(drops))))
        assert dedup_stats(proc.stderr)["dedup/checked"] == 6
    assert outcomes[0] == outcomes[1] and len(outcomes[0]) == 3


def test_dropped_pages_links_are_not_followed(tmp_path, articles, serve):
    root = tmp_path / "site"
    root.mkdir()
    body = articles[6][0]
    links = lambda hrefs: "".join(f'<a href="{h}">more</a>' for h in hrefs).encode()  # noqa: E731
    (root / "index.html").write_bytes(b"<html><body>" + links(["/a.html", "/b.html"]) + b"</body></html>")
    (root / "a.html").write_bytes(body.replace(b"</body>", links(["/x.html"]) + b"</body>"))
    (root / "b.html").write_bytes(body.replace(b"</body>", links(["/only-from-b.html"]) + b"</body>"))
    (root / "x.html").write_bytes(articles[7][0])
    (root / "only-from-b.html").write_bytes(articles[8][0])
    base = serve(str(root)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/index.html"])
    out = tmp_path / "out.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-a", "follow=1", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                        "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    crawled = {i["url"].rsplit("/", 1)[-1] for i in items(out)}
    dropped = {r["url"].rsplit("/", 1)[-1] for r in read_droplog(str(tmp_path / "idx" / "droplog.jsonl"))}
    assert len(dropped & {"a.html", "b.html"}) == 1 and len(crawled & {"a.html", "b.html"}) == 1
    follower = {"a.html": "x.html", "b.html": "only-from-b.html"}
    assert follower[crawled.intersection({"a.html", "b.html"}).pop()] in crawled
    assert follower[dropped.pop()] not in crawled  # the dropped page was never parsed


def test_start_pages_are_never_dropped_but_their_copies_are(tmp_path, articles, serve):
    root = tmp_path / "site"
    root.mkdir()
    hub = articles[6][0].replace(b"</body>", b'<a href="/copy.html">c</a><a href="/other.html">o</a></body>')
    (root / "index.html").write_bytes(hub)
    (root / "copy.html").write_bytes(articles[6][0])  # the start page's text, reached by a link
    (root / "other.html").write_bytes(articles[7][0])
    base = serve(str(root)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/index.html"])
    droplog = tmp_path / "idx" / "droplog.jsonl"
    runs = []
    for run in range(2):  # the second crawl reuses the index: the hub matches itself
        out = tmp_path / f"out{run}.jsonl"
        proc = scrapy_crawl("-a", f"urls={urls}", "-a", "follow=1", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                            "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-o", str(out))
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(({i["url"].rsplit("/", 1)[-1] for i in items(out)}, dedup_stats(proc.stderr)))
    (first, stats1), (second, stats2) = runs
    drops = [(r["url"].rsplit("/", 1)[-1], r["duplicate_of"].rsplit("/", 1)[-1]) for r in read_droplog(str(droplog))]
    assert first == {"index.html", "other.html"} and stats1.get("dedup/skipped/never_drop", 0) == 0
    assert drops[0] == ("copy.html", "index.html")  # the start page was indexed: its copy is caught
    # second crawl: both kept pages are revisits with the same text; the hub is never dropped,
    # other.html is dropped as unchanged (its item goes no further), copy.html is still a copy
    assert second == {"index.html"} and stats2["dedup/unchanged"] == 2 and stats2["dedup/dropped/unchanged"] == 1
    assert stats2["dedup/kept"] == 1 and stats2["dedup/dropped_items/unchanged"] == 1
    assert sorted(drops[1:]) == [("copy.html", "index.html"), ("other.html", "other.html")]
    reasons = {r["url"].rsplit("/", 1)[-1]: r["reason"] for r in list(read_droplog(str(droplog)))[1:]}
    assert reasons == {"copy.html": "exact", "other.html": "unchanged"}


def test_bad_input_is_kept_or_skipped_and_counted(tmp_path, articles, serve):
    html = lambda body: (200, {"Content-Type": "text/html; charset=utf-8"}, body)  # noqa: E731
    routes = {
        "/ok.html": html(articles[0][0]),
        "/binary": (200, {"Content-Type": "image/png"}, bytes(range(256)) * 64),
        "/pdf": (200, {"Content-Type": "application/pdf"}, b"%PDF-1.4\n" + os.urandom(2048)),
        "/plain.txt": (200, {"Content-Type": "text/plain"}, b"just some text " * 50),
        "/empty.html": html(b""),
        "/undecodable.html": html(b"<html><body><p>" + b"\xff\xfe\xc3\x28 caf\xe9 " * 40 + b"</p></body></html>"),
        "/huge.html": html(b"<html><body>" + b"<p>" + b"lorem ipsum dolor sit amet " * 800_000 + b"</p></body></html>"),
        "/broken.html": html(b"<html><<<body><p>unclosed <b><i>tags" + b"<div>" * 5000 + b"</html>"),
        "/missing.html": (404, {"Content-Type": "text/html"}, b"<html><body>gone</body></html>"),
    }
    assert len(routes["/huge.html"][2]) > 20_000_000
    base = serve(routes=routes).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}{p}" for p in routes])
    out = tmp_path / "out.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "ROBOTSTXT_OBEY=0",
                        "-s", "HTTPERROR_ALLOW_ALL=1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert len(items(out)) == len(routes)  # nothing lost
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/skipped/not_html"] == 3  # png, pdf, text/plain
    assert stats["dedup/skipped/empty"] == 1
    assert stats["dedup/skipped/too_large"] == 1
    assert stats["dedup/skipped/status"] == 1
    assert stats["dedup/kept"] + stats.get("dedup/skipped/no_text", 0) + stats.get("dedup/skipped/too_short", 0) == 3
    assert not os.path.exists(tmp_path / "idx" / "droplog.jsonl") or not list(read_droplog(str(tmp_path / "idx" / "droplog.jsonl")))


def test_a_bad_setting_stops_the_crawl_at_start(tmp_path, serve):
    urls = write_urls(tmp_path / "urls.txt", [serve(routes={}).base_url + "/nothing"])
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", "DEDUP_K=-1", "-s", "ROBOTSTXT_OBEY=0")
    assert proc.returncode != 0
    assert "DEDUP_K='-1'" in proc.stderr and "an integer from 0 to 8" in proc.stderr
    assert "Spider opened" not in proc.stderr


@pytest.mark.parametrize("setting,value,expect", [
    ("DEDUP_BACKEND", "nosuch", ["DEDUP_BACKEND='nosuch'", "lmdb, memory"]),
    ("DEDUP_DIR", "{file}/sub", ["DEDUP_DIR=", "a writable directory"]),
    ("DEDUP_DROPLOG", "{dir}", ["DEDUP_DROPLOG=", "a file that can be appended to"]),
    ("DEDUP_ALLOW", '["^a"', ["DEDUP_ALLOW=", "a JSON list of regular expressions"]),
    ("DEDUP_VERIFIER", "no.such.Verifier", ["DEDUP_VERIFIER='no.such.Verifier'", "importable Verifier class"]),
])
def test_bad_settings_fail_when_the_components_are_built(tmp_path, setting, value, expect):
    """In process: what stops a crawl at start (above) is the error building the extension raises."""
    from scrapy.utils.test import get_crawler

    from crawler_dedup.exceptions import ConfigError
    from crawler_dedup.scrapy.extension import DedupExtension

    blocker = tmp_path / "file"
    blocker.write_text("x")
    value = value.format(file=blocker, dir=tmp_path)
    settings = {"DEDUP_DIR": str(tmp_path / "idx"), "ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, setting: value}
    with pytest.raises(ConfigError) as err:
        DedupExtension.from_crawler(get_crawler(settings_dict=settings))
    for text in expect:
        assert text in str(err.value)


def test_pipeline_drops_duplicate_items_with_the_item_in_the_log(tmp_path, articles, serve):
    gold = [a[1] for a in articles]
    texts = tmp_path / "texts.jsonl"
    records = [{"url": "https://a/1", "text": gold[0]}, {"url": "https://a/2", "text": gold[1]},
               {"url": "https://b/1", "text": gold[0]}, {"url": "https://c/1", "title": "no page content"},
               {"url": "https://d/1", "html": articles[1][0].decode("utf-8", "replace")}]
    texts.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    root = make_site(tmp_path / "site", {"p.html": articles[9][0], "q.html": articles[9][0]})
    urls = write_urls(tmp_path / "urls.txt", [f"{serve(root).base_url}/{p}" for p in ("p.html", "q.html")])
    out, drops = tmp_path / "out.jsonl", tmp_path / "drops.jsonl"
    proc = scrapy_runspider("-a", f"texts={texts}", "-a", f"urls={urls}", "-a", "dont_dedup=q.html",
                            "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
                            "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {i["url"] for i in items(out)}
    log = {r["url"]: r for r in read_droplog(str(drops))}
    # b/1 repeats a/1's text, d/1 is a/2's page as HTML; q.html copies p.html but was fetched
    # with dont_dedup, which covers its item too
    assert set(log) == {"https://b/1", "https://d/1"}
    assert log["https://b/1"]["stage"] == "item" and log["https://b/1"]["duplicate_of"] == "https://a/1"
    assert log["https://b/1"]["item"] == records[2]
    assert log["https://d/1"]["duplicate_of"] == "https://a/2"
    assert {"https://a/1", "https://a/2", "https://c/1"} <= got and "https://b/1" not in got
    assert any(u.endswith("/p.html") for u in got) and any(u.endswith("/q.html") for u in got)
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/skipped/dont_dedup"] == 2 and stats["dedup/skipped/checked_as_response"] == 1


def test_unwritable_drop_log_keeps_the_page_and_counts_it(tmp_path, articles, serve):
    root = make_site(tmp_path / "site", {"a.html": articles[0][0], "b.html": articles[0][0]})
    urls = write_urls(tmp_path / "urls.txt", [f"{serve(root).base_url}/{p}" for p in ("a.html", "b.html")])
    out = tmp_path / "out.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "DEDUP_DROPLOG=/dev/full",
                        "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(items(out)) == 2  # no drop-log line, no drop
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/errors/droplog"] == 1 and stats["dedup/kept"] == stats["dedup/checked"] == 2
    assert proc.stderr.count("could not write the drop log") == 1


def test_dry_run_flags_a_page_once_even_when_its_item_carries_the_html(tmp_path, articles, serve):
    root = make_site(tmp_path / "site", {"p.html": articles[3][0], "q.html": articles[3][0]})
    urls = write_urls(tmp_path / "urls.txt", [f"{serve(root).base_url}/{p}" for p in ("p.html", "q.html")])
    out, drops = tmp_path / "out.jsonl", tmp_path / "drops.jsonl"
    proc = scrapy_runspider("-a", f"urls={urls}", "-s", "DEDUP_DRY_RUN=1", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                            "-s", f"DEDUP_DROPLOG={drops}", "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1",
                            "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(items(out)) == 2
    records = list(read_droplog(str(drops)))
    assert [(r["action"], r["stage"], r["url"].rsplit("/", 1)[-1]) for r in records] == [("flagged", "response", "q.html")]
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/flagged"] == 1 and stats["dedup/skipped/checked_as_response"] == 2


TWO_SPIDERS = """
import json, sys
from scrapy.crawler import CrawlerProcess
from crawler_dedup.spider import PagesSpider

process = CrawlerProcess({"ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DIR": sys.argv[1],
                          "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "INFO"})
crawlers = []
for urls in sys.argv[2:]:
    crawler = process.create_crawler(PagesSpider)
    crawlers.append(crawler)
    process.crawl(crawler, urls=urls)
process.start()
print(json.dumps([{k: v for k, v in c.stats.get_stats().items() if k.startswith(("dedup/", "item_scraped"))}
                  for c in crawlers]))
"""


def test_two_crawlers_in_one_process_share_one_index(tmp_path, articles, serve):
    root = make_site(tmp_path / "site", {name: articles[i][0] for name, i in
                                          (("a.html", 0), ("b.html", 1), ("copy-of-a.html", 0), ("c.html", 2))})
    base = serve(root).base_url
    one = write_urls(tmp_path / "one.txt", [f"{base}/a.html", f"{base}/b.html"])
    two = write_urls(tmp_path / "two.txt", [f"{base}/copy-of-a.html", f"{base}/c.html"])
    proc = subprocess.run([sys.executable, "-c", TWO_SPIDERS, str(tmp_path / "idx"), one, two],
                          cwd=str(tmp_path), capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not any(k.startswith("dedup/errors") for k in {**first, **second}), (first, second)
    assert first.get("dedup/kept", 0) + second.get("dedup/kept", 0) == 3
    assert first.get("dedup/dropped", 0) + second.get("dedup/dropped", 0) == 1
    assert "already open" not in proc.stderr
