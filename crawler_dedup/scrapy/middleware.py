"""Downloader middleware: drop a duplicate response before the spider parses it (so its links
are never followed). An unchanged revisit is the exception: the spider still parses it, so a
recrawl reaches the pages it links to, and DedupSpiderMiddleware drops the items it yields. A
recrawl's request carries its URL's validators, and a 304 is an unchanged revisit (conditional.py)."""

from __future__ import annotations

import logging

from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from . import conditional
from ..core.decide.cleaner import without_tracking
from ..core.index import revalidation
from ..core.verdict import Action, Failure, Reason, Skip
from .extension import DedupExtension
from .stats import CLEANED, CLEANED_PARAM, DROPPED_ITEMS_UNCHANGED, key


logger = logging.getLogger(__name__)


class DuplicateResponse(IgnoreRequest):
    """A downloaded page dropped as a near-duplicate of a kept page (its drop-log line is written)."""


class DedupMiddleware:
    def __init__(self, ext: DedupExtension):
        self.ext = ext

    @classmethod
    def from_crawler(cls, crawler):
        return cls(DedupExtension.enabled(crawler))

    def process_request(self, request):
        clean = self._cleaned(request)
        if clean is not None:  # (scheduled again: the duplicate filter drops a URL requested before)
            return clean
        try:
            conditional.ask(self.ext, request)
        except Exception as exc:  # (a bug must cost a download at most, never the request)
            self.ext.recorder.error_once("conditional", "Dedup could not make %s conditional, asking unconditional: %s",
                                         request.url, exc)
            self.ext.recorder.failure(Failure.INTERNAL)
        return None

    def _cleaned(self, request):
        """The request under its URL without tracking parameters (DEDUP_CLEAN_REQUESTS), or None."""
        cfg = self.ext.config
        # a redirect's target is the server's choice: cleaned, a site that adds tracking parameters
        # by redirect would send it back to the URL already asked, and the duplicate filter would lose it
        if (not cfg.clean_requests or request.dont_filter or request.meta.get("dont_dedup")
                or request.meta.get("redirect_urls") or any(p.search(request.url) for p in cfg.allow)):
            return None
        got = without_tracking(request.url, cfg.tracking_params)
        if got is None or revalidation.kept_under(self.ext.dedup.index if self.ext.dedup else None, request.url):
            return None
        url, taken = got
        stats = self.ext.stats
        stats.inc_value(CLEANED)
        for name in taken:
            stats.inc_value(key(CLEANED_PARAM, name.lower()))
        logger.debug("Dedup cleaned %s -> %s", request.url, url)
        return request.replace(url=url)

    async def process_response(self, request, response):
        rt = self.ext
        for key in ("dedup_unchanged", "dedup_revisit", "dedup_fingerprint"):
            request.meta.pop(key, None)  # a spider that copies response.meta into its requests passes them on
        sent = conditional.answered(request, response)
        if sent is not None:
            try:
                return await conditional.not_modified(rt, request, response, sent, DuplicateResponse)
            except DuplicateResponse:
                raise
            except Exception as exc:  # a 304 it cannot use: the page is downloaded, never lost
                rt.recorder.error_once("not_modified", "Dedup could not use the 304 for %s, asking again: %s",
                                       request.url, exc)
                rt.recorder.failure(Failure.INTERNAL)
                return conditional.refetch(rt, request, sent)
        refused = conditional.refused(request, response)
        if refused is not None:  # (a 412, a firewall: the page itself may be fine)
            return conditional.refetch(rt, request, refused, refused=True)
        if request.meta.get("dont_dedup"):
            rt.skip(response.url, Skip.DONT_DEDUP)
            rt.remember(response.url, "dont_dedup")  # and its items too
            return response
        if not 200 <= response.status < 300:
            rt.skip(response.url, Skip.STATUS)
            return response
        if not isinstance(response, HtmlResponse):
            rt.skip(response.url, Skip.NOT_HTML)
            return response
        if not response.body:
            rt.skip(response.url, Skip.EMPTY)
            return response
        if len(response.body) > rt.config.max_bytes:
            rt.skip(response.url, Skip.TOO_LARGE)
            return response
        try:
            html = response.text
        except (UnicodeError, LookupError):
            rt.skip(response.url, Skip.UNDECODABLE)
            return response
        verdict = await rt.check_response(response.url, html, never_drop=bool(request.meta.get("dedup_never_drop")),
                                          body=response.body, fetched=conditional.fetched(rt, request, response))
        request.meta["dedup_fingerprint"] = verdict.fingerprint
        if verdict.revisit:
            request.meta["dedup_revisit"] = verdict.revisit
        if verdict.action == Action.DROP and verdict.reason == Reason.UNCHANGED:
            request.meta["dedup_unchanged"] = response.url  # its items go no further (DedupSpiderMiddleware)
            return response
        if verdict.action == Action.DROP:
            raise DuplicateResponse(f"duplicate of {verdict.duplicate_of} ({verdict.reason})")
        return response


class DedupSpiderMiddleware(BaseSpiderMiddleware):
    """Drops the items the spider yields from an unchanged page (its drop-log line is written
    already); its requests go on, so the recrawl still follows its links."""

    @classmethod
    def from_crawler(cls, crawler):
        DedupExtension.enabled(crawler)
        return cls(crawler)

    def get_processed_item(self, item, response):
        if response is not None and response.meta.get("dedup_unchanged") == response.url:
            self.crawler.stats.inc_value(DROPPED_ITEMS_UNCHANGED)
            return None
        return item
