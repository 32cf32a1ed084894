"""A commit cut off half-way on the spread layout (stores/redis/journal.py), on a real 3-node
Redis Cluster: a crawler SIGKILLed between its commit's round trips, or whose commit failed
half-way, leaves its write journal; the next crawler to open the index (or the process itself,
before its next write) applies the commit whole, and `index verify` is clean after."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.core.index.integrity import verify


def _settings(url: str, prefix: str) -> dict:
    return dict(backend="redis", redis_url=url, redis_prefix=prefix, store_text=False, redis_retry=0)


def _edited(text: str) -> str:
    words = text.split()
    return " ".join(words[: len(words) // 2]) + " an update " + " ".join(reversed(words[len(words) // 2:]))


def _die_after_first_trip(url: str, prefix: str, articles: list[str], commit: int) -> None:
    """File the pages, then update the first one and die (SIGKILL) in the first round trip of
    the update's `commit`th commit (1: the new version filed; 2: the old one removed), half of its
    commands applied (the nodes apply theirs each on its own)."""
    from crawler_dedup.stores.redis import journal, nodes

    state = {"armed": False, "began": False, "commits": 0}
    begin, run = journal.Journal.begin, nodes.Nodes.run

    def noted(self, blob):
        begin(self, blob)
        state["commits"] += state["armed"]
        state["began"] = state["commits"] == commit

    def trip(self, batch, *args, **kwargs):
        if state["began"]:
            run(self, batch[:len(batch) // 2], *args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        return run(self, batch, *args, **kwargs)

    journal.Journal.begin, nodes.Nodes.run = noted, trip
    with Deduplicator(**_settings(url, prefix)) as d:
        for n, text in enumerate(articles):
            assert d.check(f"https://site.test/{n}", text=text).action == "keep"
        state["armed"] = True
        d.check("https://site.test/0", text=_edited(articles[0]))
    raise AssertionError("not killed")


def _die_after_first_node(url: str, prefix: str, articles: list[str]) -> None:
    """File the pages, then a new one, and die (SIGKILL) in its commit's round trip as soon as
    the first node's commands are sent, before any other node's."""
    from crawler_dedup.stores.redis import nodes

    state = {"armed": False}
    send = nodes.Nodes._send

    def sent(self, node, cmds, ask):
        out = send(self, node, cmds, ask)
        writes = [c for c in cmds if (c[0] == "SET" and b":j:" in bytes(c[1])) or c[:2] == ("EVALSHA", self.sha.get("write"))]
        if state["armed"] and writes:  # (the first node sent that a commit writes to: nothing read back yet)
            if not any(c[0] == "SET" for c in writes):
                os._exit(3)  # (a write sent before its journal)
            os.kill(os.getpid(), signal.SIGKILL)
        return out

    nodes.Nodes._send = sent
    with Deduplicator(**_settings(url, prefix)) as d:
        for n, text in enumerate(articles[1:]):
            assert d.check(f"https://site.test/{n + 1}", text=text).action == "keep"
        state["armed"] = True
        d.check("https://site.test/0", text=articles[0])
    raise AssertionError("not killed")


def test_a_crawler_killed_after_its_commits_first_node_was_sent_leaves_the_journal(redis_cluster, articles):
    """Within a decision a commit's journal rides in the commit's own round trip, its node's
    commands sent before any other node's: a crawler killed after the first node's were sent
    has sent the journal, so the next crawler applies the commit whole (the page filed, 6)."""
    texts = [text for _, text in articles[:6]]
    prefix = "journal-first-node"
    proc = multiprocessing.get_context("spawn").Process(target=_die_after_first_node,
                                                         args=(redis_cluster, prefix, texts))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -signal.SIGKILL, proc.exitcode
    said = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "verify", "--json", "--redis", redis_cluster,
                           "-s", f"DEDUP_REDIS_PREFIX={prefix}"], capture_output=True, text=True, timeout=120)
    assert json.loads(said.stdout)["unfinished_commits"] == 1, said.stdout
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:  # (opening finishes the killed commit)
        assert d.index.store.journal.finished == 1
        report = verify(d.index)
        assert report.ok and report.pages == 6, report.problems


@pytest.mark.parametrize("commit,pages", [(1, 7), (2, 6)])
def test_a_crawler_killed_in_a_commits_round_trip_leaves_it_to_the_next_crawler(redis_cluster, articles, commit,
                                                                                      pages):
    """Killed in the update's first commit (its new version filed), the old version stays kept
    (its removal, the second commit, never began: 7 pages); killed in the second, the old
    version is gone whole (6). Either way no entry is left half written."""
    texts = [text for _, text in articles[:6]]
    prefix = f"journal-kill-{commit}"
    ctx = multiprocessing.get_context("spawn")
    proc = ctx.Process(target=_die_after_first_trip, args=(redis_cluster, prefix, texts, commit))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -signal.SIGKILL, proc.exitcode
    said = subprocess.run([sys.executable, "-m", "crawler_dedup", "index", "verify", "--json", "--redis", redis_cluster,
                           "-s", f"DEDUP_REDIS_PREFIX={prefix}"], capture_output=True, text=True, timeout=120)
    half = json.loads(said.stdout)  # (read only: nothing applied yet)
    assert said.returncode == 1 and not half["whole"], "the kill left nothing half done: the test misses the journal"
    assert half["unfinished_commits"] == 1, half
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:  # (opening finishes the killed commit)
        assert d.index.store.journal.finished == 1
        report = verify(d.index)
        assert report.ok and report.pages == pages, report.problems
        if commit == 2:  # (killed before its claim was confirmed, the new version's copies wait 40 s)
            assert d.check("https://copy.test/0", text=_edited(texts[0])).duplicate_of == "https://site.test/0"
        assert d.check("https://copy.test/1", text=texts[1]).duplicate_of == "https://site.test/1"
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:
        assert d.index.store.journal.finished == 0  # (finished once: the journal is gone)


def test_a_commit_that_failed_half_way_is_applied_whole_before_the_next_write(redis_cluster, articles, monkeypatch):
    """A commit whose round trip fails half done (a node gone past DEDUP_REDIS_RETRY) keeps the
    page unchecked; the same process applies that commit whole before its next write."""
    from crawler_dedup.exceptions import StoreError
    from crawler_dedup.stores.redis import journal, nodes

    texts = [text for _, text in articles[:6]]
    state = {"armed": False, "after": -1}
    begin, run = journal.Journal.begin, nodes.Nodes.run

    def noted(self, blob):
        begin(self, blob)
        if state["armed"]:
            state["after"] = 0

    def trip(self, batch, *args, **kwargs):
        if state["after"] >= 0:  # (the commit's first round trip: half its commands done, then it fails)
            state["after"], state["armed"] = -1, False
            run(self, batch[:len(batch) // 2], *args, **kwargs)
            raise StoreError("Redis Cluster: 3 of 3 commands not done at once: a node is gone")
        return run(self, batch, *args, **kwargs)

    monkeypatch.setattr(journal.Journal, "begin", noted)
    monkeypatch.setattr(nodes.Nodes, "run", trip)
    with Deduplicator(**_settings(redis_cluster, "journal-fail")) as d:
        for n, text in enumerate(texts):
            assert d.check(f"https://site.test/{n}", text=text).action == "keep"
        state["armed"] = True
        verdict = d.check("https://site.test/0", text=_edited(texts[0]))
        assert verdict.action == "keep" and verdict.error, verdict  # (kept unchecked)
        assert d.index.store.journal.pending is not None and not verify(d.index).ok
        d.check("https://other.test/9", text="an unrelated page of its own " * 40)
        assert d.index.store.journal.pending is None and d.index.store.journal.finished == 1
        report = verify(d.index)
        # (the update's new version filed whole; its old one's removal, the second look, never began)
        assert report.ok and report.pages == 8, report.problems


def test_a_crawler_running_finishes_the_journal_of_one_killed_beside_it(redis_cluster, articles, monkeypatch):
    """The crawlers already running look for gone writers' journals every BEAT_S (here at each
    write): one killed mid-commit is finished without any crawler opening the index again."""
    from crawler_dedup.stores.redis import journal

    texts = [text for _, text in articles[:6]]
    prefix = "journal-beside"
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:
        assert d.check("https://before.test/", text="a page filed before the other crawler started " * 30).action == "keep"
        ctx = multiprocessing.get_context("spawn")
        proc = ctx.Process(target=_die_after_first_trip, args=(redis_cluster, prefix, texts, 2))
        proc.start()
        proc.join(timeout=120)
        assert proc.exitcode == -signal.SIGKILL, proc.exitcode
        assert not verify(d.index).ok  # (half done, until a crawler looks)
        monkeypatch.setattr(journal, "BEAT_S", 0.0)
        d.check("https://after.test/", text="a page filed after the other crawler was killed " * 30)
        assert d.index.store.journal.finished == 1
        report = verify(d.index)
        assert report.ok and report.pages == 8, report.problems


def test_threads_sharing_a_store_keep_a_journal_each(redis_cluster):
    """Two threads committing through one store at once write two journals, not one the other
    overwrites: each is applied whole if its commit is cut off."""
    import threading

    with Deduplicator(**_settings(redis_cluster, "journal-threads")) as d:
        store = d.index.store
        both = threading.Barrier(2)
        keys: dict[str, bytes] = {}

        def begin(name: str) -> None:
            store.journal.begin(b"J1" + name.encode())  # (a journal a commit would write)
            keys[name] = store.journal.mine.key
            both.wait(timeout=30)  # (both written before either is done with)

        threads = [threading.Thread(target=begin, args=(n,)) for n in ("one", "two")]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert keys["one"] != keys["two"]
        got = store.nodes.run([(k, ("GET", k)) for k in (keys["one"], keys["two"])])
        assert [bytes(g) for g in got] == [b"J1one", b"J1two"]
        assert store.journal.pending is None  # (this thread began none)
        store.nodes.run([(k, ("DEL", k)) for k in keys.values()])
        for slot in store.journal.slots.values():
            slot.pending = None


def test_within_a_decision_a_journals_deletion_rides_on_the_next_round_trip_and_is_sent_at_its_end(redis_cluster):
    """A page's decision (store.deferring()) spares a round trip a commit: its journal's deletion
    goes with the thread's next round trip (a filing's claim), and whatever is still due when the
    decision ends is sent then; outside one, a commit deletes its journal at once. The journal of
    a commit applied whole never outlives the decision that wrote it."""
    with Deduplicator(**_settings(redis_cluster, "journal-ride")) as d:
        index, store = d.index, d.index.store
        key = store.journal.mine.key

        def there() -> bool:
            return bool(store.nodes.run([(key, ("EXISTS", key))], wait=5.0)[0])

        index.write(lambda txn: txn.meta_put("x", b"1"))
        assert not there()  # (outside a decision: deleted by the commit's own last trip)
        with store.deferring():
            index.write(lambda txn: txn.meta_put("x", b"2"))
            assert store.nodes.riders  # (due: not sent yet)
            assert index.read(lambda txn: txn.meta_get("x")) == b"2"  # (a round trip: it rides on it)
            assert not store.nodes.riders and not there()
            index.write(lambda txn: txn.meta_put("x", b"3"))
        assert not store.nodes.riders and not there()  # (sent as the decision ended)
        assert store.journal.pending is None


class _Buffer:
    """A transaction's buffer as journal.encode reads it (buffer.BufferedTxn's four fields)."""

    def __init__(self):
        self.single, self.added, self.removed, self.cleared = {}, {}, {}, set()


def test_a_journal_holds_every_kind_of_change_and_refuses_one_cut_short():
    from crawler_dedup.stores.redis.journal import decode, encode

    txn = _Buffer()
    txn.single = {("docs", b"\x00\x01"): b"record" * 300, ("urls", b"u"): None, ("meta", b"k"): b""}
    txn.added = {("t0", b"\x07"): {b"a" * 8, b"b" * 8}, ("mins", b"m"): set()}
    txn.removed = {("t1", b"\x08"): {b"c" * 8}}
    txn.cleared = {("lines", b"x")}
    blob = encode(txn)
    back = _Buffer()
    decode(blob, back)
    assert back.single == txn.single and back.cleared == txn.cleared and back.removed == txn.removed
    assert back.added == {("t0", b"\x07"): {b"a" * 8, b"b" * 8}}  # (an empty set changes nothing)
    assert encode(_Buffer()) is None
    for cut in (len(blob) - 1, len(blob) // 2, 9):
        with pytest.raises(ValueError):
            decode(blob[:cut], _Buffer())
    with pytest.raises(ValueError):
        decode(b"not a journal", _Buffer())


def test_a_writer_is_gone_only_when_this_host_knows_its_pid_dead_or_its_beat_is_old(zombie):
    import socket
    import subprocess
    import time

    from crawler_dedup.stores.redis.journal import _gone, _pid_space

    dead = subprocess.Popen(["true"])
    dead.wait()
    here = {"host": socket.gethostname(), "ns": _pid_space()}

    def who(**kw) -> bytes:
        return json.dumps({**here, "pid": os.getpid(), "beat": time.time(), **kw}).encode()

    assert not _gone(who(), 300)  # this process, beating
    assert _gone(who(pid=dead.pid), 300)  # dead here
    assert not _gone(who(pid=dead.pid, host="crawler-elsewhere"), 300)  # a pid elsewhere says nothing
    assert not _gone(who(pid=dead.pid, ns="pid:[1]"), 300)  # nor one in another container of this host
    assert _gone(who(host="crawler-elsewhere", beat=time.time() - 301), 300)  # silent past the lease
    assert not _gone(b"{not json", 300)
    assert _gone(who(pid=zombie), 300)  # (exited, not reaped: a killed crawler's first moments)


def test_a_journal_of_a_writer_beating_on_another_machine_is_left_to_it(redis_cluster):
    """A journal whose writer beat recently on another host (alive, mid-commit) is not applied by
    a crawler opening the index, nor taken away; past its lease it is."""
    import time

    from crawler_dedup.stores.redis.journal import FIELD

    prefix = "journal-elsewhere"
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:
        d.check("https://first.test/", text="the first page of this index " * 30)
        store = d.index.store
        key, field = store.prefix_b + b":j:elsewhere:1:ab:1", FIELD + b"elsewhere:1:ab:1"
        blob = b"J1D" + (4).to_bytes(1, "big") + (1).to_bytes(4, "big") + b"urlsk" + (0).to_bytes(4, "big")
        beat = json.dumps({"host": "crawler-elsewhere", "ns": "", "pid": 1, "beat": time.time()})
        store.nodes.run([(key, ("SET", key, blob)), (store.meta_key, ("HSET", store.meta_key, field, beat))])
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:
        assert d.index.store.journal.finished == 0
        assert d.index.store.nodes.run([(key, ("GET", key))])[0] == blob
        old = json.dumps({"host": "crawler-elsewhere", "ns": "", "pid": 1, "beat": time.time() - 3600})
        d.index.store.nodes.run([(d.index.store.meta_key, ("HSET", d.index.store.meta_key, field, old))])
    with Deduplicator(**_settings(redis_cluster, prefix)) as d:
        assert d.index.store.journal.finished == 1
        assert d.index.store.nodes.run([(key, ("GET", key))])[0] is None
