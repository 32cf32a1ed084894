"""In-process store: dicts under a lock. For tests, short runs, and as the contract's reference."""

from __future__ import annotations

import heapq
import threading
from typing import Callable, Mapping

from ..exceptions import StoreError
from .base import MULTI, SINGLE, T, TxnBase

_MISSING = object()


class _MemoryTxn(TxnBase):
    def __init__(self, store: "MemoryStore", write: bool):
        self.s, self.writing = store, write
        self.undo: list[tuple[dict, bytes, object]] = []

    def _table(self, table: str, kind: str) -> dict:
        try:
            data = self.s.tables[table]
        except KeyError:
            raise StoreError(f"no table {table!r} in the memory store (not ensured)") from None
        if self.s.kinds[table] != kind:
            raise StoreError(f"table {table!r} is {self.s.kinds[table]}, not {kind}")
        return data

    def _change(self, table: str, key: bytes) -> None:
        if not self.writing:
            raise StoreError("a read transaction cannot write")
        data = self.s.tables[table]
        old = data.get(key, _MISSING)
        # a MULTI bucket is copied before its first change in this transaction
        self.undo.append((data, key, set(old) if isinstance(old, set) else old))

    def get(self, table, key):
        return self._table(table, SINGLE).get(bytes(key))

    def put(self, table, key, value):
        self._table(table, SINGLE)
        self._change(table, bytes(key))
        self.s.tables[table][bytes(key)] = bytes(value)

    def delete(self, table, key):
        data, key = self.s.tables.get(table), bytes(key)
        if data is None:
            raise StoreError(f"no table {table!r} in the memory store (not ensured)")
        if key in data:
            self._change(table, key)
            del data[key]

    def values(self, table, key):
        return sorted(self._table(table, MULTI).get(bytes(key), ()))

    def value_count(self, table, key):
        return len(self._table(table, MULTI).get(bytes(key), ()))

    def add(self, table, key, value):
        data, key, value = self._table(table, MULTI), bytes(key), bytes(value)
        if value not in data.get(key, ()):
            self._change(table, key)
            data.setdefault(key, set()).add(value)

    def remove(self, table, key, value):
        data, key, value = self._table(table, MULTI), bytes(key), bytes(value)
        bucket = data.get(key)
        if bucket and value in bucket:
            self._change(table, key)
            bucket.discard(value)
            if not bucket:
                del data[key]

    def scan(self, table, start, limit):
        data = self.s.tables.get(table)
        if data is None:
            raise StoreError(f"no table {table!r} in the memory store (not ensured)")
        start = bytes(start)
        out: list[tuple[bytes, bytes]] = []
        # the `limit` smallest keys from start hold the first `limit` rows (a key has one at least)
        for key in heapq.nsmallest(limit, (k for k in data if k >= start)):
            rows = sorted(data[key]) if self.s.kinds[table] == MULTI else [data[key]]
            for value in rows:
                if len(out) >= limit:
                    return out
                out.append((key, value))
        return out

    def count(self, table):
        data = self.s.tables[table]
        return sum(len(v) for v in data.values()) if self.s.kinds[table] == MULTI else len(data)

    def rollback(self):
        for data, key, old in reversed(self.undo):
            if old is _MISSING:
                data.pop(key, None)
            else:
                data[key] = old


class MemoryStore:
    """Lost when the process ends; not shared between processes."""

    def __init__(self, location: str = ":memory:", readonly: bool = False):
        self.location, self.readonly = location, readonly
        self.lock = threading.RLock()
        self.tables: dict[str, dict] = {}
        self.kinds: dict[str, str] = {}

    @classmethod
    def from_config(cls, config, readonly: bool = False) -> "MemoryStore":
        return cls(readonly=readonly)

    def open(self) -> None:
        pass

    def ensure(self, tables: Mapping[str, str]) -> None:
        with self.lock:
            for name, kind in tables.items():
                if kind not in (SINGLE, MULTI):
                    raise StoreError(f"table {name!r}: unknown kind {kind!r}")
                if name not in self.tables:
                    self.tables[name], self.kinds[name] = {}, kind

    def close(self) -> None:
        pass

    def read(self, fn: Callable[..., T]) -> T:
        with self.lock:
            return fn(_MemoryTxn(self, write=False))

    def write(self, fn: Callable[..., T]) -> T:
        if self.readonly:
            raise StoreError(f"the store at {self.location} is open read-only")
        with self.lock:
            txn = _MemoryTxn(self, write=True)
            try:
                return fn(txn)
            except BaseException:
                txn.rollback()
                raise
