"""A damaged index never costs a page (issue 29): a record damaged in place is a counted, logged
failure that keeps the page."""

from __future__ import annotations

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.exceptions import StoreDamaged

from .conftest import dedup_stats, make_site, scrapy_crawl, write_urls


def _rot(data_file, needle: bytes) -> int:
    """Bit rot inside every stored copy of `needle` (a byte of a kept record's URL made 0xff,
    invalid UTF-8); how many copies were found."""
    raw = bytearray(data_file.read_bytes())
    at, found = raw.find(needle), 0
    while at >= 0:
        raw[at + len(needle) - 3] = 0xFF
        found += 1
        at = raw.find(needle, at + 1)
    data_file.write_bytes(bytes(raw))
    return found


def test_a_rotted_record_is_a_counted_failure_that_keeps_the_page(tmp_path, articles, caplog):
    idx = tmp_path / "idx"
    with Deduplicator(dir=str(idx)) as d:
        assert d.check("https://site.test/rotted-page", text=articles[0][1]).action == "keep"
    assert _rot(idx / "data.mdb", b"https://site.test/rotted-page") >= 1
    with Deduplicator(dir=str(idx)) as d:
        for url in ("https://site.test/rotted-page", "https://copy.test/1"):  # a revisit, a copy: both read it
            verdict = d.check(url, text=articles[0][1])
            assert (verdict.action, verdict.error) == ("keep", "store"), verdict
        assert d.check("https://other.test/2", text=articles[1][1]).action == "keep"  # the rest works
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and "index verify" in warned[0] and "index rebuild" in warned[0], warned
    with pytest.raises(StoreDamaged, match="kept record 1 cannot be read"):
        with Deduplicator(dir=str(idx)) as d:
            d.index.read(lambda txn: d.index.doc(txn, 1))


def test_a_crawl_over_a_rotted_record_loses_no_request(tmp_path, articles, serve):
    """Every request of the second crawl ends as an item or a drop-log line; the damaged record is
    one WARNING naming `index verify`, counted in dedup/errors/store; exit 0."""
    root = make_site(tmp_path / "site", {"a.html": articles[0][0], "b.html": articles[1][0],
                                         "c.html": articles[0][0], "d.html": articles[2][0]})
    base = serve(root).base_url
    idx, urls = tmp_path / "idx", tmp_path / "urls.txt"
    write_urls(urls, [f"{base}/a.html", f"{base}/b.html"])
    first = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-O", str(tmp_path / "one.jsonl"))
    assert first.returncode == 0, first.stderr[-3000:]
    assert _rot(idx / "data.mdb", f"{base}/a.html".encode()) >= 1
    write_urls(urls, [f"{base}/a.html", f"{base}/b.html", f"{base}/c.html", f"{base}/d.html"])
    out = tmp_path / "two.jsonl"
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-O", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Error downloading" not in proc.stderr and "Traceback" not in proc.stderr
    stats = dedup_stats(proc.stderr)
    items = out.read_text().count("\n")
    dropped = [line for line in (idx / "droplog.jsonl").read_text().splitlines() if '"dropped"' in line]
    assert items + len(dropped) == 4, (items, dropped, stats)
    assert stats.get("dedup/errors/store", 0) >= 1, stats
    warnings = [line for line in proc.stderr.splitlines() if "index verify" in line]
    assert len(warnings) == 1 and "WARNING" in warnings[0], warnings
