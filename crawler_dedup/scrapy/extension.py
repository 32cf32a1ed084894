"""The Scrapy extension that owns one crawl's Deduplicator, drop log and stats.

The middlewares and the pipeline hand it pages (`DedupExtension.of(crawler)`); it decides them
(batching.py: group commit, workers) and hands each verdict to its Recorder (recording.py: stats,
drop-log line, log line, page_superseded). Settings are checked when the first component is built, so a wrong
value stops the crawl at start; the index is opened on spider_opened. Whatever fails later, a
page is kept and the failure counted: nothing is dropped without a drop-log line.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from scrapy import signals
from scrapy.exceptions import NotConfigured

from ..config import DedupConfig, default_droplog
from ..core.dedup import Verdict, extract_and_fingerprint
from ..core.index.fetches import Fetch
from ..core.page.extract import canonical_link
from ..core.page.fingerprint import Fingerprinted, body_digest
from ..core.verdict import Action, Failure, Skip, Stage, Step
from ..deduplicator import Deduplicator
from ..exceptions import ConfigError, DedupError, StoreError
from ..workers import WorkerPool
from . import conditional, opening
from .batching import GroupCommit, in_worker
from .recording import Recorder
from .stats import COMMITS, FAST_SAME_BYTES, WORKERS_RESTARTED

logger = logging.getLogger(__name__)

_ATTR = "_crawler_dedup_extension"
_RECENT = 100_000  # URLs decided at the response stage, remembered for the item stage


class _SaidOnce(logging.Filter):
    """Drops the record of an error whose one line was logged already: the crawl stops on it,
    and asyncio's "Task exception was never retrieved" (or Twisted's unhandled error) would
    print its traceback after that line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not getattr(exc, "_said", False)


_SAID = _SaidOnce()


def _said_once(exc: Exception) -> None:
    exc._said = True  # type: ignore[attr-defined]
    for name in ("asyncio", "twisted", "scrapy.utils.log", "scrapy.crawler"):
        if _SAID not in logging.getLogger(name).filters:
            logging.getLogger(name).addFilter(_SAID)


class DedupExtension:
    @classmethod
    def from_crawler(cls, crawler) -> "DedupExtension":
        return cls.enabled(crawler)

    @classmethod
    def enabled(cls, crawler) -> "DedupExtension":
        """The crawler's instance, for a component that only works when dedup is on."""
        ext = cls.of(crawler)
        if not ext.config.enabled:
            raise NotConfigured("DEDUP_ENABLED is off")
        return ext

    @classmethod
    def of(cls, crawler) -> "DedupExtension":
        """The crawler's one instance (made by whichever component asks first)."""
        ext = getattr(crawler, _ATTR, None)
        if ext is None:
            try:
                ext = cls(crawler)
            except DedupError as exc:
                logger.error("crawler-dedup cannot start: %s", exc)
                _said_once(exc)
                raise
            setattr(crawler, _ATTR, ext)
        return ext

    def __init__(self, crawler):
        self.crawler, self.stats = crawler, crawler.stats
        allow_file = crawler.settings.get("DEDUP_ALLOW_FILE")  # (found before it is read)
        self.config = self._configure(DedupConfig.from_settings(
            crawler.settings, **({"allow_file": opening.project_file(str(allow_file))} if allow_file else {})))
        reset = self.config.enabled and (self.config.reset or opening.spider_reset(crawler.spider))
        self.scratch: str | None = None  # a dry run's copy of the index, removed at the end
        if self.config.enabled and self.config.dry_run:
            self.config = self._on_a_copy(self.config, empty=reset)
        elif reset:
            self._reset()
        for name in self.config.idle_settings() if self.config.enabled else ():
            logger.warning("crawler-dedup: %s is set but has no effect with DEDUP_BACKEND=%s%s", name,
                           self.config.backend, " (set DEDUP_BACKEND=redis to use Redis)" if "REDIS" in name else "")
        if not self.config.debug:  # trafilatura logs several DEBUG lines per page
            logging.getLogger("trafilatura").setLevel(logging.INFO)
        self.dedup: Deduplicator | None = None
        self.recorder = Recorder(crawler, self.config)
        self.pool: WorkerPool | None = None  # worker processes for extraction (DEDUP_WORKERS)
        self.commits = GroupCommit(self._decide_batch, lambda v: self.finish(v, Stage.RESPONSE), self.config.commit_batch,
                                   self.config.commit_delay, self._downloads)
        self._recent: OrderedDict[str, str] = OrderedDict()
        self._logstats = None
        # why this crawl sends no conditional request (Scrapy's HTTP cache would keep 304s)
        self.conditional_blocked = conditional.blocked_by(crawler.settings) if self.config.conditional else None
        if self.config.enabled:
            if not opening.in_use(self.config):
                # open once now, so an unusable index (other format, other k) stops the crawl here
                # (a StoreError: of() logs one line, no traceback, and the start fails, so `scrapy
                # crawl` exits 1 for a scheduled job; crawling on unchecked would store every duplicate)
                try:
                    Deduplicator(self.config).open(new_run=False).close()
                except BaseException:
                    self.engine_stopped()  # (a dry run's scratch copy goes)
                    raise
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)
            crawler.signals.connect(self.engine_stopped, signal=signals.engine_stopped)

    @staticmethod
    def _configure(config: DedupConfig) -> DedupConfig:
        """Default paths under Scrapy's data dir, each checked usable before the crawl starts."""
        overrides: dict[str, str] = {}
        dir_ = overrides["dir"] = opening.in_data_dir(str(config.dir or "dedup"))
        if config.droplog is not None:
            overrides["droplog"] = opening.in_data_dir(str(config.droplog))
        if config.enabled:
            if config.backend == "lmdb":
                opening.not_a_scan_out(config.dir, dir_)
            if config.backend == "lmdb" or config.droplog is None:
                opening.writable_dir("DEDUP_DIR", config.dir, dir_)
            if config.droplog is None:
                overrides["droplog"] = default_droplog(dir_, config.backend, config.redis_prefix)
            opening.appendable_file("DEDUP_DROPLOG", config.droplog, overrides["droplog"])
        return DedupConfig._checked({**config.__dict__, **overrides})

    def _on_a_copy(self, cfg: DedupConfig, empty: bool) -> DedupConfig:
        """DEDUP_DRY_RUN: the crawl decides on a scratch copy of the index (its pages, runs and
        validators filed there), so the index and the next real crawl's drops are as they were; the
        drop log is the index's own (`flagged` lines: `inspect --action flagged`)."""
        if cfg.backend == "redis":
            raise ConfigError("DEDUP_DRY_RUN", True, "an LMDB or memory index: a dry run decides on a scratch copy "
                              "of the index, which a shared Redis index cannot be given; try settings on an LMDB "
                              "index built the same way (crawler-dedup index add) or run with DEDUP_BACKEND=memory")
        if cfg.backend != "lmdb":
            return cfg  # (memory: gone at exit anyway)
        from ..stores.lmdb.scratch import scratch_copy

        try:
            self.scratch = scratch_copy(str(cfg.dir), empty=empty)
        except OSError as exc:
            raise ConfigError("DEDUP_DRY_RUN", True, f"room beside {cfg.dir} for a scratch copy ({exc})") from None
        logger.info("crawler-dedup: DEDUP_DRY_RUN: deciding on a scratch copy of %s (%s), removed at the end; "
                    "the index stays as it was", cfg.dir, self.scratch)
        return DedupConfig._checked({**cfg.__dict__, "dir": self.scratch})

    def _reset(self) -> None:
        """DEDUP_RESET / -a dedup_reset=1: start from an empty index, the old one moved aside."""
        cfg = self.config
        dir_, droplog = str(cfg.dir), str(cfg.droplog)  # both set by _configure
        if cfg.backend != "lmdb":
            logger.warning("crawler-dedup: DEDUP_RESET moves an LMDB DEDUP_DIR aside; with DEDUP_BACKEND=%s "
                           "it does nothing (other crawlers may use the index): to start over, give this crawl "
                           "a new DEDUP_REDIS_PREFIX", cfg.backend)
            return
        if opening.in_use(cfg):
            raise ConfigError("DEDUP_RESET", True, f"an index no other crawler of this process is using ({cfg.dir} is open)")
        try:
            moved = opening.reset_index(dir_)
        except OSError as exc:
            raise ConfigError("DEDUP_RESET", True, f"a DEDUP_DIR that can be moved aside ({exc.strerror or exc})") from None
        except StoreError as exc:  # another process writes it: moving it aside would lose its writes
            raise ConfigError("DEDUP_RESET", True, f"an index no other process is using ({exc})") from None
        if moved:
            logger.info("crawler-dedup: DEDUP_RESET: the index %s was moved to %s; starting from an empty index",
                        cfg.dir, moved)
        opening.writable_dir("DEDUP_DIR", cfg.dir, dir_)
        opening.appendable_file("DEDUP_DROPLOG", cfg.droplog, droplog)

    # -- lifecycle ------------------------------------------------------------------------
    def spider_opened(self, spider):
        try:
            self.dedup = opening.acquire(self.config)
            self.recorder.open()
        except (DedupError, OSError) as exc:
            # Scrapy ignores errors raised here: say it loudly, then keep every page (fail open)
            logger.error("crawler-dedup could not open %s (%s): every page will be kept unchecked",
                         self.config.dir, exc)
            self.recorder.failure(Failure.OPEN)
            return
        workers = self.config.worker_count()
        if workers:
            try:
                self.pool = WorkerPool(workers)
            except OSError as exc:  # (no processes to be had): extraction in the crawler's thread
                logger.warning("crawler-dedup could not start %d worker processes (%s): extraction runs in the "
                               "crawler's thread", workers, exc)
        if self.config.logstats_interval:
            from scrapy.utils.asyncio import create_looping_call

            self._prev_checked = 0  # like Scrapy's LogStats: a looping call on the reactor or asyncio loop
            self._logstats = create_looping_call(self.log_stats)
            self._logstats.start(self.config.logstats_interval, now=False)
        assert self.dedup.index is not None
        plan = self.dedup.index.plan
        logger.info(
            "Dedup on: %s index at %s (k=%d, %d tables), drop log %s%s",
            self.config.backend, self.dedup.index.store.location, plan.k, len(plan.tables),
            self.config.droplog, " [DRY RUN: duplicates are flagged, not dropped]" if self.config.dry_run else "",
        )
        if self.conditional_blocked:
            logger.info("Dedup: no conditional requests in this crawl: %s", self.conditional_blocked)
        if self.config.site_boilerplate and not self.config.store_text:  # (as a Redis index is run: not a fault)
            logger.info("Dedup: DEDUP_STORE_TEXT is off, so the site-boilerplate rule (DEDUP_SITE_BOILERPLATE) is too: "
                        "pages are compared on their whole texts")

    def log_stats(self) -> None:
        self._prev_checked = self.recorder.periodic_line(self.config.logstats_interval, self._prev_checked)

    def spider_closed(self, spider, reason):
        if self._logstats is not None and self._logstats.running:
            self._logstats.stop()
        self.commits.flush()  # normally empty: the engine waits for responses in the middlewares
        self.recorder.closing_line()
        if self.pool is not None:
            if self.pool.restarts:
                self.stats.set_value(WORKERS_RESTARTED, self.pool.restarts)
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
        self.recorder.close()

    def engine_stopped(self):
        """Close the index (and so end the run) only now: Scrapy runs the spider_closed handlers
        side by side, and a feed export may still be uploading what this run passed on there.
        A run that never ends has its unchanged pages passed on again by the next crawl."""
        if self.dedup is not None:
            opening.release(self.dedup)
            self.dedup = None
        if self.scratch is not None:
            from ..stores.lmdb.scratch import remove_scratch

            remove_scratch(self.scratch)
            self.scratch = None

    # -- pages ------------------------------------------------------------------------------
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

    def check(self, url: str, *, stage: Stage, item=None, **page) -> Verdict:
        """Decide one page now, in a transaction of its own (the item pipeline's way)."""
        if self.dedup is None:  # the index could not be opened: keep everything, counted
            verdict = Verdict(url=url, error=Failure.OPEN)
        else:
            commits = self.dedup.commits
            verdict = self.dedup.check(url, stage=stage, **page)
            self._count_commits(commits)
        return self.finish(verdict, stage, item)

    async def check_response(self, url: str, html, never_drop: bool = False, body: bytes | None = None,
                             fetched: Fetch | None = None) -> Verdict:
        """Check a downloaded page. Its bytes seen before (a kept page's response): decided from
        what that page stored, without extraction (Deduplicator.known). Else, with workers,
        extraction (the costly step) runs in a worker process while the reactor goes on
        downloading. Lookup and insert stay here, in the crawler's thread, so pages are decided
        in order, each seeing the ones before it. `fetched`: the response's validators, filed with
        the decision for the URL's next conditional request (conditional.py)."""
        digest = None
        if body and self.dedup is not None and not self.dedup.allowed(url) and len(body) <= self.config.max_bytes:
            digest = fetched.digest if fetched is not None else body_digest(body)
            known = self.dedup.known(digest)
            if known is not None:
                self.recorder.inc(FAST_SAME_BYTES)
                return await self._decided(url, never_drop, html=html, title=known.title, fingerprinted=known,
                                           body=digest, fetched=fetched)
        if (self.pool is None or self.dedup is None or self.dedup.allowed(url) or not html
                or len(html) > self.config.max_bytes):  # nothing to extract: decided here at once
            return await self._decided(url, never_drop, html=html, body=digest, fetched=fetched)
        canonical = (canonical_link(html, url) or "") if self.config.canonical else None  # ("": none, known)
        try:
            kind, value, title = await in_worker(self.pool, extract_and_fingerprint, html, url, self.config)
        except Exception as exc:  # a worker died or the result did not come back
            kind, value, title = Step.ERROR, exc, None
        if kind == Step.TEXT:
            return await self._decided(url, never_drop, text=value, title=title, canonical=canonical, body=digest,
                                       fetched=fetched)
        if kind == Step.FINGERPRINT:
            return await self._decided(url, never_drop, title=title, fingerprinted=value, canonical=canonical,
                                       body=digest, fetched=fetched)
        verdict = Verdict(url=url)
        if kind == Step.SKIPPED:
            verdict = verdict.but(skipped=Skip(value))
        else:
            verdict = self.dedup.failed(verdict, Failure.EXTRACT, value)
        return self.finish(verdict, Stage.RESPONSE)

    async def check_not_modified(self, url: str, fp: Fingerprinted, never_drop: bool = False,
                                 renewed: Fetch | None = None) -> Verdict:
        """A 304 to a conditional request: decided as its kept page again (Deduplicator.not_modified);
        `renewed`: the URL's entry with the new validators the 304 carried, filed with the decision."""
        return await self._decided(url, never_drop, title=fp.title, fingerprinted=fp, fetched=renewed)

    async def _decided(self, url: str, never_drop: bool, **page) -> Verdict:
        """A downloaded page through steps 1-4 here (unless a worker did them), then into the
        next group commit: its decision and drop-log line come once the commit is durable."""
        if self.dedup is None or self.config.commit_batch == 1 or not self.dedup.pure:
            # (a plugin that learns from kept pages: fingerprinted and decided at once, alone)
            return self.check(url, stage=Stage.RESPONSE, never_drop=never_drop, **page)
        verdict, pending = self.dedup.prepare(url, stage=Stage.RESPONSE, never_drop=never_drop, **page)
        if pending is None:
            return self.finish(verdict, Stage.RESPONSE)
        return await self.commits.submit(pending)

    def _decide_batch(self, batch) -> list[Verdict]:
        if self.dedup is None:  # closed under waiting pages: keep them
            return [p.verdict.kept_because(Failure.OPEN) for p in batch]
        commits = self.dedup.commits
        verdicts = self.dedup.decide_many(batch)
        self._count_commits(commits)
        return verdicts

    def _downloads(self) -> int | None:
        try:
            return len(self.crawler.engine.downloader.active)
        except (AttributeError, RuntimeError):  # no engine (not crawling): cannot tell
            return None

    def _count_commits(self, before: int) -> None:
        if self.dedup is not None and self.dedup.commits > before:
            self.recorder.inc(COMMITS, self.dedup.commits - before)

    # -- recording --------------------------------------------------------------------------
    def skip(self, url: str, why: Skip | str) -> None:
        self.recorder.skip(url, why)

    def finish(self, verdict: Verdict, stage: Stage, item=None) -> Verdict:
        """Record the verdict (stats, drop log); the verdict as recorded: a drop whose drop-log
        line could not be written is a keep. Never raises: every path of a page (the pipeline's,
        the group commit's, a worker's) keeps it when recording fails."""
        try:
            verdict = self.recorder.record(verdict, stage, item, self.dedup.run if self.dedup is not None else 0)
        except Exception as exc:  # never a drop without its drop-log line, never a failed request
            self.recorder.error_once("internal", "Dedup could not record %s, keeping it: %s", verdict.url, exc)
            self.recorder.failure(Failure.INTERNAL)
            return verdict.kept_because(Failure.INTERNAL)
        if stage == Stage.RESPONSE and verdict.fingerprint is not None and verdict.action != Action.DROP:
            self.remember(verdict.url, "flagged" if verdict.action == Action.FLAG else "kept")
        return verdict
