"""Redis store: one index shared by crawler processes on many machines (DEDUP_BACKEND=redis).

Layout, all keys under one hash tag `{PREFIX}` (one cluster slot):
- `{P}:s:<table>`: a hash, key -> value (SINGLE tables);
- `{P}:m:<table>:<key>`: a sorted set of the key's 8-byte values, all at score 0 (MULTI tables:
  ZRANGEBYLEX gives them in byte order);
- `{P}:o:<table>`: a sorted set of the table's keys at score 0, for scans in key order;
- `{P}:n`: a hash, MULTI table -> its (key, value) count;
- `{P}:lock`: the writers' lock; `{P}:index`: set by the first commit.

Transactions (stores/base.py): write(fn) takes the lock (SET NX with a lease), runs fn with
reads going to Redis and writes buffered (reads see them), and commits the buffer in one
MULTI/EXEC that WATCHes the lock: if the lease ran out and another writer took it, nothing is
applied and fn runs again. So every change lands or none, and no two writers interleave.
read(fn) takes no lock: each commit is atomic, but a read of several keys may see two commits.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable

import numpy as np

from ..exceptions import StoreError
from .base import MULTI, SINGLE, T, TxnBase

LEASE_MS = 30_000  # a writer that dies holding the lock blocks the others this long at most
WAIT_S = 60.0  # how long a writer waits for the lock before the store call fails (the page is kept)
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


class _RedisTxn(TxnBase):
    def __init__(self, store: "RedisStore", writing: bool):
        self.s, self.r, self.writing = store, store.client, writing
        self.single: dict[tuple[str, bytes], bytes | None] = {}  # (table, key) -> value, None = deleted
        self.added: dict[tuple[str, bytes], set[bytes]] = {}
        self.removed: dict[tuple[str, bytes], set[bytes]] = {}
        self.cleared: set[tuple[str, bytes]] = set()  # MULTI keys deleted whole

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

    # -- SINGLE ---------------------------------------------------------------------------
    def get(self, table, key):
        self._kind(table, SINGLE)
        key = bytes(key)
        if (table, key) in self.single:
            return self.single[(table, key)]
        value = self.r.hget(self.s.k("s", table), key)
        return None if value is None else bytes(value)

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
    def _stored_values(self, table: str, key: bytes) -> list[bytes]:
        if (table, key) in self.cleared:
            return []
        return [bytes(v) for v in self.r.zrangebylex(self.s.k("m", table, key), b"-", b"+")]

    def _merged(self, table: str, key: bytes, stored: list[bytes]) -> list[bytes]:
        added, removed = self.added.get((table, key), set()), self.removed.get((table, key), set())
        return sorted((set(stored) - removed) | added)

    def values(self, table, key):
        self._kind(table, MULTI)
        key = bytes(key)
        return self._merged(table, key, self._stored_values(table, key))

    def value_count(self, table, key):
        return len(self.values(table, key))

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

    def values_many(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        pipe = self.r.pipeline(transaction=False)
        for k in keys:
            pipe.zrangebylex(self.s.k("m", table, k), b"-", b"+")
        stored = pipe.execute() if keys else []
        return [self._merged(table, k, [] if (table, k) in self.cleared else [bytes(v) for v in got])
                for k, got in zip(keys, stored)]

    def value_counts(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        plain = [k for k in keys if not self._touched(table, k)]  # the others need the overlay
        pipe = self.r.pipeline(transaction=False)
        for k in plain:
            pipe.zcard(self.s.k("m", table, k))
        counts = dict(zip(plain, pipe.execute() if plain else []))
        return [int(counts[k]) if k in counts else len(self.values(table, k)) for k in keys]

    def _touched(self, table: str, key: bytes) -> bool:
        return (table, key) in self.added or (table, key) in self.removed or (table, key) in self.cleared

    def get_many(self, table, keys):
        self._kind(table, SINGLE)
        keys = [bytes(k) for k in keys]
        missing = [k for k in keys if (table, k) not in self.single]
        stored = dict(zip(missing, self.r.hmget(self.s.k("s", table), missing))) if missing else {}
        return [self.single[(table, k)] if (table, k) in self.single else
                (None if stored[k] is None else bytes(stored[k])) for k in keys]

    def union_u64(self, tables, keys):
        """Every bucket of a lookup in one round trip."""
        pipe = self.r.pipeline(transaction=False)
        for t, k in zip(tables, keys):
            self._kind(t, MULTI)
            pipe.zrangebylex(self.s.k("m", t, bytes(k)), b"-", b"+")
        raw = []
        for t, k, stored in zip(tables, keys, pipe.execute()):
            k = bytes(k)
            stored = [] if (t, k) in self.cleared else [bytes(v) for v in stored]
            raw.append(b"".join(self._merged(t, k, stored)))
        return np.frombuffer(b"".join(raw), dtype=">u8").astype(np.uint64)

    # -- both -----------------------------------------------------------------------------
    def _pending_keys(self, table: str) -> set[bytes]:
        keys = {k for (t, k) in self.single if t == table}
        return keys | {k for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table}

    def scan(self, table, start, limit):
        kind = self._kind(table)
        out: list[tuple[bytes, bytes]] = []
        if limit <= 0:
            return out
        pending = sorted(k for k in self._pending_keys(table) if k >= bytes(start))
        lo, batch = b"[" + bytes(start), max(limit, 64)
        while True:
            stored = [bytes(k) for k in self.r.zrangebylex(self.s.k("o", table), lo, b"+", start=0, num=batch)]
            upto = stored[-1] if len(stored) == batch else None  # keys past this one come in the next round
            keys = sorted(set(stored) | {k for k in pending if upto is None or k <= upto})
            for key in keys:
                if kind == SINGLE:
                    value = self.get(table, key)
                    rows = [] if value is None else [(key, value)]
                else:
                    rows = [(key, v) for v in self.values(table, key)]
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
        if kind == SINGLE:
            base = int(self.r.hlen(self.s.k("s", table)))
            for (t, key), value in self.single.items():
                if t == table:
                    there = bool(self.r.hexists(self.s.k("s", table), key))
                    base += (value is not None) - there
            return base
        base = int(self.r.hget(self.s.k("n"), table) or 0)
        for t, key in {(t, k) for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table}:
            stored = [bytes(v) for v in self.r.zrangebylex(self.s.k("m", t, key), b"-", b"+")]
            base += len(self.values(t, key)) - len(stored)
        return base

    # -- commit ---------------------------------------------------------------------------
    def commit(self, token: bytes) -> bool:
        """Apply the buffer in one MULTI/EXEC, only if this writer still holds the lock."""
        s = self.s
        touched = sorted({(t, k) for (t, k) in (*self.added, *self.removed, *self.cleared)})
        finals: dict[tuple[str, bytes], list[bytes]] = {}
        deltas: dict[str, int] = {}
        reads = self.r.pipeline(transaction=False)
        for t, k in touched:
            reads.zcard(s.k("m", t, k))
        for (t, k), before in zip(touched, reads.execute() if touched else []):
            # final values and the table counts' change, from one round trip (we hold the lock)
            finals[(t, k)] = self.values(t, k)
            deltas[t] = deltas.get(t, 0) + len(finals[(t, k)]) - int(before)
        with self.r.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(s.k("lock"))
                if pipe.get(s.k("lock")) != token:
                    return False
                pipe.multi()
                for (t, k), value in self.single.items():
                    if value is None:
                        pipe.hdel(s.k("s", t), k)
                        pipe.zrem(s.k("o", t), k)
                    else:
                        pipe.hset(s.k("s", t), k, value)
                        pipe.zadd(s.k("o", t), {k: 0})
                for (t, k), values in finals.items():
                    pipe.delete(s.k("m", t, k))
                    if values:
                        pipe.zadd(s.k("m", t, k), {v: 0 for v in values})
                        pipe.zadd(s.k("o", t), {k: 0})
                    else:
                        pipe.zrem(s.k("o", t), k)
                for t, delta in deltas.items():
                    if delta:
                        pipe.hincrby(s.k("n"), t, delta)
                pipe.set(s.k("index"), b"1")  # there is an index under this prefix (a read-only open checks)
                pipe.execute()
                return True
            except s.redis.WatchError:
                return False


class RedisStore:
    """Many processes, on many machines, share it; open it in the process that uses it."""

    one_per_process = False

    def __init__(self, url: str, prefix: str = "dedup", readonly: bool = False):
        self.url, self.prefix, self.readonly = url, prefix, readonly
        self.location = f"{_safe_url(url)} prefix {prefix}"
        self.kinds: dict[str, str] = {}
        self.client: Any = None
        self.cluster = False  # a Redis Cluster: every key of the index is in the slot of {prefix}
        import redis

        self.redis = redis

    @classmethod
    def from_config(cls, config, readonly: bool = False) -> "RedisStore":
        return cls(config.redis_url, config.redis_prefix, readonly=readonly)

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
        try:
            return fn(_RedisTxn(self, writing=False))
        except self.redis.RedisError as exc:
            raise StoreError(f"Redis index {self.location}: {exc}") from exc

    def write(self, fn: Callable[..., T]) -> T:
        if self.readonly:
            raise StoreError(f"the Redis index {self.location} is open read-only")
        client, token = self._client(), os.urandom(16)
        try:
            deadline = time.monotonic() + WAIT_S
            while not client.set(self.k("lock"), token, nx=True, px=LEASE_MS):
                if time.monotonic() > deadline:
                    raise StoreError(f"the Redis index {self.location} stayed locked for {WAIT_S:.0f} s")
                time.sleep(0.002)
            try:
                while True:
                    txn = _RedisTxn(self, writing=True)
                    out = fn(txn)
                    if txn.commit(token):
                        return out
                    # the lease ran out and another writer went first: take the lock again, run fn again
                    while not client.set(self.k("lock"), token, nx=True, px=LEASE_MS):
                        time.sleep(0.002)
            finally:
                client.eval(_RELEASE, 1, self.k("lock"), token)
        except self.redis.RedisError as exc:
            raise StoreError(f"Redis index {self.location}: {exc}") from exc


def _safe_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.password:
        netloc = f"{parts.username or ''}:***@{parts.hostname}{f':{parts.port}' if parts.port else ''}"
        return urlunsplit(parts._replace(netloc=netloc))
    return url
