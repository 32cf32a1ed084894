"""Doc ids a crawler process takes from the index's counter in blocks: one INCRBY for BLOCK pages
filed instead of one round trip each. Ids stay unique (each block is a counter range of its own)
and increase within a process; a process that ends or is killed skips the rest of its block
(ids may skip: stores/base.py `sequence`). The counter stays past every id handed out, which
`index verify` checks."""

from __future__ import annotations

import threading
from typing import Callable

BLOCK = 16  # ids taken at once: a process idle at its end leaves at most this many unused


class IdBlocks:
    """The process's current block of each counter (the store object is shared by its threads)."""

    def __init__(self, block: int = BLOCK):
        self.block = block
        self._lock = threading.Lock()
        self._left: dict[tuple, list[int]] = {}  # (table, key, by, start) -> [next value, last value]

    def clear(self) -> None:
        """Forget the blocks (a failover may have rolled the counter back past them; closed)."""
        with self._lock:
            self._left.clear()

    def next(self, table: str, key: bytes, by: int, start: int, incr: Callable[[int], int]) -> int:
        """The next value of the counter, as sequence(table, key, by, start) would return it;
        `incr(n)` adds n to the store's counter (start when absent) and returns its new value."""
        name = (table, bytes(key), by, start)
        with self._lock:
            left = self._left.get(name)
            if left is None or left[0] > left[1]:
                top = incr(by * self.block)
                left = self._left[name] = [top - by * (self.block - 1), top]
            value = left[0]
            left[0] += by
            return value
