"""LMDB store: one environment, named databases, big-endian keys, fixed-size sorted duplicates.

Layout (DESIGN.md): `meta`; `docs` (doc id -> record); `fps` (fingerprint -> doc ids);
`exact` (content digest -> doc id); `mins` (each page's few smallest shingle hashes -> doc
ids, a second way to candidates for copies whose simhash moved too far); `times` (seconds ->
doc ids, for the time window); `urls` (key of the canonical URL -> doc id); `t000`.. one table per Manku permutation, key = the
permuted prefix, values = the 8-byte fingerprints in that bucket (dupsort+dupfixed, so a
bucket comes back in one getmulti straight into numpy).
"""

from __future__ import annotations

import os

import lmdb
import numpy as np

from ..exceptions import StoreError, StoreFull
from .base import T, from_u64, u64

_MAX_TABLES = 1000  # tables.py never plans more
_MAX_MAP = 1 << 40  # 1 TiB of address space: past this, StoreFull
_BUCKET_DTYPE = np.dtype(">u8")
_INT_KEYS = {1: np.dtype(">u1"), 2: np.dtype(">u2"), 4: np.dtype(">u4"), 8: np.dtype(">u8")}


class _LmdbTxn:
    def __init__(self, store: "LmdbStore", txn: lmdb.Transaction):
        self.s, self.txn = store, txn
        self._cursors = self._mins = None

    def meta_get(self, name):
        value = self.txn.get(name.encode(), db=self.s.meta)
        return None if value is None else bytes(value)

    def meta_put(self, name, value):
        self.txn.put(name.encode(), bytes(value), db=self.s.meta)

    def meta_delete(self, name):
        self.txn.delete(name.encode(), db=self.s.meta)

    def _table_cursors(self):
        if self._cursors is None:  # one cursor per table for the transaction's lookups
            self._cursors = [self.txn.cursor(db=db) for db in self.s.tables]
        return self._cursors

    def buckets(self, keys):
        out = []
        for cur, key in zip(self._table_cursors(), keys):
            raw = cur.getmulti([key], dupdata=True, dupfixed_bytes=8, keyfixed=True)
            out.append(_values(raw, len(key)).astype(np.uint64))
        return out

    def bucket_union(self, keys):
        """Every table's bucket for keys[t], concatenated (one conversion, not one per table)."""
        size = len(keys[0])
        if any(len(k) != size for k in keys):
            return np.concatenate(self.buckets(keys))
        raw = b"".join([cur.getmulti([key], dupdata=True, dupfixed_bytes=8, keyfixed=True)
                        for cur, key in zip(self._table_cursors(), keys)])
        return _values(raw, size).astype(np.uint64)

    def buckets_many(self, table, keys):
        """The entries under `keys` (sorted, distinct) in one table, in one read: (index in keys of
        each key found, entries per such key, all entries as uint64 grouped by key in key order)."""
        raw = self._table_cursors()[table].getmulti(keys, dupdata=True, dupfixed_bytes=8, keyfixed=True)
        if not keys or not len(raw):
            return np.empty(0, np.intp), np.empty(0, np.intp), np.empty(0, np.uint64)
        size = len(keys[0])
        if size in _INT_KEYS:  # the key as an integer field of each packed record: fast compares
            rec = np.frombuffer(raw, dtype=np.dtype([("k", _INT_KEYS[size]), ("v", _BUCKET_DTYPE)]))
            found = rec["k"]
            change = np.flatnonzero(found[1:] != found[:-1]) + 1
            starts = np.concatenate(([0], change))
            wanted = np.frombuffer(b"".join(keys), dtype=_INT_KEYS[size])
            which = np.searchsorted(wanted, found[starts])
        else:
            rows = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size + 8)
            # a key's entries are contiguous: find where the key bytes change, decode only those keys
            key_cols = rows[:, :size]
            change = np.flatnonzero((key_cols[1:] != key_cols[:-1]).any(axis=1)) + 1
            starts = np.concatenate(([0], change))
            padded = np.zeros((starts.size, 8), dtype=np.uint8)
            padded[:, 8 - size:] = key_cols[starts]
            wanted = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, size)
            wanted_padded = np.zeros((wanted.shape[0], 8), dtype=np.uint8)
            wanted_padded[:, 8 - size:] = wanted
            which = np.searchsorted(wanted_padded.view(">u8").ravel(), padded.view(">u8").ravel())
        counts = np.diff(np.concatenate((starts, [len(raw) // (size + 8)])))
        return which, counts, _values(raw, size).astype(np.uint64)

    def bucket_add(self, table, key, fp):
        self.txn.put(key, u64(fp), db=self.s.tables[table], dupdata=True)

    def _mins_cursor(self):
        if self._mins is None:
            self._mins = self.txn.cursor(db=self.s.mins)
        return self._mins

    def postings(self, key, limit):
        cur = self._mins_cursor()
        if not cur.set_key(key):
            return np.empty(0, np.uint64)
        if cur.count() > limit:
            return None
        raw = cur.getmulti([key], dupdata=True, dupfixed_bytes=8, keyfixed=True)
        return _values(raw, len(key)).astype(np.uint64)

    def posting_add(self, key, doc_id, limit):
        cur = self._mins_cursor()
        if cur.set_key(key) and cur.count() > limit:
            return  # a boilerplate shingle: its list stops growing
        self.txn.put(key, u64(doc_id), db=self.s.mins, dupdata=True)

    def fp_docs(self, fp):
        cur = self.txn.cursor(db=self.s.fps)
        if not cur.set_key(u64(fp)):
            return []
        return [from_u64(v) for v in cur.iternext_dup()]

    def fp_add(self, fp, doc_id):
        self.txn.put(u64(fp), u64(doc_id), db=self.s.fps, dupdata=True)

    def exact_get(self, digest):
        value = self.txn.get(bytes(digest), db=self.s.exact)
        return None if value is None else from_u64(value)

    def exact_put(self, digest, doc_id):
        self.txn.put(bytes(digest), u64(doc_id), db=self.s.exact)

    def doc_get(self, doc_id):
        value = self.txn.get(u64(doc_id), db=self.s.docs)
        return None if value is None else bytes(value)

    def doc_put(self, doc_id, record):
        self.txn.put(u64(doc_id), bytes(record), db=self.s.docs)

    def doc_count(self):
        return self.txn.stat(self.s.docs)["entries"]

    def doc_delete(self, doc_id):
        self.txn.delete(u64(doc_id), db=self.s.docs)

    def doc_scan(self, after, limit):
        out = []
        cur = self.txn.cursor(db=self.s.docs)
        if not cur.set_range(u64(after + 1)):
            return out
        for key, value in cur:
            out.append((from_u64(key), bytes(value)))
            if len(out) >= limit:
                break
        return out

    def url_get(self, key):
        value = self.txn.get(bytes(key), db=self.s.urls)
        return None if value is None else from_u64(value)

    def url_put(self, key, doc_id):
        self.txn.put(bytes(key), u64(doc_id), db=self.s.urls)

    def url_delete(self, key):
        self.txn.delete(bytes(key), db=self.s.urls)

    def url_count(self):
        return self.txn.stat(self.s.urls)["entries"]

    def fp_remove(self, fp, doc_id):
        self.txn.delete(u64(fp), u64(doc_id), db=self.s.fps)

    def bucket_remove(self, table, key, fp):
        self.txn.delete(key, u64(fp), db=self.s.tables[table])

    def exact_delete(self, digest):
        self.txn.delete(bytes(digest), db=self.s.exact)

    def posting_remove(self, key, doc_id):
        self.txn.delete(key, u64(doc_id), db=self.s.mins)

    def time_add(self, seconds, doc_id):
        self.txn.put(u64(seconds), u64(doc_id), db=self.s.times, dupdata=True)

    def time_oldest(self, before, limit):
        out = []
        cur = self.txn.cursor(db=self.s.times)
        if not cur.first():
            return out
        for key, value in cur:
            seconds = from_u64(key)
            if seconds >= before or len(out) >= limit:
                break
            out.append((seconds, from_u64(value)))
        return out

    def time_remove(self, seconds, doc_id):
        self.txn.delete(u64(seconds), u64(doc_id), db=self.s.times)


def _values(raw, key_size: int) -> np.ndarray:
    """The 8-byte big-endian values of getmulti's packed (key, value) records, without a copy."""
    step = key_size + 8
    if not len(raw):
        return np.empty(0, np.uint64)
    return np.ndarray((len(raw) // step,), dtype=_BUCKET_DTYPE, buffer=raw, offset=key_size, strides=(step,))


class LmdbStore:
    """Open in the process that uses it (after any fork), once per process and directory."""

    def __init__(self, path: str, map_size: int = 256 * 1024**2, sync: bool = True):
        self.location = str(path)
        self.map_size, self.sync = map_size, sync
        self.env: lmdb.Environment | None = None
        self.tables: list = []

    @classmethod
    def from_config(cls, config) -> "LmdbStore":
        if not config.dir:
            raise StoreError("the LMDB backend needs DEDUP_DIR")
        return cls(config.dir, map_size=config.lmdb_map_size, sync=config.lmdb_sync)

    def open(self) -> None:
        try:
            os.makedirs(self.location, exist_ok=True)
            self.env = lmdb.open(
                self.location, map_size=self.map_size, max_dbs=_MAX_TABLES + 8, sync=self.sync,
                # one fsync a commit, not two: the meta page follows with the next commit; a power
                # cut may undo the last commit, never corrupt (a killed process loses nothing)
                metasync=False, readahead=False, max_spare_txns=4,
            )
            if self.env.info()["map_size"] < self.map_size:
                self.env.set_mapsize(self.map_size)
            self.meta = self.env.open_db(b"meta")
            self.docs = self.env.open_db(b"docs")
            self.exact = self.env.open_db(b"exact")
            self.fps = self.env.open_db(b"fps", dupsort=True, dupfixed=True)
            self.mins = self.env.open_db(b"mins", dupsort=True, dupfixed=True)
            self.times = self.env.open_db(b"times", dupsort=True, dupfixed=True)
            self.urls = self.env.open_db(b"urls")
        except (lmdb.Error, OSError) as exc:
            self.close()
            raise StoreError(f"cannot open the LMDB index at {self.location}: {exc}") from exc

    def open_tables(self, count: int) -> None:
        try:
            self.tables = [self.env.open_db(b"t%03d" % t, dupsort=True, dupfixed=True) for t in range(count)]
        except lmdb.Error as exc:
            raise StoreError(f"cannot open the tables of the LMDB index at {self.location}: {exc}") from exc

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None

    def _run(self, fn, write: bool):
        if self.env is None:
            raise StoreError(f"the LMDB index at {self.location} is not open")
        while True:
            try:
                with self.env.begin(write=write) as txn:
                    return fn(_LmdbTxn(self, txn))
            except lmdb.MapFullError:
                # the whole transaction was aborted; grow and run it again from the start
                size = self.env.info()["map_size"] * 2
                if size > _MAX_MAP:
                    raise StoreFull(f"the LMDB index at {self.location} reached {size // 2} bytes") from None
                self.env.set_mapsize(size)
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)  # another process grew the map: adopt its size
            except lmdb.Error as exc:
                raise StoreError(f"LMDB index at {self.location}: {exc}") from exc

    def read(self, fn) -> T:
        return self._run(fn, write=False)

    def write(self, fn) -> T:
        return self._run(fn, write=True)

    def disk_bytes(self) -> int:
        return sum(os.path.getsize(os.path.join(self.location, n)) for n in os.listdir(self.location))
