"""`crawler-dedup report`: the HTML file itself, then opened in a real headless Chromium."""

import json
import re
import shutil
from collections import Counter

import pytest

from .conftest import cli

HOSTILE = {
    "url": "javascript:alert(1)",
    "title": "<script>window.__pwned = 1; alert('title')</script>",
    "duplicate_of": "\"><img src=x onerror=\"window.__pwned = 2; alert('dup')\">",
    "duplicate_of_title": "</script><script>window.__pwned = 3; alert('json')</script>\u2028<!--",
    "excerpt": "<svg onload=alert(4)>&amp;",
}


def _records(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _data(html_text):
    m = re.search(r'<script type="application/json" id="data">(.*?)</script>', html_text, re.S)
    return json.loads(m.group(1))


def hostile_log(demo_out, path):
    """The demo's drop log with crafted lines: markup and script in URLs, titles and texts."""
    recs = _records(demo_out / "droplog.jsonl")[:4]
    bad = dict(recs[0], **HOSTILE, text="<script>window.__pwned = 5</script>\nSecond <b>line</b>.")
    bad2 = dict(recs[1], url="JaVaScRiPt:window.__pwned=6//", duplicate_of="data:text/html,<script>alert(7)</script>",
                title="<img src=x onerror=alert(8)>")
    with open(path, "w", encoding="utf-8") as fh:
        for r in [*recs, bad, bad2]:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path


def test_report_file_is_self_contained_and_complete(demo_out, tmp_path):
    out = tmp_path / "r.html"
    proc = cli("report", demo_out / "droplog.jsonl", "-o", out)
    assert proc.returncode == 0, proc.stderr
    page = out.read_text(encoding="utf-8")
    recs = _records(demo_out / "droplog.jsonl")
    data = _data(page)
    assert len(data["rows"]) == len(recs) and not data["truncated"]
    assert [r[data["columns"].index("url")] for r in data["rows"]] == [r["url"] for r in recs]
    assert len(data["texts"]) == len(recs)  # every demo drop carries its text
    kept = {r["duplicate_of"] for r in recs}
    assert set(data["kept"]) == kept  # the kept texts, from the index beside the log
    for plot in ("plot-similarity", "plot-distance", "plot-time", "plot-domains"):
        assert f'id="{plot}"' in page
    # nothing to fetch: no src/href attribute, no external URL outside the embedded data
    static = page.replace(re.search(r'<script type="application/json" id="data">.*?</script>', page, re.S).group(0), "")
    assert not re.search(r"\s(src|href)\s*=", static)
    assert "default-src 'none'" in static


def test_report_rows_are_bounded_but_plots_use_every_line(demo_out, tmp_path):
    out = tmp_path / "r.html"
    proc = cli("report", demo_out / "droplog.jsonl", "-o", out, "--rows", "5")
    assert proc.returncode == 0, proc.stderr
    recs = _records(demo_out / "droplog.jsonl")
    page = out.read_text(encoding="utf-8")
    data = _data(page)
    assert len(data["rows"]) == 5 and data["truncated"] and data["matched"] == len(recs)
    assert [r[0] for r in data["rows"]] == list(range(len(recs) - 4, len(recs) + 1))
    assert f"latest 5 of {len(recs)} matching drops" in page
    sim = re.search(r'<svg[^>]*id="plot-similarity".*?</svg>', page, re.S).group(0)
    assert sum(int(n) for n in re.findall(r"<title>[^<]*: (\d+)</title>", sim)) == len(recs)
    dist = re.search(r'<svg[^>]*id="plot-distance".*?</svg>', page, re.S).group(0)
    bars = {label: int(n) for label, n in re.findall(r"<title>([^<]*): (\d+)</title>", dist)}
    assert {int(k): v for k, v in bars.items() if v} == dict(Counter(r["distance"] for r in recs))


def test_report_escapes_crawled_content_in_the_file(demo_out, tmp_path):
    log = hostile_log(demo_out, tmp_path / "hostile.jsonl")
    out = tmp_path / "r.html"
    proc = cli("report", log, "-o", out, "--dir", demo_out / "index")
    assert proc.returncode == 0, proc.stderr
    page = out.read_text(encoding="utf-8")
    assert page.count("<script") == 2 and page.count("</script>") == 2  # ours only
    assert "<img" not in page and "<svg onload" not in page and "\u2028" not in page
    data = _data(page)
    row = next(r for r in data["rows"] if r[data["columns"].index("url")] == HOSTILE["url"])
    for key, value in HOSTILE.items():
        assert row[data["columns"].index(key)] == value  # the same strings after the round trip


def test_report_usage_errors(tmp_path, demo_out):
    proc = cli("report", tmp_path / "missing.jsonl", "-o", tmp_path / "r.html")
    assert proc.returncode == 2 and "no drop log" in proc.stderr
    proc = cli("report", demo_out / "droplog.jsonl")
    assert proc.returncode == 2 and "-o" in proc.stderr
    proc = cli("report", demo_out / "droplog.jsonl", "-o", tmp_path / "r.html", "--dir", tmp_path / "nothing")
    assert proc.returncode == 2 and "no LMDB index" in proc.stderr
    proc = cli("report", demo_out / "droplog.jsonl", "-o", tmp_path / "no-such-dir" / "r.html")
    assert proc.returncode == 1 and "cannot write" in proc.stderr


# -- in a real browser -------------------------------------------------------------------------

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e .[dev])")
    path = _chromium()
    if path is None:
        pytest.skip("no chromium on PATH (.ci/run installs Debian's chromium)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield b
        b.close()


def _open(browser, path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    events = {"dialogs": [], "errors": [], "requests": []}
    page.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: events["errors"].append(str(e)))
    page.on("request", lambda r: events["requests"].append(r.url))
    page.goto(f"file://{path}")
    page.wait_for_function("window.reportReady === true", timeout=10_000)
    return page, events


def _column(page, index):
    return page.eval_on_selector_all(f"#rows tr td:nth-child({index})", "tds => tds.map(td => td.textContent)")


def test_browser_renders_plots_and_filters_and_sorts_the_table(browser, demo_out, tmp_path):
    out = tmp_path / "r.html"
    assert cli("report", demo_out / "droplog.jsonl", "-o", out).returncode == 0
    recs = _records(demo_out / "droplog.jsonl")
    page, events = _open(browser, out)
    plots = page.eval_on_selector_all("svg.plot", "ss => ss.map(s => [s.id, s.getBoundingClientRect().width, "
                                      "Array.from(s.querySelectorAll('rect.bar')).filter(r => r.getBBox().height > 0 "
                                      "|| r.getBBox().width > 1).length])")
    assert {p[0] for p in plots} == {"plot-similarity", "plot-distance", "plot-time", "plot-domains"}
    assert all(width > 100 and bars > 0 for _, width, bars in plots)
    assert page.locator("#rows tr").count() == len(recs)

    page.fill("#filter", "print")
    want = sum("print" in (r["url"] + r["duplicate_of"] + r.get("title", "") + r.get("duplicate_of_title", "")).lower()
               for r in recs)
    assert 0 < page.locator("#rows tr").count() == want < len(recs)
    page.fill("#filter", "")
    page.select_option("#reason", "near")
    assert page.locator("#rows tr").count() == sum(r["reason"] == "near" for r in recs)
    page.select_option("#reason", "")

    page.click("th[data-col=similarity]")
    sims = [float(x) for x in _column(page, 6)]
    assert sims == sorted(sims) and len(sims) == len(recs)
    page.click("th[data-col=similarity]")
    sims = [float(x) for x in _column(page, 6)]
    assert sims == sorted(sims, reverse=True)
    page.click("th[data-col=url]")
    urls = _column(page, 3)
    assert urls == sorted(urls, key=lambda u: u) or urls == page.evaluate(
        "us => us.slice().sort((a, b) => a.localeCompare(b))", urls)

    near = next(r for r in recs if r["reason"] == "near" and "/portal/" in r["url"])
    page.fill("#filter", near["url"].split("/", 3)[3])  # the path: this row only
    assert page.locator("#rows tr").count() == 1
    page.locator("#rows tr").first.click()
    assert page.locator("#detail table.diff tr").count() > 1
    assert page.locator("#detail tr.ins, #detail tr.chg, #detail tr.del").count() > 0
    page.screenshot(path=str(tmp_path / "shot.png"))
    assert events["errors"] == [] and events["dialogs"] == []
    assert all(u.startswith("file://") for u in events["requests"])  # offline: nothing fetched


@pytest.mark.parametrize("csp", [True, False], ids=["with-csp", "escaping-alone"])
def test_browser_runs_nothing_from_a_hostile_drop_log(browser, demo_out, tmp_path, csp):
    out = tmp_path / "r.html"
    log = hostile_log(demo_out, tmp_path / "hostile.jsonl")
    assert cli("report", log, "-o", out, "--dir", demo_out / "index").returncode == 0
    if not csp:  # the escaping must hold on its own, not only behind the policy
        text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", out.read_text(encoding="utf-8"))
        out.write_text(text, encoding="utf-8")
    page, events = _open(browser, out)
    rows = page.locator("#rows tr")
    assert rows.count() == 6
    body = page.inner_text("#rows")
    assert HOSTILE["title"] in body and "javascript:alert(1)" in body and "<img src=x onerror=alert(8)>" in body
    hrefs = page.eval_on_selector_all("a", "as => as.map(a => a.getAttribute('href'))")
    assert hrefs and all(re.match(r"https?://", h) for h in hrefs)
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    page.fill("#filter", "script")
    page.locator("#rows tr").first.click()  # the diff view of a hostile row
    detail = page.inner_text("#detail")
    assert "<script>window.__pwned = 5</script>" in detail or "not in this report" in detail
    page.fill("#filter", "")
    for i in range(rows.count()):
        rows.nth(i).click()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert events["dialogs"] == [] and events["errors"] == []


def test_time_bins_fit_the_span():
    from datetime import datetime, timedelta, timezone

    from crawler_dedup.tools.inspect import Summary
    from crawler_dedup.tools.report import time_series

    for span, count, step in ((timedelta(seconds=2), 40, "0.1 s"), (timedelta(days=3), 5000, "1 h")):
        s = Summary(limit=0)
        t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
        for i in range(count):
            when = (t0 + span * i / count).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            s.add({"url": "https://x/", "time": when, "similarity": 1.0, "distance": 0})
        _, counts, name = time_series(s)
        assert name == step and sum(counts) == count and len(counts) <= 120


def test_report_never_overwrites_the_drop_log(tmp_path, demo_out):
    log = tmp_path / "d.jsonl"
    shutil.copy(demo_out / "droplog.jsonl", log)
    before = log.read_bytes()
    (tmp_path / "link.jsonl").symlink_to(log)
    for out in (log, tmp_path / "link.jsonl"):
        proc = cli("report", log, "-o", out)
        assert proc.returncode == 2 and "is the drop log itself" in proc.stderr, proc.stderr
        assert log.read_bytes() == before


def test_report_counts_out_of_range_numbers_as_malformed(demo_out, tmp_path):
    recs = _records(demo_out / "droplog.jsonl")[:3]
    log = tmp_path / "d.jsonl"
    with open(log, "w", encoding="utf-8") as fh:
        for r in [*recs, dict(recs[0], similarity=1e308), dict(recs[0], distance=-1)]:
            fh.write(json.dumps(r) + "\n")
    proc = cli("report", log, "-o", tmp_path / "r.html")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-800:]
    assert "3 of 3 drops" in proc.stdout and "2 malformed lines skipped" in proc.stdout
