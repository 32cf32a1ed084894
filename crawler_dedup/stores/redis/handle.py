"""What the Redis store's parts (a transaction, its connection, the shard count) see of the store
they belong to: a protocol, so the parts sit below store.py and never import it (the store on
top builds them and hands itself in)."""

from __future__ import annotations

from typing import Any, Protocol


class StoreHandle(Protocol):
    """The RedisStore as its parts use it (store.py has the meaning of each)."""

    location: str  # the URL without its password, and the prefix: for messages
    kinds: dict[str, str]  # table -> SINGLE or MULTI
    client: Any  # redis.Redis, or redis.cluster.RedisCluster
    cluster: bool
    nodes: Any  # spread: the commands' router (nodes.Nodes)
    map: Any  # spread: the shard count (growth.ShardMap)
    journal: Any  # spread: this process's write journal (journal.Journal)
    confirmed: set[int]  # spread: pages seen confirmed (spread_claims.SpreadClaims.remember_confirmed)
    filings: Any  # spread: each filed page's filing, until it claims (spread_claims.Filings)
    last_count: dict[int, int]  # spread: a thread's last claim's order (the claims' count then, at least)
    quiet: int  # spread: second looks skipped by a quiet claim, for the benchmarks
    unchanged: int  # spread: second looks whose read found nothing changed (rules not run again)
    apart: int  # spread: second looks skipped as the pages claimed meanwhile wrote nothing the filing looked at
    ids: Any  # doc ids taken in blocks (ids.IdBlocks)
    prefix_b: bytes
    meta_key: bytes
    ttl_ms: int
    ttl_except: tuple[str, ...]
    fetch_copies: bool  # fetch entries carry body copies (DEDUP_CONDITIONAL_COPY): keys of their own
    generation: int  # spread: a generation of shards' length in ms, once a window wrote any (else 0)
    trips: int  # round trips, for the benchmarks
    commands: int

    @property
    def redis(self) -> Any:
        """The redis module (its exceptions)."""

    @property
    def retry_seconds(self) -> float:
        """DEDUP_REDIS_RETRY."""

    def k(self, *parts: str | bytes) -> bytes:
        """A key under the prefix's hash tag (one cluster slot)."""

    def pool(self) -> Any:
        """The connection pool of the node that holds the index's slot."""

    def expiring(self) -> bool:
        """Whether the index's keys expire."""
