"""`ADDONS = {"crawler_dedup.addon.DedupAddon": 0}` enables the middleware and the pipeline."""

from __future__ import annotations

MIDDLEWARE = "crawler_dedup.middleware.DedupMiddleware"
PIPELINE = "crawler_dedup.pipeline.DedupPipeline"
# 100: below HttpCompression (590) and Redirect (600), so it sees the final, decoded page
MIDDLEWARE_PRIORITY = 100
# 100: early, so storage pipelines never see a duplicate
PIPELINE_PRIORITY = 100


class DedupAddon:
    @classmethod
    def from_crawler(cls, crawler):
        return cls()

    def update_settings(self, settings):
        # setdefault: a project that placed either component itself keeps its priority
        settings.setdefault_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", MIDDLEWARE, MIDDLEWARE_PRIORITY)
        settings.setdefault_in_component_priority_dict("ITEM_PIPELINES", PIPELINE, PIPELINE_PRIORITY)
