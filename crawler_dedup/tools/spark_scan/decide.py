"""Stage 6, in the executors: the pages of components, decided as the one-machine scan decides
them (tools/scan/pass2_decide.py: the policy's order, best first, the Deduplicator's whole rule
chain) over an index of the task's own in memory.

Only paired pages move: a page in no pair is decided from its own row's state (a narrow
column), and a paired page's extraction is read back from its part's results file by a task a
part (`fetch`), then brought with its component's pages to one task. A component of up to PIECE
pages is decided whole; a larger one (a flood of one template) in pieces: its first PIECE pages
in the policy's order together, then the rest in pieces of about PIECE pages, each decided after
the pages the first piece kept (the seeds, filed first): the whole decision wherever no page
past the first piece is kept and would have been another's match.

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
from collections import namedtuple
from typing import Iterable, Iterator

from ...config import DedupConfig
from ...core.decide.policy import Page, rank
from ...core.verdict import Skip, Step
from ...deduplicator import Deduplicator
from ..scan.pass2_decide import BATCH, _file_decision, decide
from ..scan.state import SCHEMA
from .sites import apply

DECISION_COLUMNS = ("seq", "step", "dropped", "flagged", "reason", "leader", "note", "record")
PIECE = 4000  # pages of a component decided in one task
SEEDS = 256  # the first piece's kept pages a later piece is decided after (a flood kept apart keeps them all)
NARROW = ("seq", "url", "words", "time", "score", "canonical", "file_no", "part", "place", "group", "seed")
Paired = namedtuple("Paired", ["seq", "url", "words", "time", "score", "canonical", "file_no", "part", "place", "group",
                               "seed", "body", "result"])  # NARROW and the results file's columns


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
    by_seq = {r.seq: r for r in rows}  # (a seed handed to two pieces of one task: once)
    if not by_seq:
        return iter(())
    seeds = {s for s, r in by_seq.items() if getattr(r, "seed", False)}
    pages = [Page(r.seq, r.url or "", r.words or 0, r.time, r.score, r.canonical, r.file_no) for r in by_seq.values()]
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
    out = [row for row in db.execute(f"SELECT {', '.join(DECISION_COLUMNS)} FROM decisions").fetchall()
           if row[0] not in seeds]  # (a seed's decision is its first piece's)
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


def fetch(rows, results: str, partitions: int):
    """`rows` (a DataFrame of the NARROW columns) with each page's body digest and extraction, as
    an RDD of Paired: one task a part reads its results file once (text is read for these pages
    only and moves once, to the decide tasks)."""
    from .signatures import read_results

    def read(kv):
        part, group = kv
        group = list(group)
        got = read_results(results, part, {r.seq for r in group})
        for r in group:
            body, result = got.get(r.seq, (None, None))
            yield Paired(*(getattr(r, c) for c in NARROW), body, result)  # type: ignore[call-arg]

    return (rows.select(*NARROW).rdd.map(lambda r: (r.part, r))
            .groupByKey(numPartitions=partitions).flatMap(read))


def decide_groups(paired, events, config: DedupConfig, keys: tuple[str, ...], jsonl: frozenset, partitions: int,
                  apart: bool = False):
    """Decision rows of the pages `paired` (an RDD of Paired), each group in one task with the
    events (sites.py) keyed by its group; `apart`: each group over an index of its own (pieces of
    one component decide the same whichever task they share)."""
    rows = paired.map(lambda r: (r.group, (0, r)))
    due = events.rdd.map(lambda e: (e.group, (1, e)))

    def decide(pages: list, events_: list):
        units = {r.group[0] for r in pages}  # (a page of a component in this task is filed when decided)
        return decide_partition(pages, config, keys, jsonl, [e for e in events_ if e.from_unit not in units])

    def task(it):
        by_group: dict = {}
        for group, (tag, r) in it:
            by_group.setdefault(group if apart else None, ([], []))[tag].append(r)
        for pages, events_ in by_group.values():
            yield from decide(pages, events_)

    return rows.union(due).partitionBy(partitions).mapPartitions(task)


def narrow_pages(spark, work: str):
    """Every page's narrow row (no text: the extraction is in its part's results file) with its
    component (`unit`, null: in no pair): the only join over every page the stage makes."""
    import os

    from pyspark.sql import functions as F

    from ..sources import PAGE

    sig = spark.read.parquet(os.path.join(work, "signatures")).where(F.col("kind") == PAGE).select(
        "seq", "url", "words", "time", "score", "canonical", "file_no", "part", "state")
    return sig.join(spark.read.parquet(os.path.join(work, "components")), "seq", "left")


def decisions(spark, work: str, config: DedupConfig, keys: tuple[str, ...], jsonl: frozenset, path: str,
              piece: int = PIECE) -> dict:
    """The decisions stage, written to `path`; returns its counts for the summary."""
    import os

    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    from .signatures import RESULTS

    results = os.path.join(work, RESULTS) if "://" not in work else work.rstrip("/") + "/" + RESULTS
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    places = spark.read.parquet(os.path.join(work, "order"))
    events = spark.read.parquet(os.path.join(work, "sites"))
    pages = narrow_pages(spark, work)
    single = pages.where(F.col("unit").isNull())
    skipped = F.col("state").startswith("skip:")
    # a page in no pair: no match is possible, its decision is its own (signatures.page_state)
    plain = single.where(F.col("state") != "text").select(
        "seq", F.lit(0).cast("long").alias("step"), F.lit(0).alias("dropped"), F.lit(0).alias("flagged"),
        F.when(skipped, F.lit("skipped")).alias("reason"), F.lit(None).cast("long").alias("leader"),
        F.when(skipped, F.expr("substring(state, 6)")).alias("note"), F.lit(None).cast("string").alias("record"))
    grouped = pages.where(F.col("unit").isNotNull()).unionByName(
        single.where(F.col("state") == "text").withColumn("unit", F.col("seq")))
    sizes = grouped.groupBy("unit").agg(F.count("*").alias("usize"))
    g = grouped.join(places, "seq").join(sizes, "unit")
    # a component past `piece`: its first pages in the policy's order (a top-k a unit, partial
    # before the shuffle), the others in pieces by a hash of the page
    first = (g.where(F.col("usize") > piece).withColumn("rn", F.row_number().over(
        Window.partitionBy("unit").orderBy("place"))).where(F.col("rn") <= piece).select("seq", F.lit(True).alias("first")))
    pieces = F.ceil((F.col("usize") - piece) / piece).cast("long")
    g = g.join(first, "seq", "left").withColumn("piece", F.when(
        (F.col("usize") <= piece) | F.col("first").isNotNull(), F.lit(0)).otherwise(
        1 + F.pmod(F.xxhash64("seq"), pieces))).withColumn("seed", F.lit(False))
    g = g.withColumn("group", F.struct("unit", "piece")).persist()
    paired = fetch(g.where(F.col("piece") == 0), results, n)
    ev0 = events.withColumn("group", F.struct("unit", F.lit(0).cast("long").alias("piece")))
    decided = spark.createDataFrame(decide_groups(paired, ev0, config, keys, jsonl, n), schema())
    plain.unionByName(decided).write.mode("overwrite").parquet(path)
    rest = g.where(F.col("piece") > 0)
    stats = sizes.agg(F.max("usize").alias("largest"), F.max(F.least("usize", F.lit(piece))).alias("one_task"),
                      F.sum(F.when(F.col("usize") > piece, 1).otherwise(0)).alias("big")).first()
    if stats.big:
        kept = (spark.read.parquet(path).where((F.col("dropped") == 0) & (F.col("flagged") == 0)
                                               & F.col("reason").isNull()).select("seq"))
        wanted = rest.select("unit", "piece").distinct()
        first_kept = Window.partitionBy("unit").orderBy("place")
        kept0 = g.where(F.col("piece") == 0).join(kept, "seq").drop("group", "piece", "seed")
        # a piece's seeds: the first SEEDS kept pages of its component's first piece, and every one
        # of them a page of the piece was paired with (its candidates there)
        firsts = (kept0.withColumn("rn", F.row_number().over(first_kept)).where(F.col("rn") <= SEEDS)
                  .drop("rn").join(wanted, "unit"))
        edges = spark.read.parquet(os.path.join(work, "pairs"))
        both = edges.unionByName(edges.select(F.col("b").alias("a"), F.col("a").alias("b")))
        paired_to = (both.join(rest.select(F.col("seq").alias("b"), "piece"), "b")
                     .select(F.col("a").alias("seq"), "piece").distinct())
        linked = kept0.join(paired_to, "seq")
        seeds = (firsts.unionByName(linked.select(*firsts.columns)).dropDuplicates(["seq", "piece"])
                 .withColumn("seed", F.lit(True)).withColumn("group", F.struct("unit", "piece")))
        more = fetch(rest.unionByName(seeds.select(*rest.columns)), results, n)
        ev = events.join(wanted, "unit").withColumn("group", F.struct("unit", "piece"))
        spark.createDataFrame(decide_groups(more, ev, config, keys, jsonl, n, apart=True), schema()).write.mode(
            "append").parquet(path)
    g.unpersist()
    return {"largest_component": stats.largest or 0, "largest_decided_in_one_task": stats.one_task or 0,
            "components_in_pieces": stats.big or 0}
