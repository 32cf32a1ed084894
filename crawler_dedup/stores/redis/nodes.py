"""Commands sent to a Redis Cluster grouped by node: one round trip a node for a batch, whatever
slots its keys hash to, with the cluster's redirections followed.

A batch is a list of (key, command): each command touches the slot of its key only. They are
grouped by the node that serves the slot and sent pipelined, to all nodes before any reply is
read. A reply MOVED (the slot moved for good: a resharding, a failover) refreshes the slot map
and sends the command again to the new owner; ASK (the slot is moving and the key is already on
the target) sends it to the target after ASKING; TRYAGAIN (a multi-key command during a move),
CLUSTERDOWN, LOADING, READONLY (a node that became a replica) and a lost connection (a node
restarting, failing over) wait a little and send it again, until DEDUP_REDIS_RETRY has passed
(retry.py).

Sending again is safe for the commands here that are idempotent (HSET, DEL, the packed-set add
and remove, a claim for a doc id that already has one) or harmless twice (INCR of a doc id
counter: an id skipped). A command that is neither (the entry count that doubles the shards) is
sent `once`: when its connection broke after it went out, it is not sent again and its reply is
`LOST`.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable

from redis.crc import key_slot

from ...exceptions import StoreError
from .links import Links, read_replies
from .retry import Patience

REDIRECTS = 5  # sent again at once after an ASK or a script loaded, before waiting counts
HMGET_MAX = 1000  # fields of one hash in one HMGET of the read script (Lua's stack takes a few thousand)
LOST = object()  # the reply of a command sent once whose connection broke after it went out
# Redis 7: the values of keys of many slots of one node in one command (no keys declared, so the
# node never redirects it; a key it does not serve, or that is moving, answers -1 for each of its
# places, read again by a command of its own, which follows the redirection). ARGV: each key, then
# its number of fields (0: a string, GET), then the fields: a hash read in many fields (the meta
# hash: a page's candidates' claims) is one HMGET, where a call a field cost its node ten times that
READ = """#!lua flags=no-writes,allow-cross-slot-keys
local out = {}
local i = 1
while i <= #ARGV do
  local key, n = ARGV[i], tonumber(ARGV[i + 1])
  local ok, v
  if n == 0 then ok, v = pcall(redis.call, 'GET', key)
  elseif n == 1 then ok, v = pcall(redis.call, 'HGET', key, ARGV[i + 2])
  else ok, v = pcall(redis.call, 'HMGET', key, unpack(ARGV, i + 2, i + 1 + n)) end
  if not ok then
    for j = 1, math.max(n, 1) do out[#out + 1] = -1 end
  elseif n > 1 then
    for j = 1, n do out[#out + 1] = v[j] end
  else
    out[#out + 1] = v
  end
  i = i + 2 + n
end
return out
"""

def pack(cmds: list[tuple]) -> bytes:
    """Pipelined commands in RESP, as redis-py's pack_commands writes them, without its encoder's
    call an argument (a tenth of a cluster page's client time went there)."""
    out: list[bytes] = []
    add = out.append
    for cmd in cmds:
        add(b"*%d\r\n" % len(cmd))
        for arg in cmd:
            if type(arg) is bytes:  # (keys and fields: most arguments)
                pass
            elif isinstance(arg, str):
                arg = arg.encode()
            elif isinstance(arg, int):
                arg = b"%d" % arg
            elif isinstance(arg, float):
                arg = repr(arg).encode()
            elif not isinstance(arg, bytes):
                arg = bytes(arg)  # (a memoryview, a bytearray)
            add(b"$%d\r\n" % len(arg))
            add(arg)
            add(b"\r\n")
    return b"".join(out)


class Nodes:
    """Batches of single-slot commands on a cluster, a round trip a node."""

    def __init__(self, client, redis_module, scripts: dict[str, str], patience: Patience | None = None,
                 newer: dict[str, str] | None = None):
        self.client, self.redis = client, redis_module
        self.scripts = scripts  # name -> Lua source; sent as EVALSHA, loaded on a node that lacks it
        self.newer = {"read": READ, **(newer or {})}  # scripts for Redis 7 (`write`: a commit's, spread_keys.WRITE)
        self.patience = patience or Patience(0)
        self.sha: dict[str, str] = {}
        self._slots: dict[bytes, int] = {}  # key -> slot, for the keys a page reads again and again
        self.links = Links(client)  # (a thread's connection to each node, held between round trips)
        self.trips = 0  # node connections written to
        self.waits = self.commands = 0  # batches waited for (a round trip each, whatever the nodes), commands
        self.retried = 0  # batches that needed more than one try (a redirection, a fault)
        self.scripted: bool | None = None  # reads a script a node (READ): every primary runs Redis 7+
        self.riders: dict[int, list[tuple[bytes, tuple]]] = {}  # a thread's commands for its next round trip
        e = redis_module.exceptions
        # answers that say: ask again (the map, after a refresh, or the node itself, after a pause)
        self._again = (e.TryAgainError, e.ClusterDownError, e.BusyLoadingError, e.ReadOnlyError)
        self._lost = (redis_module.ConnectionError, redis_module.TimeoutError, OSError)

    def read(self, places: list[tuple[bytes, bytes | None]]) -> list[Any]:
        """The values at (key, hash field or None for a string) places, None where absent: one
        command a node on Redis 7 (READ: a hash's fields in one HMGET there), else one a place;
        one round trip either way."""
        def plain(i: int) -> tuple[bytes, tuple]:
            name, field = places[i]
            return name, ("GET", name) if field is None else ("HGET", name, field)

        groups: dict[str, dict[tuple[bytes, bool], list[int]]] = {}  # node -> (key, a hash?) -> places
        try:
            if len(places) > 1 and self.scripted_ok():
                for i, (name, field) in enumerate(places):
                    keys = groups.setdefault(self.node_of(name).name, {})
                    keys.setdefault((name, field is not None), []).append(i)
        except self.redis.exceptions.SlotNotCoveredError:  # (a node gone with its slots: run() waits for it)
            groups = {}
        if not groups or all(len(g) == 1 and len(m) == 1 for g in groups.values() for m in g.values()):
            return self.run([plain(i) for i in range(len(places))])
        members: list[list[int]] = []
        batch: list[tuple[bytes, tuple]] = []
        for keys in groups.values():
            order: list[int] = []
            args: list[Any] = []
            for (name, hashed), m in keys.items():
                if not hashed:  # (a string: a GET each, the same key read twice costs nothing)
                    for i in m:
                        args += (name, 0)
                        order.append(i)
                    continue
                for at in range(0, len(m), HMGET_MAX):
                    part = m[at:at + HMGET_MAX]
                    args += (name, len(part), *(places[i][1] for i in part))
                    order += part
            members.append(order)
            batch.append(plain(order[0]) if len(order) == 1 else (places[order[0]][0], self.script("read", [], args)))
        out: list[Any] = [None] * len(places)
        again: list[int] = []
        for m, reply in zip(members, self.run(batch)):
            for i, value in zip(m, reply if len(m) > 1 else [reply]):
                if isinstance(value, int):  # (-1: not this node's now, or moving)
                    again.append(i)
                else:
                    out[i] = value
        if again:
            for i, value in zip(again, self.run([plain(i) for i in again])):
                out[i] = value
        return out

    def write(self, ops: list[tuple[bytes, tuple]], extra: list[tuple[bytes, tuple]] = ()) -> list[Any]:  # type: ignore[assignment]
        """Apply (key, command) pairs in one command a node (the `write` script; a command may be
        PACKED or NXPACKED, spread_keys.WRITE) and `extra` beside them as they are, sent once;
        their replies in order. One round trip; a command a node could not serve now (a slot
        moving) is sent again on its own."""
        groups: dict[str, list[int]] = {}
        try:
            if self.scripted_ok():
                for i, (name, _) in enumerate(ops):
                    groups.setdefault(self.node_of(name).name, []).append(i)
        except self.redis.exceptions.SlotNotCoveredError:  # (a node gone with its slots: run() waits for it)
            groups = {}
        if not groups:
            return self.run([self._plain(op) for op in ops] + list(extra), once=range(len(ops), len(ops) + len(extra)))
        members = list(groups.values())
        batch = [(ops[m[0]][0], self.script("write", [], [w for i in m for w in (len(ops[i][1]), *ops[i][1])]))
                 for m in members]
        replies = self.run(batch + list(extra), once=range(len(batch), len(batch) + len(extra)))
        out: list[Any] = [None] * len(ops)
        again: list[int] = []
        for m, reply in zip(members, replies):
            for i, value in zip(m, reply):
                if value == -1:
                    again.append(i)
                else:
                    out[i] = value
        if again:
            for i, value in zip(again, self.run([self._plain(ops[i]) for i in again])):
                out[i] = value
        return out + replies[len(batch):]

    def _plain(self, op: tuple[bytes, tuple]) -> tuple[bytes, tuple]:
        """A command of the `write` script as a command of its own (PACKED and NXPACKED: the packed script)."""
        name, cmd = op
        if cmd[0] in ("PACKED", "NXPACKED"):
            return name, self.script("packed", [name], list(cmd[2:]))
        return op

    def scripted_ok(self) -> bool:
        """Every primary runs Redis 7 or later (a script's allow-cross-slot-keys flag); asked once."""
        if self.scripted is None:
            try:
                versions = [self.client.get_redis_connection(n).info("server").get("redis_version", "0")
                            for n in self.primaries()]
                self.scripted = all(int(str(v).split(".")[0]) >= 7 for v in versions)
            except (self.redis.RedisError, OSError, ValueError):
                return False  # (asked again next time)
            if self.scripted:
                self.scripts = {**self.scripts, **self.newer}
        return self.scripted

    def node_of(self, key: bytes):
        slot = self._slots.get(key)
        if slot is None:
            if len(self._slots) >= 100_000:  # (the shards' names recur; records' ids less so)
                self._slots.clear()
            slot = self._slots[key] = key_slot(key)
        try:  # (the slot map's primary as redis-py keeps it: its own lookup cost a sixth of a page's time)
            return self.client.nodes_manager.slots_cache[slot][0]
        except (AttributeError, KeyError, IndexError, TypeError):
            return self.client.nodes_manager.get_node_from_slot(slot)  # (SlotNotCoveredError when none)

    def primaries(self) -> list:
        return list(self.client.get_primaries())

    def script(self, name: str, keys: list[bytes], args: list[Any]) -> tuple:
        """The command that runs script `name` (EVALSHA, loaded on demand)."""
        if name not in self.sha:
            import hashlib

            self.sha[name] = hashlib.sha1(self.scripts[name].encode()).hexdigest()
        return ("EVALSHA", self.sha[name], len(keys), *keys, *args)

    def run(self, batch: list[tuple[bytes, tuple]], once: Iterable[int] = (), wait: float | None = None) -> list[Any]:
        """The replies to (key, command) pairs, in order; errors other than the cluster's routine
        answers raise. `once`: indexes of commands never sent twice (their reply LOST when their
        connection broke after they went out); `wait`: seconds to try for, instead of
        DEDUP_REDIS_RETRY (a failure then is not the store's: later calls still wait)."""
        if not batch:  # (nothing to send: no round trip, none counted)
            return []
        riding = self.riders.pop(threading.get_ident(), None) or []
        try:  # (commands riding first, their replies not the caller's: a journal, its deletion)
            return self._run([*riding, *batch], [len(riding) + i for i in once], wait)[len(riding):]
        except BaseException:
            if riding:
                self.riders.setdefault(threading.get_ident(), [])[:0] = riding
            raise

    def _run(self, batch: list[tuple[bytes, tuple]], once: Iterable[int], wait: float | None) -> list[Any]:
        replies: list[Any] = [None] * len(batch)
        todo = list(range(len(batch)))
        single = set(once)
        self.waits += 1
        self.commands += len(batch)
        asking: dict[int, Any] = {}  # command -> the node an ASK sent it to
        faults: dict[str, str] = {}  # node -> what went wrong there last
        deadline = self.patience.deadline() if wait is None else time.monotonic() + wait
        attempt = redirected = 0
        while True:
            before = len(faults)
            again, refresh = self._try(batch, todo, asking, single, replies, faults)
            if not again:
                self.patience.ok()
                return replies
            self.retried += attempt + redirected == 0
            todo = again
            if refresh:
                self._refresh()
            if len(faults) == before and redirected < REDIRECTS:
                redirected += 1  # (an ASK, a script to load: sent again at once, whatever the deadline)
                continue
            if not self.patience.pause(attempt, deadline):
                break
            attempt += 1
        if wait is None:
            self.patience.failed()
        where = "; ".join(f"{node}: {what}" for node, what in faults.items()) or "redirected again and again"
        waited = f"after {self.patience.seconds:g} s (DEDUP_REDIS_RETRY)" if attempt else "at once (a recent failure)"
        raise StoreError(f"Redis Cluster: {len(todo)} of {len(batch)} commands not done {waited}: {where}")

    def ride(self, command: tuple[bytes, tuple]) -> None:
        """An idempotent (key, command) sent with this thread's next round trip (flush_riders: now)."""
        self.riders.setdefault(threading.get_ident(), []).append(command)

    def flush_riders(self) -> None:
        """This thread's riders sent now, if any are still due."""
        riding = self.riders.pop(threading.get_ident(), None)
        if riding:
            try:
                self.run(riding)
            except BaseException:
                self.riders.setdefault(threading.get_ident(), [])[:0] = riding
                raise

    def _try(self, batch, todo: list[int], asking: dict[int, Any], once: set[int], replies: list[Any],
             faults: dict[str, str]) -> tuple[list[int], bool]:
        """Send the commands `todo` once; (those to send again, whether the slot map is stale)."""
        groups: dict[str, tuple[Any, list[int]]] = {}
        again: list[int] = []
        refresh = False
        for i in todo:
            try:
                node = asking.get(i) or self.node_of(batch[i][0])
            except self.redis.exceptions.SlotNotCoveredError as exc:  # a node gone with its slots
                faults["slot map"] = str(exc)
                again.append(i)
                refresh = True
                continue
            groups.setdefault(node.name, (node, []))[1].append(i)
        # every node's commands go out before any reply is read: a batch costs one round trip
        # however many nodes it touches
        sent = []
        try:
            for name, (node, members) in groups.items():
                try:
                    sent.append((name, members, self._send(node, [batch[i][1] for i in members],
                                                           ask=any(i in asking for i in members))))
                except _NotSent as exc:  # no connection: nothing went out
                    faults[name] = str(exc.__cause__)
                    again += members
                    refresh = True
                except self._lost as exc:  # cut off while sending: a command may have gone out
                    faults[name] = str(exc)
                    again += self._lost_replies(members, once, replies)
                    refresh = True
        except BaseException:
            for _name, _members, (node, pool, conn, _count, _ask) in sent:  # replies never to be read
                self.links.drop(node, pool, conn)
            raise
        received = []
        for name, members, pending in sent:  # every connection read back before any reply acts
            try:
                received.append((name, members, self._receive(*pending)))
            except self._lost as exc:
                faults[name] = str(exc)
                again += self._lost_replies(members, once, replies)
                refresh = True
        e = self.redis.exceptions
        for name, members, got in received:
            for i, reply in zip(members, got):
                asking.pop(i, None)
                if isinstance(reply, e.MovedError):  # (a MovedError is an AskError: this first)
                    again.append(i)
                    refresh = True
                elif isinstance(reply, e.AskError):
                    asking[i] = self._node(reply.host, reply.port)
                    again.append(i)
                elif isinstance(reply, self._again):
                    faults[name] = str(reply)
                    again.append(i)
                    refresh = refresh or isinstance(reply, (e.ClusterDownError, e.ReadOnlyError))
                elif isinstance(reply, e.NoScriptError):
                    self._load(name)
                    again.append(i)
                elif isinstance(reply, Exception):
                    raise StoreError(f"Redis Cluster node {name}: {reply}")
                else:
                    replies[i] = reply
        return again, refresh

    @staticmethod
    def _lost_replies(members: list[int], once: set[int], replies: list[Any]) -> list[int]:
        """After a broken connection: the commands to send again (the others' replies are LOST)."""
        for i in members:
            if i in once:
                replies[i] = LOST
        return [i for i in members if i not in once]

    def _send(self, node, cmds: list[tuple], ask: bool) -> tuple:
        try:
            pool, conn = self.links.get(node)
        except self._lost as exc:
            raise _NotSent() from exc
        # after an ASK each command gets its own ASKING, which lasts one command (harmless before a
        # command whose slot is not moving)
        packed = [c for cmd in cmds for c in (("ASKING",), cmd)] if ask else list(cmds)
        self.trips += 1
        try:
            conn.send_packed_command([pack(packed)], check_health=False)
        except BaseException:
            self.links.drop(node, pool, conn)
            raise
        return node, pool, conn, len(packed), ask

    def _receive(self, node, pool, conn, count: int, ask: bool) -> list[Any]:
        try:
            out = read_replies(conn, count)
        except BaseException:
            self.links.drop(node, pool, conn)
            raise
        return out[1::2] if ask else out

    def _node(self, host: str, port: int):
        node = self.client.get_node(host=host, port=port)
        if node is None:
            self._refresh()
            node = self.client.get_node(host=host, port=port)
        if node is None:
            raise StoreError(f"Redis Cluster: no node {host}:{port}")
        return node

    def _load(self, name: str) -> None:
        host, _, port = name.rpartition(":")
        client = self.client.get_redis_connection(self._node(host, int(port)))
        for source in self.scripts.values():
            client.script_load(source)

    def _refresh(self) -> None:
        try:
            self.client.nodes_manager.initialize()
        except Exception:  # noqa: BLE001 - the cluster is down: the next try fails and says so
            time.sleep(0.1)


class _NotSent(Exception):
    """No connection to the node: nothing of the batch went out (safe to send all of it again)."""
