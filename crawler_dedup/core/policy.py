"""Batch policy: which page of a group of duplicates to keep when all pages are known up front.

A crawl decides online and keeps the first copy. Over a finished collection, seed 000 keeps the
longest page of each group, so the least text is lost; Nutch's dedup job orders by score, fetch
time, https and URL length. Pages are decided best first, in a policy's order: a group's best page
is met before the others, kept, and the others are dropped against it, so the groups and the picks
do not depend on the input's order. `crawler-dedup scan` and `dedupe_batch` both work this way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..config import DedupConfig
from ..stores import MemoryStore
from .dedup import Deduplicator
from .index import canonical_url
from .verdict import Action

# -- policies --------------------------------------------------------------------------------
# each key maps a page to a sort value, best first; a policy is an order of keys (as Nutch's
# dedup job compares score, fetch time, https and URL length), ended by the URL, the time and
# the input position so that equal pages are ordered the same in any input order
KEYS: dict[str, str] = {
    "first": "the input order (what a crawl keeps; depends on the order by definition)",
    "longest": "most words of main text (seed 000: the least text is lost)",
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
            return -self.words
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
    return sorted(pages, key=lambda p: (*(p.value(k) for k in keys), p.url, p.time or 0.0, p.seq))


@dataclass
class BatchResult:
    keep: list[str] = field(default_factory=list)  # one URL per group, in input order
    drop: dict[str, str] = field(default_factory=dict)  # dropped URL -> the URL kept for its group
    groups: list[list[str]] = field(default_factory=list)  # each group's URLs in input order


def dedupe_batch(pages: Iterable[tuple[str, str]], keep: str = "longest", config: DedupConfig | None = None,
                 html: bool = False) -> BatchResult:
    """Group (url, text) pages (or (url, html) with html=True) into duplicates and keep one each.

    `keep`: "longest" (most words, seed 000; the earliest of equals) or "first" (what an online
    crawl keeps). A URL met again is the same page.
    """
    if keep not in ("longest", "first"):
        raise ValueError(f"keep must be 'longest' or 'first', not {keep!r}")
    d = Deduplicator(config or DedupConfig(), store=MemoryStore()).open()
    prepared: dict = {}
    contents: dict[str, str] = {}
    order: list[str] = []

    def prepare(url: str):
        content = contents[url]
        return d.prepare(url, html=content) if html else d.prepare(url, text=content)

    for url, content in pages:
        if url in prepared:
            continue
        contents[url] = content
        prepared[url] = prepare(url)
        order.append(url)
    position = {u: i for i, u in enumerate(order)}
    best_first = rank((Page(position[u], u, prepared[u][0].tokens) for u in order),
                      ("longest", "first") if keep == "longest" else ("first",))
    kept_for: dict[str, str] = {}
    for page in best_first:
        # (a plugin that learns from kept pages: fingerprinted again, after the pages before it)
        pending = prepared[page.url][1] if d.pure else prepare(page.url)[1]
        verdict = d.decide_many([pending])[0] if pending is not None else prepared[page.url][0]
        dropped = verdict.action == Action.DROP and verdict.duplicate_of in kept_for
        kept_for[page.url] = kept_for[verdict.duplicate_of] if dropped else page.url  # type: ignore[index]
    result = BatchResult()
    groups: dict[str, list[str]] = {}
    for url in order:
        groups.setdefault(kept_for[url], []).append(url)
    for chosen, members in sorted(groups.items(), key=lambda kv: position[kv[0]]):
        result.keep.append(chosen)
        result.groups.append(members)
        result.drop.update({u: chosen for u in members if u != chosen})
    return result
