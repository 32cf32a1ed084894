"""`ADDONS = {"crawler_dedup.addon.DedupAddon": 0}` enables the middlewares, the pipeline and the
extension that owns the index, and puts the feed filter (feeds.py) first in every feed's
post-processing chain."""

from __future__ import annotations

import logging
from pathlib import Path

from ..config import SETTINGS
from ..exceptions import ConfigError
from . import feeds

logger = logging.getLogger(__name__)

# the public paths (the modules at the package's top), so a project that names a part itself
# names the same one
MIDDLEWARE = "crawler_dedup.middleware.DedupMiddleware"
PIPELINE = "crawler_dedup.pipeline.DedupPipeline"
SPIDER_MIDDLEWARE = "crawler_dedup.middleware.DedupSpiderMiddleware"
EXTENSION = "crawler_dedup.scrapy.extension.DedupExtension"
# 100: below HttpCompression (590) and Redirect (600), so it sees the final, decoded page
MIDDLEWARE_PRIORITY = 100
# 100: early, so storage pipelines never see a duplicate
PIPELINE_PRIORITY = 100
# 950: next to the spider, so it sees what the spider yields before other spider middlewares
SPIDER_MIDDLEWARE_PRIORITY = 950


class DedupAddon:
    def __init__(self, crawler=None):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def update_settings(self, settings):
        # setdefault: a project that placed either component itself keeps its priority
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", MIDDLEWARE, MIDDLEWARE_PRIORITY)
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", PIPELINE, PIPELINE_PRIORITY)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARE, SPIDER_MIDDLEWARE_PRIORITY)
        # owns the index, drop log and stats (the components above reach it through the crawler)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", EXTENSION, 0)
        if self.crawler is not None and _on(settings, "DEDUP_ENABLED") and _on(settings, "DEDUP_FEED_FILTER"):
            filter_feeds(settings, feeds.register(self.crawler))


def _on(settings, name: str) -> bool:
    setting = next(s for s in SETTINGS if s.name == name)
    try:
        return bool(setting.check(settings.get(name, setting.default)))
    except ConfigError:  # (the extension stops the crawl on it, with its message)
        return False


def filter_feeds(settings, token: str) -> None:
    """Each feed of FEEDS (`-o`/`-O` fill it before add-ons run) gets the feed filter first in its
    "postprocessing" chain, where it sees what the item exporter writes before a compressor does
    (Scrapy's PostProcessingManager wraps the file with the last plugin first, so the first one
    receives the exporter's writes), and this crawl's token; the user's plugins stay after it."""
    given = settings.getdict("FEEDS")
    if not given:
        return
    out = {}
    for uri, options in given.items():
        options = dict(options or {})
        chain = list(options.get("postprocessing") or [])
        if not any(p == feeds.PLUGIN or p is feeds.SupersededFilter for p in chain):
            fmt = str(options.get("format") or Path(str(uri)).suffix.removeprefix(".")).lower()
            if fmt in feeds.FILTERED:
                chain.insert(0, feeds.PLUGIN)
            else:  # (nothing to read it by: the feed is left as it is, said once at start)
                logger.warning("Dedup: feed %s is written as %r, which the add-on does not filter: pages superseded "
                               "later in the crawl may remain in it (JSON lines, JSON and CSV feeds are filtered)",
                               uri, fmt)
        if chain:
            options["postprocessing"] = chain
        options[feeds.TOKEN], options[feeds.URI] = token, str(uri)
        out[uri] = options
    settings.set("FEEDS", out, priority=settings.getpriority("FEEDS") or "project")
