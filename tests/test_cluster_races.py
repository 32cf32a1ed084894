"""Where features meet on a Redis Cluster's spread layout (claims.py): a drop waits as long as the
store's own retry deadline for the page it names; the second look reads the site's evidence
afresh, over the pages claimed before it; a page that withdraws leaves what its first look would
have replaced; the withdrawal is written before its claim goes; claims are kept by age, not by
count; an index whose meta hash is lost is found however crowded the cluster; a mover killed
between copy and taking back brings no removed entry back. Real 3-node cluster; races made exact
with tests/test_cluster_decisions.Race."""

from __future__ import annotations

import threading
import time

import pytest

from crawler_dedup import Deduplicator

from crawler_dedup.core.decide import claims
from crawler_dedup.core.index.integrity import verify
from crawler_dedup.core.index.records import Extra
from crawler_dedup.core.verdict import Action
from crawler_dedup.exceptions import StoreDamaged, StoreError
from crawler_dedup.stores.redis import spread, spread_claims

from .test_cluster_decisions import Race
from .test_sitelines import _words, texts  # noqa: F401  (a fixture)


@pytest.fixture
def cluster(redis_cluster, request):
    import zlib  # (a prefix of each test's own: two parametrized names may share their first 60 characters)

    name = request.node.name
    return dict(backend="redis", redis_url=redis_cluster, redis_prefix=f"races-{name[:44]}-{zlib.crc32(name.encode()):08x}")


def words(start: int, stop: int, stem: str = "w") -> str:
    return " ".join(f"{stem}{i}" for i in range(start, stop))


def test_a_drop_waits_past_five_seconds_for_the_page_it_names_to_settle(cluster, monkeypatch, plain_model):
    """A ~ B ~ D, A !~ D. A and B race, A claims first; D is checked while B is racing and matches
    B only. B's second look comes 6 s later (its process waiting out a failover). D waits for it
    (the wait covers DEDUP_REDIS_RETRY) and, B having withdrawn, is decided again: kept. It used to
    give up after 5 s and let the drop stand, naming a page that then left."""
    a, b, d = words(0, 200), words(50, 250), words(100, 300)
    opts = {**cluster, "model": plain_model}
    with Deduplicator(**opts) as one, Deduplicator(**opts) as two, Deduplicator(**opts) as three:
        confirm = claims.confirm
        race = Race(monkeypatch, 2, order=[0, 1])
        released, got_d = threading.Event(), []

        def b_late(*args, **kw):
            if getattr(race.local, "me", None) == 1:
                released.wait(timeout=60)
            return confirm(*args, **kw)

        monkeypatch.setattr(claims, "confirm", b_late)
        race.turns[1].set()
        watcher = threading.Thread(target=lambda: got_d.append(three.check("https://d.example/d", text=d, title="D")))

        def start_d():
            index = three.index
            for _ in range(1000):
                if index.read(lambda t: index.by_url(t, "https://b.example/b")) is not None:
                    break
                time.sleep(0.01)
            watcher.start()
            time.sleep(6.0)
            released.set()

        helper = threading.Thread(target=start_d)
        helper.start()
        first, second = race.run([lambda: one.check("https://a.example/a", text=a, title="A"),
                                  lambda: two.check("https://b.example/b", text=b, title="B")])
        helper.join(timeout=60)
        watcher.join(timeout=90)
        monkeypatch.undo()
        assert first.action == Action.KEEP and (second.action, second.rule) == (Action.DROP, "claim")
        (late,) = got_d
        assert (late.action, late.error) == (Action.KEEP, None), late
        assert verify(one.index).ok


def test_a_second_look_that_comes_too_late_keeps_its_page(cluster, monkeypatch):
    """A page whose second look begins later than claims.windows' confirm_by after it was filed
    stays whatever that look finds: drops against it may have stood already."""
    monkeypatch.setattr(claims, "windows", lambda index: (0.0, 30.0))
    text = words(0, 200)
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[0, 1])
        first, second = race.run([lambda: one.check("https://a.example/a", text=text, title="A"),
                                  lambda: two.check("https://b.example/b", text=text, title="A")])
        monkeypatch.undo()
        assert (first.action, second.action) == (Action.KEEP, Action.KEEP)
        got = one.index.read(lambda t: [one.index.by_url(t, u) for u in ("https://a.example/a", "https://b.example/b")])
        assert all(doc is not None for doc in got)
        assert verify(one.index).ok


def test_the_second_look_sees_the_sites_headline_over_the_pages_claimed_before_it(cluster, monkeypatch, texts):
    """An article and its short print version (same site, same title, the print page's words all in
    the article) are filed at once; the article claims first. One process drops the print version
    on its headline; so does the print version's second look, reading the site's pages under the
    title afresh over the pages claimed before it (it used to reuse what its first look read: no
    page then, and both were kept). The second look decides as one process does."""
    printed = _words(texts["story"], 40, skip=40)  # under 100 words: the short-text rule wants resemblance 0.8
    article = f"{_words(texts['story'], 80)}\n{texts['other']}\n{texts['bio']}"  # the article and much else
    title = "Storm closes schools across the county"
    with Deduplicator(**{**cluster, "redis_prefix": cluster["redis_prefix"] + "-1"}) as alone:
        alone.check("https://news.example/story", text=article, title=title)
        serial = alone.check("https://news.example/story/print", text=printed, title=title)
    assert serial.action == Action.DROP and serial.duplicate_of == "https://news.example/story", serial
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[0, 1])
        first, second = race.run([lambda: one.check("https://news.example/story", text=article, title=title),
                                  lambda: two.check("https://news.example/story/print", text=printed, title=title)])
        monkeypatch.undo()
        assert first.action == Action.KEEP
        assert (second.action, second.rule) == (Action.DROP, "claim"), second
        assert (second.measure, second.duplicate_of) == (serial.measure, serial.duplicate_of)
        assert second.weighing.score == serial.weighing.score
        assert verify(one.index).ok


def test_a_page_that_withdraws_leaves_the_urls_earlier_record(cluster, monkeypatch):
    """An update of a kept URL races a page with its new text filed by another crawler, which
    claims first: the update's second look drops it as that page's copy. The URL's earlier record
    stays in the index, as its item stays in storage (the first look used to remove it: the index
    then forgot a page storage holds)."""
    old, new = words(0, 200, "old"), words(0, 200, "new")
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        kept = one.check("https://s.example/page", text=old, title="Page")
        race = Race(monkeypatch, 2, order=[1, 0])
        update, other = race.run([lambda: one.check("https://s.example/page", text=new, title="Page"),
                                  lambda: two.check("https://t.example/copy", text=new, title="Page")])
        monkeypatch.undo()
        assert other.action == Action.KEEP
        assert (update.action, update.rule, update.duplicate_of) == (Action.DROP, "claim", "https://t.example/copy")
        still = one.index.read(lambda t: one.index.by_url(t, "https://s.example/page"))
        assert still is not None and still.doc_id == kept.doc_id
        assert verify(one.index).ok


def test_a_page_replaced_at_its_second_look_leaves_the_entries_it_shared_to_the_page_replacing_it(
        cluster, articles, monkeypatch):
    """A mirror's page naming the original as its rel=canonical, and the original, the same bytes,
    filed at once, the mirror last; the mirror claims first and stays, then the original's second
    look replaces it. Filed last, the mirror held the exact-text and response-digest entries, and
    used to take them out with it, so the original's digests led nowhere (`index verify`: "its
    response digest does not lead to a kept page"; found by the model's race_update)."""
    from crawler_dedup.core.page.fingerprint import body_digest

    html, original = articles[4][0], "https://x.example/a"
    body = body_digest(html)
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[0, 1], files=[1, 0])
        mirror, kept = race.run([lambda: one.check("https://m.example/a", html=html, body=body, canonical=original),
                                 lambda: two.check(original, html=html, body=body, canonical=original)])
        monkeypatch.undo()
        assert mirror.action == Action.KEEP and kept.action == Action.KEEP, (mirror, kept)
        assert (kept.superseded or {}).get("url") == "https://m.example/a", kept
        report = verify(one.index)
        assert report.ok, report.problems
        digest = one.index.read(lambda t: one.index.doc(t, kept.doc_id)).extras[Extra.DIGEST]
        assert one.index.read(lambda t: t.exact_get(digest)) == kept.doc_id  # (the exact words' entry too)
        later = one.check("https://y.example/a", html=html, body=body)
        assert (later.action, later.reason, later.duplicate_of) == (Action.DROP, "exact", original)


def test_a_withdrawal_is_written_before_its_claim_goes(cluster, monkeypatch):
    """A crawler killed between withdrawing a page and giving up its claim leaves no filed page
    behind (the claim went first, and the withdrawal could be lost with it)."""
    text = words(0, 200)

    def killed(self, doc_id):
        raise StoreError("killed here")

    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[0, 1])
        monkeypatch.setattr(spread.SpreadTxn, "unclaim", killed)
        first, second = race.run([lambda: one.check("https://a.example/a", text=text, title="A"),
                                  lambda: two.check("https://b.example/b", text=text, title="A")])
        monkeypatch.undo()
        assert (first.action, second.action, second.rule) == (Action.KEEP, Action.DROP, "claim")
        assert one.index.read(lambda t: one.index.by_url(t, "https://b.example/b")) is None
        assert verify(one.index).ok


def test_claims_are_kept_by_age_not_by_count(cluster, monkeypatch):
    """More than 10,000 pages filed within a race's window: the first one's claim is still there
    (claims were pruned 10,000 doc ids back: a page still racing lost its order). Claims past the
    age go, two at each new claim."""
    with Deduplicator(**cluster) as d:
        store = d.index.store

        def claim_all(ids):
            def run(txn):
                for i in ids:
                    txn.claim(i)
            d.index.write(run)

        claim_all(range(1, 10_060))
        assert all(c is not None for c in d.index.read(lambda t: t.claims([1, 2, 50])))
        monkeypatch.setattr(spread_claims, "CLAIMS_KEPT_S", -1_000.0)
        monkeypatch.setattr(type(store), "retry_seconds", property(lambda self: 0.0))
        claim_all(range(10_060, 10_070))
        assert d.index.read(lambda t: t.claims([1, 20]))[0] is None


def test_an_index_whose_meta_is_lost_is_found_on_a_crowded_cluster(cluster, monkeypatch):
    """The meta hash of a small index is gone (its node restarted without persistence) while its
    other keys remain, among so many others that a bounded scan gives up before it meets one (here:
    a scan that finds nothing): opening it is refused, found by the keys every index has, asked
    for by name (it once reopened from scratch, and filed new pages over the old ones' ids)."""
    import redis

    with Deduplicator(**cluster) as d:
        for i in range(3):
            d.check(f"https://a.example/{i}", text=words(i * 300, i * 300 + 200))
        store = d.index.store
        store.nodes.run([(store.meta_key, ("DEL", store.meta_key))])
    monkeypatch.setattr(redis.Redis, "scan", lambda self, cursor=0, **kw: (0, []))
    with pytest.raises(StoreDamaged, match="lost its meta hash"):
        Deduplicator(**cluster).open()


def test_a_mover_killed_between_copy_and_taking_back_brings_no_removed_entry_back(redis_cluster, monkeypatch):
    """A mover reads an old shard, a page whose entries it holds is removed, the mover copies what
    it read into the new level and is killed before taking back what was removed. The mover that
    takes the shard over takes that back too, from the first one's note: `index verify` finds no
    entry of the removed page (it used to find them back in the new level)."""
    from crawler_dedup.stores.redis import growth
    from crawler_dedup.stores.redis.spread_keys import FAMILIES, shard_name

    monkeypatch.setattr(growth, "ENTRIES_PER_SHARD", 1)
    monkeypatch.setattr(growth, "GRACE_S", 1e6)  # (no commit moves a shard by itself: this test does)
    monkeypatch.setattr(growth, "REFRESH_S", 0.0)
    settings = dict(backend="redis", redis_url=redis_cluster, redis_prefix="mover-note", store_text=False,
                    redis_retry=0)
    with Deduplicator(**settings) as d:
        store, index = d.index.store, d.index
        kept = [d.check(f"https://m.example/{i}", text=words(i * 250, i * 250 + 200)) for i in range(12)]
        assert store.map.growing, "the shards never grew"
        old = store.map.growing
        victim = kept[0].doc_id
        names = [shard_name(store.prefix_b, fam, old, shard) for shard in range(old) for fam in FAMILIES]
        run = store.nodes.run
        calls, removing = {"n": 0}, []

        def killed_after_copy(batch, *args, **kw):
            if removing:
                return run(batch, *args, **kw)
            calls["n"] += 1
            if calls["n"] == 3:  # (the notes read, the old shards read; now the copy) the page goes meanwhile
                removing.append(True)
                try:
                    index.write(lambda txn: index.remove(txn, victim))
                finally:
                    removing.clear()
            if calls["n"] == 4:  # the read before taking back: killed
                raise StoreError("killed")
            return run(batch, *args, **kw)

        monkeypatch.setattr(store.nodes, "run", killed_after_copy)
        with pytest.raises(StoreError):
            growth.move(store, names, 0)
        monkeypatch.setattr(store.nodes, "run", run)
        growth.move(store, names, 0)  # the lease ran out: another mover takes the shards over
        report = verify(index)
        assert report.ok, report.problems


@pytest.mark.parametrize("claimed", [False, True])
def test_a_killed_crawlers_page_that_never_claimed_has_its_second_look_when_passed_on_again(cluster, monkeypatch,
                                                                                             claimed):
    """Found by the fault run: a crawler filed a page and was killed before its claim; a copy of it
    filed by another crawler at the same moment had its second look then, which leaves out a page
    neither claimed nor settled: it stayed. The killed crawler's page, passed on again by the
    crawl run again (its page of a killed run, unchanged), stayed too: both kept. Passed on again
    while young enough that no drop against it can have stood, it has its second look then.
    `claimed`: killed after its claim, before its second look, the copy having claimed first (a
    page claimed and not confirmed used to be taken for one that had its look: both kept)."""
    import json
    import subprocess

    from crawler_dedup.core.index import neardup
    from crawler_dedup.core.index.neardup import _open_run

    text = words(0, 200)
    a, b = "https://a.example/p", "https://b.example/p"
    with Deduplicator(**cluster) as one, Deduplicator(**cluster) as two:
        race = Race(monkeypatch, 2, order=[1, 0] if claimed else [0, 1])
        in_turn = claims.confirm

        def killed_before_its_claim(index, judging, page, verdict, doc_id, *args, **kw):
            if race.local.me == 0:
                if claimed:  # (its turn: after the copy's second look)
                    race.turns[0].wait(timeout=60)
                    index.write(lambda txn: txn.claim(doc_id))
                race.next_turn(0)
                return verdict
            return in_turn(index, judging, page, verdict, doc_id, *args, **kw)
        monkeypatch.setattr(claims, "confirm", killed_before_its_claim)
        first, second = race.run([lambda: one.check(a, text=text, title="P"), lambda: two.check(b, text=text, title="P")])
        monkeypatch.undo()
        assert (first.action, second.action) == (Action.KEEP, Action.KEEP), (first, second)  # (the race: both filed)
        gone = subprocess.Popen(["true"])
        gone.wait()
        run, one.run = one.run, 0  # (killed: its run never ends)
        marker = {"host": __import__("socket").gethostname(), "pid": gone.pid, "beat": neardup.time.time()}
        one.index.write(lambda txn: txn.meta_put(_open_run(run), json.dumps(marker).encode()))
    with Deduplicator(**cluster) as again:
        v = again.check(a, text=text, title="P")
        assert (v.action, v.duplicate_of, v.rule) == (Action.DROP, b, "claim"), v
        kept = again.index.read(lambda t: [again.index.by_url(t, u) for u in (a, b)])
        assert kept[0] is None and kept[1] is not None
        assert verify(again.index).ok
