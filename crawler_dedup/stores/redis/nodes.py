"""Commands sent to a Redis Cluster grouped by node: one round trip a node for a batch, whatever
slots its keys hash to, with the cluster's redirections followed.

A batch is a list of (key, command): each command touches the slot of its key only. They are
grouped by the node that serves the slot and sent pipelined, to all nodes before any reply is
read. A reply MOVED (the
slot moved for good: a resharding, a failover) refreshes the slot map and sends the command
again; ASK (the slot is moving and the key is already on the target) sends it to the target
after ASKING; TRYAGAIN (a multi-key command during a move) and a lost connection (a node
restarting) wait a little and send it again. Every command here is safe to send twice: the
writes are idempotent (HSET, packed-set add and remove, DEL), except the claim, which a
redirection replies to without running.
"""

from __future__ import annotations

import time
from typing import Any

from ...exceptions import StoreError

ATTEMPTS = 8  # a command redirected or cut off this often fails the call (the page is kept, counted)


class Nodes:
    """Batches of single-slot commands on a cluster, a round trip a node."""

    def __init__(self, client, redis_module, scripts: dict[str, str]):
        self.client, self.redis = client, redis_module
        self.scripts = scripts  # name -> Lua source; sent as EVALSHA, loaded on a node that lacks it
        self.sha: dict[str, str] = {}
        self.trips = 0  # node connections written to
        self.waits = self.commands = 0  # batches waited for (a round trip each, whatever the nodes), commands

    def node_of(self, key: bytes):
        return self.client.nodes_manager.get_node_from_slot(self.client.keyslot(key))

    def primaries(self) -> list:
        return list(self.client.get_primaries())

    def script(self, name: str, keys: list[bytes], args: list[Any]) -> tuple:
        """The command that runs script `name` (EVALSHA, loaded on demand)."""
        if name not in self.sha:
            import hashlib

            self.sha[name] = hashlib.sha1(self.scripts[name].encode()).hexdigest()
        return ("EVALSHA", self.sha[name], len(keys), *keys, *args)

    def run(self, batch: list[tuple[bytes, tuple]]) -> list[Any]:
        """The replies to (key, command) pairs, in order; errors other than redirections raise."""
        replies: list[Any] = [None] * len(batch)
        todo = list(range(len(batch)))
        self.waits += 1
        self.commands += len(batch)
        asking: dict[int, Any] = {}  # command -> the node an ASK sent it to
        for attempt in range(ATTEMPTS):
            groups: dict[str, tuple[Any, list[int]]] = {}
            for i in todo:
                node = asking.get(i) or self.node_of(batch[i][0])
                groups.setdefault(node.name, (node, []))[1].append(i)
            again: list[int] = []
            refresh = False
            # every node's commands go out before any reply is read: a batch costs one round trip
            # however many nodes it touches
            sent = []
            try:
                for node, members in groups.values():
                    try:
                        sent.append((node, members, self._send(node, [batch[i][1] for i in members],
                                                               ask=any(i in asking for i in members))))
                    except (self.redis.ConnectionError, self.redis.TimeoutError, OSError):
                        again += members  # a node restarting or failed over: the map is read again
                        refresh = True
            except BaseException:
                for _node, _members, (pool, conn, _count, _ask) in sent:  # replies never to be read
                    conn.disconnect()
                    pool.release(conn)
                raise
            received = []
            for node, members, pending in sent:  # every connection read back before any reply acts
                try:
                    received.append((node, members, self._receive(*pending)))
                except (self.redis.ConnectionError, self.redis.TimeoutError, OSError):
                    again += members
                    refresh = True
            for node, members, got in received:
                for i, reply in zip(members, got):
                    asking.pop(i, None)
                    if isinstance(reply, self.redis.exceptions.AskError):
                        asking[i] = self._node(reply.host, reply.port)
                        again.append(i)
                    elif isinstance(reply, (self.redis.exceptions.MovedError, self.redis.exceptions.TryAgainError,
                                            self.redis.exceptions.ClusterDownError)):
                        again.append(i)
                        refresh = refresh or isinstance(reply, self.redis.exceptions.MovedError)
                    elif isinstance(reply, self.redis.exceptions.NoScriptError):
                        self._load(node)
                        again.append(i)
                    elif isinstance(reply, Exception):
                        raise StoreError(f"Redis Cluster: {reply}")
                    else:
                        replies[i] = reply
            if not again:
                return replies
            todo = again
            if refresh:
                self._refresh()
            time.sleep(0.02 * attempt)
        raise StoreError(f"Redis Cluster: {len(todo)} commands still redirected or cut off after {ATTEMPTS} tries")

    def _send(self, node, cmds: list[tuple], ask: bool) -> tuple:
        pool = self.client.get_redis_connection(node).connection_pool
        conn = pool.get_connection()
        # after an ASK each command gets its own ASKING, which lasts one command (harmless before a
        # command whose slot is not moving)
        packed = [c for cmd in cmds for c in (("ASKING",), cmd)] if ask else list(cmds)
        self.trips += 1
        try:
            conn.send_packed_command(conn.pack_commands(packed))
        except BaseException:
            conn.disconnect()
            pool.release(conn)
            raise
        return pool, conn, len(packed), ask

    def _receive(self, pool, conn, count: int, ask: bool) -> list[Any]:
        out = []
        try:
            for _ in range(count):
                try:
                    out.append(conn.read_response())
                except self.redis.ResponseError as exc:
                    out.append(exc)
        except BaseException:
            conn.disconnect()
            raise
        finally:
            pool.release(conn)
        return out[1::2] if ask else out

    def _node(self, host: str, port: int):
        node = self.client.get_node(host=host, port=port)
        if node is None:
            self._refresh()
            node = self.client.get_node(host=host, port=port)
        if node is None:
            raise StoreError(f"Redis Cluster: no node {host}:{port}")
        return node

    def _load(self, node) -> None:
        client = self.client.get_redis_connection(node)
        for source in self.scripts.values():
            client.script_load(source)

    def _refresh(self) -> None:
        try:
            self.client.nodes_manager.initialize()
        except Exception:  # noqa: BLE001 - the cluster is down: the next try fails and says so
            time.sleep(0.1)
