"""Stage 2 and 3: candidate pairs from the buckets the pages share, and the groups they make.

Pairs: the signatures' keys exploded (one row a page and key) and grouped by key; in each bucket
every two pages are a pair (a simhash table's bucket only when their fingerprints are within k
bits: the Manku et al. test, with bit_count). A bucket of a title part, a site's headline or a
smallest shingle filed for more pages than the one-machine index files under it (LIMITS) pairs
none: a site's name or a template's shingle makes no group of a site. Any other bucket of more
than CAP pages (the URL of many captures, a crowded simhash bucket) pairs each page with its
NEIGHBOURS next pages in fingerprint order only, so one bucket cannot make the join quadratic.

Groups: the connected components of the pairs. Pages of one component can only be decided
against each other, so components are decided apart (decide.py); found by the
large-star/small-star loop in Spark (Kiveris et al., 2014), checkpointed every few rounds: the
driver holds none of them (union_find is the tests' reference).
"""

from __future__ import annotations

from typing import Iterable, Iterator

from ...core.index.neardup import HEADS_LIMIT, POSTING_LIMIT, TITLED

CAP = 64  # pages of a bucket paired all with all; a larger bucket pairs neighbours only
NEIGHBOURS = 8  # a large bucket: each page and its next NEIGHBOURS in fingerprint order
MASK = (1 << 64) - 1


# a bucket filed for more pages than the one-machine index files under its key pairs none of them:
# a title part shared by more than HEADS_LIMIT pages is a site's name or a stock title, a site's
# headline with more than TITLED pages is no headline, a shingle hash among the smallest of more
# than POSTING_LIMIT pages is boilerplate (core/index/neardup.py)
LIMITS = {"h": HEADS_LIMIT, "s": TITLED, "p": POSTING_LIMIT}


def bucket_pairs(key: str, members: Iterable[tuple[int, int | None]], k: int) -> Iterator[tuple[int, int]]:
    """(smaller seq, larger seq) of the pages a bucket holds, `members` (seq, signed fp or None)."""
    pages = sorted(set(members), key=lambda m: ((m[1] or 0) & MASK, m[0]))
    tested = key.startswith("t")
    n = len(pages)
    limit = LIMITS.get(key.split(":", 1)[0])
    if limit is not None and n > limit:
        return
    reach = n if n <= CAP else NEIGHBOURS + 1
    for i in range(n):
        a, fa = pages[i]
        for j in range(i + 1, min(n, i + reach)):
            b, fb = pages[j]
            if tested and (fa is None or fb is None or (((fa ^ fb) & MASK).bit_count() > k)):
                continue
            yield (a, b) if a < b else (b, a)


def pairs(signatures, k: int):
    """The candidate pairs of the signatures DataFrame, as an RDD of (a, b) with a < b, distinct."""
    rows = signatures.where("keys IS NOT NULL").select("seq", "fp", "keys").rdd
    by_key = rows.flatMap(lambda r: [(key, (r.seq, r.fp)) for key in r.keys]).groupByKey()
    return by_key.flatMap(lambda kv: bucket_pairs(kv[0], kv[1], k)).distinct()


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
    """(page, component's smallest page) for every page of `edges` (an RDD of (a, b)), by
    alternating large-star and small-star until nothing changes (Kiveris et al., 2014). Each
    round's edges are kept in memory (the next round and the test read them once more)."""
    from pyspark import StorageLevel

    sc = edges.context
    sc.setCheckpointDir(checkpoint_dir)
    e = edges.flatMap(lambda ab: [ab, (ab[1], ab[0])]).distinct().persist(StorageLevel.MEMORY_AND_DISK)
    for round_no in range(max_rounds):
        # large-star: every node links its larger neighbours to its smallest neighbour (or itself)
        large = e.groupByKey().flatMap(_large_star).distinct()
        # small-star: every node links its smaller neighbours and itself to the smallest of them
        small = large.map(lambda ab: (ab[0], ab[1]) if ab[1] < ab[0] else (ab[1], ab[0])) \
            .groupByKey().flatMap(_small_star).distinct()
        small = small.flatMap(lambda ab: [ab, (ab[1], ab[0])]).distinct().persist(StorageLevel.MEMORY_AND_DISK)
        if round_no % 4 == 3:
            small.checkpoint()
        same = small.subtract(e).isEmpty() and e.subtract(small).isEmpty()
        e.unpersist()
        e = small
        if same:
            break
    return e.groupByKey().map(lambda kv: (kv[0], min(min(kv[1]), kv[0])))


def _large_star(kv) -> Iterator[tuple[int, int]]:
    node, neighbours = kv
    ns = set(neighbours)
    low = min(ns | {node})
    for v in ns:
        if v > node:
            yield (v, low)
    if low != node:
        yield (node, low)


def _small_star(kv) -> Iterator[tuple[int, int]]:
    node, smaller = kv
    ns = set(smaller) | {node}
    low = min(ns)
    for v in ns:
        if v != low:
            yield (v, low)
