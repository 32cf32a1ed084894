"""Redis store: one index shared by crawler processes on many machines (DEDUP_BACKEND=redis).

Two layouts (DEDUP_REDIS_LAYOUT; store.py picks): on a Redis Cluster the index is spread over
every slot (spread.py, its design there), elsewhere it lies in one slot, as described here.

The one-slot layout, all keys under one hash tag `{PREFIX}` (one cluster slot, so one MULTI/EXEC or script
may touch any of them):
- `{P}:s:<table>:<key>`: a string, the value (SINGLE tables);
- `{P}:m:<table>:<key>`: a sorted set of the key's values, all at score 0 (MULTI tables:
  ZRANGEBYLEX gives them in byte order);
- `{P}:o:<table>`: a sorted set of the table's keys, for scans in key order;
- `{P}:n`: a hash, table -> its entry count (keys of a SINGLE table, values of a MULTI one);
- `{P}:q:<table>:<key>`: sequences (doc ids); `{P}:index`: set by the first commit; `{P}:ttl`:
  set when keys expire (DEDUP_WINDOW), so every reader counts the keys left.

Transactions are optimistic, so writers work at once (stores/base.py has the semantics):
- write(fn) runs fn on one connection. Every key fn reads is WATCHed first, in the same round
  trip as the read; writes are buffered (reads see them).
- Commit sends the buffer as one script inside MULTI/EXEC. Redis runs EXEC only if no watched
  key changed since it was read; otherwise nothing is applied and fn runs again on fresh data.
- Why a page's check-and-add is atomic: a page is kept only if nothing it read changed before its
  commit. Two near-duplicates racing read the same simhash buckets (Manku: pages within k bits
  share a bucket), the same exact-digest key, the same URL key or the same sketch postings; the
  first commit adds to them, so the second's EXEC fails, it runs again, finds the first and drops.
  This is serializable (optimistic concurrency with read-set validation); writers wait for each
  other only when their pages could match.
- Writes are applied blind (ZADD/ZREM/SET and counts moved by what changed, in the script), so
  two unrelated pages filed at once do not conflict; doc ids come from INCR, outside the
  transaction (an id may be skipped when fn runs again, never given twice).
read(fn) watches nothing: each commit is atomic, but a read of several keys may see two commits.
With a TTL (DEDUP_WINDOW), every key written outside the meta table, and its table's key list,
expires that long after its last write, so an index nobody writes to any more empties itself.
A cluster that moved the slot (MOVED, ASK, ...) is followed: the transaction runs again there.

The modules: conn.py (one connection for a transaction, and the commit script EXEC runs),
buffer.py (the writes a transaction buffers until its commit, both layouts'), txn.py (a
transaction: the watched reads, the commit) and store.py
(RedisStore: opening, the layout, read/write with the runs again on a conflict or a moved slot);
for the spread layout spread.py (its transaction), spread_keys.py (its key names and scripts),
nodes.py (commands batched a round trip a node, redirections followed) and growth.py (the shard
count, doubled as the index grows).
"""

from __future__ import annotations

from .store import MAX_ATTEMPTS, RedisStore

__all__ = ["MAX_ATTEMPTS", "RedisStore"]
