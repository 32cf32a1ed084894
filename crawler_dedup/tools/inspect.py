"""Reading a drop log in one streaming pass: filters, a bounded summary, malformed lines counted.

Memory stays bounded whatever the log's size: counters over small key sets (reason, action,
stage, histogram bins), pruned top-N counters for domains and kept pages, and a bounded list of
the latest matching drops. Used by `inspect`, `restore` and `report`.
"""

from __future__ import annotations

import fnmatch
import heapq
import json
import math
import os
import re
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Iterator
from urllib.parse import urlsplit

import xxhash

from ..droplog import KEPT, REQUIRED_KEYS
from ..exceptions import LogError

SIM_BINS = 20  # similarity histogram: 0.05 wide
MAX_DISTANCE = 64
MALFORMED_EXAMPLES = 5

Progress = Callable[..., None]  # progress(done, total, final=...): the CLI's bar, or None


def parse_time(value: str) -> datetime:
    """ISO 8601 (a trailing Z, a date alone); naive times are UTC. ValueError when not a time."""
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:\[\]@]+)(?=[:/?#]|$)")


def domain_of(url: str) -> str:
    m = _HOST.match(url)  # the common case without urlsplit's cost (a million lines)
    if m is not None:
        return m.group(1).lower()
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


@dataclass
class Filters:
    domains: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    since: datetime | None = None
    urls: tuple[str, ...] = ()  # substrings, or globs when they hold *
    min_similarity: float | None = None
    kept: bool = False  # the `kept` lines (pages the score kept apart from a candidate) instead of the drops
    actions: tuple[str, ...] = ()  # dropped, flagged (a dry run's)

    @property
    def active(self) -> bool:
        return bool(self.domains or self.reasons or self.since or self.urls or self.min_similarity is not None
                    or self.kept or self.actions)

    def describe(self) -> str:
        parts = ["kept apart by the score"] if self.kept else []
        parts += [f"action {a}" for a in self.actions]
        parts += [f"domain {d}" for d in self.domains] + [f"reason {r}" for r in self.reasons]
        parts += [f"url {u}" for u in self.urls]
        if self.since:
            parts.append(f"since {self.since.isoformat()}")
        if self.min_similarity is not None:
            parts.append(f"similarity >= {self.min_similarity}")
        return ", ".join(parts)

    def match(self, rec: dict) -> bool:
        if (rec.get("action") == KEPT) != self.kept:  # a kept line drops nothing: only asked for
            return False
        if self.reasons and rec.get("reason") not in self.reasons:
            return False
        if self.actions and rec.get("action") not in self.actions:
            return False
        url = rec["url"]
        if self.domains:
            host = domain_of(url)
            if not any(host == d or host.endswith("." + d) for d in self.domains):
                return False
        if self.urls and not any(_url_match(url, u) for u in self.urls):
            return False
        if self.min_similarity is not None:
            sim = rec.get("similarity")
            if not isinstance(sim, (int, float)) or sim < self.min_similarity:
                return False
        if self.since is not None:
            try:
                if parse_time(str(rec.get("time", ""))) < self.since:
                    return False
            except ValueError:
                return False
        return True


def _url_match(url: str, pattern: str) -> bool:
    """--url in every command: that URL, or a glob when it holds * (`*part*` for a substring)."""
    if "*" in pattern:  # not `?`: URLs are full of them
        return fnmatch.fnmatchcase(url, pattern)
    return url == pattern


_HEX16 = re.compile(r"[0-9a-f]{16}\Z")


def problem(rec: Any) -> str | None:
    """Why `rec` is not a drop-log record these tools can use, or None when it is one: an object
    with the required keys, a text URL, a similarity from 0 to 1, a distance from 0 to 64 bits and
    fingerprints of 16 hex digits (each of the last three may be null)."""
    if not isinstance(rec, dict):
        return "not an object"
    if not isinstance(rec.get("url"), str) or not all(k in rec for k in REQUIRED_KEYS):
        return "not a drop-log record (missing keys)"
    sim = rec["similarity"]
    if sim is not None and (type(sim) not in (int, float) or not 0 <= sim <= 1):  # NaN fails the test too
        return f"similarity {_short(sim)} is not a number from 0 to 1"
    dist = rec["distance"]
    if dist is not None and (type(dist) is not int or not 0 <= dist <= MAX_DISTANCE):
        return f"distance {_short(dist)} is not a whole number of bits from 0 to {MAX_DISTANCE}"
    for key in ("fingerprint", "duplicate_of_fingerprint"):
        fp = rec[key]
        if fp is not None and (type(fp) is not str or not _HEX16.match(fp.lower())):
            return f"{key} {_short(fp)} is not 16 hex digits"
    return None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 30 else text[:29] + "…"


def valid(rec: Any) -> bool:
    """A drop-log record this tool can use (see `problem`)."""
    return problem(rec) is None


@dataclass
class Malformed:
    count: int = 0
    torn: int = 0  # of them, lines cut short (a crash mid-write)
    examples: list = field(default_factory=list)  # (line number, why)

    def add(self, number: int, why: str) -> None:
        self.count += 1
        if len(self.examples) < MALFORMED_EXAMPLES:
            self.examples.append((number, why))

    def __str__(self) -> str:
        """'N malformed lines skipped (M torn: cut short by a crash)'."""
        torn = f" ({self.torn} torn: cut short by a crash while written)" if self.torn else ""
        return f"{self.count} malformed line{'' if self.count == 1 else 's'} skipped{torn}"


def stream(path: str, malformed: Malformed, progress: Progress | None = None,
           rejected: Callable[[int, Any, str], None] | None = None) -> Iterator[dict]:
    """The valid records of the drop log at `path`, in file order, read once. Lines that are not
    JSON objects with the required keys and sane values (`problem`) are counted in `malformed`,
    never raised; `rejected(line number, parsed JSON, why)` sees each JSON one of them;
    `progress(bytes read, file size)` is called now and then (the CLI's progress bar)."""
    from ..droplog import MANIFEST, parts_of

    if not os.path.exists(path):
        raise LogError(f"no drop log at {path}")
    if os.path.isdir(path) and not os.path.isfile(os.path.join(path, MANIFEST)):
        raise LogError(f"{path} is a folder, not a drop log (give the .jsonl file, or a Spark scan's "
                       f"droplog/ folder with its {MANIFEST})")
    try:
        parts = parts_of(path)
        size = sum(os.path.getsize(p) for p in parts)
    except OSError as exc:
        raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
    done = number = 0
    loads = json.loads
    for line in _lines(parts):
        number += 1
        done += len(line)
        if progress is not None and not number % 4096:
            progress(done, size, final=False)
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except (ValueError, RecursionError) as exc:  # bad JSON or bad UTF-8
            body = line.strip()
            if body.startswith(b"{\"") and not body.endswith(b"}"):
                malformed.add(number, "torn: the line stops mid-record (a crash or power cut while it was "
                                      "written; the next crawl started a line of its own)")
                malformed.torn += 1
            else:
                malformed.add(number, f"not JSON ({str(exc)[:60]})")
            continue
        why = problem(rec)
        if why is not None:
            malformed.add(number, why)
            if rejected is not None:
                rejected(number, rec, why)
            continue
        yield rec
    if progress is not None:
        progress(done, size, final=True)


def _lines(paths: list[str]) -> Iterator[bytes]:
    for path in paths:
        try:
            fh = open(path, "rb")
        except OSError as exc:
            raise LogError(f"cannot read {path}: {exc.strerror or exc}") from None
        with fh:
            yield from fh


MAX_PAIRS = 2_000_000  # (kept, dropped URL) pairs remembered to count each copy once: about 150 MB


class TopCounter:
    """Counts of an unbounded key set in bounded memory: past 2*capacity keys the smallest are
    pruned, so the top counts stay exact unless a pruned key was among them (`approximate`)."""

    def __init__(self, capacity: int = 5000):
        self.capacity, self.pruned = capacity, 0
        self.counts: dict[Any, int] = {}

    def add(self, key, n: int = 1) -> None:
        counts = self.counts
        counts[key] = counts.get(key, 0) + n
        if len(counts) > 2 * self.capacity:
            keep = heapq.nlargest(self.capacity, counts.items(), key=lambda kv: kv[1])
            self.pruned = max(self.pruned, keep[-1][1])  # no pruned key had more than this
            self.counts = dict(keep)

    @property
    def approximate(self) -> bool:
        return self.pruned > 0

    def top(self, n: int) -> list:
        return heapq.nlargest(n, self.counts.items(), key=lambda kv: (kv[1], kv[0]))


class Summary:
    """Everything `inspect` prints, gathered in one pass over matching records."""

    def __init__(self, limit: int = 20, top: int = 10):
        self.total = 0  # valid records read
        self.matched = 0
        self.by_reason: Counter[str] = Counter()
        self.by_action: Counter[str] = Counter()
        self.by_stage: Counter[str] = Counter()
        self.by_measure: Counter[str] = Counter()
        self.domains = TopCounter()
        self.kept = TopCounter()  # duplicate_of -> dropped URLs (each counted once: crawls repeat drops)
        self._pairs: set[int] | None = set()  # hashes of (kept, dropped URL) counted; None past MAX_PAIRS
        self.kept_titles: dict[str, str] = {}
        self.sim_bins = [0] * SIM_BINS
        self.dist_bins = [0] * (MAX_DISTANCE + 1)
        # time bins by prefix of the ISO time; a finer one is dropped (None) when it grows too long
        self.tenths: Counter[str] | None = Counter()
        self.seconds: Counter[str] | None = Counter()
        self.minutes: Counter[str] | None = Counter()
        self.hours: Counter[str] = Counter()
        self.first: str | None = None  # times as written
        self.last: str | None = None
        self.drops: deque[dict] = deque(maxlen=max(limit, 0))
        self.top_n = top
        self.malformed = Malformed()

    def add(self, rec: dict) -> None:
        self.matched += 1
        get = rec.get
        reason, action, stage, measure = get("reason"), get("action"), get("stage"), get("measure")
        # str(): a bad log may hold a list here, which cannot be a key
        self.by_reason[reason if type(reason) is str else str(reason)] += 1
        self.by_action[action if type(action) is str else str(action)] += 1
        self.by_stage[stage if type(stage) is str else str(stage)] += 1
        if measure:
            self.by_measure[measure if type(measure) is str else str(measure)] += 1
        self.domains.add(domain_of(rec["url"]))
        kept = get("duplicate_of")
        if type(kept) is str and reason != "unchanged" and self._first_time(kept, rec["url"]):
            # (a revisit is no copy: not a "most copied" page)
            self.kept.add(kept)
            if kept not in self.kept_titles and len(self.kept_titles) < 2 * self.kept.capacity:
                title = get("duplicate_of_title")
                if type(title) is str:
                    self.kept_titles[kept] = title[:200]
        sim = get("similarity")
        if type(sim) is float or type(sim) is int:
            if math.isfinite(sim):
                self.sim_bins[min(SIM_BINS - 1, max(0, int(sim * SIM_BINS)))] += 1
        dist = get("distance")
        if type(dist) is int and 0 <= dist <= MAX_DISTANCE:
            self.dist_bins[dist] += 1
        when = get("time")
        if type(when) is str and len(when) >= 16:
            if self.tenths is not None and len(when) >= 21:  # a short crawl: 0.1 s bins
                self.tenths[when[:21]] += 1
                if len(self.tenths) > 20_000:
                    self.tenths = None
            if self.seconds is not None:
                self.seconds[when[:19]] += 1
                if len(self.seconds) > 20_000:  # a long log: coarser bins are enough
                    self.seconds = None
            if self.minutes is not None:
                self.minutes[when[:16]] += 1
                if len(self.minutes) > 20_000:
                    self.minutes = None
            self.hours[when[:13]] += 1
            if self.first is None or when < self.first:
                self.first = when
            if self.last is None or when > self.last:
                self.last = when
        if self.drops.maxlen:
            self.drops.append(rec)  # briefed when printed: most records never are

    def _first_time(self, kept: str, url) -> bool:
        """The first drop of `url` against `kept` in the log: a page dropped again by a later crawl
        is one copy, not two (past MAX_PAIRS pairs every drop counts)."""
        pairs = self._pairs
        if pairs is None:
            return True
        key = xxhash.xxh3_64_intdigest(f"{kept}\n{url}".encode("utf-8", "surrogatepass"))
        if key in pairs:
            return False
        pairs.add(key)
        if len(pairs) > MAX_PAIRS:
            self._pairs = None
        return True

    def top_kept(self) -> list[dict]:
        return [{"url": url, "title": self.kept_titles.get(url), "duplicates": n}
                for url, n in self.kept.top(self.top_n)]

    def to_json(self, path: str, filters: Filters) -> dict:
        return {
            "log": os.path.abspath(path),
            "filters": filters.describe() or None,
            "records": self.total, "matched": self.matched,
            "malformed": {"lines": self.malformed.count, "torn": self.malformed.torn,
                          "examples": [{"line": n, "why": why} for n, why in self.malformed.examples]},
            "first": self.first, "last": self.last,
            "by_reason": dict(self.by_reason.most_common()), "by_action": dict(self.by_action.most_common()),
            "by_stage": dict(self.by_stage.most_common()), "by_measure": dict(self.by_measure.most_common()),
            "by_domain": [{"domain": d, "drops": n} for d, n in self.domains.top(self.top_n)],
            "top_kept": self.top_kept(),
            "approximate_top": self.domains.approximate or self.kept.approximate,
            "similarity_histogram": [{"from": round(i / SIM_BINS, 2), "to": round((i + 1) / SIM_BINS, 2), "count": c}
                                     for i, c in enumerate(self.sim_bins)],
            "distance_histogram": {str(d): c for d, c in enumerate(self.dist_bins) if c},
            "drops": [brief(d) for d in self.drops],
        }


def brief(rec: dict) -> dict:
    keys = ("time", "url", "duplicate_of", "action", "reason", "distance", "similarity", "score", "measure", "stage", "title")
    return {k: rec.get(k) for k in keys if rec.get(k) is not None}


def summarize(path: str, filters: Filters, limit: int = 20, top: int = 10, progress: Progress | None = None) -> Summary:
    summary = Summary(limit, top)
    for rec in stream(path, summary.malformed, progress):
        summary.total += 1
        if filters.match(rec):
            summary.add(rec)
    return summary


# -- terminal output -------------------------------------------------------------------------
