"""One Deduplicator and drop log per crawler, shared by the middleware and the pipeline.

Settings are checked when the first component is built (a wrong value stops the crawl at
start); the index is opened on spider_opened, in the crawling process, and closed on
spider_closed.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections import OrderedDict

from scrapy import signals
from scrapy.utils.project import data_path

from .config import DedupConfig
from .dedup import Deduplicator, Verdict
from .droplog import DropLog, make_record
from .exceptions import ConfigError, DedupError

logger = logging.getLogger("crawler_dedup")

_ATTR = "_crawler_dedup_runtime"
_RECENT = 100_000  # URLs kept at the response stage remembered for the item stage


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


def _writable_dir(setting: str, value: str, path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ConfigError(setting, value, f"a writable directory ({exc.strerror or exc})") from None


class DedupRuntime:
    def __init__(self, crawler):
        self.crawler = crawler
        settings = crawler.settings
        config = DedupConfig.from_settings(settings)
        overrides = {}
        if config.dir is None:
            overrides["dir"] = data_path("dedup", createdir=False)
        dir_ = overrides.get("dir", config.dir)
        if config.enabled:
            if config.backend == "lmdb" or config.droplog is None:
                _writable_dir("DEDUP_DIR", config.dir, dir_)
            if config.droplog is None:
                overrides["droplog"] = os.path.join(dir_, "droplog.jsonl")
            else:
                parent = os.path.dirname(os.path.abspath(config.droplog))
                _writable_dir("DEDUP_DROPLOG", config.droplog, parent)
        self.config = DedupConfig._checked({**config.__dict__, **overrides}) if overrides else config
        if not self.config.debug:  # trafilatura logs several DEBUG lines per page
            logging.getLogger("trafilatura").setLevel(logging.INFO)
        self.dedup = Deduplicator(self.config)
        self.droplog: DropLog | None = None
        self._recent: OrderedDict[str, None] = OrderedDict()
        if self.config.enabled:
            # open once now so a store that is unusable (other format, other k) stops the crawl here
            Deduplicator(self.config).open().close()
            crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    # -- lifecycle ------------------------------------------------------------------------
    def spider_opened(self, spider):
        self.dedup.open()
        self.droplog = DropLog(self.config.droplog)
        plan = self.dedup.index.plan
        logger.info(
            "Dedup on: %s index at %s (k=%d, %d tables), drop log %s%s",
            self.config.backend, self.dedup.index.store.location, plan.k, len(plan.tables),
            self.config.droplog, " [DRY RUN: duplicates are flagged, not dropped]" if self.config.dry_run else "",
        )

    def spider_closed(self, spider, reason):
        stats = self.crawler.stats
        checked = stats.get_value("dedup/checked", 0)
        dropped = stats.get_value("dedup/dropped", 0) + stats.get_value("dedup/flagged", 0)
        logger.info(
            "Dedup: %d pages checked, %d kept, %d %s (%.1f%%); drop log: %s",
            checked, stats.get_value("dedup/kept", 0), dropped,
            "flagged" if self.config.dry_run else "dropped", 100.0 * dropped / checked if checked else 0.0,
            self.config.droplog,
        )
        self.dedup.close()
        if self.droplog is not None:
            self.droplog.close()
            self.droplog = None

    # -- one page -------------------------------------------------------------------------
    def seen_as_response(self, url: str) -> bool:
        return url in self._recent

    def check(self, url: str, *, html=None, text=None, stage: str, item=None) -> Verdict:
        verdict = self.dedup.check(url, html=html, text=text, stage=stage)
        self.record(verdict, stage, item)
        if stage == "response" and verdict.action == "keep" and verdict.fingerprint is not None:
            self._recent[url] = None
            if len(self._recent) > _RECENT:
                self._recent.popitem(last=False)
        return verdict

    def skip(self, url: str, why: str) -> None:
        self.crawler.stats.inc_value(f"dedup/skipped/{why}")
        if self.config.debug:
            logger.debug("Dedup skipped %s: %s", url, why)

    def record(self, verdict: Verdict, stage: str, item=None) -> None:
        stats = self.crawler.stats
        if verdict.error:
            stats.inc_value(f"dedup/errors/{verdict.error}")
            return
        if verdict.skipped:
            self.skip(verdict.url, verdict.skipped)
            return
        stats.inc_value("dedup/checked")
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
            self.droplog.write(make_record(verdict, stage, spider, keep_item))
        except (OSError, TypeError, ValueError) as exc:
            # no drop-log line, no drop: the page is kept
            stats.inc_value("dedup/errors/droplog")
            logger.error("Dedup could not write the drop log %s, keeping %s: %s", self.config.droplog, verdict.url, exc)
            verdict.action, verdict.error = "keep", "droplog"
            return
        if verdict.action == "flag":
            stats.inc_value("dedup/flagged")
            stats.inc_value(f"dedup/flagged/{verdict.reason}")
        else:
            stats.inc_value("dedup/dropped")
            stats.inc_value(f"dedup/dropped/{verdict.reason}")
        logger.info(
            "Dedup %s %s: %s duplicate of %s (distance %s, similarity %.2f)",
            "flagged" if verdict.action == "flag" else "dropped", verdict.url, verdict.reason,
            verdict.duplicate_of, verdict.distance, verdict.similarity or 0.0,
        )


__all__ = ["DedupRuntime", "get_runtime", "DedupError"]
