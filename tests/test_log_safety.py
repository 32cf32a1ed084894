"""Crawled URLs and titles holding newlines, control characters, ANSI escapes, line separators,
bidi overrides or markup cannot forge or corrupt drop-log lines, terminal output or the report."""

import json
import re
import subprocess
import sys

from crawler_dedup.droplog import read_droplog
from tests.conftest import dedup_stats, scrapy_runspider

EVIL = '\n{"url":"https://forged.test/","reason":"exact"}\r\x1b[2J\x1b]0;pwned\x07\u2028\u2029\x85\u202egnp.exe'
MARKUP = "</script><script>window.__pwned=1</script><!--"


def test_hostile_urls_and_titles_in_a_crawl(tmp_path, articles):
    gold = articles[0][1]
    records = [
        {"url": "https://a.test/kept" + EVIL, "title": "Kept " + EVIL + MARKUP, "text": gold},
        {"url": "https://b.test/copy" + EVIL, "title": "Copy " + EVIL + MARKUP, "text": gold},
        {"url": "https://c.test/copy2\n", "title": MARKUP, "text": gold},
    ]
    texts = tmp_path / "texts.jsonl"
    texts.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    drops = tmp_path / "drops.jsonl"
    proc = scrapy_runspider("-a", f"texts={texts}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                            "-s", f"DEDUP_DROPLOG={drops}", "-s", "CONCURRENT_ITEMS=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert dedup_stats(proc.stderr)["dedup/dropped"] == 2

    raw = drops.read_bytes()
    # one line a drop, whatever the values hold; no raw separator any reader ends a line at
    assert raw.count(b"\n") == 2 and raw.endswith(b"\n")
    assert "\u2028".encode() not in raw and "\u2029".encode() not in raw and "\x85".encode() not in raw
    assert len(drops.read_text(encoding="utf-8").splitlines()) == 2  # (str.splitlines splits at all of them)
    got = list(read_droplog(str(drops)))
    assert [r["url"] for r in got] == [records[1]["url"], records[2]["url"]]  # back exactly as they were
    assert all(r["duplicate_of"] == records[0]["url"] for r in got)
    assert not any(r["url"] == "https://forged.test/" for r in got)

    # the terminal: no escape acted on, no line that a value started
    for args in (["inspect", str(drops)], ["inspect", str(drops), "--url", "copy*"],
                 ["show", records[1]["url"], "--log", str(drops)]):
        out = subprocess.run([sys.executable, "-m", "crawler_dedup", *args], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, (args, out.stderr)
        text = out.stdout + out.stderr
        assert not set("\x1b\x07\r\x85\u2028\u2029\u202e") & set(text), args
        assert not any(line.startswith('{"url":"https://forged') for line in text.splitlines()), args

    # the report: the values are data, never markup
    report = tmp_path / "report.html"
    out = subprocess.run([sys.executable, "-m", "crawler_dedup", "report", str(drops), "-o", str(report)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    page = report.read_text(encoding="utf-8")
    assert "window.__pwned=1</script>" not in page
    assert len(re.findall(r"<script", page)) == 2  # the report's own two
