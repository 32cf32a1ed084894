"""What the decision weighs for each (page, kept page) pair: one vector of measurements.

Each value is a measurement of the two pages, never a verdict: how much of one text the other
holds, how much of each page's text its site shows on other pages, where the words they share
sit, how alike their titles and templates are. The score (model.py) weighs them; a value that
cannot be measured (no kept text, no view of the page) is None and the score treats it as
unknown. `FEATURES` names them in order; docs/internals.md describes each one.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..index.records import DocRecord, Extra
from ..page.features import Text, placement
from ..page.site import same_site
from ..page.title import headline_coverage, titles
from ..page.visible import MAX_SAMPLE, containment, main_in, main_shingles, sample, sampled_containment, thin_contained
from .verify import sketch_scores

# (name, what it measures): the order of the vector
FEATURES: tuple[tuple[str, str], ...] = (
    ("exact", "1 when the two main texts have the same words"),
    ("resemblance", "shared word shingles / all of both texts' (Jaccard; exact with the kept text, else its sketch)"),
    ("contained", "share of this page's shingles in the kept text"),
    ("containing", "share of the kept text's shingles in this page's text"),
    ("own_resemblance", "resemblance once both sites' boilerplate lines are left out"),
    ("own_contained", "contained once both sites' boilerplate lines are left out"),
    ("shown_in_kept", "share of this page's main text that the kept page shows (its visible text)"),
    ("shows_kept", "share of the kept main text that this page shows"),
    ("chrome_page", "share of this page's main text in its navigation, header, footer or dialogs"),
    ("chrome_kept", "the same of the kept page"),
    ("cover_page", "share of this page's headline words its main text names"),
    ("cover_kept", "the same of the kept page"),
    ("sitelines_page", "share of this page's main text in lines other kept pages of its site show"),
    ("sitelines_kept", "the same of the kept page's, at its site"),
    ("template", "how alike the two pages are outside their main texts"),
    ("alike", "how alike the two pages' whole visible texts are"),
    ("title", "the best match of two title parts, once the parts other pages of each site carry are left out"),
    ("title_words", "shared title words / all of both titles', once those parts are left out"),
    ("title_numbers", "1 when each title has a number the other lacks (two sizes, two parts)"),
    ("lead_page", "share of this page's text before the first word it shares"),
    ("tail_page", "share of this page's text after the shared span (95% of its words shared in runs of five)"),
    ("lead_kept", "the same in the kept text"),
    ("tail_kept", "the same in the kept text"),
    ("cut_in_line", "how far inside a line the shared span stops, in the text it stops earlier in (0: at a line's "
                    "end, as a copy's extraction stops at a block; 1: five or more words in, as a quote is cut)"),
    ("words_page", "log10 of this page's words"),
    ("words_kept", "log10 of the kept page's words"),
    ("same_site", "1 when both pages are under one registered domain"),
)
NAMES: tuple[str, ...] = tuple(name for name, _ in FEATURES)
VIEW = ("shown_in_kept", "shows_kept", "chrome_page", "chrome_kept", "template", "alike")  # from the pages' views
MIN_OWN_SHOWN = 0.2  # a main text its own page shows less of than this (markup the view does not read): unknown

Measures = dict  # name -> float | None


class KeptTexts:
    """Kept pages' texts as measured, the most recently used ones (a kept page of a busy site is a
    candidate for many pages). A record's text never changes under its doc id."""

    def __init__(self, size: int = 256):
        self.size, self.texts = size, OrderedDict()  # type: ignore[var-annotated]

    def get(self, doc: DocRecord, w: int) -> Text | None:
        key = (doc.doc_id, w)
        found = self.texts.get(key)
        if found is not None:
            self.texts.move_to_end(key)
            return found
        text = doc.text
        if text is None:
            return None
        found = Text.of(text, w)
        if doc.doc_id is not None:
            self.texts[key] = found
            if len(self.texts) > self.size:
                self.texts.popitem(last=False)
        return found


@dataclass
class Side:
    """The page being decided, as the measures read it (one per page, shared by its candidates)."""

    fp: object  # page/fingerprint.Fingerprinted (text, tokens, sketch, view, digest)
    title: str | None
    url: str | None
    w: int
    # (text, words) -> the share of a text in lines kept pages show outside their own (DEDUP_BOILERPLATE)
    template: Callable[[str, int], float | None] | None = None
    _text: Text | None = None
    _template: float | None = None

    @property
    def text(self) -> Text:
        if self._text is None:
            self._text = Text.of(self.fp.text, self.w)  # type: ignore[attr-defined]
        return self._text


def measure(page: Side, doc: DocRecord, kept: Text | None, site=None, sketch_only: bool = False) -> Measures:
    """The measurements of `page` against the kept page `doc` (`kept`: its text as measured, None
    without the stored text). `site`: what the index knows of the page's site (rules.SiteEvidence),
    or None. `sketch_only`: the texts compared on their sketches (the lookup's first pass). What
    the two texts alone give is kept on the page by doc id (a record's text never changes under
    it): a second look (claims.py) measures again only what the site's lines say."""
    if sketch_only:
        return _texts(page, doc, kept, sketch_only=True)
    memo = getattr(page.fp, "measured", None)
    key = (doc.doc_id, page.w, kept is not None, page.url, page.title)
    base = memo.get(key) if memo is not None and doc.doc_id is not None else None
    if base is None:
        base = _texts(page, doc, kept)
        if memo is not None and doc.doc_id is not None:
            memo[key] = base
    m = dict(base)
    fp = page.fp
    if site is not None:
        own = site.compare(doc)
        if own is not None and own.removed:
            m["own_resemblance"], m["own_contained"] = own.resemblance, own.containment
        m["sitelines_page"], m["sitelines_kept"] = site.boilerplate_shares(doc)
    if page.template is not None:  # lines kept pages show outside their text count as the site's too
        if page._template is None:
            page._template = page.template(fp.text, fp.tokens) or 0.0  # type: ignore[attr-defined]
        m["sitelines_page"] = max(m["sitelines_page"] or 0.0, page._template)
        if doc.text is not None:
            m["sitelines_kept"] = max(m["sitelines_kept"] or 0.0, page.template(doc.text, doc.tokens) or 0.0)
    site_a, site_b = site.site_parts(doc) if site is not None else (frozenset(), frozenset())
    m["title"], m["title_words"], m["title_numbers"] = titles(page.title, doc.title, site_a, site_b,
                                                              same_site=bool(m["same_site"]))
    return m


def _texts(page: Side, doc: DocRecord, kept: Text | None, sketch_only: bool = False) -> Measures:
    """measure()'s part that reads the two pages only (texts, views, headlines, URLs), not the site's lines."""
    fp = page.fp
    view = getattr(fp, "view", None)
    m: Measures = dict.fromkeys(NAMES)
    m["exact"] = 1.0 if doc.extras.get(Extra.DIGEST) == fp.digest else 0.0  # type: ignore[attr-defined]
    if kept is not None and not sketch_only:
        mine = page.text
        both = np.intersect1d(mine.distinct, kept.distinct, assume_unique=True).size
        union = mine.distinct.size + kept.distinct.size - both
        m["resemblance"] = both / union if union else 1.0
        m["contained"] = both / mine.distinct.size if mine.distinct.size else 0.0
        m["containing"] = both / kept.distinct.size if kept.distinct.size else 0.0
    else:
        j, inter = _sketched(fp, doc)
        m["resemblance"] = j
        m["contained"] = min(1.0, inter / max(fp.shingles, 1))  # type: ignore[attr-defined]
        m["containing"] = min(1.0, inter / max(doc.shingles, 1))
    m["own_resemblance"], m["own_contained"] = m["resemblance"], m["contained"]
    if sketch_only:
        return m
    m["chrome_page"] = float(view.chrome) if view is not None else None
    chrome = doc.extras.get(Extra.CHROME)
    m["chrome_kept"] = chrome[0] / 100 if chrome is not None else None
    m["cover_page"] = headline_coverage(page.title, page.text.words)
    if kept is not None:
        m["cover_kept"] = headline_coverage(doc.title, kept.words)
    else:
        said = doc.extras.get(Extra.HEADLINE, b"\xff")[0]
        m["cover_kept"] = None if said == 255 else said / 100
    if view is not None:
        m["shown_in_kept"], m["shows_kept"] = _visible(page, view, doc, kept)
        m["template"], m["alike"] = _templates(page, view, doc, kept)
    elif getattr(fp, "known", False) and m["exact"]:
        # the fast path: this page is the kept page's very bytes (or its 304), whose view is that page's
        _itself(m, doc)
    m["same_site"] = 1.0 if same_site(page.url, doc.url) else 0.0
    if kept is not None:
        (m["lead_page"], m["tail_page"], m["lead_kept"], m["tail_kept"],
         m["cut_in_line"]) = placement(page.text, kept)
    m["words_page"] = math.log10(max(fp.tokens, 1))  # type: ignore[attr-defined]
    m["words_kept"] = math.log10(max(doc.tokens, 1))
    return m


def _itself(m: Measures, doc: DocRecord) -> None:
    """The view's measurements of a page against its own record (what the same bytes show)."""
    sampled = doc.extras.get(Extra.VISIBLE) or doc.extras.get(Extra.VISIBLE_THIN)
    m["chrome_page"] = m["chrome_kept"]
    m["cover_page"] = m["cover_kept"]
    if sampled is not None:
        m["shown_in_kept"] = m["shows_kept"] = m["template"] = m["alike"] = 1.0


def _main(t: Text) -> np.ndarray:
    """A text's distinct 5-shingles (what visible texts are compared on), once."""
    if t.main is None:
        t.main = main_shingles(t.tokens)
    return t.main


def _sketched(fp, doc: DocRecord) -> tuple[float, float]:
    """(resemblance, shared shingles) estimated from the two sketches."""
    from .verify import coarse_pair

    if doc.coarse:
        mine, theirs = coarse_pair(fp, doc)
        j, c = sketch_scores(mine, fp.shingles, theirs, doc.shingles)
    else:
        j, c = sketch_scores(fp.sketch, fp.shingles, doc.sketch, doc.shingles)
    return j, c * max(fp.shingles, 1)


def _visible(page: Side, view, doc: DocRecord, kept: Text | None) -> tuple[float | None, float | None]:
    """(this page's main text inside the kept page's visible text, the kept main text inside
    this page's), each against how much of that main text its own page shows (a text partly in
    markup the view does not read, an image's caption, is as visible on its copy as on its page):
    estimated on the kept page's visible sample, exact on this page's view."""
    inside = mine = None
    sampled = doc.extras.get(Extra.VISIBLE)
    main = _main(page.text)
    if main.size:
        mine = containment(main, view.visible)
    if sampled is not None:
        visible = np.frombuffer(sampled, dtype=">u4").astype(np.uint32)
        inside = sampled_containment(main, visible)
        theirs = sampled_containment(_main(kept), visible) if kept is not None else None
    elif (thin := doc.extras.get(Extra.VISIBLE_THIN)) is not None:
        inside = thin_contained(main, thin)
        theirs = None
    else:
        theirs = None
    shows = None
    if kept is not None:
        if _main(kept).size:
            shows = containment(_main(kept), view.visible)
    elif (thin_main := doc.extras.get(Extra.MAIN_THIN)) is not None:
        shows = main_in(thin_main, view.visible)
    return _relative(inside, mine), _relative(shows, theirs)


def _relative(shown: float | None, own: float | None) -> float | None:
    """How much of a main text the other page shows, against how much its own page shows (1: as
    much); the raw share when its own page's is not known, None when its own page shows too
    little of it to tell."""
    if shown is None or own is None:
        return shown
    if own < MIN_OWN_SHOWN:
        return None
    return min(1.0, shown / own)


def _templates(page: Side, view, doc: DocRecord, kept: Text | None) -> tuple[float | None, float | None]:
    """(how alike the two pages are outside their main texts, how alike their visible texts are),
    each the smaller share of either page's visible sample the other holds."""
    sampled = doc.extras.get(Extra.VISIBLE)
    if sampled is None:
        return None, None
    theirs, mine = np.frombuffer(sampled, dtype=">u4").astype(np.uint32), sample(view.visible)
    for capped in (theirs, mine):  # a capped sample is a bottom-k: compare under its cut
        if capped.size >= MAX_SAMPLE:
            theirs, mine = theirs[theirs <= capped[-1]], mine[mine <= capped[-1]]
    alike = _overlap(theirs, mine)
    if kept is None:
        return None, alike
    outside = _overlap(np.setdiff1d(theirs, sample(_main(kept)), assume_unique=True),
                       np.setdiff1d(mine, sample(_main(page.text)), assume_unique=True))
    return outside, alike


def _overlap(a: np.ndarray, b: np.ndarray, at_least: int = 8) -> float | None:
    """The smaller share of each sample the other holds; None when one is too small to tell."""
    if a.size < at_least or b.size < at_least:
        return None
    both = np.intersect1d(a, b, assume_unique=True).size
    return min(both / a.size, both / b.size)
