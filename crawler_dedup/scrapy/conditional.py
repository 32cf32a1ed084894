"""Conditional requests, the Scrapy side (DEDUP_CONDITIONAL): the downloader middleware puts the
validators of a URL's last response on its request, and turns the server's `304 Not Modified`
into the decision an unchanged page gets; a 200 is decided by its text, as ever. The index's
side is core/index/revalidation.py, what it keeps of a response core/index/fetches.py.

A 304 has no body, and a recrawl still parses an unchanged page so that it follows its links.
So a request goes out conditional only when its 304 can be handed on as the page it was: the
index keeps a compressed copy of the body (DEDUP_CONDITIONAL_COPY), or nothing is to be parsed
(a request marked `dedup_leaf` whose unchanged page is dropped).
"""

from __future__ import annotations

import time

from scrapy.http import HtmlResponse, Request

from ..core.index.fetches import IF_HEADERS, Fetch, from_response
from ..core.page.fingerprint import body_digest
from ..core.verdict import Action, Reason
from .stats import CONDITIONAL, CONDITIONAL_REFUSED, NOT_MODIFIED, NOT_MODIFIED_BYTES, REFETCHED

SENT = "dedup_conditional"  # meta: the validators this middleware sent ({"url", "headers"}); False: never
LEAF = "dedup_leaf"  # meta: nothing on the page is to be followed (no copy needed for its 304)
COPY_FLAG = "dedup_copy"  # the flag of a response built from the kept copy
REFUSED = "dedup_conditional_refused"  # meta: asked again after the server refused our validators


def blocked_by(settings) -> str | None:
    """Why this crawl sends no conditional request (None: it may). Scrapy's HTTP cache answers
    revisits itself: DummyPolicy would store the server's bodiless 304 as the page for every
    later crawl, and RFC2616Policy, which revalidates what it holds with its own validators, would
    turn a 304 to the index's newer validators into its own older copy."""
    if not settings.getbool("HTTPCACHE_ENABLED"):
        return None
    return (f"HTTPCACHE_ENABLED (HTTPCACHE_POLICY={settings.get('HTTPCACHE_POLICY')}): the cache answers "
            "revisits itself, and a 304 to the index's validators would reach it as its own older copy or be "
            "stored as the page")


def ask(rt, request: Request) -> None:
    """Put the URL's validators on a recrawl's request, when a 304 could stand for its page."""
    sent = request.meta.get(SENT)
    if sent is False:
        return
    if isinstance(sent, dict):
        if sent.get("url") == request.url:  # a retry of our own request: they are on it still
            return
        for name, value in sent.get("headers", {}).items():  # a redirect copied them onto another URL
            if request.headers.get(name) == value.encode("latin-1"):
                del request.headers[name]
        del request.meta[SENT]
    cfg, dedup = rt.config, rt.dedup
    if (dedup is None or not cfg.conditional or rt.conditional_blocked or cfg.revisit != "update"
            or request.method != "GET" or request.meta.get("dont_dedup") or any(h in request.headers for h in IF_HEADERS)
            or dedup.allowed(request.url)):
        return
    leaf = bool(request.meta.get(LEAF))
    if not leaf and not cfg.keeps_copies():  # nothing could stand in for its body: no lookup either
        return
    found = dedup.fetch_entry(request.url)
    if found is None:
        return
    entry, killed = found
    age = time.time() - entry.fetched
    if not entry.validators or (cfg.conditional_max_age and age > cfg.conditional_max_age):
        return
    if cfg.window and time.time() - entry.kept > cfg.window:  # (its kept page no longer matches)
        return
    never_drop = bool(request.meta.get("dedup_never_drop"))
    if entry.copy_of:  # a dropped copy: a 304 drops it again, as its first crawl did (nothing to parse)
        if cfg.dry_run or never_drop or entry.run < dedup.settings_since:
            return  # (dropped under other deciding settings: decided again from its text)
    elif entry.copy is None and (not leaf or killed or cfg.unchanged == "keep" or cfg.dry_run or never_drop):
        return  # its 304 would leave the spider nothing to parse
    headers = entry.headers()
    for name, value in headers.items():
        request.headers[name] = value.encode("latin-1")  # as the server sent it (Scrapy would send a str as UTF-8)
    request.meta[SENT] = {"url": request.url, "headers": headers}
    rt.recorder.inc(CONDITIONAL)


def answered(request: Request, response) -> dict | None:
    """The validators a 304 answers (ours, sent for this URL), else None (not ours to read)."""
    sent = request.meta.get(SENT)
    if response.status != 304 or not isinstance(sent, dict) or sent.get("url") != request.url:
        return None
    return sent


# 4xx answers to a request carrying our validators that say nothing of the page itself: it was
# gone (404, 410), or the server is busy (429: Scrapy's retry middleware's)
_NOT_THE_VALIDATORS = frozenset((404, 410, 429))


def refused(request: Request, response) -> dict | None:
    """The validators a 4xx refused (a 412 Precondition Failed, a firewall refusing replayed
    validator bytes): ours, sent for this URL; else None. The request goes out again without them."""
    sent = request.meta.get(SENT)
    if (not 400 <= response.status < 500 or response.status in _NOT_THE_VALIDATORS or not isinstance(sent, dict)
            or sent.get("url") != request.url):
        return None
    return sent


async def not_modified(rt, request: Request, response, sent: dict, duplicate: type[Exception]):
    """The 304's page decided as an unchanged revisit: the kept copy for the spider to parse (its
    items dropped), `duplicate` raised when there is nothing to parse, or the request again,
    unconditional, when the 304 cannot stand for the page."""
    never_drop, leaf = bool(request.meta.get("dedup_never_drop")), bool(request.meta.get(LEAF))
    got = rt.dedup.not_modified(request.url, sent["headers"]) if rt.dedup is not None else None
    if got is None:
        return refetch(rt, request, sent)
    fp, entry, passed_on = got
    page = entry.page()
    if page is None and (passed_on or never_drop or not (leaf or entry.copy_of)):  # (its copy went, or is damaged)
        return refetch(rt, request, sent)
    fp.bodiless = page is None  # (a killed run's page found killed only now: asked in full, not resent from nothing)
    verdict = await rt.check_not_modified(request.url, fp, never_drop, entry.renewed(headers_of(response)))
    request.meta["dedup_fingerprint"] = verdict.fingerprint
    if verdict.revisit:
        request.meta["dedup_revisit"] = verdict.revisit
    if verdict.reason == Reason.UNCHANGED or verdict.measure == "not-modified":  # (a kept page's, a copy's)
        rt.recorder.inc(NOT_MODIFIED)
        rt.recorder.inc(NOT_MODIFIED_BYTES, entry.length)
    dropped = verdict.action == Action.DROP
    if dropped and verdict.reason != Reason.UNCHANGED:
        raise duplicate(f"duplicate of {verdict.duplicate_of} ({verdict.reason})")
    if dropped and (page is None or leaf):  # nothing on it to follow
        raise duplicate(f"not modified since {request.url} was kept (304; a dedup_leaf request)")
    if page is None:
        return refetch(rt, request, sent)  # kept after all (a failure): its body is wanted
    if dropped:
        request.meta["dedup_unchanged"] = request.url  # its items go no further (DedupSpiderMiddleware)
    return copy_response(request, response, entry, page)


def copy_response(request: Request, response, entry: Fetch, page: bytes) -> HtmlResponse:
    """The page as it was kept, for the spider: its status and type, the 304's connection details."""
    headers = {"Content-Type": entry.content_type} if entry.content_type else {}
    return HtmlResponse(url=request.url, status=entry.status, headers=headers, body=page, request=request,
                        flags=[*response.flags, COPY_FLAG], ip_address=response.ip_address,
                        protocol=response.protocol)


def refetch(rt, request: Request, sent: dict, refused: bool = False) -> Request:
    """The request again without our validators (the scheduler takes it anew). `refused`: the
    server refused them: its answer is kept without validators, so the next crawl asks plainly."""
    again = request.replace(dont_filter=True)
    for name in sent.get("headers", {}):
        again.headers.pop(name, None)
    again.meta[SENT] = False
    if refused:
        again.meta[REFUSED] = True
    rt.recorder.inc(CONDITIONAL_REFUSED if refused else REFETCHED)
    return again


def fetched(rt, request: Request, response) -> Fetch | None:
    """What the index keeps of a 200 for the URL's next request (kept with its decision)."""
    cfg = rt.config
    leaf = bool(request.meta.get(LEAF))
    if not cfg.conditional or cfg.revisit != "update" or request.method != "GET" or not (leaf or cfg.keeps_copies()):
        return None  # (without a copy only a leaf is ever asked: ask())
    try:
        copy = cfg.keeps_copies() and not leaf
        headers = headers_of(response)
        if request.meta.get(REFUSED):  # (the server refused its validators: none kept, none sent next time)
            headers = {k: v for k, v in headers.items() if k.lower() not in ("etag", "last-modified")}
        return from_response(headers, response.status, response.body, body_digest(response.body), time.time(), copy)
    except Exception:  # (odd headers: the page is decided, only not asked for next time)
        return None


def headers_of(response) -> dict[str, str]:
    """A response's headers as text (latin-1, as sent), the first value of each."""
    return {name.decode("latin-1"): values[0].decode("latin-1") for name, values in response.headers.items() if values}
