"""A full disk under DEDUP_DIR is said plainly, not as LMDB's "Input/output error".

Filling a disk is not something a test can do here, so LMDB's errors are raised inside a write
transaction with the errno a full disk gives (ENOSPC, or EIO from a short write of data.mdb),
and shutil.disk_usage is faked. (Checked by hand on a 2 MiB tmpfs: a write that fills it fails
with `mdb_txn_commit: Input/output error` and 0 bytes free; a new index opened on it is a SIGBUS.)
"""

import collections
import errno
import shutil

import lmdb
import pytest

from crawler_dedup.exceptions import StoreError, StoreFull
from crawler_dedup.stores import LmdbStore
from crawler_dedup.stores.base import SINGLE
from crawler_dedup.stores.lmdb.file import full_disk, size_text

_Usage = collections.namedtuple("_Usage", "total used free")


def _free(monkeypatch, free: int) -> None:
    monkeypatch.setattr(shutil, "disk_usage", lambda path: _Usage(1 << 30, (1 << 30) - free, free))


def _lmdb_error(what: str, code: int) -> lmdb.Error:
    exc = lmdb.Error(f"{what}: {'No space left on device' if code == errno.ENOSPC else 'Input/output error'}")
    exc.code = code  # (as the C extension sets it)
    return exc


@pytest.fixture
def store(tmp_path):
    s = LmdbStore(str(tmp_path / "idx"), map_size=1 << 20, sync=False)
    s.open()
    s.ensure({"t": SINGLE})
    yield s
    s.close()


def _failing_write(store, code: int):
    def fn(txn):
        txn.put("t", b"k", b"v")
        raise _lmdb_error("mdb_txn_commit", code)
    return store.write(fn)


def test_eio_with_the_disk_full_says_the_disk_is_full(store, monkeypatch):
    _free(monkeypatch, 12 * 1024)
    with pytest.raises(StoreFull) as caught:
        _failing_write(store, errno.EIO)
    said = str(caught.value)
    assert said.startswith(f"the disk holding DEDUP_DIR ({store.location}) is full (12.0 KiB free): "
                           "free space or move DEDUP_DIR")
    assert "Input/output error" in said  # (what LMDB said, at the end, for whoever searches it)


def test_eio_with_room_left_is_not_called_a_full_disk(store, monkeypatch):
    _free(monkeypatch, 5 << 30)
    with pytest.raises(StoreError) as caught:
        _failing_write(store, errno.EIO)
    assert not isinstance(caught.value, StoreFull)
    assert "Input/output error" in str(caught.value) and "full" not in str(caught.value)


def test_enospc_is_a_full_disk_whatever_is_free_now(store, monkeypatch):
    _free(monkeypatch, 300 << 20)  # (a temporary file elsewhere may have gone since)
    with pytest.raises(StoreFull, match=r"is full \(300.0 MiB free\): free space or move DEDUP_DIR"):
        _failing_write(store, errno.ENOSPC)


@pytest.mark.parametrize("free,full", [(0, True), ((1 << 20) - 1, True), (1 << 20, False)])
def test_an_eio_is_a_full_disk_under_1_mib_free(monkeypatch, free, full):
    _free(monkeypatch, free)
    assert (full_disk("/nowhere/idx", _lmdb_error("mdb_txn_commit", errno.EIO)) is not None) is full


def test_other_errors_and_oserrors(monkeypatch):
    _free(monkeypatch, 0)
    assert full_disk("/x", lmdb.Error("mdb_put: MDB_BAD_VALSIZE: Unsupported size of key/DB name/data")) is None
    assert full_disk("/x", OSError(errno.EACCES, "Permission denied")) is None
    assert isinstance(full_disk("/x", OSError(errno.ENOSPC, "No space left on device")), StoreFull)
    assert isinstance(full_disk("/x", lmdb.Error("mdb_env_open: No space left on device")), StoreFull)


def test_opening_to_write_on_a_full_disk_is_refused_plainly(tmp_path, monkeypatch):
    made = LmdbStore(str(tmp_path / "idx"), sync=False)
    made.open()
    made.close()
    _free(monkeypatch, 4096)
    with pytest.raises(StoreFull, match=r"is full \(4.0 KiB free\): free space or move DEDUP_DIR$"):
        LmdbStore(str(tmp_path / "new"), sync=False).open()
    reader = LmdbStore(str(tmp_path / "idx"), readonly=True)
    reader.open()  # reading needs no room
    reader.close()


def test_size_text():
    assert [size_text(n) for n in (0, 1023, 1536, 5 << 30)] == ["0 B", "1023 B", "1.5 KiB", "5.0 GiB"]
