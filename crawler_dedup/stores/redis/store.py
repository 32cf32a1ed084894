"""RedisStore: the store DEDUP_BACKEND=redis builds. It opens the client (a cluster when the URL
names a node of one), holds the table kinds and the TTL, and runs each read or write in a
transaction (txn.py), again when a write conflicted or the cluster moved the index's slot.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from typing import Any, Callable

from ...exceptions import StoreDamaged, StoreError
from ..base import MULTI, SINGLE, T
from .retry import Patience, recognise_refusals
from .txn import _RedisTxn

logger = logging.getLogger(__name__)

OPEN_WAIT_S = 10.0  # opening waits this long at most for a server restarting or a cluster failing over
LEFTOVER_ROUNDS = 200  # SCAN rounds of 1,000 keys a node looked through for an index's keys without its meta
LEFTOVER_RECORDS = 64  # the first records asked for by name (a small index on a crowded cluster is found so)
LEFTOVER_LEVELS = 24  # and the first two shards of each family at this many shard counts (64 to 2^29)
MAX_ATTEMPTS = 200  # fn run again this often (a conflict each time) before the call fails (the page is kept)


class RedisStore:
    """Many processes, on many machines, share it; open it in the process that uses it.

    Two layouts: on one server, and on a cluster with DEDUP_REDIS_LAYOUT=slot, the whole index
    sits in one slot and each write is a transaction (txn.py); on a cluster by default it is
    spread over every slot (spread.py), without transactions across them."""

    one_per_process = False
    expire_apart = True  # DEDUP_WINDOW: expired pages leave in their own transactions (core/dedup.py)

    def __init__(self, url: str, prefix: str = "dedup", readonly: bool = False, ttl_ms: int = 0,
                 ttl_except: tuple[str, ...] = ("meta",), layout: str = "auto", expected_pages: int = 1_000_000,
                 retry_s: float = 30.0, fetch_copies: bool = False):
        self.url, self.prefix, self.readonly = url, prefix, readonly
        self.fetch_copies = fetch_copies  # fetch entries carry body copies: keys of their own (spread.py)
        self.patience = Patience(retry_s)  # DEDUP_REDIS_RETRY (retry.py)
        self.generation = 0  # spread: the length (ms) of a generation of shards, once a window wrote any
        self.ttl_ms, self.ttl_except = int(ttl_ms), ttl_except
        self.layout, self.expected_pages = layout, expected_pages
        self.location = f"{_safe_url(url)} prefix {prefix}"
        self.kinds: dict[str, str] = {}
        self.client: Any = None
        self.cluster = False  # a Redis Cluster
        self.spread = False  # the spread layout (set when opened)
        self.trips = self.commands = self.conflicts = 0  # round trips, commands, transactions run again
        self._expiring: bool | None = None
        self.nodes: Any = None  # spread: the commands' router (nodes.py)
        self.prefix_b = prefix.encode()
        self.meta_key = b"{" + self.prefix_b + b"}:m"  # the meta table, counters and claims (spread.py)
        self.map: Any = None  # spread: the shards' count, growing with the index (growth.py)
        self.journal: Any = None  # spread: this process's write journal (journal.py)
        from .spread_claims import Filings

        self.filings = Filings()  # spread: what each filed page's filing read and wrote, until it claims
        self.last_count: dict[int, int] = {}  # spread: a thread's last claim's order
        self.quiet = self.unchanged = self.apart = 0  # spread: second looks skipped, rules not run again,
        # and second looks skipped as the pages claimed meanwhile wrote nothing the filing looked at (spread_claims.py)
        self.confirmed: set[int] = set()  # spread: pages seen confirmed (spread_claims.py)
        from .ids import IdBlocks

        self.ids = IdBlocks()  # doc ids taken in blocks (ids.py)
        import redis

        recognise_refusals(redis)
        self.redis = redis

    # what the index asks of a store (core/index/neardup.py, core/dedup.py); the spread layout differs
    @property
    def serializable(self) -> bool:
        """write(fn) is one transaction (stores/base.py); the spread layout keeps groups once by claims."""
        return not self.spread

    @property
    def retry_seconds(self) -> float:
        """How long a call waits through a reshard, a failover or a restart (DEDUP_REDIS_RETRY): a
        crawler waiting out a fault is late by that much (claims.windows)."""
        return self.patience.seconds

    @property
    def ordered(self) -> bool:
        """Tables can be scanned in key order cheaply (the time index, DEDUP_WINDOW's removals)."""
        return not self.spread

    @property
    def coarse_sketches(self) -> bool:
        """Records keep their sketch's high 24 bits (3 bytes a hash, not 8: the spread layout's budget)."""
        return self.spread

    @classmethod
    def from_config(cls, config, readonly: bool = False) -> "RedisStore":
        # DEDUP_WINDOW: keys outlive their last write by twice the window (pages leave the index
        # at one window, removed by the crawl; the TTL empties an index no crawl writes to)
        return cls(config.redis_url, config.redis_prefix, readonly=readonly, ttl_ms=2000 * int(config.window or 0),
                   layout=config.redis_layout, expected_pages=config.expected_pages, retry_s=config.redis_retry,
                   fetch_copies=config.keeps_copies())

    def k(self, *parts: str | bytes) -> bytes:
        """A key under the prefix's hash tag (one cluster slot)."""
        out = b"{" + self.prefix.encode() + b"}"
        for part in parts:
            out += b":" + (part if isinstance(part, bytes) else part.encode())
        return out

    def open(self) -> None:
        """Connect and find the layout; a server restarting or a cluster failing over is waited
        for (DEDUP_REDIS_RETRY, retry.py), other errors fail at once."""
        e = self.redis.exceptions
        again = (self.redis.ConnectionError, self.redis.TimeoutError, e.ClusterDownError, e.TryAgainError)
        wait = min(self.patience.seconds, OPEN_WAIT_S)  # (a wrong URL is told in seconds, not minutes)
        deadline, attempt = time.monotonic() + wait, 0
        while True:
            try:
                self._open()
                return self._finish_journals()
            except again as exc:
                self.close()
                if attempt == 0 and wait:
                    logger.warning("crawler-dedup: the Redis index %s does not answer (%s); waiting up to %g s for it "
                                   "(a restart or a failover: DEDUP_REDIS_RETRY)", self.location, exc, wait)
                if not Patience.pause(attempt, deadline):
                    waited = f" (tried for {wait:g} s)" if attempt else ""
                    raise StoreError(f"cannot open the Redis index {self.location}: {_why(exc)}{waited}{_hint(exc)}") from None
                attempt += 1

    def _open(self) -> None:
        try:
            timeouts = {"socket_timeout": 10, "socket_connect_timeout": 5}
            self.client = self.redis.Redis.from_url(self.url, health_check_interval=30, **timeouts)
            self.client.ping()
            if self.client.info("cluster").get("cluster_enabled"):  # the URL names a node of a cluster
                from redis.cluster import RedisCluster

                self.client.close()
                self.client = RedisCluster.from_url(self.url, **timeouts)
                self.cluster = True
            self._choose_layout()
            if self.readonly and not self.client.exists(self.meta_key if self.spread else self.k("index")):
                raise StoreError(f"no index in Redis {self.location}")
        except (self.redis.ConnectionError, self.redis.TimeoutError, self.redis.exceptions.ClusterDownError,
                self.redis.exceptions.TryAgainError):
            raise  # (open() waits for these)
        except self.redis.RedisError as exc:
            self.close()
            raise StoreError(f"cannot open the Redis index {self.location}: {_why(exc)}{_hint(exc)}") from exc
        except StoreError:
            self.close()
            raise

    def _choose_layout(self) -> None:
        """The spread layout on a cluster (DEDUP_REDIS_LAYOUT=auto or spread), the one-slot layout
        on one server; an index under the prefix in the other layout is refused with what to do."""
        want_spread = self.layout == "spread" or (self.layout == "auto" and self.cluster)
        if want_spread and not self.cluster:
            raise StoreError(f"DEDUP_REDIS_LAYOUT=spread needs a Redis Cluster; {self.location} is one server "
                             "(its index is in one slot: use DEDUP_REDIS_LAYOUT=auto)")
        slot_index = bool(self.client.exists(self.k("index")))
        spread_index = bool(self.client.exists(self.meta_key))
        if want_spread and slot_index and not spread_index:
            raise StoreError(f"the index {self.location} has the one-slot layout (DEDUP_REDIS_LAYOUT=slot, all of it "
                             "on one node): go on with it with DEDUP_REDIS_LAYOUT=slot, or spread it over the cluster "
                             "under a new DEDUP_REDIS_PREFIX with `crawler-dedup index add` from the crawled pages' "
                             "HTML or text (WARC files, or items with a text field; docs/distributed.md, On a Redis "
                             "Cluster)")
        if not want_spread and spread_index and not slot_index:
            raise StoreError(f"the index {self.location} has the spread layout: open it with DEDUP_REDIS_LAYOUT=auto "
                             "(or spread) on the cluster")
        self.spread = want_spread
        if self.spread:
            from .growth import FIRST_SHARDS, ShardMap
            from .growth import SCRIPTS as GROWTH
            from .nodes import Nodes
            from .spread_keys import SCRIPTS, WRITE, generation_ms

            self.nodes = Nodes(self.client, self.redis, {**SCRIPTS, **GROWTH}, self.patience, newer={"write": WRITE})
            meta = self.client.get_redis_connection(self.nodes.node_of(self.meta_key))
            if not meta.hexists(self.meta_key, b"layout"):
                self._refuse_leftovers()
            node = self.client.get_redis_connection(self.nodes.node_of(self.meta_key))
            if not self.readonly:
                node.hsetnx(self.meta_key, b"layout", b"spread")
                node.hsetnx(self.meta_key, b"shards", FIRST_SHARDS)
                if self.ttl_ms:  # (the generations' length is the index's, whatever later crawls' window)
                    node.hsetnx(self.meta_key, b"gen", generation_ms(self.ttl_ms))
            self.generation = int(node.hget(self.meta_key, b"gen") or 0)
            self.map = ShardMap(self, self.patience.seconds)
            from .journal import Journal

            self.journal = Journal(self)

    def journal_lease(self) -> float:
        """Seconds after which a writer that wrote no commit is taken for gone (its beat is renewed
        every BEAT_S; a commit ends within three times DEDUP_REDIS_RETRY plus 60 s)."""
        from .journal import BEAT_S
        from .spread_claims import claims_kept_s

        return BEAT_S + claims_kept_s(self.retry_seconds)

    def deferring(self) -> Any:
        """A page's decision: on the spread layout its journals' deletions ride on its next round
        trips (journal.Journal.deferring); elsewhere nothing changes."""
        if self.spread and self.journal is not None:
            return self.journal.deferring()
        return contextlib.nullcontext()

    def known_confirmed(self, doc_id: int) -> bool:
        """A page this process read confirmed (spread layout): it stays, no look needed to settle
        a drop against it (core/decide/claims.settle)."""
        return doc_id in self.confirmed

    def unfinished_commits(self) -> int:
        """Commits of crawlers gone mid-commit that no crawler has applied yet (spread layout)."""
        return self.journal.left(self.journal_lease()) if self.spread and self.journal is not None else 0

    def _finish_journals(self) -> None:
        """Apply whole the commits that crawlers killed mid-commit left half done (journal.py). A
        failure here is told and left to the next crawler: it does not stop this one opening."""
        if not self.spread or self.readonly:
            return
        from .spread import SpreadTxn

        try:
            self.journal.finish_others(lambda: SpreadTxn(self, True, replay=True), self.journal_lease())
        except (StoreError, self.redis.RedisError) as exc:
            logger.warning("crawler-dedup: the write journals of killed crawlers on %s were not finished (%s); "
                           "the next crawler to open the index tries again", self.location, exc)

    def _refuse_leftovers(self) -> None:
        """No meta hash (plan, counters, claims) under the prefix: a new index, unless other keys of
        it remain (the node holding the meta restarted without persistence, or the hash was deleted):
        then starting over would file new pages over the old ones' ids. Refused, with the fix. The
        keys an index always has are asked for by name (its first records, the first shards of every
        level and family), whatever else the cluster holds; then a bounded scan looks for the rest."""
        from .growth import FIRST_SHARDS
        from .spread_keys import FAMILIES, escape, shard_name

        named = [self.prefix_b + b":d:" + str(i).encode() for i in range(1, LEFTOVER_RECORDS + 1)]
        named += [shard_name(self.prefix_b, fam, FIRST_SHARDS << level, shard)
                  for level in range(LEFTOVER_LEVELS) for fam in FAMILIES for shard in range(2)]
        found = [key for key, there in zip(named, self.nodes.run([(k, ("EXISTS", k)) for k in named])) if there]
        if found:
            self._leftover(found[0], "")
        pattern = escape(self.prefix_b) + b":[dhf]*"
        for node in self.nodes.primaries():
            client = self.client.get_redis_connection(node)
            cursor, rounds = 0, 0
            while True:
                cursor, keys = client.scan(cursor=cursor, match=pattern, count=1000)
                if keys:
                    self._leftover(bytes(keys[0]), f" on {node.name}")
                rounds += 1
                if not cursor or rounds >= LEFTOVER_ROUNDS:
                    break

    def _leftover(self, key: bytes, where: str) -> None:
        raise StoreDamaged(
            f"the Redis index {self.location} has lost its meta hash {self.meta_key.decode()} (its plan, "
            f"counters and claims: a node restarted without persistence?) while other keys of it remain "
            f"(such as {key.decode('latin-1')!r}{where}); it cannot go on safely: "
            "crawl under a new DEDUP_REDIS_PREFIX (and delete the old keys), or bring the node back with "
            "its data (appendonly yes on every node)")

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
        self.ids.clear()  # (a failover may have lost the counter's last INCRBY: take a block anew)
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
        if self.spread:  # (the spread layout tells tables apart by a 2-byte code in their fields)
            from .spread_keys import OWN_KEYS, table_code

            shared = [t for t in self.kinds if t not in OWN_KEYS and t != "meta"]
            if len({table_code(t) for t in shared}) < len(shared):
                raise StoreError(f"two tables of the Redis index {self.location} share a field code")

    def close(self) -> None:
        self.ids.clear()
        if self.journal is not None and self.client is not None:
            try:
                self.journal.close()
            except (StoreError, self.redis.RedisError):
                pass  # (its beat runs out; a journal left is finished by the next crawler)
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

    def _txn(self, writing: bool):
        if self.spread:
            from .spread import SpreadTxn

            return SpreadTxn(self, writing)
        return _RedisTxn(self, writing)

    def _read_once(self, fn: Callable[..., T]) -> T:
        txn = self._txn(writing=False)
        try:
            return fn(txn)
        finally:
            txn.close()

    def write(self, fn: Callable[..., T]) -> T:
        if self.readonly:
            raise StoreError(f"the Redis index {self.location} is open read-only")
        self._client()
        if self.journal is not None:
            if self.journal.pending is not None:  # (a commit of this process that failed half-way)
                from .spread import SpreadTxn

                self._moving(lambda: self.journal.finish_own(lambda: SpreadTxn(self, True, replay=True)))
            if self.journal.due():  # (a crawler killed mid-commit while this one runs)
                self._finish_journals()
        return self._moving(lambda: self._write_once(fn))

    def _write_once(self, fn: Callable[..., T]) -> T:
        for attempt in range(MAX_ATTEMPTS):
            txn = self._txn(writing=True)
            try:
                out = fn(txn)
                try:
                    committed = txn.commit()
                except (self.redis.ConnectionError, self.redis.TimeoutError) as exc:
                    if getattr(txn, "sent", True):  # (a spread commit is many idempotent steps: never run again)
                        raise _CommitLost() from exc
                    raise
                if committed:
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
        TRYAGAIN), a connection was lost before the commit went out, or the server is loading its
        data, learn the new map and run it again, until DEDUP_REDIS_RETRY has passed (retry.py).
        Nothing of the failed try was applied: its commit never reached EXEC, or EXEC was refused.
        A commit whose reply was lost is not run again (it may have been applied): it fails."""
        e = self.redis.exceptions
        again = (e.AskError, e.ClusterDownError, e.TryAgainError, e.BusyLoadingError, e.ReadOnlyError,
                 self.redis.ConnectionError, self.redis.TimeoutError)  # (MovedError is an AskError)
        deadline, attempt = self.patience.deadline(), 0
        while True:
            try:
                out = run()
                self.patience.ok()
                return out
            except _CommitLost as exc:
                raise StoreError(f"Redis index {self.location}: the reply to a commit was lost ({exc.__cause__}); "
                                 "the page is kept unchecked") from exc
            except again as exc:
                if not Patience.pause(attempt, deadline):
                    self.patience.failed()
                    waited = f"after {self.patience.seconds:g} s (DEDUP_REDIS_RETRY)" if attempt else "at once"
                    raise StoreError(f"Redis index {self.location}: {type(exc).__name__}: {exc} ({waited})") from exc
                attempt += 1
                self.moved()
            except self.redis.RedisError as exc:
                raise StoreError(f"Redis index {self.location}: {exc}") from exc


class _CommitLost(Exception):
    """The connection broke after a commit went out: it may have been applied."""


def _safe_url(url: str) -> str:
    """The URL without its password, for messages and logs."""
    from ...config import mask_password

    return mask_password(url)


def _why(exc: Exception) -> str:
    return str(exc).rstrip(". ") or type(exc).__name__


def _hint(exc: Exception) -> str:
    """What to do about an error opening the index, when its message alone does not say."""
    text = str(exc)
    if "SELECT is not allowed in cluster mode" in text:
        return ("; a Redis Cluster has database 0 only: end DEDUP_REDIS_URL with /0 (or no database number), "
                "and give each index its own DEDUP_REDIS_PREFIX instead")
    if "Connection closed by server" in text or "Protocol Error" in text:
        return ("; something answered at that address but does not speak Redis (an HTTP server, say): check the "
                "port in DEDUP_REDIS_URL or --redis (Redis listens on 6379 by default)")
    if "Connection refused" in text or "Name or service not known" in text or "nodename nor servname" in text:
        return "; is a Redis server running there? check the host and port in DEDUP_REDIS_URL (or --redis)"
    return ""
