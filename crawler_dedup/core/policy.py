"""Batch policy: which page of a group of duplicates to keep when all pages are known up front.

A crawl decides online and keeps the first copy. Over a finished collection, seed 000 keeps the
longest page of each group, so the least text is lost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..config import DedupConfig
from ..stores import MemoryStore
from .dedup import Deduplicator


@dataclass
class BatchResult:
    keep: list[str] = field(default_factory=list)  # one URL per group, in input order
    drop: dict[str, str] = field(default_factory=dict)  # dropped URL -> the URL kept for its group
    groups: list[list[str]] = field(default_factory=list)


def dedupe_batch(pages: Iterable[tuple[str, str]], keep: str = "longest", config: DedupConfig | None = None,
                 html: bool = False) -> BatchResult:
    """Group (url, text) pages (or (url, html) with html=True) into duplicates and keep one each.

    `keep`: "longest" (most words, seed 000) or "first" (what an online crawl keeps).
    """
    if keep not in ("longest", "first"):
        raise ValueError(f"keep must be 'longest' or 'first', not {keep!r}")
    d = Deduplicator(config or DedupConfig(), store=MemoryStore()).open()
    parent: dict[str, str] = {}
    order: list[str] = []
    length: dict[str, int] = {}

    def root(url: str) -> str:
        while parent[url] != url:
            parent[url] = parent[parent[url]]
            url = parent[url]
        return url

    for url, content in pages:
        if url in parent:  # the same URL again is the same page
            continue
        v = d.check(url, html=content) if html else d.check(url, text=content)
        order.append(url)
        parent[url] = url
        length[url] = v.tokens
        if v.would_drop and v.duplicate_of in parent:
            parent[url] = root(v.duplicate_of)
    groups: dict[str, list[str]] = {}
    for url in order:
        groups.setdefault(root(url), []).append(url)
    result = BatchResult()
    for members in groups.values():
        chosen = max(members, key=lambda u: (length[u], -order.index(u))) if keep == "longest" else members[0]
        result.keep.append(chosen)
        result.groups.append(members)
        for url in members:
            if url != chosen:
                result.drop[url] = chosen
    position = {u: i for i, u in enumerate(order)}
    result.keep.sort(key=position.__getitem__)
    return result
