"""Downloader middleware: drop a duplicate response before the spider parses it (so its links
are never followed)."""

from __future__ import annotations

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse

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
        if verdict.action == "drop":
            raise IgnoreRequest(f"duplicate of {verdict.duplicate_of} ({verdict.reason})")
        return response
