"""What both Redis layouts' transactions share (txn.py, spread.py): the buffer of writes a
transaction keeps until it commits (its own reads see it), and the checks on tables."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...exceptions import StoreError
from ..base import MULTI, SINGLE, TxnBase

if TYPE_CHECKING:
    from .handle import StoreHandle


class BufferedTxn(TxnBase):
    reads_ahead = True
    def __init__(self, store: "StoreHandle", writing: bool):
        self.s, self.writing = store, writing
        self.single: dict[tuple[str, bytes], bytes | None] = {}  # (table, key) -> value, None = deleted
        self.added: dict[tuple[str, bytes], set[bytes]] = {}
        self.removed: dict[tuple[str, bytes], set[bytes]] = {}
        self.cleared: set[tuple[str, bytes]] = set()  # MULTI keys deleted whole

    def _kind(self, table: str, kind: str | None = None) -> str:
        found = self.s.kinds.get(table)
        if found is None:
            raise StoreError(f"no table {table!r} in the Redis index {self.s.location} (not ensured)")
        if kind is not None and found != kind:
            raise StoreError(f"table {table!r} is {found}, not {kind}")
        return found

    def _change(self) -> None:
        if not self.writing:
            raise StoreError("a read transaction cannot write")

    def put(self, table, key, value):
        self._kind(table, SINGLE)
        self._change()
        self.single[(table, bytes(key))] = bytes(value)

    def delete(self, table, key):
        kind = self._kind(table)
        self._change()
        key = bytes(key)
        if kind == SINGLE:
            self.single[(table, key)] = None
        else:
            self.cleared.add((table, key))
            self.added.pop((table, key), None)
            self.removed.pop((table, key), None)

    def add(self, table, key, value):
        self._kind(table, MULTI)
        self._change()
        key, value = bytes(key), bytes(value)
        self.removed.get((table, key), set()).discard(value)
        self.added.setdefault((table, key), set()).add(value)

    def remove(self, table, key, value):
        self._kind(table, MULTI)
        self._change()
        key, value = bytes(key), bytes(value)
        self.added.get((table, key), set()).discard(value)
        self.removed.setdefault((table, key), set()).add(value)
