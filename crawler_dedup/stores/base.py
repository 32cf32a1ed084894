"""The contract every index store meets (memory, LMDB, ...): typed buckets inside transactions.

A store knows nothing of simhash: it keeps byte keys and 64-bit values. `NearDupIndex` gives
them meaning. `write(fn)` runs `fn(txn)` atomically and exclusively (across processes for
shared backends): either all of fn's puts land or none, and no other writer interleaves.
"""

from __future__ import annotations

from typing import Callable, Protocol, TypeVar

import numpy as np

T = TypeVar("T")

FORMAT_VERSION = 3  # 2: sketch postings, shingle counts; 3: time index, digest in records


class StoreTxn(Protocol):
    def meta_get(self, name: str) -> bytes | None: ...
    def meta_put(self, name: str, value: bytes) -> None: ...
    def buckets(self, keys: list[bytes]) -> list[np.ndarray]:
        """Fingerprints (uint64) stored under keys[t] in table t, for every table t."""
    def bucket_union(self, keys: list[bytes]) -> np.ndarray:
        """The buckets of buckets(keys) in one uint64 array (a lookup's read; repeats possible)."""
    def bucket_add(self, table: int, key: bytes, fp: int) -> None: ...
    def postings(self, key: bytes, limit: int) -> np.ndarray | None:
        """Doc ids (uint64) filed under `key` in the sketch postings; None when more than `limit`."""
    def posting_add(self, key: bytes, doc_id: int, limit: int) -> None:
        """File doc_id under key, unless the key already holds `limit` doc ids."""
    def fp_docs(self, fp: int) -> list[int]: ...
    def fp_add(self, fp: int, doc_id: int) -> None: ...
    def exact_get(self, digest: bytes) -> int | None: ...
    def exact_put(self, digest: bytes, doc_id: int) -> None: ...
    def doc_get(self, doc_id: int) -> bytes | None: ...
    def doc_put(self, doc_id: int, record: bytes) -> None: ...
    def doc_count(self) -> int: ...
    # removal, for the time window: each undoes one of the puts above
    def doc_delete(self, doc_id: int) -> None: ...
    def fp_remove(self, fp: int, doc_id: int) -> None: ...
    def bucket_remove(self, table: int, key: bytes, fp: int) -> None: ...
    def exact_delete(self, digest: bytes) -> None: ...
    def posting_remove(self, key: bytes, doc_id: int) -> None: ...
    # the time index: (whole seconds, doc id), oldest first
    def time_add(self, seconds: int, doc_id: int) -> None: ...
    def time_oldest(self, before: int, limit: int) -> list[tuple[int, int]]:
        """Up to `limit` (seconds, doc id) with seconds < before, oldest first."""
    def time_remove(self, seconds: int, doc_id: int) -> None: ...


class Store(Protocol):
    location: str

    def open(self) -> None:
        """Open, creating if needed; meta readable and writable from here on."""
    def open_tables(self, count: int) -> None:
        """Make `count` permuted tables usable (called once the plan is known)."""
    def close(self) -> None: ...
    def read(self, fn: Callable[[StoreTxn], T]) -> T: ...
    def write(self, fn: Callable[[StoreTxn], T]) -> T: ...


def u64(value: int) -> bytes:
    return value.to_bytes(8, "big")


def from_u64(data: bytes) -> int:
    return int.from_bytes(data, "big")
