"""The periodic `Dedup: checked N pages ...` crawl-log line (DEDUP_LOGSTATS_INTERVAL), in real crawls."""

import re

from .conftest import dedup_stats, make_site, scrapy_crawl, write_urls

LINE = re.compile(r"Dedup: checked (\d+) pages? \((\d+)/min\), dropped (\d+) \(([\d.]+)%\), flagged (\d+), "
                  r"skipped (\d+), errors (\d+)")


def _crawl(tmp_path, serve, articles, interval):
    pages = {f"a{i}.html": html for i, (html, _) in enumerate(articles[:3])}
    pages["copy.html"] = articles[0][0]
    base = serve(make_site(tmp_path / f"site{interval}", pages)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{name}" for name in pages])
    return scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / f'idx{interval}'}",
                        "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.4",
                        "-s", "RANDOMIZE_DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=INFO",
                        "-s", f"DEDUP_LOGSTATS_INTERVAL={interval}")


def test_periodic_line_reports_the_running_counts(tmp_path, serve, articles):
    proc = _crawl(tmp_path, serve, articles, 0.25)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [tuple(map(float, m.groups())) for m in LINE.finditer(proc.stderr)]
    assert lines, proc.stderr[-3000:]
    final = dedup_stats(proc.stderr)
    assert final["dedup/checked"] == 4 and final["dedup/dropped"] == 1
    checked = [line[0] for line in lines]
    assert checked == sorted(checked) and checked[-1] <= 4  # running totals, never past the end
    for c, per_min, dropped, pct, *_ in lines:
        assert dropped <= c and abs(pct - (100 * dropped / c if c else 0.0)) <= 0.051
    assert any(line[1] > 0 for line in lines)  # a rate, per minute, from the checks between two lines


def test_interval_zero_turns_it_off(tmp_path, serve, articles):
    proc = _crawl(tmp_path, serve, articles, 0)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not LINE.search(proc.stderr)
    assert "Dedup: 4 pages checked, 3 kept, 1 dropped" in proc.stderr
