"""What a page's site taught the index before the page was decided, counted over the whole
archive (the one-machine scan's index knows every page of a site decided before; a decide task
knows its components' pages only).

Two things the rules read of a site: the kept pages that show a line of its text (site
boilerplate: the guard that keeps a page made of its site's lines, the comparison on what is
left; sitelines.py) and the kept pages under its headline (the print-version rule). The index
files at most HOLDERS pages a line and TITLED pages a headline, the first ones decided. So for
each line and headline only the first few pages in the policy's order can ever be on file
(`firsts`); a decide task is handed, for the lines and headlines of its pages, those first pages
that are in other components (`events`), each with its place in that order, and files each one
just before it decides the first of its own pages that comes after it (decide.py). Pages of other
components are taken as kept (a dropped copy's lines are its kept page's).
"""

from __future__ import annotations

import os

from ...core.decide.policy import LENGTH_BOUNDS
from ...core.index.neardup import HOLDERS, TITLED

LINE, TITLE = "l", "t"
FAKE_IDS = 1 << 62  # a page of another component under a headline: a doc id no record has


def order(spark, work: str, keys: tuple[str, ...]):
    """(seq, place) of every page in the policy's order, best first: the order the one-machine scan
    decides in (policy.rank_key, in Spark SQL), over the whole archive. A place orders, it does not
    count (monotonically_increasing_id over the sorted pages)."""
    from pyspark.sql import functions as F

    sig = spark.read.parquet(os.path.join(work, "signatures")).where(F.col("kind") == "page")
    url, time, score = F.coalesce("url", F.lit("")), F.col("time"), F.col("score")
    words = F.coalesce("words", F.lit(0))
    bounds = F.array(*[F.lit(b).cast("long") for b in LENGTH_BOUNDS])
    values = {
        "first": [F.col("seq")],
        "longest": [-F.size(F.filter(bounds, lambda b: b <= words))],  # policy.length_class
        "shortest-url": [F.length(url)],
        "https-first": [F.when(F.lower(url).startswith("https:"), 0).otherwise(1)],
        "canonical": [F.coalesce("canonical_rank", F.lit(1))],
        "newest": [F.when(time.isNull(), 1).otherwise(0), F.when(time.isNull(), 0.0).otherwise(-time)],
        "oldest": [F.when(time.isNull(), 1).otherwise(0), F.when(time.isNull(), 0.0).otherwise(time)],
        "score": [F.when(score.isNull(), 1).otherwise(0), F.when(score.isNull(), 0.0).otherwise(-score)],
    }
    columns = [c for k in keys for c in values[k]] + [url, F.coalesce(time, F.lit(0.0)), F.col("seq")]
    return sig.orderBy(*columns).select("seq").withColumn("place", F.monotonically_increasing_id())


def events(spark, work: str):
    """(unit, place, kind, key, holder, from_unit) for each component of two or more pages: the
    first pages (in the policy's order) of other components under each line and headline of its
    pages, and their own component (None: a page in no pair)."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    sig = spark.read.parquet(os.path.join(work, "signatures")).where(F.col("kind") == "page").select(
        "seq", "holder", "lines", "title_key")
    places = spark.read.parquet(os.path.join(work, "order"))
    units = spark.read.parquet(os.path.join(work, "components"))
    pages = sig.join(places, "seq").join(units, "seq", "left")

    def firsts(exploded, limit: int):
        ranked = Window.partitionBy("key").orderBy("place")
        return exploded.withColumn("n", F.row_number().over(ranked)).where(F.col("n") <= limit + 1).drop("n")

    lines = pages.where(F.col("lines").isNotNull()).select(
        F.explode("lines").alias("key"), "place", "holder", "unit", "seq")
    titles = pages.where(F.col("title_key").isNotNull()).select(
        F.col("title_key").alias("key"), "place", "holder", "unit", "seq")
    out = None
    for kind, exploded, limit in ((LINE, lines, HOLDERS), (TITLE, titles, TITLED)):
        first = firsts(exploded, limit).select("key", F.col("place").alias("e_place"), F.col("holder").alias("e_holder"),
                                               F.col("unit").alias("e_unit"), F.col("seq").alias("e_seq"))
        wanted = exploded.where(F.col("unit").isNotNull()).select("unit", "key").distinct()
        got = (wanted.join(first, "key")
               .where(F.col("e_unit").isNull() | (F.col("e_unit") != F.col("unit")))
               .select("unit", F.col("e_place").alias("place"), F.lit(kind).alias("kind"), "key",
                       (F.col("e_holder") if kind == LINE else F.col("e_seq") + F.lit(FAKE_IDS)).alias("holder"),
                       F.col("e_unit").alias("from_unit")))
        out = got if out is None else out.unionByName(got)
    return out


def apply(dedup, due: list) -> None:
    """File the pages of other components `due` (events) in the task's own index, as the
    one-machine scan's index had them filed by then."""
    from ...core.index.neardup import HOLDERS as limit_lines
    from .signatures import as_key

    index = dedup.index

    def run(txn) -> None:
        for e in due:
            key = as_key(e.key)
            if e.kind == LINE:
                txn.site_add([key], e.holder & ((1 << 64) - 1), txn.site_holders([key]), limit_lines)
            else:
                txn.title_add(key, int(e.holder), TITLED)
    if due:
        index.write(run)
