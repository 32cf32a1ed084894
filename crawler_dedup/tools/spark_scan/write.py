"""Stage 5, the scan's outputs, written by the executors: nothing on the driver grows with the
archive (it gathers one line of counts an input).

- Where each record goes is joined in Spark (`routes`), as the one-machine write pass decides it
  (tools/scan/pass3_write.py): a page by its decision, warcinfo to both outputs, a related record
  after the page it is concurrent to, a revisit after its original (its payload's first page).
- Each input is copied by one task (its records sorted within the task, streamed): OUT/kept/ and
  OUT/dropped/ the one-machine scan's very files, with the one write loop both engines share
  (pass3_write.copy_file); its drop-log lines to a part of its own under OUT/.droplog-parts/.
- OUT may be a folder here or on a filesystem of its own (files.py: s3://, hdfs://, ...).
- The drop log's parts are joined into OUT/droplog.jsonl by one task, in input order; the
  clusters file is grouped, sorted and written in Spark, a record's position numbered as the
  one-machine scan numbers it (its place among every input's records).
"""

from __future__ import annotations

import json
import os
from typing import Iterator

from ...config import DedupConfig
from ...core.decide.policy import Page
from ...droplog import dumps
from .. import files
from ..scan.pass3_write import Route, copy_file, records, scores
from ..sources import INFO, PAGE, RELATED, REVISIT

DROPLOG_PARTS = ".droplog-parts"  # under OUT: one part an input, joined into droplog.jsonl at the end


def routes(spark, work: str):
    """Every record with where it goes (a damaged one: where the file's last whole record ends): file_no, seq, offset, kind, url, why,
    dest, the page's or a revisit's original's decision (dropped, flagged, record, reason, note),
    has_original, and the original's file_no and offset."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    from pyspark.sql.window import Window

    sig = spark.read.parquet(os.path.join(work, "signatures")).select(
        "seq", "file_no", "offset", "kind", "url", "why", "record_id", "concurrent_to", "payload_digest", "refers_to")
    dec = spark.read.parquet(os.path.join(work, "decisions")).select(
        "seq", F.col("dropped").alias("d_dropped"), F.col("flagged").alias("d_flagged"),
        F.col("record").alias("d_record"), F.col("reason").alias("d_reason"), F.col("note").alias("d_note"))
    everything = sig.join(dec, "seq", "left")
    entries = everything.where(F.col("kind") != "damaged")
    basic = (F.when(F.col("kind") == INFO, "both")
             .when((F.col("kind") == PAGE) & (F.col("d_dropped") == 1), "dropped").otherwise("kept"))

    # related records: the one-machine pass's `follows`, the first link met in input order wins
    by_id = sig.where(F.col("record_id").isNotNull()).groupBy("record_id").agg(F.min("seq").alias("target"))
    links = (sig.where(F.col("concurrent_to").isNotNull())
             .select("seq", "kind", F.posexplode(F.from_json("concurrent_to", T.ArrayType(T.StringType())))
                     .alias("pos", "record_id"))
             .join(by_id, "record_id"))
    pointed = links.where(F.col("kind").isin(PAGE, REVISIT)).select(
        F.col("target").alias("follower"), F.col("seq").alias("leads"), F.col("seq").alias("at"), "pos")
    pointing = links.where(~F.col("kind").isin(PAGE, REVISIT)).select(
        F.col("seq").alias("follower"), F.col("target").alias("leads"), F.col("seq").alias("at"), "pos")
    first = Window.partitionBy("follower").orderBy("at", "pos")
    follows = (pointed.unionByName(pointing).withColumn("n", F.row_number().over(first)).where(F.col("n") == 1)
               .select(F.col("follower").alias("seq"), "leads"))
    led = entries.select(F.col("seq").alias("leads"), F.col("kind").alias("l_kind"), basic.alias("l_dest"))
    follows = follows.join(led, "leads").select(
        "seq", F.when(F.col("l_kind") == RELATED, "kept").otherwise(F.col("l_dest")).alias("f_dest"))

    # revisits: the first page with the same payload (and URL, when there is one)
    pages = sig.where((F.col("kind") == PAGE) & F.col("payload_digest").isNotNull())
    by_url = pages.groupBy("payload_digest", "url").agg(F.min("seq").alias("o_url")).select(
        F.col("payload_digest").alias("u_digest"), F.col("url").alias("u_url"), "o_url")
    by_digest = pages.groupBy("payload_digest").agg(F.min("seq").alias("o_any"))
    orig_dec = entries.select(F.col("seq").alias("original"), F.col("file_no").alias("o_file"),
                              F.col("offset").alias("o_offset"), *[F.col(c).alias("o" + c[1:]) for c in
                                                                   ("d_dropped", "d_flagged", "d_record", "d_reason",
                                                                    "d_note")])
    revisits = (entries.where(F.col("kind") == REVISIT).select("seq", "payload_digest", "refers_to")
                .join(by_url, (F.col("payload_digest") == F.col("u_digest")) & (F.col("refers_to") == F.col("u_url")),
                      "left")
                .join(by_digest, "payload_digest", "left")
                .select("seq", F.coalesce("o_url", "o_any").alias("original"))
                .join(orig_dec, "original", "left"))

    out = (everything.join(follows, "seq", "left").join(revisits, "seq", "left")
           .select("file_no", "seq", "offset", "kind", "url", "why",
                   F.when(F.col("kind") == RELATED, F.coalesce("f_dest", F.lit("kept"))).otherwise(basic).alias("dest"),
                   *[F.when(F.col("kind") == REVISIT, F.col("o" + c[1:])).otherwise(F.col(c)).alias(c)
                     for c in ("d_dropped", "d_flagged", "d_record", "d_reason", "d_note")],
                   F.col("original").isNotNull().alias("has_original"), "o_file", "o_offset"))
    return out


def write_inputs(rows: Iterator, out: str, inputs: list[tuple[str, str, str]], config: DedupConfig,
                 work: str) -> Iterator[tuple[int, dict, dict]]:
    """A task's inputs copied, streamed (`rows`: ((file_no, seq), route row) sorted by file, then
    seq); (file_no, the input's counts, the counts added) for each. `inputs`: (path, format,
    output name) by file_no."""
    from itertools import groupby

    for file_no, group in groupby((row for _, row in rows), key=lambda r: r.file_no):
        yield _write_one(file_no, group, out, inputs, config, work)


def _write_one(file_no: int, rows: Iterator, out: str, inputs, config: DedupConfig, work: str) -> tuple[int, dict, dict]:
    files.makedirs(files.join(out, DROPLOG_PARTS))
    path, fmt, output = inputs[file_no]
    counts = empty_counts()

    def with_routes() -> Iterator[tuple]:
        for r in rows:
            decision = None if r.d_record is None and r.d_dropped is None else (
                r.d_dropped, r.d_flagged, r.d_record, r.d_reason, r.d_note)
            if r.kind == REVISIT:
                route = Route("kept", revisit=(decision, {"file": inputs[r.o_file][0], "offset": r.o_offset})
                              if r.has_original else None)
            else:
                route = Route(r.dest, decision if r.kind == PAGE else None)
            yield r.seq, r.offset, r.kind, r.url, r.why, route

    def routed() -> Iterator[tuple]:  # (records() reads offsets and kinds only: the route rides along)
        for row, raw, item in records(path, fmt, files.size(path), with_routes()):
            yield row[:5], raw, item, row[5]

    log: list = []  # the part, opened at the input's first drop (most inputs of a crawl have some)

    def write_line(record: dict) -> None:
        if not log:
            log.append(files.open_write(files.join(out, DROPLOG_PARTS, f"{file_no:07d}.jsonl")))
        log[0].write((dumps(record) + "\n").encode("utf-8"))

    try:
        per = copy_file(path, fmt, files.join(out, "kept", output), files.join(out, "dropped", output),
                        routed(), write_line, counts, config.droplog_items)
    finally:
        if log:
            log[0].close()
    return file_no, per, counts


def empty_counts() -> dict:
    return {"records": 0, "pages": 0, "kept": 0, "dropped": 0, "flagged": 0, "passed": {},
            "revisits": {"kept": 0, "dropped": 0, "no_original": 0}, "by_reason": {}, "unchecked": {}, "updated": 0}


def add_counts(total: dict, more: dict) -> dict:
    for key, value in more.items():
        if isinstance(value, dict):
            for k, v in value.items():
                total[key][k] = total[key].get(k, 0) + v
        else:
            total[key] += value
    return total


def join_droplog(out: str, file_nos: list[int]) -> None:
    """The drop log's parts, in input order, as OUT/droplog.jsonl (one task's work); the parts go."""
    parts = files.join(out, DROPLOG_PARTS)
    target = files.join(out, "droplog.jsonl")
    with files.open_write(target) as fh:
        there = set(files.listdir(parts)) if files.info(parts)[0] == "dir" else set()
        for no in file_nos:
            name = f"{no:07d}.jsonl"
            if name in there:
                with files.open_read(files.join(parts, name)) as src:
                    while chunk := src.read(1 << 20):
                        fh.write(chunk)
    files.remove(parts)


def clusters(spark, work: str, out: str, keys: tuple[str, ...], paths: list[str]) -> None:
    """OUT/clusters.jsonl: each group, its kept page and its dropped ones, sorted as the one-machine
    scan sorts them (by the kept page's position), written by one task."""
    from pyspark.sql import functions as F

    sig = spark.read.parquet(os.path.join(work, "signatures"))
    positions = sig.select("seq").rdd.map(lambda r: r.seq).sortBy(lambda s: s).zipWithIndex().toDF(["seq", "position"])
    pages = (sig.where(F.col("kind") == PAGE).select("seq", "url", "words", "time", "score", "canonical", "file_no",
                                                     "offset").join(positions, "seq"))
    dec = spark.read.parquet(os.path.join(work, "decisions")).where(F.col("record").isNotNull()).select(
        "seq", "leader", "record")
    members = dec.join(pages, "seq")
    leaders = pages.select(*[F.col(c).alias("l_" + c) for c in pages.columns])
    rows = members.join(leaders, members.leader == leaders.l_seq, "left")

    def member(r, prefix: str = "") -> dict:
        get = lambda c: getattr(r, prefix + c)  # noqa: E731
        page = Page(get("position"), get("url") or "", get("words") or 0, get("time"), get("score"), get("canonical"))
        return {"url": page.url, "source": {"file": paths[get("file_no")], "offset": get("offset")},
                "scores": scores(page)}

    def keyed(r):
        rec = json.loads(r.record)
        dropped = {**member(r), **{k: rec.get(k) for k in ("reason", "action", "similarity", "distance", "measure")}}
        if r.leader is not None and r.l_seq is not None:
            return (0, r.l_position, ""), (r.position, dropped, member(r, "l_"))
        return (1, 0, str(rec.get("duplicate_of"))), (r.position, dropped, None)

    def line(kv):
        key, items = kv
        items = sorted(items, key=lambda t: t[0])
        kept = items[0][2] if key[0] == 0 else {
            "url": key[2], "outside": "kept outside this scan (another scan into the shared index)"}
        return dumps({"kept": kept, "dropped": [t[1] for t in items], "size": 1 + len(items), "policy": list(keys)})

    lines = rows.rdd.map(keyed).groupByKey().map(lambda kv: (kv[0], line(kv))).sortByKey(numPartitions=1).values()
    target = files.join(out, "clusters.jsonl")

    def write(it):
        with files.open_write(target) as fh:
            for text in it:
                fh.write((text + "\n").encode("utf-8"))
        return iter(())

    lines.coalesce(1).mapPartitions(write).count()
    if files.info(target)[0] != "file":  # (no group at all: no task ran)
        with files.open_write(target):
            pass
