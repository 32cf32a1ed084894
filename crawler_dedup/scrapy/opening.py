"""Before a crawl: the settings' paths checked, DEDUP_RESET, and one open index per process
for stores that allow only one (LMDB forbids opening an environment twice in a process)."""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time

from ..config import DedupConfig
from ..config.setting import _bool
from ..deduplicator import Deduplicator
from ..exceptions import ConfigError

logger = logging.getLogger(__name__)

_shared_lock = threading.Lock()
_shared: dict[tuple, list] = {}  # (backend, realpath of DEDUP_DIR) -> [Deduplicator, users]


def writable_dir(setting: str, value, path: str) -> None:
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ConfigError(setting, value, f"a writable directory ({exc.strerror or exc})") from None


def not_a_scan_out(value, path: str) -> None:
    """A scan's --out holds its index in index/: a crawl there would start a new empty one beside it."""
    if (os.path.isfile(os.path.join(path, "summary.json")) and os.path.isdir(os.path.join(path, "index"))
            and not os.path.exists(os.path.join(path, "data.mdb"))):
        raise ConfigError("DEDUP_DIR", value, f"an index folder; {path} is a scan's --out, its index is "
                                              f"{os.path.join(path, 'index')}")


def appendable_file(setting: str, value, path: str) -> None:
    writable_dir(setting, value, os.path.dirname(os.path.abspath(path)))
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise ConfigError(setting, value, f"a file that can be appended to ({exc.strerror or exc})") from None


def in_data_dir(path: str) -> str:
    """A relative DEDUP_DIR / DEDUP_DROPLOG inside Scrapy's data folder, as HTTPCACHE_DIR is: a
    crawl started from a subfolder finds the same index."""
    from scrapy.utils.project import data_path

    return data_path(os.path.expanduser(path), createdir=False)


def project_file(value: str) -> str:
    """DEDUP_ALLOW_FILE found: as given when absolute; else in the data folder, beside
    scrapy.cfg, then in the current folder (the first that exists)."""
    from scrapy.utils.conf import closest_scrapy_cfg

    path = os.path.expanduser(value)
    if os.path.isabs(path):
        return path
    cfg = closest_scrapy_cfg()
    tried = [in_data_dir(path)] + ([os.path.join(os.path.dirname(cfg), path)] if cfg else []) + [os.path.abspath(path)]
    for candidate in tried:
        if os.path.isfile(candidate):
            return candidate
    raise ConfigError("DEDUP_ALLOW_FILE", value, "a file of URL regexes; none at " + ", ".join(dict.fromkeys(tried)))


def spider_reset(spider) -> bool:
    """-a dedup_reset=1: checked like a setting, so a typo stops the crawl instead of being ignored."""
    value = getattr(spider, "dedup_reset", None)
    return False if value is None else _bool("-a dedup_reset", value)


def reset_index(path: str) -> str | None:
    """Move the index directory at `path` aside as `<path>.reset-<UTC time>` (never deleted);
    the moved path, or None when there was no index there."""
    from ..stores.lmdb.file import held_exclusive, lost_signs

    if not os.path.isfile(os.path.join(path, "data.mdb")) and not lost_signs(path):
        return None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target, n = f"{path.rstrip(os.sep)}.reset-{stamp}", 1
    while os.path.exists(target):
        n += 1
        target = f"{path.rstrip(os.sep)}.reset-{stamp}-{n}"
    with held_exclusive(path, "DEDUP_RESET"):  # (StoreError when another process writes it)
        os.rename(path, target)
    return target


def _one_per_process(config: DedupConfig) -> tuple | None:
    """The sharing key of an index that may be open once per process, or None."""
    from ..stores import BUILTIN

    cls = BUILTIN.get(config.backend)
    if cls is None or not getattr(cls, "one_per_process", False) or not config.dir:
        return None
    return config.backend, os.path.realpath(config.dir)


def in_use(config: DedupConfig) -> bool:
    key = _one_per_process(config)
    with _shared_lock:
        return key is not None and key in _shared


def acquire(config: DedupConfig) -> Deduplicator:
    """An open Deduplicator for this crawler: shared with the other crawlers of this process on
    the same one-per-process index (the first one's settings win)."""
    key = _one_per_process(config)
    if key is None:
        dedup = Deduplicator(config)
        dedup.open()
        return dedup
    with _shared_lock:
        entry = _shared.get(key)
        if entry is None:
            dedup = Deduplicator(config)
            dedup.open()
            entry = _shared[key] = [dedup, 0]
        elif entry[0].config != config:
            logger.warning("crawler-dedup: crawlers of this process share %s; using the first one's settings", key[1])
        entry[1] += 1
        return entry[0]


def release(dedup: Deduplicator) -> None:
    key = _one_per_process(dedup.config)
    with _shared_lock:
        entry = _shared.get(key) if key is not None else None
        if entry is None or entry[0] is not dedup:
            dedup.close()
            return
        entry[1] -= 1
        if entry[1] <= 0 and key is not None:
            del _shared[key]
            dedup.close()
