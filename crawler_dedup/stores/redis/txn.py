"""One transaction on the Redis index (the semantics are stores/base.py's; the design is in this
package's docstring): every key read is WATCHed in the same round trip, writes are buffered (reads
see them) and commit sends them as one script inside MULTI/EXEC, applied only if nothing read
changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..base import MULTI, SINGLE
from .buffer import BufferedTxn
from .conn import _COMMIT, _Conn

if TYPE_CHECKING:
    from .handle import StoreHandle


class _RedisTxn(BufferedTxn):
    def __init__(self, store: "StoreHandle", writing: bool):
        super().__init__(store, writing)
        self.conn = _Conn(store)
        self.watched: set[bytes] = set()
        # what this transaction read from Redis (watched, so still current when it commits)
        self.got_single: dict[tuple[str, bytes], bytes | None] = {}
        self.got_multi: dict[tuple[str, bytes], list[bytes]] = {}
        self.purge: set[tuple[str, bytes]] = set()  # keys a scan met in a key list that Redis expired
        self.sent = False  # the commit went out

    def _run(self, cmds: list[tuple], keys: list[bytes]) -> list[Any]:
        """Read: a writer first watches every key it reads (in the same round trip)."""
        if not cmds:
            return []
        watch = [k for k in dict.fromkeys(keys) if k not in self.watched] if self.writing else []
        out = self.conn.run(cmds, watch)
        self.watched.update(watch)
        return out

    def prefetch(self, single, multi):
        """Read these keys (watched) in one round trip; the reads that follow find them here."""
        single = [(t, bytes(k)) for t, k in dict.fromkeys(single) if (t, bytes(k)) not in self.got_single]
        multi = [(t, bytes(k)) for t, k in dict.fromkeys(multi) if (t, bytes(k)) not in self.got_multi]
        for t, _ in single:
            self._kind(t, SINGLE)
        for t, _ in multi:
            self._kind(t, MULTI)
        names = [self.s.k("s", t, k) for t, k in single] + [self.s.k("m", t, k) for t, k in multi]
        cmds = ([("MGET", *names[:len(single)])] if single else []) + [
            ("ZRANGEBYLEX", n, "-", "+") for n in names[len(single):]]
        replies = self._run(cmds, names)
        for pair, got in zip(single, replies[0] if single else []):
            self.got_single[pair] = None if got is None else bytes(got)
        for pair, got in zip(multi, replies[1:] if single else replies):
            self.got_multi[pair] = [bytes(v) for v in got]

    def _stored_single(self, table: str, keys: list[bytes]) -> dict[bytes, bytes | None]:
        missing = list(dict.fromkeys(k for k in keys if (table, k) not in self.got_single))
        names = [self.s.k("s", table, k) for k in missing]
        for k, got in zip(missing, self._run([("MGET", *names)], names)[0] if missing else []):
            self.got_single[(table, k)] = None if got is None else bytes(got)
        return {k: self.got_single[(table, k)] for k in keys}

    def _stored_multi(self, pairs: list[tuple[str, bytes]]) -> list[list[bytes]]:
        missing = list(dict.fromkeys(p for p in pairs if p not in self.got_multi))
        names = [self.s.k("m", t, k) for t, k in missing]
        for pair, got in zip(missing, self._run([("ZRANGEBYLEX", n, "-", "+") for n in names], names)):
            self.got_multi[pair] = [bytes(v) for v in got]
        return [self.got_multi[p] for p in pairs]

    # -- SINGLE ---------------------------------------------------------------------------
    def get(self, table, key):
        return self.get_many(table, [key])[0]

    def get_many(self, table, keys):
        self._kind(table, SINGLE)
        keys = [bytes(k) for k in keys]
        stored = self._stored_single(table, [k for k in keys if (table, k) not in self.single])
        return [self.single[(table, k)] if (table, k) in self.single else stored[k] for k in keys]

    # -- MULTI ----------------------------------------------------------------------------
    def _merged(self, table: str, key: bytes, stored: list) -> list[bytes]:
        stored_set = set() if (table, key) in self.cleared else {bytes(v) for v in stored}
        added, removed = self.added.get((table, key), set()), self.removed.get((table, key), set())
        return sorted((stored_set - removed) | added)

    def values(self, table, key):
        return self.values_many(table, [key])[0]

    def values_many(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        stored = self._stored_multi([(table, k) for k in keys])
        return [self._merged(table, k, got) for k, got in zip(keys, stored)]

    def value_count(self, table, key):
        return self.value_counts(table, [key])[0]

    def value_counts(self, table, keys):
        self._kind(table, MULTI)
        keys = [bytes(k) for k in keys]
        plain = [k for k in keys if not self._touched(table, k) and (table, k) not in self.got_multi]
        names = [self.s.k("m", table, k) for k in plain]
        counts = dict(zip(plain, self._run([("ZCARD", n) for n in names], names)))
        return [int(counts[k]) if k in counts else len(self.values(table, k)) for k in keys]

    def _pending(self, table: str, key: bytes) -> bool:
        return (table, key) in self.single or self._touched(table, key)

    def _touched(self, table: str, key: bytes) -> bool:
        return (table, key) in self.added or (table, key) in self.removed or (table, key) in self.cleared

    def union_u64(self, tables, keys):
        """Every bucket of a lookup in one round trip."""
        for t in tables:
            self._kind(t, MULTI)
        pairs = [(t, bytes(k)) for t, k in zip(tables, keys)]
        stored = self._stored_multi(pairs)
        raw = b"".join(b"".join(self._merged(t, k, got)) for (t, k), got in zip(pairs, stored))
        return np.frombuffer(raw, dtype=">u8").astype(np.uint64)

    def sequence_peek(self, table, key) -> int | None:
        """How far sequence() went on this counter (None: never used), without moving it."""
        got = self.conn.run([("GET", self.s.k("q", table, bytes(key)))])[0]
        return None if got is None else int(got)

    def sequence(self, table, key, by=1, start=0):
        """INCR outside the transaction: never conflicts, never rolled back (ids may skip; taken in blocks: ids.py)."""
        self._kind(table, SINGLE)
        self._change()
        name = self.s.k("q", table, bytes(key))
        return self.s.ids.next(table, key, by, start, lambda n: int(self.conn.run([("INCRBY", name, n)])[0]) + start)

    # -- both -----------------------------------------------------------------------------
    def _pending_keys(self, table: str) -> set[bytes]:
        keys = {k for (t, k) in self.single if t == table}
        return keys | {k for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table}

    def scan(self, table, start, limit):
        kind = self._kind(table)
        out: list[tuple[bytes, bytes]] = []
        if limit <= 0:
            return out
        order = self.s.k("o", table)
        pending = sorted(k for k in self._pending_keys(table) if k >= bytes(start))
        lo, batch = b"[" + bytes(start), max(limit, 64)
        while True:
            stored = [bytes(k) for k in self._run([("ZRANGEBYLEX", order, lo, "+", "LIMIT", 0, batch)], [order])[0]]
            upto = stored[-1] if len(stored) == batch else None  # keys past this one come in the next round
            keys = sorted(set(stored) | {k for k in pending if upto is None or k <= upto})
            if kind == SINGLE:
                found = dict(zip(keys, self.get_many(table, keys)))
                rows = [(k, v) for k, v in found.items() if v is not None]
            else:
                found = dict(zip(keys, self.values_many(table, keys)))
                rows = [(k, v) for k, vals in found.items() for v in vals]
            if self.writing and self.s.expiring():  # (the keys are watched: one written again fails the commit)
                self.purge |= {(table, k) for k, v in found.items() if not v and not self._pending(table, k)}
            for row in rows:
                out.append(row)
                if len(out) >= limit:
                    return out
            if upto is None:
                return out
            pending = [k for k in pending if k > upto]
            lo = b"(" + upto

    def count(self, table):
        kind = self._kind(table)
        counts = self.s.k("n")
        if self.s.expiring() and table not in self.s.ttl_except:
            base = self._count_live(table, kind)  # the counts still hold what Redis expired on its own
        else:
            base = int(self._run([("HGET", counts, table)], [counts])[0] or 0)
        if kind == SINGLE:
            mine = [(k, v) for (t, k), v in self.single.items() if t == table]
            names = [self.s.k("s", table, k) for k, _ in mine]
            there = self._run([("EXISTS", n) for n in names], names)
            return base + sum((v is not None) - int(e) for (_, v), e in zip(mine, there))
        touched = sorted({k for (t, k) in (*self.added, *self.removed, *self.cleared) if t == table})
        names = [self.s.k("m", table, k) for k in touched]
        stored = self._run([("ZCARD", n) for n in names], names)
        return base + sum(len(self.values(table, k)) - int(n) for k, n in zip(touched, stored))

    def _count_live(self, table: str, kind: str, batch: int = 1000) -> int:
        """Entries of a table whose keys expire, counted key by key (the after-crawl stats)."""
        order, lo, total = self.s.k("o", table), b"-", 0
        op, part = ("EXISTS", "s") if kind == SINGLE else ("ZCARD", "m")
        while True:
            keys = self._run([("ZRANGEBYLEX", order, lo, "+", "LIMIT", 0, batch)], [order])[0]
            names = [self.s.k(part, table, bytes(k)) for k in keys]
            total += sum(int(n) for n in self._run([(op, n) for n in names], names))
            if len(keys) < batch:
                return total
            lo = b"(" + bytes(keys[-1])

    # -- commit ---------------------------------------------------------------------------
    def commit(self) -> bool:
        """Apply the buffer in one script inside MULTI/EXEC; False (nothing applied) when a key
        this transaction read changed since it read it."""
        s = self.s
        keys: list[bytes] = []
        argv: list[Any] = [s.ttl_ms]

        def change(op: str, table: str, key: bytes, name: bytes, value: bytes = b"") -> None:
            keys.extend((name, s.k("o", table), s.k("n")))
            argv.extend((op if s.ttl_ms and table not in s.ttl_except else op.lower(), table, key, value))

        for (t, k), value in self.single.items():
            change("D" if value is None else "S", t, k, s.k("s", t, k), value or b"")
        for t, k in self.cleared:
            change("C", t, k, s.k("m", t, k))
        for (t, k), values in self.removed.items():
            for v in values:
                change("R", t, k, s.k("m", t, k), v)
        for (t, k), values in self.added.items():
            for v in values:
                change("A", t, k, s.k("m", t, k), v)
        for t, k in self.purge - set(self.single) - self.cleared - set(self.added) - set(self.removed):
            change("O", t, k, s.k("o", t))
        if not keys:
            return True
        keys.append(s.k("ttl"))  # keys expire: counts are taken from the keys left (readers check)
        keys.append(s.k("index"))  # there is an index under this prefix (a read-only open checks)
        self.sent = True  # (from here a lost connection may have applied it: store.py does not run it again)
        replies = self.conn.run([("MULTI",), ("EVAL", _COMMIT, len(keys), *keys, *argv), ("EXEC",)])
        self.conn.watching = False  # EXEC ends the watches, run or not
        if replies[-1] is None:
            return False
        for reply in replies[-1]:
            if isinstance(reply, Exception):
                raise reply
        return True

    def close(self) -> None:
        self.conn.close()
