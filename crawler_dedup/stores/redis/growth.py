"""How many shards the spread layout's entries are cut into, growing with the index, and the
growth itself, safe against processes killed in the middle of it and against failovers.

Redis packs a small hash (up to 128 fields, values up to 64 bytes: a listpack, about 25 bytes an
entry here) and makes a larger one a hash table (about 65). So the index keeps about
ENTRIES_PER_SHARD entries a shard: it starts with FIRST_SHARDS and doubles when it holds more.

- The count: every commit adds the entries it created to `entries` in the meta hash; a commit
  that finds it past the threshold doubles `shards` and notes the old count as `growing` (one
  script on the meta hash: once, whatever the number of crawlers).
- Moving (while `growing`): a read looks in both levels (an entry is in the new one once written
  or moved there), a write goes to the new one, a removal to the old one first, then the new one.
  After the grace (every process has read the new count by then: they read it every REFRESH_S,
  and a write computed before it has been retried to its end), commits move the old shards one
  at a time into the new ones. Any process can take any shard not moved yet: a shard is handed
  out with a lease (`{P}:gl`), and marked moved (`{P}:gm`, a bit a shard) only once its entries
  are in the new level; a mover killed or cut off leaves the lease to run out, and the shard is
  handed out again. Moving a shard twice is harmless: entries are merged, never replaced.
- Sweeping (`sweeping`, once every shard moved): reads look in the new level only; after the
  grace again (no process reads the old level any more) the old shards are deleted, handed out
  the same way. Until then the old level stays whole, so a reader never misses an entry: it is
  in the old level until the new one has it.
Shard names carry their level, so two levels never share a key.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import xxhash

from ..base import MULTI
from .spread_keys import OWN_KEYS, shard_name, table_code

if TYPE_CHECKING:
    from .handle import StoreHandle

FIRST_SHARDS = 64  # a new index's shards (a power of two)
ENTRIES_PER_SHARD = 64  # doubled past this many entries a shard
REFRESH_S = 1.0  # a process reads the shard count again this often
GRACE_S = 5.0  # a phase starts this long (plus DEDUP_REDIS_RETRY) after the last one: processes caught up
LEASE_S = 20.0  # a shard handed out and not done in this time is handed out again
SHARDS_A_PHASE = 256  # commits a phase (moving, sweeping) takes about, whatever the count: shards a commit grow
MAX_A_COMMIT = 16  # with it, up to this many (one round trip for them all)
TASK_WAIT_S = 2.0  # growth's own steps wait this long through faults (a page's commit does not wait for them)
NOTE_S = 86_400  # a mover's note of what it copies outlives any lease (deleted when the shard is done)

GROWING, SWEEPING = b"growing", b"sweeping"

SCRIPTS = {
    # KEYS[1] the meta hash; ARGV: entries created, the shard count the caller has, now (ms),
    # entries a shard. The new shard count (doubled when past the threshold, and neither moving
    # nor sweeping already: the last phase's end deleted its done bits and leases). One key, so it
    # runs while its slot moves
    "grow": """
if redis.call('HEXISTS', KEYS[1], 'layout') == 0 then return -1 end
local n = redis.call('HINCRBY', KEYS[1], 'entries', ARGV[1])
local s = tonumber(redis.call('HGET', KEYS[1], 'shards') or ARGV[2])
if n > s * tonumber(ARGV[4]) and not redis.call('HGET', KEYS[1], 'growing')
    and not redis.call('HGET', KEYS[1], 'sweeping') then
  redis.call('HSET', KEYS[1], 'growing', s, 'shards', s * 2, 'since', ARGV[3], 'left', s, 'cursor', 0)
  return s * 2
end
return s
""",
    # KEYS: the meta hash, the done bits, the leases; ARGV: the old count the caller works on, now
    # (ms), the lease (ms), the phase. An old shard to work on (0-based), or -1: none now
    "next": """
local g = redis.call('HGET', KEYS[1], ARGV[4])
if not g or g ~= ARGV[1] then return -1 end
g = tonumber(g)
local now = tonumber(ARGV[2])
local c = tonumber(redis.call('HGET', KEYS[1], 'cursor') or 0)
while c < g do
  local i = c
  c = c + 1
  if redis.call('GETBIT', KEYS[2], i) == 0 then
    redis.call('HSET', KEYS[1], 'cursor', c)
    redis.call('HSET', KEYS[3], i, now + tonumber(ARGV[3]))
    return i
  end
end
redis.call('HSET', KEYS[1], 'cursor', c)
local leases = redis.call('HGETALL', KEYS[3])
for j = 1, #leases, 2 do
  if tonumber(leases[j + 1]) < now then
    redis.call('HSET', KEYS[3], leases[j], now + tonumber(ARGV[3]))
    return tonumber(leases[j])
  end
end
return -1
""",
    # KEYS: the meta hash, the done bits, the leases; ARGV: the old count, the shard, the phase,
    # now (ms). Marks the shard done (once); the last one ends the phase: moving turns to
    # sweeping, sweeping to nothing. The shards left (-1: the phase is over already)
    "done": """
if redis.call('HGET', KEYS[1], ARGV[3]) ~= ARGV[1] then return -1 end
redis.call('HDEL', KEYS[3], ARGV[2])
if redis.call('SETBIT', KEYS[2], ARGV[2], 1) == 1 then return tonumber(redis.call('HGET', KEYS[1], 'left')) end
local left = redis.call('HINCRBY', KEYS[1], 'left', -1)
if left <= 0 then
  redis.call('DEL', KEYS[2], KEYS[3])
  if ARGV[3] == 'growing' then
    redis.call('HDEL', KEYS[1], 'growing')
    redis.call('HSET', KEYS[1], 'sweeping', ARGV[1], 'since', ARGV[4], 'left', ARGV[1], 'cursor', 0)
  else
    redis.call('HDEL', KEYS[1], 'sweeping', 'since', 'left', 'cursor')
  end
end
return left
""",
}

# the meta hash's fields that are growth's (left out of a scan of the meta table)
FIELDS = (b"shards", b"growing", b"sweeping", b"since", b"left", b"cursor", b"entries")


class ShardMap:
    """The shard count a process uses, read again every REFRESH_S, and the growth's work."""

    def __init__(self, store: "StoreHandle", retry_s: float = 0.0):
        self.store = store
        self.shards, self.growing, self.sweeping, self.since = FIRST_SHARDS, 0, 0, 0
        self.read_at = -1e9
        self.grace_s = GRACE_S + retry_s  # (a write computed on the old count may be retried this long)

    def keys(self) -> list[bytes]:
        """The keys growth's scripts touch: the meta hash, the done bits, the leases (one slot)."""
        s = self.store
        return [s.meta_key, s.k("gm"), s.k("gl")]

    def levels(self) -> list[int]:
        """The shard counts a read looks in: the current one, and the old one while moving."""
        self.refresh()
        return [self.shards, self.growing] if self.growing else [self.shards]

    def refresh(self, force: bool = False) -> None:
        if not force and time.monotonic() - self.read_at < REFRESH_S:
            return
        s = self.store
        got = s.nodes.run([(s.meta_key, ("HMGET", s.meta_key, b"shards", b"growing", b"sweeping", b"since"))])[0]
        self.learn(got)

    def learn(self, got) -> None:
        """The map from the meta hash's fields shards, growing, sweeping and since."""
        shards, growing, sweeping, since = got
        self.shards = int(shards) if shards is not None else FIRST_SHARDS
        self.growing = int(growing) if growing is not None else 0
        self.sweeping = int(sweeping) if sweeping is not None else 0
        self.since = int(since) if since is not None else 0
        self.read_at = time.monotonic()

    def grow_command(self, created: int) -> tuple:
        """The command that counts a commit's new entries (and doubles the count when due): not
        idempotent, so sent once (nodes.py): a lost reply loses a count, never adds one twice."""
        s = self.store
        return s.nodes.script("grow", [s.meta_key], [created, self.shards, int(time.time() * 1000), ENTRIES_PER_SHARD])

    def after_commit(self, reply) -> None:
        if isinstance(reply, int) and reply != self.shards:
            self.refresh(force=True)

    def task(self) -> tuple[bytes, int, list[int]] | None:
        """(phase, old count, shards) this process should work on now, once a phase's grace is
        over: a few shards a commit, more for a bigger index (a phase takes about SHARDS_A_PHASE
        commits, so the old level's memory is given back soon)."""
        phase, old = (GROWING, self.growing) if self.growing else (SWEEPING, self.sweeping)
        # (moving waits for writes computed on the old count, retried to their end; sweeping only
        # for every process to have read that moving is over: the new level holds every entry)
        grace = self.grace_s if phase == GROWING else GRACE_S
        if not old or time.time() * 1000 - self.since < grace * 1000:
            return None
        s = self.store
        now = int(time.time() * 1000)
        take = max(1, min(MAX_A_COMMIT, old // SHARDS_A_PHASE))
        command = s.nodes.script("next", self.keys(), [old, now, int(LEASE_S * 1000), phase])
        # (three keys of one slot: while that slot is half moved, TRYAGAIN; growth waits, pages not)
        got = s.nodes.run([(s.meta_key, command)] * take, wait=TASK_WAIT_S)
        shards = sorted({g for g in got if isinstance(g, int) and g >= 0})
        if not shards:
            self.refresh(force=True)
            return None
        return phase, old, shards

    def done(self, phase: bytes, old: int, shards: list[int]) -> None:
        """The shards' work is done (their entries in the new level, or their old keys deleted)."""
        s = self.store
        now = int(time.time() * 1000)
        left = s.nodes.run([(s.meta_key, s.nodes.script("done", self.keys(), [old, shard, phase, now]))
                            for shard in shards], wait=TASK_WAIT_S)
        if any(isinstance(n, int) and n <= 0 for n in left):
            self.refresh(force=True)


def _read(store: "StoreHandle", names: list[bytes]) -> list[dict[bytes, bytes]]:
    out = []
    for stored in store.nodes.run([(n, ("HGETALL", n)) for n in names], wait=TASK_WAIT_S):
        pairs = stored.items() if isinstance(stored, dict) else zip(stored[::2], stored[1::2])
        out.append({bytes(f): bytes(v) for f, v in pairs})
    return out


def move(store: "StoreHandle", names: list[bytes], pexpire: int) -> None:
    """Put an old shard's entries (`names`: its keys, a family and generation each) into the new
    level: a packed list merged with what was written there since, a value kept if one was
    written there since; then read the old shard again and take back from the new level what was
    removed meanwhile (a removal reaches the old level first). The old shard stays until the
    sweep. What is copied is noted first (a key beside each shard, `note_name`): a mover killed
    between the copy and the taking back leaves its lease to run out, and the one that takes the
    shard over takes back what the note holds and the old level no longer does, so a removed entry
    never comes back. `pexpire`: the TTL of a generation's keys (DEDUP_WINDOW), or 0."""
    s, count = store, store.map.shards
    kinds = {table_code(t): k for t, k in s.kinds.items() if t not in OWN_KEYS and t != "meta"}
    notes = [note_name(s.prefix_b, n) for n in names]
    earlier = _read(s, notes)  # (what a mover before this one may have copied)
    before = _read(s, names)

    def target(name: bytes, f: bytes) -> bytes:
        gen = name[len(s.prefix_b) + 2:].split(b":")[0]  # (the family and generation marks)
        return shard_name(s.prefix_b, gen, count, xxhash.xxh64_intdigest(f) % count)

    noted = [_merged(kinds, old, new) for old, new in zip(earlier, before)]
    batch: list[tuple[bytes, tuple]] = []
    for note, fields in zip(notes, noted):
        if fields:
            batch += [(note, ("HSET", note, *[x for f, v in fields.items() for x in (f, v)])),
                      (note, ("EXPIRE", note, NOTE_S))]
    for name, fields in zip(names, before):
        for f, v in fields.items():
            to = target(name, f)
            if kinds.get(f[:2]) == MULTI:
                values = [v[i:i + 8] for i in range(0, len(v), 8)]
                batch.append((to, s.nodes.script("packed", [to], [f, pexpire, len(values), *values])))
            else:
                batch.append((to, ("HSETNX", to, f, v)))
                if pexpire:
                    batch.append((to, ("PEXPIRE", to, pexpire)))
    if not batch:
        return
    s.nodes.run(batch, wait=TASK_WAIT_S)
    undo: list[tuple[bytes, tuple]] = []
    for name, fields, read, now in zip(names, noted, before, _read(s, names)):
        for f, v in fields.items():
            to = target(name, f)
            if kinds.get(f[:2]) == MULTI:
                kept = now.get(f, b"")
                gone = sorted({v[i:i + 8] for i in range(0, len(v), 8)} - {kept[i:i + 8] for i in range(0, len(kept), 8)})
                if gone:
                    undo.append((to, s.nodes.script("packed", [to], [f, 0, 0, *gone])))
            elif f not in now:
                for value in {v, read.get(f, v)}:  # (as noted, and as this mover copied it)
                    undo.append((to, s.nodes.script("hdel_if", [to], [f, value])))
    if undo:
        s.nodes.run(undo, wait=TASK_WAIT_S)
    s.nodes.run([(note, ("DEL", note)) for note in notes], wait=TASK_WAIT_S)


def note_name(prefix: bytes, shard: bytes) -> bytes:
    """Where a mover notes what it copies of an old shard (never under `:h`, which the shards' scans list)."""
    return prefix + b":gn" + shard[len(prefix) + 2:]


def _merged(kinds: dict[bytes, str], old: dict[bytes, bytes], new: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """Two reads of a shard as one note: a packed list's values of both, a value as first noted."""
    out = dict(old)
    for f, v in new.items():
        if f not in out:
            out[f] = v
        elif kinds.get(f[:2]) == MULTI:
            both = {out[f][i:i + 8] for i in range(0, len(out[f]), 8)} | {v[i:i + 8] for i in range(0, len(v), 8)}
            out[f] = b"".join(sorted(both))
    return out
