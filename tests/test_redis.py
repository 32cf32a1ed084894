"""DEDUP_BACKEND=redis against a real redis-server: the shipped store-contract suite, and the
Deduplicator and the after-crawl commands on it."""

import os

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.exceptions import StoreError
from crawler_dedup.stores.contract import StoreContract

redis = pytest.importorskip("redis")


class TestRedisStore(StoreContract):
    persistent = True  # the server keeps the data while it runs

    @pytest.fixture(autouse=True)
    def _server(self, redis_server):
        self.url = redis_server

    def new_store(self, location=None, readonly=False):
        from crawler_dedup.stores.redis import RedisStore

        prefix = os.path.basename(location or self.fresh_location()) + os.path.basename(os.path.dirname(location or ""))
        return RedisStore(self.url, prefix=prefix or "x", readonly=readonly)

    def fresh_location(self):
        return os.path.join(super().fresh_location(), os.urandom(6).hex())


def test_a_duplicate_is_dropped_across_two_deduplicators_on_one_redis(redis_server, articles):
    settings = dict(backend="redis", redis_url=redis_server, redis_prefix="two-procs")
    with Deduplicator(**settings) as one, Deduplicator(**settings) as two:
        assert one.check("https://a/1", text=articles[0][1]).action == "keep"
        v = two.check("https://b/1", text=articles[0][1])
    assert (v.action, v.duplicate_of) == ("drop", "https://a/1")


def test_an_unreachable_redis_fails_clearly_and_a_crawl_keeps_its_pages(articles):
    with pytest.raises(StoreError, match="cannot open the Redis index redis://127.0.0.1:1/0"):
        Deduplicator(backend="redis", redis_url="redis://127.0.0.1:1/0").open()


def test_scans_page_through_many_keys_and_see_the_transactions_own_changes(redis_server):
    from crawler_dedup.stores.base import MULTI, SINGLE, u64
    from crawler_dedup.stores.redis import RedisStore

    store = RedisStore(redis_server, prefix="scan-pages")
    store.open()
    store.ensure({"one": SINGLE, "many": MULTI})
    store.write(lambda t: [t.put("one", u64(i), b"v") for i in range(0, 300, 2)])  # 150 keys, even ids

    def check(t):
        for i in range(0, 40, 4):
            t.delete("one", u64(i))  # 10 gone
        for i in (1, 3, 301, 299, 151):
            t.put("one", u64(i), b"new")  # 5 new, between and after the stored ones
        want = sorted({i for i in range(0, 300, 2) if not (i < 40 and i % 4 == 0)} | {1, 3, 151, 299, 301})
        got = [int.from_bytes(k, "big") for k, _ in t.scan("one", b"", 1000)]
        assert got == want and t.count("one") == len(want)
        part = [int.from_bytes(k, "big") for k, _ in t.scan("one", u64(100), 20)]
        assert part == [i for i in want if i >= 100][:20]

    store.write(check)
    store.close()
