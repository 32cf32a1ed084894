"""LMDB store: one environment, a named database per table (lmdb imports only under stores/lmdb).

What the tables hold is the index's business (index.py). A MULTI table is a dupsort+dupfixed
database: a bucket's 8-byte values are read with one getmulti straight into numpy.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import time
from typing import Callable, ContextManager, Iterator

import lmdb
import numpy as np

from ...exceptions import StoreDamaged, StoreError, StoreFull
from ..base import MULTI, SINGLE, T, TxnBase
from .file import (_DAMAGED, check_file, check_not_lost, copy_tables, damaged, full_disk, held_exclusive,
                   leaf_rows, refuse_if_used, share, writers_lock)

logger = logging.getLogger(__name__)

_MAX_TABLES = 1000  # tables.py never plans more
_MAX_MAP = 1 << 40  # 1 TiB of address space: past this, StoreFull
_BUCKET_DTYPE = np.dtype(">u8")


class _LmdbTxn(TxnBase):
    def __init__(self, store: "LmdbStore", txn: lmdb.Transaction):
        self.s, self.txn = store, txn
        self._cursors: dict[str, lmdb.Cursor] = {}

    def _db(self, table: str):
        try:
            return self.s.dbs[table]
        except KeyError:
            raise StoreError(f"no table {table!r} in the LMDB index at {self.s.location}") from None

    def _cursor(self, table: str) -> lmdb.Cursor:
        cur = self._cursors.get(table)
        if cur is None:  # one cursor per table for the transaction's reads
            cur = self._cursors[table] = self.txn.cursor(db=self._db(table))
        return cur

    def get(self, table, key):
        value = self.txn.get(bytes(key), db=self._db(table))
        return None if value is None else bytes(value)

    def put(self, table, key, value):
        self.txn.put(bytes(key), bytes(value), db=self._db(table))

    def delete(self, table, key):
        self.txn.delete(bytes(key), db=self._db(table))

    def values(self, table, key):
        raw = self._cursor(table).getmulti([bytes(key)], dupdata=True, dupfixed_bytes=8, keyfixed=True)
        step = len(key) + 8
        return [bytes(raw[i + len(key):i + step]) for i in range(0, len(raw), step)]

    def value_count(self, table, key):
        cur = self._cursor(table)
        return cur.count() if cur.set_key(bytes(key)) else 0

    def add(self, table, key, value):
        self.txn.put(bytes(key), bytes(value), db=self._db(table), dupdata=True)

    def remove(self, table, key, value):
        self.txn.delete(bytes(key), bytes(value), db=self._db(table))

    def union_u64(self, tables, keys):
        """Every bucket in one conversion, not one per table (getmulti packs key and value)."""
        size = len(keys[0]) if keys else 0
        if any(len(k) != size for k in keys):
            return super().union_u64(tables, keys)
        raw = b"".join([self._cursor(t).getmulti([k], dupdata=True, dupfixed_bytes=8, keyfixed=True)
                        for t, k in zip(tables, keys)])
        return _values(raw, size).astype(np.uint64)

    def scan(self, table, start, limit):
        out: list[tuple[bytes, bytes]] = []
        if limit <= 0:
            return out
        cur = self.txn.cursor(db=self._db(table))
        if not cur.set_range(bytes(start)):
            return out
        for key, value in cur:
            out.append((bytes(key), bytes(value)))
            if len(out) >= limit:
                break
        return out

    def count(self, table):
        return self.txn.stat(self._db(table))["entries"]


def _values(raw, key_size: int) -> np.ndarray:
    """The 8-byte big-endian values of getmulti's packed (key, value) records, without a copy."""
    step = key_size + 8
    if not len(raw):
        return np.empty(0, np.uint64)
    return np.ndarray((len(raw) // step,), dtype=_BUCKET_DTYPE, buffer=raw, offset=key_size, strides=(step,))


class LmdbStore:
    """Open in the process that uses it (after any fork), once per process and directory."""

    one_per_process = True  # crawlers of one process on one directory share one open store

    def __init__(self, path: str, map_size: int = 256 * 1024**2, sync: bool = True, readonly: bool = False):
        self.location = str(path)
        self.map_size, self.sync, self.readonly = map_size, sync, readonly
        self.env: lmdb.Environment | None = None
        self.dbs: dict[str, object] = {}
        self._writers: int | None = None  # the writers' lock, held shared while open for writing (file.py)

    @classmethod
    def from_config(cls, config, readonly: bool = False) -> "LmdbStore":
        if not config.dir:
            raise StoreError("the LMDB backend needs DEDUP_DIR")
        return cls(config.dir, map_size=config.lmdb_map_size, sync=config.lmdb_sync, readonly=readonly)

    def open(self) -> None:
        try:
            if self.readonly:
                check_file(self.location)
                if not os.path.isfile(os.path.join(self.location, "data.mdb")):
                    raise StoreError(f"no LMDB index in {self.location}")
                try:
                    self.env = lmdb.open(self.location, readonly=True, create=False, max_dbs=_MAX_TABLES + 16,
                                         readahead=False)
                except lmdb.Error:  # lock.mdb not writable here: read without the lock
                    self.env = lmdb.open(self.location, readonly=True, create=False, max_dbs=_MAX_TABLES + 16,
                                         readahead=False, lock=False)
                return
            os.makedirs(self.location, exist_ok=True)
            self._writers, alone = writers_lock(self.location)  # (file.py: compact, rebuild and reset refuse it)
            # Checked under the lock: a process making a new file holds it alone, so the file is
            # never read while its meta pages are still being written.
            check_file(self.location)
            if alone:
                check_not_lost(self.location)  # (no other process is making the file)
            full = full_disk(self.location, None)
            if full is not None:
                raise full
            self.env = lmdb.open(
                self.location, map_size=self.map_size, max_dbs=_MAX_TABLES + 16, sync=self.sync,
                # one fsync a commit, not two: the meta page follows with the next commit; a power
                # cut may undo the last commit, never corrupt (a killed process loses nothing)
                metasync=False, readahead=False, max_spare_txns=4,
            )
            if self.env.info()["map_size"] < self.map_size:
                self.env.set_mapsize(self.map_size)
            if alone:
                share(self._writers)
        except StoreError:
            self.close()
            raise
        except _DAMAGED as exc:
            self.close()
            raise damaged(self.location, exc) from None
        except (lmdb.Error, OSError) as exc:
            self.close()
            raise full_disk(self.location, exc) or StoreError(
                f"cannot open the LMDB index at {self.location}: {exc}") from exc

    def refuse_foreign(self) -> None:
        """An LMDB file of something else (its tables, and no `meta`) is never written into
        (NearDupIndex.open asks before it makes its tables)."""
        assert self.env is not None
        with self.env.begin() as txn:
            names = [bytes(k).decode("utf-8", "replace") for k, _ in txn.cursor()]
        if names and "meta" not in names:
            shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
            raise StoreDamaged(f"{os.path.join(self.location, 'data.mdb')} is an LMDB file of something else (tables "
                             f"{shown}), not a crawler-dedup index: give another DEDUP_DIR")

    def ensure(self, tables) -> None:
        """A table is a named database; MULTI: sorted fixed-size duplicates (dupsort+dupfixed),
        so a bucket comes back in one getmulti straight into numpy."""
        if self.env is None:
            raise StoreError(f"the LMDB index at {self.location} is not open")
        for name, kind in tables.items():
            if name in self.dbs:
                continue
            if kind not in (SINGLE, MULTI):
                raise StoreError(f"table {name!r}: unknown kind {kind!r}")
            try:
                self.dbs[name] = self.env.open_db(name.encode(), create=not self.readonly,
                                                  dupsort=kind == MULTI, dupfixed=kind == MULTI)
            except lmdb.NotFoundError:
                continue  # read-only: a table the index never made reads as missing
            except _DAMAGED as exc:
                raise damaged(self.location, exc) from None
            except lmdb.Error as exc:
                raise full_disk(self.location, exc) or StoreError(
                    f"cannot open table {name} of the LMDB index at {self.location}: {exc}") from exc

    def close(self) -> None:
        if self.env is not None:
            self.env.close()
            self.env = None
        self.dbs = {}
        if self._writers is not None:
            os.close(self._writers)
            self._writers = None

    def _run(self, fn, write: bool):
        if self.env is None:
            raise StoreError(f"the LMDB index at {self.location} is not open")
        if write and self.readonly:
            raise StoreError(f"the LMDB index at {self.location} is open read-only")
        while True:
            try:
                with self.env.begin(write=write) as txn:
                    result = fn(_LmdbTxn(self, txn))
                if write:
                    self._pad()
                return result
            except lmdb.MapFullError:
                # the whole transaction was aborted; grow and run it again from the start
                size = self.env.info()["map_size"] * 2
                if size > _MAX_MAP:
                    raise StoreFull(f"the LMDB index at {self.location} reached {size // 2} bytes") from None
                self.env.set_mapsize(size)
            except lmdb.MapResizedError:
                self.env.set_mapsize(0)  # another process grew the map: adopt its size
            except _DAMAGED as exc:
                raise damaged(self.location, exc) from None
            except lmdb.Error as exc:  # (a full disk: ENOSPC, or EIO from a short write of data.mdb)
                raise full_disk(self.location, exc) or StoreError(f"LMDB index at {self.location}: {exc}") from exc

    def _pad(self) -> None:
        """LMDB may commit a last page it never wrote (allocated and freed within the transaction):
        the file then ends before it, which check_file takes for a file cut short, refusing the next
        open. Extend the file to that page, never shrinking it (another writer may have grown it)."""
        assert self.env is not None
        need = (self.env.info()["last_pgno"] + 1) * self.env.stat()["psize"]
        path = os.path.join(self.location, "data.mdb")
        try:
            if os.path.getsize(path) >= need:
                return
            fd = os.open(path, os.O_RDWR)
            try:
                size = os.fstat(fd).st_size
                if size < need:
                    os.posix_fallocate(fd, size, need - size)
            finally:
                os.close(fd)
        except OSError as exc:  # (a full disk: the next write reports it)
            logger.debug("crawler-dedup: could not extend %s to its last page: %s", path, exc)

    def read(self, fn: Callable[..., T]) -> T:
        return self._run(fn, write=False)

    def write(self, fn: Callable[..., T]) -> T:
        return self._run(fn, write=True)

    # -- maintenance (not part of the contract: `crawler-dedup index stats|compact`) ---------
    def disk_bytes(self) -> int:
        """The index's own files (a drop log or a dry run's scratch beside them are not the index)."""
        files = (os.path.join(self.location, n) for n in ("data.mdb", "lock.mdb"))
        return sum(os.path.getsize(f) for f in files if os.path.exists(f))

    def table_stats(self) -> dict[str, tuple[int, int]]:
        """Per open table: (entries, bytes of its pages)."""
        def stats(txn):
            out = {}
            for name, db in self.dbs.items():
                st = txn.txn.stat(db)
                out[name] = (st["entries"], (st["branch_pages"] + st["leaf_pages"] + st["overflow_pages"]) * st["psize"])
            return out
        return self.read(stats)

    def compact(self) -> tuple[int, int]:
        """Rewrite data.mdb without its free pages (no other process may use the index);
        (bytes before, bytes after). Every table is copied entry by entry into a new file: LMDB's
        own compacting copy (mdb_env_copy2 with MDB_CP_COMPACT) crashes the process on a
        dupsort key with a few hundred values, which `times` has when many pages share a second."""
        self.refuse_if_used("compact")  # (names the processes; the lock below closes the gap after it)
        with held_exclusive(self.location, "`index compact`"):
            return self._compact()

    def _compact(self) -> tuple[int, int]:
        data = os.path.join(self.location, "data.mdb")
        check_file(self.location)
        before = os.path.getsize(data)
        try:
            src = lmdb.open(self.location, max_dbs=_MAX_TABLES + 16, readonly=False)
        except _DAMAGED as exc:
            raise damaged(self.location, exc) from None
        except lmdb.Error as exc:
            raise StoreError(f"cannot open the LMDB index at {self.location}: {exc}") from None
        tmp = tempfile.mkdtemp(dir=self.location, prefix=".compact-")  # same file system, cleaned up
        try:
            refuse_if_used(src, self.location, "compact")
            dst = lmdb.open(tmp, map_size=src.info()["map_size"], max_dbs=_MAX_TABLES + 16, sync=False,
                            metasync=False)
            try:
                copy_tables(src, dst)
                dst.sync(True)
            finally:
                dst.close()
            src.close()
            os.replace(os.path.join(tmp, "data.mdb"), data)
        except _DAMAGED as exc:
            raise damaged(self.location, exc) from None
        except (lmdb.Error, OSError) as exc:  # (the copy needs room for a second file)
            full = full_disk(self.location, exc)
            if full is None:
                raise
            raise full from exc
        finally:
            src.close()
            shutil.rmtree(tmp, ignore_errors=True)
        return before, os.path.getsize(data)

    # -- repair (stores/base.py `Repairable`: `index rebuild` through core/integrity.rebuild) ----
    def refuse_if_used(self, what: str) -> None:
        """StoreError when another process has the index open (it would go on writing into the
        old file); nothing when the file cannot be opened as it is (nobody can be using it)."""
        try:
            check_file(self.location)
            env = lmdb.open(self.location, readonly=True, max_dbs=_MAX_TABLES + 16, create=False)
        except (StoreError, lmdb.Error, OSError):
            return
        try:
            refuse_if_used(env, self.location, what)
        finally:
            env.close()

    def exclusive(self, what: str) -> ContextManager[None]:
        """No other process writes the index, nor opens it to write, until the block ends (the
        writers' lock, file.py), and none other reads it as the block starts: StoreError if one does."""
        @contextlib.contextmanager
        def both() -> Iterator[None]:
            self.refuse_if_used(what)  # (names the processes; the lock closes the gap after the check)
            with held_exclusive(self.location, f"`index {what}`"):
                yield
        return both()

    @contextlib.contextmanager
    def workspace(self, what: str) -> Iterator[str]:
        """A folder inside the index's (the same file system, so a new file moves in with one
        rename), removed afterwards; what an interrupted rebuild or compact left goes first."""
        for name in os.listdir(self.location):
            if name.startswith((".rebuild-", ".compact-")):
                shutil.rmtree(os.path.join(self.location, name), ignore_errors=True)
        work = tempfile.mkdtemp(prefix=f".{what}-", dir=self.location)
        try:
            yield work
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def salvage_source(self, work: str) -> tuple["LmdbStore | None", Iterator[tuple[bytes, bytes]]]:
        """What a rebuild reads from: the index read-only (a copy in `work`, padded to its length,
        when the file is cut short or a meta page is lost), or None when LMDB cannot open even
        that; and the (key, value) rows found on the file's leaf pages, B-trees or not."""
        read_from = self.location
        try:
            check_file(self.location)
        except StoreError:
            read_from = os.path.join(work, "source")
            os.makedirs(read_from)
            shutil.copyfile(os.path.join(self.location, "data.mdb"), os.path.join(read_from, "data.mdb"))
            try:
                check_file(read_from, pad=True)
            except StoreError:
                pass  # no meta page at all: what its leaf pages hold is all there is
        rows = leaf_rows(os.path.join(read_from, "data.mdb"))
        source: LmdbStore | None = LmdbStore(read_from, readonly=True)
        try:
            source.open()  # type: ignore[union-attr]
        except (StoreError, OSError):
            source = None
        return source, rows

    def fresh(self, where: str) -> "LmdbStore":
        """A new, empty store at `where` with room for what this one holds."""
        size = os.path.getsize(os.path.join(self.location, "data.mdb"))
        return LmdbStore(where, map_size=max(64 * 2**20, size))

    def replace_with(self, new: "LmdbStore", label: str = "damaged") -> str:
        """Put `new`'s file in this index's place in one step, keeping the old one beside it as
        data.mdb.LABEL-TIME (`damaged`, or `old` for a whole file of an older format or with
        entries rebuilt); that name. No process may have either open."""
        data = os.path.join(self.location, "data.mdb")
        kept = os.path.join(self.location, f"data.mdb.{label}-{time.strftime('%Y%m%d-%H%M%S')}")
        try:  # the old file keeps a second name, then the new one takes its place in one step
            os.link(data, kept)
        except OSError:  # (no hard links here: two steps)
            os.replace(data, kept)
        os.replace(os.path.join(new.location, "data.mdb"), data)
        lock = os.path.join(self.location, "lock.mdb")
        if os.path.isdir(lock):
            shutil.rmtree(lock)  # (a folder where LMDB's lock file goes: nothing LMDB made)
        elif os.path.exists(lock):
            os.remove(lock)  # its reader table described the old file
        return kept
