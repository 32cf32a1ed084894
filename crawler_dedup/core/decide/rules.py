"""Step 7 as a chain of named rules, run in order (as Scrapy lists its downloader middlewares).

Each rule answers one question about a page from what was read for it (`Lookups`) and either
decides, returning a `Decision`, or passes the page on to the next rule, sometimes having noted
what it found on the page (the URL's entry is stale, the kept page it matches). The last rule
always decides. No rule writes: the Deduplicator applies a Decision (file the page, remove the
entries it replaces, pass an unchanged page on again). `RULES` is the chain; docs/internals.md
prints it (scripts/rules_table.py), and a verdict, its drop-log line and `show` name the rule
that decided.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Callable, Protocol

from .matching import Match, conceptual_match, gathered, supersedes, thresholds_for, unchanged, weigh, weighing
from .cleaner import cleaner
from .measures import KeptTexts, Side
from .model import Model
from ..index.held import held_of
from ..index.records import DocRecord, Extra, names_as_canonical
from ..page.site import canonical_url
from ..verdict import Action, Reason, Revisit, Skip, Stage, Verdict

if TYPE_CHECKING:
    from ...config import DedupConfig
    from ..page.fingerprint import Fingerprinted


class SiteEvidence(Protocol):
    """What the index knows of a page's site (sitelines.SitePage in the page's transaction)."""

    def compare(self, doc: DocRecord):
        """The page and `doc` compared without their sites' boilerplate lines (OwnScores)."""

    def boilerplate_shares(self, doc: DocRecord) -> tuple[float | None, float | None]:
        """The share of each main text in lines other kept pages of its site show."""

    def site_parts(self, doc: DocRecord) -> tuple[frozenset, frozenset]:
        """The parts of each title that other kept pages of its site carry (word sets)."""

    def prefetch(self, docs: list[DocRecord]) -> None:
        """Read at once what the three above read for each of `docs` (a networked store's round trip)."""


class Lookups(Protocol):
    """What the rules read about a page, inside its transaction (lookups.TxnLookups)."""

    @property
    def site(self) -> SiteEvidence | None:
        """The page's site lines (DEDUP_SITE_BOILERPLATE), or None."""

    def by_url(self, url: str) -> DocRecord | None: ...
    def run_killed(self, run: int) -> bool: ...
    def exact(self, digest: bytes) -> DocRecord | None: ...

    def candidates(self, fp: Fingerprinted) -> list[DocRecord]:
        """Kept pages to verify (simhash neighbours, sketch postings, the site's headline), nearest first."""

    def headed(self, title: str | None) -> list[DocRecord]:
        """Kept pages filed under a part of this title (page/title.headline_keys)."""

    def template_share(self, text: str, words: int) -> float | None:
        """The share of a text's words in lines kept pages showed outside their own (page/boilerplate.py)."""


@dataclass
class Judging:
    """What the rules decide with, the same for every page of a process."""

    config: DedupConfig
    run: int  # this process's run number
    score: Callable  # (fp, doc) -> (score, containment): the verifier's
    measure: str  # the verifier's name
    model: Model | None = None  # the score (DEDUP_MODEL); None: nothing is a copy but by the chain's bookkeeping
    kept: KeptTexts = field(default_factory=KeptTexts)  # kept pages' texts as measured, recently used
    observe: Callable | None = None  # (page, weighed candidates): each page's pairs as weighed (benchmarks/fit_score.py)


@dataclass
class Page:
    """One page on its way through the chain: what was read for it and what the rules noted."""

    verdict: Verdict
    fp: Fingerprinted
    stage: Stage
    now: float
    look: Lookups
    judging: Judging
    prior: DocRecord | None = None  # the URL's kept page
    stale: int | None = None  # the doc id of the URL's entry this page replaces
    killed: DocRecord | None = None  # that entry, when a killed run filed it (held.py)
    revisit: bool = False  # the URL is in the index (and DEDUP_REVISIT is not drop)
    match: Match | None = None  # the kept page it duplicates, while one stands
    remove: list[int] = field(default_factory=list)  # doc ids removed when the page is filed

    @property
    def config(self) -> DedupConfig:
        return self.judging.config

    @property
    def cutoff(self) -> float | None:
        window = self.config.window
        return self.now - window if window else None

    def usable(self, doc: DocRecord) -> bool:
        """A kept page this one may duplicate: not the URL's own entry (a revisit is never a copy
        of itself), not out of the window."""
        url, cutoff = self.verdict.url, self.cutoff
        if doc.doc_id == self.stale or (self.revisit and url and canonical_url(doc.url) == canonical_url(url)):
            return False
        return cutoff is None or doc.time >= cutoff


@dataclass(frozen=True)
class Decision:
    """A rule's decision: the verdict (naming the rule) and the writes it asks for."""

    verdict: Verdict
    file: bool = False  # file the page in the index (kept, or a conceptual duplicate only flagged)
    remove: tuple[int, ...] = ()  # doc ids to take out first (an update, a superseded page, a stale entry)
    resend: DocRecord | None = None  # an unchanged page filed by a killed run: now this run's
    passed_on: DocRecord | None = None  # an unchanged page passed on again: now this run's
    replaces_killed: DocRecord | None = None  # the URL's page a killed run filed, updated by this one


Rule = Callable[[Page], "Decision | None"]


# -- the rules, in chain order ---------------------------------------------------------------------

def item_of_kept_response(p: Page) -> Decision | None:
    """The item of a page the middleware kept as its response in this run: that page, decided already."""
    prior = p.prior
    if (prior is not None and p.stage == Stage.ITEM and prior.stage == Stage.RESPONSE
            and prior.run == p.judging.run):
        return Decision(p.verdict.but(skipped=Skip.CHECKED_AS_RESPONSE, doc_id=prior.doc_id))
    return None


def out_of_window(p: Page) -> Decision | None:
    """The URL's entry is older than DEDUP_WINDOW: no longer in the index (removal may lag), replaced when kept."""
    cutoff = p.cutoff
    if p.prior is not None and cutoff is not None and p.prior.time < cutoff:
        p.stale, p.prior = p.prior.doc_id, None
    return None


def revisit(p: Page) -> Decision | None:
    """The URL is in the index: a revisit, never a copy of itself. The same text is unchanged
    (dropped by DEDUP_UNCHANGED=drop, passed on again when a killed run filed it); other text is
    an update, which replaces the URL's entry, as is the same text naming another rel=canonical
    (DEDUP_CANONICAL). DEDUP_REVISIT=drop checks no URL but that one: a page a killed run filed
    is a revisit there too (else a changed one is its own copy)."""
    prior, cfg = p.prior, p.config
    p.revisit = prior is not None and cfg.revisit != "drop"
    if prior is None:
        return None

    def killed() -> bool:  # (read only when it decides: a meta read)
        return prior.run != p.judging.run and p.look.run_killed(prior.run)

    if not p.revisit:  # DEDUP_REVISIT=drop checks no URL, but a killed run's page is a revisit
        if not killed():
            return None
        p.revisit = True
    p.verdict = p.verdict.but(kept_at=prior.time)
    same = unchanged(p.fp, prior, p.judging.score)
    if same is None or (cfg.canonical and not p.fp.not_modified and _names_anew(p.verdict, prior)):
        p.stale = prior.doc_id  # (a new rel=canonical is filed as an update: the canonical rule reads it)
        if killed():  # what the killed run's page superseded is told when this one is kept (held.py)
            p.killed = prior
        return None
    if p.fp.not_modified:  # the server's 304, not the text, said so
        same = replace(same, measure="not-modified")
    verdict = matched(p.verdict, same, Action.KEEP).but(revisit=Revisit.UNCHANGED)
    if killed():
        # filed by a crawl that was killed: it may never have reached storage, pass it on; from a
        # 304 with no copy (its run found killed after the request went out) asked in full first,
        # the record left to that run (made this run's now, the full page would be its own revisit)
        if p.fp.not_modified and p.fp.bodiless:
            return Decision(p.verdict.but(skipped=Skip.REFETCH))
        return Decision(verdict.but(resent=True), resend=prior)
    if cfg.revisit == "update" and cfg.unchanged == "drop" and not verdict.never_drop:
        text = p.fp.text if cfg.store_text and same.measure not in ("exact", "not-modified") else None
        verdict = verdict.but(action=Action.FLAG if cfg.dry_run else Action.DROP, text=text)
    # the index holds this text already; a page passed on again is this run's (held.passed_on)
    passed = verdict.action == Action.KEEP and not cfg.dry_run and prior.run != p.judging.run
    return Decision(verdict, passed_on=prior if passed else None)


def _names_anew(verdict: Verdict, prior: DocRecord) -> bool:
    """The page's rel=canonical names another URL than its kept record's did, or none (itself)
    where the record named another (an item without its HTML, canonical None, says nothing)."""
    named, before = verdict.canonical, prior.extras.get(Extra.CANONICAL)
    if named is None:
        return False
    if not named or canonical_url(named) == canonical_url(verdict.url or ""):
        return before is not None
    return before is None or not names_as_canonical(before, named)


def find_match(p: Page) -> Decision | None:
    """The kept page this one duplicates: every candidate over the floors (the same words, a
    resemblance of 0.05 or a containment either way of 0.3, a kept page under the same headline
    whose visible text holds one of the main texts) is measured and scored (matching.weigh); the
    best score at or over the model's threshold is the match, else an LSI neighbour. A kept page
    whose response had this page's very bytes is its match whatever the score (one document
    under two URLs: the same words, `exact`). Never the URL's own entries, nor pages out of the
    window."""
    verdict, fp, look, usable, judging = p.verdict, p.fp, p.look, p.usable, p.judging
    cfg = p.config
    thresholds = thresholds_for(cfg, judging.model)
    exact = look.exact(fp.digest)
    exact = exact if exact is not None and usable(exact) and exact.extras.get(Extra.DIGEST) == fp.digest else None
    candidates = [doc for doc in look.candidates(fp) if usable(doc)]
    headed = [doc for doc in look.headed(verdict.title) if usable(doc)] if cfg.visible_containment and verdict.title else []
    side = Side(fp, verdict.title, verdict.url, cfg.shingle,
                template=look.template_share if cfg.boilerplate else None)
    weighed = weigh(side, gathered(exact, candidates, headed), {d.doc_id for d in headed}, judging.score, thresholds,
                    judging.model, look.site, judging.kept)
    if judging.observe is not None:
        judging.observe(p, weighed)
    same = _same_bytes(fp, weighed)
    best = same or next((w for w in weighed if w.scored.over), None)
    match = None
    if best is not None:
        similarity, how = best.evidence(judging.measure)  # (the very bytes are the same words: exact)
        match = Match(best.doc, best.reason, (best.doc.fingerprint ^ fp.fingerprint).bit_count(), similarity, how,
                      weighing(best, judging, fp))
    elif cfg.conceptual != "off":
        match = conceptual_match(fp, candidates, cfg.conceptual_threshold)
    if match is None:  # the closest candidate a plain near-duplicate check would have dropped, if any
        closest = next((w for w in weighed if w.passed), None)
        p.verdict = verdict.but(thresholds=thresholds,
                                weighing=weighing(closest, judging, fp) if closest is not None else None)
    else:
        p.verdict = verdict.but(thresholds=thresholds, weighing=match.weighing)
    p.match = match
    return None


def _same_bytes(fp, weighed):
    """The weighed kept page whose response had this page's very bytes: one document under two
    URLs, nothing the score could weigh apart (the same bytes give the same measurements)."""
    body = getattr(fp, "body", None)
    if body is None:
        return None
    return next((w for w in weighed if w.doc.extras.get(Extra.BODY) == body), None)


def known_copy(p: Page) -> Decision | None:
    """A dropped copy's 304 (its body not downloaded, its own rel=canonical not known) stands for
    the page only when the page is dropped again as the copy it was. When no match stands, or the
    page would now replace the kept one (named as its canonical URL, or a cleaner URL of it under
    DEDUP_PREFER_CLEAN_URL: a setting changed), it is asked again in full and decided by its text:
    a 304 never files a page nor removes one."""
    if not p.fp.not_modified or p.fp.copy_reason is None:
        return None
    match, cfg, url = p.match, p.config, p.verdict.url
    if (match is None or (cfg.canonical and supersedes(url, None, match.doc))
            or (cfg.prefer_clean_url and match.reason != Reason.CONCEPTUAL and not p.fp.copy_named
                and cleaner(url, match.doc.url))):
        return Decision(p.verdict.but(skipped=Skip.REFETCH))
    return None


def canonical(p: Page) -> Decision | None:
    """The kept copy names this page's URL as its rel=canonical: this page replaces it (a dry run only flags that)."""
    match = p.match
    if (match is None or not p.config.canonical or p.fp.not_modified
            or not supersedes(p.verdict.url, p.verdict.canonical, match.doc)):
        return None
    return supersede(p, match, "canonical")


def clean_url(p: Page) -> Decision | None:
    """DEDUP_PREFER_CLEAN_URL: a copy of the kept page under a cleaner URL of the same page (no
    tracking or session parameters, a shorter query: cleaner.py) replaces it, as the canonical
    rule does; the same URL is kept whatever order the copies come in. Not against a kept page
    this page names as its rel=canonical."""
    match = p.match
    if match is None or not p.config.prefer_clean_url or match.reason == Reason.CONCEPTUAL or p.fp.not_modified:
        return None
    url, named = p.verdict.url, p.verdict.canonical
    if not url or not cleaner(url, match.doc.url) or (named and canonical_url(named) == canonical_url(match.doc.url)):
        return None
    return supersede(p, match, "clean_url")


def supersede(p: Page, match: Match, rule: str) -> Decision | None:
    """This page replaces the kept copy `match` (a dry run only flags that)."""
    p.verdict = p.verdict.but(superseded={**superseded(match, p.config.store_text), "rule": rule})
    if p.config.dry_run:
        return Decision(p.verdict)  # flagged only: the kept copy stays, this page is not filed
    p.remove.append(int(match.doc.doc_id or 0))
    p.match = None
    return None


def never_drop(p: Page) -> Decision | None:
    """A page that must be kept (a start page the crawl follows links from) is kept when it matches."""
    if p.match is not None and p.verdict.never_drop:
        return Decision(p.verdict.but(skipped=Skip.NEVER_DROP))
    return None


def revisit_copy(p: Page) -> Decision | None:
    """A revisit whose new text copies another URL's page; DEDUP_REVISIT=keep keeps it as an update."""
    if p.match is not None and p.revisit:
        p.verdict = p.verdict.but(revisit=Revisit.COPY)
        if p.config.revisit == "keep":
            p.match = None
    return None


def item_of_matched_response(p: Page) -> Decision | None:
    """DEDUP_REVISIT=drop (no URL lookup): the item of a page kept as its response in this run
    matches that page, which it is."""
    m = p.match
    if (m is not None and p.prior is None and p.stage == Stage.ITEM and m.doc.stage == Stage.RESPONSE
            and m.doc.run == p.judging.run and p.verdict.url and m.doc.url == p.verdict.url):
        return Decision(p.verdict.but(skipped=Skip.CHECKED_AS_RESPONSE, doc_id=m.doc.doc_id))
    return None


def duplicate(p: Page) -> Decision | None:
    """A match that stands: dropped (flagged by a dry run). A conceptual duplicate under
    DEDUP_CONCEPTUAL=flag is flagged and still filed: a page of its own."""
    if p.match is None:
        return None
    cfg = p.config
    flag_only = p.match.reason == Reason.CONCEPTUAL and cfg.conceptual == "flag"
    copy_304 = p.fp.not_modified  # a dropped copy's 304: the server says it is the copy it was (revalidation.py)
    if copy_304:  # (as it was dropped then; its own text and fingerprint are not known: the kept page's stand in)
        p.match = replace(p.match, measure="not-modified", reason=Reason(p.fp.copy_reason or p.match.reason))
    verdict = matched(p.verdict, p.match, Action.FLAG if cfg.dry_run or flag_only else Action.DROP)
    verdict = verdict.but(text=p.fp.text if cfg.store_text and not copy_304 else None)
    if not flag_only or cfg.dry_run:
        return Decision(verdict)
    p.verdict = verdict
    return kept(p)


def keep(p: Page) -> Decision:
    """No match stands: kept and filed (a revisit as an update, replacing the URL's entry)."""
    return kept(p)


RULES: tuple[Rule, ...] = (
    item_of_kept_response, out_of_window, revisit, find_match, known_copy, canonical, clean_url, never_drop,
    revisit_copy, item_of_matched_response, duplicate, keep,
)


def decide(page: Page, rules: tuple[Rule, ...] = RULES) -> Decision:
    """Run the chain: the first rule that decides, named in the verdict's `rule`."""
    for rule in rules:
        decision = rule(page)
        if decision is not None:
            return replace(decision, verdict=decision.verdict.but(rule=rule.__name__))
    raise AssertionError("the chain ends with a rule that always decides")


def describe(rules: tuple[Rule, ...] = RULES) -> list[tuple[str, str]]:
    """(name, what it decides) of each rule in order, from their docstrings (docs/internals.md)."""
    return [(rule.__name__, " ".join((rule.__doc__ or "").split())) for rule in rules]


# -- helpers ---------------------------------------------------------------------------------------

def kept(p: Page) -> Decision:
    verdict = p.verdict.but(revisit=Revisit.UPDATED) if p.revisit else p.verdict
    remove = [*p.remove, *([p.stale] if p.stale is not None else [])]
    return Decision(verdict, file=True, remove=tuple(remove), replaces_killed=p.killed)


def matched(verdict: Verdict, match: Match, action: Action) -> Verdict:
    doc = match.doc
    return verdict.but(action=action, reason=match.reason, distance=match.distance,
                       similarity=round(match.similarity, 4), measure=match.measure, duplicate_of=doc.url,
                       duplicate_of_title=doc.title, duplicate_of_fingerprint=doc.fingerprint, doc_id=doc.doc_id)


def superseded(match: Match, store_text: bool) -> dict:
    """What the drop log and the page_superseded signal say about a kept page replaced as its
    canonical URL's copy."""
    doc = match.doc
    return {"url": doc.url, "title": doc.title, "fingerprint": doc.fingerprint, "time": doc.time,
            "distance": match.distance, "similarity": round(match.similarity, 4), "measure": match.measure,
            "text": doc.text if store_text else None, "run": doc.run,
            "held": held_of(doc)}
