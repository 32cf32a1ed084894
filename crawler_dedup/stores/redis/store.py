"""RedisStore: the store DEDUP_BACKEND=redis builds. It opens the client (a cluster when the URL
names a node of one), holds the table kinds and the TTL, and runs each read or write in a
transaction (txn.py), again when a write conflicted or the cluster moved the index's slot.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable

from ...exceptions import StoreError
from ..base import MULTI, SINGLE, T
from .txn import _RedisTxn

MAX_ATTEMPTS = 200  # fn run again this often (a conflict each time) before the call fails (the page is kept)


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
    from ...config import mask_password

    return mask_password(url)
