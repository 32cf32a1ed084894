"""A damaged or foreign index: `index verify` finds what is missing, `index rebuild` files the
readable kept pages again, and no command prints a traceback; a torn drop-log line is reported
and the next line starts on its own."""

import json
import os
import random
import subprocess
import sys

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.cli import main as cli
from crawler_dedup.droplog import DropLog
from crawler_dedup.stores.base import u64

COMMANDS = (["index", "stats"], ["index", "expire", "--window", "60", "--yes"], ["index", "compact", "--yes"],
            ["index", "remove", "https://site.test/0", "--yes", "--dir"])


def _texts(n, seed=1):
    rnd = random.Random(seed)
    vocab = [f"w{i}" for i in range(4000)]
    return [" ".join(rnd.choices(vocab, k=250)) for _ in range(n)]


def _build(path, texts):
    with Deduplicator(dir=str(path)) as d:
        for i, text in enumerate(texts):
            d.check(f"https://site.test/{i}", text=text)


def _run(*args):
    return subprocess.run([sys.executable, "-m", "crawler_dedup", *args], capture_output=True, text=True, timeout=120)


def test_verify_whole_then_finds_a_missing_entry_and_rebuild_repairs_it(tmp_path, capsys):
    idx = tmp_path / "idx"
    texts = _texts(60)
    _build(idx, texts)
    assert cli(["index", "verify", str(idx)]) == 0
    assert "whole (60 kept pages" in capsys.readouterr().out

    # take one page's fingerprint out of a permuted table: lookups can no longer find it
    with Deduplicator(dir=str(idx)) as d:
        index = d.index
        doc = index.read(lambda t: index.by_url(t, "https://site.test/7"))
        key = index.plan.keys(doc.fingerprint)[0]
        index.write(lambda t: t.raw.remove("t000", key, u64(doc.fingerprint)))
        index.write(lambda t: t.raw.add("urls", b"\x00" * 8, u64(10**6)))  # an entry pointing nowhere
    assert cli(["index", "verify", str(idx)]) == 1
    out = capsys.readouterr().out
    assert "kept page" in out and "https://site.test/7" in out and "permuted table 0" in out
    assert "points at kept record 1000000" in out
    assert "index rebuild" in out

    assert cli(["index", "rebuild", str(idx), "--yes"]) == 0
    out = capsys.readouterr().out
    assert "60 kept pages filed into a new index" in out
    assert [n for n in os.listdir(idx) if n.startswith("data.mdb.damaged-")]
    assert cli(["index", "verify", str(idx)]) == 0
    capsys.readouterr()
    # the rebuilt index finds the page again: its copy is dropped, a new page kept
    with Deduplicator(dir=str(idx)) as d:
        assert d.check("https://elsewhere.test/copy", text=texts[7]).action == "drop"
        assert d.check("https://site.test/new", text=_texts(1, seed=99)[0]).action == "keep"


def test_rebuild_asks_before_replacing(tmp_path):
    idx = tmp_path / "idx"
    _build(idx, _texts(5))
    got = _run("index", "rebuild", str(idx))  # stdin is not a terminal: no question, no change
    assert got.returncode == 2 and "--yes" in got.stderr
    assert not [n for n in os.listdir(idx) if n.startswith("data.mdb.damaged-")]


@pytest.mark.parametrize("damage", ["pages", "truncated", "foreign"])
def test_damaged_index_every_command_one_line_no_traceback(tmp_path, damage):
    idx = tmp_path / "idx"
    _build(idx, _texts(300))
    data = idx / "data.mdb"
    size = data.stat().st_size
    if damage == "pages":  # a run of pages overwritten in the middle of the file
        with open(data, "r+b") as fh:
            fh.seek((size // 4096 // 2) * 4096)
            fh.write(random.Random(2).randbytes(4096 * 8))
    elif damage == "truncated":
        with open(data, "r+b") as fh:
            fh.truncate(size // 3)
    else:  # not an LMDB file at all
        data.write_bytes(b"<html>not an index</html>" * 500)
    for command in COMMANDS:
        got = _run(*command, str(idx))
        lines = got.stderr.strip().splitlines()
        assert "Traceback" not in got.stderr + got.stdout, (command, got.stderr)
        if got.returncode == 0:  # the damage missed what this command reads
            continue
        assert len(lines) == 1, (command, got.stderr)
        assert lines[0].startswith("crawler-dedup "), lines
    got = _run("index", "verify", str(idx))  # a verdict: not whole, and what to do
    assert got.returncode == 1 and "Traceback" not in got.stderr
    assert "not whole" in got.stdout and f"crawler-dedup index rebuild --dir {idx}" in got.stdout


@pytest.mark.parametrize("at", [0.1, 0.5, 0.9])
def test_rebuild_keeps_what_can_be_read_from_a_damaged_file(tmp_path, at):
    idx = tmp_path / "idx"
    texts = _texts(400)
    _build(idx, texts)
    data = idx / "data.mdb"
    pages = data.stat().st_size // 4096
    with open(data, "r+b") as fh:  # three pages overwritten: branch or leaf pages of some table
        fh.seek(max(2, int(pages * at)) * 4096)
        fh.write(random.Random(4).randbytes(4096 * 3))
    got = _run("index", "rebuild", str(idx), "--yes")
    assert got.returncode == 0, got.stderr
    kept = int(got.stdout.split(": ", 1)[1].split()[0])
    assert 380 <= kept <= 400, got.stdout  # a record lives on one page: 3 pages hold a few dozen at most
    assert _run("index", "verify", str(idx)).returncode == 0
    with Deduplicator(dir=str(idx)) as d:  # and it works: a copy of a page it kept is dropped
        found = [i for i in range(400) if d.index.read(lambda t, i=i: d.index.by_url(t, f"https://site.test/{i}"))]
        assert len(found) == kept
        assert d.check("https://copy.test/", text=texts[found[-1]]).action == "drop"


def test_damaged_index_keeps_the_crawl_going_with_one_clear_error(tmp_path):
    from crawler_dedup.exceptions import StoreDamaged

    idx = tmp_path / "idx"
    idx.mkdir()
    (idx / "data.mdb").write_bytes(b"\x00garbage" * 4096)
    with pytest.raises(StoreDamaged, match="damaged or not an LMDB index.*index rebuild"):
        Deduplicator(dir=str(idx)).open()


def test_torn_last_drop_log_line_is_reported_and_the_next_starts_a_line(tmp_path):
    log = tmp_path / "droplog.jsonl"
    record = {"url": "https://a.test/2", "duplicate_of": "https://a.test/1", "reason": "near", "similarity": 0.9,
              "time": "2026-01-01T00:00:00Z", "stage": "response", "action": "drop"}
    with DropLog(str(log)) as dl:
        dl.write(record)
    with open(log, "ab") as fh:
        fh.write(b'{"url": "https://a.test/3", "dupl')  # a crash mid-write
    got = _run("inspect", str(log))
    assert got.returncode == 0
    assert "torn" in got.stdout + got.stderr
    with DropLog(str(log)) as dl:  # the next crawl's line is not glued to the torn one
        dl.write(dict(record, url="https://a.test/4"))
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b"" and lines[-2].startswith(b'{"url":"https://a.test/4"')


def test_a_crawl_on_a_damaged_index_stops_at_start_with_one_line(tmp_path, articles, serve):
    from tests.conftest import make_site, scrapy_crawl, write_urls

    idx = tmp_path / "idx"
    _build(idx, _texts(300))
    data = idx / "data.mdb"
    with open(data, "r+b") as fh:  # cut short, as a full disk leaves it: LMDB alone would die of SIGBUS
        fh.truncate(data.stat().st_size // 2)
    root = make_site(tmp_path / "site", {"a.html": articles[0][0], "b.html": articles[0][0]})
    base = serve(root).base_url
    write_urls(tmp_path / "urls.txt", [f"{base}/a.html", f"{base}/b.html"])
    out = tmp_path / "items.jsonl"
    proc = scrapy_crawl("-a", f"urls={tmp_path / 'urls.txt'}", "-s", f"DEDUP_DIR={idx}", "-O", str(out))
    assert proc.returncode == 1, proc.stderr[-3000:]  # a failed start: a scheduled job sees it
    assert "Traceback" not in proc.stderr and "never retrieved" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, errors
    assert "data.mdb is cut short" in errors[0] and "index rebuild" in errors[0]
    # a stop at start (crawling on unchecked would store every duplicate), never a drop
    assert "cannot start" in errors[0]
    assert not out.exists() or not out.read_text()
    assert not (idx / "droplog.jsonl").exists() or not (idx / "droplog.jsonl").read_text()


def test_compact_with_many_pages_in_one_second(tmp_path):
    """LMDB's own compacting copy crashed the process (SIGSEGV) on a dupsort key with a few
    hundred values: `times` has one when many pages are kept in the same second."""
    idx = tmp_path / "idx"
    with Deduplicator(dir=str(idx)) as d:
        for i, text in enumerate(_texts(400)):
            d.check(f"https://site.test/{i}", text=text, now=1_700_000_000.0)
        d.index.write(lambda t: d.index.remove(t, 5))  # a free page or two to give back
    got = _run("index", "compact", "--yes", "--dir", str(idx))
    assert got.returncode == 0, got.stderr
    assert "data.mdb" in got.stdout and "MiB" in got.stdout
    assert not [n for n in os.listdir(idx) if n.startswith(".compact")]
    assert _run("index", "verify", str(idx)).returncode == 0
    with Deduplicator(dir=str(idx)) as d:
        assert d.index.read(lambda t: t.doc_count()) == 399


HOLD = """
import sys, time
from crawler_dedup import Deduplicator
with Deduplicator(dir=sys.argv[1]) as d:
    d.check("https://holder.test/", text=" ".join(f"w{i}" for i in range(300)))
    print("open", flush=True)
    time.sleep(60)
"""


def test_compact_and_rebuild_refuse_an_index_another_process_has_open(tmp_path):
    idx = tmp_path / "idx"
    _build(idx, _texts(20))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(idx)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        for command in (["index", "compact", "--dir", str(idx), "--yes"], ["index", "rebuild", "--dir", str(idx), "--yes"]):
            got = _run(*command)
            assert got.returncode == 2, (command, got.stdout, got.stderr)
            assert f"open in process {holder.pid}" in got.stderr and "Traceback" not in got.stderr
        assert not [n for n in os.listdir(idx) if n.startswith("data.mdb.damaged")]
    finally:
        holder.kill()
        holder.wait()


def test_rebuild_when_the_first_meta_page_is_gone(tmp_path):
    idx = tmp_path / "idx"
    _build(idx, _texts(120))
    with open(idx / "data.mdb", "r+b") as fh:
        fh.write(b"\x00" * 4096)  # meta page 0 zeroed; page 1 still says where everything is
    assert _run("index", "stats", str(idx)).returncode == 2
    got = _run("index", "rebuild", str(idx), "--yes")
    assert got.returncode == 0, got.stderr
    assert "120 kept pages filed" in got.stdout
    assert _run("index", "verify", str(idx)).returncode == 0


def test_verify_finds_what_points_wrong(tmp_path, capsys):
    idx = tmp_path / "idx"
    _build(idx, _texts(30))
    with Deduplicator(dir=str(idx)) as d:
        index = d.index
        from crawler_dedup.core.index.records import url_key

        index.write(lambda t: t.url_put(url_key("https://site.test/3"), 5))  # URL 3 leads to page 5's record
        index.write(lambda t: t.raw.put("meta", b"next_id", u64(10)))  # new ids would overwrite kept pages
    assert cli(["index", "verify", str(idx)]) == 1
    out = capsys.readouterr().out
    assert "https://site.test/3" in out and "a page of another URL" in out
    assert "new pages would overwrite kept ones" in out


def test_verify_on_an_unreadable_index_exits_1_with_json(tmp_path, capsys):
    import json

    idx = tmp_path / "idx"
    _build(idx, _texts(30))
    with open(idx / "data.mdb", "r+b") as fh:
        fh.truncate(8192 * 3)
    assert cli(["index", "verify", str(idx), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["whole"] is False and "cut short" in got["error"]


def test_a_foreign_lmdb_file_is_refused_by_commands_and_the_crawl(tmp_path):
    import lmdb

    idx = tmp_path / "idx"
    env = lmdb.open(str(idx), max_dbs=4)
    users = env.open_db(b"users")
    with env.begin(write=True) as txn:
        txn.put(b"alice", b"1", db=users)
    env.close()
    for command in (["index", "stats"], ["index", "verify"], ["index", "compact", "--yes"]):
        got = _run(*command, str(idx))
        assert got.returncode != 0 and "Traceback" not in got.stderr
        assert "an LMDB file of something else (tables users)" in got.stdout + got.stderr
    from crawler_dedup.exceptions import StoreDamaged

    with pytest.raises(StoreDamaged, match="something else"):
        Deduplicator(dir=str(idx)).open()
    env = lmdb.open(str(idx), max_dbs=4)
    with env.begin() as txn:
        assert [bytes(k) for k, _ in txn.cursor()] == [b"users"]  # nothing written into it
    env.close()


def test_a_torn_line_is_still_called_torn_once_the_next_crawl_wrote_after_it(tmp_path):
    log = tmp_path / "droplog.jsonl"
    record = {"url": "https://a.test/2", "duplicate_of": "https://a.test/1", "reason": "near", "similarity": 0.9,
              "time": "2026-01-01T00:00:00Z", "stage": "response", "action": "drop"}
    log.write_bytes(json.dumps(record).encode() + b'\n{"url": "https://a.test/3", "dupl')
    with DropLog(str(log)) as dl:
        dl.write(dict(record, url="https://a.test/4"))
    for command in (["inspect", str(log)], ["restore", str(log), "--all", "-o", str(tmp_path / "out.jsonl")],
                    ["report", str(log), "-o", str(tmp_path / "r.html")]):
        got = _run(*command)
        assert got.returncode == 0, (command, got.stderr)
        assert "torn" in got.stdout + got.stderr, command


def test_a_page_a_guard_kept_beside_its_match_is_whole(tmp_path, articles, capsys):
    """A page the title guard keeps beside a page with the same words is filed without an exact
    entry by design: verify must not call that a problem (a real crawl's index has such pages)."""
    gold = articles[3][1]
    with Deduplicator(dir=str(tmp_path / "idx")) as d:
        d.check("https://news.test/a", text=gold, title="Council approves the new harbour budget for next year")
        kept = d.check("https://news.test/b", text=gold, title="Storm closes schools across the northern districts today")
    assert kept.action == "keep"
    assert cli(["index", "verify", str(tmp_path / "idx")]) == 0, capsys.readouterr().out


EXCLUSIVE = """
import sys, time
from crawler_dedup.stores import LmdbStore
with LmdbStore(sys.argv[1]).exclusive("compact"):  # as compact and rebuild hold it, from check to swap
    print("held", flush=True)
    time.sleep(60)
"""


def test_no_crawl_opens_an_index_between_compacts_check_and_its_swap(tmp_path):
    """While `index compact` or `index rebuild` rewrites an index (from its check for other users
    to its swap of data.mdb), a crawl that starts refuses to open it, saying why; it once opened
    in between and wrote into the file about to be replaced."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.exceptions import StoreError

    idx = tmp_path / "idx"
    _build(idx, _texts(5))
    rewriting = subprocess.Popen([sys.executable, "-c", EXCLUSIVE, str(idx)], stdout=subprocess.PIPE, text=True)
    try:
        assert rewriting.stdout.readline().strip() == "held"
        with pytest.raises(StoreError, match="being rewritten.*index compact"):
            Deduplicator(dir=str(idx)).open()
    finally:
        rewriting.kill()
        rewriting.wait()
    with Deduplicator(dir=str(idx)) as d:  # done: it opens again
        assert d.check("https://after.test/", text=" ".join(f"z{i}" for i in range(300))).action == "keep"


def test_reset_refuses_an_index_another_process_is_writing(tmp_path):
    """DEDUP_RESET moves the index aside only when no process writes it (it once checked only its
    own process, and moved the folder from under a running crawl)."""
    idx = tmp_path / "idx"
    _build(idx, _texts(5))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(idx)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "open"
        got = subprocess.run([sys.executable, "-c", "import sys\nfrom crawler_dedup.scrapy import opening\n"
                              "opening.reset_index(sys.argv[1])", str(idx)], capture_output=True, text=True)
        assert got.returncode != 0 and "open in another process" in got.stderr, got.stderr[-2000:]
        assert os.path.isfile(idx / "data.mdb") and not list(tmp_path.glob("idx.reset-*"))
    finally:
        holder.kill()
        holder.wait()


def test_rebuild_never_brings_back_a_replaced_version_over_its_url(tmp_path):
    """A page updated on a recrawl: its old record was removed, but LMDB's freed page still holds
    a copy. When damage hides the live records around it, the rebuild scavenges the file's pages
    for the records it lost, and must not file the stale copy over its URL (it once did, after the
    readable records, so the old text took the URL's entry back from its update)."""
    idx = tmp_path / "idx"
    texts = _texts(120, seed=5)
    with Deduplicator(dir=str(idx)) as d:
        for i, text in enumerate(texts):
            d.check(f"https://site.test/{i}", text=text)
        old = d.index.read(lambda t: t.doc_get(2))
        update = d.check("https://site.test/1", text=_texts(1, seed=99)[0])  # doc 2 out, a new record in
        assert update.revisit == "updated" and update.doc_id > 120
        neighbour = d.index.read(lambda t: t.doc_get(3))
    data = (idx / "data.mdb").read_bytes()
    assert data.count(old) >= 1  # the removed record's bytes are still on a freed page
    page = data.rindex(neighbour) // 4096  # the live leaf page of the records around it (the newest copy): damaged
    with open(idx / "data.mdb", "r+b") as fh:
        fh.seek(page * 4096)
        fh.write(random.Random(7).randbytes(4096))
    got = _run("index", "rebuild", str(idx), "--yes")
    assert got.returncode == 0, got.stderr
    assert "were found on its pages" in got.stdout  # (the damage hid records, and the rebuild scavenged)
    with Deduplicator(dir=str(idx)) as d:
        kept = d.index.read(lambda t: d.index.by_url(t, "https://site.test/1"))
        assert kept is not None and kept.doc_id == update.doc_id, kept
        again = d.check("https://site.test/1", text=_texts(1, seed=99)[0])
        assert (again.action, again.revisit) == ("drop", "unchanged")
