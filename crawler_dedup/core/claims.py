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

What this does not cover: a page dropped in the first look against a page that then withdrew is
dropped against that page (still its group's copy); two crawlers fetching the same URL at the same
moment may both keep it (scrapy-redis's request filter makes that rare).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .decide import Evidence, Match, exact_match, near_match, thresholds_for, visible_containment
from .guards import same_headline
from .lookups import TxnLookups
from .rules import Page, matched
from .verdict import Action, Reason, Verdict

if TYPE_CHECKING:
    from .dedup import Deduplicator, Pending


def confirm(dedup: "Deduplicator", page: "Pending", verdict: Verdict, doc_id: int) -> Verdict:
    """The kept page's second look (see above): its verdict, or a drop against an earlier claim."""
    index = dedup.index
    assert index is not None

    def run(txn) -> Verdict | None:
        order = txn.claim(doc_id)
        look = TxnLookups(index, txn, dedup.config, None)
        look.prefetch(page.verdict.url, page.fp, page.verdict.title)
        second = Page(page.verdict, page.fp, page.stage, page.now, look, dedup._judging(), stale=doc_id)
        found = matches(second)
        claims = txn.claims([m.doc.doc_id for m in found]) if found else []
        earlier = [(c, m) for c, m in zip(claims, found) if c is not None and c < order]
        if not earlier:
            return None  # later pages, or ones that have not claimed yet: they see this one and withdraw
        _, match = min(earlier, key=lambda pair: pair[0])
        index.remove(txn, doc_id)
        txn.unclaim(doc_id)
        dropped = matched(second.verdict, match, Action.FLAG if dedup.config.dry_run else Action.DROP)
        return dropped.but(rule="claim", text=page.fp.text if dedup.config.store_text else None)

    withdrawn = index.write(run)
    return verdict if withdrawn is None else withdrawn


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
