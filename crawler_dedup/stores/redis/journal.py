"""The spread layout's write journal: what a commit will change, written before it changes anything.

A spread commit has no transaction across nodes: it is applied in round trips (spread.py), so a
crawler SIGKILLed between them, or whose commit failed half-way (a node restarting past
DEDUP_REDIS_RETRY), left a page half filed (a record the tables do not lead to: its copies kept)
or half removed (entries, or a URL, naming a record that is gone). Each commit therefore first
writes its buffer to a key of its own, `P:j:<token>` (one a committing thread), and deletes it
once its last round trip returned. A journal left behind is finished, as a commit of the same
buffer: by the thread itself before its next write (its commit failed), or by a crawler that
finds the writer gone (this host, pid namespace and pid dead, or its beat older than `lease`):
each looks at open, then every BEAT_S. Each change is idempotent (a put, a delete, a packed-set
add or remove), so a journal finished twice at once does no harm; finished long after, its puts
may undo what others wrote since to the same keys (a kill after the commit's last round trip and
before its journal's deletion leaves a journal of a commit applied whole: within a decision the
deletion rides on the next round trip, `deferring`, and is sent at the decision's end if still due).

The journals are listed in the meta hash, a field `\\x00j<token>` each (host, pid namespace, pid, beat), the
beat renewed with a commit at most every BEAT_S.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import struct
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from ...exceptions import StoreError
from ..base import pid_gone
from .spread_keys import escape

if TYPE_CHECKING:
    from .buffer import BufferedTxn
    from .handle import StoreHandle

logger = logging.getLogger(__name__)

FIELD = b"\x00j"  # a journal's field in the meta hash (left out of a scan, as the claims' are)
BEAT_S = 60.0  # a writer's beat is renewed by a commit at most this often
_MAGIC = b"J1"
_PUT, _DELETE, _CLEAR, _ADD, _REMOVE = b"P", b"D", b"C", b"A", b"R"


def encode(txn: "BufferedTxn") -> bytes | None:
    """A transaction's buffer as bytes (None when it changes nothing)."""
    parts: list[bytes] = []

    def entry(op: bytes, table: str, key: bytes, values) -> None:
        name = table.encode()
        parts.append(op + struct.pack(">BI", len(name), len(key)) + name + key + struct.pack(">I", len(values)))
        parts.extend(struct.pack(">I", len(v)) + v for v in values)

    for (table, key), value in txn.single.items():
        entry(_DELETE, table, key, []) if value is None else entry(_PUT, table, key, [value])
    for table, key in sorted(txn.cleared):
        entry(_CLEAR, table, key, [])
    for (table, key), values in txn.added.items():
        if values:
            entry(_ADD, table, key, sorted(values))
    for (table, key), values in txn.removed.items():
        if values:
            entry(_REMOVE, table, key, sorted(values))
    return _MAGIC + b"".join(parts) if parts else None


def decode(blob: bytes, txn: "BufferedTxn") -> None:
    """Fill an empty transaction's buffer from `encode`'s bytes (ValueError: not a journal)."""
    if not blob.startswith(_MAGIC):
        raise ValueError("not a write journal")
    at = len(_MAGIC)
    try:
        while at < len(blob):
            op = blob[at:at + 1]
            tlen, klen = struct.unpack_from(">BI", blob, at + 1)
            at += 6
            table, key = blob[at:at + tlen].decode(), blob[at + tlen:at + tlen + klen]
            at += tlen + klen
            if at > len(blob):
                raise IndexError("a key past the end")
            (count,) = struct.unpack_from(">I", blob, at)
            at += 4
            values = []
            for _ in range(count):
                (vlen,) = struct.unpack_from(">I", blob, at)
                if at + 4 + vlen > len(blob):
                    raise IndexError("a value past the end")
                values.append(blob[at + 4:at + 4 + vlen])
                at += 4 + vlen
            if op == _PUT:
                txn.single[(table, key)] = values[0]
            elif op == _DELETE:
                txn.single[(table, key)] = None
            elif op == _CLEAR:
                txn.cleared.add((table, key))
            elif op in (_ADD, _REMOVE):
                (txn.added if op == _ADD else txn.removed)[(table, key)] = set(values)
            else:
                raise ValueError(f"unknown change {op!r}")
    except (struct.error, IndexError, UnicodeDecodeError) as exc:
        raise ValueError(f"a write journal cut short ({exc})") from exc


class _Slot:
    """One thread's journal: its key, its field in the meta hash, its beat, its unfinished commit."""

    def __init__(self, store: "StoreHandle", token: bytes):
        self.key, self.field = store.prefix_b + b":j:" + token, FIELD + token
        self.beat_at = 0.0
        self.pending: bytes | None = None  # a commit not known to be applied whole
        self.deferring = False  # within a decision: the journal's deletion rides on the next round trip


class Journal:
    """This process's journals on one spread index, one a thread that commits (threads sharing
    a store commit at once; one key each, so neither overwrites the other's)."""

    def __init__(self, store: "StoreHandle"):
        self.s = store
        self.token = f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}".encode()
        self.slots: dict[int, _Slot] = {}
        self.finished = 0  # journals this process finished (its own after a failure, or a killed writer's)
        self.looked_at = float("-inf")  # when this process last looked for the journals of gone writers

    @property
    def mine(self) -> _Slot:
        me = threading.get_ident()
        if me not in self.slots:
            self.slots[me] = _Slot(self.s, self.token + b":" + str(me).encode())
        return self.slots[me]

    @property
    def pending(self) -> bytes | None:
        """This thread's commit that failed half-way, if any."""
        return self.mine.pending

    def due(self) -> bool:
        """Time to look for gone writers' journals again (at open, then every BEAT_S of writing)."""
        return time.monotonic() - self.looked_at > BEAT_S

    def begin(self, blob: bytes) -> None:
        """Write the journal (and the beat, when due) before the commit changes anything. Within
        a decision, once the journal is listed, it rides at the head of the commit's own round
        trip: its node's commands are sent before any other node's (nodes.py), so a crawler
        killed while sending has sent the journal before any write it sent."""
        slot = self.mine
        batch: list[tuple[bytes, tuple]] = [(slot.key, ("SET", slot.key, blob))]
        now = time.time()
        if now - slot.beat_at > BEAT_S:
            who = json.dumps({"host": socket.gethostname(), "ns": _pid_space(), "pid": os.getpid(), "beat": now})
            batch.append((self.s.meta_key, ("HSET", self.s.meta_key, slot.field, who)))
        if slot.deferring and slot.beat_at:  # (listed already: a renewal may ride too)
            for command in batch:
                self.s.nodes.ride(command)
            slot.pending = blob  # (a failed commit is applied whole before the next write)
            slot.beat_at = now if len(batch) > 1 else slot.beat_at
            return
        try:
            self.s.nodes.run(batch)
        except StoreError:  # (nothing changed yet: no journal to leave behind, if it can be taken back)
            try:
                self.s.nodes.run([(slot.key, ("DEL", slot.key))], wait=1.0)
            except StoreError:
                pass
            raise
        slot.pending = blob
        if len(batch) > 1:
            slot.beat_at = now

    def end(self) -> None:
        """The commit's last round trip returned: its journal is done with. Within a page's
        decision (`deferring`) its deletion rides on this thread's next round trip (the claim
        that follows a filing): a round trip less a kept page; the decision's end sends it, if
        still due, so a journal of a commit applied whole outlives it by that long at most."""
        slot = self.mine
        slot.pending = None
        if slot.deferring:
            self.s.nodes.ride((slot.key, ("DEL", slot.key)))
        else:
            self.s.nodes.run([(slot.key, ("DEL", slot.key))])

    @contextlib.contextmanager
    def deferring(self):
        """A page's decision (its filing, claims and second looks): journals' deletions ride on
        the next round trip; what is still due at its end is sent then."""
        slot = self.mine
        if slot.deferring:
            yield
            return
        slot.deferring = True
        try:
            yield
        finally:
            slot.deferring = False
            try:
                self.s.nodes.flush_riders()
            except StoreError:  # (kept for the next round trip; the decision's verdicts stand)
                pass

    def finish_own(self, make_txn: Callable[[], Any]) -> None:
        """Apply whole a commit of this process that failed half-way (before its next write)."""
        blob = self.mine.pending
        if blob is None:
            return
        txn = make_txn()
        decode(blob, txn)
        txn.commit()  # (journaled again under this key, then deleted)
        self.finished += 1
        logger.info("crawler-dedup: a commit that failed half-way on %s was applied whole", self.s.location)

    def _gone_writers(self, lease: float) -> list[tuple[bytes, bytes, bytes]]:
        """(meta field, its beat as read, journal key) of each writer known gone."""
        s = self.s
        meta = s.client.get_redis_connection(s.nodes.node_of(s.meta_key))
        return [(bytes(field), bytes(raw), s.prefix_b + b":j:" + bytes(field)[len(FIELD):])
                for field, raw in list(meta.hscan_iter(s.meta_key, match=escape(FIELD) + b"*", count=1000))
                if not bytes(field).startswith(FIELD + self.token) and _gone(raw, lease)]

    def left(self, lease: float) -> int:
        """Commits of gone writers not applied whole yet (read only: `index verify` tells them)."""
        keys = [key for _, _, key in self._gone_writers(lease)]
        return sum(1 for got in self.s.nodes.run([(k, ("EXISTS", k)) for k in keys]) if got) if keys else 0

    def finish_others(self, make_txn: Callable[[], Any], lease: float) -> int:
        """Finish the journals of writers that are gone (at open); how many were finished."""
        s = self.s
        self.looked_at = time.monotonic()
        done = 0
        for field, raw, key in self._gone_writers(lease):
            blob, now = s.nodes.run([(key, ("GET", key)), (s.meta_key, ("HGET", s.meta_key, field))])
            if now is None or bytes(now) != raw:
                continue  # (taken by another crawler, or the writer beat again: not gone)
            if blob:
                txn = make_txn()
                try:
                    decode(bytes(blob), txn)
                    txn.commit()
                except ValueError as exc:
                    logger.warning("crawler-dedup: the write journal %r on %s is unreadable (%s): left out",
                                   key, s.location, exc)
                except StoreError as exc:  # (the others are still finished; this one is tried again)
                    logger.warning("crawler-dedup: the write journal %r on %s was not applied (%s)", key,
                                   s.location, exc)
                    continue
                else:
                    done += 1
            # (taken away only as they were read: a writer that began again keeps its journal and beat)
            s.nodes.run([(key, s.nodes.script("del_if", [key], [bytes(blob) if blob else b""])),
                         (s.meta_key, s.nodes.script("hdel_if", [s.meta_key], [field, raw]))])
        if done:
            self.finished += done
            logger.warning("crawler-dedup: %d commit%s of crawlers killed mid-commit on %s applied whole", done,
                           "" if done == 1 else "s", s.location)
        return done

    def close(self) -> None:
        """At a clean close: this process's beat is removed (its journal, if a commit failed, stays
        for the next crawler to finish)."""
        try:
            self.s.nodes.flush_riders()
        except StoreError:
            pass
        done = [slot.field for slot in list(self.slots.values()) if slot.pending is None and slot.beat_at]
        if done:
            self.s.nodes.run([(self.s.meta_key, ("HDEL", self.s.meta_key, *done))], wait=2.0)


def _pid_space() -> str:
    """This process's pid namespace ("" where not known): containers sharing a hostname (host
    networking) are told apart by it, so a pid is only looked up where it means that process."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def _gone(raw, lease: float) -> bool:
    """A writer known gone: its process dead on this host (and pid namespace), or its beat older
    than `lease`."""
    try:
        who = json.loads(bytes(raw))
        if time.time() - float(who["beat"]) > lease:
            return True
        if who.get("host") != socket.gethostname() or who.get("ns", "") != _pid_space():
            return False
        return pid_gone(int(who["pid"]))
    except (ValueError, TypeError, KeyError):
        return False  # unreadable: not known gone


__all__ = ["BEAT_S", "FIELD", "Journal", "decode", "encode"]
