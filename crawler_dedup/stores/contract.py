"""The store contract as a test suite any backend runs (stores/base.py says what it promises).

    from crawler_dedup.stores.contract import StoreContract

    class TestMyStore(StoreContract):
        persistent = True  # data survives close() and a new store on the same location

        def new_store(self, location=None, readonly=False):
            return MyStore(location or self.fresh_location(), readonly=readonly)

pytest collects the inherited test_* methods. Plain asserts, no pytest import: the suite ships
with the package. Every test fails on a store that breaks the promise it checks.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import threading

import numpy as np

from ..exceptions import StoreError
from .base import MULTI, SINGLE, Claim, from_u64, u64

TABLES = {"one": SINGLE, "two": SINGLE, "many": MULTI, "more": MULTI}


class _Boom(Exception):
    pass


class StoreContract:
    persistent = False  # True: close() then a new store on the same location sees the data
    serializable = True  # False: a store without transactions across keys (stores/base.py), checked as such

    def new_store(self, location: str | None = None, readonly: bool = False):
        raise NotImplementedError("a backend's test class returns a new store at `location`")

    # -- helpers -------------------------------------------------------------------------------
    def setup_method(self, method=None):
        self._open: list = []
        self._dirs: list[str] = []

    def teardown_method(self, method=None):
        for store in self._open:
            try:
                store.close()
            except Exception:
                pass
        for path in self._dirs:
            shutil.rmtree(path, ignore_errors=True)

    def fresh_location(self) -> str:
        path = tempfile.mkdtemp(prefix="store-contract-")
        self._dirs.append(path)
        return os.path.join(path, "index")

    def opened(self, location: str | None = None, readonly: bool = False, tables=TABLES):
        store = self.new_store(location, readonly=readonly)
        store.open()
        store.ensure(tables)
        self._open.append(store)
        return store

    def skip_unless_persistent(self) -> None:
        if not self.persistent:
            self.skip("the store does not persist (persistent = False)")

    @staticmethod
    def skip(why: str) -> None:
        try:
            import pytest
        except ImportError:  # run without pytest: nothing to check here
            return
        pytest.skip(why)

    @staticmethod
    def raises(exc_type, fn) -> BaseException:
        try:
            fn()
        except exc_type as exc:
            return exc
        raise AssertionError(f"{fn} did not raise {exc_type.__name__}")

    # -- SINGLE tables -------------------------------------------------------------------------
    def test_single_put_get_overwrite_delete(self):
        s = self.opened()
        s.write(lambda t: (t.put("one", b"k", b"v1"), t.put("one", b"k", b"v2"), t.put("two", b"k", b"other")))
        assert s.read(lambda t: (t.get("one", b"k"), t.get("two", b"k"), t.get("one", b"nope"))) == (b"v2", b"other", None)
        s.write(lambda t: (t.delete("one", b"k"), t.delete("one", b"absent")))
        assert s.read(lambda t: (t.get("one", b"k"), t.get("two", b"k"))) == (None, b"other")
        assert s.read(lambda t: t.count("one")) == 0

    def test_values_are_bytes_of_any_length(self):
        s = self.opened()
        big = bytes(range(256)) * 400
        s.write(lambda t: (t.put("one", b"\x00", b""), t.put("one", b"\xff" * 64, big)))
        assert s.read(lambda t: (t.get("one", b"\x00"), t.get("one", b"\xff" * 64))) == (b"", big)

    # -- MULTI tables --------------------------------------------------------------------------
    def test_multi_values_are_a_sorted_set(self):
        s = self.opened()
        vals = [u64(v) for v in (9, 3, 3, 2**64 - 1, 0)]
        s.write(lambda t: [t.add("many", b"key", v) for v in vals] + [t.add("more", b"key", u64(5))])
        assert s.read(lambda t: t.values("many", b"key")) == [u64(0), u64(3), u64(9), u64(2**64 - 1)]
        assert s.read(lambda t: (t.value_count("many", b"key"), t.value_count("many", b"none"))) == (4, 0)
        assert s.read(lambda t: (t.values("more", b"key"), t.values("many", b"none"))) == ([u64(5)], [])
        s.write(lambda t: (t.remove("many", b"key", u64(3)), t.remove("many", b"key", u64(77)),
                           t.remove("many", b"none", u64(1))))
        assert s.read(lambda t: t.values("many", b"key")) == [u64(0), u64(9), u64(2**64 - 1)]
        assert s.read(lambda t: t.count("many")) == 3
        s.write(lambda t: t.delete("many", b"key"))
        assert s.read(lambda t: (t.values("many", b"key"), t.count("many"))) == ([], 0)

    def test_union_u64_reads_every_bucket_as_one_array(self):
        s = self.opened()
        s.write(lambda t: [t.add("many", b"ab", u64(v)) for v in (1, 2**63)] + [t.add("more", b"cd", u64(7))])
        got = s.read(lambda t: t.union_u64(["many", "more", "many"], [b"ab", b"cd", b"zz"]))
        assert isinstance(got, np.ndarray) and got.dtype == np.uint64
        assert sorted(got.tolist()) == [1, 7, 2**63]
        assert s.read(lambda t: t.union_u64(["many"], [b"zz"])).size == 0

    def test_many_at_once_is_each_one_and_sees_the_transactions_changes(self):
        s = self.opened()
        s.write(lambda t: (t.put("one", b"a", b"1"), t.put("one", b"b", b"2"), t.add("many", b"x", u64(5)),
                           t.add("many", b"y", u64(6))))

        def check(t):
            t.put("one", b"b", b"new")
            t.delete("one", b"a")
            t.add("many", b"x", u64(1))
            t.remove("many", b"y", u64(6))
            return (t.get_many("one", [b"a", b"b", b"zz", b"b"]), t.values_many("many", [b"x", b"y", b"none"]),
                    t.get_many("one", []), t.values_many("many", []))

        assert s.write(check) == ([None, b"new", None, b"new"], [[u64(1), u64(5)], [], []], [], [])
        assert s.read(lambda t: (t.get_many("one", [b"b", b"a"]), t.values_many("many", [b"y", b"x"]))) == (
            [b"new", None], [[], [u64(1), u64(5)]])
        assert s.write(lambda t: (t.add("many", b"y", u64(9)), t.value_counts("many", [b"x", b"y", b"none"]))[1]) == [
            2, 1, 0]
        assert s.read(lambda t: (t.value_counts("many", [b"y", b"x"]), t.value_counts("many", []))) == ([1, 2], [])

    # -- scans, counts, counters ---------------------------------------------------------------
    def test_scan_in_key_order_from_start_with_limit(self):
        s = self.opened()
        keys = [u64(v) for v in (5, 1, 300, 2, 2**40)]
        s.write(lambda t: [t.put("one", k, b"v" + k) for k in keys])
        rows = s.read(lambda t: t.scan("one", b"", 100))
        assert [k for k, _ in rows] == sorted(keys) and all(v == b"v" + k for k, v in rows)
        assert [from_u64(k) for k, _ in s.read(lambda t: t.scan("one", u64(3), 2))] == [5, 300]
        assert s.read(lambda t: t.scan("one", u64(2**41), 10)) == []
        assert s.read(lambda t: t.scan("one", b"", 0)) == []

    def test_scan_of_a_multi_table_gives_a_row_per_value(self):
        s = self.opened()
        s.write(lambda t: [t.add("many", u64(k), u64(v)) for k, v in ((2, 9), (1, 4), (2, 3), (1, 8))])
        rows = s.read(lambda t: t.scan("many", b"", 10))
        assert [(from_u64(k), from_u64(v)) for k, v in rows] == [(1, 4), (1, 8), (2, 3), (2, 9)]
        assert len(s.read(lambda t: t.scan("many", b"", 3))) == 3
        assert s.read(lambda t: t.count("many")) == 4

    def test_incr_counts_from_start(self):
        s = self.opened()
        assert s.write(lambda t: t.incr("one", b"next", 1, start=1)) == 2
        assert s.write(lambda t: t.incr("one", b"next", 5)) == 7
        assert s.write(lambda t: t.incr("one", b"runs")) == 1
        assert s.read(lambda t: (t.get("one", b"next"), t.get("one", b"runs"))) == (u64(7), u64(1))

    # -- transactions --------------------------------------------------------------------------
    def test_a_write_that_raises_leaves_nothing(self):
        s = self.opened()
        s.write(lambda t: (t.put("one", b"keep", b"1"), t.add("many", b"b", u64(1)), t.incr("one", b"n")))

        def fail(t):
            t.put("one", b"new", b"x")
            t.put("one", b"keep", b"changed")
            t.delete("two", b"absent")
            t.add("many", b"b", u64(2))
            t.remove("many", b"b", u64(1))
            t.incr("one", b"n")
            t.delete("one", b"keep")
            raise _Boom()

        self.raises(_Boom, lambda: s.write(fail))
        # (a store without transactions applies a counter at once: it is never rolled back)
        assert s.read(lambda t: (t.get("one", b"new"), t.get("one", b"keep"), t.values("many", b"b"),
                                 t.get("one", b"n"))) == (None, b"1", [u64(1)], u64(1 if self.serializable else 2))

    def test_a_write_sees_its_own_changes(self):
        s = self.opened()

        def fn(t):
            t.put("one", b"a", b"1")
            t.add("many", b"k", u64(4))
            t.incr("one", b"c", 2)
            return (t.get("one", b"a"), t.values("many", b"k"), t.value_count("many", b"k"), t.count("one"),
                    t.scan("one", b"", 10))

        assert s.write(fn) == (b"1", [u64(4)], 1, 2, [(b"a", b"1"), (b"c", u64(2))])

    def test_writes_are_exclusive_between_threads(self):
        if not self.serializable:
            return self.skip("the store's writes are not transactions (serializable = False): the index uses claims")
        s = self.opened()

        def bump(t):  # read, think, write: two interleaved writers would lose increments
            value = from_u64(t.get("one", b"n") or u64(0))
            t.put("one", b"other", os.urandom(8))
            t.put("one", b"n", u64(value + 1))

        def worker():
            for _ in range(50):
                s.write(bump)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert s.read(lambda t: from_u64(t.get("one", b"n"))) == 200

    def test_claims_order_the_pages_filed_and_can_be_taken_back(self):
        if self.serializable:
            return self.skip("claims are for a store without transactions (serializable = False)")
        s = self.opened()
        first, second = s.write(lambda t: t.claim(10)), s.write(lambda t: t.claim(3))
        assert first < second  # the order they were taken in, whatever the doc ids
        assert s.write(lambda t: t.claim(10)) == first  # claimed again (a re-sent command): the same order
        assert s.read(lambda t: t.claims([10, 3, 99])) == [Claim(first, False), Claim(second, False), None]
        s.write(lambda t: t.confirm(3))
        assert s.read(lambda t: t.claims([3])) == [Claim(second, True)]
        assert s.write(lambda t: t.claim(3)) == second
        s.write(lambda t: t.unclaim(10))
        assert s.read(lambda t: t.claims([10, 3])) == [None, Claim(second, True)]

    def test_a_read_refuses_to_write(self):
        s = self.opened()
        for change in (lambda t: t.put("one", b"a", b"1"), lambda t: t.add("many", b"k", u64(1)),
                       lambda t: t.incr("one", b"n")):
            self.raises(StoreError, lambda change=change: s.read(change))
        assert s.read(lambda t: (t.get("one", b"a"), t.values("many", b"k"), t.get("one", b"n"))) == (None, [], None)

    def test_a_readonly_open_creates_nothing(self):
        self.skip_unless_persistent()
        if not self.persistent:
            return
        location = self.fresh_location()
        self.raises(StoreError, lambda: self.new_store(location, readonly=True).open())
        assert not os.path.exists(location)

    def test_ensure_is_idempotent_and_keeps_data(self):
        s = self.opened()
        s.write(lambda t: t.put("one", b"a", b"1"))
        s.ensure(TABLES)
        s.ensure({"late": MULTI})
        s.write(lambda t: t.add("late", b"k", u64(1)))
        assert s.read(lambda t: (t.get("one", b"a"), t.values("late", b"k"))) == (b"1", [u64(1)])
        self.raises(StoreError, lambda: s.ensure({"bad": "kind"}))

    # -- lifetime ------------------------------------------------------------------------------
    def test_data_survives_reopening(self):
        self.skip_unless_persistent()
        if not self.persistent:
            return
        location = self.fresh_location()
        s = self.opened(location)
        s.write(lambda t: (t.put("one", b"a", b"1"), t.add("many", b"k", u64(3))))
        s.close()
        again = self.opened(location)
        assert again.read(lambda t: (t.get("one", b"a"), t.values("many", b"k"))) == (b"1", [u64(3)])

    def test_a_readonly_store_reads_and_refuses_writes(self):
        self.skip_unless_persistent()
        if not self.persistent:
            return
        location = self.fresh_location()
        s = self.opened(location)
        s.write(lambda t: t.put("one", b"a", b"1"))
        s.close()
        ro = self.opened(location, readonly=True)
        assert ro.read(lambda t: t.get("one", b"a")) == b"1"
        self.raises(StoreError, lambda: ro.write(lambda t: t.put("one", b"a", b"2")))
        assert ro.read(lambda t: t.get("one", b"a")) == b"1"

    # -- the index and the Deduplicator on this store ------------------------------------------
    def test_index_candidates_match_brute_force(self):
        from ..core.index.neardup import DocRecord, NearDupIndex
        from ..core.index.tables import choose_plan

        rnd = random.Random(11)
        index = NearDupIndex.open(self.new_store(self.fresh_location()), 3, lambda: choose_plan(3, 10_000))
        self._open.append(index.store)
        base = [rnd.getrandbits(64) for _ in range(40)]
        fps = base + [b ^ (1 << rnd.randrange(64)) ^ (1 << rnd.randrange(64)) for b in base]
        ids = {}
        for fp in fps:
            rec = DocRecord(url=f"https://x/{fp}", fingerprint=fp, sketch=np.empty(0, np.uint64), tokens=20, time=1.0)
            ids[fp] = index.write(lambda t, rec=rec: index.add(t, rec))  # type: ignore[misc]
        gone = set(rnd.sample(fps, 20))
        for fp in gone:
            assert index.write(lambda t, fp=fp: index.remove(t, ids[fp]))  # type: ignore[misc]
        kept = [f for f in fps if f not in gone]
        for q in rnd.sample(fps, 30) + [rnd.getrandbits(64) for _ in range(5)]:
            want = sorted((bin(q ^ f).count("1"), f) for f in set(kept) if bin(q ^ f).count("1") <= 3)
            got = index.read(lambda t, q=q: index.candidates(t, q))  # type: ignore[misc]
            assert sorted((d, f) for f, d in got) == want

    def test_the_deduplicator_drops_a_copy_and_keeps_the_rest(self):
        from ..core.dedup import Deduplicator

        words = "the council met on monday to discuss the new budget for parks roads and schools".split()
        rnd = random.Random(5)
        texts = [" ".join(rnd.choice(words) for _ in range(120)) for _ in range(3)]
        titles = ["Council budget for parks", "Roads and schools plan", "New budget discussed on Monday"]
        with Deduplicator(store=self.new_store(self.fresh_location())) as d:
            first = [d.check(f"https://a.example/{i}", text=t, title=h).action for i, (t, h) in enumerate(zip(texts, titles))]
            copy = d.check("https://b.example/copy", text=texts[1], title=titles[1])
            again = d.check("https://a.example/0", text=texts[0], title=titles[0])
        assert first == ["keep", "keep", "keep"]
        assert (copy.action, copy.duplicate_of) == ("drop", "https://a.example/1")
        assert (again.action, again.reason) == ("drop", "unchanged")
