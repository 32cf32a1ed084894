"""One Deduplicator and drop log per crawler, shared by the middleware and the pipeline.

Settings are checked when the first component is built, so a wrong value stops the crawl at
start. The index is opened on spider_opened, in the crawling process. LMDB forbids opening one
environment twice in a process, so crawlers of one process that use the same DEDUP_DIR share
one Deduplicator. Whatever fails later, a page is kept and the failure counted: nothing is
dropped without a drop-log line.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict

from scrapy import signals
from scrapy.utils.project import data_path

from .config import DedupConfig
from .dedup import Deduplicator, Verdict, extract_and_fingerprint, fingerprint_is_pure
from .droplog import DropLog, make_record, superseded_record
from .exceptions import ConfigError, DedupError
from .extract import canonical_link
from .signals import page_superseded

logger = logging.getLogger("crawler_dedup")

_ATTR = "_crawler_dedup_runtime"
_RECENT = 100_000  # URLs decided at the response stage, remembered for the item stage

_shared_lock = threading.Lock()
_shared: dict[str, list] = {}  # realpath of DEDUP_DIR -> [Deduplicator, users]


def get_runtime(crawler) -> "DedupRuntime":
    runtime = getattr(crawler, _ATTR, None)
    if runtime is None:
        try:
            runtime = DedupRuntime(crawler)
        except DedupError as exc:
            logger.error("crawler-dedup cannot start: %s", exc)
            raise
        setattr(crawler, _ATTR, runtime)
    return runtime


def _writable_dir(setting: str, value, path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ConfigError(setting, value, f"a writable directory ({exc.strerror or exc})") from None


def _appendable_file(setting: str, value, path: str) -> None:
    _writable_dir(setting, value, os.path.dirname(os.path.abspath(path)))
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(setting, value, f"a file that can be appended to ({exc.strerror or exc})") from None


def _spider_reset(spider) -> bool:
    """-a dedup_reset=1: checked like a setting, so a typo stops the crawl instead of being ignored."""
    value = getattr(spider, "dedup_reset", None)
    if value is None:
        return False
    from .config import _bool

    return _bool("-a dedup_reset", value)


def reset_index(path: str) -> str | None:
    """Move the index directory at `path` aside as `<path>.reset-<UTC time>` (never deleted);
    the moved path, or None when there was no index there."""
    if not os.path.isfile(os.path.join(path, "data.mdb")):
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, n = f"{path.rstrip(os.sep)}.reset-{stamp}", 1
    while os.path.exists(target):
        n += 1
        target = f"{path.rstrip(os.sep)}.reset-{stamp}-{n}"
    os.rename(path, target)
    return target


def _acquire(config: DedupConfig) -> Deduplicator:
    if config.backend != "lmdb":
        return Deduplicator(config).open()
    key = os.path.realpath(config.dir)
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None:
            entry = _shared[key] = [Deduplicator(config).open(), 0]
        elif entry[0].config != config:
            logger.warning("crawler-dedup: crawlers of this process share %s; using the first one's settings", key)
        entry[1] += 1
        return entry[0]


def _release(dedup: Deduplicator) -> None:
    if dedup.config.backend != "lmdb":
        dedup.close()
        return
    key = os.path.realpath(dedup.config.dir)
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None or entry[0] is not dedup:
            dedup.close()
            return
        entry[1] -= 1
        if entry[1] <= 0:
            del _shared[key]
            dedup.close()


class DedupRuntime:
    def __init__(self, crawler):
        self.crawler = crawler
        config = DedupConfig.from_settings(crawler.settings)
        overrides = {}
        if config.dir is None:
            overrides["dir"] = data_path("dedup", createdir=False)
        dir_ = overrides.get("dir", config.dir)
        if config.enabled:
            if config.backend == "lmdb" or config.droplog is None:
                _writable_dir("DEDUP_DIR", config.dir, dir_)
            if config.droplog is None:
                overrides["droplog"] = os.path.join(dir_, "droplog.jsonl")
            _appendable_file("DEDUP_DROPLOG", config.droplog, overrides.get("droplog", config.droplog))
        self.config = DedupConfig._checked({**config.__dict__, **overrides}) if overrides else config
        if self.config.enabled and (self.config.reset or _spider_reset(crawler.spider)):
            self._reset()
        if not self.config.debug:  # trafilatura logs several DEBUG lines per page
            logging.getLogger("trafilatura").setLevel(logging.INFO)
        self.dedup: Deduplicator | None = None
        self.droplog: DropLog | None = None
        self.pool = None  # worker processes for extraction (DEDUP_WORKERS)
        self._recent: OrderedDict[str, str] = OrderedDict()
        self._logged: set[str] = set()
        self._pending: list = []  # (Pending, Deferred): pages waiting for the group commit
        self._superseded_later: list = []  # page_superseded signals held until the spider closes
        self._flush_call = None
        if self.config.enabled:
            with _shared_lock:
                in_use = self.config.backend == "lmdb" and os.path.realpath(self.config.dir) in _shared
            if not in_use:
                # open once now, so an unusable index (other format, other k) stops the crawl here
                Deduplicator(self.config).open(new_run=False).close()
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
            crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    def _reset(self) -> None:
        """DEDUP_RESET / -a dedup_reset=1: start from an empty index, the old one moved aside."""
        if self.config.backend != "lmdb":
            logger.warning("crawler-dedup: DEDUP_RESET moves an LMDB DEDUP_DIR aside; with DEDUP_BACKEND=%s "
                           "it does nothing", self.config.backend)
            return
        with _shared_lock:
            if os.path.realpath(self.config.dir) in _shared:
                raise ConfigError("DEDUP_RESET", True, "an index no other crawler of this process is using "
                                  f"({self.config.dir} is open)")
        try:
            moved = reset_index(self.config.dir)
        except OSError as exc:
            raise ConfigError("DEDUP_RESET", True, f"a DEDUP_DIR that can be moved aside ({exc.strerror or exc})") from None
        if moved:
            logger.info("crawler-dedup: DEDUP_RESET: the index %s was moved to %s; starting from an empty index",
                        self.config.dir, moved)
        _writable_dir("DEDUP_DIR", self.config.dir, self.config.dir)
        _appendable_file("DEDUP_DROPLOG", self.config.droplog, self.config.droplog)

    # -- lifecycle ------------------------------------------------------------------------
    def spider_opened(self, spider):
        try:
            self.dedup = _acquire(self.config)
            self.droplog = DropLog(self.config.droplog)
        except (DedupError, OSError) as exc:
            # Scrapy ignores errors raised here: say it loudly, then keep every page (fail open)
            logger.error("crawler-dedup could not open %s (%s): every page will be kept unchecked",
                         self.config.dir, exc)
            self.crawler.stats.inc_value("dedup/errors/open")
            return
        if self.config.workers:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn: a fresh interpreter, never a fork of the crawler and its open LMDB environment
            self.pool = ProcessPoolExecutor(self.config.workers, mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_warm_worker)
        if self.config.logstats_interval:
            try:
                from scrapy.utils.asyncio import create_looping_call
            except ImportError:  # a Scrapy before 2.13: the reactor's LoopingCall
                from twisted.internet.task import LoopingCall as create_looping_call

            # like Scrapy's LogStats: a looping call on the reactor (or asyncio loop)
            self._prev_checked = 0
            self._logstats = create_looping_call(self.log_stats)
            self._logstats.start(self.config.logstats_interval, now=False)
        plan = self.dedup.index.plan
        logger.info(
            "Dedup on: %s index at %s (k=%d, %d tables), drop log %s%s",
            self.config.backend, self.dedup.index.store.location, plan.k, len(plan.tables),
            self.config.droplog, " [DRY RUN: duplicates are flagged, not dropped]" if self.config.dry_run else "",
        )

    def log_stats(self) -> None:
        """One periodic line from the stats: pages checked (and per minute since the last line),
        dropped, the drop rate."""
        stats = self.crawler.stats
        checked = stats.get_value("dedup/checked", 0)
        dropped = stats.get_value("dedup/dropped", 0)
        flagged = stats.get_value("dedup/flagged", 0)
        skipped = sum(v for k, v in stats.get_stats().items() if k.startswith("dedup/skipped/"))
        errors = sum(v for k, v in stats.get_stats().items() if k.startswith("dedup/errors/"))
        rate = (checked - self._prev_checked) * 60.0 / self.config.logstats_interval
        self._prev_checked = checked
        logger.info(
            "Dedup: checked %d pages (%d/min), dropped %d (%.1f%%), flagged %d, skipped %d, errors %d",
            checked, rate, dropped, 100.0 * dropped / checked if checked else 0.0, flagged, skipped, errors,
        )

    def spider_closed(self, spider, reason):
        task = getattr(self, "_logstats", None)
        if task is not None and task.running:
            task.stop()
        self.flush()  # normally empty: the engine waits for responses in the middlewares
        for args in self._superseded_later:  # every item of this run has gone through the pipelines now
            self.crawler.signals.send_catch_log(page_superseded, **args)
        self._superseded_later = []
        stats = self.crawler.stats
        checked = stats.get_value("dedup/checked", 0)
        dropped = stats.get_value("dedup/dropped", 0) + stats.get_value("dedup/flagged", 0)
        revisits = stats.get_value("dedup/revisits", 0)
        logger.info(
            "Dedup: %d pages checked, %d kept, %d %s (%.1f%%)%s; drop log: %s",
            checked, stats.get_value("dedup/kept", 0), dropped,
            "flagged" if self.config.dry_run else "dropped", 100.0 * dropped / checked if checked else 0.0,
            f"; {revisits} revisits: {stats.get_value('dedup/unchanged', 0)} unchanged, "
            f"{stats.get_value('dedup/updated', 0)} updated, {stats.get_value('dedup/revisits/copy', 0)} now "
            "copies of another URL's page" if revisits else "",
            self.config.droplog,
        )
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        if self.droplog is not None:
            self.droplog.close()
            self.droplog = None

    def engine_stopped(self):
        """Close the index (and so end the run) only now: Scrapy runs the spider_closed handlers
        side by side, and a feed export may still be uploading what this run passed on there.
        A run that never ends has its unchanged pages passed on again by the next crawl."""
        if self.dedup is not None:
            _release(self.dedup)
            self.dedup = None

    # -- one page -------------------------------------------------------------------------
    def decided_as_response(self, url: str) -> str | None:
        """How the middleware handled `url` in this crawl (kept, flagged, dont_dedup), if it did."""
        return self._recent.get(url) if url else None

    def remember(self, url: str, how: str) -> None:
        if not url:
            return
        self._recent[url] = how
        self._recent.move_to_end(url)
        if len(self._recent) > _RECENT:
            self._recent.popitem(last=False)

    def check(self, url: str, *, html=None, text=None, title=None, stage: str, item=None,
              fingerprinted=None, never_drop: bool = False, canonical: str | None = None) -> Verdict:
        """Decide one page now, in a transaction of its own (the item pipeline's way)."""
        if self.dedup is None:  # the index could not be opened: keep everything, counted
            verdict = Verdict(url=url, error="open")
        else:
            commits = self.dedup.commits
            verdict = self.dedup.check(url, html=html, text=text, title=title, stage=stage,
                                       fingerprinted=fingerprinted, never_drop=never_drop, canonical=canonical)
            self._count_commits(commits)
        self._finish(verdict, stage, item)
        return verdict

    def _count_commits(self, before: int) -> None:
        if self.dedup is not None and self.dedup.commits > before:
            self.crawler.stats.inc_value("dedup/commits", self.dedup.commits - before)

    def _finish(self, verdict: Verdict, stage: str, item=None) -> None:
        self.record(verdict, stage, item)
        if stage == "response" and verdict.fingerprint is not None and verdict.action != "drop":
            self.remember(verdict.url, "flagged" if verdict.action == "flag" else "kept")

    async def _decided(self, url: str, never_drop: bool, **page) -> Verdict:
        """A downloaded page through steps 1-4 here (unless a worker did them), then into the
        next group commit: its decision and drop-log line come once the commit is durable."""
        if self.dedup is None or self.config.commit_batch == 1 or not fingerprint_is_pure(self.config):
            # (TF-IDF, document images, LSI: a fingerprint depends on the pages kept before it,
            # so the page is fingerprinted and decided at once, in a commit of its own)
            return self.check(url, stage="response", never_drop=never_drop, **page)
        verdict, pending = self.dedup.prepare(url, stage="response", never_drop=never_drop, **page)
        if pending is None:
            self._finish(verdict, "response")
            return verdict
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet import defer, reactor

        waiting = defer.Deferred()
        self._pending.append((pending, waiting))
        if len(self._pending) >= self.config.commit_batch or self._alone():
            self.flush()
        elif self._flush_call is None:
            self._flush_call = reactor.callLater(self.config.commit_delay, self.flush)
        return await maybe_deferred_to_future(waiting)

    def _alone(self) -> bool:
        """No other request in the downloader (one request at a time, or the crawl's last
        pages): nothing would come to share the commit, so waiting would only slow the crawl."""
        try:
            active = self.crawler.engine.downloader.active
        except (AttributeError, RuntimeError):  # no engine (not crawling): cannot tell
            return False
        return len(active) <= len(self._pending)

    def flush(self) -> None:
        """Decide the waiting pages in one transaction and one commit, then release them.
        Whatever fails, every page is released, and a page that could not be recorded is kept."""
        if self._flush_call is not None and self._flush_call.active():
            self._flush_call.cancel()
        self._flush_call = None
        batch, self._pending = self._pending, []
        if not batch:
            return
        try:
            if self.dedup is None:  # closed under waiting pages: keep them
                verdicts = [Verdict(url=p.verdict.url, error="open") for p, _ in batch]
            else:
                commits = self.dedup.commits
                verdicts = self.dedup.decide_many([p for p, _ in batch])
                self._count_commits(commits)
        except Exception as exc:  # decide_many fails open itself: this is a bug, keep the pages
            self._error_once("internal", "Dedup could not decide %d pages, keeping them: %s", len(batch), exc)
            verdicts = [Verdict(url=p.verdict.url, error="internal") for p, _ in batch]
        for (_, waiting), verdict in zip(batch, verdicts):
            try:
                self._finish(verdict, "response")
            except Exception as exc:  # never a drop without its drop-log line, never a stuck page
                self._error_once("internal", "Dedup could not record %s, keeping it: %s", verdict.url, exc)
                self.crawler.stats.inc_value("dedup/errors/internal")
                verdict.action, verdict.error = "keep", "internal"
            waiting.callback(verdict)

    async def check_response(self, url: str, html, never_drop: bool = False) -> Verdict:
        """Check a downloaded page. With DEDUP_WORKERS, extraction (the costly step) runs in a
        worker process while the reactor goes on downloading. Lookup and insert stay here, in
        the crawler's thread, so pages are decided in order, each seeing the ones before it."""
        if (self.pool is None or self.dedup is None or self.dedup.allowed(url) or not html
                or len(html) > self.config.max_bytes):  # nothing to extract: decided here at once
            return await self._decided(url, never_drop, html=html)
        canonical = canonical_link(html, url) if self.config.canonical else None
        try:
            kind, value, title = await _in_worker(self.pool, extract_and_fingerprint, html, url, self.config)
        except Exception as exc:  # a worker died or the result did not come back
            kind, value, title = "error", exc, None
        if kind == "text":
            return await self._decided(url, never_drop, text=value, title=title, canonical=canonical)
        if kind == "fingerprint":
            return await self._decided(url, never_drop, title=title, fingerprinted=value, canonical=canonical)
        verdict = Verdict(url=url)
        if kind == "skipped":
            verdict.skipped = value
        else:
            verdict = self.dedup._failed(verdict, "extract", value)
        self.record(verdict, "response")
        return verdict

    def skip(self, url: str, why: str) -> None:
        self.crawler.stats.inc_value(f"dedup/skipped/{why}")
        if self.config.debug:
            logger.debug("Dedup skipped %s: %s", url, why)

    def _error_once(self, where: str, message: str, *args) -> None:
        if where not in self._logged:
            self._logged.add(where)
            logger.error(message + " (further %s errors are only counted)", *args, where)

    def record(self, verdict: Verdict, stage: str, item=None) -> None:
        stats = self.crawler.stats
        if verdict.error:
            stats.inc_value(f"dedup/errors/{verdict.error}")
            return
        if verdict.skipped:
            self.skip(verdict.url, verdict.skipped)
            return
        stats.inc_value("dedup/checked")
        if verdict.revisit:
            stats.inc_value("dedup/revisits")
            if verdict.revisit in ("unchanged", "updated"):
                stats.inc_value(f"dedup/{verdict.revisit}")
                if verdict.resent:
                    stats.inc_value("dedup/unchanged/resent")
            elif verdict.action != "keep":
                stats.inc_value("dedup/revisits/copy")
        if verdict.superseded:
            self._superseded(verdict, stage)
        if verdict.action == "keep":
            stats.inc_value("dedup/kept")
            if verdict.guard:
                stats.inc_value(f"dedup/guarded/{verdict.guard}")
            if self.config.debug:
                logger.debug("Dedup kept %s (fingerprint %016x)", verdict.url, verdict.fingerprint)
            return
        spider = getattr(self.crawler.spider, "name", None)
        keep_item = item if (item is not None and self.config.droplog_items) else None
        try:
            if self.droplog is None:
                raise OSError("the drop log is not open")
            self.droplog.write(make_record(verdict, stage, spider, keep_item))
        except (OSError, TypeError, ValueError) as exc:
            # no drop-log line, no drop: the page is kept
            stats.inc_value("dedup/errors/droplog")
            stats.inc_value("dedup/kept")
            self._error_once("droplog", "Dedup could not write the drop log %s, keeping %s: %s",
                             self.config.droplog, verdict.url, exc)
            verdict.action, verdict.error = "keep", "droplog"
            return
        if verdict.action == "flag":
            stats.inc_value("dedup/flagged")
            stats.inc_value(f"dedup/flagged/{verdict.reason}")
        else:
            stats.inc_value("dedup/dropped")
            stats.inc_value(f"dedup/dropped/{verdict.reason}")
        if verdict.reason == "unchanged":  # routine on a recrawl: one line a page only when debugging
            logger.debug("Dedup %s %s: unchanged since %s", "flagged" if verdict.action == "flag" else "dropped",
                         verdict.url, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(verdict.kept_at or 0)))
            return
        logger.info(
            "Dedup %s %s: %s duplicate of %s (distance %s, similarity %.2f)",
            "flagged" if verdict.action == "flag" else "dropped", verdict.url, verdict.reason,
            verdict.duplicate_of, verdict.distance, verdict.similarity or 0.0,
        )


    def _superseded(self, verdict: Verdict, stage: str) -> None:
        """The kept page this one replaced as its canonical URL: a drop-log line and a signal, so
        storage can remove it (the index already has)."""
        stats = self.crawler.stats
        stats.inc_value("dedup/superseded")
        record = superseded_record(verdict, stage, getattr(self.crawler.spider, "name", None), self.config.dry_run)
        try:
            if self.droplog is None:
                raise OSError("the drop log is not open")
            self.droplog.write(record)
        except (OSError, TypeError, ValueError) as exc:
            stats.inc_value("dedup/errors/droplog")
            self._error_once("droplog", "Dedup could not write the drop log %s (superseded %s): %s",
                             self.config.droplog, record["url"], exc)
        logger.info("Dedup: %s %s %s (its rel=canonical names it)", verdict.url,
                    "would supersede" if self.config.dry_run else "supersedes", record["url"])
        if self.config.dry_run:  # a dry run changes nothing: storage is not told to remove anything
            return
        args = {"url": record["url"], "canonical_url": verdict.url, "record": record}
        if self.dedup is not None and verdict.superseded.get("run") == self.dedup.run:
            # kept earlier in this crawl: its item may still be on its way to storage, so a
            # deletion now could come first; told when the spider closes instead
            self._superseded_later.append(args)
        else:
            self.crawler.signals.send_catch_log(page_superseded, **args)


def _warm_worker() -> None:
    import trafilatura  # noqa: F401  (the import takes a second: pay it before the first page)


def _in_worker(pool, fn, *args):
    """Await a worker's result from Scrapy code on any Twisted reactor."""
    from scrapy.utils.defer import maybe_deferred_to_future
    from twisted.internet import defer, reactor

    deferred = defer.Deferred()
    future = pool.submit(fn, *args)

    def done(fut):
        exc = fut.exception()
        if exc is not None:
            reactor.callFromThread(deferred.errback, exc)
        else:
            reactor.callFromThread(deferred.callback, fut.result())

    future.add_done_callback(done)
    return maybe_deferred_to_future(deferred)
