"""Boilerplate learned per site (seed 004: text repeated across a host's pages says nothing about
the page), and the comparison of two pages on what is left of them.

Extraction keeps text that is not the article: a site's standing promo, an author's bio, a
privacy or sign-up text, teasers of other stories. A copy of an article on another site (or a
print version, or the page itself fetched later) then shares the article but not those
leftovers, and its resemblance to the kept page can fall far below the threshold. Each kept
page files the lines of its extracted text under its site (registered domain) and its canonical
URL, and takes them out again when it leaves the index (an update, DEDUP_WINDOW, `index
remove`). A line that another kept page of the same site shows is that site's boilerplate. When
a candidate was found but its resemblance is too low, and either page has such lines, both pages
are compared again without them (exact word shingles of the rest): copies whose difference was
leftovers are caught, with nothing learned from a list of phrases. (A page's lines and their keys
are page/site.py's; the index files them.)

The same knowledge guards the other way: a page whose whole text is lines its site shows on
other pages (extraction returned the site's block instead of the article) is not dropped on a
match of that text unless the two texts are all but identical.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..page.site import Lines, holder_of, lines_of, title_key

MIN_OWN = 100  # words each page needs outside its site's boilerplate to be compared on the rest
OWN_RESEMBLANCE = 0.5  # a copy on what is left: this resemblance of the rest,
OWN_CONTAINMENT, OWN_MIN_RESEMBLANCE = 0.8, 0.2  # or the page's rest this much inside the kept one's, and
# close to it. Never the other way: a page holding a kept one plus text of its own is a page
GUARD_OWN = 15  # a page with fewer words outside lines that GUARD_PAGES other pages of its site show
GUARD_PAGES = 2  # is all boilerplate, and a copy only when GUARD_RESEMBLANCE close to the kept page (one
GUARD_RESEMBLANCE = 0.95  # other page is not enough: copies of an article kept apart share its lines too)
EVIDENCE_RESEMBLANCE, EVIDENCE_CONTAINMENT = 0.05, 0.3  # a candidate under these is not compared again
MAX_COMPARED = 4  # candidates compared again per page at most (8 found no more copies over six seeds)


@dataclass(frozen=True)
class OwnScores:
    """Two pages compared without their sites' boilerplate lines."""

    own: int  # the page's own words
    other_own: int  # the kept page's
    resemblance: float
    containment: float  # of the page's rest in the kept page's
    removed: bool = True  # a boilerplate line was left out of either page (else the raw rules decided)


def boilerplate_keys(keys: list[bytes], holders: list[list[int]], exclude: set[int], pages: int = 1) -> set[bytes]:
    """The keys that `pages` kept pages other than those in `exclude` were filed under: the site's boilerplate."""
    return {k for k, ids in zip(keys, holders) if sum(i not in exclude for i in ids) >= pages}


def own_match(s: OwnScores) -> tuple[float, str] | None:
    """(score, how) when the rests make the pages copies; None when not."""
    if not s.removed or min(s.own, s.other_own) < MIN_OWN:
        return None
    if s.resemblance >= OWN_RESEMBLANCE:
        return s.resemblance, "content"
    if s.containment >= OWN_CONTAINMENT and s.resemblance >= OWN_MIN_RESEMBLANCE:
        return s.containment, "content"
    return None


class KeptLines:
    """Kept pages' texts cut into lines (and shingles), the most recently used ones: a kept page of
    a busy site is a candidate for many pages, and unpacking and cutting its text each time cost
    more than the rest of a decision. A record's text never changes under its doc id."""

    def __init__(self, size: int = 256):
        from collections import OrderedDict

        self.size, self.lines = size, OrderedDict()  # type: ignore[var-annotated]

    def get(self, doc) -> Lines | None:
        found = self.lines.get(doc.doc_id)
        if found is not None:
            self.lines.move_to_end(doc.doc_id)
            return found
        text = doc.text
        found = None if text is None else lines_of(text, doc.url)
        if found is not None and doc.doc_id is not None:
            self.lines[doc.doc_id] = found
            if len(self.lines) > self.size:
                self.lines.popitem(last=False)
        return found


class SitePage:
    """A page's lines under its site, and what the index holds for them, within one transaction."""

    def __init__(self, url: str, lines: Lines, title: str | None = None, kept: KeptLines | None = None):
        self.url, self.lines, self.keys = url, lines, lines.filed
        self.title_key = title_key(url, title)
        self.kept = kept if kept is not None else KeptLines()
        self._holders: list[list[int]] | None = None
        self._titled: list[int] | None = None
        self.visible: Callable[[list[int]], list[int]] | None = None  # the pages it may see (claims.Racing)
        self._scores: dict[int | None, OwnScores | None] = {}
        self._rests: dict[frozenset, tuple[int, np.ndarray]] = {}

    @classmethod
    def of(cls, url: str | None, text: str, title: str | None = None, lines: Lines | None = None,
           kept: KeptLines | None = None) -> "SitePage | None":
        """`lines`: lines_of(text, url), when a worker found them already; `kept`: the kept pages'
        lines cut before (Deduplicator's)."""
        if lines is None and url:
            lines = lines_of(text, url)
        return None if lines is None or url is None else cls(url, lines, title, kept)

    def holders(self, txn) -> list[list[int]]:
        if self._holders is None:
            self._holders = txn.site_holders(self.keys)
        return self._holders

    def titled(self, txn) -> list[int]:
        """The kept pages of this page's site under its headline (doc ids)."""
        if self._titled is None:
            titled = txn.title_docs(self.title_key) if self.title_key is not None else []
            self._titled = self.visible(titled) if self.visible is not None and titled else titled
        return self._titled

    def _exclude(self, doc) -> set[int]:
        return {holder_of(self.url), holder_of(doc.url)}

    def all_boilerplate(self, txn, doc) -> bool:
        """The page's text is (all but) lines GUARD_PAGES other kept pages of its site show: no
        evidence of a copy of `doc`."""
        known = boilerplate_keys(self.keys, self.holders(txn), self._exclude(doc), GUARD_PAGES)
        own = sum(n for n, key in zip(self.lines.words, self.lines.keys) if key is None or key not in known)
        return own < GUARD_OWN

    def compare(self, txn, doc, w: int) -> OwnScores | None:
        """This page and a kept one without their sites' boilerplate; None without the kept text."""
        if doc.doc_id not in self._scores:
            kept = self.kept.get(doc)
            if kept is None:
                self._scores[doc.doc_id] = None
            else:
                exclude = self._exclude(doc)
                kept_keys = kept.filed
                mine = boilerplate_keys(self.keys, self.holders(txn), exclude)
                theirs = boilerplate_keys(kept_keys, txn.site_holders(kept_keys), exclude)
                if not mine and not theirs:  # nothing to leave out: the raw rules have decided
                    self._scores[doc.doc_id] = OwnScores(0, 0, 0.0, 0.0, False)
                    return self._scores[doc.doc_id]
                key = frozenset(mine)  # (the same for most candidates: cut once)
                if key not in self._rests:
                    self._rests[key] = self.lines.rest(mine, w)
                own, a = self._rests[key]
                other, b = kept.rest(theirs, w)
                if not a.size or not b.size:
                    scores = OwnScores(own, other, 0.0, 0.0, bool(mine or theirs))
                else:
                    common = np.intersect1d(a, b, assume_unique=True).size
                    scores = OwnScores(own, other, common / (a.size + b.size - common), common / a.size,
                                       bool(mine or theirs))
                self._scores[doc.doc_id] = scores
        return self._scores[doc.doc_id]

    def same_headline(self, txn, doc, w: int, exclude: int | None = None) -> float | None:
        """When the kept page is of this page's site, under the same headline, and no other kept
        page of the site has that title (`exclude`: this URL's own earlier page): a print, mobile
        or tracking version of one article. Then how much of this page's text it holds, counted
        exactly (a short page in a long one is beyond the sketches' precision); else None."""
        if [d for d in self.titled(txn) if d != exclude] != [doc.doc_id]:  # (before the text is unpacked)
            return None
        kept = self.kept.get(doc)
        if kept is None:
            return None
        _, mine, _ = self.lines.shingled(w)
        mine = np.unique(mine)
        if not mine.size:
            return None
        theirs = np.unique(kept.shingled(w)[1])
        return np.intersect1d(mine, theirs, assume_unique=True).size / mine.size
