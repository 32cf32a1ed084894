"""Crawls of a small generated site through the code path a crawl takes, in process (tests/
test_crawl_model.py drives them, tests/crawl_oracle.py says what storage must hold after each;
benchmarks/model_crawls.py runs them longer, benchmarks/mutations.py proves them).

A crawl here is what `scrapy crawl` does with one request at a time: each URL's request goes
through the downloader middleware (validators put on a recrawl's request, a tracking URL cleaned),
a server that honours them or not answers (a 304 to an ETag or a Last-Modified date, a 200, a 301
from http to https, a 404 for a page removed), the response comes back through the middleware
(decided: dropped, passed on, or asked again without validators), the spider yields an item, the
spider middleware and the item pipeline see it, and storage keeps it: items appended under their
URL, and each URL the `page_superseded` signal names removed. A new crawler is made for every
crawl (settings may change between crawls) over one index. A dry run's items are a trial's and
are not stored.

The site: articles at https://site.example/a<n>, the same page under tracking, session and http
URLs, an exact copy on a mirror host, and a print version whose text differs in 5% of its words
(a near copy: a resemblance near 0.75, a copy under a score threshold of 0.5, apart under 0.97).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import logging
import random
import threading
import time as _time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from scrapy import Request
from scrapy.exceptions import DropItem, IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from crawler_dedup.core.index.neardup import RUN_LEASE
from crawler_dedup.scrapy.extension import DedupExtension
from crawler_dedup.scrapy.middleware import DedupMiddleware, DedupSpiderMiddleware
from crawler_dedup.scrapy.pipeline import DedupPipeline
from crawler_dedup.signals import page_superseded

from .crawl_hooks import CutInside, Killed

HOST = "site.example"
MIRROR = "mirror.example"
DAY = 86_400.0
PRINT_SHARE = 0.05  # of a print version's words differ from its article's
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
           "crawler_dedup.core.decide.claims", "crawler_dedup.scrapy.conditional",
           "crawler_dedup.stores.redis.journal")  # (a killed writer's beat ages by the model's days)


def article_text(seed: int, words: int = 160) -> list[str]:
    rnd = random.Random(seed)
    return [rnd.choice(_WORDS) + (str(rnd.randrange(10)) if rnd.random() < 0.15 else "") for _ in range(words)]


def edited(text: list[str], seed: int, share: float = 0.03) -> list[str]:
    rnd = random.Random(seed)
    out = list(text)
    for i in rnd.sample(range(len(out)), max(1, int(len(out) * share))):
        out[i] = rnd.choice(_WORDS) + "x"
    return out


def write_graded_model(folder) -> str:
    """The model's DEDUP_MODEL: a weighed pair's score rises with its resemblance only (sigmoid of
    10 x resemblance - 5), so DEDUP_SCORE_THRESHOLD sorts a print version from its article (0.97:
    apart, resemblance below ~0.85; auto, 0.5: a copy) while exact copies stay copies (0.993)."""
    import os

    from crawler_dedup.core.decide.model import Model as Score, Term
    from crawler_dedup.tools import fit

    path = os.path.join(str(folder), "graded.json")
    fit.write(Score(None, 0.0, 0.5, (Term("resemblance", "value", "resemblance"),), (10.0,), -5.0), path)
    return path


@dataclass
class Article:
    number: int
    text: list[str]
    version: int = 0  # its text's edits
    canonical: str | None = None  # "clean", "tracking", "other:<n>", or None
    modified: int = 0  # its pages' bodies changed this often (Last-Modified)

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
    if kind == "print":
        return f"https://{HOST}/print/a{n}"
    if kind == "mirror":
        return f"https://{MIRROR}/a{n}"
    return clean_url(n)


def article_of(url: str) -> int:
    """The article a URL of the site serves (its number is in every URL's path)."""
    return int(url.split("/a", 1)[1].split("?")[0].split(";")[0])


def is_print(url: str) -> bool:
    return "/print/" in url


@dataclass
class Site:
    """The generated site: articles, the URLs that serve them, and how its server answers."""

    articles: dict[int, Article] = field(default_factory=dict)
    urls: dict[str, int] = field(default_factory=dict)  # URL -> article (live URLs)
    removed: set[str] = field(default_factory=set)
    honours: bool = True  # answers a request whose validators match with a 304
    validators: str = "etag"  # what it sends: etag, last-modified, both
    redirects: bool = False  # http URLs answer 301 to their https URL
    text_validators: bool = False  # validators of the text only (a CMS's article date): a new rel=canonical keeps them
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

    def words(self, url: str) -> list[str]:
        art = self.articles[self.urls[url]]
        return edited(art.text, art.number * 7919, PRINT_SHARE) if is_print(url) else art.text

    def body(self, url: str) -> bytes:
        art = self.articles[self.urls[url]]
        words = self.words(url)
        paras = ["<p>" + " ".join(words[i:i + 40]).capitalize() + ".</p>" for i in range(0, len(words), 40)]
        canonical = self.canonical_of(art)
        link = f'<link rel="canonical" href="{canonical}">' if canonical and not is_print(url) else ""
        return (f"<html><head><title>{art.title}</title>{link}</head><body><nav><a href='/'>Home</a></nav>"
                f"<article><h1>{art.title}</h1>{''.join(paras)}</article><footer>Site footer</footer></body></html>"
                ).encode()

    def answer(self, request: Request) -> Response:
        url = request.url
        if self.redirects and url.startswith("http://"):
            return Response(url, status=301, headers={"Location": "https://" + url[len("http://"):]}, request=request)
        if url not in self.urls:
            return HtmlResponse(url, status=404, body=b"<html><body>gone</body></html>", request=request)
        body = self.body(url)
        art = self.articles[self.urls[url]]
        headers = {"Content-Type": "text/html; charset=utf-8"}
        text = " ".join(self.words(url)).encode() if self.text_validators else body
        etag = '"' + hashlib.sha1(text).hexdigest()[:16] + '"'
        changes = art.version if self.text_validators else art.modified
        modified = email.utils.formatdate(1_700_000_000 + changes * 3600, usegmt=True)
        if self.validators in ("etag", "both"):
            headers["ETag"] = etag
        if self.validators in ("last-modified", "both"):
            headers["Last-Modified"] = modified
        if self.honours and self._not_modified(request, etag, modified):
            return Response(url, status=304, headers={k: v for k, v in headers.items() if k != "Content-Type"},
                            request=request)
        return HtmlResponse(url, status=200, body=body, request=request, encoding="utf-8", headers=headers)

    def _not_modified(self, request: Request, etag: str, modified: str) -> bool:
        asked = request.headers.get("If-None-Match")
        if asked is not None:  # (RFC 9110 13.1.3: If-None-Match wins over If-Modified-Since)
            return self.validators in ("etag", "both") and asked.decode("latin-1") == etag
        since = request.headers.get("If-Modified-Since")
        if since is None or self.validators not in ("last-modified", "both"):
            return False
        asked_at = email.utils.parsedate_to_datetime(since.decode("latin-1"))
        return email.utils.parsedate_to_datetime(modified) <= asked_at


def killed(ext: DedupExtension, elsewhere: bool | None = None) -> None:
    """What a killed crawl leaves: its committed decisions and drop-log lines (written a line at a
    time), no signal held for the spider's close, and its run open under a process that is gone
    (`elsewhere`: in another container, known killed only once its lease runs out; None: either)."""
    import json
    import os
    import socket
    import subprocess

    from crawler_dedup import Deduplicator
    from crawler_dedup.core.index.neardup import _open_run

    ext.recorder.superseded_later = []  # (lost with the process)
    if ext.pool is not None:  # (its worker processes go with it)
        ext.pool.shutdown(wait=False, cancel_futures=True)
        ext.pool = None
    if ext.recorder.droplog is not None:
        ext.recorder.droplog.close()
        ext.recorder.droplog = None
    dedup = ext.dedup
    if dedup is None:
        return
    run, dedup.run = dedup.run, 0  # (closed without ending its run)
    ext.engine_stopped()
    gone = subprocess.Popen(["true"])
    gone.wait()
    # on this host a dead pid; in every other run another container's (a live pid here, says
    # nothing); either marker outlives its lease by the next crawl, a day later (a dead pid may be
    # another process's again by then: pids wrap at 32768 on a busy machine)
    from crawler_dedup.core.index import neardup

    here = bool(run % 2) if elsewhere is None else not elsewhere
    who = {"host": socket.gethostname(), "pid": gone.pid} if here else {"host": "crawler-elsewhere", "pid": os.getpid()}
    marker = json.dumps({**who, "beat": neardup.time.time()}).encode()
    with Deduplicator(ext.config).open(new_run=False) as after:
        assert after.index is not None
        after.index.write(lambda txn: txn.meta_put(_open_run(run), marker))


@dataclass
class Crawled:
    """What one crawl did."""

    stored: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)  # (URL, the URL replacing it) by page_superseded
    statuses: dict[str, int] = field(default_factory=dict)
    served: dict[str, tuple[int, int]] = field(default_factory=dict)  # URL -> (article, version) of a 200 or 304
    validators: dict[str, tuple] = field(default_factory=dict)  # URL -> (ETag, Last-Modified) the server answered
    errors: list[BaseException] = field(default_factory=list)
    dry_run: bool = False
    settings: dict = field(default_factory=dict)
    full: bool = True  # every live URL was asked
    events: list[tuple[str, tuple[int, int] | None]] = field(default_factory=list)  # storage's writes, in order
    crawlers: int = 1  # crawler processes at once
    killed: bool = False  # stopped after its first URLs without closing (a kill): its run never ended
    changed: set[int] = field(default_factory=set)  # (the oracle's) articles served in a new version
    lines: list[dict] = field(default_factory=list)  # (the oracle's) its drop-log lines
    updated: set[int] = field(default_factory=set)  # (the oracle's) articles whose stored URL took a new version
    recanonical: set[int] = field(default_factory=set)  # (the oracle's) articles first shown a new rel=canonical
    cut: str | None = None  # a killed crawl's last URL, killed between its commit and its recording
    inside: bool = False  # (the spread layout) killed inside that commit instead: half its commands sent
    inside_last: bool = False  # (the spread layout) the commit's second half sent, not its first
    inside_cut: "CutInside | None" = None  # (how, while it runs)
    width: int | None = None  # downloads at once (None: 1 to 3 by the number of URLs)
    late: str | None = None  # a URL whose response came after a run's lease ran out
    early: set[str] = field(default_factory=set)  # URLs answered before that (a killed run still looked alive)
    aged: set[str] = field(default_factory=set)  # (the oracle's) URLs downloaded in full as their validators aged out
    at: float = 0.0  # the model's clock (days added to real time) when it started
    unchecked: set[str] = field(default_factory=set)  # URLs its log named "Dedup kept unchecked" (a store error)


class _Unchecked(logging.Handler):
    """The URLs a crawl's log names as kept unchecked (what a user reads; the model asks the code nothing)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.urls: list[str] = []

        self.all = False  # the index could not be opened at a crawler's start: every page kept unchecked

    def emit(self, record):
        if record.msg.startswith("Dedup kept unchecked:") and record.args:
            self.urls.append(str(record.args[0]))
        self.all |= record.msg.startswith("crawler-dedup could not open")


async def _in_worker(pool, fn, *args):
    """DEDUP_WORKERS' real worker processes, their answer awaited on the crawl's asyncio loop."""
    return await asyncio.wrap_future(pool.submit(fn, *args))


class Model:
    """Crawls of `site` over one index (`store_settings` hold the store's; each crawl may change
    the DEDUP_* ones) and storage as a user keeps it."""

    def __init__(self, folder: Path, site: Site, store_settings: dict | None = None):
        self.folder, self.site = folder, site
        self.store_settings = {"DEDUP_DIR": str(folder / "idx"), **(store_settings or {})}
        self.droplog = folder / "droplog.jsonl"
        self.storage: dict[str, tuple[int, int]] = {}  # URL -> (article, version) its item carried
        self.clock = FakeClock()
        self.crawls: list[Crawled] = []
        self.lock = threading.Lock()  # (crawlers at once share storage)
        self.elsewhere: bool | None = None  # a killed crawl's container (None: by its run's number)
        self.opened: Callable[[], None] | None = None  # called once a crawler's index is open (a fault's start)

    def crawl(self, order: list[str] | None = None, settings: dict | None = None, leaf: bool = True,
              item_html: bool = False, crawlers: int = 1, dry_run: bool = False,
              kill: tuple[int, float] | tuple[int, float, bool] | None = None, width: int | None = None,
              gap: float = DAY, late: str | None = None) -> Crawled:
        """One crawl of `order` (default: every live URL); `crawlers` > 1: that many crawler
        processes at once over the same index, the URLs dealt out in turn, storage shared.
        `kill` (asked, reached): the process killed after its first `asked` URLs (their decisions
        committed, as a group commit holds each response until its commit), the spider never
        closed, the run never ended, and only the first `reached` share of the items it passed on
        written to storage (a feed's buffer, the pipelines' queue lost with the process); with a
        third element True, the kill came between the last URL's commit and its recording (no
        drop-log line, no signal, no item of it); "inside" (the spread layout), inside that commit,
        half its commands sent ("inside-last": its second half). The page_superseded signals it sent are applied
        (a deletion is done when it is told). `width`: downloads at once (default 1 to 3, by the
        number of URLs), each batch's decisions in one group commit. `gap`: the time since the last
        crawl; `late`: a URL whose response takes longer than a run's lease (RUN_LEASE): a killed
        run still taken for alive when its request is sent is known killed by its response."""
        import importlib

        modules = [importlib.import_module(m) for m in CLOCKED]
        saved = [m.time for m in modules]  # type: ignore[attr-defined]
        self.clock.offset += gap
        for m in modules:
            m.time = self.clock  # type: ignore[attr-defined]
        extension = importlib.import_module("crawler_dedup.scrapy.extension")
        through_reactor = extension.in_worker
        extension.in_worker = _in_worker  # (the crawl runs on asyncio alone, not on Twisted's reactor)
        named = _Unchecked()
        for name in ("crawler_dedup.scrapy.recording", "crawler_dedup.scrapy.extension"):
            logging.getLogger(name).addHandler(named)
        try:
            urls = order if order is not None else list(self.site.urls)
            settings = {**(settings or {}), **({"DEDUP_DRY_RUN": True} if dry_run else {})}
            done = Crawled(dry_run=dry_run, settings=settings, full=set(self.site.urls) <= set(urls),
                           killed=kill is not None, crawlers=crawlers, width=width, late=late,
                           at=self.clock.offset)
            if kill is not None:
                assert crawlers == 1 and not dry_run
                done.cut = urls[:kill[0]][-1] if len(kill) > 2 and kill[2] and urls else None
                done.inside = done.cut is not None and str(kill[2]).startswith("inside")
                done.inside_last = len(kill) > 2 and kill[2] == "inside-last"
                self.storage, before = {}, dict(self.storage)
                self._crawl(urls[:kill[0]], leaf, item_html, done)
                reach = int(len(done.stored) * kill[1])
                self.storage, stored = before, 0
                for url, value in done.events:  # (in order; a deletion is done when told, items may be lost)
                    if value is None:
                        self.storage.pop(url, None)
                    elif stored < reach:
                        self.storage[url], stored = value, stored + 1
                done.stored = done.stored[:reach]
            elif crawlers == 1:
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
            done.unchecked = set(done.stored) if named.all else set(named.urls)
            self.crawls.append(done)
            return done
        finally:
            for name in ("crawler_dedup.scrapy.recording", "crawler_dedup.scrapy.extension"):
                logging.getLogger(name).removeHandler(named)
            extension.in_worker = through_reactor
            for m, t in zip(modules, saved):
                m.time = t  # type: ignore[attr-defined]

    def _crawl(self, urls: list[str], leaf: bool, item_html: bool, done: Crawled) -> None:
        try:
            crawler = get_crawler(settings_dict={
                "ADDONS": {"crawler_dedup.addon.DedupAddon": 0}, "DEDUP_DROPLOG": str(self.droplog),
                "DEDUP_LOGSTATS_INTERVAL": 0, "DEDUP_WORKERS": 0, **self.store_settings, **done.settings})

            def superseded(url, canonical_url=None, **_):
                with self.lock:
                    done.removed.append((url, canonical_url))
                    done.events.append((url, None))
                    self.storage.pop(url, None)

            crawler.signals.connect(superseded, signal=page_superseded)
            ext = DedupExtension.of(crawler)
            ext.spider_opened(None)
            if self.opened is not None:
                self.opened()
            gone = False
            if done.cut is not None:  # (the process is gone once the last URL's commit is durable)
                record, cut = ext.recorder.record, done.cut
                ext.recorder.record = lambda verdict, *a, **k: verdict if verdict.url == cut else record(verdict, *a, **k)
            try:
                mw = DedupMiddleware.from_crawler(crawler)
                smw = DedupSpiderMiddleware.from_crawler(crawler)
                pipe = DedupPipeline.from_crawler(crawler)
                asked: set[str] = set()  # what Scrapy's duplicate filter has seen this crawl
                inflight = [0]  # responses in the downloader: a group commit waits for all of them
                ext.commits.busy = lambda: inflight[0]

                async def one(url):
                    try:
                        await self._fetch(url, mw, smw, pipe, leaf, item_html, done, asked)
                    finally:
                        inflight[0] -= 1
                        if ext.commits.pending and ext.commits.alone():
                            ext.commits.flush()

                async def all_of_them():
                    width = done.width or random.Random(len(urls)).choice((1, 2, 3))  # downloads at once
                    for i in range(0, len(urls), width):
                        inflight[0] = len(urls[i:i + width])
                        await asyncio.gather(*(one(u) for u in urls[i:i + width]))
                if not done.inside:
                    try:
                        asyncio.run(all_of_them())
                    except Killed:  # (one of crawlers racing, killed at its page's second look)
                        gone = done.killed = True
                else:
                    with CutInside(done.inside_last) as done.inside_cut:
                        try:
                            asyncio.run(all_of_them())
                        except Killed:
                            pass  # (nothing of that commit's pages reached the spider; a page that
                            # began no commit, a 304 unchanged, is cut after its decision instead)
            finally:
                if gone or (done.killed and done.crawlers == 1):
                    killed(ext, self.elsewhere)
                else:
                    ext.spider_closed(None, "finished")
                    ext.engine_stopped()
        except BaseException as exc:  # (a crawler thread's failure fails the crawl)
            done.errors.append(exc)
            if threading.current_thread() is threading.main_thread():
                raise

    async def _fetch(self, url, mw, smw, pipe, leaf, item_html, done: Crawled, asked: set[str]) -> None:
        if url in asked:
            return
        request = Request(url, meta={"dedup_leaf": True} if leaf else {})
        asked.add(url)
        for _ in range(4):  # the request, a redirect, and again without validators when the middleware asks
            cleaned = mw.process_request(request)
            if isinstance(cleaned, Request):  # (DEDUP_CLEAN_REQUESTS: scheduled again under its clean URL)
                if cleaned.url in asked:
                    return  # the duplicate filter drops it: never downloaded
                asked.add(cleaned.url)
                request, url = cleaned, cleaned.url
                mw.process_request(request)
            if url == done.cut and done.inside:
                done.inside_cut.armed = True
            if url == done.late:
                self.clock.offset += RUN_LEASE + 1  # (the kill's lease runs out while it is on its way)
                done.late = ""
            elif done.late:
                done.early.add(url)
            response = self.site.answer(request)
            done.statuses[url] = response.status
            done.validators[url] = (response.headers.get("ETag"), response.headers.get("Last-Modified"))
            if response.status == 301:  # RedirectMiddleware (600) answers it before ours (100) sees it
                target = response.headers["Location"].decode()
                if target in asked:
                    return
                asked.add(target)
                request = request.replace(url=target, meta={**request.meta, "redirect_urls": [url]})
                url = target
                continue
            if url in self.site.urls and response.status in (200, 304):
                art = self.site.articles[self.site.urls[url]]
                with self.lock:
                    done.served[url] = (art.number, art.version)
            try:
                out = await mw.process_response(request, response)
            except IgnoreRequest:
                if url != done.cut:
                    done.dropped.append(url)
                return
            if isinstance(out, Request):
                request = out
                continue
            if url == done.cut:
                return  # (killed after its commit: nothing of it reached the spider)
            if out.status != 200:
                return
            number = self.site.urls[url]
            item = {"url": url, "article": number, "version": self.site.articles[number].version}
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
                if not done.dry_run:  # (a dry run's items are a trial's: not stored)
                    self.storage[url] = (item["article"], item["version"])
                    done.events.append((url, self.storage[url]))
                done.stored.append(url)
            return
        raise AssertionError(f"{url} asked again and again")
