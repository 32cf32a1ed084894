"""One contract, every backend: the shipped suite (crawler_dedup.stores.contract) runs on the
memory store, the LMDB store, and a third backend written here against the public contract only."""

import json
import os
import sqlite3
import threading

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.exceptions import StoreError, StoreFormat
from crawler_dedup.stores import LmdbStore, MemoryStore
from crawler_dedup.stores.base import MULTI, SINGLE, TxnBase
from crawler_dedup.stores.contract import StoreContract


class TestMemoryStore(StoreContract):
    def new_store(self, location=None, readonly=False):
        return MemoryStore(readonly=readonly)


class TestLmdbStore(StoreContract):
    persistent = True

    def new_store(self, location=None, readonly=False):
        return LmdbStore(location or self.fresh_location(), map_size=1 << 20, sync=False, readonly=readonly)


# -- a third backend, from the contract alone: SQLite, one table per store table ------------------

class _SqliteTxn(TxnBase):
    def __init__(self, store, cur, writing):
        self.s, self.cur, self.writing = store, cur, writing

    def _t(self, table, kind, change=False):
        if change and not self.writing:
            raise StoreError("a read transaction cannot write")
        if self.s.kinds.get(table) != kind:
            raise StoreError(f"no {kind} table {table!r}")
        return f'"{table}"'

    def get(self, table, key):
        row = self.cur.execute(f"SELECT v FROM {self._t(table, SINGLE)} WHERE k = ?", (bytes(key),)).fetchone()
        return None if row is None else bytes(row[0])

    def put(self, table, key, value):
        self.cur.execute(f"INSERT OR REPLACE INTO {self._t(table, SINGLE, True)} VALUES (?, ?)", (bytes(key), bytes(value)))

    def delete(self, table, key):
        self._t(table, self.s.kinds.get(table), True)
        self.cur.execute(f'DELETE FROM "{table}" WHERE k = ?', (bytes(key),))

    def values(self, table, key):
        rows = self.cur.execute(f"SELECT v FROM {self._t(table, MULTI)} WHERE k = ? ORDER BY v", (bytes(key),))
        return [bytes(r[0]) for r in rows]

    def value_count(self, table, key):
        return self.cur.execute(f"SELECT count(*) FROM {self._t(table, MULTI)} WHERE k = ?", (bytes(key),)).fetchone()[0]

    def add(self, table, key, value):
        self.cur.execute(f"INSERT OR IGNORE INTO {self._t(table, MULTI, True)} VALUES (?, ?)", (bytes(key), bytes(value)))

    def remove(self, table, key, value):
        self.cur.execute(f"DELETE FROM {self._t(table, MULTI, True)} WHERE k = ? AND v = ?", (bytes(key), bytes(value)))

    def scan(self, table, start, limit):
        rows = self.cur.execute(f'SELECT k, v FROM "{table}" WHERE k >= ? ORDER BY k, v LIMIT ?', (bytes(start), limit))
        return [(bytes(k), bytes(v)) for k, v in rows]

    def count(self, table):
        return self.cur.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


class SqliteStore:
    def __init__(self, path, readonly=False):
        self.location, self.readonly, self.kinds, self.db = path, readonly, {}, None
        self.lock = threading.Lock()

    def open(self):
        if self.readonly and not os.path.exists(self.location):
            raise StoreError(f"no index at {self.location}")
        os.makedirs(os.path.dirname(self.location), exist_ok=True)
        uri = f"file:{self.location}{'?mode=ro' if self.readonly else ''}"
        self.db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)

    def ensure(self, tables):
        for name, kind in tables.items():
            if kind not in (SINGLE, MULTI):
                raise StoreError(f"unknown kind {kind!r}")
            if not self.readonly:
                key = "PRIMARY KEY (k)" if kind == SINGLE else "PRIMARY KEY (k, v)"
                self.db.execute(f'CREATE TABLE IF NOT EXISTS "{name}" (k BLOB, v BLOB, {key}) WITHOUT ROWID')
            self.kinds[name] = kind

    def close(self):
        if self.db is not None:
            self.db.close()
            self.db = None

    def read(self, fn):
        with self.lock:
            return fn(_SqliteTxn(self, self.db.cursor(), writing=False))

    def write(self, fn):
        if self.readonly:
            raise StoreError(f"{self.location} is open read-only")
        with self.lock:
            cur = self.db.cursor()
            cur.execute("BEGIN IMMEDIATE")  # exclusive among writers, in this process and others
            try:
                out = fn(_SqliteTxn(self, cur, writing=True))
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
            return out


class TestSqliteStore(StoreContract):
    persistent = True

    def new_store(self, location=None, readonly=False):
        return SqliteStore(location or self.fresh_location(), readonly=readonly)


def test_a_broken_store_fails_the_suite():
    """The suite can fail: a store whose writes are not atomic is caught."""

    class Leaky(MemoryStore):
        def write(self, fn):
            with self.lock:
                from crawler_dedup.stores.memory import _MemoryTxn

                return fn(_MemoryTxn(self, write=True))  # no rollback

    class TestLeaky(StoreContract):
        def new_store(self, location=None, readonly=False):
            return Leaky()

    case = TestLeaky()
    case.setup_method()
    try:
        with pytest.raises(AssertionError):
            case.test_a_write_that_raises_leaves_nothing()
    finally:
        case.teardown_method()


def test_a_custom_backend_is_loaded_by_dotted_path(tmp_path, plain_model):
    """DEDUP_BACKEND=module.Class: the third backend runs a real Deduplicator (on a made-up text:
    decided by resemblance, the subject being the store)."""
    with Deduplicator(backend="tests.test_stores.SqliteStoreFromConfig", dir=str(tmp_path / "x.sqlite"),
                      model=plain_model) as d:
        assert d.check("https://a/1", text="one two three four five six seven eight nine ten " * 3).action == "keep"
        assert d.check("https://b/1", text="one two three four five six seven eight nine ten " * 3).action == "drop"


class SqliteStoreFromConfig(SqliteStore):
    @classmethod
    def from_config(cls, config, readonly=False):
        return cls(os.path.join(config.dir, "index.sqlite"), readonly=readonly)


def test_lmdb_map_grows_when_full(tmp_path):
    with Deduplicator(dir=str(tmp_path / "idx"), lmdb_map_size=1 << 20, lmdb_sync=False, min_tokens=1) as d:
        start = d.index.store.env.info()["map_size"]
        for i in range(3000):
            assert d.check(f"u{i}", text=f"page {i} word{i} other{i * 7} more{i * 13} text").action == "keep"
        assert d.index.store.env.info()["map_size"] > start
        assert d.index.read(lambda t: t.doc_count()) == 3000


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
        d.index.write(lambda t: t.meta_put("format", b"999"))
    with pytest.raises(StoreFormat, match="format version 999"):
        Deduplicator(dir=path).open()


def test_unusable_directory_is_a_store_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StoreError):
        LmdbStore(str(blocker / "idx")).open()


def test_the_after_crawl_commands_read_another_backends_index(tmp_path, articles):
    """show, report and index stats/remove with -s DEDUP_BACKEND: the index of a store that is not
    LMDB, opened through the one open_index (tools.indexes)."""
    from crawler_dedup.droplog import DropLog, make_record

    from .conftest import ROOT, cli

    backend = "DEDUP_BACKEND=tests.test_stores.SqliteStoreFromConfig"
    idx, log = tmp_path / "idx", tmp_path / "droplog.jsonl"
    with Deduplicator(backend=backend.split("=")[1], dir=str(idx)) as d, DropLog(str(log)) as drops:
        assert d.check("https://a/1", text=articles[0][1]).action == "keep"
        v = d.check("https://b/1", text=articles[0][1].replace(" the ", " a ", 3))
        assert v.action == "drop"
        drops.write(make_record(v, "response", "t"))
    run = dict(cwd=ROOT)
    proc = cli("show", "https://b/1", "--log", log, "--dir", idx, "-s", backend, **run)
    assert proc.returncode == 0, proc.stderr
    assert "kept          https://a/1" in proc.stdout and "the score of the pair" in proc.stdout
    assert "no longer in the index" not in proc.stdout and "cannot read" not in proc.stdout
    proc = cli("index", "stats", idx, "-s", backend, **run)
    assert proc.returncode == 0, proc.stderr
    assert "1 pages kept over 1 run, 1 URLs" in proc.stdout and "not measured for this backend" in proc.stdout
    proc = cli("report", log, "-o", tmp_path / "r.html", "--dir", idx, "-s", backend, **run)
    assert proc.returncode == 0, proc.stderr
    assert "1 with texts for the diff view" in proc.stdout
    proc = cli("index", "remove", "https://a/1", "--dir", idx, "-s", backend, "--yes", **run)
    assert proc.returncode == 0, proc.stderr
    proc = cli("index", "stats", idx, "--json", "-s", backend, **run)
    assert json.loads(proc.stdout)["pages"] == 0
    proc = cli("index", "stats", idx, **run)  # without the setting: LMDB's, which is not there
    assert proc.returncode == 2 and "no LMDB index" in proc.stderr


def test_redis_without_redis_py_says_how_to_install_it(monkeypatch):
    import sys

    from crawler_dedup.config import DedupConfig
    from crawler_dedup.exceptions import ConfigError
    from crawler_dedup.stores import make_store

    monkeypatch.setitem(sys.modules, "redis", None)  # as if redis-py were not installed
    with pytest.raises(ConfigError, match=r"pip install crawler-dedup\[redis\]"):
        make_store(DedupConfig.from_settings({"DEDUP_BACKEND": "redis"}))
