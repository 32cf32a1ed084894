"""Step 7 as pure functions: a page's fingerprint, the kept pages found for it and the settings
in; a typed match out. No store, no clock, no state: `show` and the crawl apply the same rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np

from .churn import churn_digest, same_but_churn
from .excerpt import one_quotes_other
from ..page.plugins import cosine
from .guards import same_headline, titles_disagree
from ..page.title import headline_coverage
from ..index.records import DocRecord, Extra, names_as_canonical
from ..page.site import canonical_url
from ..page.site import same_site
from .sitelines import EVIDENCE_CONTAINMENT, EVIDENCE_RESEMBLANCE, GUARD_RESEMBLANCE, MAX_COMPARED, own_match
from ..page.tokens import tokenize
from ..verdict import Guard, Reason, Thresholds
from ..page.visible import (MAX_SAMPLE, MAX_THIN, PageView, containment, main_in, main_shingles, sample,
                            sampled_containment, thin_contained, thin_main, thin_visible, thin_values)

GUARD_TOKENS = 100  # a page of another site with a shorter text needs an agreeing title to be its copy
CHROME_SHARE = 0.5  # a main text this much in its page's chrome (visible.py) needs an agreeing title too
MIN_CONTAINED = 50  # 5-word shingles a main text needs to be found inside another page's visible text
FULLER = 0.9  # the kept main text this much inside the page's main text too: a fuller version of it
ABOUT = 0.5  # a main text naming this share of its headline's words is about it
SHORT_TOKENS = 100  # texts shorter than this (obituaries, product blurbs) are mostly template:
SHORT_THRESHOLD = 0.8  # they need this much resemblance, or to be all but wholly inside the
SHORT_CONTAINMENT, SHORT_MIN_RESEMBLANCE = 0.95, 0.6  # other page (a teaser) and close to it
ALIKE = 0.85  # an untrusted main text's match stands when each page shows this share of the other's visible text
ONE_TEMPLATE = 0.3  # pages showing this much of each other's visible text share a template
BARE = 0.9  # a kept page whose visible sample is this much its main text's shows nothing else
TWO_TEMPLATES = 0.1  # pages showing less of each other's visible text outside their main texts are two sites'
ARTICLE_TOKENS = 300  # main texts this long under two titles of one site may be one article (about_their_titles)

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


def title_guarded(tokens: int, title: str | None, other_title: str | None, same_site: bool,
                  chrome: bool = False) -> bool:
    """The title guard against extraction collapse: two pages under unrelated titles are two
    pages, whatever text extraction gave them, when they are of one site (a sign-up block, a
    promo, "related stories" or a long "About us" taken for the content of both: on the
    benchmark every false drop of a shell page is of this kind), or when the text is short. A
    page of another site under another title with a longer text is a syndicated copy: such a
    copy keeps the other site's title (benchmarks/realcopies.py). When either main text is
    mostly its page's chrome (one consent dialog on two sites' pages), the titles must name the
    same headline, at any site and length."""
    if chrome:
        return not same_headline(title, other_title)
    return (same_site or tokens < GUARD_TOKENS) and titles_disagree(title, other_title)


def chrome_text(fp, doc: DocRecord) -> bool:
    """Either main text is mostly its page's chrome (visible.py; a kept page's share is in its record)."""
    view = getattr(fp, "view", None)
    mine = view.chrome if view is not None else 0.0
    return mine >= CHROME_SHARE or doc.extras.get(Extra.CHROME, b"\x00")[0] >= CHROME_SHARE * 100


def _guard(fp, title: str | None, doc: DocRecord, url: str | None) -> Guard | None:
    """The guard that keeps this page beside `doc`: the title's (one site or a short text), the
    chrome's (a main text that is chrome, any site), or none."""
    site, chrome = same_site(url, doc.url), chrome_text(fp, doc)
    if not title_guarded(fp.tokens, title, doc.title, site, chrome):
        return None
    if not chrome and site and fp.tokens >= ARTICLE_TOKENS and about_their_titles(fp, title, doc):
        return None
    if (not chrome and site and fp.tokens >= GUARD_TOKENS and two_templates(fp, doc)
            and all(c is None or c >= ABOUT for c in coverages(fp, title, doc)) and not quoted(fp, title, doc)):
        # each page's own text, about its headline (so neither untrusted: no chrome here), moved
        # between two sites' templates under one host
        return None
    return Guard.CHROME if chrome else Guard.TITLE


def two_templates(fp, doc: DocRecord) -> bool:
    """The two pages share next to nothing outside their main texts (under TWO_TEMPLATES of what
    each shows besides it): two sites' templates, though one host serves both (a mirror, a crawl
    of one host's archive); a site's own pages share its header, menus and footer."""
    view = getattr(fp, "view", None)
    if view is None:
        return False
    outside = template_alike(view, fp.text, doc)
    return outside is not None and outside < TWO_TEMPLATES


def coverages(fp, title: str | None, doc: DocRecord) -> tuple[float | None, float | None]:
    """How much of its own headline each main text names: this page's, the kept page's (from its
    text, else its record's `hc`)."""
    mine = headline_coverage(title, frozenset(tokenize(fp.text)))
    if doc.text is not None:
        return mine, headline_coverage(doc.title, frozenset(tokenize(doc.text)))
    said = doc.extras.get(Extra.HEADLINE, b"\xff")[0]
    return mine, None if said == 255 else said / 100


def about_their_titles(fp, title: str | None, doc: DocRecord) -> bool:
    """The words the two main texts share name most of each page's headline (or one has no
    headline to tell, and the other's is named): the title guard's reason, one block taken for
    two pages' content (a sign-up box, "related stories", a product grid), names neither page's
    headline, so two such texts are one article under two titles of its site (a syndicated or
    print copy in the site's template). Needs the kept text (DEDUP_STORE_TEXT): a headline
    line of each page's own is in no shared words."""
    if doc.text is None:
        return False
    theirs = tokenize(doc.text)
    if len(theirs) < ARTICLE_TOKENS:  # a shell or notice lists the site's headlines in fewer words
        return False
    shared = frozenset(tokenize(fp.text)) & frozenset(theirs)
    known = [c for c in (headline_coverage(title, shared), headline_coverage(doc.title, shared)) if c is not None]
    return bool(known) and all(c >= ABOUT for c in known)


def _distance(fp, doc: DocRecord) -> int:
    return (doc.fingerprint ^ fp.fingerprint).bit_count()


def exact_match(fp, title: str | None, doc: DocRecord | None, url: str | None = None) -> tuple[Match | None, Guard | None]:
    """The kept page with the same words, unless a guard keeps this one; (match, the guard). The
    exact entry names a page by the words' digest; the page's own digest must be the same (an entry
    left behind, or a page filed over it where writes are not one transaction, names another)."""
    if doc is None or doc.extras.get(Extra.DIGEST) != fp.digest:
        return None, None
    guard = _guard(fp, title, doc, url)
    if guard is not None:
        return None, guard
    return Match(doc, Reason.EXACT, _distance(fp, doc), 1.0, "exact"), None


def near_match(fp, title: str | None, candidates: Iterable[DocRecord], thresholds: Thresholds, score: Scorer,
               measure: str, url: str | None = None, site=None,
               exclude: int | None = None) -> tuple[Match | None, Guard | None]:
    """The best candidate over the thresholds (highest score, then nearest, then oldest), by the
    verifier's score or by containment. With `site` (rules.SiteEvidence: what the index knows of
    the page's site): the same site and headline, and no other page of the site under that title
    (`exclude`: the URL's own earlier page), one text inside the other at any length; the two
    pages compared without their sites' boilerplate lines (sitelines.py), by what is left of
    them; a text that is its site's boilerplate is no evidence against a kept page. (match, the
    guard that rejected a candidate: the title's first, then the chrome's, a quote's, the boilerplate's)."""
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
        titled = _guard(fp, title, doc, url)
        if titled is not None:
            guards.add(titled)
            continue
        if (title and doc.title and doc.text is not None and not same_headline(title, doc.title)
                and one_quotes_other(fp.text, doc.text)):
            guards.add(Guard.UNTRUSTED)  # one quotes the other's opening under its own headline; the next candidate may be a copy
            continue
        if how != "content" and site is not None and j < GUARD_RESEMBLANCE and site.all_boilerplate(doc):
            guards.add(Guard.BOILERPLATE)  # the match is on lines of the site's other pages
            continue
        dist = _distance(fp, doc)
        rank = (-value, dist, doc.doc_id)
        if best is None or rank < best[0]:
            best = (rank, Match(doc, Reason.NEAR, dist, value, how))
    guard = next((g for g in (Guard.TITLE, Guard.CHROME, Guard.UNTRUSTED, Guard.BOILERPLATE) if g in guards), None)
    return (best[1] if best else None), guard


def untrusted(chrome: float, coverage: float | None) -> bool:
    """A main text that may not be the page's content: it names none of its headline's words, or
    it is mostly its page's chrome and names few of them (a consent text, a forum engine's thread
    chrome, a shop's banner taken for the page). Measured on the gold main texts of the dev split
    (docs/tuning.md): such texts are where extraction missed the content."""
    return coverage == 0.0 or (chrome >= CHROME_SHARE and (coverage is None or coverage < ABOUT))


def trust_of(fp, title: str | None, doc: DocRecord) -> tuple[bool, bool]:
    """(this page's main text untrusted, the kept page's), from the view, the kept record's chrome
    share and each main text's headline coverage."""
    view = getattr(fp, "view", None)
    mine, theirs = coverages(fp, title, doc)
    return (untrusted(view.chrome if view is not None else 0.0, mine),
            untrusted(doc.extras.get(Extra.CHROME, b"\x00")[0] / 100, theirs))


HELD = 0.8  # a page holding this share of a kept text's words carries that text, not a quote of it


def quoted(fp, title: str | None, doc: DocRecord) -> bool:
    """One page quotes the other, whichever was kept first: its text names its own headline, but
    only in words the other text does not have, and holds less than HELD of the other text's
    words (a teaser, a promo banner with another page's first paragraphs, beside content of its
    own). A syndicated copy under its host page's title carries the whole text (HELD or more).
    Needs the kept text (DEDUP_STORE_TEXT)."""
    if doc.text is None:
        return False
    mine, theirs = frozenset(tokenize(fp.text)), frozenset(tokenize(doc.text))
    return _quotes(title, mine, theirs) or _quotes(doc.title, theirs, mine)


def carried(fp, doc: DocRecord, mine_untrusted: bool) -> bool:
    """The untrusted side's text holds HELD or more of the trusted side's words: it carries that
    page's content whole (a syndicated copy under its host page's title names none of it), not
    a part of it in a banner. Without the kept text (DEDUP_STORE_TEXT off) it cannot be told: yes."""
    if doc.text is None:
        return True
    mine, theirs = frozenset(tokenize(fp.text)), frozenset(tokenize(doc.text))
    untrusted, trusted = (mine, theirs) if mine_untrusted else (theirs, mine)
    return bool(trusted) and len(untrusted & trusted) >= HELD * len(trusted)


def _quotes(title: str | None, mine: frozenset, theirs: frozenset) -> bool:
    shared = mine & theirs
    if not title or not theirs or len(shared) >= HELD * len(theirs):
        return False
    own, in_shared = headline_coverage(title, mine - theirs), headline_coverage(title, shared)
    return own is not None and own >= ABOUT and not in_shared


def shown_alike(view: PageView, doc: DocRecord, at_least: int = 8) -> float | None:
    """How alike the two pages' visible texts are: the smaller share of each page's visible
    sample that the other's holds (both sampled the same way: the kept page's record holds its
    sample); None when a sample is too small to tell or the kept page filed none."""
    sampled = doc.extras.get(Extra.VISIBLE)
    if sampled is not None:
        theirs, mine, cap = np.frombuffer(sampled, dtype=">u4").astype(np.uint32), sample(view.visible), MAX_SAMPLE
    elif (thin := doc.extras.get(Extra.VISIBLE_THIN)) is not None:
        theirs, mine, cap = np.frombuffer(thin, dtype=">u2").astype(np.uint16), thin_values(view.visible), MAX_THIN
    else:
        return None
    return _overlap(theirs, mine, cap, at_least)


def _overlap(theirs: np.ndarray, mine: np.ndarray, cap: int, at_least: int) -> float | None:
    """The smaller share of each sorted sample that the other holds; None when one is too small."""
    for capped in (theirs, mine):  # a capped sample is a bottom-k: compare under its cut
        if capped.size >= cap:
            theirs, mine = theirs[theirs <= capped[-1]], mine[mine <= capped[-1]]
    if theirs.size < at_least or mine.size < at_least:
        return None
    both = np.intersect1d(theirs, mine, assume_unique=True).size
    return min(both / theirs.size, both / mine.size)


def template_alike(view: PageView, text: str, doc: DocRecord, at_least: int = 8) -> float | None:
    """How alike the two pages are outside their main texts (shown_alike on what each shows
    besides its main text): one template around two texts scores high, two sites' pages around
    one article low. Needs the kept text (else the whole visible text is compared)."""
    sampled = doc.extras.get(Extra.VISIBLE)
    if sampled is None or doc.text is None:
        return shown_alike(view, doc, at_least)
    theirs, mine = np.frombuffer(sampled, dtype=">u4").astype(np.uint32), sample(view.visible)
    for capped in (theirs, mine):  # a capped sample is a bottom-k: cut both under it before taking the main texts out
        if capped.size >= MAX_SAMPLE:
            theirs, mine = theirs[theirs <= capped[-1]], mine[mine <= capped[-1]]
    theirs = np.setdiff1d(theirs, sample(main_shingles(doc.text)), assume_unique=True)
    mine = np.setdiff1d(mine, sample(main_shingles(text)), assume_unique=True)
    return _overlap(theirs, mine, MAX_SAMPLE, at_least)


@dataclass
class Evidence:
    """A page's main text as the visible-text rule compares it: its 5-word shingles, how much of
    its headline it names, what it shows beside it (visible.PageView, None without markup)."""

    shingles: np.ndarray
    words: frozenset[str]
    coverage: float | None  # of the title's headline words (visible.headline_coverage)
    view: PageView | None

    @classmethod
    def of(cls, text: str, title: str | None, view: PageView | None) -> "Evidence":
        tokens = tokenize(text or "")
        words = frozenset(tokens)
        return cls(main_shingles(tokens), words, headline_coverage(title, words), view)


def visible_containment(page: Evidence, doc: DocRecord) -> float | None:
    """How much of one page's main text the other page shows, under the same headline (rules.contained):
    the page's main text inside the kept page's visible text (estimated on the kept page's sample),
    or the kept page's main text inside this page's visible text (exact). Each main text needs
    MIN_CONTAINED shingles and must not be mostly its page's chrome. This page holding the kept
    page's text counts only when it is a fuller version of it (the kept main text inside this one's
    too: a print version beside a page extracted short) or when its own main text is not about its
    headline while the kept one's is (its extraction took the wrong block, as a syndicated copy's
    related list), or when the kept page shows nothing but its main text, about its headline (a
    print version kept first: `_bare`); a page about its headline holding a kept page's other
    text is a page (a full page beside its app shell)."""
    found: list[float] = []
    view = page.view
    sampled = doc.extras.get(Extra.VISIBLE)
    if sampled is not None and page.shingles.size >= MIN_CONTAINED and (view is None or view.chrome < CHROME_SHARE):
        inside = sampled_containment(page.shingles, np.frombuffer(sampled, dtype=">u4").astype(np.uint32))
        if inside is not None:
            found.append(inside)
    thin = doc.extras.get(Extra.VISIBLE_THIN)
    if thin is not None and page.shingles.size >= MIN_CONTAINED and (view is None or view.chrome < CHROME_SHARE):
        inside = thin_contained(page.shingles, thin)
        if inside is not None:
            found.append(inside)
    kept_chrome = doc.extras.get(Extra.CHROME, b"\x00")[0] / 100
    if view is None or kept_chrome >= CHROME_SHARE:
        return max(found) if found else None
    text = doc.text
    kept_main = doc.extras.get(Extra.MAIN_THIN) if text is None else None
    if text is not None:
        theirs = Evidence.of(text, doc.title, None)
        if theirs.shingles.size >= MIN_CONTAINED:
            shown: float | None = containment(theirs.shingles, view.visible)
            fuller = containment(theirs.shingles, page.shingles) >= shown * FULLER  # type: ignore[operator]
            kept_coverage = theirs.coverage
            if (not fuller and sampled is not None and kept_coverage is not None and kept_coverage >= ABOUT
                    and theirs.shingles.size >= page.shingles.size):  # (an app shell's block is shorter than the article)
                fuller = _bare(np.frombuffer(sampled, dtype=">u4").astype(np.uint32), theirs.shingles)
        else:
            shown = None
    elif kept_main is not None and int.from_bytes(doc.extras.get(Extra.MAIN_SHINGLES, b""), "big") >= MIN_CONTAINED:
        shown = main_in(kept_main, view.visible)  # (estimated on the kept main text's thin sample)
        inside = main_in(kept_main, page.shingles)
        fuller = shown is not None and inside is not None and inside >= shown * FULLER
        said = doc.extras.get(Extra.HEADLINE, b"\xff")[0]
        kept_coverage = None if said == 255 else said / 100
    else:
        shown = None
    if shown is not None:
        misread = (page.coverage is not None and kept_coverage is not None
                   and page.coverage < ABOUT and kept_coverage >= ABOUT)
        if fuller or misread:
            found.append(shown)
    return max(found) if found else None


def _bare(visible_sample: np.ndarray, main: np.ndarray) -> bool:
    """The kept page shows nothing but its main text (BARE of its visible sample): a print
    version, whose whole text a fuller page showing it carries (when that text is no shorter than
    the fuller page's own main text: an app shell's or paywall's block is shorter than the article)."""
    kept = sample(main)
    if visible_sample.size >= MAX_SAMPLE:
        kept = kept[kept <= visible_sample[-1]]
    return visible_sample.size >= 8 and float(np.isin(visible_sample, kept, assume_unique=True).mean()) >= BARE


def thin_view(text: str, title: str | None, view: PageView) -> dict[str, bytes]:
    """What a kept page files for the visible-text rule when its text is not stored: thin samples
    of its visible and main texts, its main text's size and how much of its headline it names."""
    mine = Evidence.of(text, title, view)
    coverage = 255 if mine.coverage is None else min(100, round(mine.coverage * 100))
    return {Extra.VISIBLE_THIN: thin_visible(view.visible), Extra.MAIN_THIN: thin_main(mine.shingles),
            Extra.MAIN_SHINGLES: min(mine.shingles.size, 65535).to_bytes(2, "big"), Extra.HEADLINE: bytes([coverage])}


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
    if not named or not names_as_canonical(named, url):
        return False
    return not (canonical and canonical_url(canonical) == canonical_url(kept.url))
