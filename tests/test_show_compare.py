"""`crawler-dedup show` (one drop against the kept page in a real LMDB index) and `compare`."""

import hashlib
import json
import os
import subprocess
import sys

from crawler_dedup import Deduplicator
from crawler_dedup.droplog import DropLog, make_record

from .conftest import cli


def _records(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _near(demo_out, part):
    return next(r for r in _records(demo_out / "droplog.jsonl") if r["reason"] == "near" and part in r["url"])


def _digest(folder):
    # data.mdb only: a reader registers itself in lock.mdb, as LMDB readers do
    return hashlib.sha256((folder / "data.mdb").read_bytes()).hexdigest(), sorted(os.listdir(folder))


def test_show_explains_a_near_drop_with_a_diff(demo_out):
    rec = _near(demo_out, "/portal/")  # syndicated: the same article in another site's template
    before = _digest(demo_out / "index")
    proc = cli("show", rec["url"], "--log", demo_out / "droplog.jsonl", "--width", "100")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"dropped       {rec['url']}" in out and f"kept          {rec['duplicate_of']}" in out
    x = int(rec["fingerprint"], 16) ^ int(rec["duplicate_of_fingerprint"], 16)
    assert f"xor           {x:016x}  ({rec['distance']} bits differ" in out
    assert (f"why           near: the score of the pair, {rec['score']:.3f}, is at or over its threshold "
            f"{rec['score_threshold']:.3f} ({rec['measure']} {rec['similarity']:.2f}; most weight: ") in out
    table = out.split("the score, each measurement's part in it", 1)[1].split("\n\n", 1)[0].splitlines()[2:]
    top = sorted(rec["contributions"].items(), key=lambda kv: -abs(kv[1]))[:8]
    assert [row.split()[0] for row in table[:8]] == [name for name, _ in top]  # the 8 that weighed most, in order
    assert all(float(row.split()[-1]) == round(value, 3) for row, (_, value) in zip(table, top))
    total = float(table[-1].split()[-1])  # base + every contribution: the log-odds of the logged score
    assert abs(1 / (1 + 2.718281828 ** -total) - rec["score"]) < 1e-3
    diff = out[out.index("--- kept"):].splitlines()
    assert diff[0] == f"--- kept    {rec['duplicate_of']}" and diff[1] == f"+++ dropped {rec['url']}"
    added = [line for line in diff[2:] if line.startswith("+ ")]
    assert added and all(len(line) <= 100 for line in diff[2:])
    assert _digest(demo_out / "index") == before  # read-only: the index is untouched


def test_show_side_by_side_and_default_locations(demo_out):
    rec = _near(demo_out, "/print/")
    # --dir only: the drop log is found beside it, where `crawler-dedup demo` writes it
    proc = cli("show", rec["url"], "--dir", demo_out / "index", "--side-by-side", "--width", "90")
    assert proc.returncode == 0, proc.stderr
    body = proc.stdout[proc.stdout.index("kept page"):].splitlines()
    assert body[0].startswith("kept page") and body[0].rstrip().endswith("dropped page")
    assert all(len(line) <= 90 for line in body)
    col = (90 - 3) // 2
    marks = {line[col + 1] for line in body[2:] if len(line) > col + 1}
    assert marks & {"|", "<", ">"}  # the rows that differ are marked in the middle column


def test_show_without_stored_text_says_why(tmp_path, articles):
    gold = articles[2][1]
    with Deduplicator(dir=str(tmp_path / "idx"), store_text=False) as d:
        d.check("https://s/a", text=gold)
        v = d.check("https://s/b", text=gold + "\nOne more line at the end of it all.")
    assert v.action == "drop"
    with DropLog(str(tmp_path / "idx" / "droplog.jsonl")) as log:
        log.write(make_record(v, "response", "t"))
    proc = cli("show", "https://s/b", "--dir", tmp_path / "idx")  # log: <DIR>/droplog.jsonl, as a crawl writes it
    assert proc.returncode == 0, proc.stderr
    assert "no diff:" in proc.stdout and "DEDUP_STORE_TEXT" in proc.stdout
    assert "excerpt of the dropped page:" in proc.stdout


def test_show_errors(demo_out, tmp_path):
    proc = cli("show", "http://nowhere/x", "--log", demo_out / "droplog.jsonl")
    assert proc.returncode == 1 and "is not in the drop log" in proc.stderr
    missing = tmp_path / "no-index"
    proc = cli("show", "http://nowhere/x", "--dir", missing)
    assert proc.returncode == 2 and "no drop log" in proc.stderr and "Traceback" not in proc.stderr
    assert not missing.exists()  # nothing created
    rec = _near(demo_out, "/print/")
    proc = cli("show", rec["url"], "--log", demo_out / "droplog.jsonl", "--dir", missing)
    assert proc.returncode == 0 and "no LMDB index in" in proc.stdout and not missing.exists()
    proc = cli("show", rec["url"], "--log", demo_out / "droplog.jsonl", "-s", "DEDUP_NOPE=1")
    assert proc.returncode == 2
    proc = cli("show", "--help")
    assert proc.returncode == 0 and "--side-by-side" in proc.stdout


def test_compare_two_files_scores_every_verifier_and_gives_the_verdict(demo_out):
    rec = _near(demo_out, "/portal/")
    kept = demo_out / "site" / rec["duplicate_of"].split("/", 3)[3]
    dropped = demo_out / "site" / rec["url"].split("/", 3)[3]
    proc = cli("compare", kept, dropped)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for word in ("resemblance", "containment", "qgram", "swlr"):
        assert word in out.split("scores of B against A")[1]
    assert f"distance {rec['distance']} bits" in out
    assert (f"B dropped: near duplicate of A, score {rec['score']:.3f} >= {rec['score_threshold']:.3f} "
            f"(resemblance {rec['similarity']}") in out
    assert "   (base: a pair at the training means)" in out and "   = log-odds (score)" in out
    # another model decides as it says: one whose threshold this pair's score is under keeps B
    from dataclasses import replace

    from crawler_dedup.core.decide.model import load
    from crawler_dedup.tools import fit

    strict = demo_out / "strict-model.json"
    fit.write(replace(load(), threshold=min(0.999999, rec["score"] + (1 - rec["score"]) / 2)), str(strict))
    proc = cli("compare", kept, dropped, "-s", f"DEDUP_MODEL={strict}")
    assert proc.returncode == 0, proc.stderr
    assert "B kept: the pair passed the lookup thresholds, but its score" in proc.stdout


def test_compare_over_http_and_text_files(demo_out, serve, tmp_path, articles):
    base = serve(str(demo_out / "site")).base_url
    rec = _near(demo_out, "/print/")
    a, b = (base + "/" + u.split("/", 3)[3] for u in (rec["duplicate_of"], rec["url"]))
    proc = cli("compare", a, b)
    assert proc.returncode == 0, proc.stderr
    assert "B dropped: near duplicate of A" in proc.stdout
    (tmp_path / "a.txt").write_text(articles[3][1], encoding="utf-8")
    (tmp_path / "b.txt").write_text(articles[4][1], encoding="utf-8")
    proc = cli("compare", tmp_path / "a.txt", tmp_path / "b.txt")
    assert proc.returncode == 0 and "B kept: not a duplicate of A" in proc.stdout
    proc = cli("compare", tmp_path / "a.txt", base + "/no-such-page.html")
    assert proc.returncode == 1 and "cannot fetch" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("compare", tmp_path / "a.txt", tmp_path / "missing.html")
    assert proc.returncode == 2 and "neither an http(s) URL nor a file" in proc.stderr
    proc = cli("compare", tmp_path / "a.txt")
    assert proc.returncode == 2


def _log_with(demo_out, path, rec):
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    return path


def test_show_exact_drop_says_identical_and_reads_the_threshold_from_the_line(demo_out):
    rec = next(r for r in _records(demo_out / "droplog.jsonl") if r["reason"] == "exact"
               and r["fingerprint"] == r["duplicate_of_fingerprint"])
    proc = cli("show", rec["url"], "--log", demo_out / "droplog.jsonl")
    assert proc.returncode == 0, proc.stderr
    assert "identical fingerprints" in proc.stdout and "bits differ" not in proc.stdout
    near = _near(demo_out, "/print/")
    # the threshold the crawl applied is the line's (a model of its own, DEDUP_SCORE_THRESHOLD), not today's
    log = demo_out / "own-threshold.jsonl"
    log.write_text(json.dumps(dict(near, score_threshold=0.5)) + "\n", encoding="utf-8")
    proc = cli("show", near["url"], "--log", log)
    assert f"the score of the pair, {near['score']:.3f}, is at or over its threshold 0.500" in proc.stdout
    # a line written before the score: what it holds, said so
    old = {k: v for k, v in near.items() if k not in ("score", "score_threshold", "features", "contributions", "base")}
    log.write_text(json.dumps(old) + "\n", encoding="utf-8")
    proc = cli("show", near["url"], "--log", log)
    assert proc.returncode == 0 and "(a drop log written before the score" in proc.stdout
    assert "each measurement's part" not in proc.stdout


def test_show_a_line_with_a_numeric_fingerprint_is_malformed(demo_out, tmp_path):
    rec = _near(demo_out, "/print/")
    for key in ("duplicate_of_fingerprint", "fingerprint"):
        log = _log_with(demo_out, tmp_path / f"{key}.jsonl", dict(rec, **{key: 1234567890}))
        proc = cli("show", rec["url"], "--log", log, "--dir", demo_out / "index")
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-800:]
        assert "is malformed" in proc.stderr and f"{key} 1234567890 is not 16 hex digits" in proc.stderr


def test_show_dir_without_an_index_suggests_its_index_folder(demo_out):
    rec = _near(demo_out, "/print/")
    proc = cli("show", rec["url"], "--dir", demo_out)  # the demo's out folder, not its index
    assert proc.returncode == 0, proc.stderr
    assert f"give --dir {demo_out / 'index'}" in proc.stdout


def test_cli_settings_suggest_the_setting_meant(demo_out):
    rec = _near(demo_out, "/print/")
    for args in (("show", rec["url"], "--log", demo_out / "droplog.jsonl"), ("compare", "a", "b")):
        proc = cli(*args, "-s", "DEDUP_TRESHOLD=0.6")
        assert proc.returncode == 2 and "did you mean DEDUP_THRESHOLD?" in proc.stderr, proc.stderr


def test_show_escapes_control_characters(demo_out, tmp_path):
    rec = _near(demo_out, "/print/")
    hostile = "\x1b[2J\r\x07"
    log = _log_with(demo_out, tmp_path / "d.jsonl", dict(rec, title="T" + hostile, text=rec["text"] + hostile,
                                                          excerpt="E" + hostile))
    proc = cli("show", rec["url"], "--log", log, "--dir", demo_out / "index")
    assert proc.returncode == 0, proc.stderr
    assert not {"\x1b", "\r", "\x07"} & set(proc.stdout)
    assert "title: T\\x1b[2J\\x0d\\x07" in proc.stdout


def test_show_and_report_read_the_projects_settings(tmp_path, articles):
    """Run in a Scrapy project, `show URL` and `report -o F` need no --dir nor --log: the project's
    settings.py says where its crawls keep the index and the drop log (relative paths: in the
    project's data folder, .scrapy/, as a crawl puts them)."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "scrapy.cfg").write_text("[settings]\ndefault = projsettings\n")
    (project / "projsettings.py").write_text('DEDUP_DIR = "crawl-index"\nDEDUP_DROPLOG = "logs/drops.jsonl"\n')
    data = project / ".scrapy"
    gold = articles[0][1]
    with Deduplicator(dir=str(data / "crawl-index")) as d:
        d.check("https://a.test/story", text=gold)
        dropped = d.check("https://b.test/copy", text=gold.replace(" the ", " a ", 2))
    assert dropped.action == "drop"
    (data / "logs").mkdir()
    with DropLog(str(data / "logs" / "drops.jsonl")) as log:
        log.write(make_record(dropped, "response", "s"))
    got = subprocess.run([sys.executable, "-m", "crawler_dedup", "show", "https://b.test/copy"], cwd=project,
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert "https://a.test/story" in got.stdout and "--- kept" in got.stdout  # the kept text came from the index
    got = subprocess.run([sys.executable, "-m", "crawler_dedup", "report", "-o", "r.html"], cwd=project,
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 0, got.stderr
    assert "1 of 1 drop in the table" in got.stdout and (project / "r.html").exists()


def test_compare_scores_a_pair_kept_under_the_lookup_thresholds(tmp_path, articles):
    """A pair under DEDUP_THRESHOLD and DEDUP_CONTAINMENT (no `kept` line in a crawl) still shows
    its score in compare, weighed as the crawl weighed it."""
    first, other = articles[2][1].split(), articles[5][1].split()

    def page(title, text):
        return (f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>"
                + "".join(f"<p>{p}</p>" for p in text.split("\n")) + "</article></body></html>")

    a, b = tmp_path / "a.html", tmp_path / "b.html"
    a.write_text(page("Storm closes schools", " ".join(first[:300])), encoding="utf-8")
    b.write_text(page("Budget vote delayed", " ".join(first[:110]) + "\n" + " ".join(other[:200])), encoding="utf-8")
    proc = cli("compare", str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    assert "under the lookup thresholds too" in proc.stdout and "= log-odds (score)" in proc.stdout, proc.stdout
    got = json.loads(cli("compare", str(a), str(b), "--json").stdout)["verdict"]
    assert got["b"] == "kept" and got["under_lookup_thresholds"] and got["score"] < got["score_threshold"]



def test_show_lists_and_picks_each_decision_of_a_recrawled_url(tmp_path, articles, capsys):
    """A URL decided on each crawl has a line a crawl: `show URL` shows the latest, `--all` lists
    them oldest first (time, action, reason, the page matched, spider) and `--line N` shows one."""
    import pytest

    from crawler_dedup.cli import main

    gold = articles[2][1]
    idx = tmp_path / "idx"
    with Deduplicator(dir=str(idx)) as d:  # the first crawl: b is a near copy of a
        d.check("https://s/a", text=gold)
        near = d.check("https://s/b", text=gold + "\nOne more line at the end of it all, said twice.")
    with Deduplicator(dir=str(idx)) as d:  # the recrawl: b is now a's very words
        exact = d.check("https://s/b", text=gold)
    assert (near.action, near.reason, exact.action, exact.reason) == ("drop", "near", "drop", "exact")
    with DropLog(str(idx / "droplog.jsonl")) as log:
        log.write(make_record(near, "response", "first"))
        log.write(make_record(exact, "response", "second"))
    times = [r["time"] for r in _records(idx / "droplog.jsonl")]

    def show(*args):  # (in this process: a dozen subprocesses would take as many seconds)
        code = main(["show", "https://s/b", "--dir", str(idx), *args])
        out, err = capsys.readouterr()
        return code, out, err

    code, out, err = show()
    assert code == 0, err
    assert "by spider second" in out and "why           exact:" in out
    assert "line 2 of 2 about this URL in the drop log (the latest;" in out

    code, out, err = show("--all")
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["1"], ["2"])]
    assert rows == [["1", times[0], "dropped", "near", "https://s/a", "first"],
                    ["2", times[1], "dropped", "exact", "https://s/a", "second"]], out
    assert "2 lines in" in out and "oldest first" in out
    assert [r["reason"] for r in json.loads(show("--all", "--json")[1])["lines"]] == ["near", "exact"]

    for n in ("1", "-2"):
        code, out, err = show("--line", n)
        assert code == 0, err
        assert "by spider first" in out and "why           near: the score of the pair" in out
        assert "line 1 of 2 about this URL in the drop log (not the latest;" in out
        assert "--- kept" in out  # the kept page is still a's: the diff against it
    assert json.loads(show("--line", "1", "--json")[1])["drop"]["reason"] == "near"

    for n in ("3", "0", "-3"):
        code, _, err = show("--line", n)
        assert code == 1 and "has 2 lines in the drop log" in err and "--line takes 1 to 2" in err
    with pytest.raises(SystemExit):
        show("--all", "--line", "1")
    assert "not allowed with" in capsys.readouterr().err
    assert main(["show", "https://s/a", "--dir", str(idx), "--all"]) == 1  # (a was never dropped)
    assert "is not in the drop log" in capsys.readouterr().err
