"""The spread layout of a Redis index: the keys hash to every slot of a cluster, so its nodes share
the index and its load (the one-slot layout of txn.py puts it all on one node).

- A kept page's record: its own string, `P:d:<doc id>`.
- Every other table: fields of the shards, `P:h<generation>:<count>:<shard>` hashes (spread_keys.py
  names the keys and holds the scripts), one family for all tables (a field is the
  table's 2-byte code and the entry's key; its value a SINGLE table's value, or a MULTI table's
  values packed as sorted 8-byte strings), the shard from the field's hash. A shard holds the
  entries of every table, so even a small index has enough of them a hash for Redis to pack it
  (a listpack, a few bytes an entry over its own); the shards double as the index grows, so
  they stay that small (growth.py).
- The meta table, the counters and the claims: `{P}:m`, one hash.

There are no transactions across slots: a write is applied when the transaction ends, key by key
(each key's change is atomic: a packed list is changed by a script). So `serializable` is False
and the Deduplicator keeps a duplicate group once by claims instead (core/decide/claims.py):
a filed page takes an order from one counter (`claim`, atomic with its record in `{P}:m`),
then reads its lookups again; of two near-duplicates filed at once the later one always sees
the earlier, and withdraws. A commit is noted in a write journal first (journal.py), so one cut off half-way
is applied whole later. Reads are batched a round trip a node (nodes.py). No table is kept
in key order (`ordered` is False): a scan lists a table with SCAN (the after-crawl tools only),
and DEDUP_WINDOW is left to the keys' expiry.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash

from ...exceptions import StoreError
from ..base import MULTI, SINGLE, u64
from .buffer import BufferedTxn
from .growth import GROWING, TASK_WAIT_S, move
from .journal import encode
from .spread_claims import SpreadClaims
from .spread_keys import (FAMILIES, GENERATIONS, MAX_GENERATIONS, OWN_KEYS, PACKABLE, STORE_FIELDS, escape, family,
                          generation_ms, generation_ttl, shard_name, table_code)

if TYPE_CHECKING:
    from .handle import StoreHandle

class SpreadTxn(SpreadClaims, BufferedTxn):
    """A transaction of the spread layout: reads batched per node, writes applied at commit."""

    def __init__(self, store: "StoreHandle", writing: bool, replay: bool = False):
        super().__init__(store, writing)
        self.replay = replay  # (a journal applied: no page's filing)
        # the claims' count before this transaction's first read (its pages may claim quietly)
        self.count_before = store.last_count.get(threading.get_ident())
        self.got: dict[tuple[str, bytes], Any] = {}  # what was read: bytes | None, or a MULTI key's values
        self.listed: dict[str, list[tuple[bytes, bytes]]] = {}  # a table's every entry, once a scan asked
        self.held: dict[tuple[str, bytes], list[int]] = {}  # a SINGLE key read: the places holding a value
        self._shard_levels: list[int] | None = None
        self._heads_memo: dict[str, tuple[list[int], bytes, list[tuple[int, bytes]]]] = {}
        self.applied: set[tuple[str, bytes]] = set()  # SINGLE changes applied before the commit (commit_one)
        self.claimed = False  # a second look's transaction
        self.quiet = False  # a claim that confirmed at once (spread_claims.py)

    # -- keys -------------------------------------------------------------------------------
    def _where(self, table: str, key: bytes) -> tuple[bytes, bytes | None]:
        """(Redis key, hash field or None for a string) where a write goes."""
        return self._places(table, key)[0]

    def _places(self, table: str, key: bytes, level: int | None = None) -> list[tuple[bytes, bytes | None]]:
        """Where an entry may be, newest first: with DEDUP_WINDOW an entry lies in the shard of the
        generation it was written in (a generation is half a window; its keys expire whole), and
        a read looks in the last GENERATIONS; while the shards grow, in both levels (`level`: the
        places in one of them only)."""
        s = self.s
        current = level is None or level == self._levels()[0]
        own = (s.prefix_b + OWN_KEYS[table] + key, None) if table in OWN_KEYS else None
        if own is not None and table not in PACKABLE:
            return [own] if current else []
        if table == "meta":
            return [(s.meta_key, key)] if current else []
        code, heads = self._heads(table)
        field = code + key
        h = xxhash.xxh64_intdigest(field)
        shards: list[tuple[bytes, bytes | None]] = [
            (head + (h % count).to_bytes(4, "big"), field)
            for count, head in heads if level is None or count == level]
        if own is None or not current:
            return shards
        # (a fetch entry: written where the crawl keeps it, read in both places)
        return [own, *shards] if s.fetch_copies else [*shards, own]

    def _heads(self, table: str) -> tuple[bytes, list[tuple[int, bytes]]]:
        """A table's field code and its shards' names but their numbers, (count, head) for each
        level and generation in order: a page asks ~100 entries' places, of a dozen tables."""
        levels = self._levels()
        memo = self._heads_memo
        got = memo.get(table)
        if got is None or got[0] is not levels:  # (a claim reads the shard map again)
            fam, prefix = family(table), self.s.prefix_b
            heads = [(count, shard_name(prefix, fam + gen, count, 0)[:-4])
                     for count in levels for gen in self._generations(table)]
            got = memo[table] = (levels, table_code(table), heads)
        return got[1], got[2]

    def _levels(self) -> list[int]:
        if self._shard_levels is None:  # (one map a transaction: its reads and writes agree)
            self._shard_levels = self.s.map.levels()
        return self._shard_levels

    def _generations(self, table: str) -> list[bytes]:
        """The generations an entry may be in, where writes go first: with DEDUP_WINDOW the newest
        of those covering a window and a half, else the keys without one. An index written both
        with and without a window (the setting changed between crawls) is read in both: the
        generations' length is the index's (the meta hash's `gen`), whatever the window now."""
        s = self.s
        if table in s.ttl_except or not (s.ttl_ms or s.generation):  # ("*": every table but meta)
            return [b""]
        if not hasattr(self, "_gens"):
            length = s.generation or generation_ms(s.ttl_ms)
            span = max(GENERATIONS, -(-3 * s.ttl_ms // 4 // length)) if s.ttl_ms else GENERATIONS + 1
            now = int(time.time() * 1000) // length
            gens = [str(now - i).encode() for i in range(min(span, MAX_GENERATIONS))]
            self._gens = [*gens, b""] if s.ttl_ms else [b"", *gens]
        return self._gens

    # -- reads ------------------------------------------------------------------------------
    def _fetch(self, pairs: list[tuple[str, bytes]]) -> None:
        """Read the entries not read yet, a round trip a node."""
        got = self.got
        todo = [p for p in dict.fromkeys(pairs) if p not in got]
        if not todo:
            return
        places, spans = [], []
        for table, key in todo:
            mine = self._places(table, key)
            spans.append(len(mine))
            places += mine
        replies = self.s.nodes.read(places)
        kinds, at = self.s.kinds, 0
        for pair, span in zip(todo, spans):
            raws = [r if r is None or type(r) is bytes else bytes(r) for r in replies[at:at + span]]
            at += span
            if kinds[pair[0]] == MULTI:  # every generation's values (a place's are distinct: no set for one)
                values = [raw[i:i + 8] for raw in raws if raw for i in range(0, len(raw), 8)]
                got[pair] = sorted(set(values) if span > 1 else values)
            else:  # the newest generation's value (and where any value lies: a put clears the others)
                got[pair] = next((raw for raw in raws if raw is not None), None)
                self.held[pair] = [i for i, raw in enumerate(raws) if raw is not None]

    def prefetch(self, single, multi):
        self._fetch([(t, bytes(k)) for t, k in single] + [(t, bytes(k)) for t, k in multi])

    def get(self, table, key):
        return self.get_many(table, [key])[0]

    def get_many(self, table, keys):
        self._kind(table, SINGLE)
        keys = [bytes(k) for k in keys]
        self._read((table, k) for k in keys)
        self._fetch([(table, k) for k in keys if (table, k) not in self.single])
        return [self.single[(table, k)] if (table, k) in self.single else self.got[(table, k)] for k in keys]

    def _merged(self, table: str, key: bytes) -> list[bytes]:
        pair = (table, key)
        if pair not in self.added and pair not in self.removed and pair not in self.cleared:  # (most reads)
            return list(self.got.get(pair) or ())
        stored = set() if pair in self.cleared else set(self.got.get(pair) or [])
        return sorted((stored - self.removed.get(pair, set())) | self.added.get(pair, set()))

    def _seen(self, pair: tuple[str, bytes]) -> Any:
        """An entry's value as this transaction leaves it (as a read of it after the commit gives it)."""
        if self.s.kinds[pair[0]] == MULTI:
            return self._merged(*pair)
        return self.single[pair] if pair in self.single else self.got.get(pair)

    def values(self, table, key):
        return self.values_many(table, [key])[0]

    def values_many(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        self._read((table, k) for k in keys)
        self._fetch([(table, k) for k in keys if (table, k) not in self.cleared])
        return [self._merged(table, k) for k in keys]

    def value_count(self, table, key):
        return len(self.values(table, key))

    def value_counts(self, table, keys):
        return [len(v) for v in self.values_many(table, keys)]

    def union_u64(self, tables, keys):
        for t in tables:
            self._kind(t, MULTI)
        pairs = [(t, bytes(k)) for t, k in zip(tables, keys)]
        self._read(pairs)
        self._fetch([p for p in pairs if p not in self.cleared])
        raw = b"".join(b"".join(self._merged(t, k)) for t, k in pairs)
        return np.frombuffer(raw, dtype=">u8").astype(np.uint64)

    # -- counters (changed at once; the buffered writes are buffer.py's) ---------------------
    def incr(self, table, key, by=1, start=0):
        """A counter, changed at once (outside the buffer, never rolled back): atomic on its key."""
        self._kind(table, SINGLE)
        self._change()
        key = bytes(key)
        if (table, key) in self.single:  # (put in this transaction: applied first, then counted)
            self.commit_one(table, key)
        name, field = self._where(table, key)
        must = b"layout" if name == self.s.meta_key else b""  # (a lost meta hash never counts again from 0)
        value = int(self.s.nodes.run([(name, self.s.nodes.script("incr", [name], [field or b"", by, start, must]))])[0])
        self.got[(table, key)] = u64(value)
        return value

    def sequence(self, table, key, by=1, start=0):
        return self.s.ids.next(table, key, by, start, lambda n: self.incr(table, key, n, start))

    # -- scans (the after-crawl tools: every entry of a table, listed once) -------------------
    def _listing(self, table: str) -> list[tuple[bytes, bytes]]:
        if table in self.listed:
            return self.listed[table]
        s = self.s
        if table == "meta":
            stored = s.client.hgetall(s.meta_key) if not s.cluster else \
                s.client.get_redis_connection(s.nodes.node_of(s.meta_key)).hgetall(s.meta_key)
            rows = sorted((bytes(k), bytes(v)) for k, v in stored.items()
                          if bytes(k) not in STORE_FIELDS and not bytes(k).startswith(b"\x00"))
        else:
            rows = []
            for own in ([True, False] if table in PACKABLE else [table in OWN_KEYS]):
                rows += self._list_keys(table, own)
            if s.kinds.get(table) == SINGLE:  # (one key in two generations or two places: one)
                rows = list({k: v for k, v in sorted(rows, key=lambda r: r[0])}.items())
            rows.sort()
        if self.s.kinds.get(table) == MULTI:
            rows = [(k, v[i:i + 8]) for k, v in rows for i in range(0, len(v), 8)]
        self.listed[table] = rows
        return rows

    def _list_keys(self, table: str, own: bool) -> list[tuple[bytes, bytes]]:
        """A table's entries in keys of their own, or in the shards."""
        s = self.s
        base = s.prefix_b + (OWN_KEYS[table] if own else b":h")
        code = table_code(table)
        names = self._keys(escape(base) + b"*")
        rows = []
        for i in range(0, len(names), 500):
            chunk = names[i:i + 500]
            cmd = (lambda n: ("GET", n)) if own else (lambda n: ("HGETALL", n))
            for name, reply in zip(chunk, s.nodes.run([(n, cmd(n)) for n in chunk])):
                if reply is None:
                    continue
                if own:
                    rows.append((name[len(base):], bytes(reply)))
                else:
                    pairs = reply.items() if isinstance(reply, dict) else zip(reply[::2], reply[1::2])
                    rows += [(bytes(f)[2:], bytes(v)) for f, v in pairs if bytes(f)[:2] == code]
        return rows

    def _keys(self, pattern: bytes) -> list[bytes]:
        s, out = self.s, []
        for node in (s.nodes.primaries() if s.cluster else [None]):
            client = s.client.get_redis_connection(node) if node is not None else s.client
            out += [bytes(k) for k in client.scan_iter(match=pattern, count=1000)]
        return sorted(set(out))

    def _rows(self, table: str) -> list[tuple[bytes, bytes]]:
        """The stored rows of a table with this transaction's changes."""
        kind, rows = self._kind(table), self._listing(table)
        touched = ({k for (t, k) in self.single if t == table} if kind == SINGLE
                   else {k for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table})
        if not touched:
            return rows
        kept = [(k, v) for k, v in rows if k not in touched]
        if kind == SINGLE:
            mine = [(k, v) for (t, k), v in self.single.items() if t == table and v is not None]
        else:
            for k in touched:
                self.got.setdefault((table, k), [v for key, v in rows if key == k])
            mine = [(k, v) for k in touched for v in self._merged(table, k)]
        return sorted(kept + mine)

    def scan(self, table, start, limit):
        if limit <= 0:
            return []
        import bisect

        rows = self._rows(table)
        at = bisect.bisect_left(rows, (bytes(start), b""))
        return rows[at:at + limit]

    def count(self, table):
        rows = self._rows(table)
        return len(rows) if self._kind(table) == MULTI else len({k for k, _ in rows})

    def commit_one(self, table: str, key: bytes) -> None:
        """Apply one buffered SINGLE change now (before a counter on the same key)."""
        value = self.single.pop((table, key))
        self.s.nodes.run(self._single_change(table, key, value))
        self.got[(table, key)] = value
        self.applied.add((table, key))  # (written: noted with the filing's claims)

    def _single_change(self, table: str, key: bytes, value: bytes | None) -> list[tuple[bytes, tuple]]:
        """The commands that put (or with None delete, in every generation) a SINGLE entry."""
        s, ttl = self.s, self.s.ttl_ms
        expire = ttl and table not in s.ttl_except
        places = self._places(table, key)
        name, field = places[0]
        if value is None:  # (out of every place it may be in)
            return [(n, ("DEL", n) if f is None else ("HDEL", n, f)) for n, f in places]
        # one value a key: out of the other places it was read in (or, not read, may be in: a
        # window or a copy setting changed between crawls), so no reader meets an older one
        held = self.held.get((table, key), range(1, len(places)))
        out: list[tuple[bytes, tuple]] = [(n, ("DEL", n) if f is None else ("HDEL", n, f))
                                          for i, (n, f) in enumerate(places) if i and i in held]
        if field is None:
            return out + [(name, ("SET", name, value, "PX", ttl) if expire else ("SET", name, value))]
        out.append((name, ("HSET", name, field, value)))
        if expire:
            out.append((name, ("PEXPIRE", name, generation_ttl(ttl))))
        return out

    # -- commit -----------------------------------------------------------------------------
    def commit(self) -> bool:
        """Apply the buffer, key by key (each change atomic on its key); always True. While the
        shards grow, removals go to the old level first, then the new one (growth.py: a shard
        being moved takes back what was removed meanwhile)."""
        s, ttl = self.s, self.s.ttl_ms
        self.remember_confirmed()
        blob = encode(self)
        if blob is not None:  # (noted first: a commit cut off half-way is finished from it, journal.py)
            if not self.claimed and not self.replay:  # (a filing: its pages' second looks read all this
                # again, claim(), and tell whether any of it changed meanwhile)
                s.filings.filed(self)
            s.journal.begin(blob)
        levels = self._levels()
        if len(levels) > 1:
            first = self._removals(levels[1])
            if first:
                s.nodes.run(first)
        batch: list[tuple[bytes, tuple]] = []
        for (table, key), value in self.single.items():
            batch += self._single_change(table, key, value)
        for table, key in self.cleared:
            batch += [(n, ("HDEL", n, f)) for n, f in self._places(table, key, levels[0])]
        fresh: list[tuple[bytes, Any, list[bytes], int]] = []  # new keys: created whole, if still new
        scripted: list[tuple[bytes, Any, list[bytes], list[bytes], int]] = []
        for pair in {*self.added, *self.removed}:
            table, key = pair
            adds, removes = sorted(self.added.get(pair, ())), sorted(self.removed.get(pair, ()))
            if not adds and not removes:
                continue
            places = self._places(table, key, levels[0])
            (name, field), older = places[0], places[1:]
            pexpire = generation_ttl(ttl) if ttl and table not in s.ttl_except else 0
            if adds and not removes and self.got.get(pair) == [] and pair not in self.cleared:
                fresh.append((name, field, adds, pexpire))  # read as absent: most new entries
            else:
                scripted.append((name, field, adds, removes, pexpire))
                scripted += [(n, f, [], removes, 0) for n, f in older if removes]  # (out of every generation)
        if s.nodes.scripted_ok():  # (Redis 7: every change in one command a node, one round trip)
            self._write_at_once(batch, fresh, scripted)
        else:
            self._write_in_two(batch, fresh, scripted)
        if blob is not None:
            s.journal.end()
        self._grow_step()
        return True

    def _write_at_once(self, batch: list, fresh: list, scripted: list) -> None:
        """The changes in one round trip (nodes.py `write`), the new entries counted beside them:
        an entry another crawler created at the same moment is counted by both (the shards double
        a little early), a count is never lost for waiting."""
        s = self.s
        ops = batch + [(n, ("NXPACKED", n, f, p, len(v), *v)) for n, f, v, p in fresh]
        ops += [(n, ("PACKED", n, f, p, len(a), *a, *r)) for n, f, a, r, p in scripted]
        new = len(fresh) + self._new_singles()
        grow = [(s.meta_key, s.map.grow_command(new))] if new else []
        replies = s.nodes.write(ops, grow)
        if grow:
            s.map.after_commit(replies[-1])

    def _new_singles(self) -> int:
        return sum(1 for (t, k), v in self.single.items() if v is not None and self._places(t, k)[0][1] is not None)

    def _write_in_two(self, batch: list, fresh: list, scripted: list) -> None:
        """The changes in two round trips (Redis 6): the entries first created, then the lists merged."""
        s = self.s
        # a key read as absent is created with HSETNX (a script costs Redis more memory and time);
        # one another crawler created meanwhile is merged by the script, as every other change is
        created = s.nodes.run(batch + [(n, ("HSETNX", n, f, b"".join(v))) for n, f, v, _ in fresh])[len(batch):]
        follow: list[tuple[bytes, tuple]] = []
        for (name, field, adds, pexpire), made in zip(fresh, created):
            if not made:
                scripted.append((name, field, adds, [], pexpire))
            elif pexpire:
                follow.append((name, ("PEXPIRE", name, pexpire)))
        follow += [(n, s.nodes.script("packed", [n], [f, p, len(a), *a, *r])) for n, f, a, r, p in scripted]
        new = sum(map(bool, created)) + self._new_singles()  # (entries of the shards)
        if new:  # (counted, so the shards double with the index: growth.py; sent once)
            follow.append((s.meta_key, s.map.grow_command(new)))
        if follow:
            replies = s.nodes.run(follow, once=[len(follow) - 1] if new else [])
            if new:
                s.map.after_commit(replies[-1])

    def _grow_step(self) -> None:
        """A few shards of a growth phase moved (or swept) by this commit, when one is due (growth.py)."""
        s = self.s
        try:
            task = s.map.task()
            if task is not None:
                phase, old_count, shards = task
                names = [shard_name(s.prefix_b, fam + g, old_count, shard) for shard in shards for fam in FAMILIES
                         for g in self._generations("*")]
                if phase == GROWING:
                    move(s, names, generation_ttl(s.ttl_ms) if s.ttl_ms else 0)
                else:  # (swept: read by no process any more)
                    s.nodes.run([(n, ("DEL", n)) for n in names], wait=TASK_WAIT_S)
                s.map.done(phase, old_count, shards)
        except StoreError:
            pass  # (the page is filed; the shard's lease runs out and another commit does it)

    def _removals(self, level: int) -> list[tuple[bytes, tuple]]:
        """This transaction's removals in the old level (while the shards grow)."""
        s = self.s
        out: list[tuple[bytes, tuple]] = []
        for (table, key), value in self.single.items():
            if value is None and table != "meta":
                out += [(n, ("HDEL", n, f)) for n, f in self._places(table, key, level)]
        for table, key in self.cleared:
            out += [(n, ("HDEL", n, f)) for n, f in self._places(table, key, level)]
        for (table, key), values in self.removed.items():
            if values:
                out += [(n, s.nodes.script("packed", [n], [f, 0, 0, *sorted(values)]))
                        for n, f in self._places(table, key, level)]
        return out

    def close(self) -> None:
        pass


__all__ = ["SpreadTxn"]
