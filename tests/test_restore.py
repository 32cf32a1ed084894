"""`crawler-dedup restore` and `index remove`: undo a drop and stop it recurring."""

import json
import re
import shutil

from crawler_dedup import Deduplicator

from .conftest import cli, dedup_stats, scrapy_runspider


def _lines(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_restore_items_from_a_real_item_crawl_and_reingest_with_allow(tmp_path, articles):
    """Items dropped by the pipeline come back whole; fed again with the printed DEDUP_ALLOW
    entries, they are kept."""
    texts = tmp_path / "texts.jsonl"
    records = [{"url": "https://a/1", "text": articles[0][1], "tag": "first"},
               {"url": "https://b/1", "text": articles[0][1], "tag": "copy", "n": 7},
               {"url": "https://c/1", "text": articles[1][1]}]
    texts.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    drops = tmp_path / "drops.jsonl"
    proc = scrapy_runspider("-a", f"texts={texts}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
                            "-s", "CONCURRENT_REQUESTS=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [r["url"] for r in _lines(drops)] == ["https://b/1"]

    out, allow = tmp_path / "restored.jsonl", tmp_path / "allow.txt"
    proc = cli("restore", drops, "--url", "https://b/1", "-o", out, "--allow-file", allow)
    assert proc.returncode == 0, proc.stderr
    assert _lines(out) == [records[1]]  # the whole item, as the spider made it
    assert "restored 1 of 1 selected drop (1 item," in proc.stdout
    patterns = allow.read_text().split()
    assert patterns == ["^" + re.escape("https://b/1") + "$"]

    # re-ingest the restored items with the allow-list: kept this time
    proc = scrapy_runspider("-a", f"texts={out}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
                            "-s", f"DEDUP_ALLOW={json.dumps(patterns)}", "-o", str(tmp_path / "again.jsonl"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [i["url"] for i in _lines(tmp_path / "again.jsonl")] == ["https://b/1"]
    assert dedup_stats(proc.stderr).get("dedup/skipped/allowed") == 1


def test_restore_response_drops_from_their_text(demo_out, tmp_path):
    log = demo_out / "droplog.jsonl"
    recs = _lines(log)
    near = [r for r in recs if r["reason"] == "near"]
    proc = cli("restore", log, "--reason", "near", "-o", tmp_path / "near.jsonl")
    assert proc.returncode == 0, proc.stderr
    got = _lines(tmp_path / "near.jsonl")
    assert [g["url"] for g in got] == [r["url"] for r in near]
    assert all(g["text"] == r["text"] and g.get("title") == r.get("title") for g, r in zip(got, near))
    proc = cli("restore", log, "--all")  # to stdout, the summary to stderr
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == len(recs)
    assert f"restored {len(recs)} of {len(recs)} selected drops" in proc.stderr
    proc = cli("restore", log, "--url", "*/print/*", "--allow")
    printed = [line.strip() for line in proc.stderr.splitlines() if line.startswith("  ^")]
    prints = [r["url"] for r in recs if "/print/" in r["url"]]
    assert len(printed) == len(prints) > 0
    assert all(re.fullmatch(p, u) for p, u in zip(printed, prints))
    assert not re.fullmatch(printed[0], prints[0] + "x")  # anchored: that URL only


def test_restore_counts_lines_with_nothing_to_restore(tmp_path, demo_out):
    recs = _lines(demo_out / "droplog.jsonl")[:3]
    recs[1].pop("text")
    log = tmp_path / "d.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs) + "garbage\n", encoding="utf-8")
    proc = cli("restore", log, "--all", "-o", tmp_path / "out.jsonl")
    assert proc.returncode == 0
    assert "restored 2 of 3 selected drops" in proc.stdout
    assert "1 selected drop had nothing to restore" in proc.stdout and recs[1]["url"] in proc.stdout
    assert "1 malformed line skipped" in proc.stdout


def test_restore_refuses_without_a_selector(demo_out, tmp_path):
    proc = cli("restore", demo_out / "droplog.jsonl", "-o", tmp_path / "x.jsonl")
    assert proc.returncode == 2 and "say what to restore" in proc.stderr
    assert not (tmp_path / "x.jsonl").exists()
    proc = cli("restore", demo_out / "droplog.jsonl", "--all", "--reason", "near")
    assert proc.returncode == 2
    proc = cli("restore", tmp_path / "missing.jsonl", "--all", "-o", tmp_path / "y.jsonl")
    assert proc.returncode == 2 and "no drop log" in proc.stderr
    assert not (tmp_path / "y.jsonl").exists()


def test_index_remove_takes_the_kept_page_out(demo_out, tmp_path):
    idx = tmp_path / "index"
    shutil.copytree(demo_out / "index", idx)
    rec = next(r for r in _lines(demo_out / "droplog.jsonl") if r["reason"] == "near")
    proc = cli("index", "remove", rec["duplicate_of"], "--dir", idx, "--dry-run")
    assert proc.returncode == 0 and f"would remove the kept page at {rec['duplicate_of']}" in proc.stdout
    proc = cli("index", "remove", rec["duplicate_of"], "--dir", idx)  # no terminal to ask on, no --yes
    assert proc.returncode == 2 and "give --yes" in proc.stderr and "would" not in proc.stdout
    proc = cli("index", "remove", rec["duplicate_of"], "--dir", idx, "--yes", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["removed"] is True and json.loads(proc.stdout)["url"] == rec["duplicate_of"]
    proc = cli("index", "remove", rec["duplicate_of"], "--dir", idx, "--yes")
    assert proc.returncode == 1 and "no kept page at" in proc.stderr
    proc = cli("index", "remove", "http://x/", "--dir", tmp_path / "none", "--yes")
    assert proc.returncode == 2 and "no LMDB index" in proc.stderr
    other = next(r for r in _lines(demo_out / "droplog.jsonl") if r["duplicate_of"] != rec["duplicate_of"])
    with Deduplicator(dir=str(idx)) as d:
        # the dropped page's text no longer matches; the rest of the index still does
        assert d.check(rec["url"], text=rec["text"]).action == "keep"
        again = d.check(other["url"], text=other["text"])
        assert again.action == "drop" and again.duplicate_of == other["duplicate_of"]


def test_restore_url_means_that_url_only(tmp_path, demo_out):
    rec = _lines(demo_out / "droplog.jsonl")[0]
    longer = dict(rec, url=rec["url"] + "0")  # a URL the first one is a prefix of
    log = tmp_path / "d.jsonl"
    log.write_text(json.dumps(rec) + "\n" + json.dumps(longer) + "\n", encoding="utf-8")
    proc = cli("restore", log, "--url", rec["url"])
    assert proc.returncode == 0 and [json.loads(x)["url"] for x in proc.stdout.splitlines()] == [rec["url"]]
    proc = cli("inspect", "--log", log, "--url", rec["url"], "--json")  # the same --url in inspect
    assert json.loads(proc.stdout)["matched"] == 1
    proc = cli("inspect", "--log", log, "--url", rec["url"] + "*", "--json")  # a glob for more
    assert json.loads(proc.stdout)["matched"] == 2


def test_restore_never_writes_into_the_drop_log(tmp_path, demo_out):
    log = tmp_path / "d.jsonl"
    shutil.copy(demo_out / "droplog.jsonl", log)
    before = log.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(log)
    for args in (("-o", log), ("-o", tmp_path / "link.jsonl"), ("-o", tmp_path / "." / "d.jsonl"),
                 ("--allow-file", log), ("-o", tmp_path / "out.jsonl", "--allow-file", tmp_path / "link.jsonl")):
        proc = cli("restore", log, "--all", *args)
        assert proc.returncode == 2 and "is the drop log itself" in proc.stderr, (args, proc.stderr)
        assert log.read_bytes() == before
    assert not (tmp_path / "out.jsonl").exists()  # refused before -o was opened


def test_restore_warns_of_a_url_with_no_line_and_escapes_what_it_prints(tmp_path, demo_out):
    rec = _lines(demo_out / "droplog.jsonl")[0]
    hostile = dict(rec, url=rec["url"] + "\x1b[2J\r\x07")
    log = tmp_path / "d.jsonl"
    log.write_text(json.dumps(rec) + "\n" + json.dumps(hostile) + "\n", encoding="utf-8")
    proc = cli("restore", log, "--url", "http://nowhere/x", "--url", rec["url"])
    assert proc.returncode == 0
    assert "no drop-log line for http://nowhere/x" in proc.stderr and f"no drop-log line for {rec['url']}\n" not in proc.stderr
    proc = cli("restore", log, "--all", "--allow", "-o", tmp_path / "out.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert not {"\x1b", "\r", "\x07"} & set(proc.stdout)
    assert "\\u001b" in proc.stdout and "no drop-log line" not in proc.stderr  # (a pattern writes it as a regex escape)
    # the JSONL itself keeps the URL as it was
    assert [json.loads(x)["url"] for x in (tmp_path / "out.jsonl").read_text().splitlines()] == [rec["url"], hostile["url"]]


def test_restore_help_names_the_title_too():
    proc = cli("restore", "--help")
    assert "{url, text, title}" in " ".join(proc.stdout.split())


def test_allow_patterns_hold_no_whitespace_and_match_only_their_url():
    import re

    from crawler_dedup.tools.restore import allow_pattern

    for url in ("https://evil.test/x\u3000.\u3000y", "https://a.test/p q\n\x1b[2J", "https://a.test/?a=1&b=[2]",
                "https://a.test/\u2028\U0001F600"):
        pattern = allow_pattern(url)
        assert pattern.split() == [pattern]  # one word: a file of them read back with split() is whole
        assert re.search(pattern, url)
        assert not re.search(pattern, "https://a.test/") and not re.search(pattern, url + "x")


def test_a_url_dropped_by_two_crawls_is_restored_once_from_its_latest_drop(tmp_path, demo_out):
    rec = next(r for r in _lines(demo_out / "droplog.jsonl") if isinstance(r.get("text"), str))
    later = dict(rec, text=rec["text"] + " (as the second crawl saw it)", time="2999-01-01T00:00:00Z")
    other = next(r for r in _lines(demo_out / "droplog.jsonl") if r["url"] != rec["url"] and isinstance(r.get("text"), str))
    log = tmp_path / "d.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in (rec, other, later)), encoding="utf-8")
    proc = cli("restore", "--log", log, "--all", "-o", tmp_path / "out.jsonl")
    assert proc.returncode == 0, proc.stderr
    items = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [i["url"] for i in items] == [other["url"], rec["url"]]  # once each, in the order of the lines written
    assert items[1]["text"].endswith("(as the second crawl saw it)")
    assert "restored 2 of 3 selected drops" in proc.stdout and "1 selected drop was of a URL dropped again later" in proc.stdout


def test_c1_controls_and_bidi_characters_are_escaped_in_every_json_printed(tmp_path, demo_out):
    """U+009B (a one-character CSI on some terminals), U+0085 and the bidi overrides in a crawled
    URL and title come out of restore (stdout) and show --json as JSON escapes, and parse back to
    the very same value."""
    rec = next(r for r in _lines(demo_out / "droplog.jsonl") if isinstance(r.get("text"), str))
    url = rec["url"] + "/\x9b2J\x85\u202egnp.exe\u2066"
    hostile = dict(rec, url=url, title="Title \x9b31m\u202e")
    log = tmp_path / "d.jsonl"
    log.write_text(json.dumps(hostile, ensure_ascii=False) + "\n", encoding="utf-8")
    unsafe = {"\x9b", "\x85", "\u202e", "\u2066"}
    restored = cli("restore", log, "--all")
    assert restored.returncode == 0, restored.stderr
    assert not unsafe & set(restored.stdout) and "\\u009b" in restored.stdout and "\\u202e" in restored.stdout
    assert json.loads(restored.stdout.splitlines()[0])["url"] == url
    shown = cli("show", url, "--log", log, "--json")
    assert not unsafe & set(shown.stdout), shown.stdout
    drop = json.loads(shown.stdout)["drop"]
    assert (drop["url"], drop["title"]) == (url, hostile["title"])
