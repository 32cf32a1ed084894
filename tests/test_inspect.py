"""`crawler-dedup inspect` on the demo crawl's drop log and on crafted ones; the streaming reader."""

import json
import os
import pty
import subprocess
import sys
from collections import Counter
from fnmatch import fnmatchcase

from crawler_dedup.cli import main
from crawler_dedup.tools.inspect import Filters, Summary, TopCounter, summarize

from .conftest import cli


def _records(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_summary_json_agrees_with_the_log(demo_out):
    log = demo_out / "droplog.jsonl"
    recs = _records(log)
    proc = cli("inspect", log, "--json", "--limit", "5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # piped: no progress bar
    got = json.loads(proc.stdout)
    assert got["records"] == got["matched"] == len(recs) and got["malformed"]["lines"] == 0
    assert got["by_reason"] == dict(Counter(r["reason"] for r in recs))
    assert got["by_stage"] == {"response": len(recs)} and got["by_action"] == {"dropped": len(recs)}
    assert got["by_domain"] == [{"domain": "127.0.0.1", "drops": len(recs)}]
    kept = Counter(r["duplicate_of"] for r in recs)
    assert got["top_kept"][0]["duplicates"] == max(kept.values())
    assert all(kept[row["url"]] == row["duplicates"] for row in got["top_kept"])
    assert sum(b["count"] for b in got["similarity_histogram"]) == len(recs)
    assert got["distance_histogram"] == {str(d): n for d, n in sorted(Counter(r["distance"] for r in recs).items())}
    assert [d["url"] for d in got["drops"]] == [r["url"] for r in recs[-5:]]  # the latest five, in order
    assert got["first"] == min(r["time"] for r in recs) and got["last"] == max(r["time"] for r in recs)


def test_filters_select_what_they_say(demo_out, capsys):
    log = demo_out / "droplog.jsonl"
    recs = _records(log)

    def matched(*args):  # in-process: the same main() the console script runs
        assert main(["inspect", str(log), "--json", *args]) == 0
        return json.loads(capsys.readouterr().out)["matched"]

    assert matched("--reason", "near") == sum(r["reason"] == "near" for r in recs) > 0
    assert matched("--url", "*/print/*") == sum(fnmatchcase(r["url"], "*/print/*") for r in recs) > 0
    assert matched("--url", "*utm_source*") == sum("utm_source" in r["url"] for r in recs) > 0
    assert matched("--url", "utm_source") == 0  # --url is a URL or a glob in every command, not a substring
    assert matched("--url", recs[0]["url"]) == sum(r["url"] == recs[0]["url"] for r in recs) >= 1
    assert matched("--min-similarity", "0.99") == sum(r["similarity"] >= 0.99 for r in recs)
    assert matched("--domain", "127.0.0.1") == len(recs)
    assert matched("--domain", "example.com") == 0
    assert matched("--since", "2000-01-01") == len(recs)
    assert matched("--since", "2999-01-01T00:00:00Z") == 0
    assert matched("--reason", "near", "--url", "*/print/*") == sum(
        r["reason"] == "near" and "/print/" in r["url"] for r in recs)


def test_text_output_has_tables_and_histograms(demo_out):
    proc = cli("inspect", demo_out / "droplog.jsonl", "--reason", "near")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for heading in ("by reason: near", "drops by domain:", "kept pages with the most duplicates:", "similarity:",
                    "distance (bits):", "matching drops:"):
        assert heading in out
    assert "#" in out.split("similarity:")[1]  # histogram bars


def test_bad_usage_and_missing_file_exit_2(tmp_path):
    proc = cli("inspect", tmp_path / "nope.jsonl")
    assert proc.returncode == 2 and "no drop log at" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("inspect", tmp_path)
    assert proc.returncode == 2 and "folder" in proc.stderr
    (tmp_path / "d.jsonl").write_text("")
    proc = cli("inspect", tmp_path / "d.jsonl", "--since", "yesterday")
    assert proc.returncode == 2 and "--since" in proc.stderr
    proc = cli("inspect", tmp_path / "d.jsonl", "--min-similarity", "2")
    assert proc.returncode == 2
    proc = cli("inspect", tmp_path / "d.jsonl", "--reason", "fuzzy")
    assert proc.returncode == 2 and "invalid choice" in proc.stderr
    proc = cli("inspect", tmp_path / "d.jsonl")
    assert proc.returncode == 0 and "0 drop-log lines" in proc.stdout


def test_malformed_lines_are_counted_not_fatal(demo_out, tmp_path):
    good = (demo_out / "droplog.jsonl").read_bytes().splitlines(keepends=True)
    log = tmp_path / "mixed.jsonl"
    log.write_bytes(good[0] + b"{not json\n" + b"[1, 2]\n" + b'{"url": "x"}\n' + b"\xff\xfe garbage\n"
                    + good[1] + b"\n" + good[2][:40] + b"\n" + b'{"a": ' * 100_000 + b"\n")
    proc = cli("inspect", log, "--json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["records"] == 2 and got["malformed"]["lines"] == 6
    assert [e["line"] for e in got["malformed"]["examples"]] == [2, 3, 4, 5, 8]
    proc = cli("inspect", log)
    assert "6 malformed lines skipped" in proc.stdout and "line 2: not JSON" in proc.stdout


def test_progress_bar_only_on_a_terminal(demo_out):
    log = demo_out / "droplog.jsonl"
    master, slave = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "crawler_dedup", "inspect", str(log)], stdout=subprocess.PIPE,
                              stderr=slave, timeout=60)
        os.close(slave)
        seen = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(master)
    assert proc.returncode == 0
    assert b"reading" in seen and b"iB" in seen and b"\x1b[" in seen  # rich's bar, in bytes read
    assert b"drop-log lines" in proc.stdout


def test_top_counter_and_summary_stay_bounded():
    top = TopCounter(capacity=100)
    for i in range(50_000):
        top.add(f"rare{i}")
        if i % 10 == 0:
            top.add("heavy")
        if i % 25 == 0:
            top.add("second")
    assert len(top.counts) <= 200
    (k1, n1), (k2, n2) = top.top(2)
    assert (k1, n1) == ("heavy", 5000) and (k2, n2) == ("second", 2000) and top.approximate
    s = Summary(limit=3)
    for i in range(1000):
        s.add({"url": f"https://h{i}.example/x", "duplicate_of": f"https://k{i}", "reason": "near",
               "action": "dropped", "stage": "response", "similarity": 0.9, "distance": 2,
               "time": "2026-01-01T00:00:00Z"})
    assert len(s.drops) == 3 and s.matched == 1000 and sum(s.sim_bins) == 1000


def test_summarize_in_process_uses_filters(demo_out):
    s = summarize(str(demo_out / "droplog.jsonl"), Filters(reasons=("exact",)))
    assert s.matched == s.by_reason["exact"] and s.matched < s.total


def test_every_new_subcommand_has_help_and_rejects_bad_usage(tmp_path):
    for args in (["inspect"], ["show"], ["compare"], ["report"], ["restore"], ["index", "remove"]):
        proc = cli(*args, "--help")
        assert proc.returncode == 0 and "usage:" in proc.stdout, args
        proc = cli(*args, "--no-such-option")
        assert proc.returncode == 2 and "usage:" in proc.stderr, args


def _with_line(demo_out, path, **changes):
    """The demo's first three drop-log lines and a copy of the first with `changes`."""
    recs = _records(demo_out / "droplog.jsonl")[:3]
    with open(path, "w", encoding="utf-8") as fh:
        for r in [*recs, dict(recs[0], **changes)]:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def test_out_of_range_numbers_are_malformed_lines_not_a_crash(demo_out, tmp_path):
    bad = [{"similarity": 1e308}, {"similarity": -0.5}, {"similarity": 1.5}, {"similarity": "0.9"},
           {"similarity": True}, {"distance": -3}, {"distance": 10**30}, {"distance": 2.5}, {"distance": "3"},
           {"fingerprint": 12345}, {"duplicate_of_fingerprint": "xyz"}]
    for i, change in enumerate(bad):
        log = _with_line(demo_out, tmp_path / f"d{i}.jsonl", **change)
        proc = cli("inspect", log, "--json")
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (change, proc.stderr[-500:])
        got = json.loads(proc.stdout)
        assert got["records"] == 3 and got["malformed"]["lines"] == 1, change
        assert got["malformed"]["examples"][0]["line"] == 4
        proc = cli("inspect", log)
        assert proc.returncode == 0 and "1 malformed line skipped" in proc.stdout, change
    # NaN and Infinity are what Python's json writes for float('nan'), float('inf')
    log = tmp_path / "nan.jsonl"
    good = (demo_out / "droplog.jsonl").read_text(encoding="utf-8").splitlines()[0]
    rec = json.loads(good)
    log.write_text("\n".join(json.dumps(dict(rec, similarity=v)) for v in (float("nan"), float("inf"))) + "\n")
    got = json.loads(cli("inspect", log, "--json").stdout)
    assert got["records"] == 0 and got["malformed"]["lines"] == 2


def test_text_output_escapes_control_characters(demo_out, tmp_path):
    hostile = "\x1b[2J\r\x07"
    log = _with_line(demo_out, tmp_path / "d.jsonl", title="T" + hostile, url="http://h/x" + hostile,
                     duplicate_of_title="K" + hostile, reason="near\x1b[31m")
    proc = cli("inspect", log)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\r" not in proc.stdout and "\x07" not in proc.stdout
    assert "http://h/x\\x1b[2J" in proc.stdout and "\\x07" in proc.stdout  # visible, not acted on
    proc = cli("inspect", log, "--json")  # json.dumps escapes them itself
    assert json.loads(proc.stdout)["drops"][-1]["url"] == "http://h/x" + hostile


def test_a_copy_dropped_again_by_a_later_crawl_is_one_duplicate(demo_out, tmp_path):
    recs = [r for r in _records(demo_out / "droplog.jsonl") if r["reason"] != "unchanged"]
    log = tmp_path / "two-crawls.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs + recs), encoding="utf-8")  # the same drops twice
    got = json.loads(cli("inspect", log, "--json").stdout)
    once = Counter(r["duplicate_of"] for r in {(r["duplicate_of"], r["url"]): r for r in recs}.values())
    assert got["matched"] == 2 * len(recs)
    assert all(once[row["url"]] == row["duplicates"] for row in got["top_kept"])
