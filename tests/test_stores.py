"""One contract, every backend: the same tests run on each store."""

import numpy as np
import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.exceptions import StoreError, StoreFormat
from crawler_dedup.stores import LmdbStore, MemoryStore


@pytest.fixture(params=["memory", "lmdb"])
def store(request, tmp_path):
    s = MemoryStore() if request.param == "memory" else LmdbStore(str(tmp_path / "idx"), map_size=1 << 20, sync=False)
    s.open()
    s.open_tables(3)
    yield s
    s.close()


def test_meta_docs_exact_fps(store):
    def put(txn):
        txn.meta_put("plan", b"{}")
        txn.doc_put(1, b"one")
        txn.exact_put(b"x" * 16, 1)
        txn.fp_add(42, 1)
        txn.fp_add(42, 2)
        txn.fp_add(42, 1)  # a pair is stored once

    store.write(put)
    assert store.read(lambda t: (t.meta_get("plan"), t.meta_get("nope"))) == (b"{}", None)
    assert store.read(lambda t: (t.doc_get(1), t.doc_get(2), t.doc_count())) == (b"one", None, 1)
    assert store.read(lambda t: (t.exact_get(b"x" * 16), t.exact_get(b"y" * 16))) == (1, None)
    assert store.read(lambda t: (t.fp_docs(42), t.fp_docs(43))) == ([1, 2], [])


def test_buckets_are_per_table_sorted_and_deduplicated(store):
    def put(txn):
        for fp in (9, 3, 3, 2**64 - 1):
            txn.bucket_add(0, b"\x00\x01", fp)
        txn.bucket_add(1, b"\x00\x01", 5)

    store.write(put)
    b0, b1, b2 = store.read(lambda t: t.buckets([b"\x00\x01", b"\x00\x01", b"\x00\x01"]))
    assert b0.dtype == np.uint64 and b0.tolist() == [3, 9, 2**64 - 1]
    assert b1.tolist() == [5] and b2.size == 0
    union = store.read(lambda t: t.bucket_union([b"\x00\x01", b"\x00\x01", b"\x00\x01"]))
    assert union.dtype == np.uint64 and sorted(union.tolist()) == [3, 5, 9, 2**64 - 1]


def test_write_is_all_or_nothing(store):
    def fail(txn):
        txn.doc_put(7, b"seven")
        txn.bucket_add(0, b"\x00\x02", 1)
        txn.meta_put("next_id", b"x")
        raise RuntimeError("crash mid-transaction")

    with pytest.raises(RuntimeError):
        store.write(fail)
    assert store.read(lambda t: (t.doc_get(7), t.meta_get("next_id"), t.buckets([b"\x00\x02"])[0].size)) == (None, None, 0)


def test_lmdb_map_grows_when_full(tmp_path):
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_map_size=1 << 20, lmdb_sync=False, min_tokens=1) as d:
        start = d.index.store.env.info()["map_size"]
        for i in range(3000):
            assert d.check(f"u{i}", text=f"page {i} word{i} other{i * 7} more{i * 13} text").action == "keep"
        assert d.index.store.env.info()["map_size"] > start
        assert d.index.store.read(lambda t: t.doc_count()) == 3000


def test_reopen_keeps_the_stored_plan_and_refuses_another_k(tmp_path):
    path = str(tmp_path / "idx")
    with Deduplicator(dir=path, expected_pages=10**4) as d:
        plan = d.index.plan
    with Deduplicator(dir=path, expected_pages=10**9) as d:  # sizes only a new index
        assert d.index.plan == plan
    with pytest.raises(StoreFormat, match="DEDUP_K=3"):
        Deduplicator(dir=path, k=5).open()


def test_other_format_version_fails_clearly(tmp_path):
    path = str(tmp_path / "idx")
    with Deduplicator(dir=path) as d:
        d.index.store.write(lambda t: t.meta_put("format", b"999"))
    with pytest.raises(StoreFormat, match="format version 999"):
        Deduplicator(dir=path).open()


def test_unusable_directory_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError):
        LmdbStore(str(blocker / "idx")).open()


def test_url_table_and_doc_scan(store):
    def put(txn):
        for i in (3, 1, 2):
            txn.doc_put(i, b"r%d" % i)
        txn.url_put(b"k" * 16, 1)
        txn.url_put(b"k" * 16, 2)  # a URL's newer page replaces the older
        txn.url_put(b"j" * 16, 3)

    store.write(put)
    assert store.read(lambda t: (t.url_get(b"k" * 16), t.url_get(b"j" * 16), t.url_get(b"z" * 16))) == (2, 3, None)
    assert store.read(lambda t: t.url_count()) == 2
    assert store.read(lambda t: t.doc_scan(0, 10)) == [(1, b"r1"), (2, b"r2"), (3, b"r3")]
    assert store.read(lambda t: t.doc_scan(1, 1)) == [(2, b"r2")]
    assert store.read(lambda t: t.doc_scan(3, 10)) == []
    store.write(lambda t: t.url_delete(b"k" * 16))
    assert store.read(lambda t: (t.url_get(b"k" * 16), t.url_count())) == (None, 1)


def test_url_table_rolls_back_with_the_transaction(store):
    def fail(txn):
        txn.url_put(b"u" * 16, 9)
        raise RuntimeError("crash mid-transaction")

    with pytest.raises(RuntimeError):
        store.write(fail)
    assert store.read(lambda t: t.url_get(b"u" * 16)) is None
