"""A duplicate group kept once on a store whose writes are not one transaction (the spread Redis
layout, stores/redis/spread.py): claims, and a second look.

A page the rules kept is filed first (its buckets, postings and record written), then it takes
an order from one counter (`claim`, atomic with the record of that order), then it reads its
lookups again. Of two near-duplicates filed at the same moment by two crawlers, the one that
claimed later always sees the earlier: its entries were written before its claim, the other's
claim came before its own, and its reads after. So a page that now finds a near-duplicate with
an earlier claim withdraws (its entries and its claim out) and is dropped against it; one that
finds only later claims, or pages that have not claimed yet (they will see it), stays. A page
found without a claim that was there before (settled long ago) matched in the first look, so the
second look only meets pages filed at the same time.

A page the rules drop against a kept page that is still racing (filed, not claimed yet) waits for
the claims to settle (`settle`), and is dropped against the copy with the earliest claim among
its matches: the one that stays. What this does not cover: two crawlers fetching the same URL at
the same moment may both keep it (scrapy-redis's request filter makes that rare).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from .matching import Evidence, Match, exact_match, near_match, thresholds_for, visible_containment
from .guards import same_headline
from ..index.lookups import TxnLookups
from .rules import Judging, Page, matched
from ..verdict import Action, Reason, Stage, Verdict

if TYPE_CHECKING:
    from ..index.neardup import NearDupIndex
    from ..page.fingerprint import Fingerprinted


class Prepared(Protocol):
    """A page prepared for its decision (the Deduplicator's Pending): what a second look reads."""

    @property
    def verdict(self) -> Verdict: ...
    @property
    def fp(self) -> Fingerprinted: ...
    @property
    def stage(self) -> Stage: ...
    @property
    def now(self) -> float: ...


def confirm(index: NearDupIndex, judging: Judging, page: Prepared, verdict: Verdict, doc_id: int) -> Verdict:
    """The kept page's second look (see above): its verdict, or a drop against an earlier claim.
    `judging`: what the rules decide with in this process (the Deduplicator's)."""
    config = judging.config

    def run(txn) -> Verdict | None:
        order = txn.claim(doc_id)
        look = TxnLookups(index, txn, config, None)
        look.prefetch(page.verdict.url, page.fp, page.verdict.title)
        second = Page(page.verdict, page.fp, page.stage, page.now, look, judging, stale=doc_id)
        found = matches(second)
        claims = txn.claims([m.doc.doc_id for m in found]) if found else []
        earlier = [(c, m) for c, m in zip(claims, found) if c is not None and c < order]
        if not earlier:
            return None  # later pages, or ones that have not claimed yet: they see this one and withdraw
        _, match = min(earlier, key=lambda pair: pair[0])
        index.remove(txn, doc_id)
        txn.unclaim(doc_id)
        dropped = matched(second.verdict, match, Action.FLAG if config.dry_run else Action.DROP)
        return dropped.but(rule="claim", text=page.fp.text if config.store_text else None)

    withdrawn = index.write(run)
    return verdict if withdrawn is None else withdrawn


SETTLE_TRIES = 25  # 10 ms apart: a page filed at the same moment claims within a few round trips
RACING_S = 30.0  # a kept page this recent without a claim is still being filed; an older one settled


def settle(index: NearDupIndex, judging: Judging, page: Prepared, verdict: Verdict) -> Verdict:
    """A drop against another page, named after the copy that stays: of its matches that claimed,
    the earliest (a match not claimed yet will see it and withdraw); waits while the only matches
    are recent pages that have not claimed yet."""
    kept_id = verdict.doc_id
    if kept_id is None or verdict.reason not in (Reason.NEAR, Reason.EXACT):
        return verdict

    def look(txn) -> Verdict | None:
        first = index.doc(txn, kept_id)
        if first is not None and first.time < page.now - RACING_S:
            return verdict  # kept long before: its race is over, it stayed (one read, no second lookup)
        lookups = TxnLookups(index, txn, judging.config, None)
        lookups.prefetch(page.verdict.url, page.fp, page.verdict.title)
        found = matches(Page(page.verdict, page.fp, page.stage, page.now, lookups, judging))
        claims = txn.claims([m.doc.doc_id for m in found]) if found else []
        claimed = [(c, m) for c, m in zip(claims, found) if c is not None]
        if claimed:
            match = min(claimed, key=lambda pair: pair[0])[1]
            return verdict if match.doc.doc_id == verdict.doc_id else matched(verdict, match, verdict.action).but(
                rule=verdict.rule)
        if found and all(m.doc.time < page.now - RACING_S for m in found):
            return verdict  # settled long ago (their claims forgotten)
        return None

    for _ in range(SETTLE_TRIES):
        got = index.read(look)
        if got is not None:
            return got
        time.sleep(0.01)
    return verdict


def matches(p: Page) -> list[Match]:
    """Every kept page this one duplicates by the rules' tests (not only the best, as the chain
    picks): the same words, a near candidate, one under the same headline holding its text."""
    fp, title, url, look, judging = p.fp, p.verdict.title, p.verdict.url, p.look, p.judging
    out: dict[int, Match] = {}
    exact = look.exact(fp.digest)
    if exact is not None and exact.doc_id is not None and p.usable(exact):
        found, _ = exact_match(fp, title, exact, url)
        if found is not None:
            out[exact.doc_id] = found
    thresholds = thresholds_for(p.config, fp.tokens)
    for doc in look.candidates(fp):
        if doc.doc_id is None or doc.doc_id in out or not p.usable(doc):
            continue
        found, _ = near_match(fp, title, [doc], thresholds, judging.score, judging.measure, url, look.site, p.stale)
        if found is not None:
            out[doc.doc_id] = found
    share = p.config.visible_containment
    if share and title:
        evidence = None
        for doc in look.headed(title):
            if doc.doc_id is None or doc.doc_id in out or not p.usable(doc) or not same_headline(title, doc.title):
                continue
            evidence = evidence or Evidence.of(fp.text, title, fp.view)
            value = visible_containment(evidence, doc)
            if value is not None and value >= share:
                out[doc.doc_id] = Match(doc, Reason.NEAR, (doc.fingerprint ^ fp.fingerprint).bit_count(), value,
                                        "visible")
    return list(out.values())
