"""Boilerplate learned per site (seed 004: text repeated across a host's pages says nothing about
the page), and the measurement of two pages on what is left of them.

Extraction keeps text that is not the article: a site's standing promo, an author's bio, a
privacy or sign-up text, teasers of other stories. A copy of an article on another site (or a
print version, or the page itself fetched later) then shares the article but not those
leftovers, and its resemblance to the kept page can fall far below the threshold. Each kept
page files the lines of its extracted text under its site (registered domain) and its canonical
URL, and takes them out again when it leaves the index (an update, DEDUP_WINDOW, `index
remove`). A line that another kept page of the same site shows is that site's boilerplate. Both
pages of a pair are measured again without such lines (exact word shingles of the rest:
measures.py `own_resemblance`, `own_contained`): copies whose difference was leftovers show it,
with nothing learned from a list of phrases. (A page's lines and their keys are page/site.py's;
the index files them.)

The same knowledge is measured the other way: how much of a page's text is lines its site shows on
other pages (extraction returned the site's block instead of the article) is one of the
measurements the score weighs (measures.py `sitelines_page`). And the parts of its title other
pages of its site carry under other titles (its name, a section) are known, so two titles are
compared without them (`site_parts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..page.site import Lines, holder_of, lines_of, title_key, title_part_keys

MIN_PARTS = 2  # other kept pages of a site carrying a title part make it the site's (its name, a section)


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


def _share(lines: Lines, boilerplate: set[bytes]) -> float | None:
    total = sum(lines.words)
    if not total:
        return None
    return sum(n for n, key in zip(lines.words, lines.keys) if key is not None and key in boilerplate) / total


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
        found = None if text is None else lines_of(text, doc.url, doc.title)
        if found is not None and doc.doc_id is not None:
            self.lines[doc.doc_id] = found
            if len(self.lines) > self.size:
                self.lines.popitem(last=False)
        return found


class SitePage:
    """A page's lines under its site, and what the index holds for them, within one transaction."""

    def __init__(self, url: str, lines: Lines, title: str | None = None, kept: KeptLines | None = None):
        self.url, self.lines, self.keys, self.title = url, lines, lines.filed, title
        self.title_key = title_key(url, title)
        self.kept = kept if kept is not None else KeptLines()
        self._holders: list[list[int]] | None = None
        self._titled: list[int] | None = None
        self.visible: Callable[[list[int]], list[int]] | None = None  # the pages it may see (claims.Racing)
        self._scores: dict[int | None, OwnScores | None] = {}
        self._rests: dict[frozenset, tuple[int, np.ndarray]] = {}
        self._held: dict[bytes, list[int]] = {}  # site line key -> its kept pages, read in this transaction

    @classmethod
    def of(cls, url: str | None, text: str, title: str | None = None, lines: Lines | None = None,
           kept: KeptLines | None = None) -> "SitePage | None":
        """`lines`: lines_of(text, url), when a worker found them already; `kept`: the kept pages'
        lines cut before (Deduplicator's)."""
        if lines is None and url:
            lines = lines_of(text, url, title)
        return None if lines is None or url is None else cls(url, lines, title, kept)

    def holders(self, txn) -> list[list[int]]:
        if self._holders is None:
            self._holders = self.held(txn, self.keys)
        return self._holders

    def held(self, txn, keys: list[bytes]) -> list[list[int]]:
        """txn.site_holders(keys), each key read once in the transaction (a networked store's round trip)."""
        missing = list(dict.fromkeys(k for k in keys if k not in self._held))
        if missing:
            self._held.update(zip(missing, txn.site_holders(missing)))
        return [self._held[k] for k in keys]

    def prefetch(self, txn, docs) -> None:
        """Read at once the site lines that measuring this page against each of `docs` reads
        (compare, boilerplate_shares, site_parts): one read for all candidates, not three each."""
        keys = list(self.keys)
        for url, title, kept in [(self.url, self.title, None), *((d.url, d.title, self.kept.get(d)) for d in docs)]:
            parts, whole = title_part_keys(url, title)
            keys += [key for _, key in parts] + ([whole] if whole else []) + (kept.filed if kept is not None else [])
        self.held(txn, keys)

    def titled(self, txn) -> list[int]:
        """The kept pages of this page's site under its headline (doc ids)."""
        if self._titled is None:
            titled = txn.title_docs(self.title_key) if self.title_key is not None else []
            self._titled = self.visible(titled) if self.visible is not None and titled else titled
        return self._titled

    def _exclude(self, doc) -> set[int]:
        return {holder_of(self.url), holder_of(doc.url)}

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
                theirs = boilerplate_keys(kept_keys, self.held(txn, kept_keys), exclude)
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

    def boilerplate_shares(self, txn, doc) -> tuple[float | None, float | None]:
        """The share of this page's words, and of the kept page's, in lines another kept page of
        its site shows (not these two): how much of each main text is its site's boilerplate."""
        exclude = self._exclude(doc)
        mine = boilerplate_keys(self.keys, self.holders(txn), exclude)
        kept = self.kept.get(doc)
        theirs = None
        if kept is not None:
            found = boilerplate_keys(kept.filed, self.held(txn, kept.filed), exclude)
            theirs = _share(kept, found)
        return _share(self.lines, mine), theirs

    def site_parts(self, txn, doc) -> tuple[frozenset, frozenset]:
        """The parts of this page's title, and of the kept page's, that MIN_PARTS other kept pages
        of their site carry under other titles (its name, a section: no headline), as word sets."""
        exclude = self._exclude(doc)
        sides = [title_part_keys(self.url, self.title), title_part_keys(doc.url, doc.title)]
        keys = [k for parts, whole in sides for k in [*(key for _, key in parts), *([whole] if whole else [])]]
        if not keys:
            return frozenset(), frozenset()
        held = {k: set(h) for k, h in zip(keys, self.held(txn, keys))}
        out = []
        for parts, whole in sides:
            same_title = held.get(whole, set()) if whole is not None else set()
            out.append(frozenset(words for words, key in parts if len(held[key] - same_title - exclude) >= MIN_PARTS))
        return out[0], out[1]
