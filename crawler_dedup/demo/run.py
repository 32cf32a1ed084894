"""`crawler-dedup demo`: serve the demo site on 127.0.0.1, crawl it with dedup on, show the outcome."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from ..droplog import read_droplog
from .server import PageServer
from .site import VARIANTS, DemoPage, build_site
from ..exceptions import DemoError

MARKER = ".crawler-dedup-demo"


@dataclass
class DemoResult:
    out: str
    droplog: str
    base_url: str
    pages: list[DemoPage]
    outcome: dict[str, str] = field(default_factory=dict)  # path -> kept | dropped | missing
    matched: dict[str, str] = field(default_factory=dict)  # path -> path of the kept page
    records: list[dict] = field(default_factory=list)

    def rows(self):
        for p in self.pages:
            yield p, self.outcome.get(p.path, "missing"), self.matched.get(p.path)

    @property
    def false_drops(self) -> list[DemoPage]:
        return [p for p, got, _ in self.rows() if p.expect == "keep" and got == "dropped"]


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def run_crawl(urls_file: str, out: str, settings: dict | None = None) -> dict:
    """One Scrapy crawl of the pages spider, in this process (the reactor runs once per process)."""
    from scrapy.crawler import CrawlerProcess

    from ..scrapy.spider import PagesSpider

    base = {
        "ADDONS": {"crawler_dedup.addon.DedupAddon": 0},
        "DEDUP_DIR": os.path.join(out, "index"),
        "DEDUP_DROPLOG": os.path.join(out, "droplog.jsonl"),
        "FEEDS": {os.path.join(out, "kept.jsonl"): {"format": "jsonlines", "overwrite": True}},
        "CONCURRENT_REQUESTS": 1,  # one page at a time: the crawl order decides what is "first"
        # the demo shows each kind of copy told apart after download, tracking URLs too (a crawl's
        # default sends them cleaned, so Scrapy's duplicate filter drops them before download)
        "DEDUP_CLEAN_REQUESTS": False,
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "LOG_LEVEL": "WARNING",
    }
    base.update(settings or {})
    process = CrawlerProcess(base)
    crawler = process.create_crawler(PagesSpider)
    process.crawl(crawler, urls=urls_file)
    process.start()
    if getattr(process, "bootstrap_failed", False) or crawler.stats is None:
        raise DemoError("the crawl did not start (see the error above)")
    return crawler.stats.get_stats()


def run_demo(out: str | None = None, settings: dict | None = None) -> DemoResult:
    out = os.path.abspath(out or tempfile.mkdtemp(prefix="crawler-dedup-demo-"))
    if os.path.isdir(out) and os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
        raise DemoError(f"{out} holds other files: give an empty or new folder", exit_code=2)
    os.makedirs(out, exist_ok=True)
    open(os.path.join(out, MARKER), "w").close()
    for old in ("index", "site", "droplog.jsonl", "kept.jsonl"):  # a rerun starts from an empty index
        target = os.path.join(out, old)
        if os.path.isdir(target):
            shutil.rmtree(target)
        elif os.path.exists(target):
            os.remove(target)
    site = os.path.join(out, "site")
    os.makedirs(site)
    pages = build_site(site)
    with PageServer(site) as server:
        urls_file = os.path.join(out, "urls.txt")
        with open(urls_file, "w", encoding="utf-8") as fh:
            fh.write("# the demo site, in crawl order\n")
            fh.writelines(f"{server.base_url}{p.path}\n" for p in pages)
        stats = run_crawl(urls_file, out, settings)
        if not stats.get("dedup/checked"):
            raise DemoError(f"the crawl checked no page (stats: {stats})")
        result = DemoResult(out=out, droplog=os.path.join(out, "droplog.jsonl"), base_url=server.base_url, pages=pages)
    kept_file = os.path.join(out, "kept.jsonl")
    if os.path.exists(kept_file):
        with open(kept_file, encoding="utf-8") as fh:
            for line in fh:
                result.outcome[_path(json.loads(line)["url"])] = "kept"
    if os.path.exists(result.droplog):
        for rec in read_droplog(result.droplog):
            if rec.get("action") == "kept":  # (kept, though a candidate passed the lookup: no drop)
                continue
            result.records.append(rec)
            result.outcome[_path(rec["url"])] = rec["action"]
            result.matched[_path(rec["url"])] = _path(rec["duplicate_of"])
    return result


def summary_lines(r: DemoResult) -> list[str]:
    """The demo's verdict in a few lines: what was caught, what was kept, where the files are."""
    dups = [p for p in r.pages if p.expect == "drop"]
    keeps = [p for p in r.pages if p.expect == "keep"]
    caught = Counter(p.kind for p in dups if r.outcome.get(p.path) == "dropped")
    total = Counter(p.kind for p in dups)
    by_kind = ", ".join(f"{k} {caught[k]}/{total[k]}" for k in VARIANTS if total[k])
    kept_ok = sum(1 for p in keeps if r.outcome.get(p.path) == "kept")
    reasons = Counter(rec["reason"] for rec in r.records)
    return [f"{len(r.pages)} pages crawled from {r.base_url}: "
            f"{sum(1 for v in r.outcome.values() if v == 'kept')} kept, {len(r.records)} dropped "
            f"({', '.join(f'{n} {k}' for k, n in sorted(reasons.items()))})",
            f"near-duplicates caught: {sum(caught.values())}/{len(dups)} ({by_kind})",
            f"originals and hard negatives kept: {kept_ok}/{len(keeps)}; false drops: {len(r.false_drops)}",
            f"drop log: {r.droplog}",
            f"index: {os.path.join(r.out, 'index')}   site: {os.path.join(r.out, 'site')}"]
