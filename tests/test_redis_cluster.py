"""The spread layout on a real 3-node Redis Cluster (stores/redis/spread.py): the index over every
node, few bytes a page, a group kept once by racing processes (claims), a node restarting, and
an index of the one-slot layout refused with how to move it."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.exceptions import StoreError

from .conftest import cluster_node, start_cluster, wait_cluster_ok


def _nodes(url: str):
    from redis.cluster import RedisCluster

    cluster = RedisCluster.from_url(url)
    return cluster, [cluster.get_redis_connection(n) for n in cluster.get_primaries()]


def _keys(nodes, prefix: str) -> list[list[bytes]]:
    from crawler_dedup.stores.redis.spread_keys import escape as _escape

    out = []
    for node in nodes:
        pattern = _escape(prefix.encode()) + b"[:]*"
        tagged = b"{" + _escape(prefix.encode()) + b"}*"
        out.append([bytes(k) for k in node.scan_iter(match=pattern)] + [bytes(k) for k in node.scan_iter(match=tagged)])
    return out


def test_the_index_is_spread_over_every_node_at_few_bytes_a_page(redis_cluster):
    """1,500 pages (the benchmark's stream of real texts, a third of them copies, each with a title
    and a crawl-like URL; DEDUP_STORE_TEXT=False): every node holds a part of the index, none
    more than half its keys, and a kept page adds under 1,500 bytes of keys (measured between the
    300th and the 1,500th page, past the fixed cost of the empty shards)."""
    import sys

    from .conftest import ROOT

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from redis_backend import texts

    stream = texts(1500)
    cluster, nodes = _nodes(redis_cluster)

    def used() -> int:
        return sum(node.memory_usage(k, samples=0) or 0 for node, ks in zip(nodes, _keys(nodes, "spread-bytes"))
                   for k in ks)

    kept, marks = 0, []
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="spread-bytes", store_text=False) as d:
        assert d.index.store.spread and not d.index.store.serializable
        for n, (url, text) in enumerate(stream):
            title = " ".join(text.split()[:9]).title() + " | The Example Daily"
            kept += d.check(f"https://news.example.com/2026/11/section/{url.rsplit('/', 1)[1]}-story-slug.html",
                            text=text, title=title).action == "keep"
            if n + 1 in (300, 1500):
                marks.append((kept, settled(used)))
    keys = _keys(nodes, "spread-bytes")
    assert all(keys) and max(map(len, keys)) <= sum(map(len, keys)) / 2, [len(k) for k in keys]
    (kept0, used0), (kept1, used1) = marks
    assert kept1 - kept0 > 500 and (used1 - used0) / (kept1 - kept0) < 1500, marks
    cluster.close()


def settled(measure, tries: int = 20) -> int:
    """`measure()` once Redis has finished growing its tables (a dict being rehashed counts both
    tables: under a loaded machine its background rehash lags, and a reading can be 10% high)."""
    import time

    last = measure()
    for _ in range(tries):
        time.sleep(0.25)
        now = measure()
        if now == last:
            return now
        last = now
    return last


def _racer(url: str, prefix: str, n: int, texts: list[str], start, out) -> None:
    kept = []
    with Deduplicator(backend="redis", redis_url=url, redis_prefix=prefix) as d:
        for g, body in enumerate(texts):
            words = body.split()
            words[(n * 7 + g) % len(words)] = f"edit{n}"  # a near copy, not a byte copy
            start.wait(timeout=60)
            v = d.check(f"https://site{n}.example/{g}", text=" ".join(words))
            if v.action == "keep":
                kept.append(g)
            elif v.error:
                kept.append(-1)
    out.put(kept)


def test_four_processes_racing_on_every_group_keep_it_once(redis_cluster, articles):
    """4 processes (as on 4 machines) check a copy of the same article at the same moment, group
    after group, on the spread layout: no transaction spans the cluster's slots, and the claims
    still keep each group once (without the second look most groups are kept twice or more)."""
    texts = [body for _, body in articles[:12]]
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_racer, args=(redis_cluster, "race-procs", n, texts, start, out)) for n in range(4)]
    for p in procs:
        p.start()
    kept = [g for _ in procs for g in out.get(timeout=180)]
    for p in procs:
        p.join(timeout=30)
    assert -1 not in kept
    assert sorted(kept) == list(range(len(texts))), kept


def test_a_node_restarted_mid_crawl_costs_no_page(tmp_path, articles, caplog):
    """A node of the cluster stops (its data on disk) and comes back: the pages decided while it is
    down (past DEDUP_REDIS_RETRY) are kept and counted as store errors (never dropped unseen,
    never a failed crawl), the message names the node, and after the first page has waited its
    time the next ones fail at once (an outage costs one wait, not one a page); afterwards copies
    of the pages kept before are dropped again."""
    import logging

    procs, ports, url = start_cluster(tmp_path, "--appendonly", "yes")
    try:
        settings = dict(backend="redis", redis_url=url, redis_prefix="restart", redis_retry=1)
        with Deduplicator(**settings) as d:
            for n in range(4):
                assert d.check(f"https://a/{n}", text=articles[n][1]).action == "keep"
            procs[1].send_signal(signal.SIGTERM)  # a clean stop: its append-only file is complete
            procs[1].wait(timeout=20)
            with caplog.at_level(logging.WARNING):
                down = [d.check(f"https://b/{n}", text=articles[n][1]) for n in range(4)]
            assert [(v.action, v.error) for v in down] == [("keep", "store")] * 4
            said = " ".join(r.getMessage() for r in caplog.records)
            assert f"127.0.0.1:{ports[1]}" in said and "after 1 s (DEDUP_REDIS_RETRY)" in said
            assert d.index.store.patience.gave_up == 1  # one page waited; the next failed at once
            procs[1] = cluster_node(ports[1], tmp_path, "--appendonly", "yes")
            wait_cluster_ok(ports)
            time.sleep(3.5)  # (past the quick failures after the give-up: three times DEDUP_REDIS_RETRY)
            after = [d.check(f"https://c/{n}", text=articles[n][1]) for n in range(4)]
        assert [(v.action, v.duplicate_of) for v in after] == [("drop", f"https://a/{n}") for n in range(4)]
    finally:
        for proc in procs:
            proc.kill()


def test_an_index_of_the_one_slot_layout_is_refused_with_how_to_move_it(redis_cluster, articles):
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="old-layout", redis_layout="slot") as d:
        assert d.check("https://a/1", text=articles[0][1]).action == "keep"
    with pytest.raises(StoreError, match="one-slot layout.*DEDUP_REDIS_LAYOUT=slot.*index add"):
        Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="old-layout").open()
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="old-layout", redis_layout="slot") as d:
        assert d.check("https://b/1", text=articles[0][1]).action == "drop"  # read as before


def test_spread_is_refused_on_one_server(redis_server):
    with pytest.raises(StoreError, match="needs a Redis Cluster"):
        Deduplicator(backend="redis", redis_url=redis_server, redis_prefix="x", redis_layout="spread").open()


def test_with_a_window_the_spread_index_empties_itself(redis_cluster, articles):
    """DEDUP_WINDOW=1: a page stops matching after a second, and every key the pages wrote (their
    records, and the generation of shards they were filed in) expires by itself: only the meta
    hash (plan, counters) is left."""
    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix="window-spread", window=1)
    with Deduplicator(**settings) as d:
        now = time.time()
        assert d.check("https://a/1", text=articles[0][1], now=now).action == "keep"
        assert d.check("https://b/1", text=articles[0][1], now=now).action == "drop"
        assert d.check("https://c/1", text=articles[0][1], now=now + 1.5).action == "keep"  # out of the window
    cluster, nodes = _nodes(redis_cluster)
    assert len([k for ks in _keys(nodes, "window-spread") for k in ks]) > 3
    deadline = time.time() + 10
    while time.time() < deadline:
        left = [k for ks in _keys(nodes, "window-spread") for k in ks]
        if left == [b"{window-spread}:m"]:
            break
        time.sleep(0.25)
    assert left == [b"{window-spread}:m"], left
    cluster.close()


def test_the_shards_double_as_the_index_grows_and_every_entry_moves(redis_cluster, monkeypatch):
    """Shards doubling from the first page (growth.py with 1 entry a shard and no grace): the
    stream's decisions are those of an index that never grew, every kept page is found again
    after (its URL unchanged, its copy dropped), and a finished growth leaves no old shard."""
    import sys

    from crawler_dedup.stores.redis import growth

    from .conftest import ROOT

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from redis_backend import texts

    stream = texts(240)

    settings = dict(backend="redis", redis_url=redis_cluster, store_text=False, redis_retry=0)

    def decide(prefix: str) -> tuple[list[tuple[str, str | None]], list[tuple[str, str]]]:
        with Deduplicator(redis_prefix=prefix, **settings) as d:
            verdicts = [d.check(url, text=text) for url, text in stream]
            kept = [(url, text) for (url, text), v in zip(stream, verdicts) if v.action == "keep"]
        return [(v.action, v.duplicate_of) for v in verdicts], kept

    plain, _ = decide("grow-not")
    monkeypatch.setattr(growth, "ENTRIES_PER_SHARD", 1)
    monkeypatch.setattr(growth, "GRACE_S", 0.0)
    monkeypatch.setattr(growth, "REFRESH_S", 0.0)
    grown, kept = decide("grow")
    assert grown == plain
    cluster, nodes = _nodes(redis_cluster)
    meta = cluster.hgetall("{grow}:m")
    assert int(meta[b"shards"]) >= 512, meta
    with Deduplicator(redis_prefix="grow", **settings) as d:
        again = [d.check(url, text=text) for url, text in kept]
        assert all(v.action == "drop" and v.duplicate_of == url for v, (url, _) in zip(again, kept))
        copies = [d.check(url + "?copy", text=text) for url, text in kept]
        assert all(v.action == "drop" and v.duplicate_of == url for v, (url, _) in zip(copies, kept))
        monkeypatch.setattr(growth, "ENTRIES_PER_SHARD", 10**6)  # no more doubling: let the last one end
        for _ in range(4000):  # commits move the old shards, then delete them, one each
            meta = cluster.hgetall("{grow}:m")
            if b"growing" not in meta and b"sweeping" not in meta:
                break
            d.check(f"https://filler.example/{_}", text=f"filler page {_} " * 40)
    levels = {k.split(b":")[2] for ks in _keys(nodes, "grow") for k in ks if k.startswith(b"grow:h")}
    assert levels == {cluster.hget("{grow}:m", "shards")}, levels
    cluster.close()


def test_a_page_removed_from_the_spread_layout_leaves_no_entry(redis_cluster, articles):
    """A coarse record (3-byte sketch hashes) still knows the whole hashes it was filed under in
    the postings: removing it (an updated revisit, `index remove`) leaves the index whole."""
    import subprocess
    import sys

    from crawler_dedup.core.index.integrity import verify

    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix="removal", store_text=False)
    with Deduplicator(**settings) as d:
        for n, (_, text) in enumerate(articles[:6]):
            assert d.check(f"https://site.test/{n}", text=text).action == "keep"
        words = articles[0][1].split()
        changed = " ".join(words[: len(words) // 2]) + " an update " + " ".join(reversed(words[len(words) // 2:]))
        assert d.check("https://site.test/0", text=changed).action == "keep"  # the old record goes
        assert verify(d.index).ok, verify(d.index).problems
    got = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "remove", "https://site.test/3", "--yes",
                          "--redis", redis_cluster, "-s", "DEDUP_REDIS_PREFIX=removal"],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr
    with Deduplicator(**settings) as d:
        report = verify(d.index)
        assert report.ok and report.pages == 5, report.problems
    expire = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "expire", "--window", "5", "--yes",
                             "--redis", redis_cluster, "-s", "DEDUP_REDIS_PREFIX=removal"],
                            capture_output=True, text=True, timeout=120)
    assert expire.returncode == 2 and "no time index" in expire.stderr, expire.stderr


def test_a_mover_killed_mid_growth_leaves_no_entry_behind(redis_cluster, monkeypatch):
    """Growth survives a process killed while it moves a shard: the shard was handed out with a
    lease and is not marked moved, so once the lease runs out another process moves it; growth
    ends only when every entry is in the new level. Every kept page is found again after (its URL,
    its copy), and `index verify` is clean. (Growth once counted a shard moved before moving it:
    a mover killed in between lost the shard's entries, and the last shard's loss kept the growth
    from ever ending.)"""
    import sys

    from crawler_dedup.core.index.integrity import verify
    from crawler_dedup.stores.redis import growth

    from .conftest import ROOT

    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from redis_backend import texts

    stream = texts(120)
    monkeypatch.setattr(growth, "ENTRIES_PER_SHARD", 2)
    monkeypatch.setattr(growth, "GRACE_S", 0.0)
    monkeypatch.setattr(growth, "REFRESH_S", 0.0)
    monkeypatch.setattr(growth, "LEASE_S", 0.5)
    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix="grow-killed", store_text=False,
                    redis_retry=0)
    cluster, nodes = _nodes(redis_cluster)
    kept: list[tuple[str, str]] = []
    with Deduplicator(**settings) as d:
        store = d.index.store
        killed = None
        for url, text in stream:
            if d.check(url, text=text).action == "keep":
                kept.append((url, text))
            if killed is None and store.map.growing:
                killed = store.map.task()  # taken by a mover that dies now: never moved, never done
                assert killed is not None and killed[0] == growth.GROWING and killed[2]
        assert killed is not None, "the shards never grew"
        monkeypatch.setattr(growth, "ENTRIES_PER_SHARD", 10**6)  # no more doubling: let this growth end
        for n in range(4000):
            meta = cluster.hgetall("{grow-killed}:m")
            if b"growing" not in meta and b"sweeping" not in meta:
                break
            d.check(f"https://filler.example/{n}", text=f"filler page {n} " * 40)
        else:
            raise AssertionError(f"the growth never ended: {meta}")
        levels = {k.split(b":")[2] for ks in _keys(nodes, "grow-killed") for k in ks if k.startswith(b"grow-killed:h")}
        assert levels == {meta[b"shards"]}, levels  # the old level is gone, all of it
        again = [d.check(url, text=text) for url, text in kept]
        assert all(v.action == "drop" and v.duplicate_of == url for v, (url, _) in zip(again, kept))
        copies = [d.check(url + "?copy", text=text) for url, text in kept]
        assert all(v.action == "drop" and v.duplicate_of == url for v, (url, _) in zip(copies, kept))
        report = verify(d.index)
        assert report.ok, report.problems[:5]
    cluster.close()


def test_a_lost_reply_never_applies_a_command_twice(redis_cluster, articles, monkeypatch):
    """A connection that breaks after the commands went out (the reply lost, the commands run):
    what is sent again is idempotent (a claim re-sent for its doc id gets the order it got), and
    the entry count that doubles the shards is not sent again (once, its reply LOST). A page's
    claim once came back as a second order, and both copies of a pair could withdraw."""
    from crawler_dedup.stores.redis import nodes as nodes_module

    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="lost-reply", store_text=False) as d:
        store = d.index.store
        assert d.check("https://a/0", text=articles[0][1]).action == "keep"
        meta = store.client.hgetall(store.meta_key)
        claims, entries = int(meta[b"claims"]), int(meta[b"entries"])
        receive = nodes_module.Nodes._receive
        cut = {"left": 0}

        def lose_the_reply(self, *pending):
            out = receive(self, *pending)  # (the commands ran)
            if cut["left"]:
                cut["left"] -= 1
                raise store.redis.ConnectionError("connection cut before the reply")
            return out

        monkeypatch.setattr(nodes_module.Nodes, "_receive", lose_the_reply)
        cut["left"] = 1
        order = store.write(lambda t: t.claim(10_000))
        assert store.write(lambda t: t.claim(10_000)) == order
        assert int(store.client.hget(store.meta_key, "claims")) == claims + 1  # one order taken, not two
        cut["left"] = 1
        got = store.nodes.run([(store.meta_key, store.map.grow_command(5))], once=[0])
        assert got == [nodes_module.LOST]
        assert int(store.client.hget(store.meta_key, "entries")) == entries + 5  # counted once
        monkeypatch.undo()
        assert d.check("https://b/0", text=articles[0][1]).duplicate_of == "https://a/0"


def test_an_index_whose_meta_was_lost_with_a_node_refuses_to_start_over(tmp_path, articles):
    """The node holding the index's meta hash (plan, counters, claims) restarts without
    persistence while the other nodes keep the rest: the running crawl keeps its pages unchecked
    (never files one under a doc id given already), and the next crawl refuses to open the index,
    in one line naming the fix (it once made a new plan and filed over the old pages silently)."""
    from crawler_dedup.exceptions import StoreDamaged

    procs, ports, url = start_cluster(tmp_path)  # no persistence, as the docs' old example ran it
    try:
        settings = dict(backend="redis", redis_url=url, redis_prefix="lost-meta", store_text=False)
        with Deduplicator(**settings) as d:
            for n in range(6):
                assert d.check(f"https://a/{n}", text=articles[n][1]).action == "keep"
            store = d.index.store
            holder = store.nodes.node_of(store.meta_key)
            records = [b"lost-meta:d:" + n.to_bytes(8, "big") for n in range(1, 7)]
            staying = {k: store.client.get(k) for k in records if store.nodes.node_of(k).name != holder.name}
            at = ports.index(holder.port)
            procs[at].kill()
            procs[at].wait(timeout=20)
            procs[at] = cluster_node(ports[at], tmp_path)  # back, empty, with its cluster config
            wait_cluster_ok(ports)
            time.sleep(0.5)
            assert not store.client.exists(store.meta_key)
            later = d.check("https://b/9", text=articles[9][1])
            assert (later.action, later.error) == ("keep", "store")
            assert staying and {k: store.client.get(k) for k in staying} == staying  # nothing filed over them
        with pytest.raises(StoreDamaged, match=r"lost its meta hash.*new DEDUP_REDIS_PREFIX") as info:
            Deduplicator(**settings).open()
        assert "\n" not in str(info.value)
    finally:
        for proc in procs:
            proc.kill()


def test_fetch_entries_are_packed_into_shards_unless_they_carry_copies(redis_cluster):
    """A URL's fetch entry (its validators) is a field of a shard of its own family by default (a
    key of its own costs about 150 bytes of Redis memory for a 56-byte value); with copies of the
    bodies kept (DEDUP_CONDITIONAL_COPY=True) it is a key of its own, too long to pack. Each way
    reads the other's, and removing an entry takes it out of both places."""
    from crawler_dedup.core.index.records import url_key

    key, other = url_key("https://a.example/1"), url_key("https://a.example/2")
    with Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="fetch-packed") as packed, \
            Deduplicator(backend="redis", redis_url=redis_cluster, redis_prefix="fetch-packed",
                         conditional_copy=True) as apart:
        assert not packed.index.store.fetch_copies and apart.index.store.fetch_copies
        packed.index.write(lambda t: t.fetch_put(key, b"v" * 56))
        apart.index.write(lambda t: t.fetch_put(other, b"w" * 900))
        cluster, nodes = _nodes(redis_cluster)
        own = [k for ks in _keys(nodes, "fetch-packed") for k in ks if k.startswith(b"fetch-packed:f:")]
        assert own == [b"fetch-packed:f:" + other]  # the packed one is a field of an :hf shard
        assert any(k.startswith(b"fetch-packed:hf") for ks in _keys(nodes, "fetch-packed") for k in ks)
        for d in (packed, apart):
            assert d.index.read(lambda t: (t.fetch_get(key), t.fetch_get(other))) == (b"v" * 56, b"w" * 900)
        packed.index.write(lambda t: t.fetch_delete(other))
        apart.index.write(lambda t: t.fetch_delete(key))
        assert packed.index.read(lambda t: (t.fetch_get(key), t.fetch_get(other))) == (None, None)
        cluster.close()


def test_a_node_at_its_maxclients_is_waited_for_as_a_lost_connection(redis_cluster, articles):
    """A node of the cluster full of connections refuses a new one (Redis 7 says "max number of
    clients + cluster connections reached"): within DEDUP_REDIS_RETRY the index waits for it, at
    its opening and at a page, as for a node restarting; nothing is kept unchecked."""
    import threading

    import redis

    cluster, nodes = _nodes(redis_cluster)
    cluster.close()
    admin = redis.Redis(port=min(n.connection_pool.connection_kwargs["port"] for n in nodes))
    most = admin.config_get("maxclients")["maxclients"]

    def refuse(seconds):
        admin.config_set("maxclients", 1)
        admin.execute_command("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")  # (the index's too)
        threading.Timer(seconds, lambda: admin.config_set("maxclients", most)).start()

    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix="maxclients", redis_retry=5)
    try:
        refuse(0.5)
        with Deduplicator(**settings) as d:  # (opened while the node refuses: waited for)
            kept = [d.check(f"https://a/{n}", text=articles[n][1]) for n in range(6)]
            refuse(0.5)
            again = [d.check(f"https://b/{n}", text=articles[n][1]) for n in range(6)]
        assert [(v.action, v.error) for v in kept] == [("keep", None)] * 6
        assert [(v.action, v.duplicate_of) for v in again] == [("drop", f"https://a/{n}") for n in range(6)]
    finally:
        time.sleep(0.6)
        admin.config_set("maxclients", most)
        admin.close()
