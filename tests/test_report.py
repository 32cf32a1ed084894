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


ROWS = "#rows > tr.drop"  # the drops; an open diff is a tr.detail between them


def _column(page, index):
    return page.eval_on_selector_all(f"{ROWS} > td:nth-child({index})", "tds => tds.map(td => td.textContent)")


def _cell(row, index=5):
    """A row's reason cell: a click there opens the diff (a click on a URL opens the link)."""
    return row.locator(f"td:nth-child({index})")


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
    assert page.locator(ROWS).count() == len(recs)

    page.fill("#filter", "print")
    want = sum("print" in (r["url"] + r["duplicate_of"] + r.get("title", "") + r.get("duplicate_of_title", "")).lower()
               for r in recs)
    assert 0 < page.locator(ROWS).count() == want < len(recs)
    page.fill("#filter", "")
    page.select_option("#reason", "near")
    assert page.locator(ROWS).count() == sum(r["reason"] == "near" for r in recs)
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
    assert page.locator(ROWS).count() == 1
    _cell(page.locator(ROWS).first).click()
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
    rows = page.locator(ROWS)
    assert rows.count() == 6
    body = page.inner_text("#rows")
    assert HOSTILE["title"] in body and "javascript:alert(1)" in body and "<img src=x onerror=alert(8)>" in body
    hrefs = page.eval_on_selector_all("a", "as => as.map(a => a.getAttribute('href'))")
    assert hrefs and all(re.match(r"https?://", h) for h in hrefs)
    assert page.locator("img").count() == 0 and page.locator("script").count() == 2
    page.fill("#filter", "script")
    _cell(rows.first).click()  # the diff view of a hostile row
    detail = page.inner_text("#detail")
    assert "<script>window.__pwned = 5</script>" in detail or "not in this report" in detail
    page.fill("#filter", "")
    for i in range(rows.count()):
        _cell(rows.nth(i)).click()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert events["dialogs"] == [] and events["errors"] == []


LONG_PATH = ("/news/2026/" + "-".join(["an-extremely-long-slug-that-never-ends"] * 6) + ".html?"
             + "&".join(f"param{i}=value{i}" for i in range(40)))


def long_log(demo_out, path):
    """The demo's drops four times over (a table many screens long), one with a very long URL."""
    recs = _records(demo_out / "droplog.jsonl")
    long_url = re.match(r"https?://[^/]+", recs[0]["url"]).group(0) + LONG_PATH
    lines = [dict(r, url=r["url"] + (f"#copy{k}" if k else "")) for k in range(4) for r in recs]
    lines.insert(len(recs), dict(recs[3], url=long_url))
    with open(path, "w", encoding="utf-8") as fh:
        for r in lines:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    return path, long_url


def _rect(locator):
    return locator.evaluate("e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, "
                            "height: r.height, vh: innerHeight, y: scrollY}; }")


def _detail_under(row):
    """The open diff box sits in the row right after `row`, and only there."""
    return row.evaluate("tr => { const d = document.getElementById('detail'), next = tr.nextElementSibling; return "
                        "document.querySelectorAll('#detail').length === 1 && !!next && next.classList.contains('detail')"
                        " && next.contains(d) && tr.getAttribute('aria-expanded') === 'true'; }")


def _assert_in_view(page, row, header):
    box, tr = _rect(page.locator("#detail")), _rect(row)
    assert box["height"] > 150 and 0 <= box["top"] and box["bottom"] <= box["vh"], (box, tr)
    assert header - 1 <= tr["top"] and tr["bottom"] <= box["top"] + 1, (box, tr)  # the row stays in sight, above


def test_browser_opens_the_diff_under_the_clicked_row_in_view(browser, demo_out, tmp_path):
    log, _ = long_log(demo_out, tmp_path / "long.jsonl")
    out = tmp_path / "r.html"
    assert cli("report", log, "-o", out, "--dir", demo_out / "index").returncode == 0
    page, events = _open(browser, out)
    rows = page.locator(ROWS)
    assert rows.count() == len(_records(log)) > 100
    assert page.evaluate("document.documentElement.scrollHeight") > 8 * page.evaluate("innerHeight")
    header = page.evaluate("document.querySelector('#head th').getBoundingClientRect().height")  # sticky, at the top
    urls = _column(page, 3)
    wire = [i for i, u in enumerate(urls) if "/wire/" in u]  # the edited copies: diffs with changed words
    assert len(wire) >= 8

    # a row far down, scrolled to the bottom edge of the window: its diff would open below the fold
    low = rows.nth(wire[-1])
    low.evaluate("tr => tr.scrollIntoView({block: 'end'})")
    assert _rect(low)["y"] > 5000 and _rect(low)["bottom"] > _rect(low)["vh"] - 2
    _cell(low).click()
    assert _detail_under(low)
    assert page.locator("#detail tr.chg ins").count() > 0
    _assert_in_view(page, low, header)

    # a row just under the sticky header: its diff fits below it, so nothing scrolls at all
    mid = rows.nth(wire[len(wire) // 2])
    mid.evaluate("tr => window.scrollBy(0, tr.getBoundingClientRect().top - "
                 "document.querySelector('#head th').getBoundingClientRect().height)")
    y = page.evaluate("scrollY")
    _cell(mid).click()
    assert _detail_under(mid) and low.get_attribute("aria-expanded") == "false"
    assert page.evaluate("scrollY") == y
    _assert_in_view(page, mid, header)

    # the next edited row, below the open diff: that diff closes, this one opens in sight
    below = rows.nth(wire[len(wire) // 2 + 1])
    _cell(below).click()
    assert _detail_under(below) and mid.get_attribute("aria-expanded") == "false"
    _assert_in_view(page, below, header)

    # a second click closes it; Enter on a focused row opens it, Escape closes it and the focus stays
    _cell(below).click()
    assert page.locator("#detail").count() == 0 and below.get_attribute("aria-expanded") == "false"
    below.focus()
    page.keyboard.press("Enter")
    assert _detail_under(below)
    _assert_in_view(page, below, header)
    page.keyboard.press("Escape")
    assert page.locator("#detail").count() == 0
    assert below.evaluate("tr => document.activeElement === tr")

    # sorting keeps an open diff under its own row
    _cell(mid).click()
    n = mid.locator("td:nth-child(1)").inner_text()
    page.click("th[data-col=similarity]")
    assert page.evaluate("document.getElementById('detail').closest('tr').previousElementSibling"
                         ".firstChild.textContent") == n
    assert events["errors"] == [] and events["dialogs"] == []


def _pairs(page):
    """The open diff's changed sentence pairs: kept text, dropped text, the <del> runs, the <ins>
    runs, and each side's text outside them."""
    return page.eval_on_selector_all("#detail tr.chg", """trs => trs.map(tr => {
        const [k, , d] = tr.children;
        const plain = td => Array.from(td.childNodes).filter(n => n.nodeType === 3).map(n => n.data).join('');
        const runs = (td, tag) => Array.from(td.querySelectorAll(tag)).map(e => e.textContent);
        if (k.querySelector('ins') || d.querySelector('del')) throw new Error('a mark on the wrong side');
        return [k.textContent, d.textContent, runs(k, 'del'), runs(d, 'ins'), plain(k), plain(d)];
    })""")


def test_browser_word_highlights_mark_the_edited_words(browser, demo_out, tmp_path):
    """The demo's wire copies have a few words upper-cased or replaced by "(corrected)": in a sentence
    pair with one such edit, exactly that word is marked on each side."""
    out = tmp_path / "r.html"
    assert cli("report", demo_out / "droplog.jsonl", "-o", out).returncode == 0
    wire = [r for r in _records(demo_out / "droplog.jsonl") if "/wire/" in r["url"]]
    assert wire
    page, events = _open(browser, out)
    known = marked = 0
    for rec in wire:
        page.fill("#filter", rec["url"])
        assert page.locator(ROWS).count() == 1
        _cell(page.locator(ROWS).first).click()
        for kept, dropped, dels, inss, plain_k, plain_d in _pairs(page):
            marked += bool(dels or inss)
            assert plain_k.split() == plain_d.split()  # outside the marks, both sides read the same
            edits = [(o, n) for o, n in zip(kept.split(" "), dropped.split(" ")) if o != n]
            word = re.fullmatch(r"([^\W\d_]+)([^\w\s]?)", edits[0][0]) if len(edits) == 1 else None
            if len(kept.split(" ")) != len(dropped.split(" ")) or not word:
                continue
            o, n = edits[0]
            if n == "(corrected)":
                assert (dels, inss) == ([o], [n]), (kept, dropped)
            elif n == o.upper():
                assert (dels, inss) == ([word.group(1)], [word.group(1).upper()]), (kept, dropped)
            else:
                continue
            known += 1
    assert known >= 5 and marked >= known
    assert events["errors"] == []


def test_browser_word_diff_of_crafted_sentence_pairs(browser, demo_out, tmp_path):
    """Texts put into the page's data: a pair with words changed around common ones, two unrelated
    sentences (marked whole), a 1200-word sentence changed at both ends (past the LCS budget: the
    middle marked as one run) and markup, which stays text."""
    from crawler_dedup.tools.report import script_json

    out = tmp_path / "r.html"
    assert cli("report", demo_out / "droplog.jsonl", "-o", out).returncode == 0
    html_text = out.read_text(encoding="utf-8")
    data = _data(html_text)
    cols = data["columns"]
    row = next(r for r in data["rows"] if r[cols.index("reason")] == "near")
    words = [f"w{i}" for i in range(1200)]
    edited = words[:100] + ["X"] + words[101:1100] + ["Y"] + words[1101:]
    pairs = [("The quick brown fox jumps over the lazy dog near the river bank.",
              "The quick red fox leaps over the lazy dog near the old river bank."),
             ("Completely different words are here today.", "Nothing alike in this sentence at all."),
             (" ".join(words), " ".join(edited)),
             ("Plain <b>old</b> text.", "Plain <img src=x onerror=\"window.__pwned=9\"> text.")]
    kept, dropped = ["Intro stays."], ["Intro stays."]
    for i, (a, b) in enumerate(pairs):
        kept += [a, f"Anchor {i} stays."]
        dropped += [b, f"Anchor {i} stays."]
    data["kept"][row[cols.index("duplicate_of")]] = "\n".join(kept)
    data["texts"][str(row[0])] = "\n".join(dropped)
    block = re.search(r'(<script type="application/json" id="data">).*?(</script>)', html_text, re.S)
    out.write_text(html_text[:block.start()] + block.group(1) + script_json(data) + block.group(2)
                   + html_text[block.end():], encoding="utf-8")
    page, events = _open(browser, out)
    page.fill("#filter", row[cols.index("url")])
    _cell(page.locator(ROWS).first).click()
    got = _pairs(page)
    assert [(k, d) for k, d, *_ in got] == pairs
    assert [(dels, inss) for _, _, dels, inss, _, _ in got[:3]] == [
        (["brown", "jumps"], ["red", "leaps", "old"]),
        ([pairs[1][0]], [pairs[1][1]]),
        ([" ".join(words[100:1101])], [" ".join(edited[100:1101])]),
    ]
    assert got[3][3] and all(r in pairs[3][1] for r in got[3][3])
    assert page.locator("#detail img, #detail .diff b").count() == 0 and page.evaluate("typeof window.__pwned") == "undefined"
    assert events["errors"] == [] and events["dialogs"] == []


def test_browser_url_cells_break_only_between_url_parts(browser, demo_out, tmp_path):
    log, long_url = long_log(demo_out, tmp_path / "long.jsonl")
    out = tmp_path / "r.html"
    assert cli("report", log, "-o", out).returncode == 0
    page, events = _open(browser, out)
    # where each URL cell's text goes onto a new line: the index of the first character there
    cells = page.eval_on_selector_all(f"{ROWS} > td:nth-child(3), {ROWS} > td:nth-child(4)", """tds => tds.map(td => {
        const walk = document.createTreeWalker(td, NodeFilter.SHOW_TEXT), range = document.createRange(), tops = [];
        for (let node; (node = walk.nextNode());) for (let i = 0; i < node.length; i++) {
            range.setStart(node, i); range.setEnd(node, i + 1); tops.push(range.getBoundingClientRect().top);
        }
        const breaks = [];
        for (let i = 1; i < tops.length; i++) if (tops[i] - tops[i - 1] > 8) breaks.push(i);
        return [td.textContent, breaks];
    })""")
    urls = {r["url"] for r in _records(log)} | {r["duplicate_of"] for r in _records(log)}
    assert len(cells) == 2 * len(_records(log)) and {text for text, _ in cells} == urls  # the whole URL is the text
    wrapped = 0
    for text, breaks in cells:
        host_end = re.match(r"https?://[^/]*", text).end()
        for i in breaks:
            assert i > host_end and (text[i - 1] == "/" or text[i] in "?&;#"), (text[:i], text[i:])
        wrapped += bool(breaks)
    assert wrapped > len(cells) // 2  # the columns are narrower than the URLs: the check has breaks to look at

    cell = page.locator(f"{ROWS} > td:nth-child(3)", has_text=LONG_PATH[:40])
    assert cell.count() == 1
    assert cell.locator("a").get_attribute("title") == long_url == cell.locator("a").get_attribute("href")
    box = cell.evaluate("td => { const r = td.getBoundingClientRect(); return [r.width, r.height]; }")
    line = page.evaluate("parseFloat(getComputedStyle(document.body).lineHeight)")
    assert box[0] < 420 and box[1] < 7 * line + 10, box  # a 900-character URL: at most six lines, not a wall
    assert events["errors"] == []


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
