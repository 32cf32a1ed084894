"""`ADDONS = {"crawler_dedup.addon.DedupAddon": 0}` enables the middlewares, the pipeline and the
extension that owns the index."""

from __future__ import annotations

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
    @classmethod
    def from_crawler(cls, crawler):
        return cls()

    def update_settings(self, settings):
        # setdefault: a project that placed either component itself keeps its priority
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", MIDDLEWARE, MIDDLEWARE_PRIORITY)
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", PIPELINE, PIPELINE_PRIORITY)
        settings.setdefault_in_component_priority_dict("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARE, SPIDER_MIDDLEWARE_PRIORITY)
        # owns the index, drop log and stats (the components above reach it through the crawler)
        settings.setdefault_in_component_priority_dict("EXTENSIONS", EXTENSION, 0)
