"""In-process store: dicts under a lock. For tests, short runs, and as the contract's reference."""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np

from .base import T


class _MemoryTxn:
    def __init__(self, store: "MemoryStore", write: bool):
        self.s, self.write, self.undo = store, write, []

    def _set(self, mapping, key, value):
        old = mapping.get(key, _MISSING)
        self.undo.append((mapping, key, old))
        mapping[key] = value

    def meta_get(self, name):
        return self.s.meta.get(name)

    def meta_put(self, name, value):
        self._set(self.s.meta, name, bytes(value))

    def meta_delete(self, name):
        self._pop(self.s.meta, name)

    def buckets(self, keys):
        out = []
        for table, key in enumerate(keys):
            values = self.s.tables[table].get(key)
            out.append(np.fromiter(sorted(values), dtype=np.uint64) if values else np.empty(0, np.uint64))
        return out

    def bucket_union(self, keys):
        return np.concatenate(self.buckets(keys)) if keys else np.empty(0, np.uint64)

    def bucket_add(self, table, key, fp):
        bucket = self.s.tables[table].setdefault(key, set())
        if fp not in bucket:
            self.undo.append((bucket, fp, _SET_MEMBER))
            bucket.add(fp)

    def postings(self, key, limit):
        docs = self.s.postings.get(bytes(key))
        if not docs:
            return np.empty(0, np.uint64)
        return None if len(docs) > limit else np.fromiter(sorted(docs), dtype=np.uint64)

    def posting_add(self, key, doc_id, limit):
        docs = self.s.postings.setdefault(bytes(key), set())
        if len(docs) <= limit and doc_id not in docs:
            self.undo.append((docs, doc_id, _SET_MEMBER))
            docs.add(doc_id)

    def fp_docs(self, fp):
        return sorted(self.s.fps.get(fp, ()))

    def fp_add(self, fp, doc_id):
        docs = self.s.fps.setdefault(fp, set())
        if doc_id not in docs:
            self.undo.append((docs, doc_id, _SET_MEMBER))
            docs.add(doc_id)

    def exact_get(self, digest):
        return self.s.exact.get(bytes(digest))

    def exact_put(self, digest, doc_id):
        self._set(self.s.exact, bytes(digest), doc_id)

    def doc_get(self, doc_id):
        return self.s.docs.get(doc_id)

    def doc_put(self, doc_id, record):
        self._set(self.s.docs, doc_id, bytes(record))

    def doc_count(self):
        return len(self.s.docs)

    def doc_scan(self, after, limit):
        return [(i, self.s.docs[i]) for i in sorted(i for i in self.s.docs if i > after)[:limit]]

    def url_get(self, key):
        return self.s.urls.get(bytes(key))

    def url_put(self, key, doc_id):
        self._set(self.s.urls, bytes(key), doc_id)

    def url_delete(self, key):
        self._pop(self.s.urls, bytes(key))

    def url_count(self):
        return len(self.s.urls)

    def _discard(self, container, member):
        if member in container:
            self.undo.append((container, member, _REMOVED_MEMBER))
            container.discard(member)

    def _pop(self, mapping, key):
        if key in mapping:
            self.undo.append((mapping, key, mapping[key]))
            del mapping[key]

    def doc_delete(self, doc_id):
        self._pop(self.s.docs, doc_id)

    def fp_remove(self, fp, doc_id):
        self._discard(self.s.fps.get(fp, set()), doc_id)

    def bucket_remove(self, table, key, fp):
        self._discard(self.s.tables[table].get(key, set()), fp)

    def exact_delete(self, digest):
        self._pop(self.s.exact, bytes(digest))

    def posting_remove(self, key, doc_id):
        self._discard(self.s.postings.get(bytes(key), set()), doc_id)

    def time_add(self, seconds, doc_id):
        entries = self.s.times
        if (seconds, doc_id) not in entries:
            self.undo.append((entries, (seconds, doc_id), _SET_MEMBER))
            entries.add((seconds, doc_id))

    def time_oldest(self, before, limit):
        return sorted(e for e in self.s.times if e[0] < before)[:limit]

    def time_remove(self, seconds, doc_id):
        self._discard(self.s.times, (seconds, doc_id))

    def rollback(self):
        for container, key, old in reversed(self.undo):
            if old is _SET_MEMBER:
                container.discard(key)
            elif old is _REMOVED_MEMBER:
                container.add(key)
            elif old is _MISSING:
                container.pop(key, None)
            else:
                container[key] = old


_MISSING, _SET_MEMBER, _REMOVED_MEMBER = object(), object(), object()


class MemoryStore:
    """Lost when the process ends; not shared between processes."""

    def __init__(self, location: str = ":memory:"):
        self.location = location
        self.lock = threading.RLock()
        self.meta: dict[str, bytes] = {}
        self.docs: dict[int, bytes] = {}
        self.fps: dict[int, set[int]] = {}
        self.exact: dict[bytes, int] = {}
        self.urls: dict[bytes, int] = {}
        self.postings: dict[bytes, set[int]] = {}
        self.times: set[tuple[int, int]] = set()
        self.tables: dict[int, dict[bytes, set[int]]] = defaultdict(dict)

    @classmethod
    def from_config(cls, config) -> "MemoryStore":
        return cls()

    def open(self) -> None:
        pass

    def open_tables(self, count: int) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self, fn) -> T:
        with self.lock:
            return fn(_MemoryTxn(self, write=False))

    def write(self, fn) -> T:
        with self.lock:
            txn = _MemoryTxn(self, write=True)
            try:
                return fn(txn)
            except BaseException:
                txn.rollback()
                raise
