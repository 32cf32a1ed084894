"""`dedupe_batch`: a finished collection in memory grouped into duplicates, one page kept a group.

Pages are decided best first in a policy's order (core/decide/policy.py), over an index in memory, so
the groups and the picks do not depend on the input's order (as `crawler-dedup scan` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from ..config import DedupConfig
from ..core.decide.policy import Page, rank
from ..core.verdict import Action
from ..deduplicator import Deduplicator
from ..stores import MemoryStore


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
