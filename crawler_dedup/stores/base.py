"""The contract every index store meets: named tables of bytes inside transactions.

A store knows nothing of simhash or pages; `index.NearDupIndex` gives the tables their meaning.
A new backend implements `Store` and `Txn` below and passes the shipped contract suite
(`crawler_dedup.stores.contract.StoreContract`, see tests/test_stores.py for its use).

Tables (`Store.ensure` makes them usable; the index names them):
- SINGLE: key -> one value (bytes -> bytes).
- MULTI: key -> a set of 8-byte values, returned sorted (bytewise). Adding a value already there
  and removing one that is not are no-ops.
Keys are 1..511 bytes. Counters are SINGLE entries holding an 8-byte big-endian integer.

Transactions (`Store.read(fn)` / `Store.write(fn)` call `fn(txn)` and return its result):
- write(fn) is atomic: every change fn made lands, or none does (fn raised, the process died).
- write(fn) is serializable: the result is as if no other writer of the index (in this process
  or another, or on another machine) ran between fn's first read and its commit. The index's
  decisions are made inside fn (look up, then add), so two crawlers sharing an index cannot
  both keep one page. A local store gets this from its write lock; a networked one may run
  writers at once and validate what fn read at commit (Redis WATCHes every key fn reads and
  applies fn's buffered writes in one MULTI/EXEC, which fails if any of them changed); reads
  inside fn must see fn's own writes.
- write(fn) may run fn again from the start (a local store growing its file, a networked store
  retrying after a conflict): fn must not keep side effects outside the store, or must undo
  them when run again (Deduplicator does).
- read(fn) sees one consistent state; a Txn write method called in it raises StoreError.
- A store opened `readonly` (after-crawl tools on an index a crawl may be using) never writes
  and never creates: write() raises StoreError.

A store that cannot give transactions across its keys (a Redis Cluster's spread layout) says so
with `serializable = False`: its write(fn) applies fn's changes key by key when fn returns (each
key's change atomic, none of them if fn raised, counters at once), and it offers `claim(doc_id)
-> order` (from one counter, atomic with its record; the same order when the doc id has one),
`confirm(doc_id)` (the page stays), `claims(doc_ids) -> [Claim | None]` and `unclaim(doc_id)`,
with which the Deduplicator keeps a duplicate group once (core/decide/claims.py); one with a
`quiet` attribute also takes `claim(doc_id, quiet=True)`, which confirms the page at once when no
other page claimed since this thread's previous claim, or nothing the page's filing read changed
since, and sets `quiet` saying whether it did (the second look's rules skipped: claims.py). `ordered = False`
says its tables cannot be scanned in key order cheaply: the index keeps no time table and leaves
DEDUP_WINDOW to the keys' expiry.
"""

from __future__ import annotations

import os
from typing import Callable, ContextManager, Iterator, Mapping, NamedTuple, Protocol, TypeVar

import numpy as np

T = TypeVar("T")

SINGLE, MULTI = "single", "multi"


class Claim(NamedTuple):
    """A filed page's place among the pages filed at the same moment (a store without transactions)."""

    order: int  # from one counter: the page filed and claimed earlier has the smaller
    confirmed: bool  # its second look is done and it stays (until then it may withdraw)

FORMAT_VERSION = 4  # 2: sketch postings, shingle counts; 3: time index, digest in records; 4: URL table
MIGRATABLE = (3,)  # older formats NearDupIndex.open upgrades in place


class Txn(Protocol):
    # SINGLE tables
    def get(self, table: str, key: bytes) -> bytes | None: ...
    def put(self, table: str, key: bytes, value: bytes) -> None: ...
    def delete(self, table: str, key: bytes) -> None:
        """Remove the key (no-op when absent). On a MULTI table: the key and all its values."""
    # MULTI tables
    def values(self, table: str, key: bytes) -> list[bytes]:
        """The key's values, sorted; [] when absent."""
    def value_count(self, table: str, key: bytes) -> int: ...
    def add(self, table: str, key: bytes, value: bytes) -> None: ...
    def remove(self, table: str, key: bytes, value: bytes) -> None: ...
    def union_u64(self, tables: list[str], keys: list[bytes]) -> np.ndarray:
        """The values under keys[i] in tables[i], for every i, as one uint64 array (big-endian
        values; repeats kept): the index's hot read, one call per page looked up."""
    def values_many(self, table: str, keys: list[bytes]) -> list[list[bytes]]:
        """values() of each key, in one go (one round trip for a networked store)."""
    def get_many(self, table: str, keys: list[bytes]) -> list[bytes | None]:
        """get() of each key of a SINGLE table, in one go."""
    def value_counts(self, table: str, keys: list[bytes]) -> list[int]:
        """value_count() of each key, in one go."""
    # both kinds
    def scan(self, table: str, start: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        """Up to `limit` (key, value) with key >= start, in key order (bytewise); a MULTI
        table gives one row per value, in value order within a key."""
    def count(self, table: str) -> int:
        """Entries: keys of a SINGLE table, (key, value) pairs of a MULTI one."""
    def incr(self, table: str, key: bytes, by: int = 1, start: int = 0) -> int:
        """Add `by` to the counter at key (`start` when absent) and return the new value."""
    def sequence(self, table: str, key: bytes, by: int = 1, start: int = 0) -> int:
        """An id from a counter: unique and increasing; may skip values (see TxnBase)."""
    def prefetch(self, single: list[tuple[str, bytes]], multi: list[tuple[str, bytes]]) -> None:
        """A hint: these keys are read next; a networked store reads them in one round trip."""


class Store(Protocol):
    location: str
    readonly: bool

    def open(self) -> None:
        """Open, creating the store unless readonly (then StoreError when there is none)."""
    def ensure(self, tables: Mapping[str, str]) -> None:
        """Make the named tables (name -> SINGLE | MULTI) usable; idempotent. Not in a
        transaction; a readonly store only opens those that exist."""
    def close(self) -> None: ...
    def read(self, fn: Callable[[Txn], T]) -> T: ...
    def write(self, fn: Callable[[Txn], T]) -> T: ...


class Repairable(Protocol):
    """What a store whose data lives in a file of its own offers `index rebuild`
    (core/integrity.rebuild), beyond the contract: the store knows its file, the index its
    tables. The LMDB store has these; the others are rebuilt by refiling (`index add`)."""

    location: str

    def refuse_if_used(self, what: str) -> None:
        """StoreError when another process has the store open."""
    def exclusive(self, what: str) -> ContextManager[None]:
        """While open, no other process has the store open nor opens it to write (StoreError when
        one has it at the start): from the check to the swap."""
    def workspace(self, what: str) -> ContextManager[str]:
        """A scratch folder beside the store's file (one file system), removed afterwards."""
    def salvage_source(self, work: str) -> tuple["Store | None", Iterator[tuple[bytes, bytes]]]:
        """A read-only store over what can be read (None: nothing opens), and every (key,
        value) row found in the file without its indexes (what a damaged part hides)."""
    def fresh(self, where: str) -> "Store":
        """A new empty store of this kind at `where` (in the workspace)."""
    def replace_with(self, new: "Store", label: str = "damaged") -> str:
        """Put `new` in this store's place in one step; where the old file went (its name says
        `label`: `damaged`, or `old` for a whole file)."""


class TxnBase:
    """Generic parts of a Txn, built on the others; a backend overrides them to go faster."""

    reads_ahead = False  # prefetch reads (a networked store): worth hinting the next reads too

    def union_u64(self, tables: list[str], keys: list[bytes]) -> np.ndarray:
        raw = b"".join(b"".join(self.values(t, k)) for t, k in zip(tables, keys))  # type: ignore[attr-defined]
        return np.frombuffer(raw, dtype=">u8").astype(np.uint64)

    def values_many(self, table: str, keys: list[bytes]) -> list[list[bytes]]:
        return [self.values(table, k) for k in keys]  # type: ignore[attr-defined]

    def get_many(self, table: str, keys: list[bytes]) -> list[bytes | None]:
        return [self.get(table, k) for k in keys]  # type: ignore[attr-defined]

    def value_counts(self, table: str, keys: list[bytes]) -> list[int]:
        return [self.value_count(table, k) for k in keys]  # type: ignore[attr-defined]

    def incr(self, table: str, key: bytes, by: int = 1, start: int = 0) -> int:
        raw = self.get(table, key)  # type: ignore[attr-defined]
        value = (start if raw is None else from_u64(raw)) + by
        self.put(table, key, u64(value))  # type: ignore[attr-defined]
        return value

    def prefetch(self, single: list[tuple[str, bytes]], multi: list[tuple[str, bytes]]) -> None:
        return None  # a local store reads as fast one key at a time

    def sequence(self, table: str, key: bytes, by: int = 1, start: int = 0) -> int:
        """Like incr, for ids: a backend whose writers run at once may hand them out outside the
        transaction (never twice, never rolled back, so some may be skipped)."""
        return self.incr(table, key, by, start)


def u64(value: int) -> bytes:
    return value.to_bytes(8, "big")


def from_u64(data: bytes) -> int:
    return int.from_bytes(data, "big")


def pid_gone(pid: int) -> bool:
    """No process `pid` on this machine, or only its zombie: a writer's marker (an open run, a
    write journal) names its process, and a process just killed stays a zombie until its parent
    reaps it (over a second after `timeout -s KILL`), which `kill -0` still finds: a crawl run
    again at once took the killed one for alive and dropped its pages as unchanged."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # (alive under another user, or not to be asked: not known gone)
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False  # (no /proc here: a zombie looks alive)
    return state in (b"Z", b"X")
