"""Downloader middleware: drop a duplicate response before the spider parses it (so its links
are never followed). An unchanged revisit is the exception: the spider still parses it, so a
recrawl reaches the pages it links to, and DedupSpiderMiddleware drops the items it yields."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from .runtime import get_runtime


class DedupMiddleware:
    def __init__(self, runtime):
        self.runtime = runtime

    @classmethod
    def from_crawler(cls, crawler):
        runtime = get_runtime(crawler)
        if not runtime.config.enabled:
            raise NotConfigured("DEDUP_ENABLED is off")
        return cls(runtime)

    async def process_response(self, request, response):
        rt = self.runtime
        for key in ("dedup_unchanged", "dedup_revisit", "dedup_fingerprint"):
            request.meta.pop(key, None)  # a spider that copies response.meta into its requests passes them on
        if request.meta.get("dont_dedup"):
            rt.skip(response.url, "dont_dedup")
            rt.remember(response.url, "dont_dedup")  # and its items too
            return response
        if not 200 <= response.status < 300:
            rt.skip(response.url, "status")
            return response
        if not isinstance(response, HtmlResponse):
            rt.skip(response.url, "not_html")
            return response
        if not response.body:
            rt.skip(response.url, "empty")
            return response
        if len(response.body) > rt.config.max_bytes:
            rt.skip(response.url, "too_large")
            return response
        try:
            html = response.text
        except (UnicodeError, LookupError):
            rt.skip(response.url, "undecodable")
            return response
        verdict = await rt.check_response(response.url, html, never_drop=bool(request.meta.get("dedup_never_drop")))
        request.meta["dedup_fingerprint"] = verdict.fingerprint
        if verdict.revisit:
            request.meta["dedup_revisit"] = verdict.revisit
        if verdict.action == "drop" and verdict.reason == "unchanged":
            request.meta["dedup_unchanged"] = response.url  # its items go no further (DedupSpiderMiddleware)
            return response
        if verdict.action == "drop":
            raise IgnoreRequest(f"duplicate of {verdict.duplicate_of} ({verdict.reason})")
        return response


class DedupSpiderMiddleware(BaseSpiderMiddleware):
    """Drops the items the spider yields from an unchanged page (its drop-log line is written
    already); its requests go on, so the recrawl still follows its links."""

    @classmethod
    def from_crawler(cls, crawler):
        if not get_runtime(crawler).config.enabled:
            raise NotConfigured("DEDUP_ENABLED is off")
        return cls(crawler)

    def get_processed_item(self, item, response):
        if response is not None and response.meta.get("dedup_unchanged") == response.url:
            self.crawler.stats.inc_value("dedup/dropped_items/unchanged")
            return None
        return item
