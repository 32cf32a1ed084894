"""A page's reads on a Redis Cluster, one command a node (stores/redis/nodes.py `Nodes.read`): the
values of keys of many slots come back as single commands would return them, and a key that is
not where the client's slot map says (a slot moving) is read again by a command of its own."""

from __future__ import annotations

import pytest

redis = pytest.importorskip("redis")

from crawler_dedup.stores.redis.nodes import Nodes  # noqa: E402
from crawler_dedup.stores.redis.retry import Patience  # noqa: E402


def _nodes(url: str) -> Nodes:
    return Nodes(redis.RedisCluster.from_url(url), redis, {}, Patience(5))


def _places(client, prefix: str, n: int) -> list[tuple[bytes, bytes | None]]:
    places: list[tuple[bytes, bytes | None]] = []
    for i in range(n):
        name = f"{prefix}:h{i}".encode()
        if i % 3 == 0:
            client.set(name, f"s{i}".encode())
            places.append((name, None))
        else:
            client.hset(name, b"f", f"v{i}".encode())
            places.append((name, b"f"))
    return [*places, (f"{prefix}:absent".encode(), b"f"), (f"{prefix}:h1".encode(), b"no such field")]


def _plain(client, places) -> list:
    return [client.get(n) if f is None else client.hget(n, f) for n, f in places]


def test_reads_of_many_slots_cost_one_command_a_node_and_return_what_single_commands_do(redis_cluster):
    nodes = _nodes(redis_cluster)
    client = nodes.client
    places = _places(client, "reads-a", 30)
    assert len({nodes.node_of(n).name for n, _ in places}) == 3  # (every node holds some)
    before = nodes.commands, nodes.waits
    got = nodes.read(places)
    assert got == _plain(client, places)
    assert got[-2:] == [None, None] and got[0] == b"s0" and got[1] == b"v1"
    assert (nodes.commands - before[0], nodes.waits - before[1]) == (3, 1)  # (three nodes, one round trip)
    client.close()


def test_a_key_whose_slot_is_moving_is_read_where_it_now_lies(redis_cluster):
    """A slot half migrated (its key already on the target, the client's map still naming the
    source): the source's script cannot read it and says so; the key is read again after ASK."""
    nodes = _nodes(redis_cluster)
    client = nodes.client
    places = _places(client, "reads-b", 30)
    moving, field = places[1]
    slot = client.keyslot(moving)
    source = nodes.node_of(moving)
    target = next(n for n in nodes.primaries() if n.name != source.name)
    src, dst = client.get_redis_connection(source), client.get_redis_connection(target)
    src_id, dst_id = src.execute_command("CLUSTER MYID"), dst.execute_command("CLUSTER MYID")
    dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    try:
        src.execute_command("MIGRATE", target.host, target.port, moving, 0, 5000)
        assert nodes.node_of(moving).name == source.name  # (the client's map still says the source)
        waits = nodes.waits
        got = nodes.read(places)
        assert nodes.waits - waits == 2  # (the node's script said it could not read it: asked again)
        assert got[1] == b"v1" and got[:1] + got[2:] == [v for i, v in enumerate(_plain(client, places)) if i != 1]
    finally:  # (the slot given to the target for good: the other tests follow MOVED)
        for conn in (dst, src):
            conn.execute_command("CLUSTER SETSLOT", slot, "NODE", dst_id)
        client.close()
