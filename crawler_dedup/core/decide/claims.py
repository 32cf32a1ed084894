"""A duplicate group kept once on a store whose writes are not one transaction (the spread Redis
layout, stores/redis/spread.py): claims, and a second look that is the rule chain itself.

A page the rules kept is filed first (its buckets, postings and record written), then it takes an
order from one counter (`claim`, atomic with the record of that order), then it is decided again
by the same chain of rules (rules.py), with the same score, overrides and settings, over the
pages that came before it: those claimed before it, and those filed long enough ago to have
settled (`Racing`). Pages claimed after it, or filed at the same moment and not claimed yet, are
left out: they claim later and see it. Of two near-duplicates filed at the same moment by two
crawlers, the one that claimed later always sees the earlier (its entries were written before
its claim, the other's claim came before its own, and its reads after), so the result is the
decisions of one process taking the pages in claim order. A page the second look keeps is
confirmed (`confirm`: it stays); one it drops or keeps unfiled (a `never_drop` page that matches)
withdraws: its entries and its claim come out, and the entries it shared with the page it
matched (an exact digest, a response digest, a URL) go back to that page. A quiet claim (no other
page claimed since this crawler's previous claim, which came before the page's first reads)
confirms its page at once: every page claimed before it was written before those reads, so the
first look saw them, and a second look would decide the same (`confirm`); so does one whose
second look reads nothing changed since its filing (the store tells both: `txn.quiet`).

A page dropped against a kept page that is still racing (filed, not confirmed yet) waits for it
to settle (`settle`): when that page stays, the drop stands; when it withdrew, the page is
decided again (`AGAIN`), so `duplicate_of` always names a page that stays kept. The windows
cover the store's own retry deadline (DEDUP_REDIS_RETRY: a crawler waiting out a failover is
late by that much, `windows`): a second look that begins later than `confirm_by` after its page
was filed keeps the page whatever it finds, so a page filed `settled_after` ago and not
confirmed stays (its process died, or kept it), and a drop against it stands.

What a page replaces (an updated page's earlier record, a copy it supersedes) is taken out by its
second look, once it stays (`confirm`), never by the first: a page that withdraws leaves the
index as it found it, and storage, told of no replacement, holds what the index holds.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Protocol

from ...exceptions import DedupError
from ...stores.base import Claim
from ..index import held, revalidation
from ..index.records import Extra, url_key
from ..page.site import canonical_url
from ..verdict import Action, Failure, Reason, Stage, Verdict
from .lookups import TxnLookups
from .rules import Judging, Page, decide

if TYPE_CHECKING:
    from .sitelines import SitePage
    from ..index.neardup import NearDupIndex
    from ..index.records import DocRecord
    from ..page.fingerprint import Fingerprinted

RACING_S = 30.0  # a second look begins at most this long after its page was filed (beside the store's retries)
MARGIN_S = 10.0  # for the crawlers' clocks and the store's own calls
AGAIN = "again"  # settle(): the page matched withdrew (or never settled), decide this one again
AGAIN_MAX = 3  # a page decided again this often (each time the page it matched withdrew), then kept


def windows(index: NearDupIndex) -> tuple[float, float]:
    """(confirm_by, settled_after) in seconds for the index's store: a page whose second look
    begins more than confirm_by after it was filed stays whatever that look finds (drops against
    it may stand already); a page filed settled_after ago and neither confirmed nor withdrawn has
    settled: it stays. Both cover the store's retry deadline (the withdrawal's own writes may wait
    it out twice)."""
    retry = float(getattr(index.store, "retry_seconds", 0.0) or 0.0)
    confirm_by = max(RACING_S, retry + MARGIN_S)
    return confirm_by, confirm_by + 2 * retry + MARGIN_S


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

    def __init__(self, look: TxnLookups, txn, own: int, order: int, now: float, settled_after: float = RACING_S):
        self.inner, self.txn, self.own, self.order, self.now = look, txn, own, order, now
        self.settled_after = settled_after
        self.site = look.site
        if look.site is not None:  # the site's pages under its headline: those before it only
            look.site.page.visible = self._before_ids
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
            if claim.order < self.order if claim is not None else doc.time < self.now - self.settled_after:
                out.append(doc)
        return out

    def _before_ids(self, ids: list[int]) -> list[int]:
        docs = [d for d in (self.inner.index.doc(self.txn, i) for i in ids if i != self.own) if d is not None]
        return [d.doc_id for d in self._before(docs) if d.doc_id is not None]

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

    def template_share(self, text: str, words: int) -> float | None:
        return self.inner.template_share(text, words)

    def same_url(self, url: str, fp: Fingerprinted) -> DocRecord | None:
        """A page of this URL filed before this one at the same moment (another crawler fetched
        it too): the one a serial crawl would have met as the URL's kept page. Found among the
        candidates: the URL's entry names whichever wrote last."""
        mine = canonical_url(url)
        found = [self.exact(fp.digest), *self.candidates(fp)]
        return next((d for d in found if d is not None and canonical_url(d.url) == mine), None)


def unsettled(index: NearDupIndex, txn, prior: DocRecord) -> bool:
    """A killed run's page passed on again that never had its second look (the run was killed
    between its commit and its claim, or between its claim and its confirmation) and is young
    enough that no drop against it can have stood: it has its second look now (in the order it
    claimed, if it did), so a copy another crawler kept at the same moment does not stay beside
    it. Only on a store whose writes are not transactions (claims)."""
    if getattr(index.store, "serializable", True) or prior.doc_id is None:
        return False
    if prior.time < time.time() - windows(index)[0]:
        return False  # (drops against it may have stood: it stays, as the claims' design says)
    claim = txn.claims([prior.doc_id])[0]
    return claim is None or not claim.confirmed


def second_looks(index: NearDupIndex, judging: Judging, pages: list, verdicts: list[Verdict],
                 filed: list[tuple[int, int, DocRecord | None, tuple[int, ...]]],
                 site_of: Callable[[Verdict, Fingerprinted], SitePage | None],
                 again: Callable[[int], Verdict | None], failed: Callable[..., Verdict]) -> list[Verdict]:
    """A committed batch's pages on a store without transactions across its keys: each filed page
    (`filed`: its place in the batch, doc id, URL's kept page and what it replaces) claims its
    order and is decided again over the pages before it (`confirm`, its site's lines read afresh:
    `site_of`); a drop waits for the page it names to settle (`settle`), and is decided again
    (`again(i)`, None past AGAIN_MAX) when that page withdrew. A store failure keeps the page
    (`failed(verdict, Failure, why)`): a drop is never left naming a page that may not stay."""
    cfg = judging.config
    out = list(verdicts)
    if len(filed) > 1:  # (the batch's claims in one round trip: consecutive orders)
        ahead = [(doc_id, quiet_claim(verdicts[i], prior, first_remove)) for i, doc_id, prior, first_remove in filed]
        try:
            index.write(lambda txn: txn.claim_ahead(ahead))
        except (DedupError, OSError):
            pass  # (each page claims on its own, as it would without)
    for i, doc_id, prior, first_remove in filed:
        page = pages[i]

        def lookups(txn, page=page) -> TxnLookups:
            return TxnLookups(index, txn, cfg, site_of(page.verdict, page.fp))
        try:
            out[i] = confirm(index, judging, page, verdicts[i], doc_id, lookups, prior, first_remove)
        except (DedupError, OSError) as exc:
            out[i] = failed(verdicts[i], Failure.STORE, exc)
        if (verdicts[i].resent and out[i].action == Action.KEEP and out[i].doc_id == doc_id
                and out[i].error is None and out[i].skipped is None):  # (a killed run's page that stays filed:
            # passed on again, telling what its verdict tells, and what its second look replaced too)
            out[i] = verdicts[i].but(superseded=held.joined(verdicts[i].superseded, out[i].superseded)
                                     if out[i].superseded != verdicts[i].superseded else verdicts[i].superseded)
    for i, verdict in enumerate(out):
        if not verdict.is_duplicate or verdict.doc_id is None:
            continue
        try:
            got = settle(index, verdict, pages[i].now)
        except (DedupError, OSError) as exc:
            out[i] = failed(pages[i].verdict, Failure.STORE, exc)
            continue
        if got != AGAIN:
            out[i] = got  # type: ignore[assignment]
        else:
            out[i] = again(i) or failed(pages[i].verdict, Failure.STORE, "the pages it matched withdrew, each in turn")
    return out


def confirm(index: NearDupIndex, judging: Judging, page: Prepared, verdict: Verdict, doc_id: int,
            lookups: Callable[..., TxnLookups], prior: DocRecord | None, first_remove: tuple[int, ...] = ()) -> Verdict:
    """The kept page's second look (see above): its verdict when it stays (the second look's when
    that one flags it or replaces a copy), with what it replaces taken out now; else the chain's
    decision with the page withdrawn (`rule` claim when dropped). `lookups(txn)`: the page's
    lookups in the second look's transaction (its site lines read afresh); `prior`: the URL's kept
    page its first look found; `first_remove`: what the first look would have taken out (taken out
    now when the page stays without a second look that counts: it came too late)."""
    config = judging.config
    confirm_by, settled_after = windows(index)
    withdrawn: list[int] = []

    quiet = quiet_claim(verdict, prior, first_remove)

    def run(txn) -> Verdict | None:
        withdrawn.clear()
        order = txn.claim(doc_id, quiet=quiet)
        if quiet and txn.quiet:
            return None  # (confirmed with its claim: it stays, as its first look said)
        racing = Racing(lookups(txn), txn, doc_id, order, page.now, settled_after)
        racing.prefetch(page.verdict.url, page.fp, page.verdict.title)
        before = prior if prior is not None and index.doc(txn, int(prior.doc_id or 0)) is not None else None
        if before is None and page.verdict.url and config.revisit != "drop":
            before = racing.same_url(page.verdict.url, page.fp)  # (a revisit of a page filed at the same moment)
        second = Page(page.verdict, page.fp, page.stage, page.now, racing, judging, prior=before)
        decision = decide(second)
        own = index.doc(txn, doc_id)  # (a killed run's page passed on again was filed before this page's now)
        filed_at = min(page.now, own.time) if own is not None else page.now
        late = time.time() - filed_at > confirm_by  # (drops against it may have stood: it stays)
        if decision.file or late:
            final = decision if decision.file else None
            remove = final.remove if final is not None else first_remove
            replaced(index, txn, [g for g in remove if g != doc_id],
                     (final.verdict if final is not None else verdict).superseded, doc_id, config.conditional,
                     index.doc(txn, doc_id), judging.run)
            txn.confirm(doc_id)
            again = final.verdict if final is not None else verdict
            if final is not None and again.action == Action.KEEP:  # (as the first look's _apply told it)
                again = held.after_kept(index, txn, again, final, judging.run)
            if again.action == verdict.action and again.superseded == verdict.superseded:
                return None
            if again.superseded != verdict.superseded and (kept := index.doc(txn, doc_id)) is not None:
                kept.extras.pop(Extra.HELD, None)  # (what it replaces in its run now: told after a kill)
                held.hold(kept, again.superseded, judging.run)
                txn.doc_put(doc_id, kept.encode())
            return again.but(doc_id=doc_id) if again.action == Action.KEEP else again
        heir = index.doc(txn, decision.verdict.doc_id) if decision.verdict.doc_id is not None else None
        index.remove(txn, doc_id, heir=heir)
        url = page.verdict.url
        if before is not None and url and canonical_url(before.url) == canonical_url(url) and txn.url_get(url_key(url)) is None:
            txn.url_put(url_key(url), int(before.doc_id or 0))  # (the URL's earlier page stays its page)
        withdrawn.append(doc_id)
        out = decision.verdict
        if out.action in (Action.DROP, Action.FLAG):
            out = out.but(rule="claim", text=page.fp.text if config.store_text else None)
        return out

    second = index.write(run)
    if withdrawn:  # after the withdrawal is written (killed before, the page stays claimed and filed);
        try:  # a claim left of a page that left is no harm (a drop against it is decided again)
            index.write(lambda txn: txn.unclaim(doc_id))
        except (DedupError, OSError):
            pass
    return verdict if second is None else second


def quiet_claim(verdict: Verdict, prior: DocRecord | None, first_remove: tuple[int, ...]) -> bool:
    """Whether a filed page may claim quietly: no page claimed between its first reads and its
    claim means every page claimed before it was filed before those reads and its first look saw
    them, so a look again would decide the same. Only a page that replaces nothing and was not
    passed on again (those keep the look, whose removals wait for it)."""
    return not first_remove and not verdict.superseded and prior is None and not verdict.resent


def replaced(index: NearDupIndex, txn, remove: list[int], superseded: dict | None, kept_id: int, conditional: bool,
             staying: DocRecord | None, run: int) -> None:
    """What a page that stays replaces, taken out (revalidation.take_out) now that it stays."""
    carried = revalidation.take_out(index, txn, remove, superseded, conditional, staying)
    if carried is not None and superseded:
        revalidation.file_superseded(txn, superseded, carried, kept_id, run)


def settle(index: NearDupIndex, verdict: Verdict, now: float) -> Verdict | str:
    """A drop against a kept page that may still be racing: the drop once that page stays (it
    confirmed, or was filed `settled_after` ago), AGAIN when it withdrew. Waits as long as that
    takes (it covers the store's retry deadline); a page that has not settled by then (a clock
    far off) is decided again too, rather than the drop kept."""
    kept_id = verdict.doc_id
    if kept_id is None or verdict.reason not in (Reason.NEAR, Reason.EXACT, Reason.CONCEPTUAL):
        return verdict
    _, settled_after = windows(index)
    known = getattr(index.store, "known_confirmed", None)
    if known is not None and known(kept_id):  # (read confirmed already: a confirmed page stays)
        return verdict

    def look(txn) -> Verdict | str | None:
        if txn.reads_ahead:  # (the record and its claim in one round trip)
            txn.prefetch_more(doc_ids=[kept_id], claims=[kept_id])
        doc = index.doc(txn, kept_id)
        if doc is None:
            return AGAIN  # withdrawn (or removed): its place is another's now
        if doc.time < time.time() - settled_after:
            return verdict  # its race is over, and it stayed
        claim = txn.claims([kept_id])[0]
        return verdict if claim is not None and claim.confirmed else None

    deadline, pause = time.monotonic() + settled_after, 0.01
    while True:
        got = index.read(look)
        if got is not None:
            return got
        if time.monotonic() >= deadline:
            return AGAIN
        time.sleep(pause)
        pause = min(0.5, pause * 2)
