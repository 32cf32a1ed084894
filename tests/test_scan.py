"""`crawler-dedup scan` and `index add` over real pages written into WARC and JSON-lines files, the
warcio sample archives (good and broken), a kill mid-scan, and a crawl after seeding an index."""

import glob
import html as htmlmod
import io
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawler_dedup.config import DedupConfig
from crawler_dedup.tools import seed
from crawler_dedup.core.decide.policy import length_class, parse_policy
from crawler_dedup.tools.scan import COMMIT_ROWS, Options, Scan, ScanError

from .conftest import SHARED_DATA, cli, dedup_stats, scrapy_crawl, write_urls

SAMPLES = os.path.join(SHARED_DATA, "warcio-samples", "test", "data")


def print_page(title: str, text: str) -> bytes:
    paras = "".join(f"<p>{htmlmod.escape(p)}</p>" for p in text.split("\n") if p.strip())
    return f"<html><head><title>{htmlmod.escape(title)}</title></head><body><article>{paras}</article></body></html>".encode()


def group_pages(articles, manifest_titles):
    """(url, html, group) for each bundled real article: the page, its bytes under an http mirror
    and a tracking URL, a print version of its human text, and a shorter print version."""
    out = []
    for i, ((raw, gold), title) in enumerate(zip(articles, manifest_titles)):
        paras = [p for p in gold.split("\n") if p.strip()]
        short = "\n".join(paras[:max(1, len(paras) - 1)])
        out += [(f"https://site{i}.example/story", raw, i),
                (f"http://mirror.example/{i}/a-longer-mirror-path", raw, i),
                (f"https://site{i}.example/story?utm_source=feed&sid={i}", raw, i),
                (f"https://print.example/{i}", print_page(title, gold), i)]
        if len(short.split()) >= 0.9 * len(gold.split()):
            out.append((f"https://print.example/{i}/short", print_page(title, short), i))
    return out


@pytest.fixture(scope="module")
def pages(articles):
    from importlib import resources

    manifest = json.loads((resources.files("crawler_dedup.demo") / "pages" / "manifest.json").read_text("utf-8"))
    return group_pages(articles, [a["title"] for a in manifest["articles"]])


def write_warc(path, pages, gz=True, revisit_of=None, extra=True):
    """A WARC as a crawler writes one: warcinfo, then a response and its request for each page,
    a JSON response (not HTML), and a revisit record of `revisit_of` (a URL of `pages`)."""
    ids = {}
    with open(path, "wb") as fh:
        w = WARCWriter(fh, gzip=gz)
        w.write_record(w.create_warcinfo_record(os.path.basename(str(path)), {"software": "crawler-dedup tests"}))
        for url, body, _ in pages:
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            rec = w.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http)
            w.write_record(rec)
            ids[url] = rec
            req = w.create_warc_record(url, "request", payload=io.BytesIO(b""), http_headers=StatusAndHeaders(
                "GET / HTTP/1.1", [("Host", "example")], is_http_request=True),
                warc_headers_dict={"WARC-Concurrent-To": rec.rec_headers.get_header("WARC-Record-ID")})
            w.write_record(req)
        if extra:
            http = StatusAndHeaders("200 OK", [("Content-Type", "application/json")], protocol="HTTP/1.1")
            w.write_record(w.create_warc_record("https://api.example/x", "response", payload=io.BytesIO(b'{"a": 1}'),
                                                http_headers=http))
        if revisit_of:
            orig = ids[revisit_of]
            http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
            w.write_record(w.create_revisit_record(revisit_of, digest=orig.rec_headers.get_header("WARC-Payload-Digest"),
                                                   refers_to_uri=revisit_of,
                                                   refers_to_date=orig.rec_headers.get_header("WARC-Date"),
                                                   http_headers=http))
    return str(path)


def records(path):
    """(type, URL, record id) of each record of a WARC file."""
    with open(path, "rb") as fh:
        return [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Record-ID"))
                for r in ArchiveIterator(fh)]


def droplog(out):
    with open(os.path.join(out, "droplog.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def clusters(out):
    with open(os.path.join(out, "clusters.jsonl"), encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def scan(inputs, out, **kw):
    return Scan(Options(inputs=[str(p) for p in inputs], out=str(out), **kw)).run()


# -- WARC --------------------------------------------------------------------------------------

def test_scan_warc_keeps_one_page_a_group_and_every_record_goes_somewhere(tmp_path, pages):
    warc = write_warc(tmp_path / "crawl.warc.gz", pages, revisit_of=pages[1][0])
    out = tmp_path / "out"
    summary = scan([warc], out, jobs=2)
    groups = {g for _, _, g in pages}
    kept = [r for r in records(out / "kept" / "crawl.warc.gz")]
    dropped = [r for r in records(out / "dropped" / "crawl.warc.gz")]
    kept_pages = [u for t, u, _ in kept if t == "response" and u.startswith(("http://mirror", "https://site", "https://print"))]
    dropped_pages = [u for t, u, _ in dropped if t == "response"]
    # one page a group kept, every other page dropped
    assert summary["pages"] == len(pages) and summary["kept"] == len(groups) == len(kept_pages)
    assert sorted(kept_pages + dropped_pages) == sorted(u for u, _, _ in pages)
    group_of = {u: g for u, _, g in pages}
    assert len({group_of[u] for u in kept_pages}) == len(groups)
    # every record lands in one output (warcinfo in both); each request follows its response
    original = records(warc)
    assert sorted(r[2] for r in kept + dropped if r[0] != "warcinfo") == sorted(r[2] for r in original if r[0] != "warcinfo")
    assert [r[0] for r in kept + dropped].count("warcinfo") == 2
    for out_records in (kept, dropped):
        responses = {u for t, u, _ in out_records if t == "response"}
        assert {u for t, u, _ in out_records if t == "request"} <= responses | {None}
    assert ("response", "https://api.example/x") in {(t, u) for t, u, _ in kept}  # not HTML: passed through
    # the revisit record went with its original
    revisit_in_kept = any(t == "revisit" for t, _, _ in kept)
    assert revisit_in_kept == (pages[1][0] in kept_pages)
    # the drop log: one line per dropped page (and the revisit when its original was dropped),
    # each naming a kept page of its group
    log = droplog(out)
    assert sorted(r["url"] for r in log if "revisit_of" not in r) == sorted(dropped_pages)
    for r in log:
        assert r["duplicate_of"] in kept_pages and group_of[r["duplicate_of"]] == group_of[r["url"]]
        assert r["spider"] == "scan" and r["stage"] == "response" and r["source"]["file"] == os.path.abspath(warc)
    # the clusters file: each group once, its kept page and dropped pages
    cl = clusters(out)
    assert sorted(c["kept"]["url"] for c in cl) == sorted(kept_pages)
    assert sum(len(c["dropped"]) for c in cl) == len(dropped_pages)
    # records are copied unchanged: the kept output holds the input's bytes for those records
    with open(warc, "rb") as fh:
        data = fh.read()
    with open(out / "kept" / "crawl.warc.gz", "rb") as fh:
        kept_bytes = fh.read()
    assert kept_bytes[:200] == data[:200]  # (the warcinfo member first, byte for byte)


def test_scan_warcio_samples_good_and_broken(tmp_path):
    files = sorted(glob.glob(os.path.join(SAMPLES, "*")))
    if not files:
        pytest.skip("no shared warcio samples here")
    proc = cli("scan", *files, "--out", tmp_path / "out", "--json", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    damaged = {os.path.basename(f["input"]): f.get("damaged") for f in summary["inputs"]}
    # broken ones: a clear message each, skipped from there on, counted
    assert "warcio recompress" in damaged["example-bad-non-chunked.warc.gz"]
    assert damaged["example-wrong-chunks.warc.gz"]
    assert damaged["example.warc"] is None and damaged["example.arc"] is None
    # the same example.com page in several archives: kept once
    assert summary["kept"] >= 1 and summary["by_reason"].get("unchanged", 0) >= 3
    assert summary["revisits"]["dropped"] + summary["revisits"]["kept"] == 2
    # a good file's records all went to an output
    for name in ("example.warc.gz", "example-wget-bad-target-uri.warc.gz", "example.arc.gz"):
        got = records(tmp_path / "out" / "kept" / name) + records(tmp_path / "out" / "dropped" / name)
        want = records(os.path.join(SAMPLES, name))
        head = ("warcinfo", "arc_header")  # (a file header goes to both outputs)
        assert sorted(str(r) for r in got if r[0] not in head) == sorted(str(r) for r in want if r[0] not in head)


def cut_inputs(tmp_path, pages):
    """A .warc.gz and a .jsonl.gz each cut in the middle of a record (a copy stopped half way):
    (warc path, jsonl path, the URLs of the records wholly before each cut)."""
    import gzip

    warc = write_warc(tmp_path / "whole.warc.gz", pages[:12], extra=False)
    with open(warc, "rb") as fh:
        it = ArchiveIterator(fh)
        spans = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), it.get_record_offset()) for r in it]
    responses = [(url, at) for kind, url, at in spans if kind == "response"]
    url, at = responses[8]
    data = open(warc, "rb").read()
    cut_warc = tmp_path / "cut.warc.gz"
    cut_warc.write_bytes(data[:at + 300])  # inside the ninth response's gzip member
    lines = [json.dumps({"url": u, "html": h.decode("utf-8", "replace")}) + "\n" for u, h, _ in pages[:12]]
    packed = gzip.compress("".join(lines).encode())
    cut_jsonl = tmp_path / "cut.jsonl.gz"
    cut_jsonl.write_bytes(packed[:len(packed) * 2 // 3])
    return str(cut_warc), str(cut_jsonl), {u for u, _ in responses[:8]}


def whole_gzip(path) -> bool:
    import gzip

    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(1 << 20):
                pass
    except (EOFError, OSError):
        return False
    return True


def test_damaged_archives_are_scanned_to_the_damage_and_named(tmp_path, pages):
    warc, jsonl, before_cut = cut_inputs(tmp_path, pages)
    proc = cli("scan", warc, jsonl, "--out", tmp_path / "out", "--jobs", "1")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.count("the file was cut short") == 1 and "ends in the middle of its gzip stream" in proc.stdout, \
        proc.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    damaged = {os.path.basename(f["input"]): f.get("damaged") for f in summary["inputs"]}
    assert warc in damaged["cut.warc.gz"] and jsonl in damaged["cut.jsonl.gz"]
    # the records before the cut decided and copied; the cut one in no output; every output whole
    for sub in ("kept", "dropped"):
        assert whole_gzip(tmp_path / "out" / sub / "cut.warc.gz") and whole_gzip(tmp_path / "out" / sub / "cut.jsonl.gz")
    got = {url for sub in ("kept", "dropped") for kind, url, _ in records(tmp_path / "out" / sub / "cut.warc.gz")
           if kind == "response"}
    assert got == before_cut
    import gzip

    copied = [json.loads(line) for sub in ("kept", "dropped")
              for line in gzip.open(tmp_path / "out" / sub / "cut.jsonl.gz", "rt", encoding="utf-8")]
    assert 4 <= len(copied) < 12 and all(row["url"] for row in copied)


# -- JSON lines and policies ----------------------------------------------------------------------

def write_jsonl(path, pages, order=None):
    rows = [{"url": u, "html": h.decode("utf-8", "replace"), "n": k} for k, (u, h, _) in enumerate(pages)]
    if order is not None:
        rows = [rows[i] for i in order]
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")
        fh.write("not json\n")
    return str(path)


@pytest.mark.parametrize("policy", ["longest", "shortest-url", "https-first", "canonical"])
def test_policy_picks_do_not_depend_on_input_order(tmp_path, pages, policy):
    shuffled = list(range(len(pages)))
    random.Random(3).shuffle(shuffled)
    a = write_jsonl(tmp_path / "a.jsonl", pages)
    b = write_jsonl(tmp_path / "b.jsonl", pages, shuffled)
    sa = scan([a], tmp_path / "oa", policy=policy, jobs=1)
    sb = scan([b], tmp_path / "ob", policy=policy, jobs=1)
    ca, cb = clusters(tmp_path / "oa"), clusters(tmp_path / "ob")
    assert {c["kept"]["url"] for c in ca} == {c["kept"]["url"] for c in cb}
    assert ({(c["kept"]["url"], tuple(sorted(d["url"] for d in c["dropped"]))) for c in ca}
            == {(c["kept"]["url"], tuple(sorted(d["url"] for d in c["dropped"]))) for c in cb})
    assert sa["kept"] == sb["kept"] and sa["passed"] == {"bad_json": 1}
    keys = parse_policy(policy)
    for c in ca:  # the kept page is the group's best by the policy's first key (longest: its length class)
        members = [c["kept"]] + c["dropped"]
        best = {"longest": lambda m: -length_class(m["scores"]["words"]), "shortest-url": lambda m: m["scores"]["url_length"],
                "https-first": lambda m: not m["scores"]["https"],
                "canonical": lambda m: 0}[keys[0]]
        assert best(c["kept"]) == min(best(m) for m in members)


def test_first_policy_keeps_stream_order_and_jsonl_outputs(tmp_path, pages):
    path = write_jsonl(tmp_path / "items.jsonl", pages)
    out = tmp_path / "out"
    summary = scan([path], out, policy="first", jobs=1)
    with open(path, "rb") as fh:
        lines = fh.readlines()
    kept = (out / "kept" / "items.jsonl").read_bytes().splitlines(keepends=True)
    dropped = (out / "dropped" / "items.jsonl").read_bytes().splitlines(keepends=True)
    assert sorted(kept + dropped) == sorted(lines)  # each line, unchanged, in one output
    assert kept[-1] == b"not json\n"  # what cannot be read is passed through, counted
    first_of = {}
    for u, _, g in pages:
        first_of.setdefault(g, u)
    kept_urls = [json.loads(line)["url"] for line in kept if line.startswith(b"{")]
    assert kept_urls == list(first_of.values())
    log = droplog(out)
    assert len(log) == summary["dropped"] == len(dropped)
    assert all(r["stage"] == "item" and r["item"]["url"] == r["url"] for r in log)  # the whole item, as a crawl logs it


def test_bad_usage_is_a_message(tmp_path, pages):
    arr = tmp_path / "items.json"
    arr.write_text(json.dumps([{"url": "https://a.example/", "html": "<p>x</p>"}]))
    proc = cli("scan", arr, "--out", tmp_path / "o1")
    assert proc.returncode == 2 and "JSON array" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("scan", tmp_path / "missing.warc.gz", "--out", tmp_path / "o2")
    assert proc.returncode == 2 and "no such file" in proc.stderr
    proc = cli("scan", arr, "--out", tmp_path / "o3", "--policy", "bestest")
    assert proc.returncode == 2 and "--policy takes" in proc.stderr
    path = write_jsonl(tmp_path / "items.jsonl", pages[:6])
    assert cli("scan", path, "--out", tmp_path / "o4", "--jobs", "1").returncode == 0
    again = cli("scan", path, "--out", tmp_path / "o4", "--jobs", "1")
    assert again.returncode == 0 and "finished before" in again.stdout
    other = cli("scan", path, "--out", tmp_path / "o4", "--policy", "first", "--json")
    assert other.returncode == 0 and json.loads(other.stdout)["policy"] == ["first"]  # decided again
    other = cli("scan", path, "--out", tmp_path / "o4", "--policy", "first", "-s", "DEDUP_THRESHOLD=0.6")
    assert other.returncode == 2 and "--restart" in other.stderr
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "mine.txt").write_text("x")
    proc = cli("scan", path, "--out", tmp_path / "busy")
    assert proc.returncode == 2 and "other files" in proc.stderr


def test_inputs_as_globs_and_list_files(tmp_path, pages):
    """A quoted glob is one listing (`**/` any folders), @FILE a list of paths and globs; a glob
    that matches nothing, or a list naming a missing file, is a message before any work."""
    from crawler_dedup.tools import files

    (tmp_path / "crawl" / "day2").mkdir(parents=True)
    a = write_jsonl(tmp_path / "crawl" / "a.jsonl", pages[:10])
    b = write_jsonl(tmp_path / "crawl" / "day2" / "b.jsonl", pages[10:20])
    (tmp_path / "crawl" / "notes.txt").write_text("x")
    assert files.expand([str(tmp_path / "crawl" / "*.jsonl")]) == [a]
    assert files.expand([str(tmp_path / "crawl" / "**" / "*.jsonl")]) == [a, b]
    listed = tmp_path / "inputs.txt"
    listed.write_text(f"# day one\n{a}\n\n{tmp_path / 'crawl' / 'day2' / '*.json[l]'}\n")
    assert files.expand([f"@{listed}"]) == [a, b]
    proc = cli("scan", str(tmp_path / "crawl" / "**" / "*.jsonl"), "--out", tmp_path / "o", "--jobs", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [f["input"] for f in json.loads(proc.stdout)["inputs"]] == [a, b]
    proc = cli("scan", str(tmp_path / "crawl" / "*.warc.gz"), "--out", tmp_path / "o2")
    assert proc.returncode == 2 and "no file matches" in proc.stderr
    listed.write_text(f"{tmp_path / 'gone.jsonl'}\n")
    proc = cli("scan", f"@{listed}", "--out", tmp_path / "o3")
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr


# -- interrupted --------------------------------------------------------------------------------

def outputs(out):
    """What a scan wrote, without the drop log's times."""
    got = {}
    for sub in ("kept", "dropped"):
        for name in sorted(os.listdir(os.path.join(out, sub))):
            with open(os.path.join(out, sub, name), "rb") as fh:
                got[f"{sub}/{name}"] = fh.read()
    got["droplog"] = [{k: v for k, v in r.items() if k != "time"} for r in droplog(out)]
    got["clusters"] = clusters(out)
    return got


def test_a_killed_scan_goes_on_and_ends_as_an_uninterrupted_one(tmp_path, pages):
    # 3 URLs a page, each with bytes of its own (so each is extracted: the kill lands mid-read)
    many = [(f"{u}#{n}" if n else u, h + f"<!-- {n} -->".encode() if n else h, g) for n in range(3) for u, h, g in pages]
    warc = write_warc(tmp_path / "big.warc.gz", many, revisit_of=many[0][0])
    whole = tmp_path / "whole"
    assert cli("scan", warc, "--out", whole, "--jobs", "1", timeout=600).returncode == 0
    out = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "crawler_dedup", "scan", warc, "--out", str(out), "--jobs", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = out / ".scan" / "state.sqlite"
    deadline = time.time() + 300
    seen = 0
    while time.time() < deadline and proc.poll() is None:
        if state.exists():
            try:
                with sqlite3.connect(state) as db:
                    seen = db.execute("SELECT count(*) FROM entries").fetchone()[0]
            except sqlite3.Error:
                seen = 0
            if seen:
                break
        time.sleep(0.05)
    assert proc.poll() is None, "the scan ended before it could be killed: make the input longer"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < seen < len(many) * 2
    again = cli("scan", warc, "--out", out, "--jobs", "1", "--json", timeout=600)
    assert again.returncode == 0, again.stderr
    assert outputs(out) == outputs(whole)


def test_ctrl_c_says_the_same_command_continues_the_scan(tmp_path, pages):
    """Ctrl-C (SIGINT) mid-read: one line on stderr saying how to go on, exit 130; the pages it
    names are the ones the state file holds (that the same command goes on after them is the
    killed scan's test, below). The input is past the read pass's first commit (COMMIT_ROWS), so the
    signal lands mid-read however fast the machine reads."""
    many = [(f"{u}#{n}" if n else u, h + f"<!-- {n} -->".encode() if n else h, g) for n in range(12) for u, h, g in pages]
    assert len(many) > 3 * COMMIT_ROWS
    path = write_jsonl(tmp_path / "items.jsonl", many)
    out = tmp_path / "stopped"
    proc = subprocess.Popen([sys.executable, "-m", "crawler_dedup", "scan", path, "--out", str(out), "--jobs", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    state = out / ".scan" / "state.sqlite"
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(state) as db:
                if db.execute("SELECT count(*) FROM entries").fetchone()[0]:
                    break
        except sqlite3.Error:
            pass
        time.sleep(0.05)
    assert proc.poll() is None, "the scan ended before it could be stopped: make the input longer"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    with sqlite3.connect(state) as db:
        read = db.execute("SELECT count(*) FROM entries WHERE kind='page'").fetchone()[0]
    assert proc.returncode == 130, err
    assert err == (f"scan stopped: run the same command again to continue from the {read} pages already read "
                   "(or add --restart to start over)\n"), err
    assert 0 < read < len(many)


def test_a_scan_stopped_before_reading_says_so(tmp_path, pages):
    path = write_jsonl(tmp_path / "items.jsonl", pages[:3])
    stopped = Scan(Options(inputs=[path], out=str(tmp_path / "out"), policy="longest", jobs=1))
    assert stopped.stopped() == "scan stopped before a page was read: run the same command again to start it"


def test_a_decide_pass_stopped_mid_batch_goes_on_without_deciding_twice(tmp_path, pages, monkeypatch):
    from crawler_dedup import Deduplicator

    path = write_jsonl(tmp_path / "items.jsonl", pages)
    scan([path], tmp_path / "whole", jobs=1)
    real = Deduplicator.decide_many
    calls = {"n": 0}

    def stop_after_commit(self, batch):
        got = real(self, batch)
        calls["n"] += 1
        if calls["n"] == 2:  # the index committed this batch; the state file never hears of it
            raise KeyboardInterrupt
        return got

    monkeypatch.setattr("crawler_dedup.tools.scan.BATCH", 16)
    monkeypatch.setattr(Deduplicator, "decide_many", stop_after_commit)
    with pytest.raises(KeyboardInterrupt):
        scan([path], tmp_path / "stopped", jobs=1)
    monkeypatch.setattr(Deduplicator, "decide_many", real)
    scan([path], tmp_path / "stopped", jobs=1)
    assert outputs(tmp_path / "stopped") == outputs(tmp_path / "whole")


# -- seeding an index, then crawling ------------------------------------------------------------

def test_index_add_then_a_crawl_drops_what_is_stored(tmp_path, pages, serve):
    routes = {f"/p{i}.html": (200, {"Content-Type": "text/html; charset=utf-8"}, h) for i, (_, h, _) in enumerate(pages[:12])}
    group = {f"/p{i}.html": g for i, (_, _, g) in enumerate(pages[:12])}
    server = serve(routes=routes)
    url = {p: server.base_url + p for p in routes}
    stored = [(url[p], routes[p][2], group[p]) for p in list(routes)[:8]]  # 8 pages crawled before
    warc = write_warc(tmp_path / "old.warc.gz", stored, extra=False)
    index = tmp_path / "index"
    proc = cli("index", "add", warc, "--dir", index, "--json", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    counts = json.loads(proc.stdout)
    first_stored = {}
    for u, _, g in stored:
        first_stored.setdefault(g, u)
    assert counts["pages"] == 8 and counts["added"] == len(first_stored) and counts["copies"] == 8 - len(first_stored)
    again = json.loads(cli("index", "add", warc, "--dir", index, "--json").stdout)
    assert again["added"] == 0 and again["unchanged"] == counts["added"]  # nothing filed twice
    urls = write_urls(tmp_path / "urls.txt", list(url.values()))
    log = tmp_path / "drops.jsonl"
    run = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={index}", "-s", f"DEDUP_DROPLOG={log}",
                       "-o", str(tmp_path / "items.jsonl"))
    assert run.returncode == 0, run.stderr[-3000:]
    drops = [json.loads(line) for line in open(log, encoding="utf-8")]
    items = [json.loads(line)["url"] for line in open(tmp_path / "items.jsonl", encoding="utf-8")]
    # the pages filed are dropped as unchanged, their copies as copies; nothing of a stored
    # group is crawled again; every URL was stored or dropped with a line
    assert {d["url"] for d in drops if d["reason"] == "unchanged"} == set(first_stored.values())
    group_of_url = {url[p]: group[p] for p in routes}
    assert not {group_of_url[u] for u in items} & set(first_stored)
    assert sorted(items + [d["url"] for d in drops]) == sorted(url.values())
    assert dedup_stats(run.stderr).get("dedup/unchanged", 0) == len(first_stored)


def test_index_add_in_process_counts(tmp_path, pages):
    path = write_jsonl(tmp_path / "items.jsonl", pages)
    config = DedupConfig.from_settings({"DEDUP_DIR": str(tmp_path / "ix")})
    counts = seed.add([path], config, jobs=1)
    groups = len({g for _, _, g in pages})
    assert counts["pages"] == len(pages) and counts["passed"] == {"bad_json": 1}
    assert counts["added"] >= groups and counts["added"] + counts["copies"] == len(pages)
    with pytest.raises(Exception, match="JSON array|no such file"):
        seed.add([str(tmp_path / "nope.jsonl")], config)


def test_scan_against_a_shared_redis_index(tmp_path, pages, redis_server):
    half = len(pages) // 2
    one = write_jsonl(tmp_path / "one.jsonl", pages[:half])
    two = write_jsonl(tmp_path / "two.jsonl", pages[half:] + pages[:3])
    settings = {"DEDUP_BACKEND": "redis", "DEDUP_REDIS_URL": redis_server, "DEDUP_REDIS_PREFIX": "scan-test"}
    scan([one], tmp_path / "m1", policy="first", jobs=1, settings=settings)
    s2 = scan([two], tmp_path / "m2", policy="first", jobs=1, settings=settings)
    # machine two drops the pages machine one kept (they are in the shared index)
    log = droplog(tmp_path / "m2")
    assert {r["url"] for r in log} >= {u for u, _, _ in pages[:3]}
    assert s2["index"] is None
    kept_by_one = {c["kept"]["url"] for c in clusters(tmp_path / "m1")} | {
        json.loads(line)["url"] for line in (tmp_path / "m1" / "kept" / "one.jsonl").read_text().splitlines()
        if line.startswith("{")}
    outside = [c for c in clusters(tmp_path / "m2") if "outside" in c["kept"]]
    assert outside and all(c["kept"]["url"] in kept_by_one for c in outside)
    # its pages are in the shared index: another policy cannot decide them again there, and
    # asking leaves the finished scan as it was
    with pytest.raises(ScanError, match="shared index"):
        scan([one], tmp_path / "m1", policy="longest", jobs=1, settings=settings)
    assert scan([one], tmp_path / "m1", policy="first", jobs=1, settings=settings).get("already_done")


def test_an_out_that_cannot_be_made_is_one_line_before_any_work(tmp_path, pages):
    path = write_jsonl(tmp_path / "a.jsonl", pages[:3])
    (tmp_path / "afile").write_text("x")
    for out, why in ((tmp_path / "afile" / "sub", "Not a directory"), ("/proc/nope/x", "No such file")):
        proc = cli("scan", path, "--out", out)
        assert proc.returncode == 2 and f"--out {out} cannot be made: {why}" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr
