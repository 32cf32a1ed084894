"""Redis store: one index shared by crawler processes on many machines (DEDUP_BACKEND=redis).

Layout, all keys under one hash tag `{PREFIX}` (one cluster slot, so one MULTI/EXEC or script
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
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

import numpy as np

from ..exceptions import StoreError
from .base import MULTI, SINGLE, T, TxnBase

MAX_ATTEMPTS = 200  # fn run again this often (a conflict each time) before the call fails (the page is kept)

# ARGV[1] = TTL in ms (0: none); then 4 per change: op, table, key, value. KEYS: 3 per change (the
# entry's key, the table's key list, the counts), then the TTL marker and the index marker.
# Upper-case op: with TTL (the entry and its table's key list, so an idle index leaves nothing).
# O: a key Redis expired leaves the table's key list.
_COMMIT = """
local ttl = tonumber(ARGV[1])
local k = 1
for a = 2, #ARGV, 4 do
  local op, tbl, member, val = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local key, order, counts = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  k = k + 3
  local up = string.upper(op)
  if up == 'S' then
    if redis.call('exists', key) == 0 then
      redis.call('hincrby', counts, tbl, 1)
      redis.call('zadd', order, 0, member)
    end
    if op == 'S' and ttl > 0 then
      redis.call('set', key, val, 'px', ttl)
      redis.call('pexpire', order, ttl)
    else
      redis.call('set', key, val)
    end
  elseif up == 'D' then
    if redis.call('del', key) == 1 then redis.call('hincrby', counts, tbl, -1) end
    redis.call('zrem', order, member)
  elseif up == 'A' then
    if redis.call('zadd', key, 0, val) == 1 then redis.call('hincrby', counts, tbl, 1) end
    redis.call('zadd', order, 0, member)
    if op == 'A' and ttl > 0 then
      redis.call('pexpire', key, ttl)
      redis.call('pexpire', order, ttl)
    end
  elseif up == 'R' then
    if redis.call('zrem', key, val) == 1 then redis.call('hincrby', counts, tbl, -1) end
    if redis.call('exists', key) == 0 then redis.call('zrem', order, member) end
  elseif up == 'O' then
    redis.call('zrem', order, member)
  elseif up == 'C' then
    local n = redis.call('zcard', key)
    if n > 0 then
      redis.call('del', key)
      redis.call('hincrby', counts, tbl, -n)
    end
    redis.call('zrem', order, member)
  end
end
if ttl > 0 then redis.call('set', KEYS[#KEYS - 1], ARGV[1]) end
redis.call('set', KEYS[#KEYS], '1')
return 1
"""


class _Conn:
    """One connection to the node that holds the index's slot, for one transaction."""

    def __init__(self, store: "RedisStore"):
        self.store, self.pool = store, store.pool()
        self.c = self.pool.get_connection()
        self.watching = False

    def run(self, cmds: list[tuple], watch: list[bytes] | tuple = ()) -> list[Any]:
        """Send the commands (after a WATCH of `watch`) in one round trip; their replies."""
        if watch:
            cmds = [("WATCH", *watch), *cmds]
            self.watching = True
        self.store.trips += 1
        self.store.commands += len(cmds)
        try:
            self.c.send_packed_command(self.c.pack_commands(cmds))
            replies = []
            for _ in cmds:
                try:
                    replies.append(self.c.read_response())
                except self.store.redis.ResponseError as exc:
                    replies.append(exc)
        except BaseException:
            self.c.disconnect()  # half a reply may be left on it
            raise
        for reply in replies:
            if isinstance(reply, Exception):
                raise reply
        return replies[1:] if watch else replies

    def close(self) -> None:
        try:
            if self.watching:
                self.run([("UNWATCH",)])
        except Exception:
            pass  # (disconnected: the server dropped the watches with the connection)
        finally:
            self.pool.release(self.c)


class _RedisTxn(TxnBase):
    def __init__(self, store: "RedisStore", writing: bool):
        self.s, self.writing = store, writing
        self.conn = _Conn(store)
        self.watched: set[bytes] = set()
        self.single: dict[tuple[str, bytes], bytes | None] = {}  # (table, key) -> value, None = deleted
        self.added: dict[tuple[str, bytes], set[bytes]] = {}
        self.removed: dict[tuple[str, bytes], set[bytes]] = {}
        self.cleared: set[tuple[str, bytes]] = set()  # MULTI keys deleted whole
        # what this transaction read from Redis (watched, so still current when it commits)
        self.got_single: dict[tuple[str, bytes], bytes | None] = {}
        self.got_multi: dict[tuple[str, bytes], list[bytes]] = {}
        self.purge: set[tuple[str, bytes]] = set()  # keys a scan met in a key list that Redis expired

    def _run(self, cmds: list[tuple], keys: list[bytes]) -> list[Any]:
        """Read: a writer first watches every key it reads (in the same round trip)."""
        if not cmds:
            return []
        watch = [k for k in dict.fromkeys(keys) if k not in self.watched] if self.writing else []
        out = self.conn.run(cmds, watch)
        self.watched.update(watch)
        return out

    def _kind(self, table: str, kind: str | None = None) -> str:
        found = self.s.kinds.get(table)
        if found is None:
            raise StoreError(f"no table {table!r} in the Redis index {self.s.location} (not ensured)")
        if kind is not None and found != kind:
            raise StoreError(f"table {table!r} is {found}, not {kind}")
        return found

    def _change(self) -> None:
        if not self.writing:
            raise StoreError("a read transaction cannot write")

    def prefetch(self, single, multi):
        """Read these keys (watched) in one round trip; the reads that follow find them here."""
        single = [(t, bytes(k)) for t, k in dict.fromkeys(single) if (t, bytes(k)) not in self.got_single]
        multi = [(t, bytes(k)) for t, k in dict.fromkeys(multi) if (t, bytes(k)) not in self.got_multi]
        for t, _ in single:
            self._kind(t, SINGLE)
        for t, _ in multi:
            self._kind(t, MULTI)
        names = [self.s.k("s", t, k) for t, k in single] + [self.s.k("m", t, k) for t, k in multi]
        cmds = [("GET", n) for n in names[:len(single)]] + [("ZRANGEBYLEX", n, "-", "+") for n in names[len(single):]]
        replies = self._run(cmds, names)
        for pair, got in zip(single, replies):
            self.got_single[pair] = None if got is None else bytes(got)
        for pair, got in zip(multi, replies[len(single):]):
            self.got_multi[pair] = [bytes(v) for v in got]

    def _stored_single(self, table: str, keys: list[bytes]) -> dict[bytes, bytes | None]:
        missing = list(dict.fromkeys(k for k in keys if (table, k) not in self.got_single))
        names = [self.s.k("s", table, k) for k in missing]
        for k, got in zip(missing, self._run([("MGET", *names)], names)[0] if missing else []):
            self.got_single[(table, k)] = None if got is None else bytes(got)
        return {k: self.got_single[(table, k)] for k in keys}

    def _stored_multi(self, pairs: list[tuple[str, bytes]]) -> list[list[bytes]]:
        missing = list(dict.fromkeys(p for p in pairs if p not in self.got_multi))
        names = [self.s.k("m", t, k) for t, k in missing]
        for pair, got in zip(missing, self._run([("ZRANGEBYLEX", n, "-", "+") for n in names], names)):
            self.got_multi[pair] = [bytes(v) for v in got]
        return [self.got_multi[p] for p in pairs]

    # -- SINGLE ---------------------------------------------------------------------------
    def get(self, table, key):
        return self.get_many(table, [key])[0]

    def get_many(self, table, keys):
        self._kind(table, SINGLE)
        keys = [bytes(k) for k in keys]
        stored = self._stored_single(table, [k for k in keys if (table, k) not in self.single])
        return [self.single[(table, k)] if (table, k) in self.single else stored[k] for k in keys]

    def put(self, table, key, value):
        self._kind(table, SINGLE)
        self._change()
        self.single[(table, bytes(key))] = bytes(value)

    def delete(self, table, key):
        kind = self._kind(table)
        self._change()
        key = bytes(key)
        if kind == SINGLE:
            self.single[(table, key)] = None
        else:
            self.cleared.add((table, key))
            self.added.pop((table, key), None)
            self.removed.pop((table, key), None)

    # -- MULTI ----------------------------------------------------------------------------
    def _merged(self, table: str, key: bytes, stored: list) -> list[bytes]:
        stored_set = set() if (table, key) in self.cleared else {bytes(v) for v in stored}
        added, removed = self.added.get((table, key), set()), self.removed.get((table, key), set())
        return sorted((stored_set - removed) | added)

    def values(self, table, key):
        return self.values_many(table, [key])[0]

    def values_many(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        stored = self._stored_multi([(table, k) for k in keys])
        return [self._merged(table, k, got) for k, got in zip(keys, stored)]

    def value_count(self, table, key):
        return self.value_counts(table, [key])[0]

    def value_counts(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        plain = [k for k in keys if not self._touched(table, k) and (table, k) not in self.got_multi]
        names = [self.s.k("m", table, k) for k in plain]
        counts = dict(zip(plain, self._run([("ZCARD", n) for n in names], names)))
        return [int(counts[k]) if k in counts else len(self.values(table, k)) for k in keys]

    def _pending(self, table: str, key: bytes) -> bool:
        return (table, key) in self.single or self._touched(table, key)

    def _touched(self, table: str, key: bytes) -> bool:
        return (table, key) in self.added or (table, key) in self.removed or (table, key) in self.cleared

    def add(self, table, key, value):
        self._kind(table, MULTI)
        self._change()
        key, value = bytes(key), bytes(value)
        self.removed.get((table, key), set()).discard(value)
        self.added.setdefault((table, key), set()).add(value)

    def remove(self, table, key, value):
        self._kind(table, MULTI)
        self._change()
        key, value = bytes(key), bytes(value)
        self.added.get((table, key), set()).discard(value)
        self.removed.setdefault((table, key), set()).add(value)

    def union_u64(self, tables, keys):
        """Every bucket of a lookup in one round trip."""
        for t in tables:
            self._kind(t, MULTI)
        pairs = [(t, bytes(k)) for t, k in zip(tables, keys)]
        stored = self._stored_multi(pairs)
        raw = b"".join(b"".join(self._merged(t, k, got)) for (t, k), got in zip(pairs, stored))
        return np.frombuffer(raw, dtype=">u8").astype(np.uint64)

    def sequence(self, table, key, by=1, start=0):
        """INCR outside the transaction: never conflicts, never rolled back (ids may skip)."""
        self._kind(table, SINGLE)
        self._change()
        return int(self.conn.run([("INCRBY", self.s.k("q", table, bytes(key)), by)])[0]) + start

    # -- both -----------------------------------------------------------------------------
    def _pending_keys(self, table: str) -> set[bytes]:
        keys = {k for (t, k) in self.single if t == table}
        return keys | {k for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table}

    def scan(self, table, start, limit):
        kind = self._kind(table)
        out: list[tuple[bytes, bytes]] = []
        if limit <= 0:
            return out
        order = self.s.k("o", table)
        pending = sorted(k for k in self._pending_keys(table) if k >= bytes(start))
        lo, batch = b"[" + bytes(start), max(limit, 64)
        while True:
            stored = [bytes(k) for k in self._run([("ZRANGEBYLEX", order, lo, "+", "LIMIT", 0, batch)], [order])[0]]
            upto = stored[-1] if len(stored) == batch else None  # keys past this one come in the next round
            keys = sorted(set(stored) | {k for k in pending if upto is None or k <= upto})
            if kind == SINGLE:
                found = dict(zip(keys, self.get_many(table, keys)))
                rows = [(k, v) for k, v in found.items() if v is not None]
            else:
                found = dict(zip(keys, self.values_many(table, keys)))
                rows = [(k, v) for k, vals in found.items() for v in vals]
            if self.writing and self.s.expiring():  # (the keys are watched: one written again fails the commit)
                self.purge |= {(table, k) for k, v in found.items() if not v and not self._pending(table, k)}
            for row in rows:
                out.append(row)
                if len(out) >= limit:
                    return out
            if upto is None:
                return out
            pending = [k for k in pending if k > upto]
            lo = b"(" + upto

    def count(self, table):
        kind = self._kind(table)
        counts = self.s.k("n")
        if self.s.expiring() and table not in self.s.ttl_except:
            base = self._count_live(table, kind)  # the counts still hold what Redis expired on its own
        else:
            base = int(self._run([("HGET", counts, table)], [counts])[0] or 0)
        if kind == SINGLE:
            mine = [(k, v) for (t, k), v in self.single.items() if t == table]
            names = [self.s.k("s", table, k) for k, _ in mine]
            there = self._run([("EXISTS", n) for n in names], names)
            return base + sum((v is not None) - int(e) for (_, v), e in zip(mine, there))
        touched = sorted({k for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table})
        names = [self.s.k("m", table, k) for k in touched]
        stored = self._run([("ZCARD", n) for n in names], names)
        return base + sum(len(self.values(table, k)) - int(n) for k, n in zip(touched, stored))

    def _count_live(self, table: str, kind: str, batch: int = 1000) -> int:
        """Entries of a table whose keys expire, counted key by key (the after-crawl stats)."""
        order, lo, total = self.s.k("o", table), b"-", 0
        op, part = ("EXISTS", "s") if kind == SINGLE else ("ZCARD", "m")
        while True:
            keys = self._run([("ZRANGEBYLEX", order, lo, "+", "LIMIT", 0, batch)], [order])[0]
            names = [self.s.k(part, table, bytes(k)) for k in keys]
            total += sum(int(n) for n in self._run([(op, n) for n in names], names))
            if len(keys) < batch:
                return total
            lo = b"(" + bytes(keys[-1])

    # -- commit ---------------------------------------------------------------------------
    def commit(self) -> bool:
        """Apply the buffer in one script inside MULTI/EXEC; False (nothing applied) when a key
        this transaction read changed since it read it."""
        s = self.s
        keys: list[bytes] = []
        argv: list[Any] = [s.ttl_ms]

        def change(op: str, table: str, key: bytes, name: bytes, value: bytes = b"") -> None:
            keys.extend((name, s.k("o", table), s.k("n")))
            argv.extend((op if s.ttl_ms and table not in s.ttl_except else op.lower(), table, key, value))

        for (t, k), value in self.single.items():
            change("D" if value is None else "S", t, k, s.k("s", t, k), value or b"")
        for t, k in self.cleared:
            change("C", t, k, s.k("m", t, k))
        for (t, k), values in self.removed.items():
            for v in values:
                change("R", t, k, s.k("m", t, k), v)
        for (t, k), values in self.added.items():
            for v in values:
                change("A", t, k, s.k("m", t, k), v)
        for t, k in self.purge - set(self.single) - self.cleared - set(self.added) - set(self.removed):
            change("O", t, k, s.k("o", t))
        if not keys:
            return True
        keys.append(s.k("ttl"))  # keys expire: counts are taken from the keys left (readers check)
        keys.append(s.k("index"))  # there is an index under this prefix (a read-only open checks)
        replies = self.conn.run([("MULTI",), ("EVAL", _COMMIT, len(keys), *keys, *argv), ("EXEC",)])
        self.conn.watching = False  # EXEC ends the watches, run or not
        if replies[-1] is None:
            return False
        for reply in replies[-1]:
            if isinstance(reply, Exception):
                raise reply
        return True

    def close(self) -> None:
        self.conn.close()


class RedisStore:
    """Many processes, on many machines, share it; open it in the process that uses it."""

    one_per_process = False
    expire_apart = True  # DEDUP_WINDOW: expired pages leave in their own transactions (core/dedup.py)

    def __init__(self, url: str, prefix: str = "dedup", readonly: bool = False, ttl_ms: int = 0,
                 ttl_except: tuple[str, ...] = ("meta",)):
        self.url, self.prefix, self.readonly = url, prefix, readonly
        self.ttl_ms, self.ttl_except = int(ttl_ms), ttl_except
        self.location = f"{_safe_url(url)} prefix {prefix}"
        self.kinds: dict[str, str] = {}
        self.client: Any = None
        self.cluster = False  # a Redis Cluster: every key of the index is in the slot of {prefix}
        self.trips = self.commands = self.conflicts = 0  # round trips, commands, transactions run again
        self._expiring: bool | None = None
        import redis

        self.redis = redis

    @classmethod
    def from_config(cls, config, readonly: bool = False) -> "RedisStore":
        # DEDUP_WINDOW: keys outlive their last write by twice the window (pages leave the index
        # at one window, removed by the crawl; the TTL empties an index no crawl writes to)
        return cls(config.redis_url, config.redis_prefix, readonly=readonly, ttl_ms=2000 * int(config.window or 0))

    def k(self, *parts: str | bytes) -> bytes:
        """A key under the prefix's hash tag (one cluster slot)."""
        out = b"{" + self.prefix.encode() + b"}"
        for part in parts:
            out += b":" + (part if isinstance(part, bytes) else part.encode())
        return out

    def open(self) -> None:
        try:
            timeouts = {"socket_timeout": 10, "socket_connect_timeout": 5}
            self.client = self.redis.Redis.from_url(self.url, health_check_interval=30, **timeouts)
            self.client.ping()
            if self.client.info("cluster").get("cluster_enabled"):  # the URL names a node of a cluster
                from redis.cluster import RedisCluster

                self.client.close()
                self.client = RedisCluster.from_url(self.url, **timeouts)
                self.cluster = True
            if self.readonly and not self.client.exists(self.k("index")):
                raise StoreError(f"no index in Redis {self.location}")
        except self.redis.RedisError as exc:
            self.close()
            raise StoreError(f"cannot open the Redis index {self.location}: {exc}") from exc
        except StoreError:
            self.close()
            raise

    def expiring(self) -> bool:
        """Whether the index's keys expire (DEDUP_WINDOW here, or in a crawl that wrote it)."""
        if self._expiring is None:
            self._expiring = bool(self.ttl_ms) or bool(self._client().exists(self.k("ttl")))
        return self._expiring

    def pool(self):
        """The connection pool of the server (or cluster node) that holds the index's slot."""
        if self.cluster:
            return self.client.get_redis_connection(self.client.get_node_from_key(self.k("index"))).connection_pool
        return self.client.connection_pool

    def moved(self) -> None:
        """The cluster moved the slot: learn its new node for the next transaction."""
        if self.cluster:
            try:
                self.client.nodes_manager.initialize()
            except Exception:
                pass  # (the cluster is down: the next transaction fails too, and is counted)

    def ensure(self, tables) -> None:
        for name, kind in tables.items():
            if kind not in (SINGLE, MULTI):
                raise StoreError(f"table {name!r}: unknown kind {kind!r}")
            self.kinds.setdefault(name, kind)

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
            self.client = None

    def _client(self):
        if self.client is None:
            raise StoreError(f"the Redis index {self.location} is not open")
        return self.client

    def read(self, fn: Callable[..., T]) -> T:
        self._client()
        return self._moving(lambda: self._read_once(fn))

    def _read_once(self, fn: Callable[..., T]) -> T:
        txn = _RedisTxn(self, writing=False)
        try:
            return fn(txn)
        finally:
            txn.close()

    def write(self, fn: Callable[..., T]) -> T:
        if self.readonly:
            raise StoreError(f"the Redis index {self.location} is open read-only")
        self._client()
        return self._moving(lambda: self._write_once(fn))

    def _write_once(self, fn: Callable[..., T]) -> T:
        for attempt in range(MAX_ATTEMPTS):
            txn = _RedisTxn(self, writing=True)
            try:
                out = fn(txn)
                if txn.commit():
                    return out
            finally:
                txn.close()
            # a key fn read changed under it (another writer's page could match): run again
            self.conflicts += 1
            if attempt >= 2:  # many writers on one hot key: back off a little, at random
                time.sleep(random.uniform(0, min(0.05, 0.0005 * 2 ** attempt)))
        raise StoreError(f"the Redis index {self.location}: a write conflicted {MAX_ATTEMPTS} times in a row")

    def _moving(self, run: Callable[[], T]) -> T:
        """Run a transaction; when the cluster moved the index's slot (MOVED, ASK, CLUSTERDOWN,
        TRYAGAIN), learn the new map and run it again on the slot's new node (nothing of the
        failed try was applied: its commit never reached EXEC, or EXEC was refused)."""
        moved = (self.redis.exceptions.AskError, self.redis.exceptions.ClusterDownError,
                 self.redis.exceptions.TryAgainError)  # (MovedError is an AskError)
        for attempt in range(5):
            try:
                return run()
            except moved as exc:
                if not self.cluster or attempt == 4:
                    raise StoreError(f"Redis index {self.location}: the cluster moved its slot ({exc})") from exc
                self.moved()
                time.sleep(0.05 * attempt)
            except self.redis.RedisError as exc:
                raise StoreError(f"Redis index {self.location}: {exc}") from exc
        raise AssertionError("unreachable")


def _safe_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    from ..config import mask_password

    return mask_password(url)
