"""Stage 4, in the executors: the pages of whole components, decided as the one-machine scan
decides them (tools/scan/pass2_decide.py: the policy's order, best first, the Deduplicator's
whole rule chain) over an index of the task's own in memory.

A component's pages meet only each other as candidates, so a task may hold many components
and decide them together in the policy's order: the groups and the picks are those of one
index over all pages. What a page's site taught the index from pages of other components (the
lines they show, the pages under its headline) is handed to the task and filed just before the
first page that comes after them (sites.py).
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import zlib
from typing import Iterable, Iterator

from ...config import DedupConfig
from ...core.decide.policy import Page, rank
from ...core.verdict import Skip, Step
from ...deduplicator import Deduplicator
from ..scan.pass2_decide import BATCH, _file_decision, decide
from ..scan.state import SCHEMA
from .sites import apply

DECISION_COLUMNS = ("seq", "step", "dropped", "flagged", "reason", "leader", "note", "record")


def schema():
    from pyspark.sql import types as T

    return T.StructType([T.StructField("seq", T.LongType()), T.StructField("step", T.LongType()),
                         T.StructField("dropped", T.IntegerType()), T.StructField("flagged", T.IntegerType()),
                         T.StructField("reason", T.StringType()), T.StructField("leader", T.LongType()),
                         T.StructField("note", T.StringType()), T.StructField("record", T.StringType())])


def decide_partition(rows: Iterable, config: DedupConfig, keys: tuple[str, ...], jsonl: frozenset,
                     events: Iterable = ()) -> Iterator[tuple]:
    """Decision rows (DECISION_COLUMNS) of a task's pages, `rows` with the signature columns
    seq, url, words, time, score, canonical, file_no, body, result (and `place`, with `events`:
    pages of other components to file in the task's index before the first page after them,
    sites.py)."""
    rows = list(rows)
    if not rows:
        return iter(())
    by_seq = {r.seq: r for r in rows}
    pages = [Page(r.seq, r.url or "", r.words or 0, r.time, r.score, r.canonical, r.file_no) for r in rows]
    order = rank(pages, keys)
    due = sorted(events, key=lambda e: e.place)
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.executescript(SCHEMA)
    kept_url: dict[str, int] = {}
    dedup = Deduplicator(config)
    dedup.open()
    try:
        step = 0
        for batch in _batches(order, by_seq, due):
            if isinstance(batch, tuple):  # what other components had filed by then
                apply(dedup, due[batch[0]:batch[1]])
                continue
            items = []
            for page in batch:
                r = by_seq[page.seq]
                result = (pickle.loads(zlib.decompress(r.result)) if r.result is not None
                          else (Step.SKIPPED, Skip.BAD_INPUT, None))
                items.append((page.url, result, dict(canonical=page.canonical, now=r.time,
                                                     body=bytes(r.body) if r.body else None)))
            for page, verdict in zip(batch, decide(dedup, items)):
                _file_decision(db, config, page, verdict, step, kept_url, False,
                               "item" if page.source in jsonl else "response")
                step += 1
    finally:
        dedup.close()
    out = db.execute(f"SELECT {', '.join(DECISION_COLUMNS)} FROM decisions").fetchall()
    db.close()
    return iter(out)


def _batches(order: list[Page], by_seq: dict, due: list) -> Iterator:
    """The pages in order, BATCH at a time, cut where events are due: a (start, end) slice of
    `due` comes before the first page placed after them."""
    batch: list[Page] = []
    at = 0
    for page in order:
        place = getattr(by_seq[page.seq], "place", None)
        end = at
        while place is not None and end < len(due) and due[end].place < place:
            end += 1
        if end > at:
            if batch:
                yield batch
                batch = []
            yield (at, end)
            at = end
        batch.append(page)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def record_of(row) -> dict:
    return json.loads(row.record) if row.record else {}
