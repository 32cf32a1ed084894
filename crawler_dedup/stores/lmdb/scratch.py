"""A dry run's scratch copy of an LMDB index (DEDUP_DRY_RUN): the crawl files its pages, runs and
validators there, and the index it was asked to try stays as it was. LMDB's plain copy reads one
consistent snapshot while other processes write (its compacting copy is avoided: store.py)."""

from __future__ import annotations

import os
import shutil
import tempfile

import lmdb

from ...exceptions import StoreError
from .file import check_file
from .store import _MAX_TABLES

PREFIX = ".dry-run-"


def scratch_copy(src: str, empty: bool = False) -> str:
    """A new folder beside `src` holding a copy of its index (none when it has none yet, or `empty`)."""
    src = os.path.abspath(src.rstrip(os.sep) or os.sep)
    parent = os.path.dirname(src)
    os.makedirs(parent, exist_ok=True)
    dst = tempfile.mkdtemp(prefix=os.path.basename(src) + PREFIX, dir=parent)
    if empty or not os.path.isfile(os.path.join(src, "data.mdb")):
        return dst
    try:
        check_file(src)  # (a file cut short would take the process down in LMDB)
        try:  # (with the lock, writers at work leave the snapshot's pages alone)
            env = lmdb.open(src, readonly=True, create=False, max_dbs=_MAX_TABLES + 16, readahead=False)
        except lmdb.Error:  # lock.mdb not writable here: read without it
            env = lmdb.open(src, readonly=True, create=False, max_dbs=_MAX_TABLES + 16, readahead=False, lock=False)
        try:
            env.copy(dst)
        finally:
            env.close()
    except (lmdb.Error, OSError) as exc:
        shutil.rmtree(dst, ignore_errors=True)
        raise StoreError(f"a dry run could not copy the index {src} to {dst}: {exc}") from None
    except BaseException:
        shutil.rmtree(dst, ignore_errors=True)
        raise
    return dst


def remove_scratch(path: str) -> None:
    if PREFIX in os.path.basename(path.rstrip(os.sep)):  # (never anything but a scratch copy)
        shutil.rmtree(path, ignore_errors=True)
