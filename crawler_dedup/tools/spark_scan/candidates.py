"""Stage 3 and 4: candidate pairs from the buckets the pages share, and the groups they make.

Pairs (`pairs`): the signatures' keys exploded (one row a page and key) and grouped by key. No
step's work grows with a bucket's size squared: exact copies collapse onto the first of them,
the same fingerprint in a bucket onto its first page (stars), and the distinct fingerprints of a
bucket pair by an equi-join on (key, rank + d) with every other one in a bucket of up to CAP, the
next NEIGHBOURS in fingerprint order in a larger one. A simhash table's pair needs the Manku et
al. test (within k bits, bit_count); a pair met through a shingle hash only is verified on the
sketches with the decision's own floors. A bucket of a title part, a site's headline or a
smallest shingle filed for more pages than the one-machine index files under it (LIMITS) pairs
none: a site's name or a template's shingle makes no group of a site.

All in Spark SQL (the JVM's work, not Python's). Groups: the connected components of the pairs.
Pages of one component can only be decided against each other, so components are decided apart
(decide.py); found by the large-star/small-star loop (Kiveris et al., 2014): the driver holds
none of them (union_find and bucket_pairs are the tests' references).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ...core.decide.matching import FLOOR_CONTAINMENT, FLOOR_RESEMBLANCE
from ...core.index.neardup import HEADS_LIMIT, POSTING_LIMIT, TITLED
from ...core.page.sketch import SKETCH_SIZE
from .signatures import HEAD, KIND_SHIFT, PROBE, SITE_HEAD, TABLE, URL

CAP = 64  # pages of a bucket paired all with all; a larger bucket pairs neighbours only
NEIGHBOURS = 8  # a large bucket: each page and its next NEIGHBOURS in fingerprint order
MASK = (1 << 64) - 1


# a bucket filed for more pages than the one-machine index files under its key pairs none of them:
# a title part shared by more than HEADS_LIMIT pages is a site's name or a stock title, a site's
# headline with more than TITLED pages is no headline, a shingle hash among the smallest of more
# than POSTING_LIMIT pages is boilerplate (core/index/neardup.py)
LIMITS = {HEAD: HEADS_LIMIT, SITE_HEAD: TITLED, PROBE: POSTING_LIMIT}
SIGN = -(1 << 63)  # a long XOR this orders as its unsigned value


def bucket_pairs(key: int, members: Iterable[tuple[int, int | None, int]], k: int) -> Iterator[tuple[int, int, bool]]:
    """(smaller seq, larger seq, checked) of the pages a bucket holds, `members` (seq, signed fp
    or None, place): what `pairs` does in Spark, one bucket in Python (its reference in the
    tests); `checked` False: a shingle's pair, still to be verified. A pair may come twice."""
    kind = key >> KIND_SHIFT
    pages = sorted(set(members), key=lambda m: (m[2], m[0]))
    limit = LIMITS.get(kind)
    if len(pages) < 2:
        return
    over = limit is not None and len(pages) > limit
    if kind in (TABLE, PROBE, URL) and (over or len(pages) > CAP):  # each page and the bucket's first
        s0, f0, _ = pages[0]
        for seq, fp, _ in pages[1:]:
            if kind != TABLE or (fp is not None and f0 is not None and ((fp ^ f0) & MASK).bit_count() <= k):
                yield min(seq, s0), max(seq, s0), kind != PROBE
    if over:
        return
    heads: dict[int, tuple[int, int | None]] = {}
    for seq, fp, _ in pages:  # the same fingerprint: a star on the first in the policy's order
        head = heads.setdefault(fp or 0, (seq, fp))
        if head[0] != seq:
            yield min(seq, head[0]), max(seq, head[0]), kind != PROBE
    ranked = sorted(heads.values(), key=lambda h: ((h[1] or 0) & MASK, h[0]))
    n = len(ranked)
    reach = n - 1 if n <= CAP else NEIGHBOURS
    for i in range(n):
        a, fa = ranked[i]
        for j in range(i + 1, min(n, i + 1 + reach)):
            b, fb = ranked[j]
            if kind == TABLE and (fa is None or fb is None or (((fa ^ fb) & MASK).bit_count() > k)):
                continue
            yield min(a, b), max(a, b), kind != PROBE


def pairs_reference(rows: Iterable[tuple], k: int) -> set[tuple[int, int]]:
    """`pairs` in Python: rows (seq, signed fp, digest, keys, sketch as ordered longs, shingles,
    place); the tests' reference."""
    import numpy as np

    from ...core.decide.verify import sketch_scores

    rows = list(rows)
    firsts: dict[int, tuple[int, int]] = {}
    for seq, _, digest, _, _, _, place in rows:
        if digest is not None:
            firsts[digest] = min(firsts.get(digest, (place, seq)), (place, seq))
    out: set[tuple[int, int]] = set()
    buckets: dict[int, list] = {}
    for seq, fp, digest, keys, _, _, place in rows:
        rep = firsts.get(digest, (0, seq))[1] if digest is not None else seq
        if rep != seq:
            out.add((min(seq, rep), max(seq, rep)))
        for key in keys or ():
            if rep == seq or key >> KIND_SHIFT == URL:
                buckets.setdefault(key, []).append((seq, fp, place))
    checked: dict[tuple[int, int], bool] = {}
    for key, members in buckets.items():
        for a, b, ok in bucket_pairs(key, members, k):
            checked[(a, b)] = checked.get((a, b), False) or ok
    sketches = {r[0]: (np.sort(np.array([v + (1 << 63) for v in r[4]], dtype=np.uint64)), r[5]) for r in rows
                if r[4] is not None}
    for (a, b), ok in checked.items():
        if not ok and a in sketches and b in sketches:
            (sa, na), (sb, nb) = sketches[a], sketches[b]
            j, c = sketch_scores(sa, na, sb, nb)
            back = sketch_scores(sb, nb, sa, na)[1]
            ok = (len(sa) > 0 and len(sb) > 0) and (j >= FLOOR_RESEMBLANCE or max(c, back) >= FLOOR_CONTAINMENT)
        if ok:
            out.add((a, b))
    return out


def pairs(signatures, places, k: int):
    """The candidate pairs of the signatures DataFrame as a DataFrame (a, b) with a < b, distinct,
    in Spark SQL, linear in the pages whatever the buckets' sizes:

    - exact copies (the same words) first: each links to the first of them in the policy's order
      (`places`), the one that stands for them all below (a flood of one page is one row);
    - within a bucket, the pages with the very same fingerprint link to the first of them;
    - the distinct fingerprints of a bucket are ranked and each linked to the next ones by an
      equi-join on (key, rank + d): all of them in a bucket of up to CAP, the next NEIGHBOURS
      in a larger one (a simhash table's pairs within k bits), the limits above;
    - in a bucket past its kind's limit or past CAP, each page also links to the bucket's first
      page in the policy's order (the one-machine index answers a key with the kept pages filed
      under it first: a flood of one page or template drops against its first);
    - a pair found only through a shingle hash (PROBE) is verified on the two sketches with the
      floors the decision weighs candidates over (FLOOR_RESEMBLANCE, FLOOR_CONTAINMENT): one
      shared shingle joins no two articles.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.window import Window

    sig = (signatures.where(F.col("keys").isNotNull())
           .select("seq", "fp", "digest", "keys").join(places, "seq"))
    firsts = (sig.where(F.col("digest").isNotNull()).groupBy("digest")
              .agg(F.min_by("seq", "place").alias("rep"), F.count("*").alias("copies")).where(F.col("copies") > 1))
    tagged = sig.join(firsts, "digest", "left").withColumn(
        "member", F.col("rep").isNotNull() & (F.col("rep") != F.col("seq")))
    copies = tagged.where("member").select(F.least("seq", "rep").alias("a"), F.greatest("seq", "rep").alias("b"),
                                           F.lit(True).alias("checked"))
    # a copy keeps its URL keys (its captures meet as on one machine), the rest is its first's
    ex = tagged.select("seq", "fp", "place", "member", F.explode("keys").alias("key")).withColumn(
        "kind", F.shiftright(F.col("key"), KIND_SHIFT)).where(~F.col("member") | (F.col("kind") == URL))
    sizes = ex.groupBy("key").agg(F.count("*").alias("n"))
    over = F.lit(False)
    for code, limit in LIMITS.items():
        over = over | ((F.col("kind") == code) & (F.col("n") > limit))
    ex = ex.join(sizes, "key").where(F.col("n") > 1)
    # a bucket past its limit (a shingle's: the index stops answering it once more kept pages hold
    # it; a bucket of one page and its copies holds one kept page), or past CAP: each page also
    # linked to its first page in the policy's order, the one filed first (shingle pairs verified)
    first = ex.groupBy("key").agg(F.min_by(F.struct("seq", "fp"), F.struct("place", "seq")).alias("first"))
    starred = F.col("kind").isin(TABLE, PROBE, URL) & (over | (F.col("n") > CAP))  # (a title part past its limit is a site's name)
    crowd = ex.where(starred).join(first, "key").where(F.col("first.seq") != F.col("seq"))
    near_first = F.bit_count(F.col("fp").bitwiseXOR(F.col("first.fp"))) <= k
    firsts_ = crowd.where((F.col("kind") != TABLE) | (F.col("fp").isNotNull() & F.col("first.fp").isNotNull()
                                                       & near_first)).select(
        F.least("seq", "first.seq").alias("a"), F.greatest("seq", "first.seq").alias("b"),
        (F.col("kind") != PROBE).alias("checked"))
    ex = ex.where(~over)
    # the same fingerprint in a bucket: a star on its first page (an aggregate, then an equi-join)
    ex = ex.withColumn("fpk", F.coalesce("fp", F.lit(0)))
    head = ex.groupBy("key", "fpk").agg(F.min_by("seq", F.struct("place", "seq")).alias("head"))
    ex = ex.join(head, ["key", "fpk"])
    stars = ex.where(F.col("head") != F.col("seq")).select(
        F.least("seq", "head").alias("a"), F.greatest("seq", "head").alias("b"),
        (F.col("kind") != PROBE).alias("checked"))
    heads = ex.where(F.col("head") == F.col("seq")).select("key", "kind", "seq", "fp")
    counted = heads.groupBy("key").agg(F.count("*").alias("m"))
    by_fp = Window.partitionBy("key").orderBy(F.coalesce("fp", F.lit(0)).bitwiseXOR(F.lit(SIGN)), "seq")
    ranked = heads.join(counted, "key").where(F.col("m") > 1).withColumn("rn", F.row_number().over(by_fp))
    reach = F.when(F.col("m") <= CAP, F.col("m") - 1).otherwise(F.lit(NEIGHBOURS))
    wanted = ranked.where(F.col("rn") < F.col("m")).select("key", "kind", F.col("seq").alias("a_seq"), F.col("fp").alias("a_fp"), F.explode(
        F.sequence(F.col("rn") + 1, F.least(F.col("m"), F.col("rn") + reach))).alias("rn"))
    other = ranked.select("key", "rn", F.col("seq").alias("b_seq"), F.col("fp").alias("b_fp"))
    joined = wanted.join(other, ["key", "rn"])  # an equi-join: each row meets at most `reach` rows
    near = F.bit_count(F.col("a_fp").bitwiseXOR(F.col("b_fp"))) <= k
    tested = (F.col("kind") != TABLE) | (F.col("a_fp").isNotNull() & F.col("b_fp").isNotNull() & near)
    linked = joined.where(tested).select(F.least("a_seq", "b_seq").alias("a"), F.greatest("a_seq", "b_seq").alias("b"),
                                         (F.col("kind") != PROBE).alias("checked"))
    edges = (copies.unionByName(firsts_).unionByName(stars).unionByName(linked).groupBy("a", "b")
             .agg(F.max(F.col("checked").cast("int")).alias("checked")))
    return edges.where(F.col("checked") == 1).select("a", "b").unionByName(
        verified(edges.where(F.col("checked") == 0).select("a", "b"), signatures))


def verified(edges, signatures):
    """The pairs `edges` whose pages are over the decision's floors, measured on their sketches as
    the decision measures them (verify.sketch_scores: the resemblance of the bottom-k sketches,
    the containment each way from it and the shingle counts)."""
    from pyspark.sql import functions as F

    sk = signatures.where(F.col("sketch").isNotNull()).select("seq", "sketch", "shingles")
    a = sk.select(F.col("seq").alias("a"), F.col("sketch").alias("sa"), F.col("shingles").alias("na"))
    b = sk.select(F.col("seq").alias("b"), F.col("sketch").alias("sb"), F.col("shingles").alias("nb"))
    both = edges.join(a, "a").join(b, "b")
    union = F.array_union("sa", "sb")
    smallest = F.slice(F.array_sort(union), 1, SKETCH_SIZE)
    shared = F.size(F.array_intersect(smallest, F.array_intersect("sa", "sb")))
    j = F.when((F.size("sa") == 0) | (F.size("sb") == 0), F.lit(0.0)).otherwise(
        shared / F.least(F.lit(SKETCH_SIZE), F.size(union)))
    inter = j * (F.col("na") + F.col("nb")) / (1 + j)
    c = F.least(F.lit(1.0), inter / F.greatest(F.col("na"), F.lit(1)))
    back = F.least(F.lit(1.0), inter / F.greatest(F.col("nb"), F.lit(1)))
    over = (j >= FLOOR_RESEMBLANCE) | (F.greatest(c, back) >= FLOOR_CONTAINMENT)
    return both.where(over).select("a", "b")


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
    spark.sparkContext.setCheckpointDir(checkpoint_dir)  # (reliable: a lost executor loses no round)
    both = edges.select(F.col("a").alias("u"), F.col("b").alias("v")).unionByName(
        edges.select(F.col("b").alias("u"), F.col("a").alias("v"))).distinct().checkpoint()
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
        small = star.unionByName(star.select(F.col("v").alias("u"), F.col("u").alias("v"))).distinct().checkpoint()
        same = small.exceptAll(both).isEmpty() and both.exceptAll(small).isEmpty()
        both = small
        if same:
            break
    return both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("unit")).select(F.col("u").alias("seq"), "unit")
