"""The one way the after-crawl tools and the CLI open an index."""

from __future__ import annotations

from ..config import DedupConfig, mask_password
from ..core.index.neardup import NearDupIndex
from ..stores import make_store


def is_lmdb(settings: dict | None) -> bool:
    """The settings leave DEDUP_BACKEND at LMDB (whose index is a DEDUP_DIR with data.mdb)."""
    return str((settings or {}).get("DEDUP_BACKEND") or "lmdb").strip() == "lmdb"


def index_name(dir_: str, settings: dict | None) -> str:
    """How messages name the index: `the index DIR`, or `the Redis index URL (prefix P)`."""
    if str((settings or {}).get("DEDUP_BACKEND") or "lmdb").strip() != "redis":
        return f"the index {dir_}"
    config = DedupConfig.from_settings(settings or {})
    return f"the Redis index {mask_password(config.redis_url)} (prefix {config.redis_prefix})"


def open_index(dir_: str, readonly: bool = True, settings: dict | None = None) -> NearDupIndex:
    """The index at `dir_` in the store the settings name (DEDUP_BACKEND, LMDB by default), with
    the plan and k stored in it. readonly: nothing is created, written or migrated (a crawl may
    be using it). Raises StoreError / StoreFormat (DedupError) when it cannot be used."""
    config = DedupConfig.from_settings(settings or {}, dir=dir_, lmdb_map_size=1 << 20)
    return NearDupIndex.open(make_store(config, readonly=readonly))
