"""Stage 2 and 3: candidate pairs from the buckets the pages share, and the groups they make.

Pairs: the signatures' keys exploded (one row a page and key) and grouped by key; in each bucket
every two pages are a pair (a simhash table's bucket only when their fingerprints are within k
bits: the Manku et al. test, with bit_count). A bucket of a title part, a site's headline or a
smallest shingle filed for more pages than the one-machine index files under it (LIMITS) pairs
none: a site's name or a template's shingle makes no group of a site. Any other bucket of more
than CAP pages (the URL of many captures, a crowded simhash bucket) pairs each page with its
NEIGHBOURS next pages in fingerprint order only, so one bucket cannot make the join quadratic.

Both in Spark SQL (the JVM's work, not Python's). Groups: the connected components of the pairs.
Pages of one component can only be decided against each other, so components are decided apart
(decide.py); found by the large-star/small-star loop (Kiveris et al., 2014): the driver holds
none of them (union_find is the tests' reference).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ...core.index.neardup import HEADS_LIMIT, POSTING_LIMIT, TITLED
from .signatures import HEAD, KIND_SHIFT, PROBE, SITE_HEAD, TABLE

CAP = 64  # pages of a bucket paired all with all; a larger bucket pairs neighbours only
NEIGHBOURS = 8  # a large bucket: each page and its next NEIGHBOURS in fingerprint order
MASK = (1 << 64) - 1


# a bucket filed for more pages than the one-machine index files under its key pairs none of them:
# a title part shared by more than HEADS_LIMIT pages is a site's name or a stock title, a site's
# headline with more than TITLED pages is no headline, a shingle hash among the smallest of more
# than POSTING_LIMIT pages is boilerplate (core/index/neardup.py)
LIMITS = {HEAD: HEADS_LIMIT, SITE_HEAD: TITLED, PROBE: POSTING_LIMIT}
SIGN = -(1 << 63)  # a long XOR this orders as its unsigned value


def bucket_pairs(key: int, members: Iterable[tuple[int, int | None]], k: int) -> Iterator[tuple[int, int]]:
    """(smaller seq, larger seq) of the pages a bucket holds, `members` (seq, signed fp or None):
    what `pairs` does in Spark, one bucket in Python (its reference in the tests)."""
    pages = sorted(set(members), key=lambda m: ((m[1] or 0) & MASK, m[0]))
    kind = key >> KIND_SHIFT
    n = len(pages)
    limit = LIMITS.get(kind)
    if limit is not None and n > limit:
        return
    reach = n if n <= CAP else NEIGHBOURS + 1
    for i in range(n):
        a, fa = pages[i]
        for j in range(i + 1, min(n, i + reach)):
            b, fb = pages[j]
            if kind == TABLE and (fa is None or fb is None or (((fa ^ fb) & MASK).bit_count() > k)):
                continue
            yield (a, b) if a < b else (b, a)


def pairs(signatures, k: int):
    """The candidate pairs of the signatures DataFrame as a DataFrame (a, b) with a < b, distinct,
    in Spark SQL: a bucket of up to CAP pages all with all, a larger one each page with its next
    NEIGHBOURS in fingerprint order, a simhash table's pairs within k bits, the limits above."""
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    ex = signatures.where(F.col("keys").isNotNull()).select("seq", F.coalesce("fp", F.lit(0)).alias("fp"),
                                                           F.col("fp").isNull().alias("nofp"),
                                                           F.explode("keys").alias("key"))
    kind = F.shiftright(F.col("key"), KIND_SHIFT)
    sizes = ex.groupBy("key").agg(F.count("*").alias("n"))
    over = F.lit(False)
    for code, limit in LIMITS.items():
        over = over | ((kind == code) & (F.col("n") > limit))
    ex = ex.join(sizes, "key").where(~over & (F.col("n") > 1))
    by_fp = Window.partitionBy("key").orderBy(F.col("fp").bitwiseXOR(F.lit(SIGN)), "seq")
    ex = ex.withColumn("rn", F.row_number().over(by_fp)).withColumn("kind", kind)
    a, b = ex.alias("a"), ex.alias("b")
    reach = F.when(F.col("a.n") <= CAP, F.col("a.n")).otherwise(F.lit(NEIGHBOURS))
    near = F.bit_count(F.col("a.fp").bitwiseXOR(F.col("b.fp"))) <= k
    tested = (F.col("a.kind") != TABLE) | (~F.col("a.nofp") & ~F.col("b.nofp") & near)
    joined = a.join(b, (F.col("a.key") == F.col("b.key")) & (F.col("b.rn") > F.col("a.rn"))
                    & (F.col("b.rn") <= F.col("a.rn") + reach)).where(tested)
    return joined.select(F.least("a.seq", "b.seq").alias("a"), F.greatest("a.seq", "b.seq").alias("b")).distinct()


def union_find(edges: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Each page of a pair -> its component's smallest seq."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
        parent.setdefault(a, a)
        parent.setdefault(b, b)
    return {x: find(x) for x in parent}


def components_in_spark(edges, checkpoint_dir: str, max_rounds: int = 64):
    """(seq, unit): each page of `edges` (a DataFrame (a, b)) and its component's smallest page,
    by alternating large-star and small-star in Spark SQL until nothing changes (Kiveris et al.,
    2014); each round's edges checkpointed (the plan stays short)."""
    from pyspark.sql import functions as F

    spark = edges.sparkSession
    spark.sparkContext.setCheckpointDir(checkpoint_dir)
    both = edges.select(F.col("a").alias("u"), F.col("b").alias("v")).unionByName(
        edges.select(F.col("b").alias("u"), F.col("a").alias("v"))).distinct().localCheckpoint()
    for _ in range(max_rounds):
        # large-star: each node links its larger neighbours to the smallest of itself and its neighbours
        low = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
        large = (both.where(F.col("v") > F.col("u")).join(low, "u").select(F.col("v").alias("u"), F.col("m").alias("v"))
                 .unionByName(low.where(F.col("m") != F.col("u")).select("u", F.col("m").alias("v"))).distinct())
        # small-star: each node links itself and its smaller neighbours to the smallest of them
        down = large.select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")).where(
            F.col("u") != F.col("v")).distinct()
        m = down.groupBy("u").agg(F.min("v").alias("m"))
        star = (down.join(m, "u").select(F.col("v").alias("u"), F.col("m").alias("v"))
                .unionByName(m.select("u", F.col("m").alias("v"))).where(F.col("u") != F.col("v")).distinct())
        small = star.unionByName(star.select(F.col("v").alias("u"), F.col("u").alias("v"))).distinct().localCheckpoint()
        same = small.exceptAll(both).isEmpty() and both.exceptAll(small).isEmpty()
        both = small
        if same:
            break
    return both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("unit")).select(F.col("u").alias("seq"), "unit")
