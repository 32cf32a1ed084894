"""The fast path: a response with the very bytes of a kept page's is decided from what that page
stored, without extraction, and decided as extraction would decide it."""

import numpy as np

from crawler_dedup import Deduplicator
from crawler_dedup.core.page.extract import extract
from crawler_dedup.core.page.fingerprint import body_digest
from crawler_dedup.core.verdict import Action
from crawler_dedup.droplog import read_droplog
from crawler_dedup.stores import MemoryStore

from .conftest import dedup_stats, scrapy_crawl, write_urls


def test_a_kept_pages_bytes_stand_for_its_extraction(articles):
    html = articles[0][0]
    d = Deduplicator(store=MemoryStore()).open()
    assert d.known(body_digest(html)) is None  # nothing kept yet
    kept = d.check("https://a.example/x", html=html, body=body_digest(html))
    known = d.known(body_digest(html))
    fresh = d.fingerprint(known.text)
    assert kept.action == Action.KEEP and known is not None
    assert (known.fingerprint, known.digest, known.tokens, known.shingles) == (fresh.fingerprint, fresh.digest,
                                                                               fresh.tokens, fresh.shingles)
    assert np.array_equal(known.sketch, fresh.sketch) and known.text == extract(html).text


def test_no_fast_path_where_fingerprints_depend_on_the_kept_pages(articles):
    html = articles[0][0]
    d = Deduplicator(store=MemoryStore(), weighting="tfidf").open()
    d.check("https://a.example/x", html=html, body=body_digest(html))
    assert d.known(body_digest(html)) is None
    d = Deduplicator(store=MemoryStore(), store_text=False).open()  # nothing to stand in for the text
    d.check("https://a.example/x", html=html, body=body_digest(html))
    assert d.known(body_digest(html)) is None


def test_byte_identical_copies_are_decided_without_extraction_as_extraction_would(tmp_path, articles, serve):
    site = tmp_path / "site"
    site.mkdir()
    for i, (html, _) in enumerate(articles[:3]):
        (site / f"a{i}.html").write_bytes(html)
        (site / f"same{i}.html").write_bytes(html)  # the very bytes at another URL
        (site / f"near{i}.html").write_bytes(html + b"\n")  # one byte more: extracted
    base = serve(str(site)).base_url
    names = ["a0.html", "a1.html", "same0.html", "a2.html", "near0.html", "same1.html", "a0.html?utm_source=x",
             "near2.html", "same2.html"]
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{n}" for n in names])
    runs = []
    for crawl in (1, 2):  # a second crawl over the same index: every page's bytes are known
        drops = tmp_path / "drops.jsonl"
        proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
                            "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-s", "DEDUP_CLEAN_REQUESTS=False")
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append((dedup_stats(proc.stderr), list(read_droplog(str(drops)))))
    stats, records = runs[0]
    assert stats["dedup/fast/same_bytes"] == 4  # same0-2 and the tracking URL; near0/near2 were extracted
    assert stats["dedup/checked"] == 9 and stats["dedup/kept"] == 3 and stats["dedup/dropped/exact"] == 6
    by_url = {r["url"].rsplit("/", 1)[-1]: r for r in records}
    for name in ("same0.html", "near0.html", "a0.html?utm_source=x"):  # the same record, whichever path
        r = by_url[name]
        assert (r["reason"], r["duplicate_of"], r["measure"], r["distance"]) == ("exact", f"{base}/a0.html", "exact", 0)
    assert by_url["same0.html"]["text"] == by_url["near0.html"]["text"]  # the stored text stood in for extraction
    stats, records = runs[1]
    # the recrawl: kept pages are unchanged revisits, the copies copies again; the near* pages'
    # bytes were never kept, so they alone are extracted again
    assert stats["dedup/fast/same_bytes"] == 7 and stats["dedup/unchanged"] == 3 and stats["dedup/dropped"] == 9
