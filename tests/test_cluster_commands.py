"""A page's reads and its commit on a Redis Cluster, one command a node (stores/redis/nodes.py
`Nodes.read`, `Nodes.write`; Redis 7): the values of keys of many slots come back as single
commands would return them, a commit leaves what its commands one by one leave, and a key that is
not where the client's slot map says (a slot moving) is read or written again by a command of its
own, which follows the redirection."""

from __future__ import annotations

import pytest

redis = pytest.importorskip("redis")

from crawler_dedup.stores.redis.nodes import Nodes  # noqa: E402
from crawler_dedup.stores.redis.retry import Patience  # noqa: E402


def _nodes(url: str) -> Nodes:
    from crawler_dedup.stores.redis.spread_keys import SCRIPTS, WRITE

    return Nodes(redis.RedisCluster.from_url(url), redis, dict(SCRIPTS), Patience(5), newer={"write": WRITE})


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


def test_many_fields_of_one_hash_are_one_hmget_in_its_nodes_read(redis_cluster, monkeypatch):
    """The meta hash read in a page's candidates' claims (a field each): one HMGET inside its
    node's read script, not a call a field; every node still one command, in one round trip; a
    hash read in more fields than one HMGET takes is read in several, in order."""
    nodes = _nodes(redis_cluster)
    client = nodes.client
    places = _places(client, "reads-c", 30)
    meta = b"{reads-c}:m"
    client.hset(meta, mapping={b"c1": b"1", b"c3": b"3"})
    claims = [(meta, f"c{i}".encode()) for i in range(6)]
    places = [*places[:5], *claims[:3], *places[5:], *claims[3:]]
    before = nodes.commands, nodes.waits
    got = nodes.read(places)
    assert got == _plain(client, places)
    assert [got[5:8], got[-3:]] == [[None, b"1", None], [b"3", None, None]]
    assert (nodes.commands - before[0], nodes.waits - before[1]) == (3, 1)  # (three nodes' scripts)
    from crawler_dedup.stores.redis import nodes as nodes_module

    monkeypatch.setattr(nodes_module, "HMGET_MAX", 2)  # (the six claims: three HMGETs)
    assert nodes.read(places) == got
    source, settle = _moving(nodes, meta)  # (the hash's slot moving: its fields read again, following the ASK)
    try:
        assert nodes.read(places) == got
    finally:
        settle()
        client.close()


def _ops(prefix: str) -> list[tuple[bytes, tuple]]:
    """A commit's kinds of commands over keys of many slots; the packed lists over 8-byte values."""
    v = [bytes([i]) * 8 for i in range(6)]
    ops: list[tuple[bytes, tuple]] = []
    for i in range(12):
        h, s_ = f"{prefix}:h{i}".encode(), f"{prefix}:s{i}".encode()
        ops += [(h, ("HSET", h, b"a", f"x{i}".encode())), (s_, ("SET", s_, f"y{i}".encode(), "PX", 600000)),
                (h, ("HDEL", h, b"gone")), (h, ("NXPACKED", h, b"new", 0, 2, v[0], v[1])),
                (h, ("NXPACKED", h, b"old", 0, 1, v[2])), (h, ("PACKED", h, b"old", 0, 1, v[3], v[0])),
                (h, ("PEXPIRE", h, 600000))]
    return ops


def _state(client, prefix: str) -> dict:
    out = {}
    for i in range(12):
        h, s_ = f"{prefix}:h{i}".encode(), f"{prefix}:s{i}".encode()
        out[i] = (client.hgetall(h), client.get(s_), client.pttl(h) > 0)
    return out


def _seed(client, prefix: str) -> None:
    for i in range(12):  # (a field to delete, a packed list to merge into: 8-byte values 0 and 4)
        client.hset(f"{prefix}:h{i}".encode(), mapping={b"gone": b"1", b"old": bytes([0]) * 8 + bytes([4]) * 8})


def test_any_mix_of_places_reads_as_single_commands_read_it(redis_cluster, monkeypatch):
    """Property: strings, hashes read in one field or many, repeated places, absent keys and
    fields, in any order, whatever the HMGET size: the read answers what GET/HGET one by one do."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from crawler_dedup.stores.redis import nodes as nodes_module

    nodes = _nodes(redis_cluster)
    client = nodes.client
    strings = [f"mix:s{i}".encode() for i in range(6)]
    hashes = [f"mix:h{i}".encode() for i in range(6)]
    for i, name in enumerate(strings[:4]):
        client.set(name, f"s{i}".encode())
    for i, name in enumerate(hashes[:4]):
        client.hset(name, mapping={f"f{j}".encode(): f"v{i}.{j}".encode() for j in range(i + 2)})
    place = st.one_of(st.tuples(st.sampled_from(strings), st.none()),
                      st.tuples(st.sampled_from(hashes), st.sampled_from([f"f{j}".encode() for j in range(7)])))

    @settings(max_examples=60, deadline=None)
    @given(st.lists(place, min_size=2, max_size=40), st.integers(1, 5))
    def check(places, most):
        monkeypatch.setattr(nodes_module, "HMGET_MAX", most)
        assert nodes.read(places) == _plain(client, places)

    try:
        check()
    finally:
        client.close()


def test_a_commit_costs_one_command_a_node_and_leaves_what_its_commands_one_by_one_leave(redis_cluster):
    nodes = _nodes(redis_cluster)
    client = nodes.client
    assert nodes.scripted_ok()
    for prefix in ("writes-a", "writes-b"):
        _seed(client, prefix)
    one_by_one = [nodes._plain(op) for op in _ops("writes-b")]  # (the packed script, a command each)
    nodes.run(one_by_one)
    before = nodes.commands, nodes.waits
    got = nodes.write(_ops("writes-a"))
    assert (nodes.commands - before[0], nodes.waits - before[1]) == (3, 1)  # (three nodes, one round trip)
    assert -1 not in got and got[3] == 1 and got[4] == 0  # (created; merged into an existing field)
    want = _state(client, "writes-b")
    assert _state(client, "writes-a") == want
    assert want[0][0][b"old"] == b"".join(bytes([i]) * 8 for i in (2, 3, 4)) and want[0][0][b"new"] == bytes(8) + bytes([1]) * 8
    client.close()


def _moving(nodes, key: bytes):
    """Half migrate key's slot to another node, the key already there; the client's map unchanged."""
    client = nodes.client
    slot = client.keyslot(key)
    source = nodes.node_of(key)
    target = next(n for n in nodes.primaries() if n.name != source.name)
    src, dst = client.get_redis_connection(source), client.get_redis_connection(target)
    src_id, dst_id = src.execute_command("CLUSTER MYID"), dst.execute_command("CLUSTER MYID")
    dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    src.execute_command("MIGRATE", target.host, target.port, key, 0, 5000)

    def settle():  # (the slot given to the target for good: the other tests follow MOVED)
        for conn in (dst, src):
            conn.execute_command("CLUSTER SETSLOT", slot, "NODE", dst_id)
    return source, settle


def test_a_commit_whose_key_is_moving_writes_it_where_it_now_lies(redis_cluster):
    nodes = _nodes(redis_cluster)
    client = nodes.client
    for prefix in ("writes-c", "writes-d"):
        _seed(client, prefix)
    nodes.run([nodes._plain(op) for op in _ops("writes-d")])
    source, settle = _moving(nodes, b"writes-c:h1")
    try:
        assert nodes.node_of(b"writes-c:h1").name == source.name
        waits = nodes.waits
        got = nodes.write(_ops("writes-c"))
        assert nodes.waits - waits == 2 and -1 not in got  # (the moving key's commands sent again on their own)
    finally:
        settle()
    assert _state(client, "writes-c") == _state(client, "writes-d")
    client.close()


def test_a_key_whose_slot_is_moving_is_read_where_it_now_lies(redis_cluster):
    """A slot half migrated (its key already on the target, the client's map still naming the
    source): the source's script cannot read it and says so; the key is read again after ASK."""
    nodes = _nodes(redis_cluster)
    client = nodes.client
    places = _places(client, "reads-b", 30)
    moving, field = places[1]
    source, settle = _moving(nodes, moving)
    try:
        assert nodes.node_of(moving).name == source.name  # (the client's map still says the source)
        waits = nodes.waits
        got = nodes.read(places)
        assert nodes.waits - waits == 2  # (the node's script said it could not read it: asked again)
        assert got[1] == b"v1" and got[:1] + got[2:] == [v for i, v in enumerate(_plain(client, places)) if i != 1]
    finally:
        settle()
        client.close()


def test_a_page_on_the_cluster_costs_a_few_round_trips_and_commands(redis_cluster, articles):
    """What a checked page costs on the spread layout, counted (not timed): real articles under
    one site, half of them again as copies under other URLs, so pages meet candidates, site lines
    and second looks. Here 3.2 round trips and 9.6 commands a page (a crawler alone: its claims are
    quiet, no second look; 4.5 and 12 before quiet claims; 7.1 before a second look read
    what its filing read in one trip after its claim, a journal rode in its commit's round trip
    and its deletion on the claim, and a drop against a page read confirmed needed no look;
    7.8 before doc ids came in blocks); before the reads and the commit were batched, 10.7 and 92
    (docs/distributed.md#speed has the benchmark's). A command an entry, or half a round trip
    more a page, coming back fails this."""
    from crawler_dedup import Deduplicator

    texts = [text for _, text in articles[:16]]
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="cost-a") as d:
        nodes = d.index.store.nodes
        before = nodes.waits, nodes.commands
        pages = 0
        for n, text in enumerate(texts):
            d.check(f"https://news.test/a{n}", text=text)
            pages += 1
        for n, text in enumerate(texts[::2]):
            assert d.check(f"https://mirror.test/a{2 * n}", text=text).action == "drop"
            pages += 1
        trips, commands = (nodes.waits - before[0]) / pages, (nodes.commands - before[1]) / pages
    assert trips <= 5.0 and commands <= 30, (trips, commands)


def test_a_quiet_claim_confirms_its_page_at_once_and_one_after_another_crawlers_claim_looks_again(
        redis_cluster, articles, monkeypatch):
    """One crawler alone: from its second kept page on, no other page claims between its claims,
    so each is confirmed by its claim (no second look: two round trips fewer). Another crawler
    keeping a page between two of its claims: that page's claim noted what its filing wrote, none
    of it an entry this page's filing read or wrote, so the claim script confirms this page
    without a look (as many round trips as a quiet claim); when that crawler claimed
    without noting what it wrote (an earlier release), the page reads again what its filing read
    (nothing of it changed: confirmed without the rules run again). And the look is real: when
    the other crawler's page (a copy) was filed after this page's first reads and claimed before
    this page, what it wrote meets what this page read, the look finds it and this page withdraws
    (a group kept once)."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.stores.redis.spread import SpreadTxn

    texts = [text for _, text in articles[:8]]
    settings = dict(backend="redis", redis_url=redis_cluster)
    with Deduplicator(**settings, redis_prefix="quiet-a") as d:
        store = d.index.store
        kept = [d.check(f"https://news.test/a{n}", text=t).action for n, t in enumerate(texts[:4])]
        assert kept == ["keep"] * 4 and (store.quiet, store.unchanged) == (3, 1)  # (the first: no earlier claim)
        trips = store.nodes.waits
        assert d.check("https://news.test/a4", text=texts[4]).action == "keep" and store.quiet == 4
        quiet_trips = store.nodes.waits - trips
        with Deduplicator(**settings, redis_prefix="quiet-a") as other:
            assert other.check("https://other.test/b5", text=texts[5]).action == "keep"
        trips = store.nodes.waits
        assert d.check("https://news.test/a6", text=texts[6]).action == "keep"
        assert (store.quiet, store.unchanged, store.apart) == (4, 1, 1)
        assert store.nodes.waits - trips == quiet_trips  # (confirmed by its claim: no read again)
        from crawler_dedup.stores.redis import spread_claims

        with monkeypatch.context() as m, Deduplicator(**settings, redis_prefix="quiet-a") as other:
            m.setattr(spread_claims, "WROTE_MAX", -1)  # (a filing that notes nothing it wrote)
            assert other.check("https://other.test/b8", text=texts[3][::-1]).action == "keep"
        trips = store.nodes.waits
        assert d.check("https://news.test/a9", text=texts[2][::-1]).action == "keep"
        assert (store.quiet, store.unchanged, store.apart) == (4, 2, 1)
        assert store.nodes.waits - trips == quiet_trips + 2  # (read again, confirmed)

        # the copy filed after this page's first reads (before its filing's commit), claimed before
        # its claim: met by the look
        copy_of, late = texts[7], []
        commit = SpreadTxn.commit

        def other_files_first(txn):
            if not late:
                late.append(None)
                with Deduplicator(**settings, redis_prefix="quiet-a") as other:
                    late[0] = other.check("https://other.test/b7", text=copy_of)
            return commit(txn)

        monkeypatch.setattr(SpreadTxn, "commit", other_files_first)
        mine = d.check("https://news.test/a7", text=copy_of)
        assert (store.quiet, store.unchanged, store.apart) == (4, 2, 1)  # (its look ran the rules)
    assert late[0].action == "keep" and (mine.action, mine.duplicate_of, mine.rule) == (
        "drop", "https://other.test/b7", "claim"), (late, mine)


def _batch_after_another_crawler(redis_cluster, articles, monkeypatch, prefix: str, batch: tuple[int, ...],
                                  theirs: int) -> tuple:
    """Three pages kept one by one (their claims give the batch's filing a count to go by), then
    the pages `batch` (indexes into the articles) decided in one group commit, while another
    crawler keeps article `theirs` after the batch's reads and claims before the batch's first
    claim. (the other crawler's verdict, the batch's verdicts, the quiet / apart / unchanged
    claims the batch made)."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.stores.redis.spread import SpreadTxn

    texts = [text for _, text in articles[:max(*batch, theirs) + 1]]
    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix=prefix)
    with Deduplicator(**settings) as d:
        store = d.index.store
        for n, text in enumerate(texts[:3]):
            assert d.check(f"https://news.test/a{n}", text=text).action == "keep"
        late: list = []
        commit = SpreadTxn.commit

        def other_files_first(txn):
            if not late and not txn.claimed:
                late.append(None)
                with Deduplicator(**settings) as other:
                    late[0] = other.check(f"https://other.test/b{theirs}", text=texts[theirs])
            return commit(txn)

        monkeypatch.setattr(SpreadTxn, "commit", other_files_first)
        before = (store.quiet, store.apart, store.unchanged)
        got = d.decide_many([d.prepare(f"https://news.test/a{n}", text=texts[n])[1] for n in batch])
        counts = (store.quiet - before[0], store.apart - before[1], store.unchanged - before[2])
    return late[0], got, counts


def test_a_batchs_later_page_is_not_quiet_after_another_crawlers_claim_came_before_the_batchs_first(
        redis_cluster, articles, monkeypatch):
    """Two pages decided in one group commit (DEDUP_COMMIT_BATCH): another crawler files a copy
    of the second after the batch's reads and claims before the batch's first claim. The first
    page's claim takes a later order than its filing expected, so the second's claim is no quiet
    one either (its own predecessor's order is not the count before the batch's reads): its look
    finds the copy and it withdraws."""
    late, (first, second), _ = _batch_after_another_crawler(redis_cluster, articles, monkeypatch, "quiet-b", (3, 4), 4)
    assert late.action == "keep" and first.action == "keep", (late, first)
    assert (second.action, second.duplicate_of, second.rule) == ("drop", "https://other.test/b4", "claim"), second


def test_a_batchs_pages_are_each_confirmed_apart_by_their_one_claim(redis_cluster, articles, monkeypatch):
    """Three pages decided in one group commit; another crawler keeps a page of its own (no copy
    of theirs) after the batch's reads and claims before the batch claims. The batch's pages claim
    in one script, each page's own reads and writes compared with what the pages claimed before it
    wrote (the other crawler's, and its batch's earlier pages'): none wrote anything it looked at
    (`apart`), so all three are confirmed by the claim (no look, no read again)."""
    late, got, counts = _batch_after_another_crawler(redis_cluster, articles, monkeypatch, "quiet-c", (3, 4, 5), 6)
    assert late.action == "keep" and [v.action for v in got] == ["keep"] * 3, (late, got)
    assert counts == (0, 3, 0), counts


def test_doc_ids_come_in_blocks_and_two_crawlers_never_share_one(redis_cluster, articles, monkeypatch):
    """Two crawler processes' stores on one index take doc ids in blocks (stores/redis/ids.py): one
    counter round trip for up to 16 pages filed, not one a page, every id handed out once, and the
    counter past every id (`index verify` checks that)."""
    from crawler_dedup import Deduplicator
    from crawler_dedup.stores.redis.spread import SpreadTxn

    counted = []
    incr = SpreadTxn.incr
    monkeypatch.setattr(SpreadTxn, "incr", lambda self, table, key, *a: counted.append(key) or incr(self, table, key, *a))
    texts = [text for _, text in articles[:24]]
    with (Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="ids-a") as a,
          Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="ids-a") as b):
        verdicts = [(a if n % 2 else b).check(f"https://news.test/a{n}", text=text) for n, text in enumerate(texts)]
        after = a.index.read(lambda txn: txn.next_doc_id_now())
    ids = [v.doc_id for v in verdicts if v.action == "keep"]
    assert None not in ids and len(set(ids)) == len(ids) >= 12, verdicts
    assert counted.count(b"next_id") == 2  # (one block a crawler: 12 pages each)
    assert after is not None and after > max(ids)


def test_id_blocks_are_taken_anew_after_a_slot_moved_or_a_failover():
    """A failover may lose the counter's last INCRBY (replication is asynchronous): the ids left of
    a block taken before are not used after the store learns the cluster moved (RedisStore.moved)."""
    from crawler_dedup.stores.redis.ids import IdBlocks

    counter = [0]

    def incr(n):
        counter[0] += n
        return counter[0]
    ids = IdBlocks(block=4)
    assert [ids.next("meta", b"next_id", 1, 0, incr) for _ in range(3)] == [1, 2, 3]
    ids.clear()
    counter[0] = 2  # (rolled back past the block)
    assert ids.next("meta", b"next_id", 1, 0, incr) == 3 and counter[0] == 6
