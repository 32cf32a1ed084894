"""Step 7 as pure functions: a page's fingerprint, the kept pages found for it and the settings
in; a typed match out. No store, no clock, no state: `show` and the crawl apply the same rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

from .churn import churn_digest, same_but_churn
from .conceptual import cosine
from .guards import titles_disagree
from .records import DocRecord, Extra, canonical_url
from .sites import same_site
from .sitelines import EVIDENCE_CONTAINMENT, EVIDENCE_RESEMBLANCE, GUARD_RESEMBLANCE, MAX_COMPARED, own_match
from .verdict import Guard, Reason, Thresholds

GUARD_TOKENS = 100  # a page of another site with a shorter text needs an agreeing title to be its copy
SHORT_TOKENS = 100  # texts shorter than this (obituaries, product blurbs) are mostly template:
SHORT_THRESHOLD = 0.8  # they need this much resemblance, or to be all but wholly inside the
SHORT_CONTAINMENT, SHORT_MIN_RESEMBLANCE = 0.95, 0.6  # other page (a teaser) and close to it

Scorer = Callable[[object, DocRecord], "tuple[float, float]"]  # (score, containment) of a page and a kept page


@dataclass(frozen=True)
class Match:
    """A kept page this page duplicates, and how."""

    doc: DocRecord
    reason: Reason
    distance: int
    similarity: float
    measure: str  # exact | churn | the verifier's name | containment | lsi


def thresholds_for(config, tokens: int) -> Thresholds:
    """The settings' thresholds, raised for a short text (mostly template: a stricter bar)."""
    conceptual = config.conceptual_threshold if config.conceptual != "off" else 0.0
    if tokens >= SHORT_TOKENS:
        return Thresholds(config.threshold, config.containment, config.min_resemblance, conceptual=conceptual)
    containment, min_resemblance = config.containment, config.min_resemblance
    if containment:
        containment, min_resemblance = max(containment, SHORT_CONTAINMENT), max(min_resemblance, SHORT_MIN_RESEMBLANCE)
    return Thresholds(max(config.threshold, SHORT_THRESHOLD), containment, min_resemblance, short=True,
                      conceptual=conceptual)


def title_guarded(tokens: int, title: str | None, other_title: str | None, same_site: bool) -> bool:
    """The title guard against extraction collapse: two pages under unrelated titles are two
    pages, whatever text extraction gave them, when they are of one site (a sign-up block, a
    promo, "related stories" or a long "About us" taken for the content of both: on the
    benchmark every false drop of a shell page is of this kind), or when the text is short.
    A page of another site under another title with a longer text is a syndicated copy: such
    a copy keeps the other site's title (benchmarks/realcopies.py)."""
    return (same_site or tokens < GUARD_TOKENS) and titles_disagree(title, other_title)


def _distance(fp, doc: DocRecord) -> int:
    return (doc.fingerprint ^ fp.fingerprint).bit_count()


def exact_match(fp, title: str | None, doc: DocRecord | None, url: str | None = None) -> tuple[Match | None, bool]:
    """The kept page with the same words, unless the title guard keeps this one; (match, guarded)."""
    if doc is None:
        return None, False
    if title_guarded(fp.tokens, title, doc.title, same_site(url, doc.url)):
        return None, True
    return Match(doc, Reason.EXACT, _distance(fp, doc), 1.0, "exact"), False


def near_match(fp, title: str | None, candidates: Iterable[DocRecord], thresholds: Thresholds, score: Scorer,
               measure: str, url: str | None = None, site=None,
               exclude: int | None = None) -> tuple[Match | None, Guard | None]:
    """The best candidate over the thresholds (highest score, then nearest, then oldest), by the
    verifier's score or by containment. With `site` (rules.SiteEvidence: what the index knows of
    the page's site): the same site and headline, and no other page of the site under that title
    (`exclude`: the URL's own earlier page), one text inside the other at any length; the two
    pages compared without their sites' boilerplate lines (sitelines.py), by what is left of
    them; a text that is its site's boilerplate is no evidence against a kept page. (match, the
    guard that rejected a candidate: the title's first, then the boilerplate's)."""
    best, guards = None, set()
    compared = 0
    for doc in candidates:
        j, c = score(fp, doc)
        if j >= thresholds.threshold:
            value, how = j, measure
        elif thresholds.containment and c >= thresholds.containment and j >= thresholds.min_resemblance:
            value, how = c, "containment"
        elif (site is not None and thresholds.containment
              and (inside := site.same_headline(doc, exclude)) is not None and inside >= thresholds.containment):
            value, how = inside, "headline"
        else:
            if site is None or compared >= MAX_COMPARED or (j < EVIDENCE_RESEMBLANCE and c < EVIDENCE_CONTAINMENT):
                continue
            compared += 1
            own = site.compare(doc)
            found = own_match(own) if own is not None else None
            if found is None:
                continue
            value, how = found
        if title_guarded(fp.tokens, title, doc.title, same_site(url, doc.url)):
            guards.add(Guard.TITLE)
            continue
        if how != "content" and site is not None and j < GUARD_RESEMBLANCE and site.all_boilerplate(doc):
            guards.add(Guard.BOILERPLATE)  # the match is on lines of the site's other pages
            continue
        dist = _distance(fp, doc)
        rank = (-value, dist, doc.doc_id)
        if best is None or rank < best[0]:
            best = (rank, Match(doc, Reason.NEAR, dist, value, how))
    guard = Guard.TITLE if Guard.TITLE in guards else (Guard.BOILERPLATE if guards else None)
    return (best[1] if best else None), guard


def conceptual_match(fp, candidates: Iterable[DocRecord], threshold: float) -> Match | None:
    """The textually related candidate closest in LSI space, if within the threshold (seed 000)."""
    mine = fp.extras.get("lsi")
    if mine is None:
        return None
    best, best_cos = None, threshold
    for doc in candidates:
        if "lsi" in doc.extras:
            cos = cosine(mine, doc.extras["lsi"])
            if cos >= best_cos:
                best, best_cos = doc, cos
    return None if best is None else Match(best, Reason.CONCEPTUAL, _distance(fp, best), best_cos, "lsi")


def unchanged(fp, prior: DocRecord, score: Scorer) -> Match | None:
    """A revisit whose text is the one kept for its URL: the same words (measure `exact`), or the
    same but for churn (dates, times, counters: churn.py; measure `churn`)."""
    same_words = prior.extras.get(Extra.DIGEST) == fp.digest
    if not same_words:
        old = prior.text
        if old is not None:
            churn_only = same_but_churn(old, fp.text)
        else:  # no stored text: the digest with churn masked, kept when it differed
            churn_only = prior.extras.get(Extra.CHURN, prior.extras.get(Extra.DIGEST)) == churn_digest(fp.text)
        if not churn_only:
            return None
    similarity = 1.0 if same_words else round(score(fp, prior)[0], 4)
    return Match(prior, Reason.UNCHANGED, _distance(fp, prior), similarity, "exact" if same_words else "churn")


def supersedes(url: str, canonical: str | None, kept: DocRecord) -> bool:
    """The canonical rule: the kept page names `url` as its rel=canonical (or og:url), so the
    page at `url` is the one to keep, unless the two name each other (the first kept stays)."""
    named = kept.extras.get(Extra.CANONICAL)
    if not named or canonical_url(named.decode("utf-8", "surrogatepass")) != canonical_url(url):
        return False
    return not (canonical and canonical_url(canonical) == canonical_url(kept.url))
