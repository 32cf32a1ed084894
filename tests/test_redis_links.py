"""The cluster's held connections and the replies read off their sockets (stores/redis/links.py)."""

from __future__ import annotations

import socket
import threading

import pytest

redis = pytest.importorskip("redis")

from redis._parsers import _RESP2Parser  # noqa: E402
from redis.exceptions import AskError, MovedError, ResponseError  # noqa: E402

from crawler_dedup.stores.redis.links import read_replies  # noqa: E402


class _Wire:
    """A connection as read_replies reads it: a real socket (one end of a pair) and redis-py's parser."""

    def __init__(self, sock):
        self._sock = sock
        self._parser = _RESP2Parser(65536)


def _read(raw: bytes, count: int, piece: int) -> list:
    """`count` replies of `raw`, written `piece` bytes at a time from the other end of a socket pair."""
    mine, theirs = socket.socketpair()
    mine.settimeout(5)

    def write():
        for i in range(0, len(raw), piece):
            theirs.sendall(raw[i:i + piece])

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return read_replies(_Wire(mine), count)
    finally:
        writer.join()
        mine.close()
        theirs.close()


REPLIES = (b"$5\r\nhello\r\n" b"$-1\r\n" b":42\r\n" b"+OK\r\n" b"*3\r\n$1\r\na\r\n$-1\r\n:-1\r\n"
           b"-MOVED 3999 127.0.0.1:6381\r\n" b"-ASK 12 127.0.0.1:6380\r\n" b"-ERR unknown command\r\n"
           b"_\r\n" b"#t\r\n" b",1.5\r\n" b"%1\r\n$1\r\nk\r\n$2\r\nvv\r\n" b"*0\r\n" b"$0\r\n\r\n"
           b">2\r\n$10\r\ninvalidate\r\n*0\r\n" b"$3\r\nend\r\n")


@pytest.mark.parametrize("piece", [1, 2, 7, 1000])
def test_replies_are_read_as_redis_py_reads_them_however_the_bytes_arrive(piece):
    got = _read(REPLIES, 15, piece)
    assert got[:5] == [b"hello", None, 42, b"OK", [b"a", None, -1]]
    assert isinstance(got[5], MovedError) and got[5].slot_id == 3999 and got[5].port == 6381
    assert isinstance(got[6], AskError) and got[6].port == 6380
    assert type(got[7]) is ResponseError and "unknown command" in str(got[7])
    # RESP3: null, true, a double, a map, an empty list, an empty string; the push message skipped
    assert got[8:] == [None, True, 1.5, {b"k": b"vv"}, [], b"", b"end"]


def test_a_node_that_closes_mid_reply_is_a_connection_error():
    mine, theirs = socket.socketpair()
    mine.settimeout(5)
    theirs.sendall(b"$10\r\nhal")
    theirs.close()
    with pytest.raises(redis.ConnectionError):
        read_replies(_Wire(mine), 1)
    mine.close()


def test_a_held_connection_the_node_closed_is_replaced_before_anything_is_sent(redis_cluster, articles):
    """A node that closed a held connection (a restart, CLIENT KILL) is found out before the
    next round trip: a command sent once is sent on a fresh connection and answered, not LOST."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.stores.redis import nodes as nodes_module

    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="held", store_text=False) as d:
        store = d.index.store
        assert d.check("https://a/0", text=articles[0][1]).action == "keep"
        held = {name: conn._sock for name, (_, conn, _) in store.nodes.links.local.held.items()}
        assert held and all(held.values())  # (the round trips' connections stay checked out, connected)
        node = store.nodes.node_of(store.meta_key)
        for primary in store.nodes.primaries():
            store.client.get_redis_connection(primary).execute_command(
                "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
        entries, retried = int(store.client.hget(store.meta_key, "entries")), store.nodes.retried
        got = store.nodes.run([(store.meta_key, store.map.grow_command(3))], once=[0])
        assert got != [nodes_module.LOST] and store.nodes.retried == retried  # (answered at the first try)
        assert int(store.client.hget(store.meta_key, "entries")) == entries + 3
        assert store.nodes.links.local.held[node.name][1]._sock is not held[node.name]  # (connected again)
        assert d.check("https://b/1", text=articles[1][1]).action == "keep"
