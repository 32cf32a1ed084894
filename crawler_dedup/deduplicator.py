"""The package's Deduplicator: the core's, with the store DEDUP_BACKEND names built for it.

The core (core/dedup.py) is handed a store and imports none; this is where a store is chosen
from the settings (stores.make_store), so `from crawler_dedup import Deduplicator` works as is.
"""

from __future__ import annotations

from .core.dedup import Deduplicator as _CoreDeduplicator
from .stores import make_store


class Deduplicator(_CoreDeduplicator):
    """Owns the index; one per process. Use as a context manager or call open()/close().
    Without `store=`, opens the store the settings name (DEDUP_BACKEND: lmdb in DEDUP_DIR by default)."""

    def make_store(self):
        return make_store(self.config)


__all__ = ["Deduplicator"]
