"""Recrawls as a user runs them: real `scrapy crawl` runs over one DEDUP_DIR, pages served on
127.0.0.1. The Deduplicator-level rules are in test_revisit.py."""

import html as htmllib
import json
import os
import subprocess
import sys

import pytest

from crawler_dedup.droplog import REQUIRED_KEYS, read_droplog

from .conftest import ROOT, SHARED_DATA, dedup_stats, scrapy_crawl, write_urls


def items(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def crawl(tmp_path, urls, out, *extra):
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "ROBOTSTXT_OBEY=0",
                        "-s", "CONCURRENT_REQUESTS=1", "-o", str(out), *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def test_reset_starts_from_an_empty_index_and_keeps_the_old_one(tmp_path, articles, serve):
    root = tmp_path / "site"
    root.mkdir()
    for i in range(3):
        (root / f"a{i}.html").write_bytes(articles[i][0])
    base = serve(str(root)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/a{i}.html" for i in range(3)])
    crawl(tmp_path, urls, tmp_path / "o1.jsonl")
    proc = crawl(tmp_path, urls, tmp_path / "o2.jsonl", "-a", "dedup_reset=1")
    assert len(items(tmp_path / "o2.jsonl")) == 3  # every page kept again: the index started empty
    moved = [p for p in os.listdir(tmp_path) if p.startswith("idx.reset-")]
    assert len(moved) == 1 and os.path.isfile(tmp_path / moved[0] / "data.mdb")
    assert f"moved to {tmp_path / moved[0]}" in proc.stderr
    assert dedup_stats(proc.stderr).get("dedup/revisits", 0) == 0
    proc = crawl(tmp_path, urls, tmp_path / "o3.jsonl", "-s", "DEDUP_RESET=1")  # the setting does the same
    assert len(items(tmp_path / "o3.jsonl")) == 3
    assert len([p for p in os.listdir(tmp_path) if p.startswith("idx.reset-")]) == 2
    proc = crawl(tmp_path, urls, tmp_path / "o4.jsonl")  # and without it, the new index is used
    assert items(tmp_path / "o4.jsonl") == [] and dedup_stats(proc.stderr)["dedup/unchanged"] == 3
    proc = scrapy_crawl("-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-a", "dedup_reset=maybe")
    assert proc.returncode != 0 and "-a dedup_reset='maybe' is not allowed" in proc.stderr
    assert len([p for p in os.listdir(tmp_path) if p.startswith("idx.reset-")]) == 2  # nothing moved


def _amp_site(tmp_path, articles, serve, other=False):
    """story.html (a real article), amp.html (the same page naming story.html as its canonical
    URL) and, with `other`, a second article: (base URL, the urls file: amp first)."""
    html = articles[3][0]
    head_start = html.index(b">", html.lower().index(b"<head")) + 1  # before the page's own canonical link
    root = tmp_path / "site"
    root.mkdir()
    (root / "story.html").write_bytes(html)
    (root / "amp.html").write_bytes(html[:head_start] + b'<link rel="canonical" href="/story.html">' + html[head_start:])
    names = ["amp.html", "story.html"]
    if other:
        (root / "other.html").write_bytes(articles[4][0])
        names.insert(1, "other.html")
    base = serve(str(root)).base_url
    return base, write_urls(tmp_path / "urls.txt", [f"{base}/{n}" for n in names])


@pytest.mark.parametrize("workers", ["0", "1"])
def test_canonical_page_supersedes_its_copy_with_a_line_and_a_signal(tmp_path, articles, serve, workers):
    base, urls = _amp_site(tmp_path, articles, serve, other=True)
    spider = os.path.join(ROOT, "tests", "spiders", "canonical_spider.py")
    drops, signals, out = tmp_path / "drops.jsonl", tmp_path / "signals.jsonl", tmp_path / "out.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", spider, "-a", f"urls={urls}", "-a", f"signals={signals}",
         "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}", "-s", f"DEDUP_WORKERS={workers}",
         "-s", "CONCURRENT_REQUESTS=1", "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}", "-o", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # all three reach the pipelines; the AMP copy is then superseded by the page it names, and the
    # feed is written without it (DEDUP_FEED_FILTER)
    assert sorted(i["url"].rsplit("/", 1)[-1] for i in items(out)) == ["other.html", "story.html"]
    (line,) = read_droplog(str(drops))
    assert set(REQUIRED_KEYS) <= set(line)
    assert (line["url"], line["duplicate_of"], line["reason"], line["action"]) == (
        f"{base}/amp.html", f"{base}/story.html", "superseded", "dropped")
    assert line["similarity"] == 1.0 and line["kept_at"] and line["text"]
    assert items(signals) == [{"url": f"{base}/amp.html", "canonical_url": f"{base}/story.html",
                               "reason": "superseded"}]
    assert dedup_stats(proc.stderr)["dedup/superseded"] == 1
    # in the index the canonical URL replaced the copy: the copy's URL is now a copy of it
    out2 = tmp_path / "out2.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", spider, "-a", f"urls={urls}", "-a", f"signals={signals}",
         "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}",
         "-s", "CONCURRENT_REQUESTS=1", "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}", "-o", str(out2)],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    second = {r["url"].rsplit("/", 1)[-1]: (r["reason"], r["duplicate_of"].rsplit("/", 1)[-1])
              for r in list(read_droplog(str(drops)))[1:]}
    assert second == {"amp.html": ("exact", "story.html"), "other.html": ("unchanged", "other.html"),
                      "story.html": ("unchanged", "story.html")}


def test_superseded_signal_comes_after_the_earlier_pages_item_in_one_crawl(tmp_path, articles, serve):
    """The copy and its canonical page decided in one group commit: storage must get the copy's
    item before it is told to remove it, or it keeps both."""
    base, urls = _amp_site(tmp_path, articles, serve)
    spider = os.path.join(ROOT, "tests", "spiders", "canonical_spider.py")
    for attempt in range(4):  # 8 requests at once: story.html may come back first (then no supersede)
        events = tmp_path / f"events{attempt}.jsonl"
        proc = subprocess.run(
            [sys.executable, "-m", "scrapy", "runspider", spider, "-a", f"urls={urls}", "-a", f"signals={events}",
             "-a", "items=1", "-s", f"DEDUP_DIR={tmp_path / f'idx{attempt}'}", "-s", "CONCURRENT_REQUESTS=8",
             # (no workers: pages reach the group commit in the order they arrive)
             "-s", "DEDUP_COMMIT_DELAY=0.5", "-s", "DEDUP_WORKERS=0",
             "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}"],
            cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        seen = [e.get("item") or ("superseded", e["url"]) for e in items(events)]
        if ("superseded", f"{base}/amp.html") in seen:
            break
    assert ("superseded", f"{base}/amp.html") in seen
    assert seen.index(f"{base}/amp.html") < seen.index(("superseded", f"{base}/amp.html"))


def test_dry_run_canonical_rule_sends_no_signal(tmp_path, articles, serve):
    base, urls = _amp_site(tmp_path, articles, serve)
    spider = os.path.join(ROOT, "tests", "spiders", "canonical_spider.py")
    drops, signals = tmp_path / "drops.jsonl", tmp_path / "signals.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", spider, "-a", f"urls={urls}", "-a", f"signals={signals}",
         "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", f"DEDUP_DROPLOG={drops}", "-s", "DEDUP_DRY_RUN=1",
         "-s", "CONCURRENT_REQUESTS=1", "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}"],
        cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = read_droplog(str(drops))
    assert (line["reason"], line["action"], line["url"]) == ("superseded", "flagged", f"{base}/amp.html")
    assert not signals.exists() and "would supersede" in proc.stderr


def test_update_below_an_unchanged_page_is_kept_when_the_spider_copies_meta(tmp_path, articles, serve):
    """A spider passing response.meta on to its requests must not pass on the hub's `unchanged`."""
    root = tmp_path / "site"
    root.mkdir()
    links = "".join(f'<a href="/a{i}.html">a{i}</a>' for i in range(3))
    hub = "".join(f"<p>{htmllib.escape(p)}</p>" for p in articles[5][1].split("\n") if p.strip())
    (root / "hub.html").write_text(f"<html><head><title>Hub</title></head><body><article>{hub}</article>{links}"
                                   "</body></html>", encoding="utf-8")
    for i in range(3):
        (root / f"a{i}.html").write_bytes(articles[i][0])
    base = serve(str(root)).base_url
    spider = os.path.join(ROOT, "tests", "spiders", "metacopy_spider.py")
    runs = []
    for run in range(2):
        if run == 1:  # a correction on a1
            body = articles[1][0]
            at = body.rfind(b"</p>")
            (root / "a1.html").write_bytes(body[:at] + b"</p><p>Correction: an earlier version of this story gave "
                                           b"the wrong name for the agency that published the report.</p>" + body[at:])
        out = tmp_path / f"out{run}.jsonl"
        proc = subprocess.run(
            [sys.executable, "-m", "scrapy", "runspider", spider, "-a", f"start={base}/hub.html",
             "-s", f"DEDUP_DIR={tmp_path / 'idx'}", "-s", "CONCURRENT_REQUESTS=1",
             "-s", "ADDONS={\"crawler_dedup.addon.DedupAddon\": 0}", "-o", str(out)],
            cwd=ROOT, capture_output=True, text=True, timeout=180)
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append(({i["url"].rsplit("/", 1)[-1] for i in items(out)}, dedup_stats(proc.stderr)))
    assert runs[0][0] == {"hub.html", "a0.html", "a1.html", "a2.html"}
    second, stats = runs[1]
    assert second == {"a1.html"}  # the update reached storage; the unchanged pages did not
    assert stats["dedup/updated"] == 1 and stats["dedup/unchanged"] == 3
    assert stats["dedup/dropped_items/unchanged"] == 3


def test_item_pipeline_revisits(tmp_path, articles):
    """Items carrying text (no response stage): the same URL's same text twice is unchanged, a
    corrected text an update, kept."""
    from .conftest import scrapy_runspider

    text = articles[0][1]
    feed = tmp_path / "texts.jsonl"
    rows = [{"url": "https://s/a", "text": text}, {"url": "https://s/a", "text": text},
            {"url": "https://s/a", "text": text + "\n\nCorrection: an earlier version misstated the date."},
            {"url": "https://s/b", "text": text}]
    feed.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    drops, out = tmp_path / "drops.jsonl", tmp_path / "out.jsonl"
    proc = scrapy_runspider("-a", f"texts={feed}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
                            "-s", f"DEDUP_DROPLOG={drops}", "-o", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [i["text"][-19:] for i in items(out)] == [text[-19:], "misstated the date."]
    lines = list(read_droplog(str(drops)))
    assert [(r["url"], r["reason"], r["duplicate_of"], r["stage"]) for r in lines] == [
        ("https://s/a", "unchanged", "https://s/a", "item"), ("https://s/b", "near", "https://s/a", "item")]
    assert lines[0]["item"]["url"] == "https://s/a"  # the dropped item is in its line
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/updated"] == 1 and stats["dedup/unchanged"] == 1


@pytest.mark.skipif(not os.path.isdir(SHARED_DATA), reason="../shared/data is not beside the checkout")
def test_recrawl_of_real_pages_keeps_every_update(tmp_path):
    """benchmarks/recrawl.py as a user runs it, small: real pages served on 127.0.0.1, crawled
    twice over one index with the default settings, the site changed in between; by a server
    without validators, and by one that honours them (conditional requests: the same decisions,
    and the byte-identical pages answered 304, not downloaded)."""
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "recrawl.py"), "--pages", "48",
                           "--rows", "update,conditional", "--json", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text(encoding="utf-8"))
    for row in ("update", "conditional"):
        _every_group_as_designed(doc["settings"][row])
    f = doc["settings"]["conditional"]
    assert f["stats"]["dedup/not_modified"] == f["unchanged"]["total"]  # (churn changed bytes: a 200)
    assert f["stats"]["dedup/conditional"] == f["crawl1"]["total"]
    second = {c["setting"]: c for c in doc["crawls"] if c["crawl"] == 2}
    assert second["conditional"]["downloaded"] < second["update"]["downloaded"]
    assert "dedup/conditional" not in doc["settings"]["update"]["stats"]  # no validators, nothing to ask with


def _every_group_as_designed(f):
    assert f["crawl1"]["kept"] == f["crawl1"]["total"] == 48
    # every updated page is kept, a figure correction (a number in a sentence) too
    assert f["updated"]["kept"] == f["updated"]["total"] == 8
    assert f["figures"]["kept"] == f["figures"]["total"] >= 1
    # no unchanged page is called a copy of itself; byte-identical ones are `unchanged`
    assert f["unchanged"]["self"] == f["churn"]["self"] == 0
    assert f["unchanged"]["unchanged"] == f["unchanged"]["total"] > 0
    assert f["churn"]["unchanged"] + f["churn"]["kept"] == f["churn"]["total"]
    # a URL whose content was replaced by another crawled page's is dropped as that page's copy
    assert f["replaced"]["dropped_as_copy"] == f["replaced"]["total"] >= 1
    # copies of the updated versions at new URLs are dropped as copies of the updated pages
    assert f["copies_of_updates"]["dropped_as_copy"] == f["copies_of_updates"]["total"] >= 1
    assert f["new"]["kept"] == f["new"]["total"]
    assert f["failures"] == {}
    stats = f["stats"]
    assert stats["dedup/updated"] >= f["updated"]["total"] + f["figures"]["total"]
    # the spider parsed each unchanged page and its items were dropped, but for a leaf's 304 (no body)
    assert stats["dedup/unchanged"] == stats["dedup/dropped/unchanged"] == (
        stats["dedup/dropped_items/unchanged"] + stats.get("dedup/not_modified", 0))


def _corrected(html: bytes, gold: str) -> bytes | None:
    """The page with a correction paragraph after the paragraph holding a sentence of its text."""
    for sentence in gold.split(". "):
        at = html.find(sentence[:40].encode()) if len(sentence) > 60 else -1
        end = html.find(b"</p>", at) if at >= 0 else -1
        if end >= 0:
            return (html[:end] + b"</p><p>Correction: an earlier version of this article misstated the year the "
                    b"agency was founded and the name of its first director.</p>" + html[end + 4:])
    return None


def test_a_recrawl_killed_midway_loses_no_update(tmp_path, articles, serve):
    """SIGKILL a recrawl once it has passed pages on, then run it again: every corrected page
    reaches storage (a killed crawl's feed may not hold what it passed on, so the pages it filed
    are passed on again by the next crawl instead of being dropped as unchanged)."""
    import signal
    import threading

    from crawler_dedup.core.page.extract import extract

    root = tmp_path / "site"
    root.mkdir()
    names = [f"p{i:02d}.html" for i in range(len(articles))]
    for name, (html, _) in zip(names, articles):
        (root / name).write_bytes(html)
    base = serve(str(root)).base_url
    urls = write_urls(tmp_path / "urls.txt", [f"{base}/{n}" for n in names])
    crawl(tmp_path, urls, tmp_path / "o1.jsonl")
    updated = []
    for name, (html, gold) in zip(names, articles):
        new = _corrected(html, gold)
        got = extract(new, f"{base}/{name}") if new else None
        if got is not None and "misstated the year" in got.text and len(updated) < 6:
            (root / name).write_bytes(new)
            updated.append(f"{base}/{name}")
    assert len(updated) >= 4
    cmd = [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"urls={urls}", "-s", f"DEDUP_DIR={tmp_path / 'idx'}",
           "-s", "ROBOTSTXT_OBEY=0", "-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.3",
           "-s", "RANDOMIZE_DOWNLOAD_DELAY=0", "-o", str(tmp_path / "o2a.jsonl")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen = []

    def watch():  # kill once half the pages were crawled (and passed on, or dropped)
        for line in proc.stderr:
            if "Crawled (200)" in line:
                seen.append(line)
                if len(seen) == len(names) // 2:
                    proc.send_signal(signal.SIGKILL)

    thread = threading.Thread(target=watch)
    thread.start()
    proc.wait(timeout=180)
    thread.join(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    proc = crawl(tmp_path, urls, tmp_path / "o2b.jsonl")
    stored = {i["url"] for i in items(tmp_path / "o2a.jsonl")} | {i["url"] for i in items(tmp_path / "o2b.jsonl")}
    assert set(updated) <= stored
    stats = dedup_stats(proc.stderr)
    assert stats["dedup/revisits"] == len(names) and stats.get("dedup/unchanged/resent", 0) >= 1
    drops = list(read_droplog(str(tmp_path / "idx" / "droplog.jsonl")))
    assert not [d for d in drops if d["duplicate_of"] == d["url"] and d["reason"] != "unchanged"]
