"""How many shards the spread layout's entries are cut into, growing with the index.

Redis packs a small hash (up to 128 fields, values up to 64 bytes: a listpack, about 25 bytes an
entry here) and makes a larger one a hash table (about 65). So the index keeps about
ENTRIES_PER_SHARD entries a shard: it starts with FIRST_SHARDS and doubles when it holds more.

- The count: every commit adds the entries it created to `entries` in the meta hash; a commit
  that finds it past the threshold doubles `shards` and notes the old count as `growing` (one
  script on the meta hash: once, whatever the number of crawlers).
- While growing, a read looks in both levels (an entry is in the new one once written or moved
  there), a write goes to the new one, a removal to both.
- After GRACE_S (every process has read the new count by then: they read it every REFRESH_S),
  commits move the old shards one by one into the new ones (merging a packed list with what was
  written there since, keeping a value written there since), and the one that moves the last
  ends the growth. Shard names carry their level, so two levels never share a key.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .handle import StoreHandle

FIRST_SHARDS = 64  # a new index's shards (a power of two)
ENTRIES_PER_SHARD = 64  # doubled past this many entries a shard
REFRESH_S = 1.0  # a process reads the shard count again this often
GRACE_S = 5.0  # moving starts this long after a doubling (processes have the new count)

SCRIPTS = {
    # KEYS[1] the meta hash; ARGV: entries created, the shard count the caller has, now (ms).
    # The new shard count (doubled when past the threshold and not growing already)
    "grow": """
local n = redis.call('HINCRBY', KEYS[1], 'entries', ARGV[1])
local s = tonumber(redis.call('HGET', KEYS[1], 'shards') or ARGV[2])
if n > s * tonumber(ARGV[4]) and not redis.call('HGET', KEYS[1], 'growing') then
  redis.call('HSET', KEYS[1], 'growing', s, 'shards', s * 2, 'grown_at', ARGV[3], 'moved', 0)
  return s * 2
end
return s
""",
    # KEYS[1] the meta hash; ARGV: the old count. The old shard to move next (0-based), or -1
    "next": """
local g = redis.call('HGET', KEYS[1], 'growing')
if not g or g ~= ARGV[1] then return -1 end
local m = redis.call('HINCRBY', KEYS[1], 'moved', 1)
if m > tonumber(g) then return -1 end
return m - 1
""",
    # KEYS[1] the meta hash; ARGV: the old count. Ends the growth once every old shard moved
    "done": """
if redis.call('HGET', KEYS[1], 'growing') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'growing', 'grown_at', 'moved')
end
return 1
""",
}


class ShardMap:
    """The shard count a process uses, read again every REFRESH_S."""

    def __init__(self, store: "StoreHandle"):
        self.store = store
        self.shards, self.growing, self.grown_at = FIRST_SHARDS, 0, 0
        self.read_at = -1e9

    def levels(self) -> list[int]:
        """The shard counts a read looks in: the current one, and the old one while growing."""
        self.refresh()
        return [self.shards, self.growing] if self.growing else [self.shards]

    def refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self.read_at < REFRESH_S:
            return
        s = self.store
        shards, growing, grown_at = s.nodes.run([(s.meta_key, ("HMGET", s.meta_key, b"shards", b"growing",
                                                                b"grown_at"))])[0]
        self.shards = int(shards) if shards is not None else FIRST_SHARDS
        self.growing = int(growing) if growing is not None else 0
        self.grown_at = int(grown_at) if grown_at is not None else 0
        self.read_at = time.monotonic()

    def grow_command(self, created: int) -> tuple:
        """The command that counts a commit's new entries (and doubles the count when due)."""
        s = self.store
        return s.nodes.script("grow", [s.meta_key], [created, self.shards, int(time.time() * 1000), ENTRIES_PER_SHARD])

    def after_commit(self, reply) -> None:
        if reply is not None and int(reply) != self.shards:
            self.refresh(force=True)

    def moving(self) -> int | None:
        """The old shard this process should move now, if the growth's grace is over."""
        if not self.growing or time.time() * 1000 - self.grown_at < GRACE_S * 1000:
            return None
        s = self.store
        got = int(s.nodes.run([(s.meta_key, s.nodes.script("next", [s.meta_key], [self.growing]))])[0])
        if got < 0:
            self.refresh(force=True)
            return None
        return got

    def finish(self) -> None:
        s = self.store
        s.nodes.run([(s.meta_key, s.nodes.script("done", [s.meta_key], [self.growing]))])
        self.refresh(force=True)
