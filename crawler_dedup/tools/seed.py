"""`crawler-dedup index add INPUT...`: file an existing corpus (JSON lines, WARC/ARC) into an index
before a crawl, so the crawl drops what is already stored.

Pages go through the crawl's own steps in input order, as a crawl would meet them: a new page is
kept (filed), a copy of one filed before is not filed again, a URL already in the index is a
revisit (unchanged: nothing to do; changed: its entry updated). Running it again over the same
inputs files nothing twice (a killed run is simply run again): pages whose bytes the index holds
are decided without extraction."""

from __future__ import annotations

import os
import time
from typing import Any

from ..config import DedupConfig
from ..deduplicator import Deduplicator
from ..core.verdict import Action, Revisit, Step, Verdict
from . import files, sources
from .scan import BATCH, Extractor, Progress, _quiet, decide
from .sources import DAMAGED, PAGE, Fields


def add(inputs: list[str], config: DedupConfig, fields: Fields | None = None, jobs: int = 1,
        progress: Progress | None = None, dedup: Deduplicator | None = None) -> dict:
    progress = progress or _quiet
    formats = [sources.input_format(p) for p in inputs]  # SourceError before anything is written
    counts: dict[str, Any] = {"records": 0, "pages": 0, "added": 0, "unchanged": 0, "updated": 0, "copies": 0,
              "by_bytes": 0, "unchecked": {}, "passed": {}, "damaged": {}}
    own = dedup is None
    dedup = dedup or Deduplicator(config)
    dedup.open()
    location = dedup.index.store.location if dedup.index is not None else config.dir  # (close() forgets it)
    extractor = Extractor(config, jobs)
    started = time.monotonic()
    total = sum(files.size(p) for p in inputs)
    done = 0

    def known(digest: bytes):
        fp = dedup.known(digest)
        if fp is None:
            return None
        counts["by_bytes"] += 1
        return (Step.FINGERPRINT, fp, fp.title, None)

    try:
        for path, fmt in zip(inputs, formats):
            size = files.size(path)
            batch: list = []
            items = ((e.offset, e) for e in sources.entries(path, fmt, 0, fields or Fields(), config.max_bytes))
            for _, entry, digest, result, _same in extractor.run(items, None, known):
                counts["records"] += 1
                if entry.kind == DAMAGED:
                    counts["damaged"][path] = entry.why
                    continue
                if entry.kind != PAGE:
                    why = entry.why or entry.kind
                    counts["passed"][why] = counts["passed"].get(why, 0) + 1
                    continue
                counts["pages"] += 1
                batch.append((entry, digest, result))
                if len(batch) >= BATCH:
                    _decide(dedup, batch, counts)
                    batch = []
                    progress("add", done + min(entry.offset, size), total, counts["pages"])
            _decide(dedup, batch, counts)
            done += size
            progress("add", done, total, counts["pages"])
    finally:
        extractor.close()
        if own:
            dedup.close()
    counts["seconds"] = round(time.monotonic() - started, 2)
    counts["index"] = location
    return counts


def _decide(dedup: Deduplicator, batch: list, counts: dict) -> None:
    items = []
    for entry, digest, result in batch:
        page = dict(html=entry.html, now=entry.time, body=digest)
        if result[3] is not None:  # (else found in the html, as a crawl does)
            page["canonical"] = result[3]
        items.append((entry.url or "", result, page))
    for verdict in decide(dedup, items):
        _count(verdict, counts)


def _count(v: Verdict, counts: dict) -> None:
    if v.skipped or v.error:
        why = str(v.skipped or f"error:{v.error}")
        counts["unchecked"][why] = counts["unchecked"].get(why, 0) + 1
    elif v.revisit == Revisit.UNCHANGED:
        counts["unchanged"] += 1
    elif v.revisit == Revisit.UPDATED and v.action == Action.KEEP:
        counts["updated"] += 1
    elif v.action in (Action.DROP, Action.FLAG):
        counts["copies"] += 1
    else:
        counts["added"] += 1

