"""Crawls of a small generated site through the code path a crawl takes, in process, against a
model of what storage must hold (tests/test_crawl_model.py drives them; benchmarks/model_crawls.py
runs them longer).

A crawl here is what `scrapy crawl` does with one request at a time: each URL's request goes
through the downloader middleware (validators put on a recrawl's request), a server that honours
them or not answers (a 304, a 200, a 404 for a page removed), the response comes back through the
middleware (decided: dropped, passed on, or asked again without validators), the spider yields an
item, the spider middleware and the item pipeline see it, and storage keeps it. Storage is kept as
a user keeps it: items appended under their URL, and each URL the `page_superseded` signal names
removed. A new crawler is made for every crawl (settings may change between crawls) over one index.

What must hold after every crawl (`Model.check`):
- every page (article) the crawls met still has a URL in storage;
- every drop's `duplicate_of`, followed through the superseded lines, is a URL in storage;
- storage loses a URL only by a superseded line, and every URL the index holds as kept is in
  storage (the index never stands for a page storage does not have);
- `index verify` finds nothing wrong.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import threading
import time as _time
from dataclasses import dataclass, field
from pathlib import Path

from scrapy import Request
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from crawler_dedup.core.index.integrity import verify
from crawler_dedup.droplog import kept_now
from crawler_dedup.scrapy.extension import DedupExtension
from crawler_dedup.scrapy.middleware import DedupMiddleware, DedupSpiderMiddleware
from crawler_dedup.scrapy.pipeline import DedupPipeline
from crawler_dedup.signals import page_superseded

HOST = "site.example"
DAY = 86_400.0
_WORDS = ("river council budget school harbour bridge museum festival orchard market railway garden "
          "library tower canal theatre village forest mountain island valley meadow quarry castle "
          "station ferry clinic stadium factory bakery workshop gallery archive chapel lighthouse "
          "vineyard estate college tunnel airport reservoir pavilion dockyard granary mill courthouse "
          "observatory aquarium monastery fortress plaza avenue boulevard terrace cottage farmhouse "
          "engineer teacher farmer sailor painter doctor mayor baker writer pilot nurse miner weaver "
          "carpenter gardener fisher potter merchant scholar ranger judge clerk builder driver "
          "announced approved delayed opened closed repaired expanded reviewed funded planned "
          "visited measured counted painted restored rebuilt cleaned moved sold bought hired "
          "quietly slowly early late again often rarely finally briefly openly firmly gently "
          "northern southern eastern western ancient modern small large busy quiet narrow wide "
          "winter summer autumn spring morning evening weekly monthly yearly local regional").split()


class FakeClock:
    """time.time() a day later each crawl, for the modules that read the clock for decisions
    (DEDUP_WINDOW, a fetch's age); everything else in the module passes through."""

    def __init__(self):
        self.offset = 0.0

    def time(self) -> float:
        return _time.time() + self.offset

    def __getattr__(self, name):
        return getattr(_time, name)


CLOCKED = ("crawler_dedup.core.dedup", "crawler_dedup.core.index.revalidation", "crawler_dedup.core.index.neardup",
           "crawler_dedup.core.decide.claims", "crawler_dedup.scrapy.conditional")


def article_text(seed: int, words: int = 160) -> list[str]:
    rnd = random.Random(seed)
    return [rnd.choice(_WORDS) + (str(rnd.randrange(10)) if rnd.random() < 0.15 else "") for _ in range(words)]


def edited(text: list[str], seed: int, share: float = 0.03) -> list[str]:
    rnd = random.Random(seed)
    out = list(text)
    for i in rnd.sample(range(len(out)), max(1, int(len(out) * share))):
        out[i] = rnd.choice(_WORDS) + "x"
    return out


@dataclass
class Article:
    number: int
    text: list[str]
    version: int = 0
    canonical: str | None = None  # "clean", "tracking", "other:<n>", or None

    @property
    def title(self) -> str:
        head = article_text(self.number * 31 + 7, 5)
        return f"{' '.join(head).title()} report {self.number}"


def clean_url(n: int) -> str:
    return f"https://{HOST}/a{n}"


def variant_url(n: int, kind: str) -> str:
    if kind == "tracking":
        return f"https://{HOST}/a{n}?utm_source=news"
    if kind == "tracking2":
        return f"https://{HOST}/a{n}?utm_source=feed&utm_medium=rss"
    if kind == "session":
        return f"https://{HOST}/a{n};jsessionid=S{n}X"
    if kind == "http":
        return f"http://{HOST}/a{n}"
    return clean_url(n)


@dataclass
class Site:
    """The generated site: articles, the URLs that serve them, and how its server answers."""

    articles: dict[int, Article] = field(default_factory=dict)
    urls: dict[str, int] = field(default_factory=dict)  # URL -> article (live URLs)
    removed: set[str] = field(default_factory=set)
    honours: bool = True  # answers a request whose validators match with a 304
    order: list[str] = field(default_factory=list)  # every URL ever served, in the order first added

    def add_url(self, url: str, article: int) -> None:
        self.urls[url] = article
        self.removed.discard(url)
        if url not in self.order:
            self.order.append(url)

    def canonical_of(self, article: Article) -> str | None:
        mode = article.canonical
        if mode == "clean":
            return clean_url(article.number)
        if mode == "tracking":
            return variant_url(article.number, "tracking")
        if mode and mode.startswith("other:"):
            return clean_url(int(mode.split(":")[1]))
        return None

    def body(self, url: str) -> bytes:
        art = self.articles[self.urls[url]]
        words = art.text
        paras = ["<p>" + " ".join(words[i:i + 40]).capitalize() + ".</p>" for i in range(0, len(words), 40)]
        canonical = self.canonical_of(art)
        link = f'<link rel="canonical" href="{canonical}">' if canonical else ""
        return (f"<html><head><title>{art.title}</title>{link}</head><body><nav><a href='/'>Home</a></nav>"
                f"<article><h1>{art.title}</h1>{''.join(paras)}</article><footer>Site footer</footer></body></html>"
                ).encode()

    def answer(self, request: Request) -> Response:
        url = request.url
        if url not in self.urls:
            return HtmlResponse(url, status=404, body=b"<html><body>gone</body></html>", request=request)
        body = self.body(url)
        etag = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
        asked = request.headers.get("If-None-Match")
        if self.honours and asked is not None and asked.decode("latin-1") == etag:
            return Response(url, status=304, headers={"ETag": etag}, request=request)
        return HtmlResponse(url, status=200, body=body, request=request, encoding="utf-8",
                            headers={"ETag": etag, "Content-Type": "text/html; charset=utf-8"})


@dataclass
class Crawled:
    """What one crawl did."""

    stored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)  # by page_superseded
    statuses: dict[str, int] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)


class Model:
    """Crawls of `site` over one index (`settings` hold the store's; each crawl may change the
    DEDUP_* ones), storage as a user keeps it, and the checks."""

    def __init__(self, folder: Path, site: Site, store_settings: dict | None = None):
        self.folder, self.site = folder, site
        self.store_settings = {"DEDUP_DIR": str(folder / "idx"), **(store_settings or {})}
        self.droplog = folder / "droplog.jsonl"
        self.storage: dict[str, int] = {}  # URL -> the article its item carried
        self.seen: set[int] = set()  # articles a crawl met (a page answered 200 or 304)
        self.clock = FakeClock()
        self.crawls: list[Crawled] = []
        self.settings: dict = {}
        self.lock = threading.Lock()  # (crawlers at once share storage)
        self.windowed = False  # a crawl ran with DEDUP_WINDOW

    def crawl(self, order: list[str] | None = None, settings: dict | None = None, leaf: bool = True,
              item_html: bool = False, crawlers: int = 1) -> Crawled:
        """One crawl of `order` (default: every live URL); `crawlers` > 1: that many crawler
        processes at once over the same index, the URLs dealt out in turn, storage shared."""
        import importlib

        modules = [importlib.import_module(m) for m in CLOCKED]
        saved = [m.time for m in modules]  # type: ignore[attr-defined]
        self.clock.offset += DAY
        for m in modules:
            m.time = self.clock  # type: ignore[attr-defined]
        try:
            urls = order if order is not None else list(self.site.urls)
            self.settings = settings or {}
            done = Crawled()
            if crawlers == 1:
                self._crawl(urls, leaf, item_html, done)
            else:
                threads = [threading.Thread(target=self._crawl, args=(urls[i::crawlers], leaf, item_html, done))
                           for i in range(crawlers)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join(timeout=600)
                if done.errors:
                    raise done.errors[0]
            self.crawls.append(done)
            return done
        finally:
            for m, t in zip(modules, saved):
                m.time = t  # type: ignore[attr-defined]

    def _crawl(self, urls: list[str], leaf: bool, item_html: bool, done: Crawled) -> None:
        try:
            crawler = get_crawler(settings_dict={
                "ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DROPLOG": str(self.droplog),
                "DEDUP_LOGSTATS_INTERVAL": 0, "DEDUP_COMMIT_BATCH": 1, "DEDUP_WORKERS": 0,
                # (the tracking variants reach the rules after download unless a step turns cleaning on)
                "DEDUP_CLEAN_REQUESTS": False, **self.store_settings, **self.settings})

            def superseded(url, **_):
                with self.lock:
                    done.removed.append(url)
                    self.storage.pop(url, None)

            crawler.signals.connect(superseded, signal=page_superseded)
            ext = DedupExtension.of(crawler)
            ext.spider_opened(None)
            try:
                mw = DedupMiddleware.from_crawler(crawler)
                smw = DedupSpiderMiddleware.from_crawler(crawler)
                pipe = DedupPipeline.from_crawler(crawler)
                asked: set[str] = set()  # what Scrapy's duplicate filter has seen this crawl
                for url in urls:
                    self._fetch(url, mw, smw, pipe, leaf, item_html, done, asked)
            finally:
                ext.spider_closed(None, "finished")
                ext.engine_stopped()
        except BaseException as exc:  # (a crawler thread's failure fails the crawl)
            done.errors.append(exc)
            if threading.current_thread() is threading.main_thread():
                raise

    def _fetch(self, url, mw, smw, pipe, leaf, item_html, done: Crawled, asked: set[str]) -> None:
        request = Request(url, meta={"dedup_leaf": True} if leaf else {})
        asked.add(url)
        for _ in range(3):  # the request, and again without validators when the middleware asks
            cleaned = mw.process_request(request)
            if isinstance(cleaned, Request):  # (DEDUP_CLEAN_REQUESTS: scheduled again under its clean URL)
                if cleaned.url in asked:
                    return  # the duplicate filter drops it: never downloaded
                asked.add(cleaned.url)
                request, url = cleaned, cleaned.url
                mw.process_request(request)
            response = self.site.answer(request)
            done.statuses[url] = response.status
            if url in self.site.urls and response.status in (200, 304):
                with self.lock:
                    self.seen.add(self.site.urls[url])
            try:
                out = asyncio.run(mw.process_response(request, response))
            except IgnoreRequest:
                done.dropped.append(url)
                return
            if isinstance(out, Request):
                request = out
                continue
            if out.status != 200:
                return
            item = {"url": url, "article": self.site.urls[url]}
            if item_html:
                item["html"] = out.text
            if smw.get_processed_item(item, out) is None:
                return
            try:
                pipe.process_item(item)
            except DropItem:
                done.dropped.append(url)
                return
            with self.lock:
                self.storage[url] = item["article"]
                done.stored.append(url)
            return
        raise AssertionError(f"{url} asked again and again")

    # -- what must hold -----------------------------------------------------------------------
    def lines(self) -> list[dict]:
        if not self.droplog.exists():
            return []
        return [json.loads(line) for line in self.droplog.read_text(encoding="utf-8").splitlines() if line.strip()]

    def kept_in_index(self) -> set[str]:
        from crawler_dedup import Deduplicator

        cfg = {k.removeprefix("DEDUP_").lower(): v for k, v in self.store_settings.items()}
        with Deduplicator(**cfg) as d:
            index = d.index
            assert index is not None
            report = verify(index)
            assert report.ok, f"index verify: {report.problems}"
            urls: set[str] = set()

            def read(txn):
                for doc in index.scan(txn):
                    urls.add(doc.url)
            index.read(read)
        return urls

    def check(self) -> None:
        lines = self.lines()
        now = kept_now(lines)
        if self.settings.get("DEDUP_WINDOW"):
            self.windowed = True  # (pages expired from the index stay in storage: it may forget them)
        lost = sorted(a for a in self.seen if a not in set(self.storage.values()))
        assert not lost, f"articles with no URL in storage: {lost}; storage {self.storage}; crawls {self.crawls[-1]}"
        for r in lines:
            if r["action"] != "dropped" or r["reason"] == "superseded":
                continue
            named = now(r["duplicate_of"])
            assert named in self.storage, (f"{r['url']} dropped ({r['reason']}, rule {r.get('rule')}) against "
                                           f"{r['duplicate_of']} -> {named}, not in storage {sorted(self.storage)}")
        superseded = {r["url"] for r in lines if r.get("reason") == "superseded"}
        signalled = {u for c in self.crawls for u in c.removed}
        assert signalled <= superseded, f"left storage without a superseded line: {signalled - superseded}"
        in_index = self.kept_in_index()
        missing = sorted(in_index - set(self.storage))
        assert not missing, f"the index holds pages storage does not: {missing}; storage {sorted(self.storage)}"
        if not self.windowed:
            forgotten = sorted(set(self.storage) - in_index)
            assert not forgotten, f"storage holds pages the index forgot: {forgotten}"
