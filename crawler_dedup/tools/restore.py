"""`restore`: the dropped items of a drop log back as JSONL, and allow-list entries for them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..droplog import KEPT, dumps
from .inspect import Filters, Malformed, Progress, stream


@dataclass
class Restored:
    records: int = 0  # valid drop-log lines read
    selected: int = 0
    written: int = 0
    from_items: int = 0
    from_text: int = 0
    earlier: int = 0  # selected lines of a URL whose later line is the one restored
    nothing: int = 0  # selected lines with neither `item` nor `text`
    unchanged: int = 0  # of those, unchanged revisits: the same words as the page storage holds
    not_modified: int = 0  # of those, copies decided on a 304: their body was not downloaded, their text never read
    refetch: list = field(default_factory=list)  # those URLs: allow-listed, the next crawl downloads and keeps them
    nothing_examples: list = field(default_factory=list)
    urls: list = field(default_factory=list)  # restored URLs, in order, once each
    found: set = field(default_factory=set)  # the --url URLs (no glob) that have a line in the log
    malformed: Malformed = field(default_factory=Malformed)


def allow_pattern(url: str) -> str:
    """A DEDUP_ALLOW regex that matches this URL and nothing else, with no whitespace nor control
    character of its own (those written as \\uXXXX): one pattern a line, whole after a split()."""
    def one(c: str) -> str:
        if c.isspace() or not c.isprintable():
            return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        return re.escape(c)

    return "^" + "".join(one(c) for c in url) + "$"


def restore(path: str, filters: Filters, out, select_all: bool = False,
            progress: Progress | None = None) -> Restored:
    """Write one JSON line per selected URL, from its latest selected drop: the dropped item when
    the log kept it, else {"url", "text"[, "title"]} from the extracted text; count lines with
    neither. A URL dropped by several crawls is restored once (storing it twice would make the
    duplicate this tool undoes), so the log is read twice: which line is each URL's latest, then
    those lines."""
    result = Restored()
    wanted = {u for u in filters.urls if "*" not in u}
    latest: dict[str, int] = {}
    for number, rec in enumerate(stream(path, result.malformed, progress)):
        result.records += 1
        if rec["url"] in wanted:
            result.found.add(rec["url"])
        if _selected(rec, filters, select_all):
            latest[rec["url"]] = number
    for number, rec in enumerate(stream(path, Malformed())):
        if latest.get(rec["url"], -1) < 0 or not _selected(rec, filters, select_all):
            continue
        result.selected += 1
        if latest[rec["url"]] != number:
            result.earlier += 1  # a later drop of this URL is the one restored
            continue
        item = rec.get("item")
        if isinstance(item, dict):
            result.from_items += 1
        elif isinstance(rec.get("text"), str):
            item = {"url": rec["url"], "text": rec["text"]}
            if isinstance(rec.get("title"), str):
                item["title"] = rec["title"]
            result.from_text += 1
        elif rec.get("reason") == "unchanged":
            result.unchanged += 1  # its text is the kept page's, which storage has: nothing was lost
            continue
        elif rec.get("measure") == "not-modified":
            result.not_modified += 1
            if len(result.refetch) < 1_000_000:
                result.refetch.append(rec["url"])
            continue
        else:
            result.nothing += 1
            if len(result.nothing_examples) < 5:
                result.nothing_examples.append(rec["url"])
            continue
        out.write(dumps(item, default=str) + "\n")
        result.written += 1
        if len(result.urls) < 1_000_000:
            result.urls.append(rec["url"])
    return result


def _selected(rec: dict, filters: Filters, select_all: bool) -> bool:
    """A drop the selection takes (--all: every drop; a `kept` line is never a drop)."""
    return rec.get("action") != KEPT if select_all else filters.match(rec)
