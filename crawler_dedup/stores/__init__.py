"""Index stores: `memory`, `lmdb`, or any class with the `base.Store` contract (dotted path)."""

from __future__ import annotations

from scrapy.utils.misc import load_object

from ..exceptions import ConfigError
from .lmdb import LmdbStore
from .memory import MemoryStore

BUILTIN = {"lmdb": LmdbStore, "memory": MemoryStore}


def make_store(config):
    if config.backend in BUILTIN:
        return BUILTIN[config.backend].from_config(config)
    try:
        cls = load_object(config.backend)
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        raise ConfigError("DEDUP_BACKEND", config.backend, f"lmdb, memory or an importable store class ({exc})") from None
    return cls.from_config(config)


__all__ = ["LmdbStore", "MemoryStore", "make_store"]
