"""Stage 5, the scan's outputs, written by the executors: nothing on the driver grows with the
archive (it gathers one line of counts an input).

- Where each record goes is joined in Spark (`routes`), as the one-machine write pass decides it
  (tools/scan/pass3_write.py): a page by its decision, warcinfo to both outputs, a related record
  after the page it is concurrent to, a revisit after its original (its payload's first page).
- Each input is copied by one task (its records sorted within the task, streamed): OUT/kept/ and
  OUT/dropped/ the one-machine scan's very files, with the one write loop both engines share
  (pass3_write.copy_file); its drop-log lines to a part of its own, OUT/droplog/part-NNNNNNN.jsonl.
- OUT may be a folder here or on a filesystem of its own (files.py: s3://, hdfs://, ...).
- The groups (OUT/clusters/) are grouped and sorted in Spark, range-partitioned, a part a task, a
  record's position numbered as the one-machine scan numbers it (its place among every input's
  records).
- Each folder's _manifest.json lists its parts in order, written by the driver after every part
  (one listing): a reader takes the parts it names (droplog.parts_of), a folder without one is
  unfinished. `join` makes one file of them (--join-outputs, a small output): written whole
  under another name, renamed, and only then the parts removed; run again, a joined file of the
  manifest's size is not written twice, and no file is ever written from missing parts.
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

DROPLOG, CLUSTERS = "droplog", "clusters"  # folders of parts under OUT
JOIN_LIMIT = 2 * 1024**3  # --join-outputs: past this, the parts stay (one task, one file would be the bottleneck)


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
    files.makedirs(files.join(out, DROPLOG))
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
            log.append(files.open_write(files.join(out, DROPLOG, part_name(file_no))))
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


def part_name(no: int) -> str:
    return f"part-{no:07d}.jsonl"


def write_manifest(folder: str, count: int) -> dict:
    """FOLDER/_manifest.json: the parts part-0000000 .. part-<count - 1> there are, in order, with
    their sizes (one listing of the folder)."""
    from ...droplog import MANIFEST

    files.makedirs(folder)
    sizes = files.sizes(folder)
    names = [part_name(no) for no in range(count) if part_name(no) in sizes]
    manifest = {"format": "jsonl", "parts": [{"name": n, "bytes": sizes[n]} for n in names],
                "bytes": sum(sizes[n] for n in names)}
    files.write_bytes(files.join(folder, MANIFEST), json.dumps(manifest, indent=1).encode("utf-8"))
    return manifest


def join(folder: str, target: str, limit: int = JOIN_LIMIT) -> str:
    """The parts of `folder` as the one file `target`, then the folder removed; `folder` kept (and
    returned) when the output is past `limit`."""
    from ...droplog import MANIFEST

    if files.info(folder)[0] != "dir":  # joined before: the parts went after the file was whole
        if files.info(target)[0] != "file":
            raise FileNotFoundError(f"neither {folder} nor {target} is there: run the scan with --restart")
        return target
    with files.open_read(files.join(folder, MANIFEST)) as fh:
        manifest = json.loads(fh.read().decode("utf-8"))
    if manifest["bytes"] > limit:
        return folder
    if files.info(target)[:2] != ("file", manifest["bytes"]):
        tmp = target + ".joining"
        with files.open_write(tmp) as fh:
            for part in manifest["parts"]:
                with files.open_read(files.join(folder, part["name"])) as src:
                    while chunk := src.read(1 << 20):
                        fh.write(chunk)
        if files.size(tmp) != manifest["bytes"]:
            raise OSError(f"{tmp}: {files.size(tmp)} bytes written of {manifest['bytes']}")
        files.replace(tmp, target)
    files.remove(folder)
    return target


def clusters(spark, work: str, out: str, keys: tuple[str, ...], paths: list[str]) -> int:
    """OUT/clusters/: each group, its kept page and its dropped ones, sorted as the one-machine scan
    sorts them (by the kept page's position), in range parts a task each; returns how many parts
    there may be."""
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

    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    lines = rows.rdd.map(keyed).groupByKey().map(lambda kv: (kv[0], line(kv))).sortByKey(numPartitions=n).values()
    folder = files.join(out, CLUSTERS)
    files.makedirs(folder)

    def write(no, it):
        fh = None
        for text in it:
            if fh is None:
                fh = files.open_write(files.join(folder, part_name(no)))
            fh.write((text + "\n").encode("utf-8"))
        if fh is not None:
            fh.close()
        return iter(())

    lines.mapPartitionsWithIndex(write).count()
    return lines.getNumPartitions()
