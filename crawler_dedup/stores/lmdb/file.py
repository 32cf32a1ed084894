"""The LMDB file itself: its meta pages, the checks that keep LMDB from crashing on a damaged
file, who else has it open, copying its tables, and reading its leaf pages without the B-trees
(what `index rebuild` salvages). LMDB's on-disk format is known here and nowhere else."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import struct
from typing import Iterator

import lmdb

from ...exceptions import StoreDamaged, StoreError, StoreFull

# what LMDB says of a file it cannot read as an index: damaged, truncated, or something else
_DAMAGED = (lmdb.CorruptedError, lmdb.PageNotFoundError, lmdb.InvalidError, lmdb.VersionMismatchError,
            lmdb.BadDbiError, lmdb.IncompatibleError, lmdb.PanicError, lmdb.BadRslotError,
            lmdb.BadTxnError)  # (a transaction a damaged page made fail)


def damaged(location: str, exc: BaseException) -> StoreDamaged:
    """The one message for a damaged index: which file, what LMDB said, and what to do."""
    where = os.path.join(location, "data.mdb")
    return StoreDamaged(f"the index file {where} is damaged or not an LMDB index ({str(exc).split(': ', 1)[-1]}); "
                        f"`crawler-dedup index verify --dir {location}` checks it, `crawler-dedup index rebuild "
                        f"--dir {location}` files its readable pages into a new one (or use a new DEDUP_DIR)")

_LOW_SPACE = 1 << 20  # an EIO with less than this free on the disk: it is full (16 of the largest LMDB pages)


def full_disk(location: str, exc: BaseException | None) -> StoreFull | None:
    """The one message for a write that failed on a full disk, or None when `exc` is something
    else. LMDB says ENOSPC ("No space left on device"), but a write of data.mdb that came out
    short it reports as EIO ("Input/output error", mdb_page_flush): an EIO with under 1 MiB free
    (16 pages of LMDB's largest size) on the disk holding the index at that moment is a full disk.
    `exc` None: before opening to write (LMDB's new lock file on a full disk is a SIGBUS), the
    disk is full when that little is free."""
    code = getattr(exc, "code" if isinstance(exc, lmdb.Error) else "errno", None)
    said = "" if exc is None else str(exc)
    free = free_bytes(location)
    if exc is None or (code != errno.ENOSPC and "No space left" not in said):
        if exc is not None and code != errno.EIO and "Input/output error" not in said:
            return None
        if free is None or free >= _LOW_SPACE:
            return None  # room enough: an EIO of the disk itself, said as LMDB said it
    shown = "unknown" if free is None else size_text(free)
    return StoreFull(f"the disk holding DEDUP_DIR ({location}) is full ({shown} free): free space or move "
                     f"DEDUP_DIR" + (f" (LMDB said: {said})" if said else ""))


def free_bytes(location: str) -> int | None:
    """Bytes free to this user on the disk holding `location` (its nearest existing folder)."""
    where = os.path.abspath(location)
    while not os.path.exists(where) and os.path.dirname(where) != where:
        where = os.path.dirname(where)
    try:
        return shutil.disk_usage(where).free
    except OSError:
        return None


def size_text(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    size, unit = float(n), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            break
        size /= 1024
    return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"


WRITERS = "writers.lock"  # beside data.mdb: each process writing the index holds it shared; compact,
# rebuild and DEDUP_RESET hold it exclusive from their check to their swap, so no crawl opens between


def lost_signs(location: str) -> list[str]:
    """What shows that `location` held an index: its lock file, a drop log with lines, a damaged
    file moved aside by `index rebuild` (a crawl's first open makes only an empty drop log)."""
    try:
        names = os.listdir(location)
    except OSError:
        return []
    signs = [n for n in names if n == "lock.mdb" or n.startswith(("data.mdb.damaged-", "data.mdb.old-"))]  # (WRITERS: the opener's own)
    try:
        if os.path.getsize(os.path.join(location, "droplog.jsonl")):
            signs.append("droplog.jsonl")
    except OSError:
        pass
    return sorted(signs)


def check_not_lost(location: str) -> None:
    """Refuse to start a new index where one was lost: data.mdb missing or empty beside its lock
    file or drop log would otherwise be a new, empty index that keeps every page again."""
    data = os.path.join(location, "data.mdb")
    try:
        size: int | None = os.path.getsize(data)
    except OSError:
        size = None
    if size:
        return
    signs = lost_signs(location)
    if signs:
        state = "empty" if size == 0 else "missing"
        raise StoreDamaged(f"{location} held an index ({', '.join(signs)}) but its data.mdb is {state}: a new "
                           "index there would keep every page again. To start a new index there set "
                           "DEDUP_RESET=True (the folder is moved aside), or give another DEDUP_DIR")


_MAGIC = 0xBEEFC0DE


_PAGE_SIZES = (4096, 512, 1024, 2048, 8192, 16384, 32768, 65536)


def meta_pages(head: bytes) -> list[tuple[int, int, int]]:
    """(page size, last page, txn id) of each readable meta page at the start of an LMDB file
    (page header 16 bytes; magic, version, address, map size, two table records, last page,
    txn id). The first may be damaged: the second is looked for at each possible page size."""
    found = []
    for offset in (0, *_PAGE_SIZES):
        if len(head) < offset + 152:
            continue
        magic, _version = struct.unpack_from("<II", head, offset + 16)
        psize = struct.unpack_from("<I", head, offset + 40)[0]
        last, txnid = struct.unpack_from("<QQ", head, offset + 136)
        if magic == _MAGIC and psize in _PAGE_SIZES and offset in (0, psize):
            found.append((psize, last, txnid))
    return found


def check_file(location: str, pad: bool = False) -> None:
    """Refuse a data.mdb that LMDB would crash on or misread rather than report: a file shorter
    than the last page its newest meta page names (cut short by a full disk or a bad copy) makes
    the mapped reads of the missing pages kill the process with SIGBUS; a file that is not
    LMDB's; a folder where the file should be. `pad`: extend a cut file instead (its lost pages
    then read as zeros: damaged, not SIGBUS), for `index rebuild` on a copy."""
    path = os.path.join(location, "data.mdb")
    for name in ("data.mdb", "lock.mdb"):
        if os.path.isdir(os.path.join(location, name)):
            raise damaged(location, Exception(f"{name} is a folder, not a file"))
    try:
        with open(path, "rb") as fh:
            head = fh.read(2 * 65536 + 4096)
            # The size after the meta pages: a writer writes its pages before the meta page naming
            # them, so a commit between the two reads cannot make a growing file look cut short.
            size = os.fstat(fh.fileno()).st_size
    except OSError:
        return  # missing or unreadable: lmdb.open says which
    if not size:
        return
    metas = meta_pages(head)
    if not metas:
        raise damaged(location, Exception("data.mdb is not an LMDB file, no meta page"))
    if len(metas) < 2 and not pad:
        raise damaged(location, Exception("data.mdb has one meta page of two"))
    psize, last, _ = max(metas, key=lambda m: m[2])
    if size < (last + 1) * psize:
        if pad:
            with open(path, "r+b") as fh:
                fh.truncate((last + 1) * psize)
            return
        raise damaged(location, Exception(f"data.mdb is cut short, {size} bytes where its last page ends at "
                                          f"{(last + 1) * psize}"))


def other_users(env) -> list[int]:
    """Processes other than this one with the environment open (from lock.mdb's reader table;
    a crawl reads on every page, so it is in it)."""
    env.reader_check()  # (drops the slots of processes that are gone)
    pids = []
    for line in env.readers().splitlines()[1:]:
        fields = line.split()
        if fields and fields[0].isdigit() and int(fields[0]) != os.getpid():
            pids.append(int(fields[0]))
    return sorted(set(pids))


def writers_lock(location: str) -> tuple[int, bool]:
    """Take the writers' lock for a process about to open the index to write: (its descriptor,
    whether it is held exclusive). Exclusive when no other process writes the index: the caller
    then checks and makes the file alone (two crawls starting at once on a new folder would
    otherwise each see the other's half-made file), and turns it shared (`share`) once opened.
    Shared when others write it (the file is whole). Waits a little while another process holds
    it exclusive (one opening the index); StoreError past that (compact, rebuild or a reset)."""
    import fcntl
    import time

    fd = os.open(os.path.join(location, WRITERS), os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + 3.0
    while True:
        for mode, alone in ((fcntl.LOCK_EX, True), (fcntl.LOCK_SH, False)):
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                return fd, alone
            except BlockingIOError:
                continue
        if time.monotonic() > deadline:
            os.close(fd)
            raise StoreError(f"the index at {location} is being rewritten (`crawler-dedup index compact` or `index "
                             "rebuild`, or DEDUP_RESET, is running on it): start again when it is done")
        time.sleep(0.02)


def share(fd: int) -> None:
    """The writers' lock, held exclusive while the index was opened, turned shared."""
    import fcntl

    fcntl.flock(fd, fcntl.LOCK_SH)


@contextlib.contextmanager
def held_exclusive(location: str, what: str) -> Iterator[None]:
    """The writers' lock exclusive for `what` (compact, rebuild, reset): StoreError when a process
    writes the index; no process opens it for writing until the block ends."""
    import fcntl

    if not os.path.isdir(location):
        yield
        return
    fd = os.open(os.path.join(location, WRITERS), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreError(f"the index at {location} is open in another process (a crawl?): stop it before "
                             f"{what}") from None
        yield
    finally:
        os.close(fd)


def refuse_if_used(env, location: str, what: str) -> None:
    users = other_users(env)
    if users:
        raise StoreError(f"the index at {location} is open in process {', '.join(map(str, users))} (a crawl?): "
                         f"stop it before `index {what}`")


def copy_tables(src, dst, batch: int = 50_000) -> None:
    """Every named table of `src` into `dst` with its flags, entry by entry, in key order."""
    with src.begin() as rt:
        names = [bytes(k) for k, _ in rt.cursor()]
    for name in names:
        sdb = src.open_db(name, create=False)  # (in a write transaction: one opened in a read one closes with it)
        with src.begin() as rt:
            flags = sdb.flags(rt)
        ddb = dst.open_db(name, dupsort=flags["dupsort"], dupfixed=flags["dupfixed"],
                          integerkey=flags["integerkey"], integerdup=flags["integerdup"],
                          reverse_key=flags["reverse_key"])
        with src.begin(db=sdb) as rt:
            items = rt.cursor().iternext()
            while True:
                chunk = [(bytes(k), bytes(v)) for k, v in _take(items, batch)]
                if not chunk:
                    break
                with dst.begin(write=True, db=ddb) as wt:
                    wt.cursor().putmulti(chunk, dupdata=flags["dupsort"])


def _take(iterator, n: int):
    for _ in range(n):
        try:
            yield next(iterator)
        except StopIteration:
            return


def leaf_rows(path: str) -> Iterator[tuple[bytes, bytes]]:
    """Every (key, value) on the leaf pages of an LMDB file, read page by page without its
    B-trees: what is left when a damaged branch page hides the leaves under it. Stale copies of
    pages (LMDB writes new ones and frees the old) come too. Layout (LMDB 0.9): page header
    pgno u64, pad u16, flags u16, lower u16, upper u16; a leaf node: data size (lo, hi u16),
    flags u16, key size u16, key, then the data or, with F_BIGDATA, its overflow page number."""
    import mmap

    P_LEAF, P_LEAF2, P_SUBP, F_BIGDATA, F_SUBDATA, F_DUPDATA = 0x02, 0x20, 0x40, 0x01, 0x02, 0x04
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 8192:
            return
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            metas = meta_pages(bytes(data[:2 * 65536 + 4096]))
            psize = metas[0][0] if metas else 4096  # (both meta pages lost: the usual size)
            for pgno in range(2, size // psize):
                off = pgno * psize
                flags, lower, upper = struct.unpack_from("<HHH", data, off + 10)
                if not flags & P_LEAF or flags & (P_LEAF2 | P_SUBP) or not 16 <= lower <= upper <= psize:
                    continue
                for i in range((lower - 16) // 2):
                    ptr = struct.unpack_from("<H", data, off + 16 + 2 * i)[0]
                    if not upper <= ptr < psize - 8:
                        break
                    node = off + ptr
                    lo, hi, nflags, ksize = struct.unpack_from("<HHHH", data, node)
                    dsize = lo | hi << 16
                    key = bytes(data[node + 8: node + 8 + ksize])
                    if nflags & (F_SUBDATA | F_DUPDATA):
                        continue
                    if nflags & F_BIGDATA:
                        over = struct.unpack_from("<Q", data, node + 8 + ksize)[0] * psize + 16
                        if over + dsize > size:
                            continue
                        value = bytes(data[over: over + dsize])
                    else:
                        value = bytes(data[node + 8 + ksize: node + 8 + ksize + dsize])
                    yield key, value
        finally:
            data.close()
