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
    # one line for the pages kept on it, one at most for the candidates decided without it
    assert 1 <= len(warned) <= 2 and all("index verify" in w and "index rebuild" in w for w in warned), warned
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
    # one line for the pages kept on it, one at most for the candidates decided without it
    assert 1 <= len(warnings) <= 2 and all("WARNING" in w for w in warnings), warnings


@pytest.mark.parametrize("loss", ["empty", "missing", "missing with its lock file"])
def test_an_index_folder_whose_data_file_is_lost_stops_the_crawl_at_start(tmp_path, articles, serve, loss):
    """A DEDUP_DIR that held an index (its lock file, a drop log with lines) but whose data.mdb is
    empty or gone: one line and a clean stop, not a new empty index keeping every page again;
    DEDUP_RESET=True moves the folder aside and starts a new one."""
    root = make_site(tmp_path / "site", {"a.html": articles[0][0], "b.html": articles[0][0]})
    base = serve(root).base_url
    idx, urls = tmp_path / "idx", write_urls(tmp_path / "urls.txt", [f"{base}/a.html", f"{base}/b.html"])
    first = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-O", str(tmp_path / "one.jsonl"))
    assert first.returncode == 0 and (idx / "droplog.jsonl").read_text(), first.stderr[-2000:]
    if loss == "empty":
        (idx / "data.mdb").write_bytes(b"")
    else:
        (idx / "data.mdb").unlink()
        if loss == "missing with its lock file":
            (idx / "lock.mdb").unlink()
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-O", str(tmp_path / "two.jsonl"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "DEDUP_RESET" in errors[0] and ("empty" if loss == "empty" else "missing") in errors[0]
    assert not (tmp_path / "two.jsonl").exists() or not (tmp_path / "two.jsonl").read_text()
    again = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={idx}", "-s", "DEDUP_RESET=True",
                         "-O", str(tmp_path / "three.jsonl"))
    assert again.returncode == 0 and "ERROR" not in again.stderr, again.stderr[-3000:]
    assert (tmp_path / "three.jsonl").read_text().count("\n") == 1  # a new index: one page of the two
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("idx.reset-")]


def test_a_new_index_folder_is_not_taken_for_a_lost_one(tmp_path, articles):
    with Deduplicator(dir=str(tmp_path / "new")) as d:
        assert d.check("https://a.test/1", text=articles[0][1]).action == "keep"
    (tmp_path / "empty-log").mkdir()
    (tmp_path / "empty-log" / "droplog.jsonl").write_text("")  # what a crawl's first open leaves
    with Deduplicator(dir=str(tmp_path / "empty-log")) as d:
        assert d.check("https://a.test/1", text=articles[0][1]).action == "keep"


def _rotted_index(path, articles) -> None:
    with Deduplicator(dir=str(path)) as d:
        for n, (_, text) in enumerate(articles[:6]):
            d.check(f"https://site.test/{n}", text=text, now=1000.0 + n)
    assert _rot(path / "data.mdb", b"https://site.test/3") >= 1


@pytest.mark.parametrize("command", [["index", "expire", "--window", "60", "--yes"], ["index", "compact", "--yes"],
                                     ["index", "remove", "https://site.test/1", "--yes"], ["index", "add", "ITEMS"]])
def test_commands_that_write_refuse_a_damaged_index_and_change_nothing(tmp_path, articles, command):
    import json
    import subprocess
    import sys

    idx = tmp_path / "idx"
    _rotted_index(idx, articles)
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"url": "https://new.test/1", "text": articles[7][1]}) + "\n")
    before = (idx / "data.mdb").read_bytes()
    args = [str(items) if a == "ITEMS" else a for a in command]
    got = subprocess.run([sys.executable, "-m", "crawler_dedup", *args, "--dir", str(idx)],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 2, (got.stdout, got.stderr)
    assert "Traceback" not in got.stderr and len(got.stderr.strip().splitlines()) == 1, got.stderr
    assert "damaged" in got.stderr and "index verify" in got.stderr and "index rebuild" in got.stderr
    assert (idx / "data.mdb").read_bytes() == before
    repaired = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "rebuild", "--yes", "--dir", str(idx)],
                              capture_output=True, text=True, timeout=120)
    assert repaired.returncode == 0, repaired.stderr
    again = subprocess.run([sys.executable, "-m", "crawler_dedup", *args, "--dir", str(idx)],
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, (again.stdout, again.stderr)


@pytest.mark.parametrize("version", [2, 3])
def test_rebuild_of_an_older_format_migrates_it_or_refuses_it(tmp_path, articles, version):
    """Format 3 (migratable): rebuilt into an index this version opens and verifies whole. Format 2:
    refused with what to do, the file unchanged (it never reports success on an index nothing opens)."""
    import subprocess
    import sys

    idx = tmp_path / "idx"
    with Deduplicator(dir=str(idx)) as d:
        for n, (_, text) in enumerate(articles[:5]):
            d.check(f"https://site.test/{n}", text=text)
        d.index.write(lambda t: t.meta_put("format", str(version).encode()))
    before = (idx / "data.mdb").read_bytes()

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "crawler_dedup", "index", *args, "--dir", str(idx)],
                              capture_output=True, text=True, timeout=120)

    got = cli("rebuild", "--yes")
    if version == 2:
        assert got.returncode == 2 and "format version 2" in got.stderr and "index add" in got.stderr, got.stderr
        assert (idx / "data.mdb").read_bytes() == before
        assert sorted(p.name for p in idx.iterdir()) == ["data.mdb", "lock.mdb", "writers.lock"]  # as it was
        return
    assert got.returncode == 0, got.stderr
    assert cli("verify").returncode == 0
    assert "format 4, 5 pages kept" in cli("stats").stdout
    with Deduplicator(dir=str(idx)) as d:
        assert d.check("https://copy.test/0", text=articles[0][1]).action == "drop"


def test_workers_die_with_a_killed_crawl_and_say_nothing(tmp_path):
    """The crawl process SIGKILLed while a worker runs a job: the worker is gone long before the
    job ends (not when its answer meets a closed pipe), and no traceback is printed."""
    import subprocess
    import sys
    import time

    script = tmp_path / "crawl.py"
    script.write_text(
        "import time\n"
        "from crawler_dedup.workers import WorkerPool\n"
        "pool = WorkerPool(2)\n"
        "pool.submit(time.sleep, 30.0)\n"
        "print(' '.join(str(w.proc.pid) for w in pool.workers), flush=True)\n"
        "time.sleep(60)\n")
    log = tmp_path / "stderr.txt"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=err, text=True)
        pids = [int(p) for p in proc.stdout.readline().split()]
        time.sleep(1.0)  # the job is running
        proc.kill()
        proc.wait()
        deadline = time.time() + 10  # (the job runs 30 s: a worker that waits for its end fails this)
        alive = pids
        while alive and time.time() < deadline:
            time.sleep(0.05)
            alive = [p for p in pids if _running(p)]
    assert not alive, f"workers {alive} outlived the crawl"
    assert "Traceback" not in log.read_text() and "BrokenPipe" not in log.read_text(), log.read_text()


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_setting_the_backend_never_reads_is_a_warning_at_start(tmp_path, articles, serve):
    """DEDUP_REDIS_URL without DEDUP_BACKEND=redis was silently ignored (the crawl used LMDB)."""
    root = make_site(tmp_path / "site", {"a.html": articles[0][0]})
    base = serve(root).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/a.html"])
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                        "-s", "DEDUP_REDIS_URL=redis://redis.internal:6379/0", "-O", str(tmp_path / "out.jsonl"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    warned = [line for line in proc.stderr.splitlines() if "DEDUP_REDIS_URL" in line]
    assert len(warned) == 1 and "WARNING" in warned[0] and "no effect with DEDUP_BACKEND=lmdb" in warned[0], warned
    quiet = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx2'}", "-O", str(tmp_path / "o2.jsonl"))
    assert "no effect" not in quiet.stderr
