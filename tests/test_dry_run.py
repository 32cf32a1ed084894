"""A dry run tries settings and changes nothing: a new user's dry run filed every page it kept,
so the next real crawl no longer dropped those copies, for good."""

from __future__ import annotations

import json
import subprocess
import sys

from crawler_dedup import Deduplicator

from .conftest import make_site, scrapy_crawl, write_urls


def _pages(idx) -> set[str]:
    with Deduplicator(dir=str(idx)) as d:
        urls: set[str] = set()
        d.index.read(lambda txn: urls.update(doc.url for doc in d.index.scan(txn)))
    return urls


def test_a_dry_run_leaves_the_index_as_it_was_and_its_lines_are_told_apart(tmp_path, serve, articles):
    root = make_site(tmp_path / "site", {"a.html": articles[0][0], "b.html": articles[0][0], "c.html": articles[1][0],
                                         "d.html": articles[2][0], "e.html": articles[2][0]})
    base = serve(root).base_url
    idx = tmp_path / "idx"
    first = scrapy_crawl("-a", f"urls={write_urls(tmp_path / 'one.txt', [f'{base}/a.html', f'{base}/c.html'])}",
                         "-s", f"DEDUP_DIR={idx}")
    assert first.returncode == 0, first.stderr[-2000:]
    before = _pages(idx)
    assert len(before) == 2
    urls = write_urls(tmp_path / "all.txt", [f"{base}/{n}.html" for n in "abcde"])
    dry = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-s", "DEDUP_DRY_RUN=True",
                       "-s", "CONCURRENT_REQUESTS=1", "-O", str(tmp_path / "dry.jsonl"))
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert len((tmp_path / "dry.jsonl").read_text().splitlines()) == 5  # nothing dropped
    lines = [json.loads(x) for x in (idx / "droplog.jsonl").read_text().splitlines()]
    flagged = sorted(r["url"].rsplit("/", 1)[1] for r in lines if r["action"] == "flagged" and r["reason"] != "unchanged")
    assert flagged == ["b.html", "e.html"]  # b against the index, e against d filed in the dry run itself
    assert _pages(idx) == before  # d was filed on the scratch copy only
    assert not [p for p in tmp_path.iterdir() if ".dry-run-" in p.name]  # the copy went
    real = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-s", "CONCURRENT_REQUESTS=1",
                        "-O", str(tmp_path / "real.jsonl"))
    assert real.returncode == 0, real.stderr[-2000:]
    stored = sorted(json.loads(x)["url"].rsplit("/", 1)[1] for x in (tmp_path / "real.jsonl").read_text().splitlines())
    assert stored == ["d.html"]  # a, c revisits unchanged; b, e dropped for real
    for action, expect in (("flagged", 4), ("dropped", 4)):  # (a and c: unchanged revisits, flagged, then dropped)
        out = subprocess.run([sys.executable, "-m", "crawler_dedup", "inspect", "--dir", str(idx), "--action", action,
                              "--json"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["matched"] == expect, (action, out.stdout[:500])


def test_a_dry_run_on_redis_is_refused_at_start(tmp_path, redis_server):
    urls = write_urls(tmp_path / "u.txt", ["http://127.0.0.1:9/x"])
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", "DEDUP_BACKEND=redis", "-s", f"DEDUP_REDIS_URL={redis_server}",
                        "-s", "DEDUP_DRY_RUN=True", "-s", f"DEDUP_DIR={tmp_path / 'd'}")
    assert proc.returncode == 1 and "DEDUP_DRY_RUN" in proc.stderr and "scratch copy" in proc.stderr, proc.stderr[-2000:]
