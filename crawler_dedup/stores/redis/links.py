"""A thread's connection to each cluster node, held from one round trip to the next, and a
round trip's replies read off its socket in one go (nodes.py sends the batches).

redis-py checks a connection out of its pool and back in for every command batch, polls it on
the way out, and parses a reply a call a value: about a fifth of a cluster page's client time,
as a page's round trips touch every node. Held here, a node's round trip costs a poll, a send and
the reads its replies need. The poll keeps what the pool's check gave: a connection the node
closed (a restart) or one with bytes left on it is dropped before anything is sent on it.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from typing import Any

_CRLF = b"\r\n"


class _Short(Exception):
    """The buffer ends inside a reply: read more."""


class Links:
    """A thread's held connection to each node: (pool, connection), checked out once."""

    def __init__(self, client):
        self.client = client
        self.local = threading.local()

    def get(self, node) -> tuple[Any, Any]:
        """The held connection to `node` (checked out of its pool when there is none, or when the
        held one closed or has unread bytes); the pool's errors when none can be made."""
        pool = self.client.get_redis_connection(node).connection_pool
        held = self.local.__dict__.setdefault("held", {})
        got = held.pop(node.name, None)
        if got is not None:
            old_pool, conn, pid = got
            if old_pool is pool and pid == os.getpid() and _idle(conn):
                held[node.name] = got
                return pool, conn
            if pid == os.getpid():  # (a forked child leaves its parent's connections alone)
                conn.disconnect()
                old_pool.release(conn)
        conn = pool.get_connection()
        held[node.name] = (pool, conn, os.getpid())
        return pool, conn

    def drop(self, node, pool, conn) -> None:
        """A connection whose replies were not all read (or that broke): closed and given back."""
        held = self.local.__dict__.setdefault("held", {})
        if held.get(node.name, (None, None))[1] is conn:
            del held[node.name]
        conn.disconnect()
        pool.release(conn)


def _idle(conn) -> bool:
    """Connected, with nothing to read: no reply left over, not closed by the node."""
    sock = getattr(conn, "_sock", None)
    if sock is None:
        return False
    try:
        if getattr(sock, "pending", None) is not None and sock.pending():  # (TLS: bytes already decrypted)
            return False
        if not hasattr(select, "poll"):  # (Windows)
            return not select.select([sock], [], [], 0)[0]
        poller = select.poll()
        poller.register(sock, select.POLLIN | select.POLLPRI)
        return not poller.poll(0)
    except (OSError, ValueError):
        return False


def read_replies(conn, count: int) -> list[Any]:
    """`count` replies read off the connection's socket, as redis-py's read_response gives them
    (bytes, int, None, a list, an error's exception); a ConnectionError-like error is raised."""
    sock = getattr(conn, "_sock", None)
    parser = getattr(conn, "_parser", None)
    if sock is None or parser is None or not hasattr(parser, "parse_error"):  # (another redis-py: its reads)
        return [_read_one(conn) for _ in range(count)]
    out: list[Any] = []
    data, pos = b"", 0
    while len(out) < count:
        try:
            value, pos = _parse(data, pos, parser)
        except _Short:
            chunk = _recv(sock)
            data, pos = data[pos:] + chunk, 0
            continue
        if value is not _PUSH:
            out.append(value)
    if pos != len(data):  # (more than the batch's replies: the connection is out of step)
        raise _connection_error(conn, "more bytes than the replies asked for")
    return out


def _read_one(conn) -> Any:
    from redis.exceptions import ResponseError

    try:
        return conn.read_response()
    except ResponseError as exc:
        return exc


def _recv(sock) -> bytes:
    try:
        chunk = sock.recv(65536)
    except socket.timeout as exc:
        from redis.exceptions import TimeoutError as RedisTimeout

        raise RedisTimeout("Timeout reading from a Redis Cluster node") from exc
    if not chunk:
        from redis.exceptions import ConnectionError as RedisConnectionError

        raise RedisConnectionError("Connection closed by the Redis Cluster node")
    return chunk


def _connection_error(conn, why: str):
    from redis.exceptions import ConnectionError as RedisConnectionError

    return RedisConnectionError(f"{getattr(conn, 'host', '?')}:{getattr(conn, 'port', '?')}: {why}")


_PUSH = object()  # (a RESP3 push message: not a reply)


def _parse(data: bytes, pos: int, parser) -> tuple[Any, int]:
    """One RESP2/RESP3 value at data[pos:] and the position after it; _Short when it is cut."""
    end = data.find(_CRLF, pos)
    if end < 0:
        raise _Short()
    kind, line, pos = data[pos:pos + 1], data[pos + 1:end], end + 2
    if kind == b"$" or kind == b"=" or kind == b"!":
        n = int(line)
        if n < 0:
            return None, pos
        if pos + n + 2 > len(data):
            raise _Short()
        value = data[pos:pos + n]
        pos += n + 2
        if kind == b"$":
            return value, pos
        if kind == b"=":
            return value[4:], pos
        return _error(value, parser), pos
    if kind == b"*" or kind == b"~" or kind == b">":
        n = int(line)
        if n < 0:
            return None, pos
        items: list[Any] = []
        add, find, size = items.append, data.find, len(data)
        for _ in range(n):
            if data[pos:pos + 1] == b"$":  # (a value of a read: inline, the commonest by far)
                end = find(_CRLF, pos)
                if end < 0:
                    raise _Short()
                length = int(data[pos + 1:end])
                if length < 0:
                    add(None)
                    pos = end + 2
                    continue
                pos = end + 2
                if pos + length + 2 > size:
                    raise _Short()
                add(data[pos:pos + length])
                pos += length + 2
            else:
                item, pos = _parse(data, pos, parser)
                add(item)
        return (_PUSH if kind == b">" else items), pos
    if kind == b":" or kind == b"(":
        return int(line), pos
    if kind == b"+":
        return line, pos
    if kind == b"-":
        return _error(line, parser), pos
    if kind == b"_":
        return None, pos
    if kind == b",":
        return float(line), pos
    if kind == b"#":
        return line == b"t", pos
    if kind == b"%" or kind == b"|":
        pairs = {}
        for _ in range(int(line)):
            key, pos = _parse(data, pos, parser)
            pairs[key], pos = _parse(data, pos, parser)
        if kind == b"|":  # (attributes come before the value they describe)
            return _parse(data, pos, parser)
        return pairs, pos
    from redis.exceptions import InvalidResponse

    raise InvalidResponse(f"Protocol Error: {kind + line!r}")


def _error(text: bytes, parser) -> Exception:
    from redis.exceptions import ConnectionError as RedisConnectionError

    error = parser.parse_error(text.decode("utf-8", errors="replace"))
    if isinstance(error, RedisConnectionError):  # (as redis-py: raised, not a reply)
        raise error
    return error
