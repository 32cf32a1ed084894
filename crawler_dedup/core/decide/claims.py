"""A duplicate group kept once on a store whose writes are not one transaction (the spread Redis
layout, stores/redis/spread.py): claims, and a second look that is the rule chain itself.

A page the rules kept is filed first (its buckets, postings and record written), then it takes an
order from one counter (`claim`, atomic with the record of that order), then it is decided again
by the same chain of rules (rules.py), with the same guards, overrides and settings, over the
pages that came before it: those claimed before it, and those filed long enough ago to have
settled (`Racing`). Pages claimed after it, or filed at the same moment and not claimed yet, are
left out: they claim later and see it. Of two near-duplicates filed at the same moment by two
crawlers, the one that claimed later always sees the earlier (its entries were written before
its claim, the other's claim came before its own, and its reads after), so the result is the
decisions of one process taking the pages in claim order. A page the second look keeps is
confirmed (`confirm`: it stays); one it drops or keeps unfiled (a `never_drop` page that matches)
withdraws: its entries and its claim come out, and the entries it shared with the page it
matched (an exact digest, a response digest, a URL) go back to that page.

A page dropped against a kept page that is still racing (filed, not confirmed yet) waits for it
to settle (`settle`): when that page stays, the drop stands; when it withdrew, the page is
decided again (`AGAIN`), so `duplicate_of` always names a page that stays kept. A page whose
process died before confirming stays; waiting for it ends when it has been filed RACING_S.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Protocol

from ...stores.base import Claim
from ..index.records import Extra
from ..page.site import canonical_url
from ..verdict import Action, Reason, Stage, Verdict
from .rules import Judging, Page, decide

if TYPE_CHECKING:
    from .lookups import TxnLookups
    from ..index.neardup import NearDupIndex
    from ..index.records import DocRecord
    from ..page.fingerprint import Fingerprinted

RACING_S = 30.0  # a kept page filed this long ago without a claim (or a confirmation) has settled
SETTLE_S = 5.0  # a drop waits this long at most for the page it matched to settle
AGAIN = "again"  # settle(): the page matched withdrew, decide this one again


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


class Racing:
    """The rules' lookups for a page's second look: the pages that came before it only (claimed
    before it, or settled), never itself. Wraps the page's TxnLookups."""

    def __init__(self, look: TxnLookups, txn, own: int, order: int, now: float):
        self.inner, self.txn, self.own, self.order, self.now = look, txn, own, order, now
        self.site = look.site
        self._claims: dict[int, Claim | None] = {}
        self._fp: Fingerprinted | None = None

    def prefetch(self, url: str | None, fp: Fingerprinted, title: str | None = None) -> None:
        self._fp = fp
        self.inner.prefetch(url, fp, title)

    def _before(self, docs: list[DocRecord]) -> list[DocRecord]:
        ids = [d.doc_id for d in docs if d.doc_id is not None and d.doc_id != self.own and d.doc_id not in self._claims]
        if ids:
            self._claims.update(zip(ids, self.txn.claims(ids)))
        out = []
        for doc in docs:
            if doc.doc_id is None or doc.doc_id == self.own:
                continue
            claim = self._claims.get(doc.doc_id)
            if claim.order < self.order if claim is not None else doc.time < self.now - RACING_S:
                out.append(doc)
        return out

    def by_url(self, url: str) -> DocRecord | None:
        found = self.inner.by_url(url)
        return found if found is not None and self._before([found]) else None

    def run_killed(self, run: int) -> bool:
        return self.inner.run_killed(run)

    def exact(self, digest: bytes) -> DocRecord | None:
        """The page kept before this one with these words (the exact entry may name this page or a
        later copy: the one written last; then the pages under the same fingerprint are asked)."""
        found = self.inner.exact(digest)
        if found is not None and self._before([found]):
            return found
        if self._fp is None:
            return None
        index, txn = self.inner.index, self.inner.txn
        same = [d for d in index.docs(txn, self._fp.fingerprint) if d.extras.get(Extra.DIGEST) == digest]
        before = self._before(same)
        return min(before, key=lambda d: (self._claims.get(d.doc_id or 0) or Claim(0, True)).order) if before else None

    def candidates(self, fp: Fingerprinted) -> list[DocRecord]:
        return self._before(self.inner.candidates(fp))

    def headed(self, title: str | None) -> list[DocRecord]:
        return self._before(self.inner.headed(title))

    def template_collapsed(self, fp: Fingerprinted) -> bool:
        return self.inner.template_collapsed(fp)

    def same_url(self, url: str, fp: Fingerprinted) -> DocRecord | None:
        """A page of this URL filed before this one at the same moment (another crawler fetched
        it too): the one a serial crawl would have met as the URL's kept page. Found among the
        candidates: the URL's entry names whichever wrote last."""
        mine = canonical_url(url)
        found = [self.exact(fp.digest), *self.candidates(fp)]
        return next((d for d in found if d is not None and canonical_url(d.url) == mine), None)


def confirm(index: NearDupIndex, judging: Judging, page: Prepared, verdict: Verdict, doc_id: int,
            lookups: Callable[..., TxnLookups], prior: DocRecord | None) -> Verdict:
    """The kept page's second look (see above): its verdict when it stays (the second look's when
    that one flags it or replaces a copy), else the chain's decision with the page withdrawn
    (`rule` claim when dropped). `lookups(txn)`: the page's lookups in the second look's
    transaction (the Deduplicator's, with its site lines); `prior`: the URL's kept page its first
    look found."""
    config = judging.config

    def run(txn) -> Verdict | None:
        order = txn.claim(doc_id)
        racing = Racing(lookups(txn), txn, doc_id, order, page.now)
        racing.prefetch(page.verdict.url, page.fp, page.verdict.title)
        before = prior
        if before is None and page.verdict.url and config.revisit != "drop":
            before = racing.same_url(page.verdict.url, page.fp)  # (a revisit of a page filed at the same moment)
        second = Page(page.verdict, page.fp, page.stage, page.now, racing, judging, prior=before)
        decision = decide(second)
        if decision.file:
            for gone in decision.remove:  # (a copy it replaces as its canonical URL; the first look's are out)
                if gone != doc_id:
                    index.remove(txn, gone)
            txn.confirm(doc_id)
            again = decision.verdict
            if verdict.superseded and not again.superseded and again.action == verdict.action:
                # the first look replaced a copy (removed it then): the second no longer meets it
                again = again.but(superseded=verdict.superseded)
            if again.action == verdict.action and again.superseded == verdict.superseded:
                return None
            return again.but(doc_id=doc_id) if again.action == Action.KEEP else again
        heir = index.doc(txn, decision.verdict.doc_id) if decision.verdict.doc_id is not None else None
        index.remove(txn, doc_id, heir=heir)
        txn.unclaim(doc_id)
        out = decision.verdict
        if out.action in (Action.DROP, Action.FLAG):
            out = out.but(rule="claim", text=page.fp.text if config.store_text else None)
        return out

    second = index.write(run)
    return verdict if second is None else second


def settle(index: NearDupIndex, verdict: Verdict, now: float) -> Verdict | str:
    """A drop against a kept page that may still be racing: the drop once that page stays (it
    confirmed, or it has been filed RACING_S), AGAIN when it withdrew (decide the page again).
    Waits SETTLE_S at most, then names it as it is."""
    kept_id = verdict.doc_id
    if kept_id is None or verdict.reason not in (Reason.NEAR, Reason.EXACT, Reason.CONCEPTUAL):
        return verdict

    def look(txn) -> Verdict | str | None:
        doc = index.doc(txn, kept_id)
        if doc is None:
            return AGAIN  # withdrawn (or removed): its place is another's now
        if doc.time < now - RACING_S:
            return verdict  # kept long before: its race is over, it stayed (one read)
        claim = txn.claims([kept_id])[0]
        return verdict if claim is not None and claim.confirmed else None

    deadline = time.monotonic() + SETTLE_S
    while True:
        got = index.read(look)
        if got is not None:
            return got
        if time.monotonic() >= deadline:
            return verdict  # (its process died before confirming: it stays filed)
        time.sleep(0.01)
