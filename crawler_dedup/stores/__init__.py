"""Index stores: `memory`, `lmdb`, or any class with the `base.Store` contract (dotted path)."""

from __future__ import annotations

import importlib
from typing import Any

from ..exceptions import ConfigError
from .lmdb import LmdbStore
from .memory import MemoryStore

BUILTIN: dict[str, Any] = {"lmdb": LmdbStore, "memory": MemoryStore}


def make_store(config, readonly: bool = False):
    """The store DEDUP_BACKEND names, built by its from_config(config, readonly)."""
    if config.backend in BUILTIN:
        return BUILTIN[config.backend].from_config(config, readonly=readonly)
    if config.backend == "redis":
        try:
            from .redis import RedisStore

            return RedisStore.from_config(config, readonly=readonly)  # (imports redis-py: lazily, here)
        except ModuleNotFoundError as exc:
            if exc.name != "redis":
                raise
            raise ConfigError("DEDUP_BACKEND", "redis", f"lmdb or memory: redis needs `pip install crawler-dedup[redis]` ({exc})") from None
    try:
        module, _, name = config.backend.rpartition(".")
        cls = getattr(importlib.import_module(module), name)  # (no Scrapy here: the core runs without it)
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        raise ConfigError("DEDUP_BACKEND", config.backend, f"lmdb, memory or an importable store class ({exc})") from None
    return cls.from_config(config, readonly=readonly)


__all__ = ["LmdbStore", "MemoryStore", "make_store"]
