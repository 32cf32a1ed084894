"""Batch policy: which page of a group of duplicates to keep when all pages are known up front.

A crawl decides online and keeps the first copy. Over a finished collection, seed 000 keeps the
longest page of each group, so the least text is lost; Nutch's dedup job orders by score, fetch
time, https and URL length. Pages are decided best first, in a policy's order: a group's best page
is met before the others, kept, and the others are dropped against it, so the groups and the picks
do not depend on the input's order. `crawler-dedup scan` and `crawler_dedup.dedupe_batch` both work this way.

`longest` compares length classes, not word counts: a copy whose template adds a heading of a few
words to the same text is not better for it, so two pages in one class tie on length and the
policy's next key decides (https-first, then shortest-url, for the default policy; the URL when
no key is left). A class is 20 words wide up to 400 words and 5% of its lower bound past that
(LENGTH_BOUNDS: ... 909, 954, 1001, 1051, ...), so pages under 5% (or 20 words) apart tie unless
a class bound falls between them (then the longer is first, however close). Ties of every pair
under 5% apart cannot be had: they would chain (100 ~ 104 ~ 108 ~ ...), and a policy's order
must be total and each page's own, the same in any input order and on both engines (the Spark
scan computes the same classes in SQL, tools/spark_scan/sites.py), so the classes are fixed.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Iterable

from ..page.site import canonical_url


def _length_bounds(limit: int = 10**8) -> tuple[int, ...]:
    """The lower bounds of the length classes: 0, 20, 40, ... 400, 420, 441, 463, ... (each class is
    20 words wide, or 1/20 of its lower bound when that is more; integers, so every engine
    computes the same classes)."""
    bounds = [0]
    while bounds[-1] < limit:
        bounds.append(bounds[-1] + max(20, bounds[-1] // 20))
    return tuple(bounds)


LENGTH_BOUNDS = _length_bounds()


def length_class(words: int) -> int:
    """The class of a page of `words` words: how many class bounds are at or under it (two pages
    of one class tie on `longest`)."""
    return bisect_right(LENGTH_BOUNDS, words)


# -- policies --------------------------------------------------------------------------------
# each key maps a page to a sort value, best first; a policy is an order of keys (as Nutch's
# dedup job compares score, fetch time, https and URL length), ended by the URL, the time and
# the input position so that equal pages are ordered the same in any input order
KEYS: dict[str, str] = {
    "first": "the input order (what a crawl keeps; depends on the order by definition)",
    "longest": "most words of main text (the least text is lost), in length classes 20 words wide, 5% past 400 "
               "words: two pages of one class tie and the next key decides (docs/scan.md)",
    "shortest-url": "fewest characters of URL",
    "https-first": "https before http",
    "canonical": "a page whose rel=canonical is its own URL, then one without, then one naming another URL",
    "newest": "latest fetch time (WARC-Date, or --time-field)",
    "oldest": "earliest fetch time",
    "score": "highest --score-field value (a JSON field such as a crawl score)",
}
POLICIES: dict[str, tuple[str, ...]] = {
    "longest": ("longest", "https-first", "shortest-url"),
    "first": ("first",),
    "shortest-url": ("shortest-url", "https-first", "longest"),
    "https-first": ("https-first", "longest", "shortest-url"),
    "canonical": ("canonical", "https-first", "shortest-url", "longest"),
    "nutch": ("score", "newest", "https-first", "shortest-url"),
}
DEFAULT_POLICY = "longest"


def parse_policy(text: str) -> tuple[str, ...]:
    """A policy name, or keys in order separated by commas ("score,newest,https-first,shortest-url")."""
    text = (text or "").strip().lower()
    if text in POLICIES:
        return POLICIES[text]
    keys = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in keys if k not in KEYS]
    if not keys or unknown:
        raise ValueError(f"--policy takes one of {', '.join(POLICIES)} or keys in order separated by commas "
                         f"({', '.join(KEYS)}), not {text!r}")
    return keys


@dataclass
class Page:
    """What a policy looks at."""

    seq: int  # the input position
    url: str
    words: int
    time: float | None = None
    score: float | None = None
    canonical: str | None = None
    source: int = 0  # (scan: the input file it is in)

    def value(self, key: str):
        if key == "first":
            return self.seq
        if key == "longest":
            return -length_class(self.words)
        if key == "shortest-url":
            return len(self.url)
        if key == "https-first":
            return 0 if self.url.lower().startswith("https:") else 1
        if key == "canonical":
            if not self.canonical:
                return 1
            return 0 if canonical_url(self.canonical) == canonical_url(self.url) else 2
        if key in ("newest", "oldest"):
            if self.time is None:
                return (1, 0.0)
            return (0, -self.time if key == "newest" else self.time)
        if key == "score":
            return (1, 0.0) if self.score is None else (0, -self.score)
        raise KeyError(key)


def rank(pages: Iterable[Page], keys: tuple[str, ...]) -> list[Page]:
    """Best first: the order in which a group's best page is met before the others."""
    return sorted(pages, key=lambda p: rank_key(p, keys))


def rank_key(page: Page, keys: tuple[str, ...]) -> tuple:
    """A page's place in the policy's order, as a sort key."""
    return (*(page.value(k) for k in keys), page.url, page.time or 0.0, page.seq)
