"""Errors raised by crawler-dedup."""

from scrapy.exceptions import DropItem


class DedupError(Exception):
    """Base class of crawler-dedup's own errors."""


class ConfigError(DedupError):
    """A DEDUP_* setting has a value that is not allowed."""

    def __init__(self, setting: str, value, allowed: str, unknown: bool = False):
        self.setting, self.value, self.allowed = setting, value, allowed
        super().__init__(f"{setting} is not a known setting: {allowed}" if unknown
                         else f"{setting}={value!r} is not allowed: {allowed}")


class StoreError(DedupError):
    """The index store cannot be opened, read or written."""


class StoreDamaged(StoreError):
    """The store's file is damaged or not an index (`crawler-dedup index verify|rebuild`)."""


class StoreFull(StoreError):
    """The store cannot grow any more."""


class StoreFormat(StoreError):
    """The store on disk has another format version or another plan."""


class DuplicateItem(DropItem):
    """An item pipeline drop: the item is a near-duplicate of a kept page."""
