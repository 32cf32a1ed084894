"""`crawler-dedup demo` as a user runs it after install: offline, one command."""

import subprocess
import sys

import pytest

from crawler_dedup.droplog import REQUIRED_KEYS, read_droplog


def test_demo_runs_offline_and_keeps_every_hard_negative(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "demo", "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    assert "false drops: 0" in text
    assert f"drop log: {out / 'droplog.jsonl'}" in text
    records = list(read_droplog(str(out / "droplog.jsonl")))
    assert len(records) >= 16  # at least every tracking/session/churn copy
    for r in records:
        assert set(REQUIRED_KEYS) <= set(r)
        assert r["duplicate_of"] and r["reason"] in ("exact", "near") and r["action"] == "dropped"
    lines = [line.split() for line in text.splitlines()]
    negatives = [cols for cols in lines if len(cols) >= 3 and cols[1] in ("template-negative", "same-site-negative")]
    assert len(negatives) == 10 and all(cols[2] == "kept" for cols in negatives)
    tracking = [cols for cols in lines if len(cols) >= 3 and cols[1] in ("tracking", "session", "churn")]
    assert tracking and all(cols[2] == "dropped" for cols in tracking)


def test_cli_usage_errors_exit_2():
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "nosuch"], capture_output=True, text=True)
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup"], capture_output=True, text=True)
    assert proc.returncode == 2 and "demo" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "demo", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--out" in proc.stdout


def test_demo_refuses_a_folder_with_other_files_and_a_bad_k(tmp_path):
    (tmp_path / "mine.txt").write_text("precious")
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "demo", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "holds other files" in proc.stderr
    assert (tmp_path / "mine.txt").read_text() == "precious"
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "demo", "--k", "9"], capture_output=True, text=True)
    assert proc.returncode == 2 and "--k" in proc.stderr


def test_index_stats_and_plan(tmp_path, articles):
    import json

    from crawler_dedup import Deduplicator

    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        for i, (_, gold) in enumerate(articles[:6]):
            d.check(f"https://s/{i}", text=gold)
        d.check("https://s/copy", text=articles[0][1])
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "stats", str(tmp_path / "idx"), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["pages"] == 6 and info["runs"] == 1 and info["plan"]["k"] == 3
    assert info["params"] == {"features": "shingles", "shingle": 3, "weighting": "none"}
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "stats", str(tmp_path / "idx")],
                          capture_output=True, text=True, timeout=60)
    assert "6 pages kept over 1 run," in proc.stdout and "DEDUP_SHINGLE=3" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "stats", str(tmp_path / "nothing")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no LMDB index" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "plan", "--k", "3"],
                          capture_output=True, text=True, timeout=60)
    rows = [line.split() for line in proc.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["100,000", "1,000,000", "10,000,000", "100,000,000", "1,000,000,000"]
    assert all(int(r[2]) >= 4 for r in rows)


def test_index_expire_and_compact(tmp_path, articles):
    import time

    from crawler_dedup import Deduplicator

    golds = [a[1] for a in articles]
    now = time.time()
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_sync=False) as d:
        for i, gold in enumerate(golds[:10]):
            d.check(f"https://s/{i}", text=gold, now=now - (10_000 if i < 6 else 10))
    run = lambda *a: subprocess.run([sys.executable, "-m", "crawler_dedup", "index", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=60)
    proc = run("expire", "--dir", str(tmp_path / "idx"), "--window", "3600", "--dry-run")
    assert proc.returncode == 0 and "6 of 10 pages were kept more than 3600 s ago" in proc.stdout
    proc = run("expire", "--dir", str(tmp_path / "idx"), "--window", "3600")  # not on a terminal: needs --yes
    assert proc.returncode == 2 and "give --yes" in proc.stderr
    proc = run("expire", "--dir", str(tmp_path / "idx"), "--window", "3600", "--yes")
    assert proc.returncode == 0 and "removed 6 pages" in proc.stdout and "4 pages left" in proc.stdout
    proc = run("compact", "--dir", str(tmp_path / "idx"))
    assert proc.returncode == 2 and "give --yes" in proc.stderr
    proc = run("compact", str(tmp_path / "idx"), "--yes")  # the earlier releases' positional index still works
    assert proc.returncode == 0 and "MiB ->" in proc.stdout
    with Deduplicator(dir=str(tmp_path / "idx")) as d:  # still a working index after both
        assert d.check("https://again/7", text=golds[7]).action == "drop"
        assert d.check("https://again/1", text=golds[1]).action == "keep"


def test_index_expire_rejects_a_bad_window_or_batch(tmp_path, articles):
    import time

    from crawler_dedup import Deduplicator

    now = time.time()
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_sync=False) as d:
        for i, (_, gold) in enumerate(articles[:3]):
            d.check(f"https://s/{i}", text=gold, now=now - 10_000)
    run = lambda *a: subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "expire", str(tmp_path / "idx"),  # noqa: E731
                                     *a], capture_output=True, text=True, timeout=60)
    for window in ("0", "-5"):  # 0 would remove every page, though DEDUP_WINDOW=0 means forever
        proc = run("--window", window)
        assert proc.returncode == 2 and "--window takes" in proc.stderr and proc.stdout == ""
    for batch in ("0", "-1"):  # would loop for ever
        proc = run("--window", "3600", "--batch", batch)
        assert proc.returncode == 2 and "--batch takes 1 or more" in proc.stderr
    with Deduplicator(dir=str(tmp_path / "idx")) as d:  # nothing removed
        assert d.check("https://again/0", text=articles[0][1]).action == "drop"


def test_page_server_keeps_connections_alive_serves_changes_and_stops_them(tmp_path):
    import http.client
    import os
    import time

    from crawler_dedup.demo.server import PageServer

    page = tmp_path / "a.html"
    page.write_bytes(b"<p>one</p>")
    server = PageServer(str(tmp_path)).start()
    conn = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=10)
    try:
        conn.request("GET", "/a.html?utm_source=x")
        first = conn.getresponse()
        assert (first.status, first.read()) == (200, b"<p>one</p>")
        page.write_bytes(b"<p>two, longer</p>")  # served from memory, but read again once changed
        os.utime(page, ns=(time.time_ns(), time.time_ns() + 10**9))
        conn.request("GET", "/a.html")  # the same connection: kept alive
        second = conn.getresponse()
        assert (second.status, second.read()) == (200, b"<p>two, longer</p>")
        conn.request("GET", "/missing.html")
        missing = conn.getresponse()
        assert missing.status == 404 and missing.read()
    finally:
        server.stop()
    with pytest.raises((http.client.HTTPException, OSError)):  # stop() closed the open connection too
        conn.request("GET", "/a.html")
        conn.getresponse()
