"""A batch of pages (group commit, Deduplicator.decide_many) on a networked store: its pages' first
reads a round trip a step for the whole batch, not a page (lookups.read_ahead); on a Redis
Cluster's spread layout its filed pages claim in one round trip, with consecutive orders
(spread_claims.claim_ahead), and still look again when a copy was claimed before them. Real
redis-server and real 3-node cluster."""

from __future__ import annotations

import threading

import pytest

from crawler_dedup import Deduplicator
from crawler_dedup.core.verdict import Action
from crawler_dedup.stores.redis import nodes, spread, spread_claims


def words(start: int, stop: int, stem: str = "w") -> str:
    return " ".join(f"{stem}{i}" for i in range(start, stop))


def _batch(d: Deduplicator, pages: list[tuple[str, str]]):
    prepared = [d.prepare(url, text=text, title=url.rsplit("/", 1)[-1]) for url, text in pages]
    assert all(pending is not None for _, pending in prepared)
    return d.decide_many([pending for _, pending in prepared])


UNRELATED = [(f"https://s{i}.example/p{i}", words(1000 * i, 1000 * i + 150, f"t{i}x")) for i in range(1, 7)]


@pytest.fixture
def cluster(redis_cluster, request):
    import zlib

    name = request.node.name
    return dict(backend="redis", redis_url=redis_cluster, redis_prefix=f"batches-{zlib.crc32(name.encode()):08x}")


def test_a_batch_claims_in_one_round_trip_on_the_cluster(cluster, monkeypatch):
    """Six new pages decided at once: one claim script for all six, each page's claim takes its
    reply; all kept, each with its own order, consecutive."""
    calls: list[int] = []
    script = spread_claims.SpreadClaims._claim_script

    def counted(self, pages, filing):
        calls.append(len(pages))
        return script(self, pages, filing)

    monkeypatch.setattr(spread_claims.SpreadClaims, "_claim_script", counted)
    with Deduplicator(**cluster) as d:
        verdicts = _batch(d, UNRELATED)
        assert [v.action for v in verdicts] == [Action.KEEP] * 6
        ids = [v.doc_id for v in verdicts]
        orders = d.index.read(lambda txn: [c.order for c in txn.claims(ids)])
    assert calls == [6], calls
    assert orders == list(range(orders[0], orders[0] + 6)), orders


@pytest.mark.parametrize("where", ["server", "cluster"])
def test_a_batchs_first_reads_are_a_round_trip_a_step_not_a_page(where, redis_server, cluster, monkeypatch):
    """The batch's six pages' entries, their near fingerprints' doc ids and their candidates'
    records are read a round trip a step for the whole batch (read_ahead), not three a page; the
    decisions are those of the pages decided one at a time."""
    opts = cluster if where == "cluster" else dict(backend="redis", redis_url=redis_server,
                                                    redis_prefix=f"batches-reads-{where}")
    reads = {"n": 0, "on": False}
    if where == "cluster":
        read, txn_class = nodes.Nodes.read, spread.SpreadTxn

        def counted(self, places):
            reads["n"] += reads["on"]
            return read(self, places)
        monkeypatch.setattr(nodes.Nodes, "read", counted)
    else:
        from crawler_dedup.stores.redis import txn as one_slot

        prefetch, txn_class = one_slot._RedisTxn._run, one_slot._RedisTxn

        def counted(self, cmds, keys):  # type: ignore[misc]
            reads["n"] += reads["on"] and bool(cmds)
            return prefetch(self, cmds, keys)
        monkeypatch.setattr(one_slot._RedisTxn, "_run", counted)
    commit = txn_class.commit

    def reads_end(txn):  # (the batch's decisions end with its commit: the claims' reads are not counted)
        reads["on"] = False
        return commit(txn)
    monkeypatch.setattr(txn_class, "commit", reads_end)
    copies = [(u.replace("example", "copy.example"), t) for u, t in UNRELATED[:3]]
    with Deduplicator(**opts) as d:
        assert [v.action for v in _batch(d, UNRELATED[:3])] == [Action.KEEP] * 3
        reads.update(n=0, on=True)
        verdicts = _batch(d, [*copies, *UNRELATED[3:]])
    assert [v.action for v in verdicts] == [Action.DROP] * 3 + [Action.KEEP] * 3
    # (three for the batch, and one for each copy: its rules read its candidate's site lines; a
    # page at a time read 12 here)
    assert 1 <= reads["n"] <= 3 + len(copies), reads


def test_a_page_claimed_with_its_batch_still_looks_again_after_a_copy_claimed_before_it(cluster, monkeypatch,
                                                                                         plain_model):
    """A crawler reads for a batch [a1, a2]; another files X ~ a2 and claims it before the batch
    claims (at once, after the first crawler's own earlier claim, so the batch expected the order
    X took). a1 is confirmed apart (X wrote nothing it read); a2 is not: it looks again and drops
    against X."""
    opts = {**cluster, "model": plain_model}
    x, a2 = words(0, 200), words(20, 220)
    with Deduplicator(**opts) as one, Deduplicator(**opts) as two:
        commit = spread.SpreadTxn.commit
        armed, read, filed_x = threading.Event(), threading.Event(), threading.Event()

        def commit_after_x(txn):
            if threading.current_thread().name == "batch" and armed.is_set() and not read.is_set():
                read.set()  # (the batch read everything; X is filed and claimed now)
                filed_x.wait(timeout=60)
            return commit(txn)

        monkeypatch.setattr(spread.SpreadTxn, "commit", commit_after_x)
        out: list = []

        def run_batch():
            # (this thread's earlier claim: its next filing may claim quietly, expecting the next order)
            out.append(one.check("https://w.example/w", text=words(0, 150, "z"), title="W"))
            armed.set()
            apart = one.index.store.apart
            out.extend(_batch(one, [("https://a.example/a1", words(0, 200, "v")), ("https://a.example/a2", a2)]))
            out.append(one.index.store.apart - apart)

        batch = threading.Thread(target=run_batch, name="batch")
        batch.start()
        assert read.wait(timeout=60)
        got_x = two.check("https://x.example/x", text=x, title="X")
        filed_x.set()
        batch.join(timeout=120)
    warm, a1_v, a2_v, apart = out
    assert (warm.action, got_x.action, a1_v.action) == (Action.KEEP, Action.KEEP, Action.KEEP)
    assert apart == 1  # (a1's claim: X wrote nothing a1 read or wrote)
    assert (a2_v.action, a2_v.rule, a2_v.duplicate_of) == (Action.DROP, "claim", "https://x.example/x"), a2_v



def test_each_page_of_a_batch_files_what_it_read_and_wrote_itself(cluster):
    """A batch's pages file apart (mark_page): each page's filing holds the entries its own
    decision read (a value, a list, a bucket union, a claim) and wrote, not the other pages', and
    what no page wrote (a run's lease) counts as each one's write."""
    from crawler_dedup.stores.base import u64

    with Deduplicator(**cluster) as d:
        def batch(txn):
            raw = txn.raw
            raw.put("meta", b"lease", b"x")  # (before the first page: no page's own)
            raw.mark_page()
            raw.get_many("urls", [b"u1"])
            raw.values_many("mins", [b"m1"])
            raw.claims([7])
            raw.put("docs", u64(900001), b"one")
            raw.mark_page()
            raw.union_u64(["t000"], [b"b2"])
            raw.add("fps", b"f2", u64(5))
            raw.put("docs", u64(900002), b"two")
        d.index.write(batch)
        filings = d.index.store.filings
        one, two = filings.by_doc[900001], filings.by_doc[900002]
    assert one is not two
    assert set(one.looked) == {("urls", b"u1"), ("mins", b"m1"), ("meta", b"\x00c7"), ("docs", u64(900001)),
                               ("meta", b"lease")}, set(one.looked)
    assert set(two.looked) == {("t000", b"b2"), ("fps", b"f2"), ("docs", u64(900002)), ("meta", b"lease")}, set(two.looked)
    assert one.wrote != two.wrote and one.looks != two.looks
